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

# DROP DATABASE waits for every backend to absorb a ProcSignalBarrier.  No
# request reaches the workers meanwhile, so it completes only if they
# absorb it while idle (within a generous deadline; the time is reported).
my @pids = WebgresTest::worker_pids($node);
my $requests = sub {
	return { map { split /\|/ } split /\n/,
		$node->safe_psql('postgres', 'SELECT pid, requests FROM webgres.workers') };
};
my $before = $requests->();
$node->safe_psql('postgres', 'CREATE DATABASE scratch');
my $t0 = time;
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE scratch', timeout => 120,
	timed_out => \my $timed_out);
my $took = time - $t0;
ok(!$timed_out && $ret == 0, sprintf('DROP DATABASE is not held up by idle workers (%.2f s)', $took))
  or diag($timed_out ? 'timed out' : $err);
is_deeply($requests->(), $before, '... which served no request meanwhile');

# A cancel between requests cancels nothing and stops nothing: each worker
# is sent one, then requests are made until each has answered one since
# (a worker looks at its interrupts when it runs one), and all are answered.
$node->safe_psql('postgres', "SELECT pg_cancel_backend($_)") for @pids;
$before = $requests->();
my ($answered, $bad) = (0, 0);
WebgresTest::poll_until(sub {
	my $r = WebgresTest::http_get($port, '/ping', timeout => 30);
	$answered++;
	$bad++ unless $r->{status} == 200 && $r->{body} eq 'GET';
	my $now = $requests->();
	!grep { ($now->{$_} // 0) <= ($before->{$_} // 0) } @pids;
}, 60);
my $now = $requests->();
is(scalar(grep { ($now->{$_} // 0) > ($before->{$_} // 0) } @pids), scalar(@pids),
	"every worker served a request after its cancel ($answered requests)");
is($bad, 0, 'each answered normally');
is_deeply([ WebgresTest::worker_pids($node) ], \@pids, 'pg_cancel_backend leaves idle workers running');

# Terminated: the supervisor starts a new one (the time is reported; the
# deadline is generous).
$t0 = time;
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pids[0])");
my @now;
WebgresTest::poll_until(sub {
	@now = WebgresTest::worker_pids($node);
	@now == 2 && !grep { $_ == $pids[0] } @now;
}, 60);
my $replaced_in = time - $t0;
is(scalar(@now), 2, sprintf('a terminated worker is replaced (after %.2f s)', $replaced_in));
ok(!grep({ $_ == $pids[0] } @now), 'by a new process');
is(WebgresTest::wait_for_status($port, '/ping', 200)->{body}, 'GET', 'serving after the restart');

# The supervisor terminated alone: its workers go on serving while it
# gives them time to end by themselves (a whole-server shutdown signals them
# itself), then it stops them, and the supervisor the postmaster starts
# again starts new ones: no orphans beside them.
my ($supervisor) = (slurp_file($node->logfile) =~ /\[(\d+)\] LOG:  webgres supervisor started/g)[-1];
@pids = WebgresTest::worker_pids($node);
# (It has no backend slot: pg_terminate_backend() cannot reach it.)
kill 'TERM', $supervisor;
is(WebgresTest::http_get($port, '/ping')->{body}, 'GET', 'the workers serve while their supervisor stops');
WebgresTest::poll_until(sub {
	@now = WebgresTest::worker_pids($node);
	@now == 2 && !grep { my $p = $_; grep { $_ == $p } @pids } @now;
}, 120);
is(scalar(@now), 2, 'a supervisor terminated alone leaves two workers, no more');
ok(!grep({ my $p = $_; grep { $_ == $p } @pids } @now), '... both new: the old ones were stopped');
is(WebgresTest::wait_for_status($port, '/ping', 200)->{body}, 'GET', 'serving after the supervisor\'s restart');

# Shutdown: workers leave their event loop when told (pg_ctl fails the
# stop if the server is not down within its own timeout).
$t0 = time;
$node->stop('fast');
note(sprintf('fast shutdown took %.2f s', time - $t0));
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no worker crashed');
done_testing();
