# H2Test: HTTP/2 spoken in raw frames (cleartext, or over an IO::Socket::SSL
# socket), for TAP tests of webgres:
# the client preface, frames built by hand, a literal HPACK request block,
# and a reader that decodes response frames far enough to check :status,
# the body and which frame types arrived.
#
#   print $s $H2Test::PREFACE . H2Test::frame(4, 0, 0, '')
#     . H2Test::frame(1, 0x5, 1, H2Test::request_block('/path'));
#   my ($status, $body, $types) = H2Test::read_stream($s, 1);
#
# Every wait is bounded.
package H2Test;

use strict;
use warnings;

use Exporter 'import';
use IO::Select;
use Time::HiRes qw(time);

our @EXPORT_OK = qw(frame hstr request_block status_of read_stream read_frames
  literal_block headers_frames exchange);

our $PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

sub frame
{
	my ($type, $flags, $stream, $payload) = @_;
	my $len = length $payload;
	return pack('CnCCN', $len >> 16, $len & 0xffff, $type, $flags, $stream) . $payload;
}

# HPACK string literal, no Huffman coding, of any length (RFC 7541 5.1, 5.2).
sub hstr
{
	my ($s) = @_;
	my $n = length $s;
	return chr($n) . $s if $n < 127;
	my $out = chr(127);
	$n -= 127;
	while ($n >= 128) { $out .= chr(($n & 0x7f) | 0x80); $n >>= 7; }
	return $out . chr($n) . $s;
}

# A request header block of literal fields without indexing (RFC 7541
# 6.2.2), any bytes in them: :method (GET), :scheme http, :path, and
# :authority (h) unless it is given as undef, then @fields as name, value.
#
#   literal_block(method => 'GE T', path => '/x', fields => [ 'x', "a\rb" ])
sub literal_block
{
	my (%o) = @_;
	my $authority = exists $o{authority} ? $o{authority} : 'h';
	my $b = "\x02" . hstr($o{method} // 'GET') . "\x86" . "\x04" . hstr($o{path} // '/');
	$b .= "\x01" . hstr($authority) if defined $authority;
	my @f = @{ $o{fields} // [] };
	while (my ($k, $v) = splice(@f, 0, 2)) { $b .= "\x00" . hstr($k) . hstr($v); }
	return $b;
}

# The frames that carry a header block on $stream, ending the stream: a
# HEADERS frame and as many CONTINUATIONs as 16 kB frames need.
sub headers_frames
{
	my ($stream, $block) = @_;
	my @pieces = unpack('(a16384)*', $block);
	@pieces = ('') unless @pieces;
	my $out = '';
	for my $i (0 .. $#pieces)
	{
		my $flags = ($i == 0 ? 0x1 : 0) | ($i == $#pieces ? 0x4 : 0);
		$out .= frame($i == 0 ? 1 : 9, $flags, $stream, $pieces[$i]);
	}
	return $out;
}

# One request on a new HTTP/2 connection, $s (h2c, or TLS with ALPN h2):
# the preface, then the header block of literal_block(%o).  Returns
# (:status or undef, body, frame types, and 'goaway', 'reset' or 'closed'
# when the request was ended so rather than answered; a server that closes
# while a large block is still being sent may reset the connection before
# its GOAWAY is read).
sub exchange
{
	my ($s, %o) = @_;
	local $SIG{PIPE} = 'IGNORE';
	print $s $PREFACE . frame(4, 0, 0, '') . headers_frames(1, literal_block(%o));
	my ($status, $body, $types) = read_stream($s, 1);
	my $ended = (grep { $_ == 7 } @$types) ? 'goaway' : (grep { $_ == 3 } @$types) ? 'reset' : undef;
	if (!defined $ended && !defined $status && (buffered($s) || IO::Select->new($s)->can_read(0)))
	{
		my $got = sysread($s, my $byte, 1);
		$ended = 'closed' unless $got;
	}
	return ($status, $body, $types, $ended);
}

# A request header block: :method GET and :scheme http from the static
# table, :path and :authority as literals with indexed names, then any
# other fields as literals with new names (all "without indexing").
sub request_block
{
	my ($path, @fields) = @_;
	my $b = "\x82\x86" . "\x04" . hstr($path) . "\x01" . hstr('h');
	while (my ($k, $v) = splice(@fields, 0, 2)) { $b .= "\x00" . hstr($k) . hstr($v); }
	return $b;
}

# Huffman codes of the digits (RFC 7541, Appendix B): all a status needs.
my %HUFF_DIGIT = ('00000' => 0, '00001' => 1, '00010' => 2, '011001' => 3, '011010' => 4,
	'011011' => 5, '011100' => 6, '011101' => 7, '011110' => 8, '011111' => 9);

# :status from the start of a response header block, which RFC 9113
# requires to come first: an indexed field (static entries 8 to 14) or a
# literal with name index 8, plain or Huffman-coded.
sub status_of
{
	my ($block) = @_;
	my @b = unpack('C*', $block);
	my %static = (8 => 200, 9 => 204, 10 => 206, 11 => 304, 12 => 400, 13 => 404, 14 => 500);
	return $static{ $b[0] & 0x7f } if $b[0] & 0x80;
	my $index = ($b[0] & 0x40) ? $b[0] & 0x3f : $b[0] & 0x0f;
	return undef unless $index == 8;
	my ($huff, $len) = ($b[1] & 0x80, $b[1] & 0x7f);
	my $raw = substr($block, 2, $len);
	return $raw + 0 unless $huff;
	my ($bits, $code, $out) = (unpack('B*', $raw), '', '');
	for my $bit (split //, $bits)
	{
		$code .= $bit;
		if (exists $HUFF_DIGIT{$code}) { $out .= $HUFF_DIGIT{$code}; $code = ''; }
		last if length $out == 3;
	}
	return $out + 0;
}

# Whether a TLS socket (IO::Socket::SSL) holds decrypted bytes that select
# cannot see.
sub buffered { my ($s) = @_; return $s->can('pending') && $s->pending; }

# Reads frames until stream $stream ends (10 s at most), acknowledging the
# server's SETTINGS.  Returns (:status, body, frame types seen).
sub read_stream
{
	my ($s, $stream, $buf) = @_;
	$buf //= '';
	my ($status, $body, $block, @types) = (undef, '', '');
	my $sel = IO::Select->new($s);
	my $deadline = time + 10;
	while (time < $deadline)
	{
		while (length($buf) >= 9)
		{
			my ($l1, $l2, $type, $flags, $sid) = unpack('CnCCN', $buf);
			my $len = ($l1 << 16) | $l2;
			last if length($buf) < 9 + $len;
			my $payload = substr($buf, 9, $len);
			substr($buf, 0, 9 + $len) = '';
			$sid &= 0x7fffffff;
			push @types, $type;
			print $s frame(4, 1, 0, '') if $type == 4 && !($flags & 1);
			next unless $sid == $stream;
			if ($type == 1 || $type == 9)    # HEADERS, CONTINUATION
			{
				if ($type == 1)
				{
					$payload = substr($payload, 1 + ord($payload), length($payload) - 1 - ord($payload) - ord(substr($payload, -1)))
					  if $flags & 0x8;       # PADDED (payload's last bytes are the padding)
					$payload = substr($payload, 5) if $flags & 0x20;    # PRIORITY
				}
				$block .= $payload;
				$status //= status_of($block) if $flags & 0x4;
			}
			elsif ($type == 0)                # DATA
			{
				$payload = substr($payload, 1, length($payload) - 1 - ord($payload)) if $flags & 0x8;
				$body .= $payload;
			}
			return ($status, $body, \@types) if ($type == 0 || $type == 1) && ($flags & 1);
			return ($status, $body, \@types) if $type == 3;    # RST_STREAM
		}
		next unless buffered($s) || $sel->can_read(0.5);
		my $got = sysread($s, my $chunk, 65536);
		last unless $got;
		$buf .= $chunk;
	}
	return ($status, $body, \@types);
}

# Reads frames (acknowledging the server's SETTINGS) until $until->($frame)
# is true for one, or $seconds (10) pass.  Returns the frames read, each
# {type, flags, stream, payload}, the last one the frame that matched.
sub read_frames
{
	my ($s, $until, $seconds) = @_;
	my ($buf, @frames) = ('');
	my $sel = IO::Select->new($s);
	my $deadline = time + ($seconds // 10);
	while (time < $deadline)
	{
		while (length($buf) >= 9)
		{
			my ($l1, $l2, $type, $flags, $sid) = unpack('CnCCN', $buf);
			my $len = ($l1 << 16) | $l2;
			last if length($buf) < 9 + $len;
			my $f = { type => $type, flags => $flags, stream => $sid & 0x7fffffff,
				payload => substr($buf, 9, $len) };
			substr($buf, 0, 9 + $len) = '';
			push @frames, $f;
			print $s frame(4, 1, 0, '') if $type == 4 && !($flags & 1);
			return @frames if $until->($f);
		}
		next unless buffered($s) || $sel->can_read(0.5);
		my $got = sysread($s, my $chunk, 65536);
		last unless $got;
		$buf .= $chunk;
	}
	return @frames;
}

1;
