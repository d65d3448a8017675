# ChaosTest: helpers for the tests that break things under a running
# server (t/122, t/13x): waits on conditions with generous deadlines, and
# what a process holds (anonymous memory, descriptors).
package ChaosTest;

use strict;
use warnings;

use IO::Select;
use Time::HiRes qw(time sleep);
use WebgresTest;
use H2Test;

# Polls $cond every 50 ms until it is true or $seconds (60) pass; returns
# its last value.  The deadline is for a loaded machine, not a measure.
sub wait_for
{
	my ($cond, $seconds) = @_;
	my $deadline = time + ($seconds // 60);
	while (1)
	{
		my $v = $cond->();
		return $v if $v || time >= $deadline;
		sleep 0.05;
	}
}

# A field of /proc/PID/status in kB (RssAnon, VmRSS), 0 if the process is gone.
sub status_kb
{
	my ($pid, $field) = @_;
	open my $f, '<', "/proc/$pid/status" or return 0;
	my ($kb) = join('', <$f>) =~ /^\Q$field\E:\s+(\d+)/m;
	return $kb // 0;
}

# How many descriptors the process has open.
sub fd_count
{
	my ($pid) = @_;
	opendir my $d, "/proc/$pid/fd" or return -1;
	my @fds = grep { !/^\./ } readdir $d;
	return scalar @fds;
}

# Sends a request on a new HTTP/1.1 connection; returns the socket.
sub send_request
{
	my ($port, $method, $path, %opts) = @_;
	my $s = WebgresTest::connect_to($port);
	my $body = $opts{body} // '';
	my $h = join '', map { "$_: $opts{headers}{$_}\r\n" } sort keys %{ $opts{headers} || {} };
	$h .= 'Content-Length: ' . length($body) . "\r\n" if $method eq 'POST';
	print $s "$method $path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n$h\r\n$body";
	return $s;
}

# Reads from a socket until $done->($bytes) is true, the peer closes, or
# $seconds pass.  Returns (bytes, closed).
sub read_some
{
	my ($s, $done, $seconds) = @_;
	my $deadline = time + ($seconds // 30);
	my $sel = IO::Select->new($s);
	my ($buf, $closed) = ('', 0);
	while (!$done->($buf) && time < $deadline)
	{
		next unless $sel->can_read(0.2);
		my $got = sysread($s, my $chunk, 65536);
		if (!$got) { $closed = 1; last; }
		$buf .= $chunk;
	}
	return ($buf, $closed);
}

# Reads until the peer closes (or $seconds pass); returns (bytes, closed).
sub read_to_end
{
	my ($s, $seconds) = @_;
	return read_some($s, sub { 0 }, $seconds);
}

# The status of an HTTP/1.1 response's head in $bytes, 0 if there is none.
sub status_of
{
	my ($bytes) = @_;
	return $bytes =~ m{^HTTP/1\.1 (\d{3})} ? $1 + 0 : 0;
}

# True if a chunked HTTP/1.1 body in $bytes ends with its last chunk.
sub has_last_chunk
{
	my ($bytes) = @_;
	return $bytes =~ /\r\n0\r\n\r\n\z/ ? 1 : 0;
}

# Whether process $pid sleeps in poll(2) (/proc/PID/wchan).
sub in_poll
{
	my ($pid) = @_;
	open my $f, '<', "/proc/$pid/wchan" or return 0;
	local $/;
	return (<$f> // '') =~ /poll/ ? 1 : 0;
}

# The state of the server's side of a TCP connection on loopback, from
# /proc/net/tcp: '01' established, '04' FIN-WAIT-1, ..., or '' if it is
# gone.  $server_port is the server's, $client_port the client's.
sub server_tcp_state
{
	my ($server_port, $client_port) = @_;
	my $want = sprintf ':%04X$', $server_port;
	my $peer = sprintf ':%04X$', $client_port;
	open my $fh, '<', '/proc/net/tcp' or return '';
	<$fh>;
	while (my $line = <$fh>)
	{
		my @f = split ' ', $line;
		return $f[3] if $f[1] =~ /$want/ && $f[2] =~ /$peer/;
	}
	return '';
}

# PIDs of the processes of a backend type, from pg_stat_activity.
sub pids_of
{
	my ($node, $type) = @_;
	return grep { length } split /\n/,
	  $node->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE backend_type = '$type' ORDER BY pid");
}

# An HTTP/2 client on a raw socket that keeps what it read past a frame
# between calls: h2_open() sends the preface, windows as large as HTTP/2
# allows (a client that takes all it is sent; window => N sets the
# streams' initial window) and GET $path on stream 1.
sub h2_open
{
	my ($port, $path, %opts) = @_;
	my $s = WebgresTest::connect_to($port);
	# SETTINGS_INITIAL_WINDOW_SIZE: window => 0 makes a client that reads nothing.
	print $s $H2Test::PREFACE . H2Test::frame(4, 0, 0, pack('nN', 4, $opts{window} // 0x7fffffff))
	  . H2Test::frame(8, 0, 0, pack('N', 0x7fffffff - 65535))
	  . H2Test::frame(1, 0x5, 1, H2Test::request_block($path));
	return { sock => $s, buf => '', frames => [], eof => 0 };
}

# Reads frames (acknowledging SETTINGS) until $until->($frame) is true for
# one, the peer closes, or $seconds pass; returns that frame or undef.
sub h2_until
{
	my ($c, $until, $seconds) = @_;
	my $deadline = time + ($seconds // 30);
	my $sel = IO::Select->new($c->{sock});
	while (1)
	{
		while (length($c->{buf}) >= 9)
		{
			my ($l1, $l2, $type, $flags, $sid) = unpack('CnCCN', $c->{buf});
			my $len = ($l1 << 16) | $l2;
			last if length($c->{buf}) < 9 + $len;
			my $f = { type => $type, flags => $flags, stream => $sid & 0x7fffffff,
				payload => substr($c->{buf}, 9, $len) };
			substr($c->{buf}, 0, 9 + $len) = '';
			push @{ $c->{frames} }, { %$f, payload => $type == 0 ? '' : $f->{payload} };
			print { $c->{sock} } H2Test::frame(4, 1, 0, '') if $type == 4 && !($flags & 1);
			return $f if $until->($f);
		}
		return undef if $c->{eof} || time >= $deadline;
		next unless $sel->can_read(0.2);
		my $got = sysread($c->{sock}, my $chunk, 65536);
		if (!$got) { $c->{eof} = 1; next; }
		$c->{buf} .= $chunk;
	}
}

1;
