# What docs/execution.md and docs/routes.md promise and no other file
# checks: an inline route never runs twice past the inline budget; a NULL
# max_concurrency means half of webgres.executors; a request runs wholly in
# one place; constant routes stay on the loop unless their mode is
# executor; a headers column may be json; request.query_string and
# request.body are NULL when absent.  Each is observed, not timed: which
# process ran a handler (pg_backend_pid(), the route label executors report
# in pg_stat_activity), how often a sequence was drawn, what
# webgres.route_execution() counts while a lock holds the handlers.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('contract', workers => 1,
	conf => "webgres.executors = 4\nwebgres.inline_budget = '200ms'\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE SEQUENCE drawn_inline;
	CREATE SEQUENCE drawn_auto;
	CREATE TABLE gate (g int);
});

# Adds a route with a mode (and a priority); returns its id.
sub route
{
	my ($path, $handler, $mode, %o) = @_;
	my $prio = $o{priority} // 0;
	return $node->safe_psql('postgres',
		"INSERT INTO webgres.routes (method, path, priority, handler, mode) "
		  . "VALUES ('GET', '$path', $prio, \$h\$$handler\$h\$, '$mode') RETURNING id");
}

my ($worker) = WebgresTest::worker_pids($node);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 4 FROM pg_stat_activity WHERE backend_type = 'webgres executor'"),
	'four executors run');

# ---- mode inline: never cancelled by the budget, so never run twice ----
# A handler that draws from a sequence (not undone by a rollback) and then
# takes 0.5 s, past the 200 ms budget.  Under auto it is cancelled on the
# loop and run again on an executor: two draws.  Under inline it runs once,
# on the worker.
# The sleep depends on the value drawn, so it comes after the draw.
for my $mode ('auto', 'inline')
{
	route("/twice/$mode", qq{SELECT d.n || ' ' || pg_backend_pid() AS body
		FROM (SELECT nextval('drawn_$mode') AS n OFFSET 0) d
		CROSS JOIN LATERAL (SELECT pg_sleep(0.5 + 0 * d.n)) s}, $mode);
}
my $seq = sub {
	$node->safe_psql('postgres', "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM $_[0]");
};

is($seq->('drawn_auto'), 0, 'nothing drawn yet');
my $res = WebgresTest::http_get($port, '/twice/auto');
my ($drew, $pid) = split / /, $res->{body};
is($res->{status}, 200, 'auto past the budget: answered');
isnt($pid, $worker, '... by an executor');
is($seq->('drawn_auto'), 2, '... after a first run on the loop was cancelled: the sequence was drawn twice');

my $inline0 = $seq->('drawn_inline');
$res = WebgresTest::http_get($port, '/twice/inline');
($drew, $pid) = split / /, $res->{body};
is($res->{status}, 200, 'inline past the budget: answered');
is($pid, $worker, '... by the worker itself');
is($seq->('drawn_inline') - $inline0, 1, '... having run once: the sequence was drawn once');

# ---- max_concurrency NULL: half of webgres.executors (4), so 2 ----
route('/capped', q{SELECT pg_sleep(0)::text || count(*) AS body FROM gate}, 'executor');
WebgresTest::wait_for_status($port, '/capped', 200);
is($node->safe_psql('postgres', q{SELECT max_concurrency IS NULL FROM webgres.routes WHERE path = '/capped'}),
	't', 'the route has no max_concurrency of its own');
{
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
	my @socks = map {
		my $s = WebgresTest::connect_to($port);
		print $s "GET /capped HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
		$s;
	} 1 .. 4;
	# With the lock held nothing finishes: two run and two wait, and stay so.
	ok($node->poll_query_until('postgres', q{
		SELECT e.running = 2 AND e.queued = 2 FROM webgres.route_execution() e
		JOIN webgres.routes r ON r.id = e.route_id WHERE r.path = '/capped'}),
		'four requests: two run on executors, two wait for one');
	is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'gate'::regclass}),
		'2', '... and two handlers wait for the lock: two executors of four are used');
	$gate->query_safe('COMMIT');
	$gate->quit;
	my @st = map { my ($r) = WebgresTest::read_responses($_, 1, 60); close $_; $r->[0] ? $r->[0]{status} : 0 } @socks;
	is(join(',', @st), '200,200,200,200', 'all four are answered once the lock is let go');
}

# What follows is where a fast auto route runs: a run past 200 ms on a
# loaded machine (a first one, which plans) would send it to executors.
ok(WebgresTest::reload_and_wait($node, "webgres.inline_budget = '60s'\n"), 'the worker took inline_budget = 60s');

# ---- a request runs wholly in one place ----
# Two routes match /whole; the first (higher priority, mode auto) sets a
# transaction-local setting to its process id and returns no row unless
# asked, so the second (mode executor) answers.  The second must see the
# setting: the first ran in the same process and the same transaction, on
# the executor, though by itself it would have run on the loop.
route('/whole', q{SELECT 'first ' || pg_backend_pid() AS body FROM request
	WHERE request.query->>'first' = 'yes'
	   OR set_config('wgtest.first_pid', pg_backend_pid()::text, true) IS NULL}, 'auto', priority => 10);
route('/whole', q{SELECT 'second ' || pg_backend_pid() || ' after ' ||
	coalesce(nullif(current_setting('wgtest.first_pid', true), ''), 'nothing') AS body}, 'executor');
route('/alone', q{SELECT 'alone ' || pg_backend_pid() AS body FROM request}, 'auto');
WebgresTest::wait_for_status($port, '/alone', 200);
is(WebgresTest::http_get($port, '/alone')->{body}, "alone $worker", 'an auto route alone runs on the worker');
$res = WebgresTest::http_get($port, '/whole?first=yes');
like($res->{body}, qr/^first (\d+)$/, 'the first route answers when it returns a row');
isnt(($res->{body} =~ /(\d+)$/)[0], $worker, '... on an executor: another matching route wants one');
$res = WebgresTest::http_get($port, '/whole?first=no');
my ($second, $after) = $res->{body} =~ /^second (\d+) after (\S+)$/;
ok(defined $second, 'the first returns no row: the second answers') or diag($res->{body});
isnt($second, $worker, '... on an executor');
is($after, $second, '... after the first ran in the same process and transaction');

# ---- constant routes stay on the loop unless their mode is executor ----
my $k_auto = route('/k/auto', q{SELECT 'k' AS body}, 'auto');
my $k_exec = route('/k/exec', q{SELECT 'k' AS body}, 'executor');
WebgresTest::wait_for_status($port, '/k/exec', 200);
my $from_memory = sub { $node->safe_psql('postgres', 'SELECT sum(from_memory) FROM webgres.workers') };
# The route label each executor reported last (kept while it is idle).
my $ran_on_executor = sub {
	my ($id) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity "
		  . "WHERE backend_type = 'webgres executor' AND query LIKE 'GET % (route $id%'");
};
my $mem0 = $from_memory->();
my ($list) = WebgresTest::raw($port, join('', map { "GET /k/auto HTTP/1.1\r\nHost: x\r\n\r\n" } 1 .. 20), n => 20);
is(scalar(grep { $_->{body} eq 'k' } @$list), 20, 'a constant auto route: 20 pipelined requests answered');
cmp_ok($from_memory->() - $mem0, '>', 0, '... from memory, on the loop');
is($ran_on_executor->($k_auto), '0', '... and none on an executor');
$mem0 = $from_memory->();
($list) = WebgresTest::raw($port, join('', map { "GET /k/exec HTTP/1.1\r\nHost: x\r\n\r\n" } 1 .. 20), n => 20);
is(scalar(grep { $_->{body} eq 'k' } @$list), 20, 'a constant executor route: 20 pipelined requests answered');
is($from_memory->() - $mem0, 0, '... none from the worker\'s memory');
cmp_ok($ran_on_executor->($k_exec), '>=', 1, '... on executors');

# webgres.inline_budget = 0 sends every auto request to an executor,
# constant or not (docs/settings.md).
ok(WebgresTest::reload_and_wait($node, "webgres.inline_budget = 0\n"), 'the worker took inline_budget = 0');
$mem0 = $from_memory->();
($list) = WebgresTest::raw($port, join('', map { "GET /k/auto HTTP/1.1\r\nHost: x\r\n\r\n" } 1 .. 20), n => 20);
is(scalar(grep { $_->{body} eq 'k' } @$list), 20, 'inline_budget 0: the constant auto route answers');
is($from_memory->() - $mem0, 0, '... never from the worker\'s memory');
cmp_ok($ran_on_executor->($k_auto), '>=', 1, '... on executors');
ok(WebgresTest::reload_and_wait($node, "webgres.inline_budget = '60s'\n"), 'the worker took inline_budget = 60s again');

# ---- a headers column of type json ----
route('/json-headers', q{SELECT '{"X-Json": "yes", "X-List": ["a", "b"], "X-Num": 3}'::json AS headers, 'j' AS body}, 'auto');
$res = WebgresTest::wait_for_status($port, '/json-headers', 200);
is($res->{headers}{'x-json'}, 'yes', 'headers of type json: a string');
is($res->{headers}{'x-num'}, '3', '... a number');
is(scalar(grep { lc $_->[0] eq 'x-list' } @{ $res->{raw_headers} }), 2, '... an array, one header per element');
is($res->{body}, 'j', '... and the body');

# ---- request.query_string and request.body: NULL when absent ----
route('/absent', q{SELECT coalesce(query_string, '<null>') || '|' || coalesce(encode(body, 'escape'), '<null>') AS body FROM request}, 'auto');
$node->safe_psql('postgres', q{UPDATE webgres.routes SET method = NULL WHERE path = '/absent'});
WebgresTest::wait_for_status($port, '/absent', 200);
is(WebgresTest::http_get($port, '/absent')->{body}, '<null>|<null>', 'no ? and no body: both NULL');
is(WebgresTest::http_get($port, '/absent?')->{body}, '|<null>', 'an empty query string is not NULL');
is(WebgresTest::http_get($port, '/absent?a=1')->{body}, 'a=1|<null>', 'a query string');
is(WebgresTest::request($port, 'POST', '/absent', body => 'hi')->{body}, '<null>|hi', 'a body');

$node->stop;
done_testing();
