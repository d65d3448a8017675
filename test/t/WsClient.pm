# A WebSocket client on a raw socket for the TAP tests: it writes the
# handshake and every frame byte by byte (masked or not, fragmented, any
# opcode), and reads the server's frames as they come off the wire, so a
# test can check exactly what the server sends and how it closes.
package WsClient;
use strict;
use warnings;
use Digest::SHA qw(sha1_base64);
use IO::Select;
use IO::Socket::INET;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time);

# The GUID of RFC 6455 section 1.3, which the accept key hashes with.
my $GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

# What Sec-WebSocket-Accept must be for a key.
sub accept_for
{
	my ($key) = @_;
	my $a = sha1_base64($key . $GUID);
	return $a . '=' x ((4 - length($a) % 4) % 4);
}

# Sends a handshake for $path and reads the response head.  Options: key,
# version (13), origin, headers (hash), no_key, no_upgrade.  Returns the
# client, with {status}, {head} and {headers} (lower-case names).
sub open
{
	my ($class, $port, $path, %o) = @_;
	my $key = $o{key} // encode_base64(join('', map { chr(int rand 256) } 1 .. 16), '');
	my %h = (Host => "127.0.0.1:$port", %{ $o{headers} || {} });
	unless ($o{no_upgrade})
	{
		$h{Upgrade} = 'websocket';
		$h{Connection} = 'Upgrade';
	}
	$h{'Sec-WebSocket-Key'} = $key unless $o{no_key};
	$h{'Sec-WebSocket-Version'} = $o{version} // 13;
	$h{Origin} = $o{origin} if defined $o{origin};
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
		Timeout => 5) or die "connect to 127.0.0.1:$port: $!";
	$s->autoflush(1);
	binmode $s;
	my $self = bless { sock => $s, buf => '', key => $key, eof => 0 }, $class;
	print $s "GET $path HTTP/1.1\r\n" . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n";
	$self->fill(sub { $self->{buf} =~ /\r\n\r\n/ }, $o{timeout} // 20);
	if ($self->{buf} =~ s/^(.*?\r\n)\r\n//s)
	{
		$self->{head} = $1;
		($self->{status}) = $self->{head} =~ m{^HTTP/1\.1 (\d+)};
		for my $line (split /\r\n/, $self->{head})
		{
			$self->{headers}{ lc $1 } = $2 if $line =~ /^([^:]+):\s*(.*)$/;
		}
	}
	$self->{status} //= 0;
	return $self;
}

# Reads until $done->() is true, the peer closes, or $timeout seconds pass.
sub fill
{
	my ($self, $done, $timeout) = @_;
	my $deadline = time + ($timeout // 20);
	my $sel = IO::Select->new($self->{sock});
	my $ok;
	# $done is called once per read: it may take what it looks at.
	while (!($ok = $done->()) && !$self->{eof} && time < $deadline)
	{
		next unless $sel->can_read(0.1);
		my $n = sysread($self->{sock}, my $bytes, 65536);
		if (!$n) { $self->{eof} = 1; $self->{reset} = 1 if !defined $n; $ok = $done->(); last; }
		$self->{buf} .= $bytes;
	}
	return $ok;
}

# Reads what has arrived, waiting at most $timeout s; false at the end.
sub pump
{
	my ($self, $timeout) = @_;
	return 0 if $self->{eof};
	return 1 unless IO::Select->new($self->{sock})->can_read($timeout // 0);
	my $n = sysread($self->{sock}, my $bytes, 65536);
	if (!$n) { $self->{eof} = 1; return 0; }
	$self->{buf} .= $bytes;
	return 1;
}

# The bytes of one frame: fin, opcode, payload; mask (default on) with a
# random key unless masked => 0; rsv bits given as rsv.
sub frame
{
	my (%f) = @_;
	my $payload = $f{payload} // '';
	my $len = length $payload;
	my $masked = $f{masked} // 1;
	my $b0 = (($f{fin} // 1) ? 0x80 : 0) | (($f{rsv} // 0) << 4) | $f{opcode};
	my $out = chr($b0);
	my $mbit = $masked ? 0x80 : 0;
	if ($len < 126) { $out .= chr($mbit | $len); }
	elsif ($len < 65536) { $out .= chr($mbit | 126) . pack('n', $len); }
	else { $out .= chr($mbit | 127) . pack('Q>', $len); }
	if ($masked)
	{
		my $key = join '', map { chr(int rand 256) } 1 .. 4;
		my $m = $key x (int($len / 4) + 1);
		$out .= $key . ($payload ^ substr($m, 0, $len));
	}
	else { $out .= $payload; }
	return $out;
}

# Writes raw bytes.
sub send_raw
{
	my ($self, $bytes) = @_;
	local $SIG{PIPE} = 'IGNORE';
	my $s = $self->{sock};
	return print $s $bytes;
}

sub send_text { my ($self, $t, %f) = @_; $self->send_raw(frame(opcode => 1, payload => $t, %f)); }
sub send_binary { my ($self, $t, %f) = @_; $self->send_raw(frame(opcode => 2, payload => $t, %f)); }
sub send_ping { my ($self, $t) = @_; $self->send_raw(frame(opcode => 9, payload => $t // '')); }

# Sends a close frame with a code (and reason).
sub send_close
{
	my ($self, $code, $reason) = @_;
	$self->send_raw(frame(opcode => 8, payload => defined $code ? pack('n', $code) . ($reason // '') : ''));
}

# Takes one whole frame off the buffer: {fin, opcode, masked, payload}, or undef.
sub take_frame
{
	my ($self) = @_;
	my $b = $self->{buf};
	return undef if length $b < 2;
	my ($b0, $b1) = unpack 'CC', $b;
	my $len = $b1 & 0x7f;
	my $at = 2;
	if ($len == 126) { return undef if length $b < 4; $len = unpack 'n', substr($b, 2, 2); $at = 4; }
	elsif ($len == 127) { return undef if length $b < 10; $len = unpack 'Q>', substr($b, 2, 8); $at = 10; }
	my $masked = $b1 & 0x80;
	$at += 4 if $masked;
	return undef if length $b < $at + $len;
	my $f = { fin => ($b0 & 0x80) ? 1 : 0, rsv => ($b0 >> 4) & 7, opcode => $b0 & 0x0f,
		masked => $masked ? 1 : 0, payload => substr($b, $at, $len) };
	$self->{buf} = substr($b, $at + $len);
	return $f;
}

# The next frame from the server (waiting up to $timeout s), or undef.
sub next_frame
{
	my ($self, $timeout) = @_;
	my $f;
	$self->fill(sub { defined($f = $self->take_frame) }, $timeout // 20);
	return $f;
}

# The next data message's payload (pings answered on the way), or undef.
sub next_message
{
	my ($self, $timeout) = @_;
	while (my $f = $self->next_frame($timeout))
	{
		return $f if $f->{opcode} == 1 || $f->{opcode} == 2 || $f->{opcode} == 8;
		$self->send_raw(frame(opcode => 10, payload => $f->{payload})) if $f->{opcode} == 9;
	}
	return undef;
}

# Reads frames until a close comes; returns its code (undef: none, -1: none and EOF).
sub wait_close
{
	my ($self, $timeout) = @_;
	my $deadline = time + ($timeout // 20);
	while (time < $deadline)
	{
		my $f = $self->next_frame($deadline - time);
		return $self->{eof} ? -1 : undef unless $f;
		next unless $f->{opcode} == 8;
		$self->{close_reason} = length $f->{payload} > 2 ? substr($f->{payload}, 2) : '';
		return length $f->{payload} >= 2 ? unpack('n', $f->{payload}) : 1005;
	}
	return undef;
}

# Whether the server closed the TCP connection within $timeout s.
sub wait_eof
{
	my ($self, $timeout) = @_;
	$self->fill(sub { 0 }, $timeout // 10);
	return $self->{eof};
}

sub close { my ($self) = @_; close $self->{sock}; }

1;
