# The WebSocket protocol (RFC 6455) as a client that breaks it sees it, on
# a raw socket: fragmented messages (with a ping between fragments), ping
# and pong, the server's own pings and its idle timeout (1001), close codes
# for invalid UTF-8 (1007), a NUL in text (1003), a message over
# webgres.websocket_max_message (1009), unmasked frames, reserved bits,
# unknown opcodes, a fragmented ping, a continuation with nothing to
# continue (1002), a client that floods one socket past
# webgres.websocket_max_queue (1013 and a reset), a token that expires
# (1008), a message handler that fails (1011) and a worker that stops
# (1001).  After each, the worker still serves.  Which of these libh2o's
# wslay does and which webgres adds is in docs/websocket.md.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;
use WsClient;

my $node = WebgresTest->new_node('websocket_protocol', workers => 1, conf => <<"EOC");
webgres.jwt_secret = 'the-test-secret-of-at-least-32-bytes!'
webgres.executors = 2
webgres.websocket_max_message = 1024
webgres.websocket_max_queue = 4
webgres.websocket_ping_interval = 1000
webgres.websocket_idle_timeout = 3000
EOC
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, upgrade, on_message, auth) VALUES
	  ('GET', '/echo', 'SELECT NULL::text AS body', 'websocket', $$SELECT $2$$, 'none'),
	  ('GET', '/token', 'SELECT NULL::text AS body', 'websocket', $$SELECT $2$$, 'required'),
	  ('GET', '/slow', 'SELECT NULL::text AS body', 'websocket', $$SELECT $2 FROM pg_sleep(1)$$, 'none'),
	  ('GET', '/fail', 'SELECT NULL::text AS body', 'websocket', $$SELECT (1 / $2::int)::text$$, 'none');
});
WebgresTest::add_route($node, 'GET', '/ping', q{SELECT 'pong' AS body});
WebgresTest::wait_for_status($port, '/ping', 200);

# The worker still answers HTTP.
sub serves
{
	my ($what) = @_;
	my $r = WebgresTest::http_get($port, '/ping');
	is($r->{body}, 'pong', "the worker serves after $what");
}

# A fresh socket on /echo.
sub echo_socket { return WsClient->open($port, '/echo'); }

# ---- fragmentation and control frames ----
my $c = echo_socket();
is($c->{status}, 101, 'upgraded');
$c->send_raw(WsClient::frame(opcode => 1, fin => 0, payload => 'frag'));
$c->send_raw(WsClient::frame(opcode => 9, payload => 'mid'));
$c->send_raw(WsClient::frame(opcode => 0, fin => 0, payload => 'men'));
$c->send_raw(WsClient::frame(opcode => 0, fin => 1, payload => 'ted'));
my $f = $c->next_frame;
is($f->{opcode}, 10, 'a ping between fragments is answered at once with a pong');
is($f->{payload}, 'mid', '... carrying its payload');
is(($c->next_message // {})->{payload}, 'fragmented', 'the fragments reach the handler as one message');
$c->send_raw(WsClient::frame(opcode => 1, fin => 0, payload => "ok \xc3"));
$c->send_raw(WsClient::frame(opcode => 0, fin => 1, payload => "\xa9!"));
is(($c->next_message // {})->{payload}, "ok \xc3\xa9!", 'a character split across fragments is whole again');
$c->send_ping('are you there');
$f = $c->next_frame;
is($f->{opcode}, 10, 'a ping is answered with a pong');
is($f->{payload}, 'are you there', '... with its payload');

# ---- the server pings a silent client and closes one that stays silent ----
$f = $c->next_frame(5);
is($f->{opcode}, 9, 'a silent client is pinged (webgres.websocket_ping_interval)');
my $t0 = time;
is($c->wait_close(10), 1001, 'and closed with 1001 when it never answers (webgres.websocket_idle_timeout)');
ok($c->wait_eof, 'the connection then ends');
$c = echo_socket();
my $deadline = time + 4.5;
while (time < $deadline)
{
	my $g = $c->next_frame(0.5) or next;
	$c->send_raw(WsClient::frame(opcode => 10, payload => $g->{payload})) if $g->{opcode} == 9;
	last if $g->{opcode} == 8;
}
$c->send_text('still here');
is(($c->next_message // {})->{payload}, 'still here', 'a client that answers pings is kept past the idle timeout');

# ---- close codes for broken rules ----
my %bad = (
	'text ending inside a character' => [WsClient::frame(opcode => 1, payload => "ok \xc3"), 1007],
	'invalid UTF-8' => [WsClient::frame(opcode => 1, payload => "\xff\xfe"), 1007],
	'a surrogate in UTF-8' => [WsClient::frame(opcode => 1, payload => "\xed\xa0\x80"), 1007],
	'an overlong encoding' => [WsClient::frame(opcode => 1, payload => "\xc0\xaf"), 1007],
	'a NUL in text' => [WsClient::frame(opcode => 1, payload => "a\x00b"), 1003],
	'a message over the limit' => [WsClient::frame(opcode => 2, payload => 'x' x 1025), 1009],
	'fragments over the limit together' => [
		WsClient::frame(opcode => 2, fin => 0, payload => 'x' x 600)
		  . WsClient::frame(opcode => 0, fin => 1, payload => 'x' x 600), 1009],
	'an unmasked frame' => [WsClient::frame(opcode => 1, payload => 'hi', masked => 0), 1002],
	'reserved bits (no extension was agreed)' => [WsClient::frame(opcode => 1, payload => 'hi', rsv => 4), 1002],
	'an unknown opcode' => [WsClient::frame(opcode => 3, payload => 'hi'), 1002],
	'a fragmented ping' => [WsClient::frame(opcode => 9, fin => 0, payload => 'hi'), -1],
	'a continuation of nothing' => [WsClient::frame(opcode => 0, payload => 'hi'), 1002],
	'a new message inside a fragmented one' => [
		WsClient::frame(opcode => 1, fin => 0, payload => 'a') . WsClient::frame(opcode => 1, payload => 'b'), 1002],
	'a ping over 125 bytes' => [WsClient::frame(opcode => 9, payload => 'p' x 126), -1],
	'a close with a reserved code' => [WsClient::frame(opcode => 8, payload => pack('n', 1005)), 1002],
);
for my $what (sort keys %bad)
{
	my ($bytes, $code) = @{ $bad{$what} };
	my $s = echo_socket();
	$s->send_raw($bytes);
	# -1: dropped without a close frame, which wslay does for a bad control
	# frame's header (RFC 6455 7.1.7 allows either).
	is($s->wait_close(5), $code, $code > 0 ? "$what: closed with $code" : "$what: dropped");
	ok($s->wait_eof(5), "$what: the connection ends");
}
serves('the broken frames');
$c = echo_socket();
$c->send_text('y' x 1024);
is(($c->next_message // {})->{payload}, 'y' x 1024, 'a message of exactly the limit is taken');

# ---- a message handler that fails ----
$c = WsClient->open($port, '/fail');
$c->send_text('1');
is(($c->next_message // {})->{payload}, '1', 'a handler that works answers');
$c->send_text('0');
is($c->wait_close(10), 1011, 'one that fails closes its socket with 1011');
serves('a failing message handler');

# ---- a client that floods one socket past its queue ----
$c = WsClient->open($port, '/slow');
$c->send_text("m$_") for 1 .. 10;
my $code = $c->wait_close(10);
is($code, 1013, 'more messages waiting than webgres.websocket_max_queue: 1013');
ok($c->wait_eof(5), 'and the connection is cut');
serves('a flooded socket');

# ---- a token that expires closes its socket ----
my $token = $node->safe_psql('postgres',
	q{CREATE ROLE alice; GRANT alice TO postgres;
	  SELECT webgres.jwt_sign('{"role":"alice"}', '2 seconds')});
$c = WsClient->open($port, '/token', headers => { Authorization => "Bearer $token" });
is($c->{status}, 101, 'a socket opened with a token that expires soon');
$t0 = time;
my $g;
$deadline = time + 8;
while (time < $deadline)
{
	$g = $c->next_frame(0.5) or next;
	$c->send_raw(WsClient::frame(opcode => 10, payload => $g->{payload})) if $g->{opcode} == 9;
	last if $g->{opcode} == 8;
}
is($g && $g->{opcode} == 8 ? unpack('n', $g->{payload}) : undef, 1008, 'is closed with 1008 when the token expires');

# ---- the close handshake from the server's side ----
$c = echo_socket();
$c->send_close(4000, 'app code');
is($c->wait_close, 4000, "a client's close is echoed with its code");
$c = echo_socket();
$c->send_close();
is($c->wait_close, 1005, 'a close without a code is answered without one');
serves('every test');

# ---- a worker that stops closes its sockets with 1001 ----
$c = echo_socket();
$c->send_text('before');
is(($c->next_message // {})->{payload}, 'before', 'a socket open as the server stops');
$node->stop('fast');
is($c->wait_close(10), 1001, 'is closed with 1001 (going away)');

done_testing();
