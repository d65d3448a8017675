# Where a WebSocket's message handlers run: on the worker's own loop for a
# route in mode auto (or inline) while its handler is fast, with the same
# role, request.jwt.claims, search_path and security restriction as on an
# executor; always on executors in mode executor.  A handler that runs past
# webgres.inline_budget on the loop is cancelled and rolled back, runs again
# on an executor while the worker's other sockets and HTTP are answered,
# the socket's later messages follow it there in order, and enough fast runs
# there bring the route back to the loop.  A handler that fails on the loop
# closes its socket with 1011, and its close handler still runs.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use WsClient;

my $secret = 'the-test-secret-of-at-least-32-bytes!';
# A wide budget: a fast handler stays well under it on a loaded machine.
my $node = WebgresTest->new_node('websocket_placement', workers => 1, conf => <<"EOC");
webgres.jwt_secret = '$secret'
webgres.executors = 2
webgres.inline_budget = '500ms'
EOC
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE alice;
	GRANT alice TO authenticator;
	GRANT USAGE ON SCHEMA webgres TO authenticator;
	GRANT INSERT, SELECT, UPDATE, DELETE ON webgres.routes TO authenticator;
	CREATE SCHEMA ws_s;
	GRANT USAGE ON SCHEMA ws_s TO PUBLIC;
	CREATE TABLE ws_log (conn bigint, what text);
	GRANT ALL ON ws_log TO PUBLIC;
	CREATE TABLE gate (n int);
	GRANT SELECT ON gate TO PUBLIC;
	CREATE TABLE runs (msg text, pid int);
	GRANT ALL ON runs TO PUBLIC;
	-- Whether it runs in a security-restricted operation, which may not
	-- create a temporary table.
	CREATE FUNCTION restricted() RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		CREATE TEMP TABLE restricted_probe (x int);
		DROP TABLE restricted_probe;
		RETURN 'unrestricted';
	EXCEPTION WHEN insufficient_privilege THEN
		RETURN 'restricted';
	END $$;
	-- Notes the run, then waits for the gate if asked to; the backend's pid.
	CREATE FUNCTION pass(msg text) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO runs VALUES (msg, pg_backend_pid());
		IF msg = 'slow' THEN
			PERFORM 1 FROM gate;
		END IF;
		RETURN pg_backend_pid()::text;
	END $$;
});

# Adds a WebSocket route owned by authenticator; its id.
sub ws_route
{
	my ($path, $message, %o) = @_;
	my $mode = $o{mode} // 'auto';
	my $auth = $o{auth} // 'none';
	my $close = defined $o{close} ? "\$h\$$o{close}\$h\$" : 'NULL';
	return $node->safe_psql('postgres', qq{
		SET ROLE authenticator;
		INSERT INTO webgres.routes (method, path, handler, upgrade, on_message, on_close, auth,
		                            mode, owner, search_path)
		VALUES ('GET', '$path', 'SELECT NULL AS body', 'websocket', \$h\$$message\$h\$, $close,
		        '$auth', '$mode', 'authenticator', 'ws_s, public')
		RETURNING id});
}

my $who = q{SELECT concat_ws(' ', current_user,
	current_setting('request.jwt.claims', true)::jsonb->>'sub',
	current_setting('search_path'),
	$1 = current_setting('request.websocket_id')::bigint,
	restricted(), pg_backend_pid())};
ws_route('/who', $who, auth => 'required');
ws_route('/who_inline', $who, auth => 'required', mode => 'inline');
ws_route('/who_exec', $who, auth => 'required', mode => 'executor');
my $gated = ws_route('/gated', q{SELECT $2 || ' ' || pass($2)});
ws_route('/echo', q{SELECT $2 || ' ' || pg_backend_pid()});
ws_route('/fail', q{SELECT (1 / $2::int)::text},
	close => q{INSERT INTO ws_log VALUES ($1, 'closed ' || $2)});
WebgresTest::add_route($node, 'GET', '/ping', q{SELECT 'pong' AS body});
WebgresTest::wait_for_status($port, '/ping', 200);

my ($worker) = WebgresTest::worker_pids($node);
ok($worker, 'one worker runs');

# The reply to one text message on socket $c: [text, pid of the backend that ran it].
sub ask
{
	my ($c, $text) = @_;
	$c->send_text($text);
	my $m = ($c->next_message // {})->{payload} // '';
	my ($pid) = $m =~ /(\d+)$/;
	return ($m, $pid // 0);
}

# ---- the same identity on the loop as on an executor ----
my $token = $node->safe_psql('postgres',
	q{SELECT webgres.jwt_sign('{"role":"alice","sub":"u1"}', '1 hour')});
my %seen;
for my $path ('/who', '/who_inline', '/who_exec')
{
	my $c = WsClient->open($port, $path, headers => { Authorization => "Bearer $token" });
	is($c->{status}, 101, "$path opens");
	my ($m, $pid) = ask($c, 'x');
	(my $what = $m) =~ s/ \d+$//;
	$seen{$path} = [$what, $pid];
	$c->send_close(1000);
	$c->wait_close;
}
is($seen{'/who_exec'}[0], 'alice u1 ws_s, public t restricted',
	"on an executor: the token's role and claims, the route's search_path, the connection's id, restricted");
is($seen{'/who'}[0], $seen{'/who_exec'}[0], 'mode auto on the loop: the same');
is($seen{'/who_inline'}[0], $seen{'/who_exec'}[0], 'mode inline: the same');
is($seen{'/who'}[1], $worker, 'a fast handler of a route in mode auto ran on the worker itself');
is($seen{'/who_inline'}[1], $worker, 'mode inline ran on the worker');
isnt($seen{'/who_exec'}[1], $worker, 'mode executor ran on an executor');
ok($seen{'/who_exec'}[1] > 0, '... whose pid the reply names');

# ---- past the budget: rolled back, run again on an executor, in order ----
my $c = WsClient->open($port, '/gated');
my ($m, $pid) = ask($c, 'first');
is($pid, $worker, 'the gated route runs on the loop while it is fast');

my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
$c->send_text($_) for qw(slow a b c);
my $waiter = q{SELECT coalesce(string_agg(pid::text, ','), '')
	FROM pg_locks WHERE NOT granted AND relation = 'gate'::regclass};
# The run on the loop waits first, until the budget cancels it.
my $waiting = WebgresTest::poll_until(sub {
	my $w = $node->safe_psql('postgres', $waiter);
	$w ne '' && $w ne $worker ? $w : 0 });
ok($waiting, 'the handler that waits past the budget runs again on an executor, not on the worker');
is($node->safe_psql('postgres', "SELECT slow FROM webgres.route_execution() WHERE route_id = $gated"),
	't', 'and its route is marked slow');

my $other = WsClient->open($port, '/echo');
is($other->{status}, 101, 'another socket opens on the same worker meanwhile');
my ($om, $opid) = ask($other, 'quick');
is($om, "quick $worker", 'and is answered meanwhile, on the loop');
is(WebgresTest::http_get($port, '/ping')->{body}, 'pong', 'HTTP is served meanwhile');
is($node->safe_psql('postgres', $waiter), $waiting, 'all while the slow handler still waits');

$gate->query_safe('COMMIT');
$gate->quit;
my @got = map { ($c->next_message(30) // {})->{payload} // '' } 1 .. 4;
my @order = map { (split / /)[0] } @got;
is_deeply(\@order, [qw(slow a b c)], 'the messages are answered in the order they came, across the move');
is((split / /, $got[0])[1], $waiting, 'the slow one by the executor that waited');
ok(!grep({ (split / /)[1] == $worker } @got[1 .. 3]),
	"the socket's messages queued behind it went to executors too: its route is slow")
  or diag explain \@got;
is($node->safe_psql('postgres', q{SELECT string_agg(pid::text, ',') FROM runs WHERE msg = 'slow'}),
	$waiting, 'what the cancelled run on the loop did was rolled back: one run of it remains');
ok(WebgresTest::poll_until(sub {
	slurp_file($node->logfile) =~ /handler of route $gated ran longer than webgres\.inline_budget/ }),
	'the move is logged');

# Fast runs on executors bring the route back to the loop.
my $back = 0;
for my $i (1 .. 30)
{
	($m, $pid) = ask($c, "fast$i");
	if ($pid == $worker) { $back = $i; last; }
}
ok($back > 0, "after enough fast runs on executors the route's messages run on the loop again")
  or diag "last reply: $m";
is($node->safe_psql('postgres', "SELECT slow FROM webgres.route_execution() WHERE route_id = $gated"),
	'f', 'and it is no longer marked slow');
$c->send_close(1000);
$c->wait_close;

# ---- a handler that fails on the loop ----
$c = WsClient->open($port, '/fail');
($m) = ask($c, '1');
is($m, '1', 'a handler that works answers');
$c->send_text('0');
is($c->wait_close(10), 1011, 'one that fails on the loop closes its socket with 1011');
$c->send_close(1000);
ok(WebgresTest::poll_until(sub {
	$node->safe_psql('postgres', q{SELECT count(*) FROM ws_log WHERE what LIKE 'closed %'}) == 1 }),
	'and its close handler runs');
like(slurp_file($node->logfile), qr/division by zero/, 'the error is logged');
is(WebgresTest::http_get($port, '/ping')->{body}, 'pong', 'the worker serves on');

done_testing();
