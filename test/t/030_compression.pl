# Compression (docs/compression.md): gzip chosen from Accept-Encoding with
# q-values, above webgres.compress_min_size, for compressible types only,
# with Vary: Accept-Encoding; never for HEAD, 206, 304, an error, a
# response that already has Content-Encoding, an event stream, or a route
# whose compress column is false; a compressed answer offers no ranges
# (Accept-Ranges: none).  Against BREACH, a request with credentials (an
# Authorization or Cookie header, a route with auth) is answered
# uncompressed unless its route opted in (compress = true).  Whole and
# streamed responses, on the event loop and from executors, over HTTP/1.1
# and HTTP/2 (h2c): the bytes must decompress to the uncompressed answer.
# A streamed export is flushed batch by batch: what has arrived before the
# query ends already inflates to rows.
use strict;
use warnings;
use IO::Select;
use Compress::Raw::Zlib;
use IO::Uncompress::Gunzip qw(gunzip $GunzipError);
use Time::HiRes qw(time sleep);
use Test::More;
use WebgresTest;
use H2Test qw(frame request_block read_stream);

my $node = WebgresTest->new_node('compression', workers => 1,
	conf => "webgres.http2 = on\nwebgres.executors = 1\nwebgres.compress_min_size = 2000\n"
	  . "webgres.jwt_secret = '" . ('s' x 40) . "'\n");
my $port = $node->{webgres_port};

# About 30 KB of JSON, the same on every call.
my $big_sql = q{SELECT (SELECT json_agg(json_build_object('id', i, 'name', 'user ' || i))
	FROM generate_series(1, 1000) i) AS body};
WebgresTest::add_route($node, 'GET', '/big', $big_sql);
WebgresTest::add_route($node, 'GET', '/small', q{SELECT '{"a": 1}'::json AS body});
WebgresTest::add_route($node, 'GET', '/optout', $big_sql);
WebgresTest::add_route($node, 'GET', '/executor', $big_sql);
WebgresTest::add_route($node, 'GET', '/executor-optout', $big_sql);
WebgresTest::add_route($node, 'GET', '/png',
	q{SELECT 'image/png' AS content_type, decode(repeat('00', 5000), 'hex') AS body});
WebgresTest::add_route($node, 'GET', '/encoded',
	q{SELECT '{"content-encoding": "identity"}'::jsonb AS headers, repeat('z', 5000) AS body});
WebgresTest::add_route($node, 'GET', '/partial',
	q{SELECT 206 AS status, '{"content-range": "bytes 0-4999/9999"}'::jsonb AS headers,
	  repeat('p', 5000) AS body});
WebgresTest::add_route($node, 'GET', '/etag',
	q{SELECT '{"etag": "\"v1\""}'::jsonb AS headers, repeat('e', 5000) AS body});
WebgresTest::add_route($node, 'GET', '/events', q{SELECT ARRAY['compressed_events'] AS channels});
WebgresTest::add_route($node, 'GET', '/optin', $big_sql);
WebgresTest::add_route($node, 'GET', '/executor-optin', $big_sql);
WebgresTest::add_route($node, 'GET', '/not-found', q{SELECT 404 AS status, repeat('n', 5000) AS body});
WebgresTest::add_route($node, 'GET', '/server-error', q{SELECT 500 AS status, repeat('e', 5000) AS body});
WebgresTest::add_route($node, 'GET', '/not-modified',
	q{SELECT 304 AS status, '{"etag": "\"v1\""}'::jsonb AS headers, repeat('m', 5000) AS body});
WebgresTest::add_route($node, 'GET', '/ranges',
	q{SELECT '{"accept-ranges": "bytes"}'::jsonb AS headers, repeat('r', 5000) AS body});
$node->safe_psql('postgres', q{
	UPDATE webgres.routes SET compress = false WHERE path IN ('/optout', '/executor-optout');
	UPDATE webgres.routes SET compress = true WHERE path IN ('/optin', '/executor-optin');
	UPDATE webgres.routes SET mode = 'executor' WHERE path LIKE '/executor%';
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
		('GET', '/export', $h$SELECT i, repeat('r', 50) AS pad FROM generate_series(1, 20000) i$h$, 'stream'),
		('GET', '/export-small', $h$SELECT i, repeat('r', 50) AS pad FROM generate_series(1, 3000) i$h$, 'stream'),
		('GET', '/slow-export', $h$SELECT i, repeat('s', 50) AS pad,
			CASE WHEN i = 3000 THEN pg_advisory_xact_lock_shared(30030)::text END AS s
			FROM generate_series(1, 4000) i$h$, 'stream');
	-- A route with auth, and its opted-in twin: tokens name the role reader.
	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE reader;
	GRANT reader TO authenticator;
});
$node->safe_psql('postgres', qq{
	INSERT INTO webgres.routes (method, path, auth, owner, handler) VALUES
		('GET', '/private', 'required', 'authenticator', \$h\$$big_sql\$h\$),
		('GET', '/private-optin', 'required', 'authenticator', \$h\$$big_sql\$h\$);
	UPDATE webgres.routes SET compress = true WHERE path = '/private-optin';
});
my $token = $node->safe_psql('postgres',
	q{SELECT webgres.jwt_sign('{"role": "reader"}', interval '1 hour')});
WebgresTest::wait_for_status($port, '/big', 200);
my $plain = WebgresTest::http_get($port, '/big')->{body};
cmp_ok(length $plain, '>', 20000, 'the JSON route answers about 30 KB');

sub get { my ($path, %h) = @_; return WebgresTest::http_get($port, $path, headers => \%h); }

sub gunzipped
{
	my ($bytes) = @_;
	my $out;
	gunzip(\$bytes => \$out) or return "gunzip failed: $GunzipError";
	return $out;
}

# ---- off by default ----
my $r = get('/big', 'Accept-Encoding' => 'gzip');
ok(!exists $r->{headers}{'content-encoding'}, 'off by default: no Content-Encoding');
is($r->{body}, $plain, '... the plain body');

$node->append_conf('postgresql.conf', "webgres.compress = on\n");
$node->reload;
my $deadline = time + 30;
while (time < $deadline)
{
	$r = get('/big', 'Accept-Encoding' => 'gzip');
	last if ($r->{headers}{'content-encoding'} // '') eq 'gzip';
	sleep 0.1;
}

# ---- whole responses over HTTP/1.1 ----
is($r->{headers}{'content-encoding'}, 'gzip', 'after reload with webgres.compress on: gzip');
like($r->{headers}{vary} // '', qr/accept-encoding/i, '... Vary: Accept-Encoding');
cmp_ok(length $r->{body}, '<', length($plain) / 4, '... much smaller');
is(gunzipped($r->{body}), $plain, '... and it decompresses to the plain answer');

$r = get('/big');
ok(!exists $r->{headers}{'content-encoding'}, 'no Accept-Encoding: not compressed');
like($r->{headers}{vary} // '', qr/accept-encoding/i, '... but Vary: Accept-Encoding all the same');
is($r->{body}, $plain, '... the plain body');

my %verdict = (
	'gzip;q=0' => 0, 'gzip; q=0.000' => 0, 'br, gzip;q=0' => 0, '*' => 0, 'identity' => 0,
	'deflate, gzip;q=0.5' => 1, 'GZIP' => 1, 'gzip;q=1.0' => 1, 'gzip ; q=0.001' => 1,
	'gzip;q=2' => 0, 'gzip;q=banana' => 0, 'gzip;q=0.1x' => 0, 'gzip;q=1.001' => 0);
for my $ae (sort keys %verdict)
{
	$r = get('/big', 'Accept-Encoding' => $ae);
	my $got = ($r->{headers}{'content-encoding'} // '') eq 'gzip' ? 1 : 0;
	is($got, $verdict{$ae}, "Accept-Encoding: $ae: " . ($verdict{$ae} ? 'gzip' : 'not compressed'));
	is($got ? gunzipped($r->{body}) : $r->{body}, $plain, '... the answer intact');
}
$r = WebgresTest::raw($port, "GET /big HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n"
	  . "Accept-Encoding: gzip;q=0\r\nConnection: close\r\n\r\n");
ok(!exists $r->{headers}{'content-encoding'}, 'two Accept-Encoding fields, one refusing gzip: not compressed');

$r = get('/small', 'Accept-Encoding' => 'gzip');
is($r->{status}, 200, 'below webgres.compress_min_size: 200');
is($r->{body}, '{"a": 1}', '... the plain body');
ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
ok(!exists $r->{headers}{vary}, '... and no Vary');

$r = WebgresTest::request($port, 'HEAD', '/big', headers => { 'Accept-Encoding' => 'gzip' });
ok(!exists $r->{headers}{'content-encoding'}, 'HEAD: not compressed');
is($r->{headers}{'content-length'}, length $plain, '... Content-Length of the plain body');
like($r->{headers}{vary} // '', qr/accept-encoding/i, '... with the Vary a GET has');

for my $case (['/optout', 'a route with compress = false'],
	['/executor-optout', 'an executor route with compress = false'])
{
	$r = get($case->[0], 'Accept-Encoding' => 'gzip');
	ok(!exists $r->{headers}{'content-encoding'}, "$case->[1]: not compressed");
	is($r->{body}, $plain, '... the plain body');
}
$r = get('/executor', 'Accept-Encoding' => 'gzip');
is($r->{headers}{'content-encoding'}, 'gzip', 'a route on an executor: gzip');
is(gunzipped($r->{body}), $plain, '... decompresses to the plain answer');

$r = get('/png', 'Accept-Encoding' => 'gzip');
ok(!exists $r->{headers}{'content-encoding'}, 'image/png: not compressed');
is(length $r->{body}, 5000, '... all of it');
$r = get('/encoded', 'Accept-Encoding' => 'gzip');
is($r->{headers}{'content-encoding'}, 'identity', 'Content-Encoding set by the handler: left alone');
is($r->{body}, 'z' x 5000, '... the body as sent');
$r = get('/partial', 'Accept-Encoding' => 'gzip');
is($r->{status}, 206, '206 from a handler');
ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
$r = get('/etag', 'Accept-Encoding' => 'gzip');
is($r->{headers}{etag}, 'W/"v1"', 'a strong ETag becomes weak on the gzipped response');
is(get('/etag')->{headers}{etag}, '"v1"', '... and stays strong on the plain one');

# What is never compressed, however large and compressible: errors and 304.
for my $case ([ '/not-found', 404, 'n' ], [ '/server-error', 500, 'e' ])
{
	$r = get($case->[0], 'Accept-Encoding' => 'gzip');
	is($r->{status}, $case->[1], "a $case->[1] with a 5000-byte text body");
	ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
	is($r->{body}, $case->[2] x 5000, '... the body as sent');
}
$r = get('/not-modified', 'Accept-Encoding' => 'gzip');
is($r->{status}, 304, 'a 304');
ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
is($r->{headers}{etag}, '"v1"', '... its ETag left strong');
# A compressed answer offers no byte ranges: Accept-Ranges: bytes becomes none.
$r = get('/ranges', 'Accept-Encoding' => 'gzip');
is($r->{headers}{'content-encoding'}, 'gzip', 'a response with Accept-Ranges: bytes: gzipped');
is($r->{headers}{'accept-ranges'}, 'none', '... with Accept-Ranges: none');
is(gunzipped($r->{body}), 'r' x 5000, '... decompresses to the plain answer');
is(get('/ranges')->{headers}{'accept-ranges'}, 'bytes', '... and bytes on the plain one');

# ---- credentials (BREACH): compressed only where the route opted in ----
for my $case ([ 'Cookie', 'session=s3cr3t' ], [ 'Authorization', 'Basic dXNlcjpwYXNz' ])
{
	for my $path ('/big', '/executor')
	{
		$r = get($path, 'Accept-Encoding' => 'gzip', $case->[0] => $case->[1]);
		is($r->{status}, 200, "$path with a $case->[0] header: 200");
		ok(!exists $r->{headers}{'content-encoding'}, '... not compressed: the route did not opt in');
		is($r->{body}, $plain, '... the plain body');
	}
	for my $path ('/optin', '/executor-optin')
	{
		$r = get($path, 'Accept-Encoding' => 'gzip', $case->[0] => $case->[1]);
		is($r->{headers}{'content-encoding'}, 'gzip', "$path (compress = true) with a $case->[0] header: gzip");
		is(gunzipped($r->{body}), $plain, '... decompresses to the plain answer');
	}
}
$r = get('/private', 'Accept-Encoding' => 'gzip', Authorization => "Bearer $token");
is($r->{status}, 200, 'a route with auth, with a valid token: 200');
ok(!exists $r->{headers}{'content-encoding'}, '... not compressed');
is($r->{body}, $plain, '... the plain body');
$r = get('/private-optin', 'Accept-Encoding' => 'gzip', Authorization => "Bearer $token");
is($r->{status}, 200, 'a route with auth and compress = true: 200');
is($r->{headers}{'content-encoding'}, 'gzip', '... gzip');
is(gunzipped($r->{body}), $plain, '... decompresses to the plain answer');

# ---- event streams are not compressed ----
{
	my $s = WebgresTest::connect_to($port);
	print $s "GET /events HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n";
	my ($head, $sel, $end) = ('', IO::Select->new($s), time + 20);
	while (time < $end && $head !~ /\r\n\r\n/)
	{
		next unless $sel->can_read(0.5);
		sysread($s, my $chunk, 65536) or last;
		$head .= $chunk;
	}
	like($head, qr{content-type: text/event-stream}i, 'an event stream opens');
	unlike($head, qr{content-encoding}i, '... not compressed, though the client takes gzip');
	close $s;
}

# ---- streamed exports ----
my $export_plain = get('/export', Accept => 'application/x-ndjson')->{body};
cmp_ok(length $export_plain, '>', 500000, 'the NDJSON export is large');
$r = get('/export', Accept => 'application/x-ndjson', 'Accept-Encoding' => 'gzip');
is($r->{headers}{'content-encoding'}, 'gzip', 'a streamed NDJSON export: gzip');
like($r->{headers}{'transfer-encoding'} // '', qr/chunked/, '... chunked');
is(gunzipped($r->{body}), $export_plain, '... decompresses to the plain export');
$r = get('/export', Accept => 'text/csv', 'Accept-Encoding' => 'gzip');
is($r->{headers}{'content-encoding'}, 'gzip', 'a streamed CSV export: gzip');
is(gunzipped($r->{body}), get('/export', Accept => 'text/csv')->{body}, '... decompresses to the plain CSV');

# Flushed per batch: rows sent before the query stalls inflate at once.
# The handler stops at row 3000 on an advisory lock a session holds, until
# the test has read the rows before it; then it finishes.
{
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('SELECT pg_advisory_lock(30030)');
	my $s = WebgresTest::connect_to($port);
	print $s "GET /slow-export HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\n"
	  . "Accept-Encoding: gzip\r\nConnection: close\r\n\r\n";
	my ($raw, $sel) = ('', IO::Select->new($s));
	my ($inflated, $ended) = ('', 0);
	# De-chunks what has come so far and inflates all of it.
	my $inflate = sub {
		my $pos = index($raw, "\r\n\r\n");
		return if $pos < 0;
		my ($body, $p) = ('', $pos + 4);
		while ((my $nl = index($raw, "\r\n", $p)) >= 0)
		{
			my $size = hex substr($raw, $p, $nl - $p);
			last if length($raw) < $nl + 2 + $size + 2;
			$ended = 1 if $size == 0;
			$body .= substr($raw, $nl + 2, $size);
			$p = $nl + 2 + $size + 2;
		}
		my ($z) = Compress::Raw::Zlib::Inflate->new(-WindowBits => WANT_GZIP);
		$inflated = '';
		$z->inflate($body, $inflated);
	};
	my $read = sub {
		my ($until) = @_;
		my $end = time + 60;
		while (time < $end && !$until->())
		{
			next unless $sel->can_read(0.2);
			sysread($s, my $chunk, 65536) or last;
			$raw .= $chunk;
			$inflate->();
		}
	};
	$read->(sub { $inflated =~ /"i":2000\b/ });
	ok($node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND objid = 30030 AND NOT granted}),
		'a stalled export: its query waits at row 3000');
	# Batches of 1000 rows (stream.h): the third one holds the stall.
	like($inflated, qr/\{"i":2000,[^\n]*\}\n\z/, '... the two batches before the stall inflate whole');
	ok(!$ended, '... before the response has ended');
	$gate->query_safe('SELECT pg_advisory_unlock(30030)');
	$gate->quit;
	$read->(sub { $ended });
	ok($ended, 'released: the export ends');
	is(scalar(() = $inflated =~ /\n/g), 4000, '... and all 4000 rows inflate');
	close $s;
}

# ---- HTTP/2 (h2c) ----
{
	my $s = WebgresTest::connect_to($port);
	print $s $H2Test::PREFACE . frame(4, 0, 0, '')
	  . frame(1, 0x5, 1, request_block('/big', 'accept-encoding' => 'gzip'));
	my ($status, $body) = read_stream($s, 1);
	is($status, 200, 'HTTP/2: 200');
	is(gunzipped($body), $plain, 'HTTP/2: the gzipped body decompresses to the plain answer');
	print $s frame(1, 0x5, 3, request_block('/big'));
	($status, $body) = read_stream($s, 3);
	is($body, $plain, 'HTTP/2 without Accept-Encoding: the plain body');
	# Small enough to fit the stream's initial flow-control window gzipped.
	print $s frame(1, 0x5, 5,
		request_block('/export-small', 'accept' => 'application/x-ndjson', 'accept-encoding' => 'gzip'));
	($status, $body) = read_stream($s, 5);
	is(gunzipped($body), get('/export-small', Accept => 'application/x-ndjson')->{body},
		'HTTP/2: a streamed export decompresses to the plain export');
	close $s;
}

# ---- off again: the filter leaves the path's list on reload ----
ok(WebgresTest::reload_and_wait($node, "webgres.compress = off\n"), 'the worker took webgres.compress off');
$r = get('/big', 'Accept-Encoding' => 'gzip');
ok(!exists $r->{headers}{'content-encoding'}, 'after reload with webgres.compress off: no Content-Encoding');
ok(!exists $r->{headers}{vary}, '... nor Vary');
is($r->{body}, $plain, '... the plain body');

$node->stop;
done_testing();
