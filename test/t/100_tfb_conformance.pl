# TechEmpower conformance: every rule of the TFB specification that can be
# checked from outside, over real HTTP against a real cluster loaded by
# scripts/tfb-db.sh: bodies and key case, headers, clamping, the fortunes
# page, persisted updates, pg_stat_statements counts, the cache, pipelining.
use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use IO::Select;
use IO::Socket::INET;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(sleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

# The repository (scripts/test.sh runs the tests from a scratch copy).
my $top = $ENV{WEBGRES_SRC} // abs_path(dirname(__FILE__) . "/../..");
my $http_port = PostgreSQL::Test::Cluster::get_free_port();

# TFB counts queries with pg_stat_statements; an installation without it
# (docs/versions.md) runs everything else.
my $pgss = WebgresTest::have_module('pg_stat_statements');
my $no_pgss = 'pg_stat_statements is not in this installation (docs/versions.md)';
my $node = PostgreSQL::Test::Cluster->new('tfb');
$node->init;
$node->append_conf('postgresql.conf', ($pgss ? "shared_preload_libraries = 'webgres,pg_stat_statements'\n"
	  . "pg_stat_statements.track = all\n" : "shared_preload_libraries = 'webgres'\n") . qq{
webgres.listen = '127.0.0.1:$http_port'
webgres.workers = 2
webgres.database = 'hello_world'
# On, with no threshold: the TFB routes must opt out (TFB forbids compression).
webgres.compress = on
webgres.compress_min_size = 0
});
$node->start;

# Load TFB exactly as `make run` and the image do.
{
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGUSER} = 'postgres';
	my ($out, $err);
	my $ok = IPC::Run::run([ "$top/scripts/tfb-db.sh" ], '>', \$out, '2>', \$err);
	ok($ok, 'scripts/tfb-db.sh loads hello_world') or diag($err);
	# and again: it must be idempotent
	$ok = IPC::Run::run([ "$top/scripts/tfb-db.sh" ], '>', \$out, '2>', \$err);
	ok($ok, 'scripts/tfb-db.sh runs again') or diag($err);
}
# The workers serve hello_world, which did not exist when they started.
$node->restart;

# ---------------------------------------------------------------------------
# HTTP over plain sockets: what goes on the wire is what is checked.

my %accept = (
	json => 'application/json,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7',
	html => 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
	plaintext => 'text/plain,text/html;q=0.9,application/xhtml+xml;q=0.9,application/xml;q=0.8,*/*;q=0.7',
);

sub http_connect
{
	my $sock = IO::Socket::INET->new(
		PeerAddr => '127.0.0.1',
		PeerPort => $http_port,
		Proto => 'tcp',
		Timeout => 5) or die "connect to port $http_port: $!";
	$sock->autoflush(1);
	return { sock => $sock, buf => '' };
}

sub request_text
{
	my ($path, $kind) = @_;
	$kind //= 'json';
	return "GET $path HTTP/1.1\r\nHost: tfb-server\r\nAccept: $accept{$kind}\r\n"
	  . "Accept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n\r\n";
}

sub fill
{
	my ($conn) = @_;
	my $sel = IO::Select->new($conn->{sock});
	die "timeout waiting for a response\n" unless $sel->can_read(15);
	my $n = sysread($conn->{sock}, $conn->{buf}, 65536, length $conn->{buf});
	die "read: $!\n" unless defined $n;
	die "connection closed by server\n" if $n == 0;
}

# Reads one response from the connection.
sub read_response
{
	my ($conn) = @_;
	fill($conn) until $conn->{buf} =~ /\r\n\r\n/;
	my $end = index($conn->{buf}, "\r\n\r\n");
	my $head = substr($conn->{buf}, 0, $end);
	substr($conn->{buf}, 0, $end + 4) = '';
	my ($status_line, @lines) = split /\r\n/, $head;
	my ($status) = $status_line =~ m{^HTTP/1\.[01] (\d{3})} or die "bad status line: $status_line\n";
	my %h;
	for (@lines)
	{
		my ($k, $v) = /^([^:]+):\s*(.*?)\s*$/ or die "bad header: $_\n";
		$h{ lc $k } = defined $h{ lc $k } ? "$h{lc $k}, $v" : $v;
	}
	my $body = '';
	if (defined $h{'content-length'})
	{
		my $len = $h{'content-length'};
		fill($conn) while length($conn->{buf}) < $len;
		$body = substr($conn->{buf}, 0, $len);
		substr($conn->{buf}, 0, $len) = '';
	}
	elsif (($h{'transfer-encoding'} // '') =~ /chunked/i)
	{
		while (1)
		{
			fill($conn) until $conn->{buf} =~ /\r\n/;
			my ($size) = $conn->{buf} =~ /^([0-9a-fA-F]+)/;
			$size = hex $size;
			my $skip = index($conn->{buf}, "\r\n") + 2;
			fill($conn) while length($conn->{buf}) < $skip + $size + 2;
			$body .= substr($conn->{buf}, $skip, $size);
			substr($conn->{buf}, 0, $skip + $size + 2) = '';
			last if $size == 0;
		}
	}
	return { status => $status, headers => \%h, body => $body };
}

# A failed exchange (timeout, closed connection, garbage) is reported as
# status 0, so that the checks fail one by one instead of ending the test.
sub http_get
{
	my ($path, $kind, $conn) = @_;
	my $res = eval {
		$conn //= http_connect();
		syswrite($conn->{sock}, request_text($path, $kind));
		read_response($conn);
	};
	return $res // { status => 0, headers => {}, body => '', error => $@ };
}

sub try_read_response
{
	my ($conn) = @_;
	return eval { read_response($conn) } // { status => 0, headers => {}, body => '', error => $@ };
}

# ---------------------------------------------------------------------------
# TFB's checks (toolset/test_types/verifications.py and the wiki rules).

my $date_re = qr/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;
my %content_type = (
	json => qr/^application\/json(; ?charset=(UTF|utf)-8)?$/,
	plaintext => qr/^text\/plain(; ?charset=(UTF|utf)-8)?$/,
	html => qr/^text\/html; ?charset=(UTF|utf)-8$/,
);

sub check_headers
{
	my ($res, $kind, $what) = @_;
	my $h = $res->{headers};
	ok(defined $h->{server} && $h->{server} ne '', "$what: Server header");
	like($h->{date} // '', $date_re, "$what: Date header in HTTP format");
	like($h->{'content-type'} // '', $content_type{$kind}, "$what: Content-Type");
	ok(defined $h->{'content-length'} || defined $h->{'transfer-encoding'},
		"$what: Content-Length or Transfer-Encoding");
	ok(!defined $h->{'content-encoding'}, "$what: not compressed although gzip is accepted");
}

sub decode_json_or_fail
{
	my ($body, $what) = @_;
	my $v = eval { JSON::PP->new->utf8->decode($body) };
	fail("$what: body is JSON: $@ ($body)") unless defined $v;
	return $v;
}

# {"id": 1..10000, "randomNumber": 1..10000} with exactly these keys.
sub check_world
{
	my ($obj, $what) = @_;
	return fail("$what: a JSON object") unless ref $obj eq 'HASH';
	is(join(',', sort keys %$obj), 'id,randomNumber', "$what: keys are exactly id and randomNumber");
	for my $k ('id', 'randomNumber')
	{
		my $v = $obj->{$k};
		ok(defined $v && !ref $v && $v =~ /^\d+$/ && $v >= 1 && $v <= 10000,
			"$what: $k is an integer in 1..10000") or diag("got " . ($v // 'null'));
	}
}

# The five verifier cases, plus missing, negative and 20.
my @clamp_cases = (
	[ '2', 2 ], [ '0', 1 ], [ 'foo', 1 ], [ '501', 500 ], [ '', 1 ],
	[ undef, 1 ], [ '-3', 1 ], [ '20', 20 ]);

sub check_list_endpoint
{
	my ($base, $param) = @_;
	for my $case (@clamp_cases)
	{
		my ($value, $expected) = @$case;
		my $path = defined $value ? "$base?$param=$value" : $base;
		my $res = http_get($path);
		is($res->{status}, 200, "$path: status 200");
		check_headers($res, 'json', $path);
		my $list = decode_json_or_fail($res->{body}, $path);
		if (ref $list ne 'ARRAY')
		{
			fail("$path: a JSON array");
			next;
		}
		is(scalar @$list, $expected, "$path: $expected objects");
		my $checked = 0;
		for my $obj (@$list)
		{
			last if $checked++ >= 5;
			check_world($obj, "$path element");
		}
	}
}

sub world_counts
{
	my ($table) = @_;
	my $where = "query ~* '[[:<:]]$table\[[:>:]]'";
	my $r = $node->safe_psql('hello_world', qq{
		SELECT coalesce(sum(calls), 0) || ' ' ||
		       coalesce(sum(rows) FILTER (WHERE query ~* 'select'), 0) || ' ' ||
		       coalesce(sum(rows) FILTER (WHERE query ~* 'update'), 0)
		FROM pg_stat_statements WHERE $where},
		# as TFB's verifier reads them: logged in as benchmarkdbuser
		extra_params => [ '-U', 'benchmarkdbuser' ]);
	return split / /, $r;
}

# TFB's verify_queries_count, with C requests instead of 512: below the
# expected figure fails, above 1.05 times it warns (a failure here too).
sub check_counts
{
	my (%a) = @_;
	my $c = 64;
	my @before = world_counts($a{table});
	my $conn = http_connect();
	my $bad = 0;
	for (1 .. $c)
	{
		my $res = http_get($a{path}, $a{kind}, $conn);
		$bad++ unless $res->{status} == 200;
	}
	my @after = world_counts($a{table});
	my ($queries, $rows, $updated) = map { $after[$_] - $before[$_] } 0 .. 2;
	my $what = "$a{path} x $c";
	is($bad, 0, "$what: every request answered 200");

	my $expect_queries = $a{queries} * $c;
	my $bulk = 0;
	if ($a{update})
	{
		# bulk: N selects plus one update per request, within 0.1 %;
		# otherwise TFB expects one select and one update per row
		my $bulk_queries = ($a{queries} + 1) * $c;
		$bulk = abs($queries - $bulk_queries) <= 0.001 * $bulk_queries;
		$expect_queries = $bulk ? $bulk_queries : 2 * $a{queries} * $c;
	}
	ok($queries >= $expect_queries && $queries <= 1.05 * $expect_queries,
		"$what: $queries statements on $a{table} (expected $expect_queries"
		  . ($a{update} ? ($bulk ? ', bulk updates' : ', one update per row') : '') . ')');
	my $expect_rows = $a{rows} * $c;
	ok($rows >= $expect_rows && $rows <= 1.05 * $expect_rows,
		"$what: $rows rows read (expected $expect_rows)");
	if ($a{update})
	{
		my $expect = $a{queries} * $c;
		my $measured = $bulk ? $updated * 1.05 : $updated;
		ok($measured >= $expect && $updated <= 1.05 * $expect,
			"$what: $updated rows updated (expected $expect)");
	}
}

# ---------------------------------------------------------------------------
# Wait for the workers to serve hello_world.

my $deadline = time + 60;
my $ready;
while (time < $deadline)
{
	$ready = eval { http_get('/plaintext', 'plaintext') };
	last if $ready && $ready->{status} == 200;
	sleep 0.2;
}
ok($ready && $ready->{status} == 200, 'server answers /plaintext') or die 'server not answering';

# ---------------------------------------------------------------------------
# plaintext and json

{
	my $res = http_get('/plaintext', 'plaintext');
	is($res->{status}, 200, '/plaintext: status 200');
	is($res->{body}, 'Hello, World!', '/plaintext: body is exactly Hello, World!');
	check_headers($res, 'plaintext', '/plaintext');

	$res = http_get('/json');
	is($res->{status}, 200, '/json: status 200');
	check_headers($res, 'json', '/json');
	my $obj = decode_json_or_fail($res->{body}, '/json');
	is_deeply($obj, { message => 'Hello, World!' }, '/json: {"message":"Hello, World!"}, key case exact');
	ok(length($res->{body}) <= 32, '/json: about 28 bytes');

	# Serialized inside each request: the handler is evaluated every time
	# (webgres evaluates a row of expressions without the executor, so
	# pg_stat_statements does not see it), never answered from memory.
	my $stats = sub {
		$node->safe_psql('hello_world',
			q{SELECT sum(requests) || ' ' || sum(from_memory) FROM webgres.workers});
	};
	my $conn = http_connect();
	my ($req0, $mem0) = split / /, $stats->();
	http_get('/json', 'json', $conn) for 1 .. 10;
	my ($req1, $mem1) = split / /, $stats->();
	is($req1 - $req0, 10, '/json: ten requests counted');
	is($mem1 - $mem0, 0, '/json: serialized on every request, never answered from memory');
}

# Date is current: it changes after more than a second.
{
	my $first = http_get('/json')->{headers}{date};
	sleep 1.1;
	my $second = http_get('/json')->{headers}{date};
	isnt($second, $first, 'Date changes after a second');
}

# ---------------------------------------------------------------------------
# db: one object per request, a random row each time

{
	my %ids;
	for my $i (1 .. 10)
	{
		my $res = http_get('/db');
		is($res->{status}, 200, "/db #$i: status 200") if $i == 1;
		check_headers($res, 'json', '/db') if $i == 1;
		my $obj = decode_json_or_fail($res->{body}, '/db');
		check_world($obj, "/db #$i");
		$ids{ $obj->{id} } = 1 if ref $obj eq 'HASH';
		if (ref $obj eq 'HASH')
		{
			my $stored = $node->safe_psql('hello_world',
				"SELECT randomnumber FROM world WHERE id = $obj->{id}");
			is($obj->{randomNumber}, $stored, "/db #$i: the row as stored");
		}
	}
	ok(keys %ids > 1, '/db: random ids');
}

# ---------------------------------------------------------------------------
# queries: clamp(queries) objects

check_list_endpoint('/queries', 'queries');

# ---------------------------------------------------------------------------
# fortunes

my $fortunes_page =
    '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>'
  . '<tr><td>11</td><td>&lt;script&gt;alert(&quot;This should not be displayed in a browser alert box.&quot;);&lt;/script&gt;</td></tr>'
  . '<tr><td>4</td><td>A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1</td></tr>'
  . '<tr><td>5</td><td>A computer program does what you tell it to do, not what you want it to do.</td></tr>'
  . '<tr><td>2</td><td>A computer scientist is someone who fixes things that aren&#39;t broken.</td></tr>'
  . "<tr><td>8</td><td>A list is only as strong as its weakest link. \x{2014} Donald Knuth</td></tr>"
  . '<tr><td>0</td><td>Additional fortune added at request time.</td></tr>'
  . '<tr><td>3</td><td>After enough decimal places, nobody gives a damn.</td></tr>'
  . '<tr><td>7</td><td>Any program that runs right is obsolete.</td></tr>'
  . '<tr><td>10</td><td>Computers make very fast, very accurate mistakes.</td></tr>'
  . "<tr><td>6</td><td>Emacs is a nice operating system, but I prefer UNIX. \x{2014} Tom Christaensen</td></tr>"
  . '<tr><td>9</td><td>Feature: A bug with seniority.</td></tr>'
  . '<tr><td>1</td><td>fortune: No such file or directory</td></tr>'
  . "<tr><td>12</td><td>\x{30d5}\x{30ec}\x{30fc}\x{30e0}\x{30ef}\x{30fc}\x{30af}\x{306e}\x{30d9}\x{30f3}\x{30c1}\x{30de}\x{30fc}\x{30af}</td></tr>"
  . '</table></body></html>';
utf8::encode($fortunes_page);

{
	my $res = http_get('/fortunes', 'html');
	is($res->{status}, 200, '/fortunes: status 200');
	check_headers($res, 'html', '/fortunes');
	is($res->{body}, $fortunes_page, '/fortunes: the page, exactly');
	my @ids = $res->{body} =~ m{<tr><td>(\d+)</td>}g;
	is("@ids", '11 4 5 2 8 0 3 7 10 6 9 1 12', '/fortunes: sorted by message in code-point order');
	unlike($res->{body}, qr/<script>/, '/fortunes: messages are escaped');
	my $again = http_get('/fortunes', 'html');
	is($again->{body}, $res->{body}, '/fortunes: the added fortune is not saved');
}

# ---------------------------------------------------------------------------
# cached queries: served from the cache without touching the tables

check_list_endpoint('/cached-queries', 'count');
{
	# warm-up: new connections, so that every worker fills its cache
	http_get('/cached-queries?count=1') for 1 .. 16;
	my $reads = sub {
		$node->safe_psql('hello_world', q{
			SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
			WHERE query ~* '[[:<:]]world[[:>:]]' AND query !~ 'cache_get'});
	};
	my $before = $pgss ? $reads->() : 0;
	my @lists;
	for (1 .. 16)
	{
		my $res = http_get('/cached-queries?count=500');
		my $list = decode_json_or_fail($res->{body}, '/cached-queries');
		push @lists, $list if ref $list eq 'ARRAY';
	}
	SKIP: {
		skip $no_pgss, 1 unless $pgss;
		is($reads->(), $before, '/cached-queries: no statement reads world once the cache is warm');
	}

	# the cached values are the stored ones (nothing was updated yet)
	my $agree = @lists == 16;
	for my $list (@lists)
	{
		my $values = join ',', map { "($_->{id},$_->{randomNumber})" } @$list;
		my $wrong = $node->safe_psql('hello_world', qq{
			SELECT count(*) FROM (VALUES $values) AS c(id, n) LEFT JOIN world USING (id)
			WHERE world.randomnumber IS DISTINCT FROM c.n});
		$agree &&= $wrong == 0;
	}
	ok($agree, '/cached-queries: cached values are the stored rows');
}

# ---------------------------------------------------------------------------
# updates: clamp(queries) rows, new numbers, persisted

check_list_endpoint('/updates', 'queries');
{
	my $res = http_get('/updates?queries=20');
	my $list = decode_json_or_fail($res->{body}, '/updates?queries=20');
	if (ref $list eq 'ARRAY' && @$list == 20)
	{
		my $values = join ',', map { "($_->{id},$_->{randomNumber})" } @$list;
		my $mismatch = $node->safe_psql('hello_world', qq{
			SELECT count(*) FROM (VALUES $values) AS r(id, n) JOIN world USING (id)
			WHERE world.randomnumber <> r.n});
		is($mismatch, 0, '/updates: the returned numbers are stored');
		my %distinct = map { $_->{id} => 1 } @$list;
		is(scalar keys %distinct, 20, '/updates: 20 different rows');
	}
	else
	{
		fail('/updates?queries=20: 20 objects');
	}

	# TFB's own check: after the 501 case, count rows that changed
	$node->safe_psql('hello_world',
		'CREATE TABLE before_update AS SELECT * FROM world');
	$res = http_get('/updates?queries=501');
	my $changed = $node->safe_psql('hello_world', q{
		SELECT count(*) FROM world JOIN before_update b USING (id)
		WHERE world.randomnumber <> b.randomnumber});
	ok($changed > 475, "/updates?queries=501: $changed rows changed (more than 475 of 500)");
	my $range = $node->safe_psql('hello_world',
		'SELECT min(randomnumber) >= 1 AND max(randomnumber) <= 10000 FROM world');
	is($range, 't', '/updates: new numbers in 1..10000');
	$node->safe_psql('hello_world', 'DROP TABLE before_update');

	# An id with no row is neither saved nor returned, and the array keeps
	# no hole for it: the rows around it are still saved and returned.
	my $partial = $node->safe_psql('hello_world', q{
		SET ROLE benchmarkdbuser;
		SELECT update_worlds(ARRAY[7, 10001, 3])});
	my $objects = decode_json_or_fail($partial, 'update_worlds with a missing id');
	is(join(',', map { $_->{id} } @{ ref $objects eq 'ARRAY' ? $objects : [] }), '3,7',
		'update_worlds: an id with no row is left out, the others kept in id order');
	my $stored = $node->safe_psql('hello_world', q{
		SELECT string_agg(id || ':' || randomnumber, ',' ORDER BY id)
		FROM world WHERE id IN (3, 7)});
	is($stored, join(',', map { "$_->{id}:$_->{randomNumber}" }
			@{ ref $objects eq 'ARRAY' ? $objects : [] }),
		'update_worlds: the rows beside a missing id are saved');
}

# ---------------------------------------------------------------------------
# pg_stat_statements counts (TFB verify_queries_count)

SKIP: {
	skip $no_pgss, 13 unless $pgss;
check_counts(path => '/db', table => 'world', queries => 1, rows => 1);
check_counts(path => '/queries?queries=20', table => 'world', queries => 20, rows => 20);
check_counts(path => '/fortunes', kind => 'html', table => 'fortune', queries => 1, rows => 12);
check_counts(path => '/updates?queries=20', table => 'world', queries => 20, rows => 20,
	update => 1);
}

# ---------------------------------------------------------------------------
# pipelining, keep-alive, routing

{
	my $conn = http_connect();
	syswrite($conn->{sock}, request_text('/plaintext', 'plaintext') x 16);
	my $ok = 0;
	for (1 .. 16)
	{
		my $res = try_read_response($conn);
		$ok++ if $res->{status} == 200 && $res->{body} eq 'Hello, World!';
	}
	is($ok, 16, '16 pipelined /plaintext requests on one connection answered');

	# in order: each answer matches its request
	my @paths = map { ("/queries?queries=$_", '/plaintext', '/json') } 1 .. 6;
	@paths = @paths[ 0 .. 15 ];
	syswrite($conn->{sock}, join '', map { request_text($_) } @paths);
	my $in_order = 1;
	for my $path (@paths)
	{
		my $res = try_read_response($conn);
		if ($path =~ /queries=(\d+)/)
		{
			my $list = eval { decode_json($res->{body}) };
			$in_order &&= ref $list eq 'ARRAY' && @$list == $1;
		}
		elsif ($path eq '/plaintext')
		{
			$in_order &&= $res->{body} eq 'Hello, World!';
		}
		else
		{
			$in_order &&= $res->{body} =~ /"message"/;
		}
	}
	ok($in_order, '16 pipelined mixed requests answered in order');

	my $res = http_get('/json', 'json', $conn);
	is($res->{status}, 200, 'the connection is kept alive after pipelining');
	$res = http_get('/no-such-route', 'json', $conn);
	is($res->{status}, 404, 'an unknown path is 404');
}

$node->stop;
done_testing();
