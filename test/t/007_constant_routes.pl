# Handlers whose plan folds to one constant row are answered from memory;
# their routes and the functions they folded still take effect at once.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;

# A run past the 10 ms budget on a loaded machine would send /c to executors, away from memory.
my $node = WebgresTest->new_node('constant', workers => 1, conf => "webgres.inline_budget = '60s'\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE FUNCTION greeting() RETURNS text IMMUTABLE LANGUAGE sql AS $$SELECT 'v1'$$;
});
# A jsonb literal, not jsonb_build_object(), which is stable and would keep
# the plan from folding.
my $id = WebgresTest::add_route($node, 'GET', '/c', q{
	SELECT greeting() AS body, '{"X-Kind": "constant"}'::jsonb AS headers, 202 AS status});
my $res = WebgresTest::wait_for_status($port, '/c', 202);
is($res->{body}, 'v1', 'constant route answers');

# The worker's own counters (webgres.workers): updated before each response
# is sent, so exact once the responses are in, with no stats flush to wait for.
sub counters
{
	my ($requests, $from_memory) = split /\|/, $node->safe_psql('postgres',
		q{SELECT sum(requests), sum(from_memory) FROM webgres.workers});
	return ($requests, $from_memory);
}

# Warm, then many requests in a quick burst: nearly all from memory.
WebgresTest::http_get($port, '/c') for 1 .. 3;
my ($req0, $mem0) = counters();
my $burst = join '', map { "GET /c HTTP/1.1\r\nHost: h\r\n\r\n" } 1 .. 200;
my ($list) = WebgresTest::raw($port, $burst, n => 200);
is(scalar(grep { $_->{status} == 202 && $_->{body} eq 'v1' && $_->{headers}{'x-kind'} eq 'constant' } @$list),
	200, 'every response is complete: status, header and body');
my ($req1, $mem1) = counters();
is($req1 - $req0, 200, 'the worker counted the 200 requests');
# One request every 100 ms still goes the full way (to take invalidations).
cmp_ok($mem1 - $mem0, '>=', 150, 'most of them answered from memory (' . ($mem1 - $mem0) . ' were)');

# Each response still gets its own Date and Content-Length.
ok($list->[0]{headers}{date} && $list->[0]{headers}{'content-length'} == 2, 'per-request headers');

# Redefining the folded function invalidates the cached row.
$node->safe_psql('postgres', q{CREATE OR REPLACE FUNCTION greeting() RETURNS text IMMUTABLE LANGUAGE sql AS $$SELECT 'v2'$$});
# Documented: within 100 ms; a loaded machine gives no such bound, so the
# time is reported and the deadline is generous.
my $t0 = time;
my $body = WebgresTest::wait_for_body($port, '/c', 'v2', 60)->{body};
is($body, 'v2', sprintf('function change is served (after %.3f s)', time - $t0));

# So does a change of the route itself.
$node->safe_psql('postgres', qq{UPDATE webgres.routes SET handler = 'SELECT ''v3'' AS body' WHERE id = $id});
$t0 = time;
$body = WebgresTest::wait_for_body($port, '/c', 'v3', 60)->{body};
is($body, 'v3', sprintf('route change is served (after %.3f s)', time - $t0));

# A stable function is not folded: evaluated on every request.
WebgresTest::add_route($node, 'GET', '/now', q{SELECT clock_timestamp()::text AS body});
my $a = WebgresTest::wait_for_status($port, '/now', 200)->{body};
sleep 0.01;
isnt(WebgresTest::http_get($port, '/now')->{body}, $a, 'volatile handlers run every time');

$node->stop;
done_testing();
