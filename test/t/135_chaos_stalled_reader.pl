# An executor that dies under a streamed export whose client reads
# nothing: h2o is still sending a piece (its HTTP/2 stream has no window,
# or its HTTP/1.1 socket buffers are full), so the response cannot be
# ended through h2o.  It is cut under h2o at once: the HTTP/2 stream is
# reset without the client granting any window, the HTTP/1.1 connection
# is shut down without the client reading; the worker keeps serving.  An
# executor that finishes while its client reads nothing is not taken for
# one that died: the rest of its stream goes out when the client reads.
use strict;
use warnings;
use IO::Socket::INET;
use Socket qw(SOL_SOCKET SO_RCVBUF);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use ChaosTest;

my $node = WebgresTest->new_node('chaos_stalled', workers => 1,
	conf => "webgres.executors = 2\nwebgres.http2 = on\n");
my $port = $node->{webgres_port};

# Some 20 MB of rows before the handler would sleep: more than the socket
# buffers between a client that reads nothing and the worker hold.
$node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	('GET', '/export', $h$SELECT i, repeat('x', 100) AS pad,
	   CASE WHEN i = 150000 THEN pg_sleep(600)::text END AS s
	   FROM generate_series(1, 300000) i$h$, 'stream')});
# A small export the executor finishes while its client reads nothing.
$node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	('GET', '/small', $h$SELECT i, repeat('y', 100) AS pad FROM generate_series(1, 500) i$h$, 'stream')});
WebgresTest::add_route($node, 'GET', '/fast', q{SELECT 'fast' AS body});
WebgresTest::wait_for_status($port, '/fast', 200);

# The executor that runs the export, once it is blocked writing to the
# worker: the worker stopped reading it because h2o holds a piece.
sub stalled_executor
{
	my ($pid, $blocked) = (undef, 0);
	# Asleep in poll(2) five looks running: blocked, not between writes.
	WebgresTest::poll_until(sub {
		($pid) = split /\n/, $node->safe_psql('postgres',
			"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres executor' "
			  . "AND state = 'active' AND query LIKE 'GET /export%'");
		$blocked = ($pid && ChaosTest::in_poll($pid)) ? $blocked + 1 : 0;
		$blocked >= 5;
	}, 120);
	return $blocked >= 5 ? $pid : undef;
}

# HTTP/2: the stream's window is 0, so not a byte of DATA can go out.
my $h2 = ChaosTest::h2_open($port, '/export', window => 0);
ok(ChaosTest::h2_until($h2, sub { $_[0]{type} == 1 && $_[0]{stream} == 1 }),
	'HTTP/2: the export\'s head came');
my $pid = stalled_executor();
ok($pid, 'HTTP/2: its executor is blocked behind the piece h2o cannot send');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
my $end = ChaosTest::h2_until($h2, sub { $_[0]{stream} == 1 && ($_[0]{type} == 3 || ($_[0]{flags} & 1)) }, 60);
ok($end && $end->{type} == 3, 'HTTP/2: the stream is reset although the client granted no window');
is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'HTTP/2: the worker keeps serving');
close $h2->{sock};

# HTTP/1.1: a client with a small receive buffer that reads nothing past
# the head.
my $s = IO::Socket::INET->new(Proto => 'tcp') or die "socket: $!";
setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096) or die "SO_RCVBUF: $!";
$s->connect(pack_sockaddr_in($port, inet_aton('127.0.0.1'))) or die "connect: $!";
$s->autoflush(1);
print $s "GET /export HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
my ($head) = ChaosTest::read_some($s, sub { $_[0] =~ /\r\n\r\n/ });
like($head, qr{^HTTP/1\.1 200}, 'HTTP/1.1: the export began');
$pid = stalled_executor();
ok($pid, 'HTTP/1.1: its executor is blocked behind the piece h2o cannot send');
my $client_port = $s->sockport;
is(ChaosTest::server_tcp_state($port, $client_port), '01', 'HTTP/1.1: the connection is established');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok(ChaosTest::wait_for(sub { ChaosTest::server_tcp_state($port, $client_port) ne '01' }, 60),
	'HTTP/1.1: the server ends the connection although the client reads nothing');
my ($rest, $closed) = ChaosTest::read_to_end($s, 60);
ok($closed, 'HTTP/1.1: the client finds the connection closed');
ok(!ChaosTest::has_last_chunk($head . $rest), 'HTTP/1.1: without the last chunk');
close $s;
is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'HTTP/1.1: the worker keeps serving');

# An executor that finishes while its client reads nothing leaves the
# whole rest of the stream, END included, in its socket: read in, it is
# not taken for a cut, and goes out whole once the client reads.
my $small = ChaosTest::h2_open($port, '/small', window => 0);
ok(ChaosTest::h2_until($small, sub { $_[0]{type} == 1 && $_[0]{stream} == 1 }),
	'a small export\'s head came');
ok(ChaosTest::wait_for(sub {
	$node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres executor' "
		  . "AND state = 'active' AND query LIKE 'GET /small%'") eq '0' }),
	'its executor finished while the client read nothing');
# Long enough for the worker to have looked at the executor's socket.
ok(!ChaosTest::h2_until($small, sub { $_[0]{stream} == 1 && $_[0]{type} == 3 }, 1),
	'the stream is not reset');
print { $small->{sock} } H2Test::frame(8, 0, 1, pack('N', 0x7fffffff));
my ($data, $last) = (0, undef);
$last = ChaosTest::h2_until($small, sub {
	$data += length($_[0]{payload}) if $_[0]{type} == 0 && $_[0]{stream} == 1;
	$_[0]{stream} == 1 && ($_[0]{type} == 3 || ($_[0]{flags} & 1));
});
ok($last && $last->{type} == 0 && ($last->{flags} & 1), 'once the client reads, the stream ends with END_STREAM');
cmp_ok($data, '>', 500 * 100, "... after all its rows ($data bytes)");
close $small->{sock};

$node->stop;
done_testing();
