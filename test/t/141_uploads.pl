# Multipart form uploads (docs/uploads.md): webgres.body_form(body, type)
# and webgres.body_files(body, type) over real sockets, HTTP/1.1 with
# Content-Length and chunked and HTTP/2; malformed bodies answered 400
# saying what is wrong; hostile bodies leave nothing behind.
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);
use IPC::Run;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('uploads', workers => 1,
	conf => "webgres.max_body_size = '16MB'\nwebgres.http2 = on\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE uploads (id serial PRIMARY KEY, field text, filename text, type text, data bytea NOT NULL);
});
WebgresTest::add_route($node, 'POST', '/form',
	q{SELECT webgres.body_form(body, headers->>'content-type')::text AS body FROM request});
WebgresTest::add_route($node, 'POST', '/files', q{
	SELECT coalesce(string_agg(format('%s|%s|%s|%s|%s', f.field, f.filename,
			coalesce(f.content_type, '-'), f.size, md5(f.content)), E'\n'), '(none)') AS body
	FROM request, webgres.body_files(request.body, request.headers->>'content-type') f});
WebgresTest::add_route($node, 'POST', '/upload', q{
	WITH stored AS (
		INSERT INTO uploads (field, filename, type, data)
		SELECT f.field, f.filename, f.content_type, f.content
		FROM request, webgres.body_files(request.body, request.headers->>'content-type') f
		RETURNING id)
	SELECT 201 AS status, count(*)::text AS body FROM stored});
WebgresTest::add_route($node, 'POST', '/count',
	q{SELECT jsonb_array_length(webgres.body_form(body, headers->>'content-type')->'a')::text AS body FROM request});

my $B = 'XyZzy-boundary';
my $CT = "multipart/form-data; boundary=$B";

# A multipart body from [headers, content] pairs.
sub multipart
{
	my ($boundary, @parts) = @_;
	my $out = '';
	for my $p (@parts) { $out .= "--$boundary\r\n$p->[0]\r\n\r\n$p->[1]\r\n"; }
	return $out . "--$boundary--\r\n";
}

sub post
{
	my ($path, $ct, $body, %o) = @_;
	return WebgresTest::request($port, 'POST', $path, body => $body,
		headers => { 'Content-Type' => $ct }, timeout => $o{timeout});
}

# Fields, repeated names, a preamble and an epilogue.
my $form = "preamble to ignore\r\n" . multipart($B,
	[ 'Content-Disposition: form-data; name="title"', 'Hello, world' ],
	[ 'Content-Disposition: form-data; name="tag"', 'a' ],
	[ "Content-Disposition: form-data; name=tag", "b\r\nwith CRLF" ],
	[ 'content-disposition: FORM-DATA; name="empty"', '' ],
	[ 'Content-Disposition: form-data; name="file"; filename="x.bin"', 'not a field' ]) . "epilogue";
my $r = post('/form', $CT, $form);
is($r->{status}, 200, 'multipart form: 200');
is($r->{body}, '{"tag": ["a", "b\r\nwith CRLF"], "empty": "", "title": "Hello, world"}',
	'fields as jsonb, a repeated name as an array, files left out');
$r = post('/form', 'application/x-www-form-urlencoded', 'a=1&b=x+y');
is($r->{body}, '{"a": "1", "b": "x y"}', 'url-encoded bodies read as before');

# Files: several in one field, an empty one, one without Content-Type,
# quoted and filename* names, a path as a name, binary content that holds
# CRLF, dashes and most of the boundary.
my $bin = join('', map { chr($_) } 0 .. 255) . "\r\n--XyZzy-boundar\r\n--\r";
my @files = (
	[ "Content-Disposition: form-data; name=\"docs\"; filename=\"a.txt\"\r\nContent-Type: text/plain", "first file" ],
	[ "Content-Disposition: form-data; name=\"docs\"; filename=\"b \\\"q\\\".bin\"\r\nContent-Type: application/octet-stream", $bin ],
	[ "Content-Disposition: form-data; name=\"empty\"; filename=\"empty.txt\"\r\nContent-Type: text/plain", '' ],
	[ "Content-Disposition: form-data; name=\"bare\"; filename=\"../../etc/passwd\"", 'no type' ],
	[ "Content-Disposition: form-data; name=\"intl\"; filename=\"fallback.txt\"; filename*=UTF-8''%C3%A9t%C3%A9.txt", 'summer' ],
	[ 'Content-Disposition: form-data; name="note"', 'a field, not a file' ],
);
my $files = multipart($B, @files);
my $want = join("\n",
	'docs|a.txt|text/plain|10|' . md5_hex('first file'),
	'docs|b "q".bin|application/octet-stream|' . length($bin) . '|' . md5_hex($bin),
	'empty|empty.txt|text/plain|0|' . md5_hex(''),
	'bare|../../etc/passwd|-|7|' . md5_hex('no type'),
	"intl|\xc3\xa9t\xc3\xa9.txt|text/plain|6|" . md5_hex('summer'));
$want =~ s/text\/plain\|6/-|6/;
$r = post('/files', $CT, $files);
is($r->{status}, 200, 'files: 200');
is($r->{body}, $want, 'every file with its field, name, type, size and exact content');

# Chunked, in small pieces across the boundaries.
my $chunked = '';
for (my $i = 0; $i < length $files; $i += 7) { my $c = substr($files, $i, 7); $chunked .= sprintf("%x\r\n%s\r\n", length $c, $c); }
$r = WebgresTest::raw($port, "POST /files HTTP/1.1\r\nHost: h\r\nConnection: close\r\nContent-Type: $CT\r\n"
	. "Transfer-Encoding: chunked\r\n\r\n${chunked}0\r\n\r\n", until_close => 1);
is($r->{body}, $want, 'the same body sent chunked');

# HTTP/2 (h2c with prior knowledge), through nghttp.
SKIP:
{
	skip 'nghttp is not installed', 1 unless grep { -x "$_/nghttp" } split /:/, $ENV{PATH};
	my $tmp = PostgreSQL::Test::Utils::tempdir();
	open my $fh, '>:raw', "$tmp/body" or die;
	print $fh $files;
	close $fh;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'nghttp', '-d', "$tmp/body", '-H', "content-type: $CT", "http://127.0.0.1:$port/files" ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(30));
	is($out, $want, 'the same body over HTTP/2');
}

# Stored byte for byte.
$r = post('/upload', $CT, $files);
is($r->{status}, 201, 'upload stored');
is($r->{body}, '5', 'five files');
is($node->safe_psql('postgres', q{SELECT md5(data) FROM uploads WHERE filename = 'b "q".bin'}), md5_hex($bin),
	'the binary file is in the table byte for byte');

# Malformed bodies: 400, saying what is wrong; nothing stored.
my @bad = (
	[ 'multipart/form-data', $files, 'no boundary parameter', qr/has no boundary parameter/ ],
	[ $CT, substr($files, 0, length($files) - 20), 'truncated', qr/ends without the closing boundary/ ],
	[ $CT, substr($files, 0, length($files) - length("--$B--\r\n")), 'never closed',
		qr/ends without the closing boundary/ ],
	[ $CT, substr($files, 0, length($files) - 4), 'the last boundary line without its --',
		qr/ends without the closing boundary \(after part 6\)/ ],
	[ $CT, "--$B\r\nContent-Disposition: form-data\r\n\r\nx\r\n--$B--", 'a part without a name',
		qr/has no name/ ],
	[ $CT, "--$B\r\nContent-Type: text/plain\r\n\r\nx\r\n--$B--", 'a part without Content-Disposition',
		qr/no Content-Disposition header/ ],
	[ $CT, "--$B junk\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--$B--", 'text after a boundary',
		qr/followed by other text than CRLF/ ],
	[ $CT, "--$B\nContent-Disposition: form-data; name=a\n\nx\n--$B--", 'bare LF line ends',
		qr/followed by other text than CRLF/ ],
	[ $CT, "--$B\r\nContent-Disposition: form-data; name=a\r\n folded\r\n\r\nx\r\n--$B--", 'a folded header',
		qr/folded/ ],
	[ $CT, "--$B\r\nContent-Disposition: form-data; name=\"a\r\n\r\nx\r\n--$B--", 'an unclosed quote',
		qr/parameters are malformed/ ],
	[ $CT, "--$B\r\nX-Long: " . ('h' x 9000) . "\r\n\r\nx\r\n--$B--", 'a header block over 8 kB',
		qr/headers are longer than 8192 bytes/ ],
	[ $CT, "no boundary line at all", 'no boundary line', qr/holds no boundary line/ ],
);
for my $b (@bad)
{
	$r = post('/upload', $b->[0], $b->[1]);
	is($r->{status}, 400, "$b->[2]: 400");
	like($r->{body}, $b->[3], "$b->[2]: the body says why");
}
$r = post('/upload', 'text/plain', 'hello');
is($r->{status}, 415, 'a body that is not a form: 415');
like($r->{body}, qr{the body is text/plain, not a form}, '415 says why');
is($node->safe_psql('postgres', 'SELECT count(*) FROM uploads'), '5', 'no malformed upload stored anything');

# 100,000 tiny parts.
my $many = ("--$B\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n") x 100000 . "--$B--";
$r = post('/count', $CT, $many, timeout => 60);
is($r->{status}, 200, '100,000 parts: 200');
is($r->{body}, '100000', 'every part read');

# A client that stops mid-body: nothing stored, the worker serves on.
{
	my $s = WebgresTest::connect_to($port);
	print $s "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: $CT\r\nContent-Length: "
	  . length($files) . "\r\n\r\n" . substr($files, 0, 100);
	close $s;
	$s = WebgresTest::connect_to($port);
	print $s "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: $CT\r\nContent-Length: 2000000000\r\n\r\n-";
	close $s;
}
$r = post('/files', $CT, $files);
is($r->{body}, $want, 'the worker serves on after clients left mid-body');
is($node->safe_psql('postgres', 'SELECT count(*) FROM uploads'), '5', 'nothing stored from the abandoned bodies');
$r = post('/upload', $CT, 'x' x 17_000_000);
is($r->{status}, 413, 'a body over webgres.max_body_size: 413');

$node->stop;
done_testing();
