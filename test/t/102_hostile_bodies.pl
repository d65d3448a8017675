# Hostile bodies: sizes, chunked-encoding abuse, Expect.  Every case gets a
# 4xx, closes the connection when framing is lost, and runs nothing.
use strict;
use warnings;
use Test::More;
use HostileTest;

my $h = HostileTest->new('bodies', conf => "webgres.max_body_size = '64kB'\n");
my $H = "Host: h\r\n";
my $TE = "Transfer-Encoding: chunked\r\n";

$h->refused("POST /count HTTP/1.1\r\n${H}Content-Length: 70000\r\n\r\nabc", 413, 'Content-Length over max_body_size');
$h->refused("POST /count HTTP/1.1\r\n$H$TE\r\n" . ("ffff\r\n" . ('a' x 65535) . "\r\n") x 2, 413,
	'chunked body over max_body_size');
$h->refused("POST /count HTTP/1.1\r\n${H}Content-Length: 99999999999999999999999\r\n\r\n", 400, 'huge Content-Length');
$h->refused("POST /count HTTP/1.1\r\n${H}Content-Length: -1\r\n\r\n", 400, 'negative Content-Length');
$h->refused("POST /count HTTP/1.1\r\n${H}Content-Length: 0x10\r\n\r\n", 400, 'hex Content-Length');
$h->refused("POST /count HTTP/1.1\r\n${H}Content-Length: \r\n\r\n", 400, 'empty Content-Length');

my @chunked = (
	[ "zz\r\nabc\r\n0\r\n\r\n",                 'chunk size not hex' ],
	[ "fffffffffffffffff1\r\nabc\r\n0\r\n\r\n", 'chunk size overflow' ],
	[ "-3\r\nabc\r\n0\r\n\r\n",                 'negative chunk size' ],
	[ "3\r\nabcXX0\r\n\r\n",                    'no CRLF after chunk data' ],
	[ "5\r\nab\r\n0\r\n\r\n",                   'chunk shorter than its size' ],
	[ "\r\n3\r\nabc\r\n0\r\n\r\n",              'empty chunk size line' ],
);
$h->refused("POST /count HTTP/1.1\r\n$H$TE\r\n$_->[0]", 400, $_->[1], timeout => 15) for @chunked;
is($h->hits, 0, 'nothing ran');

my $r = $h->answered("POST /len HTTP/1.1\r\n$H$TE\r\n3;ext=1\r\nabc\r\n0\r\n\r\n", 200, 'chunk extension');
is($r->{body}, '3', 'body decoded');
$r = $h->answered("POST /len HTTP/1.1\r\n$H$TE\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: y\r\n\r\n", 200, 'trailer');
is($r->{body}, '5', 'body decoded');
$r = $h->answered("POST /len HTTP/1.1\r\n$H$TE\r\n" . ("1\r\nx\r\n" x 2000) . "0\r\n\r\n", 200, '2000 one-byte chunks');
is($r->{body}, '2000', 'all of it');

# Expect: 100-continue is answered before the body is read.
my ($res, $closed, $s) = $h->send_raw("POST /len HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 3\r\n\r\n");
is($res->[0]{status}, 100, 'Expect: 100-continue gets 100 Continue');
print $s "abc";
($res) = WebgresTest::read_responses($s, 1, 10);
is($res->[0]{status}, 200, 'then the final response');
is($res->[0]{body}, '3', 'for the body sent after it');
close $s;
$h->refused("POST /count HTTP/1.1\r\n${H}Expect: 200-ok\r\nContent-Length: 3\r\n\r\nabc", 417, 'unknown expectation');
$h->refused("POST /count HTTP/1.1\r\n${H}Expect: 100-continue\r\nContent-Length: 70000\r\n\r\n", 413,
	'100-continue with a body over the limit');
is($h->hits, 0, 'nothing ran');

$h->finish;
