# Connections webgres cuts because their client does not read are reset,
# not closed: the kernel then drops what was still queued for the client at
# once, where a close would leave the server's side in FIN-WAIT-1 holding
# the queue for as long as the client keeps its socket open and reads
# nothing.  Two cuts: an event stream whose client stopped reading, and a
# keep-alive connection whose last response still waits for the client,
# which takes none of it: idle past webgres.request_timeout, it is cut by
# webgres.send_timeout (137_send_timeout.pl has the send timeout itself).
# The server's side of each is looked up in /proc/net/tcp: queued bytes
# while the client stalls, then no entry at all.
use strict;
use warnings;
use IO::Socket::INET;
use IPC::Run;
use Socket qw(SOL_SOCKET SO_RCVBUF inet_aton pack_sockaddr_in);
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;
use ChaosTest;

my $node = WebgresTest->new_node('cut_reset', workers => 1,
	conf => "webgres.sse_buffer_limit = 65536\nwebgres.sse_heartbeat = 300\n"
	  . "webgres.request_timeout = '1s'\nwebgres.header_timeout = '1s'\n"
	  . "webgres.send_timeout = '5s'\n"
	  . "log_min_messages = debug1\n");
my $port = $node->{webgres_port};

WebgresTest::add_route($node, 'GET', '/plain/:ch', q{
	SELECT ARRAY[request.params->>'ch'] AS channels FROM request});
WebgresTest::add_route($node, 'GET', '/big', q{SELECT repeat('b', 262144) AS body});
WebgresTest::add_route($node, 'GET', '/fast', q{SELECT 'fast' AS body});
WebgresTest::wait_for_status($port, '/fast', 200);

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

# A client with a small receive buffer that sends one request and then
# reads nothing.
sub stalled_client
{
	my ($request) = @_;
	my $s = IO::Socket::INET->new(Proto => 'tcp') or die "socket: $!";
	setsockopt($s, SOL_SOCKET, SO_RCVBUF, 4096) or die "SO_RCVBUF: $!";
	$s->connect(pack_sockaddr_in($port, inet_aton('127.0.0.1'))) or die "connect: $!";
	$s->autoflush(1);
	print $s $request;
	return $s;
}

# ---- an event stream whose client stopped reading ----
{
	my $log_offset = -s $node->logfile;
	my $s = stalled_client("GET /plain/flood HTTP/1.1\r\nHost: x\r\n\r\n");
	my $client_port = $s->sockport;
	my ($head) = ChaosTest::read_some($s, sub { $_[0] =~ /\r\n\r\n/ }, 30);
	like($head, qr{^HTTP/1\.1 200}, 'the event stream began');
	ok(ChaosTest::wait_for(sub { slurp_file($node->logfile, $log_offset) =~ /listens on channel "flood"/ }, 30),
		'the event stream listens');
	my $flood = IPC::Run::start(
		[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
		  "DO \$\$ BEGIN FOR i IN 1..2000 LOOP PERFORM pg_notify('flood', i || ' ' || repeat('x', 7000)); "
		  . "IF i % 20 = 0 THEN COMMIT; END IF; END LOOP; END \$\$" ],
		'>', \my $out, '2>', \my $err);
	my $most_queued = 0;
	ok(ChaosTest::wait_for(sub {
		my ($state, $tx) = server_side($client_port);
		$most_queued = $tx if $state eq '01' && $tx > $most_queued;
		slurp_file($node->logfile, $log_offset) =~ /disconnects an event-stream client that is not reading/;
	}, 60), 'the client that reads nothing is disconnected');
	$flood->finish;
	cmp_ok($most_queued, '>', 0, "bytes were queued for it while it stalled (up to $most_queued)");
	my @last;
	ok(ChaosTest::wait_for(sub { @last = server_side($client_port); $last[0] eq '' }, 10),
		'nothing of its connection is left on the server')
	  or diag("server side: state $last[0], $last[1] bytes queued");
	# What reached the client before the reset is still read; then the reset.
	my ($got, $read) = (undef, 0);
	my $deadline = time + 30;
	while (time < $deadline)
	{
		$got = sysread($s, my $buf, 65536);
		last unless $got;
		$read += $got;
	}
	ok(!defined $got && $!{ECONNRESET}, "the client finds its connection reset (after $read bytes)")
	  or diag('last read: ' . ($got // "undef, $!"));
	close $s;
}

# ---- a keep-alive connection whose last response waits for a client that takes none ----
{
	my $s = stalled_client("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	my $client_port = $s->sockport;
	my $most_queued = 0;
	my @last;
	ok(ChaosTest::wait_for(sub {
		@last = server_side($client_port);
		$most_queued = $last[1] if $last[0] eq '01' && $last[1] > $most_queued;
		$last[0] ne '01';
	}, 60), 'the connection is ended after webgres.send_timeout');
	cmp_ok($most_queued, '>', 0, "the response was still queued for the client (up to $most_queued)");
	ok(ChaosTest::wait_for(sub { @last = server_side($client_port); $last[0] eq '' }, 10),
		'nothing of its connection is left on the server')
	  or diag("server side: state $last[0], $last[1] bytes queued");
	close $s;
}

# A client that reads and times out is not reset: its 408 reaches it, and
# the connection ends in an orderly close.
{
	my $s = WebgresTest::connect_to($port);
	print $s "GET /fast HTTP/1.1\r\nHost: x\r\n\r\n";
	my ($res) = WebgresTest::read_responses($s, 1, 10);
	is($res->[0]{status} // 0, 200, 'a reading client is answered');
	print $s "GET /fast HTTP/1.1\r\n";
	my ($rest, $closed) = ChaosTest::read_to_end($s, 10);
	ok($closed && $rest =~ m{^HTTP/1\.1 408 }, 'a request head left unfinished gets its 408 and the close')
	  or diag("closed: $closed; got: $rest");
	close $s;
}
is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'the worker keeps serving');

$node->stop;
done_testing();
