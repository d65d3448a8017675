# Workers take part in the cluster's life like any backend: they absorb
# process-signal barriers while idle, ignore a cancel between requests, and
# come back when terminated.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;

my $node = WebgresTest->new_node('signals', workers => 2);
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/ping', q{SELECT request.method AS body FROM request});
WebgresTest::wait_for_status($port, '/ping', 200);

# DROP DATABASE waits for every backend to absorb a ProcSignalBarrier.
$node->safe_psql('postgres', 'CREATE DATABASE scratch');
my $t0 = time;
$node->safe_psql('postgres', 'DROP DATABASE scratch');
my $took = time - $t0;
cmp_ok($took, '<', 3, sprintf('DROP DATABASE is not held up by idle workers (%.2f s)', $took));

# A cancel between requests cancels nothing and stops nothing.
my @pids = WebgresTest::worker_pids($node);
$node->safe_psql('postgres', "SELECT pg_cancel_backend($_)") for @pids;
sleep 0.3;
is_deeply([ WebgresTest::worker_pids($node) ], \@pids, 'pg_cancel_backend leaves idle workers running');
is(WebgresTest::http_get($port, '/ping')->{body}, 'GET', 'and serving');

# Terminated: the supervisor starts a new one.
$t0 = time;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pids[0])");
my $deadline = time + 15;
my @now;
do { sleep 0.1; @now = WebgresTest::worker_pids($node) } until (@now == 2 && !grep { $_ == $pids[0] } @now) || time > $deadline;
my $replaced_in = time - $t0;
is(scalar(@now), 2, 'a terminated worker is replaced');
cmp_ok($replaced_in, '<', 5, sprintf('promptly (%.2f s): the supervisor hears of the exit', $replaced_in));
ok(!grep({ $_ == $pids[0] } @now), 'by a new process');
is(WebgresTest::wait_for_status($port, '/ping', 200)->{body}, 'GET', 'serving after the restart');

# Shutdown is prompt: workers leave their event loop when told.
$t0 = time;
$node->stop('fast');
cmp_ok(time - $t0, '<', 5, 'fast shutdown completes promptly');
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no worker crashed');
done_testing();
