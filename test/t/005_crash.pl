# A worker killed with SIGKILL: Postgres restarts the cluster, the supervisor
# starts a new pool, and serving resumes by itself.  The time it takes is
# reported (not asserted tightly: machines here are shared and noisy).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;

my $node = WebgresTest->new_node('crash', workers => 2, conf => "restart_after_crash = on\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', 'CREATE TABLE acks (id int PRIMARY KEY)');
WebgresTest::add_route($node, 'POST', '/ack/:id', q{
	INSERT INTO acks SELECT (request.params->>'id')::int FROM request RETURNING 201 AS status});
WebgresTest::add_route($node, 'GET', '/ping', q{SELECT 'pong' AS body});
is(WebgresTest::wait_for_status($port, '/ping', 200)->{body}, 'pong', 'serving');

my @acked;
for my $i (1 .. 50)
{
	push @acked, $i if WebgresTest::request($port, 'POST', "/ack/$i")->{status} == 201;
}
is(scalar(@acked), 50, 'writes acknowledged before the crash');

for my $round (1 .. 2)
{
	my @pids = WebgresTest::worker_pids($node);
	ok(@pids >= 1, "round $round: workers are running");
	my $t0 = time;
	kill 'KILL', $pids[0];
	# Wait until the old process is gone, then for the first good answer.
	sleep 0.01 while kill(0, $pids[0]) && time - $t0 < 60;
	ok(!kill(0, $pids[0]), "round $round: the killed worker is gone");
	my $res = WebgresTest::wait_for_status($port, '/ping', 200, 60);
	my $took = time - $t0;
	is($res && $res->{status}, 200, "round $round: serving resumed by itself");
	# Postgres reinitialized: every worker is a new process (the one killed
	# and the one Postgres stopped), as many as before.
	my %old = map { $_ => 1 } @pids;
	my @new;
	WebgresTest::poll_until(sub {
		@new = eval { WebgresTest::worker_pids($node) };
		@new == @pids && !grep { $old{$_} } @new;
	}, 60);
	is(scalar(@new), scalar(@pids), "round $round: as many workers as before");
	is(scalar(grep { $old{$_} } @new), 0, "round $round: all of them new processes")
	  or diag("before: @pids; after: @new");
	note(sprintf('recovery after SIGKILL of a worker: %.3f s', $took));
	diag(sprintf('round %d: recovery after SIGKILL of a worker took %.3f s', $round, $took));
	cmp_ok($took, '<', 60, "round $round: within a minute");
}

is($node->safe_psql('postgres', 'SELECT count(*) FROM acks'), scalar(@acked),
	'every acknowledged write survived the crashes');
like(slurp_file($node->logfile), qr/background worker "webgres worker" \(PID \d+\) was terminated by signal 9/,
	'the postmaster saw the kill');

$node->stop;
done_testing();
