# The notification queue under pressure: notifications keep coming while a
# subscriber reads slowly.  The worker keeps consuming the queue, so
# pg_notification_queue_usage() stays far below what was sent and falls
# back to nothing; the slow client is cut, and a client that reads gets
# every event.  (Postgres' queue is shared by the cluster and held from its
# tail by the slowest listener: a worker that stopped reading for a slow
# client would make NOTIFY fail everywhere once it filled.)
use strict;
use warnings;
use IO::Select;
use IPC::Run;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use ChaosTest;
use SseReader;

my $node = WebgresTest->new_node('chaos_queue', workers => 1,
	conf => "webgres.sse_buffer_limit = 1048576\nwebgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/ch/:ch', q{SELECT ARRAY[request.params->>'ch'] AS channels FROM request});
my $cut = qr/disconnects an event-stream client that is not reading/;

# The queue holds 8 GB; its usage is the fraction in use.
my $queue_bytes = 8 * 1024 * 1024 * 1024;
sub queued_bytes
{
	my ($ret, $out) = $node->psql('postgres', 'SELECT pg_notification_queue_usage()');
	return $ret == 0 ? $out * $queue_bytes : 0;
}

# A session of its own samples the usage every 20 ms until told to stop, and
# keeps the peak: sampling from the test's loop (a psql each time) would slow
# the client that reads, on a loaded machine enough to have it cut as slow.
$node->safe_psql('postgres', 'CREATE TABLE sampler_stop (); CREATE TABLE sampler_peak (peak float8)');
my $sampler = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
	  q{DO $$ DECLARE peak float8 := 0; BEGIN
	      LOOP
	        peak := greatest(peak, pg_notification_queue_usage());
	        EXIT WHEN EXISTS (SELECT FROM sampler_stop);
	        PERFORM pg_sleep(0.02);
	      END LOOP;
	      INSERT INTO sampler_peak VALUES (peak);
	    END $$} ],
	'>', \my $sout, '2>', \my $serr);

my $slow = SseReader::open_h1($port, '/ch/pressure', rcvbuf => 4096);
my $fast = SseReader::open_h1($port, '/ch/pressure');

# 16,000 notifications of 4 kB, 20 to a commit, about 10 MB a second: a
# worker that held the queue for the slow client would hold most of them.
my $n = 16000;
my $sent_bytes = $n * 4000;
my $notifier = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
	  "DO \$\$ BEGIN FOR i IN 1..$n LOOP PERFORM pg_notify('pressure', i || ' ' || repeat('x', 4000)); "
	  . "IF i % 20 = 0 THEN COMMIT; PERFORM pg_sleep(0.005); END IF; END LOOP; END \$\$" ],
	'>', \my $nout, '2>', \my $nerr);

# The slow client takes 1 kB each time round; the fast one all it can.
my $slow_sel = IO::Select->new($slow->{sock});
SseReader::read_until([$fast], sub { $fast->{n} >= $n }, 180, sub {
	sysread($slow->{sock}, my $buf, 1024) if !$slow->{eof} && $slow_sel->can_read(0);
});
$notifier->finish;
my $notified = $?;
$node->safe_psql('postgres', 'INSERT INTO sampler_stop DEFAULT VALUES');
$sampler->finish;
my $peak = $node->safe_psql('postgres', 'SELECT peak FROM sampler_peak') * $queue_bytes;
is($notified, 0, 'every NOTIFY succeeded');
ok($fast->{n} == $n && $fast->{bad} == 0, "the client that reads got all $n events in order")
  or diag("n=$fast->{n} bad=$fast->{bad}");
like(slurp_file($node->logfile), $cut, 'the slow client was cut');
# A worker that held the queue for its slow client held 61 MB of the 64;
# one that keeps reading holds what arrives while it is slowed down (the
# second a slow client is given, a loaded machine).
cmp_ok($peak, '<', $sent_bytes * 3 / 4,
	sprintf('the queue held at most %.1f MB of the %.1f MB sent', $peak / 1e6, $sent_bytes / 1e6));
# The tail moves when a commit's notifications cross a multiple of 4 pages
# of the queue: a few more pages, and it is where the worker has read to.
ok(ChaosTest::wait_for(sub {
	$node->safe_psql('postgres', q{SELECT count(pg_notify('nudge', repeat('x', 7000))) FROM generate_series(1, 5)});
	return queued_bytes() < 1024 * 1024;
}), 'and it is empty once they are delivered');

close $_->{sock} for $slow, $fast;
$node->stop;
done_testing();
