# Errors: each becomes a clean response with the documented status, the
# transaction rolls back, the error is logged, and the worker keeps serving.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;

# No executors: every handler runs on the worker, so webgres.workers counts
# every error below whatever the machine's load (with executors, a route
# whose run passes the inline budget on a busy machine moves to them, and
# its errors are no longer the worker's).  t/013_executors.pl covers errors
# answered by executors.
my $node = WebgresTest->new_node('errors', workers => 1,
	conf => "webgres.handler_timeout = '500ms'\nwebgres.executors = 0\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE items (id int PRIMARY KEY, name text);
	CREATE TABLE parents (id int PRIMARY KEY);
	CREATE TABLE children (id int PRIMARY KEY, parent int REFERENCES parents);
	CREATE TABLE gate (g int);
	CREATE FUNCTION fail_after_insert() RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
		INSERT INTO items VALUES (99, 'should be rolled back');
		RAISE EXCEPTION 'deliberate failure';
	END $$;
});

my %routes = (
	'/raise'    => q{SELECT fail_after_insert() AS body},
	'/teapot'   => q{SELECT webgres_raise() AS body},
	'/divzero'  => q{SELECT (1 / 0)::text AS body},
	'/cast'     => q{SELECT (request.params->>'x')::int::text AS body FROM request},
	'/slow'     => q{SELECT pg_sleep(0)::text || count(*) AS body FROM gate},
	'/status0'  => q{SELECT 0 AS status},
	'/status103' => q{SELECT 103 AS status, 'early' AS body},
	'/crlf'     => q{SELECT jsonb_build_object('X-Evil', E'a\r\nSet-Cookie: owned=1') AS headers, 'x' AS body},
	'/badname'  => q{SELECT jsonb_build_object('Bad Name', 'v') AS headers, 'x' AS body},
	'/cl'       => q{SELECT jsonb_build_object('Content-Length', '1') AS headers, 'x' AS body},
	'/echo'     => q{SELECT request.params->>'x' AS body FROM request},
);
$node->safe_psql('postgres', q{
	CREATE FUNCTION webgres_raise() RETURNS text LANGUAGE plpgsql AS $$
	BEGIN RAISE EXCEPTION 'I am a teapot' USING ERRCODE = 'WG418'; END $$;
});
for my $p (sort keys %routes)
{
	my $path = $p =~ m{^/(cast|echo)$} ? "$p/:x" : $p;
	WebgresTest::add_route($node, 'GET', $path, $routes{$p});
}
WebgresTest::add_route($node, 'POST', '/items/:id', q{
	INSERT INTO items SELECT (request.params->>'id')::int, 'n' FROM request RETURNING 201 AS status});
WebgresTest::add_route($node, 'POST', '/children/:id', q{
	INSERT INTO children SELECT (request.params->>'id')::int, 12345 FROM request RETURNING 201 AS status});
WebgresTest::wait_for_status($port, '/echo/ok', 200);

my $log_offset = -s $node->logfile;

my $res = WebgresTest::http_get($port, '/raise');
is($res->{status}, 500, 'RAISE EXCEPTION: 500');
is($res->{body}, "Internal Server Error\n", 'error text is not exposed by default');
is($node->safe_psql('postgres', 'SELECT count(*) FROM items WHERE id = 99'), '0',
	'the failed request rolled back');
ok($node->wait_for_log(qr/ERROR:  deliberate failure/, $log_offset), 'the error is logged in full');

$res = WebgresTest::http_get($port, '/teapot');
is($res->{status}, 418, "SQLSTATE WG418 picks the status");
is($res->{body}, "I am a teapot\n", 'and its message is the body');

is(WebgresTest::http_get($port, '/divzero')->{status}, 400, 'data exception: 400');
is(WebgresTest::http_get($port, '/cast/abc')->{status}, 400, 'invalid input syntax: 400');
is(WebgresTest::http_get($port, '/echo/%ff')->{status}, 400, 'invalid UTF-8 in a path parameter: 400');
is(WebgresTest::http_get($port, '/echo/%zz')->{status}, 400, 'malformed percent-escape: 400');

is(WebgresTest::request($port, 'POST', '/items/1')->{status}, 201, 'insert');
is(WebgresTest::request($port, 'POST', '/items/1')->{status}, 409, 'unique violation: 409');
is(WebgresTest::request($port, 'POST', '/children/1')->{status}, 409, 'foreign key violation: 409');

$res = WebgresTest::http_get($port, '/crlf');
is($res->{status}, 500, 'CR/LF in a header value: 500');
ok(!exists $res->{headers}{'set-cookie'}, 'the injected header is never sent');
like(slurp_file($node->logfile, $log_offset),
	qr{handler returned header "X-Evil" with a control character.*\n.*\n.*CONTEXT:  webgres route GET /crlf}, 'the log says why and names the route');
is(WebgresTest::http_get($port, '/badname')->{status}, 500, 'invalid header name: 500');
is(WebgresTest::http_get($port, '/cl')->{status}, 500, 'handler cannot set Content-Length');
is(WebgresTest::http_get($port, '/status0')->{status}, 500, 'status out of range: 500');
# A 1xx is interim: sent as the answer, the client would wait for another.
$log_offset = -s $node->logfile;
$res = WebgresTest::http_get($port, '/status103');
is($res->{status}, 500, 'a handler cannot answer with a 1xx status: 500');
like(slurp_file($node->logfile, $log_offset), qr{status 103; a status must be from 200 to 599},
	'the log says why');

# The handler timeout cancels the handler and answers 504; the worker goes on.
# /slow waits for a lock on gate that a session holds until the answer
# came: it cannot finish by itself, so a 504 is the timeout's doing, and the
# handler must be seen cancelled (no longer waiting) while the lock is held.
my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
my $t0 = time;
$res = WebgresTest::http_get($port, '/slow', timeout => 120);
my $took = time - $t0;
is($res->{status}, 504, "handler over webgres.handler_timeout: 504 ($took s)");
cmp_ok($took, '>=', 0.45, 'not before the timeout');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_locks WHERE NOT granted AND relation = 'gate'::regclass}),
	'the handler was cancelled, not left running');
$gate->query_safe('COMMIT');
$gate->quit;
is(WebgresTest::http_get($port, '/echo/after')->{body}, 'after', 'serving continues after a timeout');

# webgres.expose_errors puts the message into 5xx bodies; the timeout follows reload.
$node->append_conf('postgresql.conf', "webgres.expose_errors = on\nwebgres.handler_timeout = 0\n");
$node->reload;
my $deadline = time + 60;
do { $res = WebgresTest::http_get($port, '/raise') } until $res->{body} =~ /deliberate/ || time > $deadline;
is($res->{body}, "deliberate failure\n", 'expose_errors: the SQL message is the body');

# Errors never leak state into the next request: a run of mixed requests on one connection.
my $batch = join '', map { "GET " . ($_ % 2 ? '/raise' : "/echo/$_") . " HTTP/1.1\r\nHost: h\r\n\r\n" } 1 .. 10;
my ($list) = WebgresTest::raw($port, $batch, n => 10);
is_deeply([ map { $_->{status} } @$list ], [ map { $_ % 2 ? 500 : 200 } 1 .. 10 ],
	'errors and successes interleave on one connection');
is(scalar(() = WebgresTest::worker_pids($node)), 1, 'the worker is still running');

# webgres.workers counts what the worker answered.
my $stats = $node->safe_psql('postgres', q{
	SELECT count(*), sum(requests) > 0, sum(responses_5xx) >= 5, sum(responses_4xx) >= 4,
	       sum(responses_2xx) >= 5, sum(handler_errors) >= 15, sum(route_loads) >= 1,
	       bool_and(pid IN (SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker'))
	FROM webgres.workers});
is($stats, '1|t|t|t|t|t|t|t', 'webgres.workers: one row per worker, responses by class, errors');
unlike(slurp_file($node->logfile), qr/terminated by signal|FATAL/, 'no worker crashed or exited');

$node->stop;
done_testing();
