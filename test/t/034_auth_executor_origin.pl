# The CSRF rule on executors: a cookie-authenticated POST from the
# server's own origin is accepted whether the route runs on the event loop
# or on an executor.  The executor rebuilds the request from the hand-off
# frame, which must carry the host the client named (HTTP/1.1's Host, or
# HTTP/2's :authority): without it the server's own origin read as
# "http://" and every such request was refused 403.  Also the settings
# of the rule: webgres.csrf_trusted_origins and webgres.jwt_cookie are
# checked, and the origins split, once when set.
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

# webgres.csrf_trusted_origins is split into its origins once, by its
# check hook: an entry that is no origin is refused at ALTER SYSTEM (so at
# SET and reload too), not silently never matched by requests.
my ($rc, $out, $err) = $node->psql('postgres',
	q{ALTER SYSTEM SET webgres.csrf_trusted_origins = 'https://app.test, https://app.test/login'});
isnt($rc, 0, 'a trusted origin with a path is refused');
like($err, qr/invalid value for parameter "webgres.csrf_trusted_origins".*entry "https:\/\/app\.test\/login" is not an origin/s,
	'the refusal names the entry');
($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.csrf_trusted_origins = 'https://*.app.test'});
like($err, qr/entry "https:\/\/\*\.app\.test" is not an origin/, 'a * pattern is refused: trusted origins are exact');
($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.jwt_cookie = 'my session'});
like($err, qr/invalid value for parameter "webgres.jwt_cookie".*"my session" is not a cookie name/s,
	'a cookie name with a blank is refused');

# The split list is what requests are checked against, trailing slashes
# passed over as before.
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.csrf_trusted_origins = ' https://app.test/ ,,http://Trusted.example:8443, http://my_app:3000'});
$node->reload;
for my $path ('/loop', '/exec')
{
	my %h = (Cookie => "session=$token");
	ok(WebgresTest::poll_until(sub {
		my $r = WebgresTest::request($port, 'POST', $path, body => 'x',
			headers => { %h, Origin => 'http://trusted.example:8443' });
		$r->{status} == 201;
	}), "$path: a cookie POST from a trusted origin is accepted once reloaded");
	is(WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => 'https://app.test' })->{status}, 201, "$path: the other trusted origin too");
	is(WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => 'http://my_app:3000' })->{status}, 201,
		"$path: a host name with an underscore is an origin too, as it was");
	is(WebgresTest::request($port, 'POST', $path, body => 'x',
		headers => { %h, Origin => 'https://app.test.evil' })->{status}, 403, "$path: a longer origin is not trusted");
}

$node->stop;
done_testing();
