# The worker pool shrinks and grows again before the worker it stopped has
# exited: the new worker of that index must not share the old one's slot of
# counters (webgres.workers), or the old one's exit would take the slot from
# it.  The old worker is held stopped (SIGSTOP) across the shrink and the
# growth, so that it is still there when the pool grows; once it goes on
# and exits, every running worker must have its own row in webgres.workers.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('regrow', workers => 2);
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/x', q{SELECT 'x' AS body});
WebgresTest::wait_for_status($port, '/x', 200);

my $pids_sql = "SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM pg_stat_activity "
  . "WHERE backend_type = 'webgres worker'";
my $stats_sql = "SELECT string_agg(pid::text, ' ' ORDER BY pid) FROM webgres.workers";

# Workers running, and the workers webgres.workers shows, once they agree.
ok(WebgresTest::poll_until(sub {
	my $w = $node->safe_psql('postgres', $pids_sql);
	($w =~ tr/ //) == 1 && $node->safe_psql('postgres', $stats_sql) eq $w }, 30),
	'two workers, each with its row in webgres.workers');
my ($old) = split /\n/, $node->safe_psql('postgres',
	"SELECT pid FROM webgres.workers WHERE worker = 1");
ok($old, "worker 1 runs (pid $old)");

# Worker 1 cannot exit while it is stopped.
kill 'STOP', $old or die "SIGSTOP $old: $!";
my $log_offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "webgres.workers = 1\n");
$node->reload;
ok(WebgresTest::poll_until(sub {
	$node->safe_psql('postgres', "SELECT setting FROM pg_settings WHERE name = 'webgres.workers'") eq '1' }, 30),
	'the pool shrank to one worker');
# The supervisor has told worker 1 to stop once its SIGTERM is pending.
ok(WebgresTest::poll_until(sub {
	my ($shdpnd) = slurp_file("/proc/$old/status") =~ /^ShdPnd:\s*([0-9a-f]+)/m;
	hex($shdpnd // 0) & (1 << 14) }, 30),
	'worker 1 was told to stop (SIGTERM pending)');

$node->append_conf('postgresql.conf', "webgres.workers = 2\n");
$node->reload;
ok(WebgresTest::poll_until(sub {
	$node->safe_psql('postgres', "SELECT setting FROM pg_settings WHERE name = 'webgres.workers'") eq '2' }, 30),
	'the pool grew back to two');
ok(kill(0, $old), 'the old worker 1 is still there when the pool grows');

kill 'CONT', $old or die "SIGCONT $old: $!";
# Gone, or a zombie; the process may be reaped between the two looks, so
# a /proc file that cannot be opened means it is gone too.
ok(WebgresTest::poll_until(sub {
	return 1 unless kill(0, $old);
	open(my $fh, '<', "/proc/$old/stat") or return 1;
	my $stat = <$fh> // '';
	return $stat =~ /\) Z/ }, 30),
	'the old worker 1 exits once it may');
my ($running, $shown) = ('', '');
ok(WebgresTest::poll_until(sub {
	$running = $node->safe_psql('postgres', $pids_sql);
	$shown = $node->safe_psql('postgres', $stats_sql);
	($running =~ tr/ //) == 1 && $running !~ /\b$old\b/ && $shown eq $running }, 30),
	'two workers run again, each with its own row in webgres.workers')
  or diag("running: $running; in webgres.workers: $shown");
is($node->safe_psql('postgres', "SELECT count(DISTINCT worker) FROM webgres.workers"), '2',
	'in two slots');
is(WebgresTest::http_get($port, '/x')->{status}, 200, 'and they serve');

$node->stop;
done_testing();
