# CORS on the wire, with the requests a browser sends: a preflight then the
# request on one keep-alive connection, with and without credentials, from
# an allowed, a pattern-matched, a wildcard and a disallowed origin.
# Every kind of answer a route gives carries the headers: handler, constant
# route from memory, HEAD, error, 405, executor, stream, event stream. A
# preflight never runs a handler. Settings and their check hooks too.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Select;
use Time::HiRes qw(time sleep);
use WebgresTest;

my $node = WebgresTest->new_node('cors', workers => 1,
	conf => "webgres.executors = 1\nwebgres.sse_heartbeat = 300\nwebgres.http2 = on\n"
	  . "webgres.max_queue = 0\n"
	  . "webgres.cors_allowed_origins = 'http://global.test'\n"
	  # Auto routes stay on the loop under load: on the one executor, with no queue, they could be refused.
	  . "webgres.inline_budget = '60s'\n");
my $port = $node->{webgres_port};
my $app = 'http://app.test:8000';

$node->safe_psql('postgres', q{
	CREATE TABLE items (id serial, name text);
	CREATE TABLE ran (what text);
	GRANT ALL ON items, ran, items_id_seq TO PUBLIC;
});

# Adds a route with extra columns (SQL literals); returns its id.
sub route
{
	my ($method, $path, $handler, %cols) = @_;
	my $names = join '', map { ", $_" } sort keys %cols;
	my $vals = join '', map { ", $cols{$_}" } sort keys %cols;
	my $m = defined $method ? "'$method'" : 'NULL';
	return $node->safe_psql('postgres',
		"INSERT INTO webgres.routes (method, path, handler$names) "
		  . "VALUES ($m, '$path', \$h\$$handler\$h\$$vals) RETURNING id");
}

my %api = (
	cors_allowed_origins => "'{$app,https://*.example.org}'",
	cors_allowed_headers => "'{Content-Type,X-Token}'",
	cors_exposed_headers => "'{X-Total}'",
	cors_allow_credentials => 'true',
	cors_max_age => 600);
route('GET', '/api/items',
	q{SELECT '{"x-total": "2"}'::jsonb AS headers, 'application/json' AS content_type,
	  '[1,2]' AS body}, %api);
route('PUT', '/api/items',
	q{INSERT INTO items (name) SELECT webgres.body_text(body) FROM request RETURNING 'put' AS body},
	%api);
route('GET', '/const', q{SELECT 'constant' AS body}, cors_allowed_origins => "'{$app}'");
route('GET', '/pub', q{SELECT 'public' AS body}, cors_allowed_origins => "'{*}'");
route('GET', '/off', q{SELECT 'off' AS body}, cors_allowed_origins => "'{}'");
route('GET', '/global', q{SELECT 'global' AS body});
route('GET', '/boom', q{SELECT 1 / 0 AS body}, cors_allowed_origins => "'{$app}'");
route(undef, '/exec',
	q{INSERT INTO ran VALUES ('exec') RETURNING 'exec' AS body},
	mode => "'executor'", cors_allowed_origins => "'{$app}'");
route('GET', '/stream', q{SELECT i FROM generate_series(1, 3) i},
	mode => "'stream'", cors_allowed_origins => "'{$app}'");
route('GET', '/events', q{SELECT ARRAY['cors_ch'] AS channels},
	cors_allowed_origins => "'{$app}'");
my $slow_id = route('GET', '/slow', q{SELECT pg_sleep(3)::text || 'slept' AS body},
	mode => "'executor'", max_concurrency => 1, cors_allowed_origins => "'{$app}'");
WebgresTest::wait_for_status($port, '/boom', 400);

# Browser-like request heads (Chrome's order, less what does not matter).
sub head
{
	my ($method, $path, @extra) = @_;
	my $h = "$method $path HTTP/1.1\r\nHost: 127.0.0.1:$port\r\nConnection: keep-alive\r\n";
	while (my ($k, $v) = splice(@extra, 0, 2)) { $h .= "$k: $v\r\n"; }
	return $h;
}

sub preflight
{
	my ($path, $origin, $method, $headers) = @_;
	return head('OPTIONS', $path, 'Accept' => '*/*',
		'Access-Control-Request-Method' => $method,
		defined $headers ? ('Access-Control-Request-Headers' => $headers) : (),
		'Origin' => $origin, 'User-Agent' => 'Mozilla/5.0 (X11; Linux x86_64)',
		'Sec-Fetch-Mode' => 'cors', 'Sec-Fetch-Site' => 'cross-site', 'Sec-Fetch-Dest' => 'empty',
		'Referer' => "$origin/", 'Accept-Encoding' => 'gzip, deflate, br') . "\r\n";
}

# Sends the request heads (and bodies) on one connection; returns the responses.
sub exchange
{
	my @reqs = @_;
	my ($res) = WebgresTest::raw($port, join('', @reqs), n => scalar(@reqs));
	is(scalar(@$res), scalar(@reqs), scalar(@reqs) . ' answer(s) on one connection');
	return @$res;
}

# The Access-Control-* headers of a response, names lower case.
sub acheaders
{
	my ($r) = @_;
	return { map { lc($_->[0]) => $_->[1] } grep { $_->[0] =~ /^access-control-/i } @{ $r->{raw_headers} } };
}

sub varies_on_origin
{
	my ($r) = @_;
	return scalar grep { lc($_->[0]) eq 'vary' && $_->[1] =~ /\bOrigin\b/ } @{ $r->{raw_headers} };
}

# ---- preflight, then the credentialed request, as fetch(..., {credentials: 'include'}) does ----
{
	my ($pre, $put) = exchange(
		preflight('/api/items', $app, 'PUT', 'content-type,x-token'),
		head('PUT', '/api/items', 'Content-Type' => 'application/json', 'X-Token' => 'abc',
			'Origin' => $app, 'Cookie' => 'session=1', 'Sec-Fetch-Mode' => 'cors',
			'Content-Length' => 4) . "\r\nnote");
	is($pre->{status}, 204, 'preflight: 204');
	is_deeply(acheaders($pre), {
		'access-control-allow-origin' => $app,
		'access-control-allow-credentials' => 'true',
		'access-control-allow-methods' => 'PUT',
		'access-control-allow-headers' => 'content-type, x-token',
		'access-control-max-age' => '600' }, 'preflight: the allow headers, origin echoed');
	ok(varies_on_origin($pre), 'preflight: Vary names Origin');
	is($pre->{body}, '', 'preflight: no body');
	is($put->{status}, 200, 'request after the preflight: answered');
	is($put->{body}, "put", '... by its handler');
	is_deeply(acheaders($put), {
		'access-control-allow-origin' => $app,
		'access-control-allow-credentials' => 'true',
		'access-control-expose-headers' => 'x-total' }, '... with the allow headers');
	ok(varies_on_origin($put), '... and Vary: Origin');
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM items'), '1', 'only the request ran its handler');

# ---- a simple GET without preflight; a pattern; case of the origin ----
for my $origin ($app, 'https://eu.api.example.org', 'HTTP://APP.TEST:8000')
{
	my ($get) = exchange(head('GET', '/api/items', 'Origin' => $origin) . "\r\n");
	is(acheaders($get)->{'access-control-allow-origin'}, $origin, "GET from $origin: allowed, echoed");
}
# ---- disallowed origins: no CORS header at all ----
for my $origin ('http://evil.test', 'http://app.test:8001', 'https://example.org',
	'https://evil.com/.example.org', 'null')
{
	my ($pre, $get) = exchange(preflight('/api/items', $origin, 'PUT', 'content-type'),
		head('GET', '/api/items', 'Origin' => $origin) . "\r\n");
	is($pre->{status}, 403, "preflight from $origin: refused");
	is_deeply(acheaders($pre), {}, '... without CORS headers');
	is($get->{status}, 200, "GET from $origin: served (the browser withholds it)");
	is_deeply(acheaders($get), {}, '... without CORS headers');
	ok(varies_on_origin($get), '... but with Vary: Origin');
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM items'), '1', 'refused preflights ran no handler');

# ---- preflights asking for what is not allowed ----
{
	my ($hdr, $none, $get) = exchange(
		preflight('/api/items', $app, 'PUT', 'content-type,x-secret'),
		preflight('/api/items', $app, 'DELETE', undef),
		head('GET', '/api/items') . "\r\n");
	is($hdr->{status}, 403, 'preflight asking for a header not listed: refused');
	is_deeply(acheaders($hdr), {}, '... without CORS headers');
	is($none->{status}, 405, 'preflight for a method no route takes: 405 as usual');
	like($none->{headers}{allow} // '', qr/PUT/, '... with Allow');
	is($get->{status}, 200, 'a request without Origin: served');
	is_deeply(acheaders($get), {}, '... without CORS headers');
	ok(varies_on_origin($get), '... with Vary: Origin (a cache must not reuse it for an origin)');
}

# ---- wildcard: any origin, "*" and never credentials ----
{
	my ($pre, $get) = exchange(preflight('/pub', 'http://anyone.test', 'GET', 'x-custom'),
		head('GET', '/pub', 'Origin' => 'http://anyone.test') . "\r\n");
	is($pre->{status}, 204, 'wildcard preflight: 204');
	is(acheaders($pre)->{'access-control-allow-origin'}, '*', '... Allow-Origin: *');
	is(acheaders($pre)->{'access-control-allow-headers'}, 'x-custom', '... the headers asked for');
	ok(!exists acheaders($pre)->{'access-control-allow-credentials'}, '... no credentials');
	ok(!exists acheaders($pre)->{'access-control-max-age'}, '... no max age (none set)');
	is(acheaders($get)->{'access-control-allow-origin'}, '*', 'wildcard GET: Allow-Origin: *');
}

# ---- the setting, a route that turns it off, and one that sets nothing ----
{
	my ($g, $gbad, $off) = exchange(head('GET', '/global', 'Origin' => 'http://global.test') . "\r\n",
		head('GET', '/global', 'Origin' => $app) . "\r\n",
		head('GET', '/off', 'Origin' => 'http://global.test') . "\r\n");
	is(acheaders($g)->{'access-control-allow-origin'}, 'http://global.test',
		'webgres.cors_allowed_origins applies to a route with NULL columns');
	# No header is also what a 404, a 500 or no answer would carry: the
	# answers must be the routes' own first.
	is("$gbad->{status} $gbad->{body}", '200 global', 'another origin: the route answers');
	is_deeply(acheaders($gbad), {}, '... and only to its origins');
	is("$off->{status} $off->{body}", '200 off', 'a route with an empty cors_allowed_origins answers');
	is_deeply(acheaders($off), {}, 'an empty cors_allowed_origins turns CORS off for the route');
	ok(!varies_on_origin($off), '... entirely: not even Vary');
	my ($opt) = exchange(preflight('/off', 'http://global.test', 'GET', undef));
	is($opt->{status}, 405, '... so a preflight goes the usual way (no OPTIONS route: 405)');
}

# ---- every kind of answer carries them ----
{
	# The constant route's answer is kept in memory after its first run: the
	# second and third come from there, and must be decorated per origin.
	my @r = exchange(map({ head('GET', '/const', 'Origin' => $_) . "\r\n" } $app, $app, 'http://evil.test', $app));
	is(acheaders($_)->{'access-control-allow-origin'}, $app, 'constant route: allowed origin') for @r[0, 1, 3];
	is("$r[2]{status} $r[2]{body}", '200 constant', 'constant route from memory, another origin: answered');
	is_deeply(acheaders($r[2]), {}, '... with nothing for that origin');
	is(scalar(grep { lc($_->[0]) eq 'access-control-allow-origin' } @{ $r[3]{raw_headers} }), 1,
		'constant route from memory: the header once');
	my $from_memory = $node->safe_psql('postgres', 'SELECT sum(from_memory) FROM webgres.workers');
	cmp_ok($from_memory, '>=', 1, '... some of them were answered from memory');

	my $h = WebgresTest::request($port, 'HEAD', '/api/items', headers => { Origin => $app });
	my ($e, $m, $x, $s) = exchange(head('GET', '/boom', 'Origin' => $app) . "\r\n",
		head('POST', '/api/items', 'Origin' => $app, 'Content-Length' => 0) . "\r\n",
		head('GET', '/exec', 'Origin' => $app) . "\r\n",
		head('GET', '/stream', 'Origin' => $app) . "\r\n");
	is(acheaders($h)->{'access-control-allow-origin'}, $app, 'HEAD: allowed origin');
	is($e->{status}, 400, 'handler error (division by zero): 400');
	is(acheaders($e)->{'access-control-allow-origin'}, $app, '... with the allow headers (the page can read the error)');
	is($m->{status}, 405, 'a POST no route takes: 405');
	is(acheaders($m)->{'access-control-allow-origin'}, $app, '... with the allow headers');
	is($x->{body}, 'exec', 'executor route: answered there');
	is(acheaders($x)->{'access-control-allow-origin'}, $app, '... with the allow headers');
	like($s->{body}, qr/^\[\{"i":1\}/, 'streamed route: the rows');
	is(acheaders($s)->{'access-control-allow-origin'}, $app, '... with the allow headers in its head');
	is(scalar(grep { lc($_->[0]) eq 'vary' } @{ $s->{raw_headers} }), 1, '... Vary once');
	my $sh = WebgresTest::request($port, 'HEAD', '/stream', headers => { Origin => $app });
	is(acheaders($sh)->{'access-control-allow-origin'}, $app, 'HEAD of a streamed route: the allow headers');

	# An event stream: its head, then it stays open.
	my $sock = WebgresTest::connect_to($port);
	print $sock head('GET', '/events', 'Origin' => $app, 'Accept' => 'text/event-stream') . "\r\n";
	my $buf = '';
	my $deadline = time + 20;
	my $sel = IO::Select->new($sock);
	while (index($buf, "\r\n\r\n") < 0 && time < $deadline)
	{
		next unless $sel->can_read(0.5);
		last unless sysread($sock, $buf, 4096, length $buf);
	}
	close $sock;
	like($buf, qr{^HTTP/1\.1 200}, 'event stream: opened');
	like($buf, qr{\r\nContent-Type: text/event-stream}i, '... as an event stream');
	like($buf, qr{\r\naccess-control-allow-origin: \Q$app\E\r\n}i, '... with the allow headers in its head');
}

# ---- over HTTP/2 (h2c), where header names travel in lower case ----
{
	my $pre = `curl -s -i --max-time 10 --http2-prior-knowledge -X OPTIONS -H 'Origin: $app' -H 'Access-Control-Request-Method: PUT' -H 'Access-Control-Request-Headers: content-type' http://127.0.0.1:$port/api/items`;
	like($pre, qr{^HTTP/2 204}, 'HTTP/2 preflight: 204');
	like($pre, qr{^access-control-allow-origin: \Q$app\E\r$}m, '... the origin allowed');
	like($pre, qr{^access-control-allow-methods: PUT\r$}m, '... the method');
	my $get = `curl -s -i --max-time 10 --http2-prior-knowledge -H 'Origin: $app' http://127.0.0.1:$port/api/items`;
	like($get, qr{^HTTP/2 200}, 'HTTP/2 GET: 200');
	like($get, qr{^access-control-allow-origin: \Q$app\E\r$}m, '... with the allow headers');
	like($get, qr{^vary: Origin\r$}m, '... and Vary: Origin');
}

# ---- the worker's own answer to a request it handed off: a full queue's 503 ----
{
	my $busy = WebgresTest::connect_to($port);
	print $busy head('GET', '/slow', 'Origin' => $app) . "\r\n";
	my $deadline = time + 30;
	my $running = '';
	while (time < $deadline)
	{
		$running = $node->safe_psql('postgres',
			"SELECT running FROM webgres.route_execution() WHERE route_id = $slow_id");
		last if $running eq '1';
		sleep 0.05;
	}
	is($running, '1', 'a slow executor route runs its one request');
	my ($full) = exchange(head('GET', '/slow', 'Origin' => $app) . "\r\n");
	is($full->{status}, 503, 'the next, with webgres.max_queue = 0: 503 from the worker');
	is(acheaders($full)->{'access-control-allow-origin'}, $app, '... with the allow headers');
	ok(varies_on_origin($full), '... and Vary: Origin');
	my ($res) = WebgresTest::read_responses($busy, 1);
	close $busy;
	is($res->[0]{body}, 'slept', 'the running one is answered');
	is(acheaders($res->[0])->{'access-control-allow-origin'}, $app, '... with the allow headers');
}

# ---- a preflight runs nothing, not even on an executor ----
{
	my ($pre) = exchange(preflight('/exec', $app, 'DELETE', 'content-type'));
	is($pre->{status}, 204, 'preflight of an any-method executor route: 204');
	is(acheaders($pre)->{'access-control-allow-methods'}, 'DELETE', '... the method asked for');
	is($node->safe_psql('postgres', "SELECT count(*) FROM ran"), '1', '... and its handler did not run');
}

# ---- the settings: reload, and credentials never with any origin ----
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.cors_allowed_origins = 'http://other.test, http://*.global.test'});
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.cors_allowed_methods = 'GET, patch'});
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.cors_max_age = '2min'});
$node->reload;
my $deadline = time + 30;
my $got = '';
while (time < $deadline)
{
	my ($r) = exchange(head('GET', '/global', 'Origin' => 'http://a.global.test') . "\r\n");
	$got = acheaders($r)->{'access-control-allow-origin'} // '';
	last if $got eq 'http://a.global.test';
	sleep 0.1;
}
is($got, 'http://a.global.test', 'a reload applies the new origins');
{
	my ($pre, $bad) = exchange(preflight('/global', 'http://other.test', 'GET', undef),
		preflight('/global', 'http://other.test', 'PUT', undef));
	is(acheaders($pre)->{'access-control-allow-methods'}, 'GET, PATCH', 'webgres.cors_allowed_methods listed');
	is(acheaders($pre)->{'access-control-max-age'}, '120', 'webgres.cors_max_age in seconds');
	is($bad->{status}, 405, 'a method no route takes: 405');
}

# Reloads after the ALTER SYSTEMs in $sql, then polls until a GET of $path
# from $origin carries the CORS header $name with the value $want (undef:
# none); returns that answer's CORS headers.
sub reload_cors
{
	my ($sql, $path, $origin, $name, $want) = @_;
	$node->safe_psql('postgres', $sql);
	$node->reload;
	my $deadline = time + 30;
	my $r;
	while (time < $deadline)
	{
		my ($res) = WebgresTest::raw($port, head('GET', $path, 'Origin' => $origin) . "\r\n", n => 1);
		$r = $res->[0] // { status => 0, raw_headers => [] };
		last if ($r->{status} // 0) == 200 && (acheaders($r)->{$name} // "\0") eq ($want // "\0");
		sleep 0.1;
	}
	return $r;
}

# ---- the other settings, for routes whose columns are NULL: headers a
# preflight may ask for, headers a script may read, credentials ----
{
	my $r = reload_cors(q{
		ALTER SYSTEM SET webgres.cors_allowed_headers = 'Content-Type, X-Token';
		ALTER SYSTEM SET webgres.cors_exposed_headers = 'X-Total, X-Page';
		ALTER SYSTEM SET webgres.cors_allow_credentials = on;
	}, '/global', 'http://other.test', 'access-control-allow-credentials', 'true');
	is("$r->{status} $r->{body}", '200 global', 'with the settings, the route answers');
	is_deeply(acheaders($r), {
		'access-control-allow-origin' => 'http://other.test',
		'access-control-allow-credentials' => 'true',
		'access-control-expose-headers' => 'x-total, x-page' },
		'webgres.cors_allow_credentials and webgres.cors_exposed_headers in its answer');
	my ($ok, $no, $pub, $api) = exchange(preflight('/global', 'http://other.test', 'GET', 'content-type,x-token'),
		preflight('/global', 'http://other.test', 'GET', 'content-type,x-secret'),
		head('GET', '/pub', 'Origin' => 'http://other.test') . "\r\n",
		head('GET', '/api/items', 'Origin' => $app) . "\r\n");
	is($ok->{status}, 204, 'a preflight asking for headers webgres.cors_allowed_headers lists: 204');
	is(acheaders($ok)->{'access-control-allow-headers'}, 'content-type, x-token', '... those headers allowed');
	is(acheaders($ok)->{'access-control-allow-credentials'}, 'true', '... with credentials');
	is($no->{status}, 403, 'a preflight asking for a header it does not list: refused');
	is_deeply(acheaders($no), {}, '... without CORS headers');
	is("$pub->{status} $pub->{body}", '200 public', 'a route allowing any origin answers');
	is_deeply(acheaders($pub), { 'access-control-allow-origin' => '*',
			'access-control-expose-headers' => 'x-total, x-page' },
		'... "*" and never credentials, whatever the setting (its other NULL columns take the settings)');
	is(acheaders($api)->{'access-control-expose-headers'}, 'x-total',
		'a route\'s own cors_exposed_headers overrides the setting');
	$r = reload_cors(q{
		ALTER SYSTEM RESET webgres.cors_allowed_headers;
		ALTER SYSTEM RESET webgres.cors_exposed_headers;
		ALTER SYSTEM RESET webgres.cors_allow_credentials;
	}, '/global', 'http://other.test', 'access-control-allow-credentials', undef);
	is_deeply(acheaders($r), { 'access-control-allow-origin' => 'http://other.test' },
		'the settings reset: neither credentials nor exposed headers');
}

my ($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.cors_allowed_origins = 'https://ok.test/path'});
like($err, qr/webgres\.cors_allowed_origins entry "https:\/\/ok\.test\/path" is not an origin/,
	'a malformed origin in the setting: refused, naming the entry');
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.cors_allowed_origins = '*'});
$node->reload;
$deadline = time + 30;
while (time < $deadline)
{
	my ($r) = exchange(head('GET', '/global', 'Origin' => 'http://x.test') . "\r\n");
	last if (acheaders($r)->{'access-control-allow-origin'} // '') eq '*';
	sleep 0.1;
}
($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.cors_allow_credentials = on});
like($err, qr/cannot be on while webgres\.cors_allowed_origins allows any origin/,
	'credentials with any origin in the settings: refused by the check hook');
($rc, $out, $err) = $node->psql('postgres',
	q{INSERT INTO webgres.routes (method, path, handler, cors_allow_credentials) VALUES ('GET', '/cred', 'SELECT 1 AS body', true)});
like($err, qr/a route cannot allow credentials from any origin.*webgres\.cors_allowed_origins holds "\*"/s,
	'a route asking for credentials while the setting allows any origin: refused at save time');

# ---- a row saved around the trigger with a bad entry: warned, no CORS, the rest serves ----
$node->safe_psql('postgres', q{
	SET session_replication_role = replica;
	INSERT INTO webgres.routes (method, path, handler, owner, search_path, cors_allowed_origins)
	VALUES ('GET', '/bad', 'SELECT ''bad'' AS body', current_user::regrole, 'public', '{not-an-origin}');
	-- (the statement trigger that tells the workers did not fire either)
	RESET session_replication_role;
	UPDATE webgres.routes SET priority = priority WHERE path = '/pub';
});
{
	my $r = WebgresTest::wait_for_status($port, '/bad', 200);
	is($r->{body}, "bad", 'a route whose CORS columns are bad is served');
	my ($bad, $good) = exchange(head('GET', '/bad', 'Origin' => $app) . "\r\n",
		head('GET', '/pub', 'Origin' => $app) . "\r\n");
	is_deeply(acheaders($bad), {}, '... without CORS');
	is(acheaders($good)->{'access-control-allow-origin'}, '*', 'the other routes keep theirs');
	ok($node->log_contains('cors_allowed_origins entry "not-an-origin" is not an origin'),
		'the bad entry is logged');
}

# ---- a preflight as a fresh worker's first request: its table not loaded yet ----
$node->restart;
WebgresTest::wait_for_listen($port) or die "webgres did not come back";
{
	# (GET: webgres.cors_allowed_methods, set above, now lists GET and PATCH only)
	my ($pre) = exchange(preflight('/api/items', $app, 'GET', 'content-type'));
	is($pre->{status}, 204, 'first request after a restart, a preflight: 204 (answered in the transaction)');
	is(acheaders($pre)->{'access-control-allow-origin'}, $app, '... with the allow headers');
}

# ---- the worker is fine after all this ----
my ($last) = exchange(head('GET', '/api/items', 'Origin' => $app) . "\r\n");
is($last->{status}, 200, 'the worker keeps serving');

done_testing();
