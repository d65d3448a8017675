# Static files (docs/static-files.md): webgres.static_mounts maps a URL
# prefix to a directory, served by libh2o's file handler: bodies byte for
# byte, MIME types, ETag and Last-Modified with 304, Range with 206 and
# 416 (several ranges as multipart/byteranges, merged, ignored), HEAD, index
# files (index_file named or NULL) and the redirect to prefix/, precompressed .gz
# siblings, the single-page-application fallback, compression, HTTP/2 in
# cleartext and over TLS.
# Routes and mounts share one path space: a route that matches a path
# answers it (a POST route makes GET of its path 405, file or not); ownership keeps other roles' routes out of a mount and a
# mount off their routes; only superusers change mounts; a change reaches
# the workers without a restart.  (Traversal attempts: 107_hostile_static.pl.)
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);
use IO::Uncompress::Gunzip qw(gunzip $GunzipError);
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;
use H2Test qw(frame request_block read_stream);
use TlsTest;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $root = "$dir/site";
mkdir $root or die;
mkdir "$root/sub" or die;
mkdir "$dir/spa" or die;

sub write_file { my ($p, $c) = @_; open my $f, '>:raw', $p or die "$p: $!"; print $f $c; close $f; }
my $text = join '', map { "line $_ of the text file\n" } 1 .. 200;    # about 5 KB
my $big = join '', map { chr(($_ * 7919) % 251) } 1 .. (1024 * 1024);
write_file("$root/index.html", "<h1>the app</h1>\n");
write_file("$root/a.txt", $text);
write_file("$root/style.css", "body { color: black; }\n" x 300);
write_file("$root/big.bin", $big);
write_file("$root/sub/index.html", "<p>sub index</p>\n");
write_file("$root/pre.js", "console.log('plain');\n");
write_file("$root/pre.js.gz", "not really gzip, but the sibling's bytes");
write_file("$dir/spa/index.html", "<div id=app></div>\n");
mkdir "$dir/home" or die;
mkdir "$dir/home/docs" or die;
write_file("$dir/home/home.htm", "<p>home</p>\n");
write_file("$dir/home/index.html", "<p>not the index of this mount</p>\n");
write_file("$dir/home/docs/home.htm", "<p>docs home</p>\n");
write_file("$dir/home/upload", "a file named like a route\n");
write_file("$dir/spa/app.js", "start();\n");

my $certs = TlsTest::make_ca($dir);
my ($cert, $key) = TlsTest::make_leaf($certs, 'server');
my $tls_port = PostgreSQL::Test::Cluster::get_free_port();
my $node = WebgresTest->new_node('static', workers => 1, conf => <<"EOC");
webgres.http2 = on
webgres.tls_listen = '127.0.0.1:$tls_port'
webgres.tls_cert_file = '$dir/server.chain.pem'
webgres.tls_key_file = '$dir/server.key'
EOC
my $port = $node->{webgres_port};
$node->safe_psql('postgres', qq{
	INSERT INTO webgres.static_mounts (prefix, directory, precompressed)
		VALUES ('/app', '$root', true);
	INSERT INTO webgres.static_mounts (prefix, directory, spa_fallback)
		VALUES ('/spa', '$dir/spa', true);
	INSERT INTO webgres.static_mounts (prefix, directory, index_file)
		VALUES ('/home', '$dir/home', 'home.htm');
	INSERT INTO webgres.static_mounts (prefix, directory, index_file)
		VALUES ('/noindex', '$dir/home', NULL);
});
WebgresTest::add_route($node, 'GET', '/app/api/hello', q{SELECT 'from the route' AS body});
WebgresTest::wait_for_status($port, '/app/a.txt', 200);

sub get { my ($path, %h) = @_; return WebgresTest::http_get($port, $path, headers => \%h); }

# ---- files as they are ----
my $r = get('/app/a.txt');
is($r->{status}, 200, 'a file: 200');
is($r->{body}, $text, '... its bytes');
like($r->{headers}{'content-type'}, qr{^text/plain}, '... text/plain');
ok($r->{headers}{etag}, '... an ETag');
ok($r->{headers}{'last-modified'}, '... a Last-Modified');
is($r->{headers}{'accept-ranges'}, 'bytes', '... Accept-Ranges: bytes');
my ($etag, $lm) = ($r->{headers}{etag}, $r->{headers}{'last-modified'});

$r = get('/app/big.bin');
is(length $r->{body}, length $big, 'a 1 MB file: all of it');
is(md5_hex($r->{body}), md5_hex($big), '... byte for byte');
is($r->{headers}{'content-type'}, 'application/octet-stream', '... application/octet-stream');
like(get('/app/style.css')->{headers}{'content-type'}, qr{^text/css}, 'a .css file: text/css');

is(get('/app/a.txt', 'If-None-Match' => $etag)->{status}, 304, 'If-None-Match with the ETag: 304');
is(get('/app/a.txt', 'If-None-Match' => "W/$etag")->{status}, 304, '... with it weak: 304 too');
is(get('/app/a.txt', 'If-None-Match' => '"other"')->{status}, 200, '... with another ETag: 200');
is(get('/app/a.txt', 'If-Modified-Since' => $lm)->{status}, 304, 'If-Modified-Since the Last-Modified: 304');

$r = get('/app/a.txt', Range => 'bytes=10-19');
is($r->{status}, 206, 'Range: 206');
is($r->{body}, substr($text, 10, 10), '... those bytes');
is($r->{headers}{'content-range'}, 'bytes 10-19/' . length($text), '... Content-Range');
is(get('/app/a.txt', Range => 'bytes=999999-')->{status}, 416, 'an unsatisfiable Range: 416');

# Several ranges: multipart/byteranges, a part per range in the order asked,
# each with the file's type and its Content-Range, then the closing boundary.
sub parts_of
{
	my ($r) = @_;
	my ($boundary) = ($r->{headers}{'content-type'} // '') =~ m{^multipart/byteranges; boundary=(\S+)$}
	  or return ();
	my @parts;
	while ($r->{body} =~ m{\G(?:\r\n)?--\Q$boundary\E\r\nContent-Type: ([^\r]*)\r\nContent-Range: bytes (\d+)-(\d+)/(\d+)\r\n\r\n}gc)
	{
		my ($type, $first, $last, $size) = ($1, $2, $3, $4);
		push @parts, { type => $type, first => $first, last => $last, size => $size,
			data => substr($r->{body}, pos($r->{body}), $last - $first + 1) };
		pos($r->{body}) += $last - $first + 1;
	}
	push @parts, 'closed' if $r->{body} =~ m{\G\r\n--\Q$boundary\E--\r\n\z}gc;
	return @parts;
}
$r = get('/app/a.txt', Range => 'bytes=1000-1009,0-9,-5');
is($r->{status}, 206, 'three ranges: 206');
like($r->{headers}{'content-type'}, qr{^multipart/byteranges; boundary=\S+$}, '... multipart/byteranges');
is($r->{headers}{'content-length'}, length $r->{body}, '... its Content-Length the body\'s');
my @parts = parts_of($r);
is(scalar @parts, 4, '... three parts and the closing boundary');
is_deeply([ map { ref $_ ? "$_->{first}-$_->{last}/$_->{size}" : $_ } @parts ],
	[ '1000-1009/' . length($text), '0-9/' . length($text),
	  (length($text) - 5) . '-' . (length($text) - 1) . '/' . length($text), 'closed' ],
	'... each part\'s range, in the order asked');
is_deeply([ map { $_->{data} } @parts[0 .. 2] ],
	[ substr($text, 1000, 10), substr($text, 0, 10), substr($text, -5) ], '... each part\'s bytes');
like($parts[0]{type}, qr{^text/plain}, '... each part of the file\'s type');

# Overlapping ranges, or ranges a part header apart, are merged.
for my $case ([ 'bytes=0-9,5-20', '0-20', 'overlapping ranges' ],
	[ 'bytes=0-9,50-59', '0-59', 'ranges 40 bytes apart' ],
	[ 'bytes=20-29,0-9', '0-29', 'ranges out of order and close' ],
	[ 'bytes=0-,100-200', '0-' . (length($text) - 1), 'a range inside another' ])
{
	$r = get('/app/a.txt', Range => $case->[0]);
	is($r->{status}, 206, "$case->[2] ($case->[0]): 206");
	is($r->{headers}{'content-range'}, "bytes $case->[1]/" . length($text), "... one range, $case->[1]");
	my ($first, $last) = split /-/, $case->[1];
	is($r->{body}, substr($text, $first, $last - $first + 1), '... its bytes');
}
@parts = parts_of(scalar get('/app/a.txt', Range => 'bytes=0-9,100-109'));
is(scalar @parts, 3, 'ranges 90 bytes apart stay two parts');

# A Range that cannot be read one way is ignored: the whole file.
for my $case ([ 'bytes=abc', 'not a range' ], [ 'items=0-5', 'another unit' ],
	[ 'bytes=9-2', 'a last byte before the first' ], [ 'bytes=0-1;2-3', 'a wrong separator' ])
{
	$r = get('/app/a.txt', Range => $case->[0]);
	is($r->{status}, 200, "$case->[1] ($case->[0]): 200");
	is($r->{body}, $text, '... the whole file');
}
$r = WebgresTest::raw($port, "GET /app/a.txt HTTP/1.1\r\nHost: x\r\nRange: bytes=0-9\r\n"
	  . "Range: bytes=10-19\r\nConnection: close\r\n\r\n", until_close => 1);
is($r->{status}, 200, 'two Range fields: 200');
is($r->{body}, $text, '... the whole file');
is(get('/app/a.txt', Range => 'bytes=0-9, ,20-29')->{status}, 206, 'an empty list element is allowed');

$r = WebgresTest::request($port, 'HEAD', '/app/a.txt');
is($r->{status}, 200, 'HEAD: 200');
is($r->{headers}{'content-length'}, length $text, '... the Content-Length of the GET');
$r = WebgresTest::request($port, 'POST', '/app/a.txt');
is($r->{status}, 405, 'POST: 405');
is($r->{headers}{allow}, 'GET, HEAD', '... Allow: GET, HEAD');

# ---- directories ----
is(get('/app/')->{body}, "<h1>the app</h1>\n", 'the prefix/: its index.html');
$r = get('/app');
is($r->{status}, 301, 'the prefix without its slash: 301');
like($r->{headers}{location}, qr{/app/$}, '... to the prefix/');
is(get('/app/sub')->{status}, 301, 'a directory without its slash: 301');
is(get('/app/sub/')->{body}, "<p>sub index</p>\n", 'a directory/: its index.html');
is(get('/app/nothing.txt')->{status}, 404, 'a missing file: 404');

# index_file: another name, or none.
WebgresTest::wait_for_status($port, '/home/', 200);
$r = get('/home/');
is($r->{status}, 200, 'index_file home.htm: the prefix/ answers 200');
is($r->{body}, "<p>home</p>\n", '... with home.htm, not index.html');
like($r->{headers}{'content-type'}, qr{^text/html}, '... as text/html');
is(get('/home/docs/')->{body}, "<p>docs home</p>\n", '... and a directory/ with its own home.htm');
$r = get('/home/index.html');
is($r->{body}, "<p>not the index of this mount</p>\n", '... index.html is an ordinary file there');
$r = get('/noindex/');
is($r->{status}, 404, 'index_file NULL: the prefix/ answers 404');
unlike($r->{body}, qr/home|index/, '... with no file');
is(get('/noindex/docs/')->{status}, 404, '... a directory/ too');
is(get('/noindex/home.htm')->{body}, "<p>home</p>\n", '... while its files are served');

# A route under a mount takes its path whole: a route for POST makes GET of
# the same path a 405, even where a file of that name exists.
WebgresTest::add_route($node, 'POST', '/home/upload', q{SELECT 'uploaded' AS body});
WebgresTest::wait_for_status($port, '/home/upload', 405);
$r = get('/home/upload');
is($r->{status}, 405, 'a route for POST /home/upload: GET /home/upload is 405');
is($r->{headers}{allow}, 'POST', '... Allow: POST');
unlike($r->{body}, qr/a file named like a route/, '... not the file of that name');
is(WebgresTest::request($port, 'POST', '/home/upload', body => 'x')->{body}, 'uploaded', '... POST runs the route');
is(get('/noindex/upload')->{body}, "a file named like a route\n", '... the same file under another prefix is served');

# ---- precompressed siblings ----
$r = get('/app/pre.js', 'Accept-Encoding' => 'gzip');
is($r->{headers}{'content-encoding'}, 'gzip', 'a .gz sibling for a client that takes gzip');
is($r->{body}, "not really gzip, but the sibling's bytes", '... its bytes');
like($r->{headers}{vary} // '', qr/accept-encoding/i, '... Vary: Accept-Encoding');
$r = get('/app/pre.js');
is($r->{body}, "console.log('plain');\n", 'without Accept-Encoding: the file itself');
like($r->{headers}{vary} // '', qr/accept-encoding/i, '... with Vary: Accept-Encoding too');
$r = get('/app/pre.js', 'Accept-Encoding' => 'gzip;q=0');
is($r->{body}, "console.log('plain');\n", 'with gzip;q=0: the file itself');

# ---- single-page application ----
is(get('/spa/app.js')->{body}, "start();\n", 'SPA mount: an existing file');
$r = get('/spa/users/42');
is($r->{status}, 200, 'SPA mount: an unknown path answers 200');
is($r->{body}, "<div id=app></div>\n", '... with the index file');
like($r->{headers}{'content-type'}, qr{^text/html}, '... as text/html');

# ---- routes and mounts share the path space ----
is(get('/app/api/hello')->{body}, 'from the route', 'a route under a mount answers its path');
is(get('/nowhere')->{status}, 404, 'a path under no mount and no route: 404');

# ---- compression applies to static files ----
$node->append_conf('postgresql.conf', "webgres.compress = on\n");
$node->reload;
my $deadline = time + 30;
while (1)
{
	$r = get('/app/style.css', 'Accept-Encoding' => 'gzip');
	last if ($r->{headers}{'content-encoding'} // '') eq 'gzip' || time > $deadline;
	sleep 0.1;
}
is($r->{headers}{'content-encoding'}, 'gzip', 'compression on: a .css file is gzipped');
my $css;
gunzip(\$r->{body} => \$css);
is($css, "body { color: black; }\n" x 300, '... and decompresses to the file');
like($r->{headers}{etag} // '', qr{^W/"}, '... with a weak ETag');
is($r->{headers}{'accept-ranges'}, 'none', '... and Accept-Ranges: none (no ranges of the gzipped bytes)');
is(get('/app/style.css', 'Accept-Encoding' => 'gzip', 'If-None-Match' => $r->{headers}{etag})->{status},
	304, '... which answers 304 when sent back');
$r = get('/app/style.css', 'Accept-Encoding' => 'gzip', Range => 'bytes=0-9');
is($r->{status}, 206, 'a Range request with compression on: 206');
ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
is($r->{body}, 'body { col', '... the bytes of the file');
$r = get('/app/big.bin', 'Accept-Encoding' => 'gzip');
is($r->{status}, 200, 'application/octet-stream with gzip accepted: 200');
ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
is(length $r->{body}, length $big, '... all of it, as it is');
# A file is the same for every client: credentials do not keep it from
# being compressed (BREACH needs a secret in the body).
$r = get('/app/style.css', 'Accept-Encoding' => 'gzip', Cookie => 'session=s3cr3t', Authorization => 'Bearer x');
is($r->{headers}{'content-encoding'}, 'gzip', 'a file asked for with a Cookie and Authorization: still gzipped');

# ---- HTTP/2 ----
{
	my $s = WebgresTest::connect_to($port);
	print $s $H2Test::PREFACE . frame(4, 0, 0, '') . frame(1, 0x5, 1, request_block('/app/a.txt'));
	my ($status, $body) = read_stream($s, 1);
	is($status, 200, 'HTTP/2: 200');
	is($body, $text, 'HTTP/2: the file');
	close $s;
}

# ---- HTTP/2 over TLS, compressed, through curl ----
{
	my ($rc, $out, $err) = TlsTest::curl('--http2', '--cacert', $certs->{ca}, '--compressed',
		'-w', '\n%{http_version} %{size_download}', "https://localhost:$tls_port/app/style.css");
	my ($body, $version, $size) = $out =~ /\A(.*)\n(\S+) (\d+)\z/s;
	is($version, '2', 'over TLS: HTTP/2 by ALPN') or diag($err);
	is($body, "body { color: black; }\n" x 300, '... the file, decompressed by curl');
	cmp_ok($size, '<', length($body) / 4, '... sent gzipped');
	($rc, $out, $err) = TlsTest::curl('--http2', '--cacert', $certs->{ca}, '-o', '/dev/null',
		'-w', '%{http_code} %{size_download}', "https://localhost:$tls_port/app/big.bin");
	is($out, '200 ' . length($big), 'over TLS: the 1 MB file, all of it');
}

# ---- who may map what ----
$node->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN;
	GRANT INSERT, SELECT, UPDATE, DELETE ON webgres.routes TO alice;
});
my ($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE alice; INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/mine', '$root')");
like($err, qr/permission denied|only a superuser/, 'a non-superuser cannot add a mount');
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE alice; INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/app/x', 'SELECT 1 AS body')});
like($err, qr{is under static mount "/app" of role}, "another role's route under a mount is refused");
($ret, $out, $err) = $node->psql('postgres',
	q{SET ROLE alice; INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/alice/x', 'SELECT ''alice'' AS body')});
is($ret, 0, 'alice saves a route of her own elsewhere') or diag($err);
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/alice', '$root')");
like($err, qr{static mount "/alice" covers route GET /alice/x of role "alice"},
	"a mount over another role's route is refused");
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO webgres.static_mounts (prefix, directory, owner) VALUES ('/alice', '$root', 'alice')");
is($ret, 0, "... but a mount given to that role is saved") or diag($err);
WebgresTest::wait_for_status($port, '/alice/a.txt', 200);
is(get('/alice/a.txt')->{body}, $text, '... its files are served (a change needs no restart)');
is(get('/alice/x')->{body}, 'alice', '... and her route still answers its path');

for my $bad (['/app/', 'a trailing slash'], ['/a/../b', 'a .. segment'], ['app', 'no leading slash'],
	['/a%2e', 'percent-encoding'], ['/:x', 'a capture'], ['/.git', 'a dotted segment'])
{
	($ret, $out, $err) = $node->psql('postgres',
		"INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('$bad->[0]', '$root')");
	like($err, qr/invalid static mount prefix/, "a prefix with $bad->[1] is refused");
}
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/x', 'relative/dir')");
like($err, qr/invalid static mount directory/, 'a relative directory is refused');
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/x', '$dir/no/such')");
like($err, qr/is not a directory the server can read/, 'a missing directory is refused');
($ret, $out, $err) = $node->psql('postgres',
	"SET check_function_bodies = off; INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/gone', '$dir/no/such')");
is($ret, 0, '... but taken as a restore (check_function_bodies off) takes it') or diag($err);
my $gone_deadline = time + 30;
until (slurp_file($node->logfile) =~ m{static mount "/gone" cannot open directory} || time > $gone_deadline)
{
	get('/gone/x');
	sleep 0.1;
}
like(slurp_file($node->logfile), qr{static mount "/gone" cannot open directory},
	'... the worker logs that it cannot open the directory');
is(get('/gone/x')->{status}, 404, '... and its paths answer 404');
is(get('/app/a.txt')->{status}, 200, '... while the other mounts serve');

$node->safe_psql('postgres', q{DELETE FROM webgres.static_mounts WHERE prefix = '/alice'});
WebgresTest::wait_for_status($port, '/alice/a.txt', 404);
is(get('/alice/a.txt')->{status}, 404, 'a mount deleted: its paths answer 404');

# A mount at /: the whole path space but the routes' paths and longer prefixes
# (alice's route goes first: a mount at / would cover it).
$node->safe_psql('postgres', "DELETE FROM webgres.routes WHERE path = '/alice/x'");
$node->safe_psql('postgres', "INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/', '$dir/spa')");
WebgresTest::wait_for_status($port, '/app.js', 200);
is(get('/app.js')->{body}, "start();\n", 'a mount at /: its files');
is(get('/')->{body}, "<div id=app></div>\n", '... / is its index file');
is(get('/app/a.txt')->{body}, $text, '... a longer prefix still answers its paths');
is(get('/app/api/hello')->{body}, 'from the route', '... and a route its own');

$node->stop;
done_testing();
