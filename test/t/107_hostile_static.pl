# Hostile input against static mounts: every way out of the mount's
# directory is refused, and nothing outside it is ever sent.  Dot segments
# plain, percent-encoded (either case, mixed) and double-encoded; encoded
# slashes and backslashes; raw backslashes; NUL, raw and encoded; empty
# segments; malformed escapes; dotfiles (unless the mount allows them);
# symbolic links pointing out, absolute, relative and through a directory,
# while a link that stays inside is served; the same over HTTP/2.  And the
# connection's protections hold for files as for routes: a head trickled
# to a file's path gets 408, and a client that stops reading a large file
# holds up nobody else.  Byte ranges cannot amplify a request: more than
# webgres.static_max_ranges of them get the whole file (200), overlapping
# ones are merged, so no answer is larger than the file and a part header
# per range.
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use HostileTest;
use H2Test qw(frame request_block read_stream);

my $dir = PostgreSQL::Test::Utils::tempdir();
my $root = "$dir/site";
mkdir $_ or die "$_: $!" for $root, "$root/sub", "$root/.hidden", "$dir/outside", "$dir/dots";
sub write_file { my ($p, $c) = @_; open my $f, '>:raw', $p or die "$p: $!"; print $f $c; close $f; }
write_file("$root/a.txt", "inside\n");
write_file("$root/big.bin", 'b' x (8 * 1024 * 1024));
my $app_js = join('', map { sprintf "console.log(%05d);\n", $_ } 1 .. 325);    # 6500 bytes
write_file("$root/app.js", $app_js);
write_file("$root/.secret", "DOTFILE SECRET\n");
write_file("$root/.hidden/x", "HIDDEN DIR SECRET\n");
write_file("$dir/outside/secret.txt", "TOP SECRET\n");
write_file("$dir/dots/.well-known", "allowed dotfile\n");
symlink('/etc/passwd', "$root/link-out") or die;
symlink('../outside/secret.txt', "$root/rel-out") or die;
symlink('../outside', "$root/dir-out") or die;
symlink("$root/a.txt", "$root/abs-in") or die;
symlink('a.txt', "$root/link-in") or die;

my $h = HostileTest->new('hostile_static',
	conf => "webgres.http2 = on\nwebgres.header_timeout = '1s'\n");
my $port = $h->port;
$h->node->safe_psql('postgres', qq{
	INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/app', '$root');
	INSERT INTO webgres.static_mounts (prefix, directory, dotfiles) VALUES ('/dots', '$dir/dots', true);
});
WebgresTest::wait_for_status($port, '/app/a.txt', 200);

my @leaks;
sub try_path
{
	my ($path, $status, $desc) = @_;
	my $r = $h->answered("GET $path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", $status, $desc);
	push @leaks, $path if $r && $r->{body} =~ /SECRET|root:/;
}

try_path('/app/a.txt', 200, 'a file inside');
try_path('/app/link-in', 200, 'a relative link that stays inside');
for my $case (
	[ '/app/../outside/secret.txt', 'a .. segment' ],
	[ '/app/sub/../../outside/secret.txt', 'two .. segments' ],
	[ '/app/./a.txt', 'a . segment' ],
	[ '/app/%2e%2e/outside/secret.txt', 'an encoded .. segment' ],
	[ '/app/%2E%2E/outside/secret.txt', 'an encoded .. segment, upper case' ],
	[ '/app/.%2e/outside/secret.txt', 'a half-encoded .. segment' ],
	[ '/app/%252e%252e/outside/secret.txt', 'a double-encoded .. segment' ],
	[ '/app/%25%32%65%25%32%65/outside/secret.txt', 'a double-encoded .., every byte' ],
	[ '/app/..%2foutside%2fsecret.txt', 'encoded slashes' ],
	[ '/app/sub%2f..%2f..%2foutside%2fsecret.txt', 'encoded slashes around ..' ],
	[ '/app/..%5coutside%5csecret.txt', 'encoded backslashes' ],
	[ '/app/..\\outside\\secret.txt', 'raw backslashes' ],
	[ '/app/a.txt%00.png', 'an encoded NUL' ],
	[ '/app/%00', 'an encoded NUL alone' ],
	[ '/app//a.txt', 'an empty segment' ],
	[ '/app/%zz', 'a malformed escape' ],
	[ '/app/%2', 'a truncated escape' ],
	)
{
	try_path($case->[0], 400, $case->[1]);
}
for my $case (
	[ '/app/.secret', 'a dotfile' ],
	[ '/app/%2esecret', 'an encoded dotfile' ],
	[ '/app/.hidden/x', 'a file in a dotted directory' ],
	[ '/app/link-out', 'an absolute link out (/etc/passwd)' ],
	[ '/app/rel-out', 'a relative link out' ],
	[ '/app/dir-out/secret.txt', 'a file through a directory link out' ],
	[ '/app/abs-in', 'an absolute link, even one pointing inside' ],
	[ '/app/a.txt/', 'a file as a directory' ],
	)
{
	try_path($case->[0], 404, $case->[1]);
}
try_path('/dots/.well-known', 200, 'a dotfile on a mount that allows them');
try_path('/dots/../site/.secret', 400, '... but not a .. segment there');

# The raw request as a NUL byte on the wire: refused before routing.
my $r = $h->answered("GET /app/a.txt\0.png HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 400,
	'a raw NUL in the path');
push @leaks, 'raw NUL' if $r && $r->{body} =~ /SECRET/;

# HTTP/2 takes the same path.
{
	my $s = WebgresTest::connect_to($port);
	print $s $H2Test::PREFACE . frame(4, 0, 0, '')
	  . frame(1, 0x5, 1, request_block('/app/%2e%2e/outside/secret.txt'));
	my ($status, $body) = read_stream($s, 1);
	is($status, 400, 'HTTP/2: an encoded .. segment: 400');
	push @leaks, 'h2 ..' if $body =~ /SECRET/;
	print $s frame(1, 0x5, 3, request_block('/app/rel-out'));
	($status, $body) = read_stream($s, 3);
	is($status, 404, 'HTTP/2: a link out: 404');
	push @leaks, 'h2 link' if $body =~ /SECRET/;
	close $s;
}

# A head trickled a line every 0.1 s to a file's path: 408 once
# webgres.header_timeout has passed, as for any path.
{
	local $SIG{PIPE} = 'IGNORE';
	my $s = WebgresTest::connect_to($port);
	my $sel = IO::Select->new($s);
	my $start = time;
	print $s "GET /app/a.txt HTTP/1.1\r\n";
	print $s "X: y\r\n" while time - $start < 30 && !$sel->can_read(0.1);
	my ($res) = WebgresTest::read_responses($s, 1, 30);
	is($res->[0] && $res->[0]{status}, 408, "a head trickled to a file's path: 408");
	close $s;
}

# A client that asks for 8 MB and reads nothing: another is served at once.
{
	my $stalled = WebgresTest::connect_to($port);
	setsockopt($stalled, Socket::SOL_SOCKET(), Socket::SO_RCVBUF(), 4096);
	print $stalled "GET /app/big.bin HTTP/1.1\r\nHost: x\r\n\r\n";
	my $r = eval { WebgresTest::http_get($port, '/app/a.txt', timeout => 10) };
	is($r && $r->{body}, "inside\n", 'a client stalled on a large file holds up nobody');
	close $stalled;
}

# ---- byte ranges ----
# Each answer is read whole from the wire: status, head and body together.
sub ranged
{
	my ($range) = @_;
	my $r = WebgresTest::raw($port,
		"GET /app/app.js HTTP/1.1\r\nHost: x\r\nRange: $range\r\nConnection: close\r\n\r\n", until_close => 1);
	return $r // { status => 0, wire => '', body => '', headers => {} };
}
my $file_len = length $app_js;
is($file_len, 6500, 'a 6500-byte file to ask ranges of');

# 20,000 ranges of the whole file in one 60 kB head: the file once, not
# 20,000 times (130 MB).
my $r20k = ranged('bytes=' . join(',', ('0-') x 20000));
is($r20k->{status}, 200, '20,000 ranges of the whole file: 200, the range ignored');
is($r20k->{body}, $app_js, '... the file once');
cmp_ok(length $r20k->{wire}, '<=', $file_len + 1000,
	'... the whole answer (' . length($r20k->{wire}) . ' bytes) no larger than the file and its head');
ok(!exists $r20k->{headers}{'content-range'}, '... with no Content-Range');

# 5,000 one-byte ranges all over the file (as many as fit a head): over
# the limit too.
my $spread = ranged('bytes=' . join(',', map { my $p = ($_ * 13) % 6500; "$p-$p" } 0 .. 4999));
is($spread->{status}, 200, '5,000 one-byte ranges: 200');
cmp_ok(length $spread->{wire}, '<=', $file_len + 1000, '... no larger than the file and its head');

# At the limit (16), ranges of the whole file are merged into one.
my $sixteen = ranged('bytes=' . join(',', ('0-') x 16));
is($sixteen->{status}, 206, '16 overlapping ranges: 206');
is($sixteen->{headers}{'content-range'}, "bytes 0-6499/6500", '... merged into one range, the whole file');
is($sixteen->{body}, $app_js, '... sent once');

# Sixteen one-byte ranges far apart: sixteen parts, each with its header,
# and bounded by them.
my $parts = ranged('bytes=' . join(',', map { ($_ * 400) . '-' . ($_ * 400) } 0 .. 15));
is($parts->{status}, 206, '16 ranges far apart: 206');
like($parts->{headers}{'content-type'} // '', qr{^multipart/byteranges; boundary=}, '... multipart/byteranges');
my @got_parts = $parts->{body} =~ /Content-Range: bytes (\d+)-(\d+)\/6500/g;
is(scalar(@got_parts), 32, '... sixteen parts');
cmp_ok(length $parts->{wire}, '<=', 16 * 200 + 1000, '... and the answer bounded by a part header each');
# Seventeen: one over the limit.
my $seventeen = ranged('bytes=' . join(',', map { ($_ * 300) . '-' . ($_ * 300) } 0 .. 16));
is($seventeen->{status}, 200, '17 ranges, over webgres.static_max_ranges = 16: 200');
is($seventeen->{body}, $app_js, '... the whole file');

# A lower limit takes effect on reload.
ok(WebgresTest::reload_and_wait($h->node, "webgres.static_max_ranges = 2\n"),
	'the worker took webgres.static_max_ranges = 2');
is(ranged('bytes=0-0,400-400')->{status}, 206, 'webgres.static_max_ranges = 2: two ranges: 206');
is(ranged('bytes=0-0,400-400,800-800')->{status}, 200, '... three ranges: 200');

is_deeply(\@leaks, [], 'nothing from outside the directory, or hidden in it, was ever sent');
$h->still_serving('after every attempt');
$h->finish;
