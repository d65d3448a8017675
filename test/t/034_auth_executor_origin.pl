# The CSRF rule on executors: a cookie-authenticated POST from the
# server's own origin is accepted whether the route runs on the event loop
# or on an executor.  The executor rebuilds the request from the hand-off
# frame, which must carry the host the client named (HTTP/1.1's Host, or
# HTTP/2's :authority): without it the server's own origin read as
# "http://" and every such request was refused 403.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $secret = 'a-secret-of-at-least-thirty-two-bytes-0123456789';
my $node = WebgresTest->new_node('auth_exec', workers => 1,
	conf => "webgres.jwt_secret = '$secret'\nwebgres.jwt_cookie = 'session'\nwebgres.executors = 1\n"
	  . "webgres.http2 = on\n");
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

# The routes are loaded once a GET to their paths is 405 (POST only), not 404.
is(WebgresTest::wait_for_status($port, $_, 405)->{status}, 405, "$_ is served") for ('/loop', '/exec');

for my $path ('/loop', '/exec')
{
	my %h = (Cookie => "session=$token");
	my $res = WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => "http://127.0.0.1:$port" });
	is($res->{status}, 201, "$path: a cookie POST from the server's own origin is accepted");
	$res = WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => 'http://elsewhere.example' });
	is($res->{status}, 403, "$path: from another origin it is refused");
	$res = WebgresTest::raw($port, "POST $path HTTP/1.1\r\nHost: elsewhere.example\r\nConnection: close\r\n"
		  . "Cookie: session=$token\r\nOrigin: http://127.0.0.1:$port\r\nContent-Length: 1\r\n\r\nx",
		until_close => 1);
	is($res->{status}, 403, "$path: the origin of another host than the Host named: refused");
}

# HTTP/2 (h2c) names the host in :authority, with no Host header; curl
# turns a Host header it is given into :authority.  Returns "status
# version".
sub h2_post
{
	my ($path, $origin, @extra) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-s', '--max-time', '20', '--http2-prior-knowledge', '-o', '/dev/null',
		'-w', '%{http_code} %{http_version}', '-X', 'POST', '--data', 'x',
		'-H', "Cookie: session=$token", '-H', "Origin: $origin", @extra,
		"http://127.0.0.1:$port$path" ], '<', \undef, '>', \$out, '2>', \$err);
	return $out;
}
for my $path ('/loop', '/exec')
{
	is(h2_post($path, "http://127.0.0.1:$port"), '201 2',
		"$path over HTTP/2: the server's own origin, from :authority, is accepted");
	is(h2_post($path, 'http://elsewhere.example'), '403 2', "$path over HTTP/2: another origin is refused");
	is(h2_post($path, "http://127.0.0.1:$port", '-H', 'Host: elsewhere.example'), '403 2',
		"$path over HTTP/2: the origin of another :authority than the one named: refused");
}
is($node->safe_psql('postgres', q{SELECT string_agg(body, ',' ORDER BY body) FROM notes}),
	'exec,exec,loop,loop', 'one write each, from the accepted requests only');

$node->stop;
done_testing();
