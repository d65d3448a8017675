# Compression (docs/compression.md): gzip chosen from Accept-Encoding with
# q-values, above webgres.compress_min_size, for compressible types only,
# with Vary: Accept-Encoding; never for HEAD, 206, a response that already
# has Content-Encoding, an event stream, or a route whose compress column is
# false.  Whole and streamed responses, on the event loop and from
# executors, over HTTP/1.1 and HTTP/2 (h2c): the bytes must decompress to
# the uncompressed answer.  A streamed export is flushed batch by batch:
# what has arrived before the query ends already inflates to rows.
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
	conf => "webgres.http2 = on\nwebgres.executors = 1\nwebgres.compress_min_size = 2000\n");
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
$node->safe_psql('postgres', q{
	UPDATE webgres.routes SET compress = false WHERE path IN ('/optout', '/executor-optout');
	UPDATE webgres.routes SET mode = 'executor' WHERE path LIKE '/executor%';
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
		('GET', '/export', $h$SELECT i, repeat('r', 50) AS pad FROM generate_series(1, 20000) i$h$, 'stream'),
		('GET', '/export-small', $h$SELECT i, repeat('r', 50) AS pad FROM generate_series(1, 3000) i$h$, 'stream'),
		('GET', '/slow-export', $h$SELECT i, repeat('s', 50) AS pad,
			CASE WHEN i = 3000 THEN pg_sleep(3)::text END AS s FROM generate_series(1, 4000) i$h$, 'stream');
});
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
	'gzip;q=2' => 0, 'gzip;q=banana' => 0);
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
ok(!exists $r->{headers}{'content-encoding'}, 'below webgres.compress_min_size: not compressed');
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
{
	my $s = WebgresTest::connect_to($port);
	print $s "GET /slow-export HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\n"
	  . "Accept-Encoding: gzip\r\nConnection: close\r\n\r\n";
	my ($raw, $sel, $end) = ('', IO::Select->new($s), time + 20);
	my ($inflated, $ended) = ('', 0);
	my $started = time;
	while (time < $end && $inflated !~ /"i":2000\b/)
	{
		next unless $sel->can_read(0.2);
		sysread($s, my $chunk, 65536) or last;
		$raw .= $chunk;
		my $pos = index($raw, "\r\n\r\n");
		next if $pos < 0;
		# De-chunk what is complete, then inflate it all again.
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
		my $copy = $body;
		$inflated = '';
		$z->inflate($copy, $inflated);
	}
	# Batches of 1000 rows (stream.h): the third one holds the stall.
	like($inflated, qr/\{"i":2000,[^\n]*\}\n\z/, 'a stalled export: the two batches before the stall inflate whole');
	ok(!$ended, '... before the response has ended');
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

$node->stop;
done_testing();
