# Clients that hang up in the middle of each kind of response, thousands of
# times: an inline handler's large answer, a handler on an executor, a
# streamed export and an event stream.  Nothing leaks: afterwards the
# executors are the same processes and idle, the backends are those there
# were, and the worker holds the descriptors and about the memory it held.
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use ChaosTest;

my $node = WebgresTest->new_node('chaos_hangups', workers => 1,
	conf => "webgres.executors = 2\nwebgres.max_queue = 1000\nwebgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	  ('GET', '/inline', $h$SELECT repeat('x', 200000) AS body FROM request$h$, 'inline'),
	  ('GET', '/exec', $h$SELECT pg_sleep(0.01)::text || repeat('x', 20000) AS body FROM request$h$, 'executor'),
	  ('GET', '/export', $h$SELECT i, repeat('x', 100) AS pad FROM generate_series(1, 20000) i$h$, 'stream'),
	  ('GET', '/events/:ch', $h$SELECT ARRAY[request.params->>'ch'] AS channels FROM request$h$, 'auto'),
	  ('GET', '/ping', $h$SELECT 'pong' AS body$h$, 'inline')});
WebgresTest::wait_for_status($port, '/ping', 200);
my ($worker) = WebgresTest::worker_pids($node);
my $fds = ChaosTest::fd_count($worker);

# Opens $n connections at a time that send a GET and hang up: at once, or
# after the first bytes of the answer ($first bytes).
sub hang_up
{
	my ($path, $total, $first) = @_;
	my $done = 0;
	while ($done < $total)
	{
		my @socks = map { ChaosTest::send_request($port, 'GET', $path) } 1 .. 50;
		for my $s (@socks)
		{
			ChaosTest::read_some($s, sub { length($_[0]) >= $first }, 10) if $first;
			close $s;
		}
		$done += @socks;
	}
	return $done;
}

sub backends
{
	return $node->safe_psql('postgres', q{SELECT string_agg(backend_type || ' ' || pid, ', ' ORDER BY pid)
		FROM pg_stat_activity WHERE pid <> pg_backend_pid()});
}
# Bytes the worker's memory contexts use, as it logs them on request.
sub contexts_used
{
	my $from = length(slurp_file($node->logfile));
	$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($worker)");
	my $used;
	ChaosTest::wait_for(sub {
		($used) = substr(slurp_file($node->logfile), $from) =~ /\[$worker\] LOG:  Grand total: .* (\d+) used/;
		defined $used;
	});
	return $used // -1;
}

sub busy
{
	return $node->safe_psql('postgres',
		'SELECT coalesce(sum(running + queued), 0) FROM webgres.route_execution()');
}

# One round of each kind.
sub round
{
	my ($scale) = @_;
	my $n = 0;
	$n += hang_up('/inline', 200 * $scale, 0);
	$n += hang_up('/inline', 200 * $scale, 1000);
	$n += hang_up('/exec', 100 * $scale, 0);
	$n += hang_up('/export', 100 * $scale, 4000);
	$n += hang_up('/events/hang', 200 * $scale, 100);
	return $n;
}

# An HTTP/1.1 event stream whose client left is noticed when a write to it
# fails: the first may still be taken by the kernel, so events go out until
# every connection is closed.
sub settle
{
	return ChaosTest::wait_for(sub {
		$node->safe_psql('postgres', q{NOTIFY hang, 'anyone there?'});
		return busy() eq '0' && ChaosTest::fd_count($worker) <= $fds;
	});
}
# A first round the same size, so that what the worker caches and the
# high-water marks of its allocations (hundreds of requests waiting for an
# executor at once) are in place.
my $warm = round(3);
ok(settle(), "warm-up: $warm clients hung up; the executors are idle and the connections closed");

my $backends = backends();
my $rss = ChaosTest::status_kb($worker, 'RssAnon');
my $used = contexts_used();

my $n = round(3);
ok($n >= 2000, "$n more clients hung up in the middle of their responses");

ok(settle(), 'no request runs or waits on an executor, and every connection is closed');
ok(ChaosTest::wait_for(sub { backends() eq $backends }), 'the same backends, executors included, as before')
  or diag("before: $backends\nafter:  " . backends());
is(ChaosTest::fd_count($worker), $fds, "the worker holds the descriptors it held before any client came");
# What Postgres allocates is counted exactly: 32 bytes a request would be
# more than 64 kB.  The process's size also holds libh2o's allocations
# and the allocator's high-water marks (hundreds of requests waiting at
# once), so its bound is looser.
my $used_after = contexts_used();
cmp_ok($used_after - $used, '<', 65536,
	"the worker's memory contexts use $used_after bytes, $used before");
my $grew = ChaosTest::status_kb($worker, 'RssAnon') - $rss;
cmp_ok($grew, '<', 8192, "the worker's anonymous memory grew by $grew kB");
is(WebgresTest::http_get($port, '/exec')->{status}, 200, 'the executors answer');
is(WebgresTest::http_get($port, '/ping')->{status}, 200, 'the worker answers');

$node->stop;
done_testing();
