# Streamed responses (routes in mode stream): the rows of a cursor written
# as they are fetched, as a JSON array, NDJSON or CSV chosen by Accept;
# backpressure from a slow reader; the first byte before the query ends;
# a client that hangs up cancels and rolls back; an error after the first
# byte cuts the stream (no last chunk on HTTP/1.1, RST_STREAM on HTTP/2).
# Raw bytes are checked; assertions are about order and counts.
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use WebgresTest;

my $node = WebgresTest->new_node('streaming', workers => 1,
	conf => "webgres.executors = 2\nwebgres.http2 = on\nwebgres.handler_timeout = '3s'\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE small (id int, name text, note text);
	INSERT INTO small VALUES (1, 'plain', 'a'), (2, 'with, comma', 'say "hi"'),
		(3, NULL, ''), (4, E'multi\nline', NULL);
	CREATE TABLE marks (what text);
	CREATE FUNCTION mark() RETURNS int LANGUAGE sql VOLATILE
		AS $$ INSERT INTO marks VALUES ('streamed') RETURNING 1 $$;
	CREATE SEQUENCE progress;
});

# Adds a route in mode stream; returns its id.
sub stream_route
{
	my ($path, $handler, $extra) = @_;
	my ($cols, $vals) = ('', '');
	($cols, $vals) = (', stream_headers', ", '$extra'") if defined $extra;
	return $node->safe_psql('postgres',
		"INSERT INTO webgres.routes (method, path, handler, mode$cols) "
		  . "VALUES ('GET', '$path', \$h\$$handler\$h\$, 'stream'$vals) RETURNING id");
}

stream_route('/small', q{SELECT id, name, note FROM small ORDER BY id});
stream_route('/empty', q{SELECT id, name FROM small WHERE false});
stream_route('/export.csv', q{SELECT id, name FROM small ORDER BY id},
	'{"content-disposition": "attachment; filename=\"small.csv\""}');
stream_route('/big',
	q{SELECT i, nextval('progress') AS n, repeat('x', 180) AS pad FROM generate_series(1, 1000000) i});
stream_route('/sleepy',
	q{SELECT i, CASE WHEN i = 2500 THEN pg_sleep(4)::text END AS s FROM generate_series(1, 3000) i});
stream_route('/forever',
	q{SELECT i, CASE WHEN i = 1500 THEN pg_sleep(60)::text END AS s FROM generate_series(1, 3000) i});
stream_route('/writer-small', q{SELECT i, CASE WHEN i = 1 THEN mark() END AS m FROM generate_series(1, 10) i});
stream_route('/writer',
	q{SELECT a, b, CASE WHEN a = 1 AND b = 1 THEN mark() END AS m, repeat('y', 200) AS pad
	  FROM generate_series(1, 10000) a, generate_series(1, 10000) b});
stream_route('/late-error',
	q{SELECT i, CASE WHEN i = 1500 THEN 1 / (i - 1500) END AS x FROM generate_series(1, 3000) i});
stream_route('/early-error',
	q{SELECT i, CASE WHEN i = 10 THEN 1 / (i - 10) END AS x FROM generate_series(1, 3000) i});
stream_route('/param/:n', q{SELECT i FROM request, generate_series(1, (request.params->>'n')::int) i});

WebgresTest::wait_for_status($port, '/small', 200);

# Waits until the server log, from byte $from on, matches $re.
sub wait_for_log
{
	my ($node, $re, $from) = @_;
	my $deadline = time + 20;
	while (time < $deadline)
	{
		my $log = slurp_file($node->logfile);
		return 1 if substr($log, $from) =~ $re;
		sleep 0.1;
	}
	return 0;
}

# Sends raw bytes on a new connection; returns everything read until close.
sub raw_all
{
	my ($bytes, $timeout) = @_;
	my $s = WebgresTest::connect_to($port);
	print $s $bytes;
	my $buf = '';
	my $deadline = time + ($timeout // 60);
	my $sel = IO::Select->new($s);
	while (time < $deadline)
	{
		next unless $sel->can_read(0.5);
		my $got = sysread($s, my $chunk, 65536);
		last unless $got;
		$buf .= $chunk;
	}
	close $s;
	return $buf;
}

sub get_raw
{
	my ($path, $accept) = @_;
	my $h = defined $accept ? "Accept: $accept\r\n" : '';
	return raw_all("GET $path HTTP/1.1\r\nHost: x\r\n${h}Connection: close\r\n\r\n");
}

# Splits a raw chunked response: (head, decoded body, complete flag).
sub dechunk
{
	my ($raw) = @_;
	my $end = index($raw, "\r\n\r\n");
	return ('', '', 0) if $end < 0;
	my $head = substr($raw, 0, $end + 2);
	my $pos = $end + 4;
	my $body = '';
	while (1)
	{
		my $nl = index($raw, "\r\n", $pos);
		return ($head, $body, 0) if $nl < 0;
		my $size = hex(substr($raw, $pos, $nl - $pos));
		return ($head, $body, 0) if length($raw) < $nl + 2 + $size + 2;
		return ($head, $body, 1) if $size == 0 && substr($raw, $nl, 4) eq "\r\n\r\n";
		$body .= substr($raw, $nl + 2, $size);
		$pos = $nl + 2 + $size + 2;
	}
}

sub header_of
{
	my ($head, $name) = @_;
	return $head =~ /^\Q$name\E:\s*([^\r\n]*)/mi ? $1 : undef;
}

# ---- formats, byte for byte ----
{
	my $json = qq([{"id":1,"name":"plain","note":"a"},\n)
	  . qq({"id":2,"name":"with, comma","note":"say \\"hi\\""},\n)
	  . qq({"id":3,"name":null,"note":""},\n)
	  . qq({"id":4,"name":"multi\\nline","note":null}]\n);
	my $ndjson = qq({"id":1,"name":"plain","note":"a"}\n)
	  . qq({"id":2,"name":"with, comma","note":"say \\"hi\\""}\n)
	  . qq({"id":3,"name":null,"note":""}\n)
	  . qq({"id":4,"name":"multi\\nline","note":null}\n);
	my $csv = "id,name,note\r\n1,plain,a\r\n2,\"with, comma\",\"say \"\"hi\"\"\"\r\n"
	  . "3,,\"\"\r\n4,\"multi\nline\",\r\n";

	my $raw = get_raw('/small');
	my ($head, $body, $complete) = dechunk($raw);
	like($head, qr{^HTTP/1\.1 200 }, 'a stream answers 200');
	is(lc(header_of($head, 'transfer-encoding') // ''), 'chunked', '... chunked on HTTP/1.1');
	is(header_of($head, 'content-length'), undef, '... with no Content-Length');
	is(header_of($head, 'content-type'), 'application/json', 'no Accept: a JSON array');
	is($body, $json, '... byte for byte, as json_agg would build it');
	ok($complete && substr($raw, -5) eq "0\r\n\r\n", '... ending with the last chunk');

	for my $case (['*/*', 'application/json', $json],
		['application/json', 'application/json', $json],
		['application/x-ndjson', 'application/x-ndjson', $ndjson],
		['text/csv', 'text/csv; charset=utf-8; header=present', $csv],
		['text/csv;q=0.5, application/x-ndjson', 'application/x-ndjson', $ndjson],
		['application/json;q=0, text/*', 'text/csv; charset=utf-8; header=present', $csv],
		['text/html, */*;q=0.1', 'application/json', $json],
		# q-values are read by their grammar: a malformed one is q=0.
		['application/x-ndjson;q=0.5, text/csv;q=1e0', 'application/x-ndjson', $ndjson],
		['text/csv;q=nan, application/json;q=0.001', 'application/json', $json])
	{
		my ($accept, $type, $want) = @$case;
		my ($h, $b, $c) = dechunk(get_raw('/small', $accept));
		is(header_of($h, 'content-type') . "|$c|$b", "$type|1|$want", "Accept: $accept");
	}

	my $res = WebgresTest::http_get($port, '/small', headers => { Accept => 'text/html' });
	is($res->{status}, 406, 'an Accept that allows no format: 406');
	$res = WebgresTest::http_get($port, '/small',
		headers => { Accept => 'application/json;q=0, text/csv;q=0, application/x-ndjson;q=0' });
	is($res->{status}, 406, '... also when every format has q=0');
	for my $accept ('text/csv;q=nan', 'text/csv;q=0x1', 'application/json;q=+1', 'text/csv;q=1.0001')
	{
		$res = WebgresTest::http_get($port, '/small', headers => { Accept => $accept });
		is($res->{status}, 406, "a malformed q-value is q=0: $accept gives 406");
	}
}

# ---- zero rows: a complete empty document ----
{
	my %want = ('application/json' => "[]\n", 'application/x-ndjson' => '',
		'text/csv' => "id,name\r\n");
	for my $accept (sort keys %want)
	{
		my ($h, $b, $c) = dechunk(get_raw('/empty', $accept));
		like($h, qr{^HTTP/1\.1 200 }, "zero rows as $accept: 200");
		is("$c|$b", "1|$want{$accept}", '... and an empty document');
	}
}

# ---- extra headers from the route; parameters from the request ----
{
	my ($h, $b) = dechunk(get_raw('/export.csv', 'text/csv'));
	is(header_of($h, 'content-disposition'), 'attachment; filename="small.csv"',
		'stream_headers are sent');
	is($b, "id,name\r\n1,plain\r\n2,\"with, comma\"\r\n3,\r\n4,\"multi\nline\"\r\n", '... with the CSV');
	($h, $b) = dechunk(get_raw('/param/3', 'application/x-ndjson'));
	is($b, qq({"i":1}\n{"i":2}\n{"i":3}\n), 'a streamed handler reads the request');
	my ($ok, $stderr) = (0, '');
	$node->psql('postgres',
		q{INSERT INTO webgres.routes (method, path, handler, stream_headers) VALUES ('GET', '/nostream', 'SELECT 1 AS body', '{"a":"b"}')},
		stderr => \$stderr);
	like($stderr, qr/routes_stream_headers_check/, 'stream_headers only on a route in mode stream');
}

# ---- HEAD: the head only ----
{
	my ($all) = WebgresTest::raw($port, "HEAD /small HTTP/1.1\r\nHost: x\r\n\r\n"
		  . "GET /fastcheck HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", n => 2, head_only => 1);
	is($all->[0]{status}, 200, 'HEAD of a stream route: 200');
	is($all->[0]{headers}{'content-type'}, 'application/json', '... with the content type');
	like($all->[1]{status_line} // '', qr{^HTTP/1\.1 404}, '... and no body: the pipelined request after it parses');
}

# ---- an error in the first batch gets the normal error response ----
{
	my $res = WebgresTest::http_get($port, '/early-error');
	is($res->{status}, 400, 'an error before the first byte: its SQLSTATE\'s status (22012: 400)');
}

# ---- an error after the first byte cuts the stream ----
{
	my $log_at = -s $node->logfile;
	my $raw = get_raw('/late-error', 'application/x-ndjson');
	my ($h, $b, $complete) = dechunk($raw);
	like($h, qr{^HTTP/1\.1 200 }, 'an error after the first byte: the head was 200');
	like($b, qr/^\{"i":1,"x":null\}\n/, '... the rows before it went out');
	ok(!$complete, '... and the stream is cut: no last chunk');
	unlike($raw, qr/\r\n0\r\n\r\n\z/, '... (no 0\r\n\r\n at the end of the raw bytes)');
	ok(wait_for_log($node, qr/division by zero/, $log_at),
		'... the executor logs the error');
	ok(wait_for_log($node, qr/webgres cut the streamed response to "GET \/late-error"/, $log_at),
		'... and the worker logs the cut');
}

# ---- HTTP/2: a stream in DATA frames; an error resets it ----
# (Debian's curl, which scripts/deps.sh installs, speaks HTTP/2.)
{
	my $out = `curl -s --http2-prior-knowledge -H 'Accept: application/x-ndjson' -w '\n%{http_version}' http://127.0.0.1:$port/small`;
	like($out, qr/\{"id":4,"name":"multi\\nline","note":null\}\n\n2$/, 'HTTP/2: the whole stream');
	system("curl -s -o /dev/null --http2-prior-knowledge http://127.0.0.1:$port/late-error");
	my $rc = $? >> 8;
	is($rc, 92, 'HTTP/2: an error after the first byte resets the stream (curl: exit 92)');
	$out = `curl -s -i --http2-prior-knowledge http://127.0.0.1:$port/empty`;
	like($out, qr{\r\n\r\n\[\]\n\z}, 'HTTP/2: zero rows');
}

# The pids of the executors.
sub executor_pids
{
	return split /\n/, $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres executor' ORDER BY pid");
}

# A field of /proc/PID/status, in kB.
sub proc_kb
{
	my ($pid, $field) = @_;
	open my $f, '<', "/proc/$pid/status" or return 0;
	while (my $line = <$f>) { return $1 if $line =~ /^$field:\s+(\d+)/; }
	return 0;
}

sub poll_until
{
	my ($sql, $want, $timeout) = @_;
	my $deadline = time + ($timeout // 30);
	my $got = '';
	while (time < $deadline)
	{
		$got = $node->safe_psql('postgres', $sql);
		return 1 if $got eq $want;
		sleep 0.1;
	}
	diag("waited for '$want' from: $sql; last got '$got'");
	return 0;
}

sub active_route
{
	my ($path) = @_;
	return "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres executor' "
	  . "AND state = 'active' AND query LIKE 'GET $path (route %'";
}

# ---- the first byte leaves before the query ends ----
{
	my $s = WebgresTest::connect_to($port);
	print $s "GET /sleepy HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\nConnection: close\r\n\r\n";
	my $buf = '';
	my $sel = IO::Select->new($s);
	my $deadline = time + 30;
	while (index($buf, qq({"i":1000,)) < 0 && time < $deadline)
	{
		next unless $sel->can_read(0.5);
		sysread($s, my $chunk, 65536) or last;
		$buf .= $chunk;
	}
	like($buf, qr/^HTTP\/1\.1 200 /, 'the head and first batch of a slow query arrive');
	is($node->safe_psql('postgres', active_route('/sleepy')), '1',
		'... while its query is still running');
	$deadline = time + 30;
	while (time < $deadline)
	{
		next unless $sel->can_read(0.5);
		sysread($s, my $chunk, 65536) or last;
		$buf .= $chunk;
	}
	close $s;
	my ($h, $b, $complete) = dechunk($buf);
	is(scalar(() = $b =~ /\n/g) . " $complete", '3000 1',
		'... then the rest, complete, though it took longer than webgres.handler_timeout');
}

# ---- a client that hangs up cancels the query and rolls it back ----
{
	my ($h, $b, $c) = dechunk(get_raw('/writer-small', 'application/x-ndjson'));
	is("$c " . $node->safe_psql('postgres', 'SELECT count(*) FROM marks'), '1 1',
		'a stream read to its end commits what its handler wrote');

	my $log_at = -s $node->logfile;
	my $s = WebgresTest::connect_to($port);
	print $s "GET /writer HTTP/1.1\r\nHost: x\r\nAccept: text/csv\r\nConnection: close\r\n\r\n";
	my $buf = '';
	my $sel = IO::Select->new($s);
	my $deadline = time + 30;
	while (length($buf) < 1_000_000 && time < $deadline)
	{
		next unless $sel->can_read(0.5);
		sysread($s, my $chunk, 65536) or last;
		$buf .= $chunk;
	}
	ok(length($buf) >= 1_000_000, 'a long stream: the client reads a megabyte');
	is($node->safe_psql('postgres', active_route('/writer')), '1', '... its query runs');
	close $s;
	ok(poll_until(active_route('/writer'), '0', 20), 'the client hangs up: the query ends');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM marks'), '1',
		'... and what its handler wrote was rolled back');
	ok(wait_for_log($node, qr/canceling statement due to user request|client went away during a streamed response/, $log_at),
		'... with the cancel logged');
}

# ---- a million rows to a slow reader: backpressure, bounded memory ----
{
	my ($worker) = WebgresTest::worker_pids($node);
	my @executors = executor_pids();
	my %rss0 = map { $_ => proc_kb($_, 'VmRSS') } ($worker, @executors);

	my $s = WebgresTest::connect_to($port);
	print $s "GET /big HTTP/1.1\r\nHost: x\r\nAccept: application/x-ndjson\r\nConnection: close\r\n\r\n";
	my $sel = IO::Select->new($s);

	# Read a little, then stop: the producer must stop too.
	my $got = 0;
	my $raw = '';
	my $deadline = time + 30;
	while ($got < 1_000_000 && time < $deadline)
	{
		next unless $sel->can_read(0.5);
		my $n = sysread($s, my $chunk, 65536) or last;
		$got += $n;
		$raw .= $chunk;
	}
	# Wait for the producer to block: its executor asleep in poll(2) on the
	# socket (/proc/PID/wchan), and the rows fetched the same before and
	# after, five times running.
	my ($epid) = split /\n/, $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres executor' "
		  . "AND query LIKE 'GET /big (route %'");
	my $progress = sub { $node->safe_psql('postgres', 'SELECT last_value FROM progress') };
	my $wchan = sub { open my $f, '<', "/proc/$epid/wchan" or return ''; local $/; return <$f> // ''; };
	my ($n1, $n2, $blocked) = (0, 0, 0);
	WebgresTest::poll_until(sub {
		my $before = $progress->();
		my $w = $wchan->();
		$n1 = $progress->();
		$blocked = ($w =~ /poll/ && $before == $n1) ? $blocked + 1 : 0;
		$blocked >= 5;
	}, 120);
	ok($blocked >= 5, 'the producer blocks while the reader pauses');
	$n2 = $progress->();
	ok($n1 < 500_000, "a paused reader holds the query: $n1 of 1000000 rows fetched");
	is($n2, $n1, '... and no more are fetched while it pauses');
	is($node->safe_psql('postgres', active_route('/big')), '1', '... the query is still running');

	# Read the rest, decoding chunks as they come, keeping only the tail.
	my ($rows, $last, $complete, $in_body) = (0, '', 0, 0);
	$deadline = time + 300;
	my $body_tail = '';
	while (time < $deadline && !$complete)
	{
		if (!$in_body && (my $end = index($raw, "\r\n\r\n")) >= 0)
		{
			$raw = substr($raw, $end + 4);
			$in_body = 1;
		}
		while ($in_body)
		{
			my $nl = index($raw, "\r\n");
			last if $nl < 0;
			my $size = hex(substr($raw, 0, $nl));
			last if length($raw) < $nl + 2 + $size + 2;
			if ($size == 0) { $complete = 1; last; }
			my $data = $body_tail . substr($raw, $nl + 2, $size);
			$raw = substr($raw, $nl + 2 + $size + 2);
			my $lines = ($data =~ tr/\n//);
			$rows += $lines;
			my $cut = rindex($data, "\n");
			$last = substr($data, rindex($data, "\n", $cut - 1) + 1, $cut - rindex($data, "\n", $cut - 1) - 1)
			  if $lines > 0;
			$body_tail = substr($data, $cut + 1);
		}
		last if $complete;
		my $chunk = '';
		my $n = $sel->can_read(0.5) ? sysread($s, $chunk, 262144) : -1;
		last if defined $n && $n == 0;
		$raw .= $chunk if defined $n && $n > 0;
	}
	close $s;
	ok($complete, 'the million-row stream ends with its last chunk');
	is($rows, 1_000_000, '... with every row');
	like($last, qr/^\{"i":1000000,"n":\d+,"pad":"x{180}"\}$/, '... the last one whole');
	for my $pid ($worker, @executors)
	{
		my $growth = proc_kb($pid, 'VmHWM') - $rss0{$pid};
		ok($growth < 64 * 1024,
			"peak memory (VmHWM) of process $pid: ${growth} kB above its RSS before (< 64 MB for 200 MB)");
	}
}

# ---- webgres.stream_timeout bounds the whole stream ----
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET webgres.stream_timeout = '3s'");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	# A new session shows the value once the postmaster has read the file
	# and signalled every process; an idle executor takes the reload before
	# it accepts its next request.
	ok($node->poll_query_until('postgres', q{SELECT current_setting('webgres.stream_timeout') = '3s'}),
		'the reload is in force');
	my $log_at = -s $node->logfile;
	my $raw = get_raw('/forever', 'application/x-ndjson');
	my ($h, $b, $complete) = dechunk($raw);
	like($h, qr{^HTTP/1\.1 200 }, 'a stream that outlives webgres.stream_timeout: its head went out');
	is(scalar(() = $b =~ /\n/g) . " $complete", '1000 0', '... its first batch, and it is cut');
	ok(wait_for_log($node, qr/canceling statement due to statement timeout/, $log_at),
		'... by the statement timeout, logged');
	is($node->safe_psql('postgres', active_route('/forever')), '0', '... and its query is gone');
}

# ---- with no executors, a stream route answers 503 ----
{
	my $log_at = -s $node->logfile;
	$node->safe_psql('postgres', 'ALTER SYSTEM SET webgres.executors = 0');
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	my $res = WebgresTest::wait_for_status($port, '/small', 503, 20);
	is($res->{status}, 503, 'webgres.executors = 0: a stream route answers 503');
	ok(wait_for_log($node, qr/streams, but there is no executor to run it/, $log_at),
		'... and logs why');
}

done_testing();
