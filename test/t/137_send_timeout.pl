# webgres.send_timeout: a client that stops reading a response too large
# for the socket buffers (a static file, a handler's body) would hold its
# connection for as long as it keeps the socket open, h2o's write never
# completing.  Once bytes have waited for it and it has acknowledged none
# for send_timeout, the connection is reset (SO_LINGER 0) and logged once:
# over HTTP/1.1 and over HTTP/2, and for an HTTP/2 connection whose event
# stream was cut for not reading (RST_STREAM alone frees nothing while the
# whole connection is stalled).  The server's side of each connection is
# looked up in /proc/net/tcp: queued bytes while the client stalls, then no
# entry at all.  A client that reads slowly but steadily is not cut, even
# once its response sits whole in the kernel and its connection counts as
# idle.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use IPC::Run;
use Socket qw(SOL_SOCKET SO_RCVBUF inet_aton pack_sockaddr_in);
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;
use ChaosTest;
use H2Test;

my $send_timeout = 2;
my $dir = PostgreSQL::Test::Utils::tempdir();
mkdir "$dir/files" or die "mkdir: $!";
# Files larger than what the socket buffers between server and client hold.
for my $f ([ 'big.bin', 8 << 20 ], [ 'medium.bin', 2 << 20 ])
{
	open my $fh, '>', "$dir/files/$f->[0]" or die "$f->[0]: $!";
	print $fh 'f' x $f->[1];
	close $fh;
}

my $node = WebgresTest->new_node('send_timeout', workers => 1,
	conf => "webgres.http2 = on\nwebgres.send_timeout = '${send_timeout}s'\n"
	  . "webgres.request_timeout = '1s'\nwebgres.sse_buffer_limit = 65536\n"
	  . "webgres.sse_heartbeat = 300\nlog_min_messages = debug1\n");
my $port = $node->{webgres_port};
$node->safe_psql('postgres',
	"INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/files', '$dir/files')");
WebgresTest::add_route($node, 'GET', '/huge', q{SELECT repeat('h', 8388608) AS body});
WebgresTest::add_route($node, 'GET', '/plain/:ch', q{
	SELECT ARRAY[request.params->>'ch'] AS channels FROM request});
WebgresTest::add_route($node, 'GET', '/fast', q{SELECT 'fast' AS body});
WebgresTest::wait_for_status($port, '/fast', 200);
WebgresTest::wait_for_status($port, '/files/medium.bin', 200);

my $cut_log = qr/resets a connection whose client is not taking its response/;

# The server's side of the connection to a client port, from /proc/net/tcp:
# its state ('' once it is gone) and the bytes queued for the client.
sub server_side
{
	my ($client_port) = @_;
	my $want = sprintf ':%04X$', $port;
	my $peer = sprintf ':%04X$', $client_port;
	open my $fh, '<', '/proc/net/tcp' or die "/proc/net/tcp: $!";
	<$fh>;
	while (my $line = <$fh>)
	{
		my @f = split ' ', $line;
		next unless $f[1] =~ /$want/ && $f[2] =~ /$peer/;
		my ($tx) = split /:/, $f[4];
		return ($f[3], hex $tx);
	}
	return ('', 0);
}

# A client with a receive buffer of $rcvbuf bytes (4096 unless told) that
# sends $request; a stalled client then reads nothing.
sub stalled_client
{
	my ($request, $rcvbuf) = @_;
	my $s = IO::Socket::INET->new(Proto => 'tcp') or die "socket: $!";
	setsockopt($s, SOL_SOCKET, SO_RCVBUF, $rcvbuf // 4096) or die "SO_RCVBUF: $!";
	$s->connect(pack_sockaddr_in($port, inet_aton('127.0.0.1'))) or die "connect: $!";
	$s->autoflush(1);
	print $s $request;
	return $s;
}

# The bytes of an HTTP/2 client that grants all the window HTTP/2 allows
# (flow control never holds the server back) and asks for $path on stream 1.
sub h2_request
{
	my ($path) = @_;
	return $H2Test::PREFACE . H2Test::frame(4, 0, 0, pack('nN', 4, 0x7fffffff))
	  . H2Test::frame(8, 0, 0, pack('N', 0x7fffffff - 65535))
	  . H2Test::frame(1, 0x5, 1, H2Test::request_block($path));
}

# Waits until the server's side of $s had bytes queued and is then gone
# entirely; the client then reads what reached it and finds the reset.
sub expect_reset
{
	my ($what, $s, $started, $log_offset) = @_;
	my $client_port = $s->sockport;
	my ($most_queued, @last) = (0);
	ok(ChaosTest::wait_for(sub {
		@last = server_side($client_port);
		$most_queued = $last[1] if $last[0] eq '01' && $last[1] > $most_queued;
		$most_queued > 0 && $last[0] eq '';
	}, 30), "$what: the connection is reset, nothing of it left on the server")
	  or diag("server side: state $last[0], $last[1] bytes queued");
	my $took = time - $started;
	cmp_ok($took, '>=', $send_timeout, sprintf("$what: not before webgres.send_timeout (%.1f s)", $took));
	cmp_ok($most_queued, '>', 0, "$what: bytes were queued for it while it stalled (up to $most_queued)");
	my @lines = (slurp_file($node->logfile, $log_offset) =~ /$cut_log/g);
	is(scalar @lines, 1, "$what: the reset is logged once");
	my ($got, $read) = (undef, 0);
	my $deadline = time + 30;
	while (time < $deadline)
	{
		$got = sysread($s, my $buf, 65536);
		last unless $got;
		$read += $got;
	}
	ok(!defined $got && $!{ECONNRESET}, "$what: the client finds its connection reset (after $read bytes)")
	  or diag('last read: ' . ($got // "undef, $!"));
	close $s;
}

# ---- clients that stop reading a large response ----
for my $case (
	[ 'HTTP/1.1 static file', "GET /files/big.bin HTTP/1.1\r\nHost: x\r\n\r\n" ],
	[ 'HTTP/1.1 handler body', "GET /huge HTTP/1.1\r\nHost: x\r\n\r\n" ],
	[ 'HTTP/2 static file', h2_request('/files/big.bin') ],
	[ 'HTTP/2 handler body', h2_request('/huge') ])
{
	my ($what, $request) = @$case;
	my $log_offset = -s $node->logfile;
	my $started = time;
	expect_reset($what, stalled_client($request), $started, $log_offset);
}

# ---- an HTTP/2 event stream cut for not reading, on a connection that reads nothing ----
{
	my $log_offset = -s $node->logfile;
	my $started = time;
	my $s = stalled_client(h2_request('/plain/flood'));
	ok(ChaosTest::wait_for(sub { slurp_file($node->logfile, $log_offset) =~ /listens on channel "flood"/ }, 30),
		'HTTP/2 event stream: it listens');
	my $flood = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
		  "DO \$\$ BEGIN FOR i IN 1..2000 LOOP PERFORM pg_notify('flood', i || ' ' || repeat('x', 7000)); "
		  . "IF i % 20 = 0 THEN COMMIT; END IF; END LOOP; END \$\$" ],
		'>', \my $out, '2>', \my $err);
	expect_reset('HTTP/2 event stream', $s, $started, $log_offset);
	like(slurp_file($node->logfile, $log_offset), qr/disconnects an event-stream client that is not reading/,
		'HTTP/2 event stream: the stream itself was cut by webgres.sse_buffer_limit');
	$flood->finish;
}

# ---- a client that reads slowly but steadily ----
# 64 kB every half second: far slower than the server sends, so bytes wait
# for it all along, and once its response is whole in the kernel its
# connection is idle past webgres.request_timeout; but it takes some bytes
# within every send_timeout, and gets the whole file.  (Loopback's socket
# buffers take the whole 2 MB at once.)  Its receive buffer is set to
# 32 kB: a receiver opens a closed window again only once it has read a
# good share of its buffer (receive-side silly-window avoidance), and with
# the kernel's own choice on loopback that share took this reader up to
# 2.5 s, more than the 2 s timeout here; 32 kB makes it half a second.
{
	my $log_offset = -s $node->logfile;
	my $s = stalled_client("GET /files/medium.bin HTTP/1.1\r\nHost: x\r\n\r\n", 32768);
	my $sel = IO::Select->new($s);
	my ($buf, $want, $eof) = ('', undef, 0);
	my $deadline = time + 120;
	while (time < $deadline)
	{
		my $step = 0;
		while ($step < 65536 && $sel->can_read(0.05))
		{
			my $got = sysread($s, my $chunk, 65536 - $step);
			if (!$got) { $eof = 1; last; }
			$buf .= $chunk;
			$step += $got;
		}
		if (!defined $want && $buf =~ /\r\n\r\n/ && $buf =~ /^Content-Length:\s*(\d+)/mi)
		{
			$want = $1 + index($buf, "\r\n\r\n") + 4;
		}
		last if $eof || (defined $want && length($buf) >= $want);
		sleep 0.5;
	}
	like($buf, qr{^HTTP/1\.1 200}, 'a slow reader: its response began');
	ok(defined $want && length($buf) == $want && !$eof,
		'a slow but steady reader gets the whole file, its connection still open')
	  or diag('read ' . length($buf) . ' of ' . ($want // '?') . " bytes; eof $eof");
	unlike(slurp_file($node->logfile, $log_offset), $cut_log, 'a slow reader: no reset logged');
	print $s "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n";
	my ($res) = WebgresTest::read_responses($s, 1, 10);
	is($res->[0]{status} // 0, 200, 'a slow reader: its connection serves the next request');
	close $s;
}

is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'the worker keeps serving');

$node->stop;
done_testing();
