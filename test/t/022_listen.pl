# webgres.listen with several addresses, IPv4 and IPv6, and
# webgres.workers = 0: no listener, nothing served, SQL still works, and a
# reload to one worker starts serving.
use strict;
use warnings;
use IO::Socket::INET;
use IO::Socket::IP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

# True if something accepts a TCP connection at host:port.
sub accepts
{
	my ($host, $port) = @_;
	my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Timeout => 2);
	close $s if $s;
	return $s ? 1 : 0;
}

# GET /where over host:port; returns the status and body.
sub get_at
{
	my ($host, $port) = @_;
	my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Timeout => 5)
	  or return (0, "connect: $!");
	binmode $s;
	print $s "GET /where HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
	my ($res) = WebgresTest::read_responses($s, 1, 10);
	close $s;
	return @$res ? ($res->[0]{status}, $res->[0]{body}) : (0, 'no response');
}

# ---- several addresses, one of them IPv6 ----
my $have_v6 = IO::Socket::IP->new(LocalHost => '::1', LocalPort => 0, Listen => 1) ? 1 : 0;
my ($p1, $p2, $p3) = map { PostgreSQL::Test::Cluster::get_free_port() } 1 .. 3;
my $listen = "127.0.0.1:$p1,localhost:$p2" . ($have_v6 ? ",[::1]:$p3" : '');
my $node = WebgresTest->new_node('listen', workers => 2, no_start => 1,
	conf => "webgres.listen = '$listen'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION webgres');
WebgresTest::add_route($node, 'GET', '/where', q{SELECT 'here' AS body});
WebgresTest::wait_for_status($p1, '/where', 200);

is(join(' ', get_at('127.0.0.1', $p1)), '200 here', "first address ($listen)");
is(join(' ', get_at('127.0.0.1', $p2)), '200 here', 'second address, a host name');
ok(!accepts('127.0.0.1', $node->{webgres_port}), 'nothing on an address not listed');
SKIP:
{
	skip 'IPv6: ::1 is not configured on this machine (no socket can bind to it)', 3 unless $have_v6;
	is(join(' ', get_at('::1', $p3)), '200 here', 'IPv6 address [::1]');
	ok(!accepts('127.0.0.1', $p3), 'the IPv6 entry does not listen on IPv4');
	ok(!accepts('::1', $p1), 'an IPv4 entry does not listen on IPv6');
}
is(scalar(WebgresTest::worker_pids($node)), 2, 'both workers run with three addresses');
$node->stop;

# ---- webgres.workers = 0 ----
my $idle = WebgresTest->new_node('noworkers', workers => 0, no_start => 1);
my $port = $idle->{webgres_port};
$idle->start;
$idle->safe_psql('postgres', 'CREATE EXTENSION webgres');
WebgresTest::add_route($idle, 'GET', '/where', q{SELECT 'here' AS body});
is($idle->safe_psql('postgres', 'SELECT count(*) FROM webgres.workers'), 0, 'workers = 0: no worker runs');
is($idle->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres worker'}),
	0, 'none in pg_stat_activity');
ok(!accepts('127.0.0.1', $port), 'nothing listens on webgres.listen');
is($idle->safe_psql('postgres', q{SELECT count(*) FROM webgres.routes WHERE path = '/where'}), 1,
	'SQL still works: routes are saved and checked');
is($idle->safe_psql('postgres', q{SELECT webgres.html_escape('<a>')}), '&lt;a&gt;', 'and the functions answer');

# The same node serves once the pool grows on a reload: what the checks
# above looked for would have been seen.
$idle->append_conf('postgresql.conf', "webgres.workers = 1\n");
$idle->reload;
ok(WebgresTest::wait_for_listen($port), 'a reload to one worker opens the listener');
is(WebgresTest::wait_for_status($port, '/where', 200)->{body}, 'here', 'and serves');
$idle->stop;

done_testing();
