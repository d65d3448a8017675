# Cleartext HTTP/2 (h2c) by prior knowledge, with webgres.http2 on (it is
# off by default), spoken in raw frames: the client preface, SETTINGS, a HEADERS frame with a
# literal HPACK block; the response frames are read back and decoded far
# enough to check :status and the body.  Cookies sent as several fields are
# joined with "; " here too.  An HTTP/1.1 request asking to upgrade to h2c
# is served as HTTP/1.1 (the upgrade is deprecated: docs/http2.md).
use strict;
use warnings;
use IO::Select;
use MIME::Base64 qw(encode_base64);
use Time::HiRes qw(time);
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('h2c', workers => 1, conf => "webgres.http2 = on\n");
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/hello/:who', q{
	SELECT 'hello ' || (request.params->>'who') || ' ' || coalesce(request.headers->>'cookie', '-') AS body
	FROM request});
WebgresTest::wait_for_status($port, '/hello/x', 200);

my $PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

sub frame
{
	my ($type, $flags, $stream, $payload) = @_;
	my $len = length $payload;
	return pack('CnCCN', $len >> 16, $len & 0xffff, $type, $flags, $stream) . $payload;
}

# HPACK string literal, no Huffman coding (lengths below 127).
sub hstr { my ($s) = @_; die 'long' if length($s) >= 127; return chr(length $s) . $s; }

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
		next unless $sel->can_read(0.5);
		my $got = sysread($s, my $chunk, 65536);
		last unless $got;
		$buf .= $chunk;
	}
	return ($status, $body, \@types);
}

# ---- prior knowledge ----
my $s = WebgresTest::connect_to($port);
print $s $PREFACE . frame(4, 0, 0, '')
  . frame(1, 0x5, 1, request_block('/hello/h2', cookie => 'a=1', cookie => 'b=2'));
my ($status, $body, $types) = read_stream($s, 1);
ok(grep({ $_ == 4 } @$types), 'prior knowledge: the server answers with SETTINGS');
is($status, 200, 'prior knowledge: :status 200');
is($body, 'hello h2 a=1; b=2', 'prior knowledge: the body, with the cookie fields joined by "; "');

# A second stream on the same connection, to a path with no route.
print $s frame(1, 0x5, 3, request_block('/nowhere'));
($status, $body) = read_stream($s, 3);
is($status, 404, 'a second stream on the connection: :status 404');
close $s;

# ---- Upgrade from HTTP/1.1 ----
# HTTP2-Settings: SETTINGS_MAX_CONCURRENT_STREAMS = 100, base64url.
(my $settings = encode_base64(pack('nN', 3, 100), '')) =~ tr{+/=}{-_}d;
$s = WebgresTest::connect_to($port);
print $s "GET /hello/up HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
  . "Upgrade: h2c\r\nHTTP2-Settings: $settings\r\nCookie: c=3\r\n\r\n";
my $head = '';
my $sel = IO::Select->new($s);
my $deadline = time + 10;
while (time < $deadline && $head !~ /\r\n\r\nhello up c=3/)
{
	next unless $sel->can_read(0.5);
	sysread($s, my $chunk, 65536) or last;
	$head .= $chunk;
}
my $end = index($head, "\r\n\r\n");
my $rest = $end >= 0 ? substr($head, $end + 4) : '';
$head = substr($head, 0, $end) if $end >= 0;
like($head, qr{^HTTP/1\.1 200 }, 'Upgrade: h2c is served as HTTP/1.1, not switched');
unlike($head, qr{^upgrade:}mi, '... with no Upgrade header');
is($rest, 'hello up c=3', '... and its body');
close $s;

is(WebgresTest::http_get($port, '/hello/after')->{status}, 200, 'HTTP/1.1 still served');
$node->stop;
done_testing();
