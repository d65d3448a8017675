# WebSocket routes, spoken to by a client on a raw socket (WsClient.pm):
# the handshake's accept key, messages echoed through SQL handlers (on the
# worker or executors) as the route's owner or the token's role with its
# claims, each reply in one write, what a handler sets ending with its
# message, the open handler's refusals and first message, the close
# handler, the
# upgrade's refusals (no key 400, bad version 426, foreign Origin 403, no
# token 401), NOTIFY delivered as messages, and a slow message handler
# that holds up neither another socket nor HTTP on the same worker.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;
use WsClient;

my $secret = 'the-test-secret-of-at-least-32-bytes!';
my $r;
my $node = WebgresTest->new_node('websocket', workers => 1, conf => <<"EOC");
webgres.jwt_secret = '$secret'
webgres.executors = 2
webgres.cors_allowed_origins = 'https://app.example'
EOC
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE alice;
	GRANT alice TO authenticator;
	GRANT USAGE ON SCHEMA webgres TO authenticator;
	GRANT INSERT, SELECT, UPDATE, DELETE ON webgres.routes TO authenticator;
	CREATE TABLE ws_log (conn bigint, what text, who text, at timestamptz DEFAULT now());
	GRANT ALL ON ws_log TO PUBLIC;
	CREATE TABLE rooms (name text PRIMARY KEY, closed bool DEFAULT false);
	INSERT INTO rooms VALUES ('lobby', false), ('attic', true);
	GRANT SELECT ON rooms TO PUBLIC;
	CREATE TABLE gate (n int);
	INSERT INTO gate VALUES (3);
	GRANT SELECT ON gate TO PUBLIC;
});

# Adds a WebSocket route owned by authenticator.
sub ws_route
{
	my ($path, $open, $message, $close, %o) = @_;
	my $auth = $o{auth} // 'none';
	my $q = sub { defined $_[0] ? "\$h\$$_[0]\$h\$" : 'NULL' };
	$node->safe_psql('postgres', qq{
		SET ROLE authenticator;
		INSERT INTO webgres.routes (method, path, handler, upgrade, on_message, on_close, auth, owner)
		VALUES ('GET', '$path', @{[ $q->($open) ]}, 'websocket', @{[ $q->($message) ]},
		        @{[ $q->($close) ]}, '$auth', 'authenticator')});
}

ws_route('/echo', q{SELECT 'hello ' || current_user AS body},
	q{SELECT 'echo: ' || coalesce($2, encode($3, 'hex'))},
	q{INSERT INTO ws_log (conn, what, who) VALUES ($1, 'closed ' || $2, current_user)});
ws_route('/bin', q{SELECT NULL::text AS body}, q{SELECT coalesce($3, convert_to($2, 'UTF8')) || '\x00ff'::bytea});
ws_route('/who', q{SELECT NULL AS body},
	q{SELECT current_user || ' ' || (current_setting('request.jwt.claims', true)::jsonb->>'sub')
	        || ' ' || ($1 = current_setting('request.websocket_id')::bigint)::text},
	undef, auth => 'required');
ws_route('/room/:name', q{
	SELECT CASE WHEN r.name IS NULL THEN 404 WHEN r.closed THEN 403 END AS status,
	       ARRAY['room_' || (request.params->>'name')] AS channels,
	       'welcome to ' || (request.params->>'name') AS body
	FROM request LEFT JOIN rooms r ON r.name = request.params->>'name'},
	q{SELECT pg_notify('room_lobby', $2) WHERE false});
ws_route('/slow', q{SELECT NULL AS body}, q{SELECT 'waited ' || $2 || ' ' || n FROM gate});
WebgresTest::add_route($node, 'GET', '/ping', q{SELECT 'pong' AS body});
WebgresTest::wait_for_status($port, '/ping', 200);

# ---- handshake and echo ----
my $c = WsClient->open($port, '/echo');
is($c->{status}, 101, 'the upgrade is answered 101 Switching Protocols');
is($c->{headers}{'sec-websocket-accept'}, WsClient::accept_for($c->{key}),
	'Sec-WebSocket-Accept is the SHA-1 of the key and the GUID (RFC 6455 4.2.2)');
like($c->{headers}{upgrade} // '', qr/^websocket$/i, 'Upgrade: websocket');
is($c->{headers}{server}, 'webgres', 'Server: webgres on the 101 too, which libh2o writes past the filters');
ok(!exists $c->{headers}{'sec-websocket-extensions'}, 'no extension (permessage-deflate) is offered');
my $f = $c->next_message;
is($f->{payload}, 'hello authenticator', "the open handler's body is the first message, as the owner");
ok(!$f->{masked}, 'server frames are not masked');
$c->send_text('héllo');
$f = $c->next_message;
is($f->{opcode}, 1, 'a text reply');
is($f->{payload}, "echo: h\xc3\xa9llo", 'the message handler got the text as $2 and its row came back');
$c->send_text("m$_") for 1 .. 20;
my @got = map { ($c->next_message // {})->{payload} // '' } 1 .. 20;
is_deeply(\@got, [map { "echo: m$_" } 1 .. 20], 'messages of one socket are handled in order');

# A reply goes out in one write (frame header and payload together, as
# one TCP segment), not one write for each: the worker's count of write
# system calls (/proc/PID/io, syscw) grows by about one per message.
my ($worker) = WebgresTest::worker_pids($node);
sub write_calls
{
	open my $io, '<', "/proc/$worker/io" or die "/proc/$worker/io: $!";
	my ($n) = join('', <$io>) =~ /^syscw:\s*(\d+)/m;
	return $n;
}
my $writes = write_calls();
for my $i (1 .. 100)
{
	$c->send_text("w$i");
	($c->next_message // {})->{payload} eq "echo: w$i" or last;
}
$writes = write_calls() - $writes;
cmp_ok($writes, '<', 150, "100 replies take about 100 writes ($writes), not two each");
$c->send_close(1000, 'bye');
is($c->wait_close, 1000, 'the close is echoed with its code');
ok($c->wait_eof, 'then the server closes the connection');
ok(WebgresTest::poll_until(sub {
	$node->safe_psql('postgres', q{SELECT who || ' ' || what FROM ws_log}) eq 'authenticator closed 1000' }),
	'on_close ran once, as the owner, with the close code');

# binary messages come as bytea and a bytea column goes back binary
$c = WsClient->open($port, '/bin');
$c->send_binary("\x01\x02");
$f = $c->next_message;
is($f->{opcode}, 2, 'a bytea result is sent as a binary message');
is($f->{payload}, "\x01\x02\x00\xff", 'binary messages reach the handler as $3 (bytea)');
$c->send_close(1000);
$c->wait_close;

# Each executor keeps a message handler's plan: a table dropped and made
# again with another type between two messages is planned afresh, and two
# routes with the same statement but other search_paths each read their
# own schema's table (Postgres' plan cache revalidates kept plans).
$node->safe_psql('postgres', q{
	CREATE TABLE ws_kept (v int); INSERT INTO ws_kept VALUES (1);
	GRANT SELECT ON ws_kept TO PUBLIC;
	CREATE SCHEMA ws_a; CREATE SCHEMA ws_b;
	CREATE TABLE ws_a.t (v text); INSERT INTO ws_a.t VALUES ('from a');
	CREATE TABLE ws_b.t (v text); INSERT INTO ws_b.t VALUES ('from b');
	GRANT USAGE ON SCHEMA ws_a, ws_b TO PUBLIC;
	GRANT SELECT ON ws_a.t, ws_b.t TO PUBLIC;
	SET ROLE authenticator;
	INSERT INTO webgres.routes (method, path, handler, upgrade, on_message, owner, search_path)
	VALUES ('GET', '/kept', 'SELECT NULL AS body', 'websocket',
	        $h$SELECT CASE $2 WHEN 'path' THEN (SELECT v FROM t) ELSE (SELECT v::text FROM public.ws_kept) END$h$,
	        'authenticator', 'ws_a, public'),
	       ('GET', '/kept_b', 'SELECT NULL AS body', 'websocket',
	        $h$SELECT CASE $2 WHEN 'path' THEN (SELECT v FROM t) ELSE (SELECT v::text FROM public.ws_kept) END$h$,
	        'authenticator', 'ws_b, public')});
WebgresTest::poll_until(sub { WsClient->open($port, '/kept_b')->{status} == 101 });
$c = WsClient->open($port, '/kept');
$c->send_text('x') for 1 .. 8;
@got = map { ($c->next_message // {})->{payload} // '' } 1 .. 8;
is_deeply(\@got, [('1') x 8], 'a kept handler plan answers message after message');
$node->safe_psql('postgres', q{
	DROP TABLE ws_kept; CREATE TABLE ws_kept (v text); INSERT INTO ws_kept VALUES ('two');
	GRANT SELECT ON ws_kept TO PUBLIC});
$c->send_text('x');
is(($c->next_message // {})->{payload}, 'two', '... and is planned again after its table is replaced');
my %from;
for my $path ('/kept', '/kept_b', '/kept', '/kept_b')
{
	my $k = WsClient->open($port, $path);
	$k->send_text('path') for 1 .. 3;
	push @{ $from{$path} }, map { ($k->next_message // {})->{payload} // '' } 1 .. 3;
	$k->send_close(1000);
	$k->wait_close;
}
$c->send_close(1000);
$c->wait_close;
is_deeply(\%from, { '/kept' => [('from a') x 6], '/kept_b' => [('from b') x 6] },
	'the same statement under two search_paths reads each its own table');

# ---- refusals of the upgrade ----
$c = WsClient->open($port, '/echo', no_key => 1);
is($c->{status}, 400, 'no Sec-WebSocket-Key: 400');
$c = WsClient->open($port, '/echo', key => 'short');
is($c->{status}, 400, 'a key that is not 16 bytes in base64: 400');
$c = WsClient->open($port, '/echo', version => 8);
is($c->{status}, 426, 'another version: 426');
is($c->{headers}{'sec-websocket-version'}, '13', 'naming version 13');
$c = WsClient->open($port, '/echo', no_upgrade => 1);
is($c->{status}, 426, 'a plain GET of a WebSocket route: 426 Upgrade Required');
$c = WsClient->open($port, '/echo', origin => 'https://evil.example');
is($c->{status}, 403, 'an Origin neither the server nor the CORS settings allow: 403 (CSRF)');
$c = WsClient->open($port, '/echo', origin => 'https://app.example');
is($c->{status}, 101, 'an Origin the CORS settings allow is upgraded');
$c = WsClient->open($port, '/echo', origin => "http://127.0.0.1:$port");
is($c->{status}, 101, "the server's own origin is upgraded");
$c = WsClient->open($port, '/who');
is($c->{status}, 401, 'a route with auth required and no token: 401');
$node->safe_psql('postgres', q{UPDATE webgres.routes SET rate_limit = 0.01, rate_burst = 0 WHERE path = '/bin'});
WebgresTest::poll_until(sub { WsClient->open($port, '/bin')->{status} == 429 });
is(WsClient->open($port, '/bin')->{status}, 429, "the route's rate limit applies to the upgrade: 429");
$c = WsClient->open($port, '/room/attic');
is($c->{status}, 403, 'the open handler refuses with its status');
$c = WsClient->open($port, '/room/cellar');
is($c->{status}, 404, '... or any other');
$node->psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, upgrade)
	VALUES ('POST', '/x', 'SELECT 1', 'websocket')}, stderr => \my $err);
like($err, qr/routes_upgrade_method_check/, 'a WebSocket route must be a GET route');
$node->psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, upgrade, mode)
	VALUES ('GET', '/x', 'SELECT 1', 'websocket', 'stream')}, stderr => \$err);
like($err, qr/routes_upgrade_method_check/, '... not in mode stream');
$node->psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, upgrade, on_message)
	VALUES ('GET', '/x', 'SELECT 1', 'websocket', 'SELECT nosuchcolumn')}, stderr => \$err);
like($err, qr/nosuchcolumn/, 'on_message is checked when the route is saved');
$node->psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, on_message)
	VALUES ('GET', '/x', 'SELECT 1 AS body', 'SELECT 1')}, stderr => \$err);
like($err, qr/routes_upgrade_handlers_check/, 'only a WebSocket route has on_message');

# ---- OpenAPI marks upgrade routes ----
is($node->safe_psql('postgres', q{
	SELECT concat_ws(' ', o->>'x-webgres-upgrade', o->'responses' ? '101', o->'responses' ? '200')
	FROM webgres.openapi() AS d, jsonb_extract_path(d, 'paths', '/echo', 'get') AS o}),
	'websocket t f', 'OpenAPI marks a WebSocket route (x-webgres-upgrade, 101)');
is($node->safe_psql('postgres', q{
	SELECT webgres.openapi() #> '{paths,/ping,get}' ? 'x-webgres-upgrade'}),
	'f', '... and no other');

# What a message handler sets, even for the session, ends with its
# message, as an HTTP handler's changes end with its request: neither the
# socket's next message nor an HTTP request the same worker serves after
# it sees it (a forged request.jwt.claims among them).  Both routes run on
# the worker's loop.
$node->safe_psql('postgres', q{
	SET ROLE authenticator;
	INSERT INTO webgres.routes (method, path, handler, upgrade, on_message, owner, mode)
	VALUES ('GET', '/setter', 'SELECT NULL AS body', 'websocket',
	        $h$SELECT coalesce(nullif(current_setting('app.note', true), ''), 'none')
	                  || ' ' || set_config('app.note', $2, false)
	                  || ' ' || set_config('request.jwt.claims', '{"role":"forged"}', false)$h$,
	        'authenticator', 'inline');
	INSERT INTO webgres.routes (method, path, handler, owner, mode)
	VALUES ('GET', '/claims', $h$SELECT 'claims:' || coalesce(current_setting('request.jwt.claims', true), '')
	                                    || ' note:' || coalesce(current_setting('app.note', true), '') AS body$h$,
	        'authenticator', 'inline')});
WebgresTest::wait_for_status($port, '/claims', 200);
$c = WsClient->open($port, '/setter');
$c->send_text('first');
like(($c->next_message // {})->{payload} // '', qr/^none first /, 'a handler sets app.note for the session');
$c->send_text('second');
like(($c->next_message // {})->{payload} // '', qr/^none second /,
	"the socket's next message does not see it");
$r = WebgresTest::http_get($port, '/claims');
is($r->{body}, 'claims: note:', 'nor does a later HTTP request, whose claims are not the forged ones');
$c->send_close(1000);
$c->wait_close;

# ---- roles and claims ----
my $token = $node->safe_psql('postgres',
	q{SELECT webgres.jwt_sign('{"role":"alice","sub":"u1"}', '1 hour')});
$c = WsClient->open($port, '/who', headers => { Authorization => "Bearer $token" });
is($c->{status}, 101, 'a valid token opens the socket');
$c->send_text('x');
is(($c->next_message // {})->{payload}, 'alice u1 true',
	"messages run as the token's role, with request.jwt.claims and the connection's id");
$c->send_close(1000);
$c->wait_close;
$c = WsClient->open($port, '/who', headers => { Authorization => "Bearer $token" });
$node->safe_psql('postgres', 'REVOKE alice FROM authenticator');
is($c->wait_close(10), 1008, "closed with 1008 once the owner may no longer become the token's role");
$node->safe_psql('postgres', 'GRANT alice TO authenticator');
$c = WsClient->open($port, '/who', headers => { Authorization => "Bearer $token" });
is($c->{status}, 101, 'open again once it may');
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.jwt_secret = 'another-test-secret-of-at-least-32-bytes!';
	SELECT pg_reload_conf()});
is($c->wait_close(10), 1008, 'closed with 1008 once the secret that signed its token changes');

# ---- NOTIFY to the socket ----
$c = WsClient->open($port, '/room/lobby');
is(($c->next_message // {})->{payload}, 'welcome to lobby', 'the first message');
$node->safe_psql('postgres', q{NOTIFY room_lobby, 'one'; NOTIFY room_other, 'not for us'});
$node->safe_psql('postgres', q{NOTIFY room_lobby, '{"data":"two","id":"7"}'});
is(($c->next_message // {})->{payload}, 'one', 'a notification on its channel becomes a message');
is(($c->next_message // {})->{payload}, 'two', "an envelope's data is the message");
$c->send_close(1000);
$c->wait_close;

# ---- a slow handler holds up neither HTTP nor another socket ----
# The message handler waits for a lock on gate that a session here holds:
# it runs until that session commits, however long the rest takes.
my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
my $waiting = q{SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = 'gate'::regclass};
my $slow = WsClient->open($port, '/slow');
$slow->send_text('for the gate');
ok(WebgresTest::poll_until(sub { $node->safe_psql('postgres', $waiting) == 1 }),
	'the slow message handler is running (waiting for the lock)');
my $other = WsClient->open($port, '/echo');
is(($other->next_message // {})->{payload}, 'hello authenticator', 'another socket opens meanwhile');
$other->send_text('quick');
is(($other->next_message // {})->{payload}, 'echo: quick', 'and is answered meanwhile');
$r = WebgresTest::http_get($port, '/ping');
is($r->{body}, 'pong', 'HTTP is served meanwhile');
is($node->safe_psql('postgres', $waiting), '1', 'all while the slow handler still runs');
$gate->query_safe('COMMIT');
$gate->quit;
is(($slow->next_message(30) // {})->{payload}, 'waited for the gate 3', 'the slow handler answers in the end');

done_testing();
