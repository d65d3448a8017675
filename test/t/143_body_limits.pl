# Per-route body limits (webgres.routes.max_body_size, docs/uploads.md):
# 413 with a body that says so, before any SQL runs and before a request
# is handed to an executor, over HTTP/1.1 (Content-Length and chunked) and
# HTTP/2; webgres.max_body_size still bounds every route from
# Content-Length before the body is read; Expect: 100-continue as libh2o
# 2.2.5 answers it; OpenAPI describes the limits and upload bodies.
use strict;
use warnings;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('body_limits', workers => 1, conf => "webgres.max_body_size = '1MB'\nwebgres.http2 = on\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', 'CREATE TABLE hits (n int)');
my $counting = q{WITH h AS (INSERT INTO hits VALUES (1) RETURNING 1)
	SELECT coalesce(length(body), -1)::text AS body FROM request, h};
WebgresTest::add_route($node, 'POST', '/small', $counting);
WebgresTest::add_route($node, 'POST', '/small_exec', $counting);
WebgresTest::add_route($node, 'POST', '/none', $counting);
WebgresTest::add_route($node, 'POST', '/open', $counting);
WebgresTest::add_route($node, 'POST', '/files',
	q{SELECT count(*)::text AS body FROM request, webgres.body_files(request.body, request.headers->>'content-type')});
WebgresTest::add_route($node, 'POST', '/load',
	q{SELECT webgres.ingest('hits', body, headers->>'content-type')::text AS body FROM request});
$node->safe_psql('postgres', q{
	UPDATE webgres.routes SET max_body_size = 100 WHERE path IN ('/small', '/small_exec');
	UPDATE webgres.routes SET mode = 'executor' WHERE path = '/small_exec';
	UPDATE webgres.routes SET max_body_size = 0 WHERE path = '/none';
});
my $hits = sub { $node->safe_psql('postgres', 'SELECT count(*) FROM hits') };

sub post
{
	my ($path, $body) = @_;
	return WebgresTest::request($port, 'POST', $path, body => $body);
}
sub chunked
{
	my ($path, $body) = @_;
	return WebgresTest::raw($port, "POST $path HTTP/1.1\r\nHost: h\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
		. sprintf("%x\r\n%s\r\n0\r\n\r\n", length $body, $body), until_close => 1);
}

my $r = post('/small', 'x' x 100);
is($r->{status}, 200, 'a body at the route\'s limit: 200');
is($r->{body}, '100', 'the handler read it');
$r = post('/small', 'x' x 101);
is($r->{status}, 413, 'one byte over the route\'s limit: 413');
like($r->{body}, qr{^the request body is 101 bytes; route POST /small \(route \d+\) takes at most 100\n$},
	'the 413 says what the limit is');
$r = chunked('/small', 'y' x 500);
is($r->{status}, 413, 'chunked, over the route\'s limit: 413');
$r = post('/small_exec', 'x' x 101);
is($r->{status}, 413, 'a route on executors: 413 too');
$r = post('/small_exec', 'x' x 50);
is($r->{body}, '50', 'under its limit it runs on an executor');
$r = post('/none', '');
is($r->{status}, 200, 'limit 0: an empty body passes');
$r = post('/none', 'z');
is($r->{status}, 413, 'limit 0: one byte is refused');
$r = post('/open', 'x' x 200_000);
is($r->{body}, '200000', 'a route without a limit of its own takes up to webgres.max_body_size');
is($hits->(), '4', 'no refused request ran its handler');

SKIP:
{
	skip 'nghttp is not installed', 2 unless grep { -x "$_/nghttp" } split /:/, $ENV{PATH};
	my $tmp = PostgreSQL::Test::Utils::tempdir();
	open my $fh, '>:raw', "$tmp/body" or die;
	print $fh 'h' x 101;
	close $fh;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'nghttp', '-v', '-d', "$tmp/body", "http://127.0.0.1:$port/small" ],
		'>', \$out, '2>', \$err, IPC::Run::timeout(30));
	like($out, qr/:status: 413/, 'HTTP/2, over the route\'s limit: 413');
	like($out, qr/takes at most 100/, 'HTTP/2: the 413 says why');
}
is($hits->(), '4', 'still nothing ran');

# While the body arrives (HTTP/1): the worker's sweep of its connections
# sees the route's limit and answers within a sweep, not once the body has
# all come (here it never would: the client sends 1 kB of 900 kB and waits).
for my $case ([ 'Content-Length: 900000', 'x' x 1000, 'the request body is 900000 bytes' ],
	[ 'Transfer-Encoding: chunked', sprintf("%x\r\n%s\r\n", 6000, 'x' x 6000), 'the request body is over 100 bytes' ])
{
	my ($framing, $part, $says) = @$case;
	my $t0 = time;
	my $s = WebgresTest::connect_to($port);
	print $s "POST /small HTTP/1.1\r\nHost: h\r\n$framing\r\n\r\n$part";
	my ($res, $closed) = WebgresTest::read_responses($s, 1, 10);
	close $s;
	is($res->[0]{status}, 413, "$framing, the body still arriving: 413");
	like($res->[0]{body}, qr/^\Q$says\E; route POST \/small/, "$framing: the 413 says why");
	cmp_ok(time - $t0, '<', 5, "$framing: answered within a sweep, not at the body timeout");
}
is($hits->(), '4', 'nothing ran');

# webgres.max_body_size: libh2o answers from Content-Length, before the
# body comes (one byte of it is sent here).
{
	my $t0 = time;
	my $res = WebgresTest::raw($port, "POST /open HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000000\r\n\r\n-",
		until_close => 1, timeout => 10);
	is($res->{status}, 413, 'a 2 GB Content-Length with a 1-byte body: 413');
	cmp_ok(time - $t0, '<', 5, 'answered without waiting for the body');
}

# Expect: 100-continue: libh2o 2.2.5 answers 100 as soon as the head is
# read (only webgres.max_body_size is known then); the route's limit
# answers once the body has come.
{
	my $s = WebgresTest::connect_to($port);
	print $s "POST /small HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 500\r\n\r\n";
	my ($res) = WebgresTest::read_responses($s, 1, 10);
	is($res->[0]{status}, 100, 'Expect: 100-continue under the server\'s limit: 100 first');
	print $s 'x' x 500;
	($res) = WebgresTest::read_responses($s, 1, 10);
	is($res->[0]{status}, 413, 'then the route\'s 413');
	close $s;
	$res = WebgresTest::raw($port, "POST /small HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2000000\r\n\r\n",
		until_close => 1, timeout => 10);
	is($res->{status}, 413, 'Expect with a length over the server\'s limit: 413 without 100');
}
is($hits->(), '4', 'no refused request ran its handler');

# OpenAPI describes the limits and the upload bodies.
my $doc = decode_json($node->safe_psql('postgres', 'SELECT webgres.openapi()'));
my $paths = $doc->{paths};
is($paths->{'/small'}{post}{responses}{413}{description}, 'The request body is over 100 bytes.', 'OpenAPI: a route\'s 413');
is($paths->{'/small'}{post}{'x-webgres-max-body-size'}, 100, 'OpenAPI: x-webgres-max-body-size');
ok(exists $paths->{'/files'}{post}{requestBody}{content}{'multipart/form-data'}, 'OpenAPI: a files route takes multipart/form-data');
is(join(',', sort keys %{ $paths->{'/load'}{post}{requestBody}{content} }), 'application/json,application/x-ndjson,text/csv',
	'OpenAPI: an ingest route takes CSV, NDJSON and JSON');
ok(!exists $paths->{'/open'}{post}{responses}{413}, 'OpenAPI: no 413 without a limit of the route\'s own');

$node->stop;
done_testing();
