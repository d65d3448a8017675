# Serving routes over HTTP: the tutorial example, the request relation, the
# response columns, routing order, HEAD, 404/405, keep-alive and pipelining.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('serving', workers => 2, conf => "webgres.http2 = on\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE users (handle text PRIMARY KEY, name text);
	INSERT INTO users VALUES ('johndoe', 'John <Doe>');
});
WebgresTest::add_route($node, 'GET', '/users/:handle', q{
	SELECT 'text/html' AS content_type,
	       'Hello, <b>' || webgres.html_escape(u.name) || '</b>!' AS body
	FROM request JOIN users u ON u.handle = request.params->>'handle'});

# The tutorial, exactly.
my $res = WebgresTest::wait_for_status($port, '/users/johndoe', 200);
is($res->{status}, 200, 'tutorial route answers 200');
is($res->{body}, 'Hello, <b>John &lt;Doe&gt;</b>!', 'body is rendered and escaped');
is($res->{headers}{'content-type'}, 'text/html', 'content_type column is used');
is($res->{headers}{'content-length'}, length($res->{body}), 'Content-Length is set');
is($res->{after}, '', 'no bytes on the wire after the Content-Length ones');
ok($res->{closed}, 'Connection: close is honoured');
is($res->{headers}{server}, 'webgres', 'Server header');
like($res->{headers}{date}, qr/^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$/, 'Date header');
is(WebgresTest::http_get($port, '/users/nobody')->{status}, 404, 'zero rows and no other route: 404');
is(WebgresTest::http_get($port, '/nowhere')->{status}, 404, 'no matching path: 404');

# HEAD runs the GET route and sends no body.
$res = WebgresTest::request($port, 'HEAD', '/users/johndoe');
is($res->{status}, 200, 'HEAD answers like GET');
is($res->{headers}{'content-length'}, 31, 'HEAD keeps the Content-Length');

# 405 with Allow.
$res = WebgresTest::request($port, 'DELETE', '/users/johndoe');
is($res->{status}, 405, 'path matches only under other methods: 405');
is($res->{headers}{allow}, 'GET, HEAD', 'Allow lists the methods');

# Default content types from the body's type, and the status column.
WebgresTest::add_route($node, 'GET', '/t/json', q{SELECT json_build_object('a', 1) AS body});
WebgresTest::add_route($node, 'GET', '/t/jsonb', q{SELECT '{"b": [1, 2]}'::jsonb AS body});
WebgresTest::add_route($node, 'GET', '/t/text', q{SELECT 'plain'::text AS body});
WebgresTest::add_route($node, 'GET', '/t/bytea', q{SELECT '\x00ff41'::bytea AS body});
WebgresTest::add_route($node, 'GET', '/t/int', q{SELECT 42 AS body});
WebgresTest::add_route($node, 'GET', '/t/created', q{SELECT 201 AS status, 'made' AS body});
WebgresTest::add_route($node, 'GET', '/t/empty', q{SELECT 204 AS status});
WebgresTest::add_route($node, 'GET', '/t/empty-body', q{SELECT 204 AS status, 'dropped' AS body});
WebgresTest::add_route($node, 'GET', '/t/not-modified', q{SELECT 304 AS status, 'dropped' AS body});
WebgresTest::add_route($node, 'GET', '/t/headers', q{
	SELECT jsonb_build_object('X-One', 'a', 'Set-Cookie', jsonb_build_array('c=1', 'd=2'),
	                          'X-Num', 7, 'X-Null', null) AS headers, 'h' AS body});
WebgresTest::wait_for_status($port, '/t/headers', 200);

$res = WebgresTest::http_get($port, '/t/json');
is($res->{headers}{'content-type'}, 'application/json', 'json body: application/json');
is($res->{body}, '{"a" : 1}', 'json body as built');
$res = WebgresTest::http_get($port, '/t/jsonb');
is($res->{headers}{'content-type'}, 'application/json', 'jsonb body: application/json');
is($res->{body}, '{"b": [1, 2]}', 'jsonb body serialized');
$res = WebgresTest::http_get($port, '/t/text');
is($res->{headers}{'content-type'}, 'text/plain; charset=utf-8', 'text body: text/plain');
$res = WebgresTest::http_get($port, '/t/bytea');
is($res->{headers}{'content-type'}, 'application/octet-stream', 'bytea body: octet-stream');
is($res->{body}, "\x00\xffA", 'bytea body sent as bytes');
is(WebgresTest::http_get($port, '/t/int')->{body}, '42', 'other types use their output function');
$res = WebgresTest::http_get($port, '/t/created');
is($res->{status}, 201, 'status column');
$res = WebgresTest::http_get($port, '/t/empty');
is($res->{status}, 204, 'status without body');
is($res->{body}, '', 'no body');
is($res->{after}, '', 'no bytes on the wire after the 204 head');
ok(!exists $res->{headers}{'content-length'} && !exists $res->{headers}{'transfer-encoding'},
	'204 without Content-Length or Transfer-Encoding');
# A body the handler gives with a 204 or 304 is not sent: a client reads
# none, so it would be taken for the next response on the connection.
for my $path ('/t/empty-body', '/t/not-modified')
{
	my $s = WebgresTest::connect_to($port);
	print $s "GET $path HTTP/1.1\r\nHost: h\r\n\r\nGET /t/int HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
	my ($list, undef, $rest) = WebgresTest::read_responses($s, 2, 30, 0, 1);
	close $s;
	is_deeply([ map { $_->{status} } @$list ], [ $path =~ /empty/ ? 204 : 304, 200 ],
		"$path: its handler's body is not sent, the next response follows its head");
	is($list->[1]{body}, '42', "$path: the next response is whole");
	is($rest, '', "$path: nothing else on the wire");
}
$res = WebgresTest::http_get($port, '/t/headers');
is($res->{headers}{'x-one'}, 'a', 'headers column: string');
is($res->{headers}{'x-num'}, '7', 'headers column: number');
ok(!exists $res->{headers}{'x-null'}, 'headers column: null is skipped');
is(scalar(grep { lc $_->[0] eq 'set-cookie' } @{ $res->{raw_headers} }), 2, 'array value: one header per element');

# The request relation.
WebgresTest::add_route($node, undef, '/echo/:a/:b', q{
	SELECT jsonb_build_object('method', method, 'path', path, 'params', params,
	       'query_string', query_string, 'query', query,
	       'ua', headers->>'user-agent', 'x', headers->>'x-multi',
	       'body', encode(body, 'escape')) AS body
	FROM request});
WebgresTest::add_route($node, 'GET', '/files/*', q{SELECT request.params->>'*' AS body FROM request});
WebgresTest::add_route($node, 'GET', '/named/*rest', q{SELECT request.params->>'rest' AS body FROM request});
WebgresTest::wait_for_status($port, '/files/a', 200);

$res = WebgresTest::raw($port, "POST /echo/caf%C3%A9/x%2Fy?q=a+b&q=%E2%9C%93&k HTTP/1.1\r\nHost: h\r\n"
	  . "User-Agent: tester \t\r\nX-Multi: 1\r\nX-Multi: 2\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
is($res->{status}, 200, 'echo route answers');
my $j = $res->{body};
like($j, qr/"method": "POST"/, 'request.method');
like($j, qr{"path": "/echo/caf%C3%A9/x%2Fy"}, 'request.path is the path as sent, without the query');
like($j, qr/"params": \{"a": "café", "b": "x\/y"\}/, 'request.params: decoded captures');
like($j, qr/"query_string": "q=a\+b&q=%E2%9C%93&k"/, 'request.query_string raw');
like($j, qr/"query": \{"k": "", "q": \["a b", "✓"\]\}/, 'request.query decoded, repeats as array');
like($j, qr/"ua": "tester"/, 'request.headers lower-cased names');
like($j, qr/"x": "1, 2"/, 'repeated headers joined');
like($j, qr/"body": "hello"/, 'request.body');

is(WebgresTest::http_get($port, '/files/a/b/c.txt')->{body}, 'a/b/c.txt', 'trailing * captures the rest');
is(WebgresTest::http_get($port, '/files')->{body}, '', 'trailing * matches nothing too');
is(WebgresTest::http_get($port, '/named/x/y')->{body}, 'x/y', '*name captures under its name');

# Routing order: priority first, then the more specific pattern; zero rows fall through.
WebgresTest::add_route($node, 'GET', '/o/:x', q{SELECT 'param' AS body});
WebgresTest::add_route($node, 'GET', '/o/*', q{SELECT 'rest' AS body});
WebgresTest::add_route($node, 'GET', '/o/lit', q{SELECT 'literal' AS body});
WebgresTest::add_route($node, 'GET', '/p/:x', q{SELECT 'low' AS body});
WebgresTest::add_route($node, 'GET', '/p/:x', q{SELECT 'high' AS body FROM request WHERE request.params->>'x' <> 'skip'}, priority => 10);
WebgresTest::wait_for_status($port, '/p/skip', 200);
is(WebgresTest::http_get($port, '/o/lit')->{body}, 'literal', 'literal before param');
is(WebgresTest::http_get($port, '/o/other')->{body}, 'param', 'param before rest');
is(WebgresTest::http_get($port, '/o/a/b')->{body}, 'rest', 'rest catches deeper paths');
is(WebgresTest::http_get($port, '/p/any')->{body}, 'high', 'higher priority first');
is(WebgresTest::http_get($port, '/p/skip')->{body}, 'low', 'zero rows: next matching route');

# Handlers keep their own WITH, UNION, ORDER BY and data-modifying statements.
$node->safe_psql('postgres', 'CREATE TABLE hits (n int)');
WebgresTest::add_route($node, 'GET', '/cte', q{
	WITH two AS (SELECT 2 AS v) SELECT (SELECT v FROM two) || '-' || method AS body FROM request});
WebgresTest::add_route($node, 'GET', '/union', q{
	SELECT body FROM (SELECT 'b' AS body UNION ALL SELECT 'a') s ORDER BY body LIMIT 1});
WebgresTest::add_route($node, 'POST', '/hits/:n', q{
	INSERT INTO hits SELECT (request.params->>'n')::int FROM request RETURNING 201 AS status, n::text AS body});
WebgresTest::add_route($node, 'GET', '/hits', q{
	WITH ins AS (INSERT INTO hits VALUES (0) RETURNING n) SELECT count(*)::text AS body FROM ins});
WebgresTest::wait_for_status($port, '/cte', 200);
is(WebgresTest::http_get($port, '/cte')->{body}, '2-GET', "handler's own WITH clause");
is(WebgresTest::http_get($port, '/union')->{body}, 'a', 'UNION and ORDER BY');
$res = WebgresTest::request($port, 'POST', '/hits/7');
is($res->{status}, 201, 'INSERT ... RETURNING handler');
is(WebgresTest::http_get($port, '/hits')->{body}, '1', 'data-modifying CTE');
is($node->safe_psql('postgres', 'SELECT string_agg(n::text, \',\' ORDER BY n) FROM hits'), '0,7',
	'writes are committed');

# Bodies up to webgres.max_body_size; larger ones get 413.
$node->append_conf('postgresql.conf', "webgres.max_body_size = 1000\n");
$node->reload;
my $deadline = time() + 20;
do { $res = WebgresTest::request($port, 'POST', '/echo/a/b', body => 'x' x 5000) }
  until $res->{status} == 413 || time() > $deadline;
is($res->{status}, 413, 'body over webgres.max_body_size (after reload): 413');
$res = WebgresTest::request($port, 'POST', '/echo/a/b', body => 'x' x 900);
is($res->{status}, 200, 'body under the limit accepted');

# Keep-alive: several requests on one connection.
my $s = WebgresTest::connect_to($port);
for my $i (1 .. 3)
{
	print $s "GET /users/johndoe HTTP/1.1\r\nHost: h\r\n\r\n";
	my ($r, $closed) = WebgresTest::read_responses($s, 1, 10);
	is($r->[0]{status}, 200, "keep-alive request $i");
	ok(!$closed, "connection still open after request $i");
}
close $s;

# Pipelining: 16 requests in one write, answered in order.
my $batch = join '', map { "GET /echo/$_/x HTTP/1.1\r\nHost: h\r\n\r\n" } 1 .. 16;
my ($list) = WebgresTest::raw($port, $batch, n => 16);
is(scalar(@$list), 16, '16 pipelined requests, 16 responses');
is_deeply([ map { $_->{body} =~ /"a": "(\d+)"/ ? $1 : -1 } @$list ], [ 1 .. 16 ], 'answered in order');

# Cleartext HTTP/2 (webgres.http2, on for this node) goes through the
# same routes.  curl is one of the packages scripts/deps.sh installs.
{
	my $out = `curl -s -i --max-time 10 --http2-prior-knowledge http://127.0.0.1:$port/users/johndoe`;
	like($out, qr{^HTTP/2 200}, 'HTTP/2 with prior knowledge');
	like($out, qr{Hello, <b>John &lt;Doe&gt;</b>!}, 'HTTP/2 body');
}

# A route row changed takes effect without a restart.  /t/text is a
# constant route, which a worker may answer from memory for up to 100 ms
# after its last transaction: poll (as t/003_reload.pl does).
$node->safe_psql('postgres', q{UPDATE webgres.routes SET handler = 'SELECT ''v2'' AS body' WHERE path = '/t/text'});
is(WebgresTest::wait_for_body($port, '/t/text', 'v2')->{body}, 'v2', 'updated handler served without a restart');

$node->stop;
done_testing();
