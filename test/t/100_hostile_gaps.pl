# The places where libh2o 2.2.5 is laxer than RFC 9110/9112, closed by
# webgres before routing: each refused, its connection closed, and nothing
# smuggled behind it run.
use strict;
use warnings;
use Test::More;
use HostileTest;

my $h = HostileTest->new('gaps');
my $port = $h->port;

# A body framed two ways: h2o reads the chunked body, and what follows the
# terminator would be read as a second request.  Neither may run.
my $smuggle = "POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 35\r\nTransfer-Encoding: chunked\r\n\r\n"
  . "0\r\n\r\nGET /count?smuggled HTTP/1.1\r\nHost: h\r\n\r\n";
my $res = $h->refused($smuggle, 400, 'Content-Length with Transfer-Encoding', n => 2);
is(scalar @$res, 1, 'only one response: the smuggled request was never read');
is($h->hits, 0, 'neither the request nor the smuggled one ran');

$smuggle = "POST /count HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
  . "0\r\n\r\nGET /count HTTP/1.1\r\nHost: h\r\n\r\n";
$h->refused($smuggle, 400, 'Transfer-Encoding before Content-Length', n => 2);
is($h->hits, 0, 'nothing ran');

# Two Content-Length values: h2o takes the first, a proxy may take the last.
$smuggle = "POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 40\r\n\r\n"
  . "GET /count?smuggled HTTP/1.1\r\nHost: h\r\n\r\n";
$h->refused($smuggle, 400, 'two Content-Length values', n => 2);
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	400, 'two identical Content-Length headers');
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx", 400, 'signed Content-Length');
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 1\r\n\r\nx", 400, 'Content-Length list');
is($h->hits, 0, 'nothing ran');

# Obfuscated Transfer-Encoding, alone and next to a Content-Length.  Spaces
# and tabs after the colon are optional whitespace (RFC 9110 5.6.3): alone
# they are a plain chunked body, next to Content-Length still refused.
for my $te (" chunked", "\tchunked")
{
	(my $shown = $te) =~ s/\t/\\t/g;
	$h->answered("POST /len HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:$te\r\n\r\n1\r\nx\r\n0\r\n\r\n",
		200, "Transfer-Encoding:$shown alone");
	$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding:$te\r\n\r\n0\r\n\r\n",
		400, "Transfer-Encoding:$shown with Content-Length");
}
for my $te ("xchunked", "chunked, identity", "identity", "chunked\x0b", "chunked, chunked")
{
	(my $shown = $te) =~ s/([\x00-\x1f])/sprintf('\\x%02x', ord $1)/ge;
	$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: $te\r\n\r\n0\r\n\r\n",
		400, "Transfer-Encoding: $shown");
	$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: $te\r\n\r\n0\r\n\r\n",
		400, "Transfer-Encoding: $shown with Content-Length");
}
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	400, 'Transfer-Encoding folded onto the line before');
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nTransfer-Encoding\t: chunked\r\n\r\n0\r\n\r\n",
	400, 'tab before the colon');
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	400, 'two Transfer-Encoding headers');
$h->refused("POST /count HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
	400, 'space before the colon');
$h->refused("POST /count HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	400, 'Transfer-Encoding in HTTP/1.0');
is($h->hits, 0, 'nothing ran');

# Host: exactly one in HTTP/1.1.
$h->refused("GET /count HTTP/1.1\r\n\r\n", 400, 'HTTP/1.1 without Host');
$h->refused("GET /count HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, 'two Host headers');
$h->refused("GET /count HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, 'the same Host twice');
$h->refused("GET /count HTTP/1.1\r\nHost: a b\r\n\r\n", 400, 'Host with a space');
$h->refused("GET /count HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, 'Host with a slash');
$h->refused("GET /count HTTP/1.1\r\nHost: u\@a\r\n\r\n", 400, 'Host with userinfo');
$h->refused("GET /count HTTP/1.1\r\nHost: a:80x\r\n\r\n", 400, 'Host with a bad port');
is($h->hits, 0, 'nothing ran');
$h->answered("GET /hello HTTP/1.0\r\n\r\n", 200, 'HTTP/1.0 without Host is fine');
$h->answered("GET /hello HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 200, 'IPv6 literal Host');
$h->answered("GET /hello HTTP/1.1\r\nHost:\r\n\r\n", 200, 'empty Host (no authority) is fine');

# Absolute-form: routed on its path, query kept.
$res = $h->answered("GET http://127.0.0.1:$port/hello HTTP/1.1\r\nHost: h\r\n\r\n", 200, 'absolute-form');
is($res->{body}, 'hi', 'absolute-form is routed on its path');
$res = $h->answered("GET HTTPS://example.com/q?a=1&b=2 HTTP/1.1\r\nHost: h\r\n\r\n", 200, 'absolute-form with a query');
is($res->{body}, '{"a": "1", "b": "2"}', 'and its query is parsed');
$res = $h->answered("GET http://example.com HTTP/1.1\r\nHost: h\r\n\r\n", 404, 'absolute-form without a path is "/"');
$res = $h->answered("GET http://example.com/echo/x?k=v HTTP/1.1\r\nHost: h\r\n\r\n", 200, 'absolute-form echo');
like($res->{body}, qr{"path": "/echo/x"}, 'request.path is the origin-form path');
$h->refused("GET http:///hello HTTP/1.1\r\nHost: h\r\n\r\n", 400, 'absolute-form without an authority');
$h->refused("GET ftp://h/hello HTTP/1.1\r\nHost: h\r\n\r\n", 400, 'another scheme');
$h->refused("GET http://127.0.0.1/hello HTTP/1.1\r\n\r\n", 400, 'absolute-form still needs Host in HTTP/1.1');

# Methods: empty, not a token, absurdly long.  No SQL may run.
$h->refused(" /count HTTP/1.1\r\nHost: h\r\n\r\n", 400, 'empty method');
$h->refused("G\x01T /count HTTP/1.1\r\nHost: h\r\n\r\n", 400, 'control byte in the method');
$h->refused("G(T /count HTTP/1.1\r\nHost: h\r\n\r\n", 400, 'non-token method');
$h->refused(('X' x 33) . " /count HTTP/1.1\r\nHost: h\r\n\r\n", 501, '33-byte method');
$h->refused(('X' x 5000) . " /count HTTP/1.1\r\nHost: h\r\n\r\n", 501, '5000-byte method');
$h->refused("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 501, 'CONNECT');
is($h->hits, 0, 'no handler ran for any refused request');

# Accepted requests still count, once each.
$h->answered("POST /count HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", 200, 'a plain POST');
$h->answered("POST /count HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 200,
	'a chunked POST');
is($h->hits, 2, 'each ran once');

$h->finish;
