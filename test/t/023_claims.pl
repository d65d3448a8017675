# What the README promises about handlers and responses, checked over the
# wire: the headers a handler may not set, request cookies joined with
# "; ", the SQLSTATE to HTTP status table, MERGE handlers, and who may read
# webgres.workers.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('claims', workers => 1);
my $port = $node->{webgres_port};

# ---- headers webgres owns: 500, logged with the route, never sent ----
my %reserved = (
	'Transfer-Encoding' => 'chunked',
	'Connection'        => 'upgrade',
	'Keep-Alive'        => 'timeout=99',
	'Upgrade'           => 'websocket',
	'Date'              => 'Thu, 01 Jan 1970 00:00:00 GMT',
	'dAtE'              => 'Thu, 01 Jan 1970 00:00:00 GMT',
);
my $n = 0;
for my $name (sort keys %reserved)
{
	$n++;
	WebgresTest::add_route($node, 'GET', "/reserved/$n",
		"SELECT 'x' AS body, jsonb_build_object('$name', '$reserved{$name}') AS headers");
}
WebgresTest::add_route($node, 'GET', '/allowed', q{SELECT 'x' AS body, '{"X-Fine": "yes"}'::jsonb AS headers});
is(WebgresTest::wait_for_status($port, '/allowed', 200)->{headers}{'x-fine'}, 'yes', 'another header is sent');
$n = 0;
for my $name (sort keys %reserved)
{
	$n++;
	my $offset = -s $node->logfile;
	my $res = WebgresTest::raw($port, "GET /reserved/$n HTTP/1.1\r\nHost: h\r\n\r\n");
	is($res->{status}, 500, "a handler setting $name: 500");
	my @sent = grep { lc $_->[0] eq lc $name } @{ $res->{raw_headers} };
	ok(!grep({ $_->[1] eq $reserved{$name} } @sent), "$name: the handler's value is never sent");
	# Waited for only when refused: wait_for_log would die, not fail.
	ok($res->{status} == 500
		  && $node->wait_for_log(qr/handlers cannot set the "\Q$name\E" header/, $offset), "$name: logged");
	like(slurp_file($node->logfile, $offset), qr{GET /reserved/$n}, "$name: the log line names the route");
}

# ---- request cookies: several Cookie headers joined with "; " ----
WebgresTest::add_route($node, 'GET', '/headers', q{
	SELECT coalesce(request.headers->>'cookie', '-') || '|' || coalesce(request.headers->>'x-many', '-') AS body
	FROM request});
WebgresTest::wait_for_status($port, '/headers', 200);
my $res = WebgresTest::raw($port, "GET /headers HTTP/1.1\r\nHost: h\r\nCookie: a=1\r\nX-Many: p\r\n"
	  . "Cookie: b=2; c=3\r\nX-Many: q\r\n\r\n");
is($res->{body}, 'a=1; b=2; c=3|p, q', 'Cookie headers joined with "; ", other repeated headers with ", "');

# ---- SQLSTATEs to statuses ----
$node->safe_psql('postgres', q{
	CREATE FUNCTION raise_code(code text) RETURNS text LANGUAGE plpgsql
		AS $$BEGIN RAISE EXCEPTION 'raised %', code USING ERRCODE = code; END$$;
});
WebgresTest::add_route($node, 'GET', '/raise/:code',
	q{SELECT raise_code(request.params->>'code') AS body FROM request});
WebgresTest::wait_for_status($port, '/raise/WG200', 200);
my %status = (
	'23505' => 409, '23503' => 409, '23P01' => 409,
	'22012' => 400, '23514' => 400, '23502' => 400,
	'42501' => 403, '28000' => 403, '28P01' => 403, '0L000' => 403, '0LP01' => 403, '0P000' => 403,
	# Query canceled before webgres.handler_timeout ran out: cancelled from
	# outside, not by the timeout (504, in t/002_errors.pl).
	'57014' => 503,
	'40001' => 503, '40P01' => 503, '55P03' => 503, '25006' => 503,
	'08000' => 503, '08006' => 503, '53000' => 503, '53100' => 503, '53200' => 503, '53300' => 503,
	'57P01' => 503, '57P03' => 503,
	'WG410' => 410, 'WG299' => 299, 'XX000' => 500, '42P01' => 500, 'P0001' => 500,
);
for my $code (sort keys %status)
{
	my $r = WebgresTest::http_get($port, "/raise/$code");
	is($r->{status}, $status{$code}, "SQLSTATE $code: $status{$code}");
}
like(WebgresTest::http_get($port, '/raise/23P01')->{body}, qr/^raised 23P01\n?$/, 'a 409 carries the message');
like(WebgresTest::http_get($port, '/raise/53200')->{body}, qr/^Service Unavailable\n?$/, 'a 503 only the reason phrase');

# ---- MERGE: accepted as a statement, refused without rows to answer ----
# PostgreSQL 15's MERGE has no RETURNING, so it cannot shape a response: the
# route is refused when it is saved, with the reason.
$node->safe_psql('postgres', q{CREATE TABLE stock (item text PRIMARY KEY, qty int)});
my ($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO webgres.routes (method, path, handler) VALUES
	('POST', '/stock/:item', $$MERGE INTO stock s USING (SELECT request.params->>'item' AS item FROM request) r
	  ON s.item = r.item WHEN MATCHED THEN UPDATE SET qty = s.qty + 1
	  WHEN NOT MATCHED THEN INSERT VALUES (r.item, 1)$$)});
isnt($ret, 0, 'a MERGE handler is refused when saved');
like($err, qr/handler returns no rows/, 'because it returns no rows');
unlike($err, qr/must be a SELECT, VALUES, INSERT, UPDATE, DELETE or MERGE/, 'not because it is a MERGE');

# ---- webgres.workers: pg_monitor may read it, others may not ----
$node->safe_psql('postgres', q{
	CREATE ROLE watcher LOGIN; GRANT pg_monitor TO watcher;
	CREATE ROLE stranger LOGIN;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM webgres.workers', extra_params => [ '-U', 'watcher' ]),
	1, 'a member of pg_monitor reads webgres.workers');
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM webgres.workers', extra_params => [ '-U', 'stranger' ]);
isnt($ret, 0, 'a role without pg_monitor cannot');
like($err, qr/permission denied for view workers/, 'permission denied');
($ret, $out, $err) = $node->psql('postgres', 'SELECT count(*) FROM webgres.worker_stats()',
	extra_params => [ '-U', 'stranger' ]);
like($err, qr/permission denied for function worker_stats/, 'nor call webgres.worker_stats()');

$node->stop;
done_testing();
