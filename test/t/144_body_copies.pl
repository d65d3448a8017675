# What a request body costs in memory (docs/uploads.md#how-a-body-is-held)
# and uploads that go wrong.  A body handed to an executor is held there
# once: the handler's body column and webgres.ingest read it where the
# frame from the worker holds it, byte for byte whatever its offset in the
# frame; the worker writes the frame's body from libh2o's buffer, with no
# copy of its own.  A multipart upload that stops arriving while its client
# stays connected is a 408 at webgres.body_timeout, a 2 GB Content-Length
# a 413 before its body; neither stores anything, and the worker's memory
# and body file go with them.
use strict;
use warnings;
use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $MB = 1024 * 1024;
my $node = WebgresTest->new_node('body_copies', workers => 1,
	conf => "webgres.executors = 1\nwebgres.max_body_size = '64MB'\n"
	  . "webgres.body_timeout = '2s'\nwebgres.handler_timeout = '120s'\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE lines (n integer, label text);
	CREATE TABLE files (name text, data bytea);
});
my $md5 = q{SELECT coalesce(md5(body) || ' ' || length(body), 'null') AS body FROM request};
WebgresTest::add_route($node, undef, '/md5', $md5);
WebgresTest::add_route($node, 'POST', '/md5_loop', $md5);
WebgresTest::add_route($node, 'POST', '/load',
	q{SELECT webgres.ingest('lines', body, 'text/csv')::text AS body FROM request});
WebgresTest::add_route($node, 'POST', '/upload', q{
	WITH stored AS (INSERT INTO files SELECT f.filename, f.content
		FROM request, webgres.body_files(request.body, request.headers->>'content-type') f RETURNING 1)
	SELECT 201 AS status, count(*)::text AS body FROM stored});
$node->safe_psql('postgres',
	q{UPDATE webgres.routes SET mode = 'executor' WHERE path IN ('/md5', '/load', '/upload')});
# /md5_loop is the loop's case: in mode auto a run past the budget under load would move it.
$node->safe_psql('postgres', q{UPDATE webgres.routes SET mode = 'inline' WHERE path = '/md5_loop'});
my $executor = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres executor'});
my ($worker) = WebgresTest::worker_pids($node);
ok($executor && $worker, "one executor ($executor) and one worker ($worker)");

sub post
{
	my ($path, $body, %h) = @_;
	return WebgresTest::request($port, 'POST', $path, body => $body, headers => \%h, timeout => 120);
}
# A process's peak and current resident memory, in bytes.
sub memory
{
	my ($pid) = @_;
	my %m = (slurp_file("/proc/$pid/status") =~ /^(VmHWM|VmRSS):\s+(\d+) kB/mg);
	return ($m{VmHWM} * 1024, $m{VmRSS} * 1024);
}

# The executor reads the body where the frame put it, moved to where a
# bytea may start: every offset of the body in the frame (the header
# before it one byte longer each time) gives the bytes sent, on the
# executor as on the worker's loop.
my $bin = join('', map { chr(($_ * 7 + 3) % 256) } 0 .. 4999);
for my $pad (0 .. 7)
{
	my $body = substr($bin, $pad) . "\r\n\0end";
	my $want = md5_hex($body) . ' ' . length($body);
	my $r = post('/md5', $body, 'X-Pad' => 'p' x $pad);
	is($r->{body}, $want, "executor, the body at offset +$pad in the frame: the bytes sent");
	$r = post('/md5_loop', $body, 'X-Pad' => 'p' x $pad);
	is($r->{body}, $want, "on the loop, +$pad: the same");
}
is(post('/md5', '')->{body}, md5_hex('') . ' 0', 'an empty body: empty, not NULL');
is(WebgresTest::request($port, 'GET', '/md5')->{body}, 'null', 'no body (a GET): NULL');
for my $pad (0 .. 3)
{
	my $r = post('/load', "n,label\n" . join('', map { "$_,row $_\n" } 1 .. 1000), 'X-Pad' => 'p' x $pad);
	is($r->{body}, '1000', "ingest (COPY) from the frame, body at +$pad: 1000 rows");
}
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(n) || ' ' || max(label) FROM lines}),
	'4000 2002000 row 999', 'the rows as sent');

# A 60 MB body on an executor: the worker holds libh2o's buffer of it
# (past 32 MB a mapped file, the next power of two in size) and writes the
# hand-off from there; the executor holds the frame it read and nothing
# more.  Each process's peak grows by about the body once; a copy more
# anywhere would be twice that.
my $big = join('', map { chr(($_ * 13) % 256) x 1024 } 0 .. 60 * 1024 - 1);
my ($exec_peak0) = memory($executor);
my ($worker_peak0) = memory($worker);
my $r = post('/md5', $big);
is($r->{body}, md5_hex($big) . ' ' . length($big), '60 MB on an executor: the bytes sent');
my ($exec_peak1) = memory($executor);
my ($worker_peak1) = memory($worker);
my ($exec_growth, $worker_growth) = (($exec_peak1 - $exec_peak0) / $MB, ($worker_peak1 - $worker_peak0) / $MB);
diag(sprintf('60 MB body: executor peak +%.0f MB, worker peak +%.0f MB', $exec_growth, $worker_growth));
cmp_ok($exec_growth, '<', 90, 'the executor holds the body once (peak growth under 1.5 times the body)');
cmp_ok($worker_growth, '<', 90, 'the worker holds it once, libh2o\'s buffer (under 1.5 times)');
$r = post('/load', "n,label\n" . join('', map { "$_,x\n" } 1 .. 1_000_000));
is($r->{body}, '1000000', '1,000,000 rows (9 MB) loaded from the frame');

# A multipart upload past libh2o's 32 MB threshold stops arriving, its
# client still connected: 408 at webgres.body_timeout, the connection
# closed, the body file and the worker's memory given back, nothing
# stored.
my $h2o_files = sub {
	scalar grep { (readlink($_) // '') =~ m{^/tmp/h2o\.b\..* \(deleted\)$} } glob("/proc/$worker/fd/*");
};
my (undef, $rss0) = memory($worker);
my $B = 'stopsending';
my $head = "--$B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.bin\"\r\n\r\n";
{
	my $s = WebgresTest::connect_to($port);
	print $s "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=$B\r\n"
	  . "Content-Length: 50000000\r\n\r\n" . $head . ('z' x 40_000_000);
	ok(WebgresTest::poll_until(sub { $h2o_files->() == 1 }), 'a stopped upload: its 40 MB held in a body file');
	my ($res, $closed) = WebgresTest::read_responses($s, 1, 60, 0, 1);
	is($res->[0] && $res->[0]{status}, 408, 'the upload that stopped: 408');
	ok($closed, '... and the connection closed');
	close $s;
}
ok(WebgresTest::poll_until(sub { $h2o_files->() == 0 }), 'its body file is gone');
ok(WebgresTest::poll_until(sub { (memory($worker))[1] < $rss0 + 16 * $MB }),
	'the worker\'s memory is back to what it was');

# A chunked one that stops the same way.
{
	my $s = WebgresTest::connect_to($port);
	print $s "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=$B\r\n"
	  . "Transfer-Encoding: chunked\r\n\r\n" . sprintf("%x\r\n%s\r\n", length $head, $head) . "100000\r\nzz";
	my ($res, $closed) = WebgresTest::read_responses($s, 1, 60, 0, 1);
	is($res->[0] && $res->[0]{status}, 408, 'a chunked upload that stopped: 408');
	close $s;
}

# 2 GB announced, one byte sent, the client waiting: 413 at once, from
# the Content-Length, over webgres.max_body_size.
{
	my $s = WebgresTest::connect_to($port);
	print $s "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: multipart/form-data; boundary=$B\r\n"
	  . "Content-Length: 2000000000\r\n\r\n-";
	my ($res) = WebgresTest::read_responses($s, 1, 10);
	is($res->[0] && $res->[0]{status}, 413, 'a 2 GB Content-Length with a 1-byte body: 413 before the body');
	close $s;
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM files'), '0', 'nothing of the failed uploads stored');
$r = post('/upload', "--$B\r\nContent-Disposition: form-data; name=\"f\"; filename=\"ok.txt\"\r\n\r\nfine\r\n--$B--\r\n",
	'Content-Type' => "multipart/form-data; boundary=$B");
is($r->{status}, 201, 'the worker serves the next upload');
is($node->safe_psql('postgres', q{SELECT convert_from(data, 'UTF8') FROM files}), 'fine', 'stored as sent');

$node->stop;
done_testing();
