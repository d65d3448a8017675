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
use H2Test qw(frame request_block read_stream);

my $node = WebgresTest->new_node('h2c', workers => 1, conf => "webgres.http2 = on\n");
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/hello/:who', q{
	SELECT 'hello ' || (request.params->>'who') || ' ' || coalesce(request.headers->>'cookie', '-') AS body
	FROM request});
WebgresTest::wait_for_status($port, '/hello/x', 200);

my $PREFACE = $H2Test::PREFACE;

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
