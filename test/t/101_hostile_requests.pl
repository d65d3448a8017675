# Hostile request lines, targets and headers: each gets the right 4xx (or
# 501/505 for what webgres does not implement), never a 5xx, and the server
# answers normally afterwards.  Every case that HTTP/2 can carry is sent
# over HTTP/2 (h2c) too, with the same outcome: one screen for both
# protocols (where h2o's HPACK decoder refuses first, the request is ended
# as malformed; either way it never reaches a route).
use strict;
use warnings;
use Test::More;
use HostileTest;

my $h = HostileTest->new('requests', conf => "webgres.http2 = on\n");
my $H = "Host: h\r\n";

# Every request that must be refused goes to a path a counting route
# answers (/count, /count/...): one that got past the screening would leave
# a row in hits, which the end of this file checks is empty.
WebgresTest::add_route($h->node, undef, '/count/*rest',
	q{INSERT INTO hits (what) SELECT request.method || ' ' || request.path FROM request RETURNING 'counted' AS body});
WebgresTest::wait_for_status($h->port, '/count/probe', 200)->{status} == 200 or die 'route did not load';
$h->reset_hits;

# Request lines and versions.
my @lines = (
	[ "GET /count HTTP/2.0\r\n$H\r\n",        400, 'HTTP/2.0 on an HTTP/1 connection' ],
	[ "GET /count HTTP/0.9\r\n$H\r\n",        400, 'HTTP/0.9' ],
	[ "GET /count\r\n\r\n",                   400, 'no version' ],
	[ "GET /count http/1.1\r\n$H\r\n",        400, 'lower-case version' ],
	[ "GET /count HTTP/1.1 \r\n$H\r\n",       400, 'trailing space' ],
	[ "GET  /count HTTP/1.1\r\n$H\r\n",       400, 'two spaces' ],
	[ "GET\t/count HTTP/1.1\r\n$H\r\n",       400, 'tab separator' ],
	[ "GET /count HTTP/1.1\n$H\r\n",          400, 'bare LF after the request line' ],
	[ "GET /count HTTP/1.1\r\nHost: h\n\n",   400, 'bare LF line ends' ],
	[ "GET /count HTTP/1.1\r$H\r\n",          400, 'bare CR' ],
	[ "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400, 'a TLS ClientHello' ],
	[ "get /hello HTTP/1.1\r\n$H\r\n",        405, 'lower-case method is another method' ],
	[ "GET * HTTP/1.1\r\n$H\r\n",             400, 'asterisk-form' ],
	[ "GET hello HTTP/1.1\r\n$H\r\n",         400, 'relative target' ],
	[ "GET /count#frag HTTP/1.1\r\n$H\r\n",   400, 'fragment in the target' ],
);
$h->refused($_->[0], $_->[1], $_->[2], keep => $_->[1] == 405) for @lines;
# The request-line cases HTTP/2 can carry: in :method and :path.
my @h2_lines = (
	[ { method => 'get', path => '/hello' },    405, 'lower-case method is another method' ],
	[ { path => '*' },                          400, 'asterisk-form' ],
	[ { path => 'hello' },                      400, 'relative target' ],
	[ { path => 'http://h/count' },             400, 'absolute-form in :path' ],
	[ { path => '/count#frag' },                400, 'fragment in the target' ],
	[ { path => '' },                           'error', 'empty :path' ],
	[ { path => '/count x' },                   400, 'a space in the target' ],
	[ { method => 'GE T', path => '/count' },   400, 'a method that is not a token' ],
	[ { method => '', path => '/count' },       400, 'an empty method' ],
	[ { method => 'G' x 40, path => '/count' }, 501, 'a 40-byte method' ],
	[ { method => 'CONNECT', path => '/count' }, 501, 'CONNECT' ],
	[ { path => '/count', authority => undef }, 400, 'no :authority (as no Host)' ],
	[ { path => '/count', authority => 'a b' }, 400, 'an invalid :authority' ],
	[ { path => '/count', authority => 'user@h' }, 400, 'userinfo in :authority' ],
);
$h->h2_refused(@$_) for @h2_lines;
$h->refused("G" x 40 . " /count HTTP/1.1\r\n$H\r\n", 501, 'a 40-byte method');
$h->refused("CONNECT h:80 HTTP/1.1\r\n$H\r\n", 501, 'CONNECT');
$h->refused("GET /count HTTP/1.1\r\nHost: a b\r\n\r\n", 400, 'an invalid Host');
$h->refused("GET /count HTTP/1.1\r\n\r\n", 400, 'no Host');
$h->answered("GET /hello HTTP/1.2\r\n$H\r\n", 200, 'HTTP/1.2 is served as HTTP/1.1');
$h->answered("\r\nGET /hello HTTP/1.1\r\n$H\r\n", 200, 'one empty line before the request line');

# Targets: size, bytes, percent-encoding, UTF-8, traversal.
my @targets = (
	[ '/' . ('a' x 9000),        414, 'a 9000-byte target' ],
	[ "/p/caf\xc3\xa9",          400, 'raw UTF-8 in the path' ],
	[ "/p/a\x01b",               400, 'control byte in the path' ],
	[ "/p/a\x7fb",               400, 'DEL in the path' ],
	[ '/p/%zz',                  400, 'invalid percent-escape' ],
	[ '/p/%4',                   400, 'truncated percent-escape' ],
	[ '/p/%',                    400, 'lone percent' ],
	[ '/q?a=%G1',                400, 'invalid percent-escape in the query' ],
	[ '/q?a=100%',               400, 'trailing percent in the query' ],
	[ '/p/%C0%AF',               400, 'overlong UTF-8 "/"' ],
	[ '/p/%E0%80%AE',            400, 'overlong three-byte UTF-8' ],
	[ '/p/%ED%A0%80',            400, 'UTF-16 surrogate' ],
	[ '/p/%F4%90%80%80',         400, 'beyond U+10FFFF' ],
	[ '/p/%FF',                  400, 'invalid UTF-8 byte' ],
	[ '/p/%C3',                  400, 'truncated UTF-8' ],
	[ '/q?a=%C0%AE%C0%AE',       400, 'overlong UTF-8 in the query' ],
	[ '/q?%C3=%A9',              400, 'UTF-8 split across "="' ],
	[ '/p/a%00b',                400, 'NUL in the path' ],
	[ '/q?a=%00',                400, 'NUL in the query' ],
	[ '/p/../hello',             400, '".." segment' ],
	[ '/p/./x',                  400, '"." segment' ],
	[ '/p/%2e%2E/hello',         400, 'encoded ".." segment' ],
	[ '/p/.%2e',                 400, 'half-encoded ".." segment' ],
	[ '/p/..',                   400, 'trailing ".."' ],
	[ '/p/..%2fetc%2fpasswd',    200, '".." before an encoded slash is one segment of data' ],
	[ '/p/%2e%2e%2f%2e%2e%2fetc', 200, 'encoded slashes keep ".." inside one segment (data, not a path)' ],
	[ '/p/...',                  200, '"..." is an ordinary segment' ],
	[ '/p/caf%C3%A9',            200, 'valid UTF-8 percent-encoded' ],
	[ '/p/%F0%9F%98%80',         200, 'four-byte UTF-8' ],
);
for my $t (@targets)
{
	my ($target, $status, $desc) = @$t;
	if ($status == 200)
	{
		$h->answered("GET $target HTTP/1.1\r\n$H\r\n", 200, $desc);
		$h->h2_answered({ path => $target }, 200, $desc);
	}
	else
	{
		# Under the counting routes: /p/x -> /count/x, /q?x -> /count?x.
		(my $counted = $target) =~ s{^/(?:p/|q(?=\?)|(?=a))}{/count/};
		$counted =~ s{^/count/\?}{/count?};
		$h->refused("GET $counted HTTP/1.1\r\n$H\r\n", $status, $desc);
		# h2o's HPACK decoder refuses control bytes in any field itself.
		$h->h2_refused({ path => $counted }, $target =~ /[\x00-\x1f\x7f]/ ? 'error' : $status, $desc);
	}
}
$h->answered("GET /count/" . ('a/' x 3000) . " HTTP/1.1\r\n$H\r\n", 414, '3000 segments');
$h->refused("GET /count/" . ('a' x 500000) . " HTTP/1.1\r\n$H\r\n", 400, 'a 500 kB target (h2o limit)');
$h->h2_answered({ path => "/count/" . ('a/' x 3000) }, 414, '3000 segments');
$h->h2_refused({ path => "/count/" . ('a' x 500000) }, 'error', 'a 500 kB target (the header block limit)');

# Header names and values.
my @headers = (
	[ "X\0Y: v",            'NUL in a name' ],
	[ "X: a\0b",            'NUL in a value' ],
	[ "X: a\rb",            'CR in a value' ],
	[ "X: a\x01b",          'control byte in a value' ],
	[ "X: a\x7fb",          'DEL in a value' ],
	[ "X\xc3\xa9: v",       'UTF-8 in a name' ],
	[ "X Y: v",             'space in a name' ],
	[ "X(: v",              'separator in a name' ],
	[ ": v",                'empty name' ],
	[ "novalue",            'no colon' ],
	[ "X: a\r\n folded",    'obsolete line folding' ],
	[ "X: a\r\n\tfolded",   'obsolete line folding with a tab' ],
	[ "X: " . ('a' x 70000), 'a 70 kB header', 431 ],
);
for my $c (@headers)
{
	$h->refused("GET /count HTTP/1.1\r\n$H$c->[0]\r\n\r\n", $c->[2] // 400, $c->[1]);
}
# Over HTTP/2, as name and value (no folding: a field is one literal).
# h2o refuses bad bytes in a name or value and upper case itself; the
# rest are webgres' screen.
my @h2_headers = (
	[ [ "x\0y", 'v' ],            'error', 'NUL in a name' ],
	[ [ 'x', "a\0b" ],            'error', 'NUL in a value' ],
	[ [ 'x', "a\rb" ],            'error', 'CR in a value' ],
	[ [ 'x', "a\nb" ],            'error', 'LF in a value' ],
	[ [ 'x', "a\x01b" ],          'error', 'control byte in a value' ],
	[ [ 'x', "a\x7fb" ],          'error', 'DEL in a value' ],
	[ [ "x\xc3\xa9", 'v' ],        'error', 'UTF-8 in a name' ],
	[ [ 'x y', 'v' ],             'error', 'space in a name' ],
	[ [ 'x(', 'v' ],              'error', 'separator in a name' ],
	[ [ '', 'v' ],                400,     'empty name' ],
	[ [ 'X', 'v' ],               'error', 'upper case in a name' ],
	[ [ 'x', ' v' ],              400,     'whitespace before a value (RFC 9113 8.2.1)' ],
	[ [ 'x', "v\t" ],             400,     'whitespace after a value' ],
	[ [ 'connection', 'close' ],  'error', 'a connection-specific field' ],
	[ [ 'transfer-encoding', 'chunked' ], 'error', 'Transfer-Encoding' ],
	[ [ 'te', 'gzip' ],           'error', 'TE other than trailers' ],
	[ [ 'x', 'a' x 70000 ],       'error', 'a 70 kB header (the header block limit)' ],
	[ [ map { ("x$_", 'v') } 1 .. 150 ], 400, '150 headers' ],
	[ [ map { ("x$_", 'v' x 1000) } 1 .. 80 ], 'error', '80 kB of headers' ],
);
$h->h2_refused({ path => '/count', fields => $_->[0] }, $_->[1], $_->[2]) for @h2_headers;
$h->h2_answered({ path => '/hello', fields => [ te => 'trailers' ] }, 200, 'TE: trailers');
$h->h2_answered({ path => '/hello', fields => [ map { ("x$_", 'v') } 1 .. 100 ] }, 200, '100 headers');
# A control byte at every place of a value longer than two words is
# refused, and tabs and high bytes in a long value are not.  (h2o's parser
# refuses these before the screen reads them; fuzz_screen checks that the
# screen, which reads values eight bytes at a time, never accepts one.)
for my $at (0 .. 19)
{
	for my $byte ("\x01", "\x1f", "\x7f")
	{
		my $value = 'a' x 20;
		substr($value, $at, 1) = $byte;
		$h->refused("GET /count HTTP/1.1\r\n${H}X: $value\r\n\r\n", 400,
			sprintf('byte 0x%02x at %d of a 20-byte value', ord($byte), $at), no_after => 1);
	}
}
$h->answered("GET /hello HTTP/1.1\r\n${H}X: a\tb\x80\xff\t" . ('c' x 17) . "\t\x20~\r\n\r\n", 200,
	'tabs, spaces, high bytes and ~ in a long value');
for my $at (0 .. 19)
{
	my $value = 'a' x 20;
	substr($value, $at, 1) = "\x1f";
	$h->h2_refused({ path => '/count', fields => [ x => $value ] }, 'error',
		"byte 0x1f at $at of a 20-byte value");
}
$h->h2_answered({ path => '/hello', fields => [ x => "a\tb\x80\xff\t" . ('c' x 17) . "\t\x20~" ] }, 200,
	'tabs, spaces, high bytes and ~ in a long value');
$h->refused("GET /count HTTP/1.1\r\n$H" . join('', map { "X$_: v\r\n" } 1 .. 150) . "\r\n", 400, '150 headers');
$h->refused("GET /count HTTP/1.1\r\n$H" . join('', map { "X$_: " . ('v' x 1000) . "\r\n" } 1 .. 80) . "\r\n",
	431, '80 kB of headers');

# Values that are valid HTTP but not valid text: refused when a handler reads them.
my $r = $h->answered("GET /echo/x HTTP/1.1\r\n${H}X: a\xff\xfeb\r\n\r\n", 400, 'invalid UTF-8 in a header a handler reads');
$r = $h->answered("GET /hello HTTP/1.1\r\n${H}X: a\xff\xfeb\r\n\r\n", 200, 'invalid UTF-8 in a header no handler reads');
$r = $h->answered("GET /echo/x HTTP/1.1\r\n${H}X: caf\xc3\xa9\r\n\r\n", 200, 'UTF-8 in a header value');
like($r->{body}, qr/"x": "café"/, 'reaches the handler intact');
$r = $h->answered("GET /echo/x HTTP/1.1\r\n${H}X: \t padded\r\n\r\n", 200, 'whitespace before a value');
like($r->{body}, qr/"x": "padded"/, 'is trimmed');
$h->h2_answered({ path => '/echo/x', fields => [ x => "a\xff\xfeb" ] }, 400, 'invalid UTF-8 in a header a handler reads');
$h->h2_answered({ path => '/hello', fields => [ x => "a\xff\xfeb" ] }, 200, 'invalid UTF-8 in a header no handler reads');
like($h->h2_answered({ path => '/echo/x', fields => [ x => "caf\xc3\xa9" ] }, 200, 'UTF-8 in a header value'),
	qr/"x": "café"/, 'HTTP/2: reaches the handler intact');

is($h->hits, 0, 'no refused request reached a counting route');

# The counting routes do count: a well-formed request to each leaves its row.
$h->answered("GET /count HTTP/1.1\r\n$H\r\n", 200, 'a well-formed request to /count');
$h->answered("GET /count/x%20y HTTP/1.1\r\n$H\r\n", 200, 'a well-formed request to /count/...');
is($h->hit_list, "GET /count\nGET /count/x%20y", 'each left its row');
$h->reset_hits;
$h->h2_answered({ path => '/count/h2' }, 200, 'a well-formed request to /count/...');
is($h->hit_list, "GET /count/h2", 'HTTP/2: it left its row');
$h->reset_hits;
$h->finish;
