# Health endpoints for load balancers: liveness, readiness with replay lag,
# and the primary-only check, on a primary and a streaming standby, through
# a paused and a delayed replay and a promotion.
use strict;
use warnings;
use IO::Select;
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $health = "webgres.liveness_path = '/livez'\n"
  . "webgres.readiness_path = '/readyz'\n"
  . "webgres.primary_path = '/primary'\n"
  . "webgres.max_replica_lag = '2s'\n";

my $primary = WebgresTest->new_node('primary', workers => 1,
	init => { allows_streaming => 1 }, conf => $health);
my $pport = $primary->{webgres_port};
$primary->safe_psql('postgres', q{CREATE TABLE kv (k int PRIMARY KEY)});
# Routes on the health paths themselves, which the health checks take
# precedence over (docs/scale-out.md), and one beside them; all three are
# loaded once the last answers.
WebgresTest::add_route($primary, 'GET', '/livez', q{SELECT 'the route at /livez' AS body FROM request});
WebgresTest::add_route($primary, 'POST', '/readyz', q{SELECT 'the route at /readyz' AS body FROM request});
WebgresTest::add_route($primary, 'GET', '/livez-route', q{SELECT 'route' AS body FROM request});
is(WebgresTest::wait_for_body($pport, '/livez-route', 'route')->{body}, 'route', 'the routes are loaded');

# Polls $path on $port until $want->($res) holds; returns the last response.
sub poll_until
{
	my ($port, $path, $want, $timeout) = @_;
	my $deadline = time + ($timeout // 60);
	my $res;
	while (time < $deadline)
	{
		$res = eval { WebgresTest::http_get($port, $path, timeout => 5) };
		return $res if $res && $want->($res);
		sleep 0.05;
	}
	return $res;
}

# ---- on the primary ----
my $res = WebgresTest::http_get($pport, '/livez');
is($res->{status}, 200, 'liveness: 200');
is($res->{body}, qq({"status":"alive"}\n), 'liveness body');
is($res->{headers}{'cache-control'}, 'no-store', 'health answers are not cached');
is($res->{headers}{'content-type'}, 'application/json', 'health answers are JSON');
$res = WebgresTest::http_get($pport, '/readyz');
is($res->{status}, 200, 'readiness on the primary: 200');
is($res->{body}, qq({"status":"ready","role":"primary","replay_lag_ms":0}\n), 'readiness body names the role');
is(WebgresTest::http_get($pport, '/primary')->{status}, 200, 'primary check on the primary: 200');
is(WebgresTest::http_get($pport, '/readyz?verbose=1')->{status}, 200, 'a query string does not hide the path');
is(WebgresTest::http_get($pport, '/readyz/x')->{status}, 404, 'only the exact path is a health check');
is(WebgresTest::http_get($pport, '/livez-route')->{body}, 'route', 'routes beside the health paths still serve');
$res = WebgresTest::request($pport, 'POST', '/readyz');
is($res->{status}, 405, 'POST to a health path: 405, though a POST route has that path');
is($res->{headers}{allow}, 'GET, HEAD', '405 says which methods');

# HEAD then GET pipelined on one connection, every byte read until the
# server closes: a HEAD answer must end at its blank line.
# (A quiet second is no end: only the close is, within a deadline.)
my $s = WebgresTest::connect_to($pport);
print $s "HEAD /readyz HTTP/1.1\r\nHost: x\r\n\r\nGET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
my $wire = '';
my $sel = IO::Select->new($s);
my $until = time + 60;
while (time < $until)
{
	next unless $sel->can_read(0.5);
	my $got = sysread($s, my $chunk, 65536);
	last unless $got;
	$wire .= $chunk;
}
close $s;
my ($head1, $rest) = split /\r\n\r\n/, $wire, 2;
like($head1, qr{^HTTP/1\.1 200}, 'HEAD answered 200');
like($head1, qr/content-length: 54/i, 'HEAD keeps the GET\'s Content-Length');
like($rest, qr{^HTTP/1\.1 200}, 'HEAD sent no body bytes: the next response follows at once');
like($rest, qr/\r\n\r\n\{"status":"alive"\}\n\z/, 'the GET after HEAD is intact');

# Off by default: an empty path is no endpoint, and the route at that
# path, shadowed so far, answers.
$primary->safe_psql('postgres', q{ALTER SYSTEM SET webgres.liveness_path = ''; SELECT pg_reload_conf()});
$res = poll_until($pport, '/livez', sub { $_[0]{body} eq 'the route at /livez' }, 30);
is($res->{body}, 'the route at /livez', 'liveness turned off at reload: its path is routed like any other');
$primary->safe_psql('postgres', q{ALTER SYSTEM RESET webgres.liveness_path; SELECT pg_reload_conf()});
$res = poll_until($pport, '/livez', sub { $_[0]{status} == 200 && $_[0]{body} =~ /alive/ }, 30);
is($res->{body}, qq({"status":"alive"}\n), 'back on: the health check again, over the route');

# A bad path is refused by the setting's check.
my ($rc, $out, $err) = $primary->psql('postgres', q{ALTER SYSTEM SET webgres.readiness_path = 'ready'});
isnt($rc, 0, 'a health path without a leading slash is refused');
like($err, qr/must start with "\/"/, 'and the error says why');

# ---- a streaming standby ----
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
my $sport = PostgreSQL::Test::Cluster::get_free_port();
$standby->append_conf('postgresql.conf', "webgres.listen = '127.0.0.1:$sport'\n");
$standby->start;
$primary->wait_for_catchup($standby);
WebgresTest::wait_for_listen($sport);

$res = poll_until($sport, '/readyz', sub { $_[0]{status} == 200 });
is($res->{status}, 200, 'a standby that keeps up: ready');
like($res->{body}, qr/"role":"standby"/, 'the standby says it is one');
is(WebgresTest::http_get($sport, '/primary')->{status}, 503, 'primary check on a standby: 503');
is(WebgresTest::http_get($sport, '/primary')->{body}, qq({"role":"standby"}\n), 'and its body');

# Paused replay takes the standby out, whatever the lag.
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
$res = poll_until($sport, '/readyz', sub { $_[0]{status} == 503 });
is($res->{status}, 503, 'paused replay: not ready');
like($res->{body}, qr/"reason":"replay is paused"/, 'and the body says why');
$standby->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
$res = poll_until($sport, '/readyz', sub { $_[0]{status} == 200 });
is($res->{status}, 200, 'resumed: ready again');

# Replay held back by recovery_min_apply_delay: WAL arrives, replay waits;
# the lag (age of the oldest WAL received and not replayed) passes the 2 s
# limit, then falls back when the delay has passed.
$standby->append_conf('postgresql.conf', "recovery_min_apply_delay = '6s'\n");
$standby->reload;
$standby->poll_query_until('postgres', q{SELECT current_setting('recovery_min_apply_delay') = '6s'})
  or die 'recovery_min_apply_delay not applied';
$primary->safe_psql('postgres', 'INSERT INTO kv VALUES (1)');
$res = poll_until($sport, '/readyz', sub { $_[0]{status} == 503 });
is($res->{status}, 503, 'replay behind by more than max_replica_lag: not ready');
like($res->{body}, qr/"reason":"replay lag is over webgres.max_replica_lag"/, 'the reason is the lag');
my ($lag) = $res->{body} =~ /"replay_lag_ms":(\d+)/;
cmp_ok($lag, '>', 2000, "the reported lag ($lag ms) is over the limit");
$res = poll_until($sport, '/readyz', sub { $_[0]{status} == 200 });
is($res->{status}, 200, 'the delayed WAL replayed: ready again');
is($standby->safe_psql('postgres', 'SELECT count(*) FROM kv'), '1', 'the row is there');
$standby->append_conf('postgresql.conf', "recovery_min_apply_delay = 0\n");
$standby->reload;

# ---- promotion: the standby becomes the primary without a restart ----
my $t0 = time;
$standby->safe_psql('postgres', 'SELECT pg_promote()');
$res = poll_until($sport, '/primary', sub { $_[0]{status} == 200 }, 30);
my $took = time - $t0;
is($res->{status}, 200, 'after pg_promote() the primary check answers 200');
note(sprintf('promotion seen by the primary check after %.3f s', $took));
like(WebgresTest::http_get($sport, '/readyz')->{body}, qr/"role":"primary"/, 'readiness reports primary');

# ---- no executor running: not ready ----
my $lone = WebgresTest->new_node('lone', workers => 1,
	conf => $health . "webgres.executors = 1\nmax_worker_processes = 2\nmax_logical_replication_workers = 0\n");
$res = poll_until($lone->{webgres_port}, '/readyz', sub { $_[0]{status} == 503 }, 30);
is($res->{status}, 503, 'no executor could start: not ready');
like($res->{body}, qr/"reason":"no executor is running"/, 'and the reason says so');
is(WebgresTest::http_get($lone->{webgres_port}, '/livez')->{status}, 200, 'but alive');
$lone->stop;

$standby->stop;
$primary->stop;
done_testing();
