# The CSRF rule on executors: a cookie-authenticated POST from the
# server's own origin is accepted whether the route runs on the event loop
# or on an executor.  The executor rebuilds the request from the hand-off
# frame, which must carry the host the client named (HTTP/1.1's Host, or
# HTTP/2's :authority): without it the server's own origin read as
# "http://" and every such request was refused 403.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $secret = 'a-secret-of-at-least-thirty-two-bytes-0123456789';
my $node = WebgresTest->new_node('auth_exec', workers => 1,
	conf => "webgres.jwt_secret = '$secret'\nwebgres.jwt_cookie = 'session'\nwebgres.executors = 1\n");
my $port = $node->{webgres_port};
$node->safe_psql('postgres', q{
	CREATE ROLE app_user;
	CREATE ROLE app_api NOINHERIT;
	GRANT app_user TO app_api;
	CREATE TABLE notes (body text);
	GRANT INSERT ON notes TO app_user;
	INSERT INTO webgres.routes (method, path, auth, owner, mode, handler) VALUES
	 ('POST', '/loop', 'required', 'app_api', 'inline',
	  $$INSERT INTO notes SELECT 'loop' FROM request RETURNING 201 AS status$$),
	 ('POST', '/exec', 'required', 'app_api', 'executor',
	  $$INSERT INTO notes SELECT 'exec' FROM request RETURNING 201 AS status$$);
});
my $token = $node->safe_psql('postgres',
	q{SELECT webgres.jwt_sign('{"role": "app_user", "sub": "1"}', interval '1 hour')});

for my $path ('/loop', '/exec')
{
	my %h = (Cookie => "session=$token");
	my $res = WebgresTest::wait_for_status($port, '/nothing', 404);
	$res = WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => "http://127.0.0.1:$port" });
	is($res->{status}, 201, "$path: a cookie POST from the server's own origin is accepted");
	$res = WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => 'http://elsewhere.example' });
	is($res->{status}, 403, "$path: from another origin it is refused");
}
is($node->safe_psql('postgres', q{SELECT string_agg(body, ',' ORDER BY body) FROM notes}),
	'exec,loop', 'one write each, from the accepted requests only');

$node->stop;
done_testing();
