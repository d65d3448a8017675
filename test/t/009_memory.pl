# Worker memory stays flat: per-request memory is reset after each request,
# and nothing accumulates in long-lived contexts, on errors either.  Read from
# the worker's own memory-context report (pg_log_backend_memory_contexts).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;

# The routes stay on the measured worker: a run past 10 ms on a loaded machine would move one.
my $node = WebgresTest->new_node('memory', workers => 1, conf => "webgres.inline_budget = '60s'\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{CREATE TABLE doomed (v text); INSERT INTO doomed VALUES ('x')});
WebgresTest::add_route($node, 'GET', '/gone', q{SELECT v AS body FROM doomed});
WebgresTest::add_route($node, 'GET', '/ok/:x', q{
	SELECT jsonb_build_object('p', request.params, 'q', request.query, 'h', request.headers) AS body FROM request});
WebgresTest::add_route($node, 'GET', '/raise', q{SELECT (1 / 0)::text AS body});
is(WebgresTest::wait_for_status($port, '/gone', 200)->{body}, 'x', 'route over a table');
# Dropped, and the routes reloaded: the handler now fails to prepare on
# every request (a kept plan would fail to revalidate instead).
$node->safe_psql('postgres', 'DROP TABLE doomed');
$node->safe_psql('postgres', 'DELETE FROM webgres.routes WHERE false');
is(WebgresTest::http_get($port, '/gone')->{status}, 500, 'its table dropped: every request fails to prepare');

my ($pid) = WebgresTest::worker_pids($node);

# Total bytes of the worker's contexts, as it reports them to the log.
sub contexts
{
	my $offset = -s $node->logfile;
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
	# Nudge the worker's loop so it handles the request at once.
	WebgresTest::http_get($port, '/ok/nudge');
	$node->wait_for_log(qr/Grand total: \d+ bytes/, $offset);
	my $log = slurp_file($node->logfile, $offset);
	my ($grand) = $log =~ /Grand total: (\d+) bytes/;
	my ($routes) = $log =~ /webgres routes: (\d+) total/;
	my ($request) = $log =~ /webgres request: (\d+) total/;
	# A context missing from the report is a failure, not a zero: the
	# comparisons below would hold for any two missing ones.
	ok(defined $routes, 'the report has the "webgres routes" context');
	ok(defined $request, 'the report has the "webgres request" context');
	return ($grand, $routes, $request);
}

sub burst
{
	my ($path, $n) = @_;
	my $batch = join '', map { "GET $path HTTP/1.1\r\nHost: h\r\nX-Pad: " . ('p' x 200) . "\r\n\r\n" } 1 .. $n;
	my ($list) = WebgresTest::raw($port, $batch, n => $n, timeout => 60);
	return scalar(@$list);
}

# Warm every path once, then measure, then many more requests, then measure.
burst($_, 50) for '/gone', '/ok/a?x=1&x=2', '/raise', '/nowhere';
my ($g1, $r1, $q1) = contexts();
my $served = 0;
for (1 .. 4)
{
	$served += burst($_, 500) for '/gone', '/ok/a?x=1&x=2', '/raise', '/nowhere';
}
is($served, 8000, '8000 requests answered');
my ($g2, $r2, $q2) = contexts();
note("grand total $g1 -> $g2 bytes; routes " . ($r1 // '-') . ' -> ' . ($r2 // '-')
	  . '; request ' . ($q1 // '-') . ' -> ' . ($q2 // '-'));
# (A missing context compares as 1 <= 0: fails.)
cmp_ok($r2 // 1, '<=', $r1 // 0, "route memory does not grow with failing prepares");
cmp_ok($q2 // 1, '<=', $q1 // 0, "request memory is reset after each request, errors included");
cmp_ok($g2, '<=', $g1 + 64 * 1024, "all contexts together: flat within 64 kB ($g1 -> $g2 bytes)");

$node->stop;
done_testing();
