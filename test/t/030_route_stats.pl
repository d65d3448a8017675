# webgres.route_stats: exact per-route counts after a known set of requests,
# on the event loop and on executors: status classes, handler errors,
# timeouts, queue-full refusals, body bytes, and the latency histogram.
# Readable by pg_monitor only; reset by a function.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Select;
use Time::HiRes qw(sleep time);
use WebgresTest;

# webgres.handler_timeout is lowered to 2.5 s only for /late, after /one,
# whose first request waits for the test's lock: on a loaded machine that
# wait could run out a short timeout.
my $node = WebgresTest->new_node('route_stats', workers => 1,
	conf => "webgres.executors = 2\n"
	  . "webgres.max_queue = 1\n"
	  . "log_min_messages = debug1\n");
my $port = $node->{webgres_port};

# Adds a route; returns its id.
sub route
{
	my ($method, $path, $handler, $mode, $cap) = @_;
	$mode //= 'auto';
	$cap //= 'NULL';
	return $node->safe_psql('postgres',
		"INSERT INTO webgres.routes (method, path, handler, mode, max_concurrency) "
		  . "VALUES ('$method', '$path', \$h\$$handler\$h\$, '$mode', $cap) RETURNING id");
}

my %id;
$id{ok} = route('GET', '/ok', q{SELECT 'hello' AS body});
$id{err} = route('GET', '/err', q{SELECT (1 / 0)::text AS body FROM request});
$id{gone} = route('GET', '/gone', q{SELECT 404 AS status, 'nope' AS body FROM request});
$id{ex} = route('POST', '/ex', q{SELECT 'exec!' AS body FROM request}, 'executor');
$id{slow} = route('GET', '/slow', q{SELECT pg_sleep(0.3)::text || 'z' AS body FROM request}, 'executor');
$id{late} = route('GET', '/late', q{SELECT pg_sleep(5)::text AS body FROM request}, 'executor');
$id{one} = route('GET', '/one', q{SELECT pg_advisory_xact_lock_shared(4242)::text || 'one' AS body FROM request}, 'executor', 1);
$id{empty} = route('GET', '/empty', q{SELECT 'x' AS body FROM request WHERE false});
$id{items} = route('GET', '/items/:id',
	q{SELECT 'item ' || (params->>'id') AS body FROM request WHERE (params->>'id')::int <= 10});

WebgresTest::wait_for_status($port, '/ok', 200);
$node->safe_psql('postgres', 'SELECT webgres.route_stats_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM webgres.route_stats'),
	'0', 'a reset with no route forgets every route');

my %sent;
sub expect { my ($path, $status, %o) = @_; my $m = $o{method} // 'GET';
	my $res = WebgresTest::request($port, $m, $path, body => $o{body});
	is($res->{status}, $status, "$m $path answers $status"); }

expect('/ok', 200) for 1 .. 3;
expect('/ok', 200, method => 'HEAD');
expect('/err', 400) for 1 .. 2;
expect('/gone', 404);
expect('/ex', 200, method => 'POST', body => 'x') for 1 .. 2;
expect('/slow', 200);
expect('/empty', 404);
expect('/no-such-route', 404);
# A handler that finds no row answers 404 itself: its route's response.
expect("/items/$_", 200) for 1 .. 10;
expect("/items/$_", 404) for 11 .. 13;

# Three on a route that runs one at a time and queues one, while the first
# waits for a lock the test holds: one of the other two is refused at once.
my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; SELECT pg_advisory_xact_lock(4242)');
my @socks = map { WebgresTest::connect_to($port) } 1 .. 3;
print { $socks[0] } "GET /one HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted}),
	'the first request runs, waiting for the lock');
print { $socks[$_] } "GET /one HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" for 1, 2;
my $sel = IO::Select->new(@socks[1, 2]);
ok(scalar($sel->can_read(30)), 'one of the other two is answered while the first runs');
$gate->query_safe('COMMIT');
$gate->quit;
my @one = map { my ($r) = WebgresTest::read_responses($_, 1, 30); close $_; $r->[0]{status} // 0 } @socks;
is($one[0], 200, 'one route: the first is answered');
is(join(',', sort @one[1, 2]), '200,503', '... one queued and answered, one refused');

ok(WebgresTest::reload_and_wait($node, "webgres.handler_timeout = '2500ms'\n"),
	'the worker took webgres.handler_timeout = 2500ms');
expect('/late', 504);

# Counting happens as responses go out: wait until the last ones are in.
my $expected_total = 3 + 1 + 2 + 1 + 2 + 1 + 1 + 1 + 13 + 3;
my $deadline = time + 30;
my $total;
while (time < $deadline)
{
	$total = $node->safe_psql('postgres', 'SELECT sum(requests) FROM webgres.route_stats');
	last if $total eq $expected_total;
	sleep 0.1;
}
is($total, $expected_total, 'every routed request is counted once; unrouted ones are not');

sub row
{
	my ($name) = @_;
	return $node->safe_psql('postgres', qq{
		SELECT concat_ws(' ', method, path, requests, responses_2xx, responses_4xx, responses_5xx,
			handler_errors, timeouts, queue_full, bytes_out)
		FROM webgres.route_stats WHERE route_id = $id{$name}});
}
is(row('ok'), 'GET /ok 4 4 0 0 0 0 0 15', '/ok: 4 requests, 15 body bytes (HEAD sends none)');
is(row('err'), 'GET /err 2 0 2 0 2 0 0 34', '/err: two errors (400: division by zero), two handler errors');
is(row('gone'), 'GET /gone 1 0 1 0 0 0 0 4', '/gone: the handler\'s own 404');
is(row('ex'), 'POST /ex 2 2 0 0 0 0 0 10', '/ex: counted for the executor route');
is(row('late'), 'GET /late 1 0 0 1 0 1 0 18', '/late: a timeout, answered 504, not a handler error');
is(row('one'), 'GET /one 3 2 0 1 0 0 1 26', '/one: a queue-full refusal, answered 503');
is(row('empty'), 'GET /empty 1 0 1 0 0 0 0 10', '/empty: the 404 of a handler that found no row');
is(row('items'), 'GET /items/:id 13 10 3 0 0 0 0 91', '/items/:id: 13 requests, 3 of them 404 for missing ids');

# Histogram: every request in one bucket; /slow's one request sits in the
# bucket that holds its total time, which is at least its 300 ms sleep
# (a busy machine may make it slower, never faster).
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM webgres.route_stats
	WHERE (SELECT sum(b) FROM unnest(latency_buckets) b) <> requests
	   OR cardinality(latency_buckets) <> cardinality(webgres.route_latency_bounds()) + 1}),
	'0', 'each route has one bucket count per request');
my $slow_bucket = qq{
	SELECT coalesce((SELECT min(i) FROM generate_subscripts(webgres.route_latency_bounds(), 1) i
	                 WHERE (webgres.route_latency_bounds())[i] >= total_time_ms),
	                cardinality(webgres.route_latency_bounds()) + 1) AS b,
	       coalesce((webgres.route_latency_bounds())[
	         (SELECT max(i) FROM generate_subscripts(webgres.route_latency_bounds(), 1) i
	          WHERE (webgres.route_latency_bounds())[i] < total_time_ms)], 0) AS lower,
	       s.*
	FROM webgres.route_stats s WHERE route_id = $id{slow}};
is($node->safe_psql('postgres', "SELECT array_position(latency_buckets, 1) = b FROM ($slow_bucket) x"),
	't', '/slow is in the bucket that holds its time');
is($node->safe_psql('postgres', qq{
	SELECT total_time_ms >= 300 AND lower >= 250
	       AND p50_ms > lower AND p99_ms <= coalesce((webgres.route_latency_bounds())[b], 'infinity')
	       AND webgres.route_latency_quantile($id{slow}, 0.5) = p50_ms
	FROM ($slow_bucket) x}),
	't', '/slow: total at least its sleep, quantiles within its bucket');
is($node->safe_psql('postgres', 'SELECT webgres.route_latency_quantile(987654, 0.5) IS NULL'),
	't', 'no quantile for a route never counted');
my ($rc, $out, $err) = $node->psql('postgres', "SELECT webgres.route_latency_quantile($id{ok}, 1.5)");
like($err, qr/quantile must be between 0 and 1/, 'a quantile out of range is refused');

# Who may look, and reset.
$node->safe_psql('postgres', q{
	CREATE ROLE watcher LOGIN IN ROLE pg_monitor;
	CREATE ROLE stranger LOGIN;
});
is($node->safe_psql('postgres', 'SELECT count(*) > 0 FROM webgres.route_stats', extra_params => ['-U', 'watcher']),
	't', 'pg_monitor reads webgres.route_stats');
($rc, $out, $err) = $node->psql('postgres', 'SELECT * FROM webgres.route_stats', extra_params => ['-U', 'stranger']);
like($err, qr/permission denied/, 'other roles may not');
($rc, $out, $err) = $node->psql('postgres', 'SELECT webgres.route_stats_reset()', extra_params => ['-U', 'watcher']);
like($err, qr/permission denied/, 'pg_monitor may not reset');

$node->safe_psql('postgres', "SELECT webgres.route_stats_reset($id{ok})");
is(row('ok'), 'GET /ok 0 0 0 0 0 0 0 0', 'a reset of one route zeroes it');
is(row('err'), 'GET /err 2 0 2 0 2 0 0 34', '... and leaves the others');
expect('/ok', 200);
$deadline = time + 30;
sleep 0.1 while time < $deadline && row('ok') ne 'GET /ok 1 1 0 0 0 0 0 5';
is(row('ok'), 'GET /ok 1 1 0 0 0 0 0 5', 'counting goes on after a reset');

# Counting off: nothing more is counted, what was counted stays.  The
# worker says at DEBUG1 when it has taken a reload.
my $reloads = () = slurp_file($node->logfile) =~ /webgres access log configured in process/g;
$node->safe_psql('postgres', 'ALTER SYSTEM SET webgres.track_route_stats = off; SELECT pg_reload_conf()');
$deadline = time + 30;
sleep 0.05 while time < $deadline
  && (() = slurp_file($node->logfile) =~ /webgres access log configured in process/g) <= $reloads;
expect('/ok', 200) for 1 .. 3;
is(row('ok'), 'GET /ok 1 1 0 0 0 0 0 5', 'webgres.track_route_stats = off counts nothing more');
$reloads = () = slurp_file($node->logfile) =~ /webgres access log configured in process/g;
$node->safe_psql('postgres', 'ALTER SYSTEM RESET webgres.track_route_stats; SELECT pg_reload_conf()');
$deadline = time + 30;
sleep 0.05 while time < $deadline
  && (() = slurp_file($node->logfile) =~ /webgres access log configured in process/g) <= $reloads;

$node->safe_psql('postgres', "DELETE FROM webgres.routes WHERE id = $id{gone}");
is($node->safe_psql('postgres', "SELECT method IS NULL AND requests = 1 FROM webgres.route_stats WHERE route_id = $id{gone}"),
	't', 'a deleted route keeps its counts, without a name');

# A full reset frees the entries with their counts in place (a process may
# still be adding to one); the route that claims an entry again starts it
# from zero, not from what the freed entry held.
$node->safe_psql('postgres', 'SELECT webgres.route_stats_reset()');
is(row('ok'), '', 'a full reset forgets /ok');
expect('/ok', 200);
$deadline = time + 30;
sleep 0.1 while time < $deadline && row('ok') ne 'GET /ok 1 1 0 0 0 0 0 5';
is(row('ok'), 'GET /ok 1 1 0 0 0 0 0 5', '... and its next request counts from zero in the entry it claims again');

$node->stop;
done_testing();
