# Slow handlers run on executors while the event loop goes on answering:
# route modes, the inline budget's cancel and hand-off, per-route caps and
# queues, handler_timeout counted from the request head, clients that hang
# up or reset their HTTP/2 stream (while waiting, running or streaming),
# and executors that die.  Assertions are about order and counts, not
# durations: a fast request completes while slow ones are still pending.
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use WebgresTest;
use ChaosTest;
use H2Test;

my $node = WebgresTest->new_node('executors', workers => 1,
	conf => "webgres.executors = 4\n"
	  . "webgres.http2 = on\n"
	  . "webgres.inline_budget = '200ms'\n"
	  . "webgres.handler_timeout = '120s'\n"
	  . "webgres.max_queue = 2\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE knob (secs float8);
	INSERT INTO knob VALUES (0);
	CREATE TABLE items (id int PRIMARY KEY, n int);
	INSERT INTO items VALUES (1, 0);
	CREATE TABLE marks (what text);
	CREATE TABLE gate (g int);
});

# Adds a route with a mode and a cap; returns its id.
sub route
{
	my ($method, $path, $handler, $mode, $cap) = @_;
	$cap //= 'NULL';
	return $node->safe_psql('postgres',
		"INSERT INTO webgres.routes (method, path, handler, mode, max_concurrency) "
		  . "VALUES ('$method', '$path', \$h\$$handler\$h\$, '$mode', $cap) RETURNING id");
}

# /fast shows that the loop answers (while executors are busy or stopped):
# inline, so that no run of it past the budget on a loaded machine sends it
# to executors.
route('GET', '/fast', q{SELECT 'fast' AS body}, 'inline');
route('GET', '/slow', q{SELECT pg_sleep(2)::text || 'slow' AS body FROM request}, 'executor', 4);
my $auto_id = route('GET', '/auto',
	q{SELECT 'auto ' || pg_backend_pid() AS body FROM knob, pg_sleep(knob.secs)}, 'auto');
route('GET', '/holdlock',
	q{WITH l AS (UPDATE items SET n = n WHERE id = 1 RETURNING n) SELECT pg_sleep(2)::text AS body FROM l},
	'executor', 1);
route('GET', '/bump',
	q{UPDATE items SET n = n + 1 WHERE id = 1 RETURNING n::text AS body}, 'auto');
route('GET', '/one',
	q{SELECT clock_timestamp()::text || '|' || pg_sleep(1)::text || '|' || clock_timestamp()::text AS body FROM request},
	'executor', 1);
# Waits for a lock on gate, which the test holds while it looks.
route('GET', '/gated', q{SELECT pg_sleep(0)::text || count(*) AS body FROM gate, request}, 'executor', 1);
route('GET', '/hang',
	q{INSERT INTO marks VALUES ('hang') RETURNING pg_sleep(60)::text AS body}, 'executor');
# The first rows go out as a stream, then the handler waits.
route('GET', '/export',
	q{SELECT i, repeat('x', 100) AS pad, CASE WHEN i = 3000 THEN pg_sleep(60)::text END AS s
	  FROM generate_series(1, 6000) i}, 'stream');
route('GET', '/victim', q{SELECT pg_sleep(60)::text AS body FROM request}, 'executor');
route('GET', '/onlyget', q{SELECT 'got' AS body, '{"x-from":"executor"}'::jsonb AS headers FROM request},
	'executor');
route('GET', '/boom', q{SELECT (1 / 0)::text AS body FROM request}, 'executor');
route('GET', '/none', q{SELECT 'x' AS body FROM request WHERE request.path = '/other'},
	'executor');

WebgresTest::wait_for_status($port, '/fast', 200);

# Sends a GET on a new connection without waiting for the answer.
sub send_get
{
	my ($path) = @_;
	my $s = WebgresTest::connect_to($port);
	print $s "GET $path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	return $s;
}

# Reads the one response on a connection from send_get.
sub answer
{
	my ($s, $timeout) = @_;
	my ($res) = WebgresTest::read_responses($s, 1, $timeout // 30);
	close $s;
	return $res->[0] // { status => 0, body => '', headers => {} };
}

# True if the connection has something to read (a response, or its end).
sub answered_yet
{
	my ($s) = @_;
	return scalar IO::Select->new($s)->can_read(0);
}

# Polls a query until it returns $want.
sub poll_until
{
	my ($sql, $want) = @_;
	my $deadline = time + 20;
	my $got;
	while (time < $deadline)
	{
		$got = $node->safe_psql('postgres', $sql);
		return 1 if $got eq $want;
		sleep 0.05;
	}
	diag("waited for '$want' from: $sql; last got '$got'");
	return 0;
}

ok(poll_until("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres executor'", '4'),
	'webgres.executors executors are running');

# Holds the gate /gated waits for, in a session of its own; returns a
# function that lets it go.
sub hold_gate
{
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
	return sub { $gate->query_safe('COMMIT'); $gate->quit; };
}

# The requests of a route waiting for an executor now, across workers.
sub queued_for
{
	my ($path) = @_;
	return "SELECT coalesce(sum(queued), 0) FROM webgres.route_execution() e "
	  . "JOIN webgres.routes r ON r.id = e.route_id WHERE r.path = '$path'";
}

# The executors that are running a route now.
sub running_on_executors
{
	my ($path) = @_;
	return "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres executor' "
	  . "AND state = 'active' AND query LIKE 'GET $path (route %'";
}

# ---- a fast route is answered while slow handlers run ----
{
	my @slow = map { send_get('/slow') } 1 .. 3;
	ok(poll_until(running_on_executors('/slow'), '3'), 'three slow requests run on executors');
	my $fast = answer(send_get('/fast'), 10);
	is($fast->{status} . ' ' . $fast->{body}, '200 fast', 'the fast route answers meanwhile');
	is(scalar(grep { answered_yet($_) } @slow), 0, '... before any slow request completes');
	my @res = map { answer($_) } @slow;
	is(join(',', map { "$_->{status} $_->{body}" } @res), join(',', ('200 slow') x 3),
		'the slow requests are answered by the executors');
}

# ---- HEAD, errors and handler statuses come back right from executors ----
{
	my $res = WebgresTest::request($port, 'HEAD', '/onlyget');
	is($res->{status}, 200, 'HEAD of an executor route: 200');
	is($res->{headers}{'content-length'}, '3', '... with the GET content length');
	is($res->{headers}{'x-from'}, 'executor', '... and the handler\'s headers');
	# The bytes on the wire: the HEAD's head, then at once the GET's response.
	my $s = WebgresTest::connect_to($port);
	print $s "HEAD /onlyget HTTP/1.1\r\nHost: x\r\n\r\n"
	  . "GET /onlyget HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	my $wire = '';
	my $sel = IO::Select->new($s);
	my $deadline = time + 30;
	while (time < $deadline && $sel->can_read(1))
	{
		my $n = sysread($s, my $chunk, 65536);
		last if !$n;
		$wire .= $chunk;
	}
	close $s;
	like($wire, qr{\AHTTP/1\.1 200 [^\r]*\r\n(?:[^\r]+\r\n)*\r\nHTTP/1\.1 200 [^\r]*\r\n(?:[^\r]+\r\n)*\r\ngot\z},
		'no body after HEAD: the pipelined GET\'s response follows its head at once');
	$res = WebgresTest::request($port, 'POST', '/onlyget');
	is($res->{status}, 405, 'wrong method: 405');
	like($res->{headers}{allow} // '', qr/GET/, '... with Allow');
	is(WebgresTest::http_get($port, '/boom')->{status}, 400,
		'a failing handler on an executor: its SQLSTATE\'s status (22012: 400)');
	is(WebgresTest::http_get($port, '/none')->{status}, 404, 'zero rows on an executor: 404');
}

# ---- auto: a route that turns slow leaves the loop, and comes back ----
{
	my ($worker) = WebgresTest::worker_pids($node);
	# A first run (it plans) past the budget on a loaded machine sends the
	# route to executors until fast runs there bring it back: wait for that.
	my $res = WebgresTest::wait_for_body($port, '/auto', "auto $worker");
	is($res->{body}, "auto $worker", 'a fast auto route runs on the worker');

	$node->safe_psql('postgres', 'UPDATE knob SET secs = 1.5');
	my $slow = send_get('/auto');
	ok(poll_until(running_on_executors('/auto'), '1'),
		'past the inline budget, the request moves to an executor');
	my $fast = answer(send_get('/fast'), 10);
	is($fast->{status}, 200, 'the worker answers other connections meanwhile');
	ok(!answered_yet($slow), '... before the slow auto request completes');
	$res = answer($slow);
	like($res->{body}, qr/^auto (\d+)$/, 'the moved request is answered');
	isnt($res->{body}, "auto $worker", '... by an executor');
	is($node->safe_psql('postgres',
		"SELECT slow FROM webgres.route_execution() WHERE route_id = $auto_id"),
		't', 'the route is marked slow');
	ok($node->log_contains('route GET /auto \(route \d+\) ran longer than webgres.inline_budget'),
		'the move is logged');

	$node->safe_psql('postgres', 'UPDATE knob SET secs = 0');
	my @bodies = map { WebgresTest::http_get($port, '/auto')->{body} } 1 .. 8;
	is(scalar(grep { $_ eq "auto $worker" } @bodies), 0, 'a slow route stays on executors a while');
	# Eight runs under half the budget bring it back; on a loaded machine
	# one of them may take longer, and more runs are needed.
	my $is_slow = "SELECT slow FROM webgres.route_execution() WHERE route_id = $auto_id";
	ok(WebgresTest::poll_until(sub {
		return 1 if $node->safe_psql('postgres', $is_slow) eq 'f';
		WebgresTest::http_get($port, '/auto') for 1 .. 8;
		return 0;
	}), 'fast runs on executors return it to the loop');
	is(WebgresTest::wait_for_body($port, '/auto', "auto $worker")->{body}, "auto $worker",
		'... and it runs on the worker again');
}

# ---- a lock wait on the loop is cancelled, rolled back and run again ----
{
	my $holder = send_get('/holdlock');
	ok(poll_until(running_on_executors('/holdlock'), '1'), 'another request holds the row lock');
	my $bump = send_get('/bump');
	ok(poll_until(running_on_executors('/bump'), '1'), 'the waiting request moves to an executor');
	my $fast = answer(send_get('/fast'), 10);
	is($fast->{status}, 200, 'the worker is not stalled by the lock wait');
	ok(!answered_yet($bump), '... and the waiting request is still waiting');
	is(answer($holder)->{status}, 200, 'the lock holder finishes');
	my $res = answer($bump);
	is($res->{status} . ' ' . $res->{body}, '200 1', 'the moved request runs once to completion');
	is($node->safe_psql('postgres', 'SELECT n FROM items WHERE id = 1'), '1',
		'the cancelled run on the loop left nothing behind');
}

# ---- max_concurrency: one at a time, then a bounded queue ----
{
	my @socks = map { send_get('/one') } 1 .. 2;
	my @res = map { answer($_) } @socks;
	my @spans = map { [ split /\|/, $_->{body} ] } @res;
	is(join(',', map { $_->{status} } @res), '200,200', 'two requests to a route with max_concurrency 1');
	my $ordered = $node->safe_psql('postgres',
		"SELECT '$spans[0][2]'::timestamptz <= '$spans[1][0]'::timestamptz "
		  . "OR '$spans[1][2]'::timestamptz <= '$spans[0][0]'::timestamptz");
	is($ordered, 't', '... ran one after the other');

	# One runs (held by the gate), webgres.max_queue = 2 wait, the fourth is
	# refused at once.
	my $release = hold_gate();
	my @four = (send_get('/gated'));
	ok(poll_until(running_on_executors('/gated'), '1'), 'one request of a route with max_concurrency 1 runs');
	push @four, send_get('/gated'), send_get('/gated');
	ok(poll_until(queued_for('/gated'), '2'), 'two more wait (webgres.max_queue = 2)');
	push @four, send_get('/gated');
	my $refused = answer($four[3], 60);
	is($refused->{status}, 503, 'a full queue answers 503');
	is($refused->{headers}{'retry-after'}, '1', '... with Retry-After');
	is(scalar(grep { answered_yet($_) } @four[0 .. 2]), 0, '... while the others still wait');
	$release->();
	is(join(',', map { answer($_)->{status} } @four[0 .. 2]), '200,200,200',
		'the queued requests are answered');
	is($node->safe_psql('postgres',
		"SELECT sum(running) + sum(queued) FROM webgres.route_execution()"), '0',
		'nothing is left counted as running or queued');
}

# ---- a client that leaves while its request waits gives back its place ----
# Over HTTP/1.1 the worker sees the client's socket hang up; over HTTP/2
# the stream's reset makes h2o free the request.  Either way the place in
# the route's queue is given back now, not when the cap would admit it.
{
	my $release = hold_gate();
	my $first = send_get('/gated');
	ok(poll_until(running_on_executors('/gated'), '1'), 'one request of /gated runs');
	my $waiting = send_get('/gated');
	ok(poll_until(queued_for('/gated'), '1'), 'an HTTP/1.1 request waits for the cap');
	close $waiting;
	ok(poll_until(queued_for('/gated'), '0'),
		'... its client hangs up: its place in the queue is given back');
	my $h2 = ChaosTest::h2_open($port, '/gated');
	ok(poll_until(queued_for('/gated'), '1'), 'an HTTP/2 request waits for the cap');
	# RST_STREAM (CANCEL) on stream 1; the connection stays open.
	print { $h2->{sock} } H2Test::frame(3, 0, 1, pack('N', 8));
	ok(poll_until(queued_for('/gated'), '0'),
		'... its client resets the stream: its place in the queue is given back');
	is($node->safe_psql('postgres', running_on_executors('/gated')), '1',
		'... while the first still runs');
	$release->();
	is(answer($first)->{status}, 200, 'the request that ran is answered');
	close $h2->{sock};
}

# ---- an HTTP/2 client that resets a stream being streamed ----
{
	my $h2 = ChaosTest::h2_open($port, '/export');
	ok(ChaosTest::h2_until($h2, sub { $_[0]{type} == 0 && $_[0]{stream} == 1 }),
		'the export\'s first rows came');
	ok(poll_until(running_on_executors('/export'), '1'), '... while its handler still runs');
	print { $h2->{sock} } H2Test::frame(3, 0, 1, pack('N', 8));
	ok(poll_until(running_on_executors('/export'), '0'),
		'the client reset the stream: its handler is cancelled');
	is($node->safe_psql('postgres',
		"SELECT sum(running) + sum(queued) FROM webgres.route_execution()"), '0',
		'... and nothing is left counted as running or queued');
	is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'the worker serves on');
	close $h2->{sock};
}

# ---- a client that hangs up cancels its handler ----
{
	my $s = send_get('/hang');
	ok(poll_until(running_on_executors('/hang'), '1'), 'the handler runs on an executor');
	close $s;
	ok(poll_until(running_on_executors('/hang'), '0'), 'the client hung up: the query is cancelled');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM marks'), '0', '... and rolled back');
}

# ---- an executor that dies mid-request ----
{
	my $s = send_get('/victim');
	ok(poll_until(running_on_executors('/victim'), '1'), 'the handler runs on an executor');
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'webgres executor' "
		  . "AND query LIKE 'GET /victim (route %'");
	my $res = answer($s, 10);
	is($res->{status}, 503, 'its request gets a clean 503');
	ok(poll_until("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres executor'", '4'),
		'the supervisor restores the pool');
	is(WebgresTest::http_get($port, '/onlyget')->{body}, 'got', 'executors answer again');
}

# ---- handler_timeout counts from the request head, queueing included ----
# The first request takes the route's only slot under the 120 s timeout and
# waits for the gate; the timeout is then lowered to 1.5 s, and a second
# request waits for the slot.  It must be answered 504 while the first
# still runs: it never ran, so its time in the queue was counted.
{
	my $release = hold_gate();
	my $first = send_get('/gated');
	ok(poll_until(running_on_executors('/gated'), '1'), 'the first request runs');
	ok(WebgresTest::reload_and_wait($node, "webgres.handler_timeout = '1500ms'\n"),
		'the worker took the lower handler_timeout');
	my $second = send_get('/gated');
	my $res = answer($second, 60);
	is($res->{status}, 504, 'the request that waited for the cap runs out of time: 504');
	is($node->safe_psql('postgres', running_on_executors('/gated')), '1',
		'... while the first still holds the only slot: it never ran');
	$release->();
	is(answer($first)->{status}, 200, 'the first, under the timeout it came with, is answered');
}

# ---- no executor takes the request: the worker answers 504 after the timeout ----
{
	my @pids = grep { length } split /\n/, $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres executor'");
	kill 'STOP', @pids;
	my $s = send_get('/onlyget');
	my $fast = answer(send_get('/fast'), 10);
	is($fast->{status}, 200, 'with every executor stopped, the loop still answers');
	my $res = answer($s, 20);
	kill 'CONT', @pids;
	is($res->{status}, 504, 'a request no executor takes gets 504 after handler_timeout');
	is(WebgresTest::wait_for_status($port, '/onlyget', 200)->{body}, 'got',
		'the executors answer again once they run');
}

$node->stop;
done_testing();
