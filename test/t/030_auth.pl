# Authentication over the wire: JSON Web Tokens made by an independent
# implementation (PyJWT and cryptography, test/t/jwt_mint.py) choose the
# role a route's handler runs as; bad tokens of every kind are answered
# 401 without detail, the log says why; roles the route owner is not a
# member of are answered 403; keys rotate on reload; tokens come from a
# cookie under the CSRF rule; webgres.jwt_sign issues tokens PyJWT accepts;
# row level security written for PostgREST works unchanged.
use strict;
use warnings;
use FindBin;
use IO::Select;
use JSON::PP;
use PostgreSQL::Test::Utils;
use SseReader;
use Test::More;
use Time::HiRes ();
use WebgresTest;

my $python = $ENV{WEBGRES_PYTHON} // 'python3';
my $mint = "$FindBin::RealBin/jwt_mint.py";
my $secret = 'the-test-secret-of-at-least-32-bytes!';
my $keydir = PostgreSQL::Test::Utils::tempdir();
system($python, $mint, 'keys', $keydir) == 0 or die "could not make keys";
system('cp', "$keydir/jwks.json", "$keydir/keys.json") == 0 or die;

# Tokens from specs, in one run of Python.
sub mint
{
	my @specs = @_;
	my $in = "$keydir/specs.json";
	open my $fh, '>', $in or die;
	print $fh encode_json(\@specs);
	close $fh;
	my @tokens = split /\n/, `$python $mint tokens $keydir < $in`;
	die "minting failed" unless @tokens == @specs;
	return wantarray ? @tokens : $tokens[0];
}

my $node = WebgresTest->new_node('auth', workers => 1, conf => <<"EOC");
webgres.jwt_secret = '$secret'
webgres.jwt_keys_file = '$keydir/keys.json'
webgres.jwt_audience = 'webgres-test'
webgres.jwt_issuer = 'https://issuer.test'
webgres.executors = 1
webgres.share_read_transactions = on
EOC
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE alice;
	CREATE ROLE bob;
	CREATE ROLE web_anon;
	CREATE ROLE webuser;
	CREATE ROLE stranger;
	CREATE ROLE admin SUPERUSER;
	GRANT alice, bob, web_anon, webuser, admin TO authenticator;
});

# Routes owned by the authenticator, one per auth mode.
sub route
{
	my ($method, $path, $auth, $handler, %o) = @_;
	my $mode = $o{mode} // 'auto';
	$node->safe_psql('postgres', qq{
		INSERT INTO webgres.routes (method, path, handler, owner, auth, mode)
		VALUES ('$method', '$path', \$h\$$handler\$h\$, 'authenticator', '$auth', '$mode')});
}
my $who = q{SELECT current_user || ' ' || coalesce(request.claims->>'sub', '-') || ' '
	|| coalesce(current_setting('request.jwt.claims', true)::jsonb->>'sub', '-') AS body FROM request};
route('GET', '/who', 'required', $who);
route('POST', '/who', 'required', $who);
route('GET', '/maybe', 'optional', $who);
route('GET', '/open', 'none', q{SELECT current_user || ' ' || coalesce(request.claims::text, 'null') AS body FROM request});
route('GET', '/constant', 'required', q{SELECT 'constant' AS body});
route('GET', '/open-setting', 'none', q{SELECT coalesce(nullif(current_setting('request.jwt.claims', true), ''), 'unset') AS body});
route('GET', '/fails', 'required', q{SELECT (1 / 0)::text AS body});
route('GET', '/sets', 'required', q{SELECT set_config('request.jwt.claims', '{"sub":"forged"}', false) AS body});
route('GET', '/executor', 'required', $who, mode => 'executor');
route('GET', '/settings', 'required', q{SELECT coalesce(nullif(current_setting('request.method', true), ''), 'unset') || ' '
	|| coalesce(nullif(current_setting('request.path', true), ''), 'unset') || ' '
	|| coalesce(nullif(current_setting('request.headers', true), '')::jsonb->>'x-test', 'unset') || ' '
	|| coalesce(nullif(current_setting('request.cookies', true), '')::jsonb->>'flavour', 'unset') AS body});

my $now = time;
my %base = (aud => 'webgres-test', iss => 'https://issuer.test', exp => $now + 600, iat => $now);
sub claims { return { %base, @_ }; }

sub get
{
	my ($path, $token, %o) = @_;
	my %h = %{ $o{headers} || {} };
	$h{Authorization} = "Bearer $token" if defined $token;
	return WebgresTest::request($port, $o{method} // 'GET', $path, headers => \%h);
}

# ---- valid tokens of every algorithm choose the role ----
my @algs = qw(HS256 HS384 HS512 RS256 RS384 RS512 PS256 PS384 PS512 ES256 ES384 ES512 EdDSA);
my @valid = mint(map { { alg => $_, claims => claims(role => 'alice', sub => "sub-$_") } } @algs);
for my $i (0 .. $#algs)
{
	my $res = get('/who', $valid[$i]);
	is($res->{status}, 200, "$algs[$i]: a valid token is accepted");
	is($res->{body}, "alice sub-$algs[$i] sub-$algs[$i]",
		"$algs[$i]: runs as the token's role, with request.claims and request.jwt.claims");
}
my $alice = $valid[0];
is(get('/who', $alice)->{body}, "alice sub-HS256 sub-HS256", 'the same token again, from the cache');
is(get('/executor', $alice)->{body}, "alice sub-HS256 sub-HS256", 'on an executor too');
my %settings_headers = (headers => { 'X-Test' => 'yes', Cookie => 'flavour=mint' });
is(get('/settings', $alice, %settings_headers)->{body}, 'unset unset unset unset',
	'without webgres.postgrest_request_settings only request.jwt.claims is set');
$node->append_conf('postgresql.conf', "webgres.postgrest_request_settings = on\n");
$node->reload;
my $settings_deadline = time + 30;
while (time < $settings_deadline && get('/settings', $alice, %settings_headers)->{body} =~ /unset/)
{
	select(undef, undef, undef, 0.05);
}
is(get('/settings', $alice, %settings_headers)->{body}, 'GET /settings yes mint',
	'with it, request.method, request.path, request.headers and request.cookies are set');
my $twice = WebgresTest::raw($port, "GET /settings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $alice\r\n"
	  . "X-Test: yes\r\nX-Test: again\r\nCookie: flavour=mint\r\nCookie: flavour=lime\r\nConnection: close\r\n\r\n");
is($twice->{body}, 'GET /settings yes, again lime',
	'request.headers joins a repeated header as the request relation does; the last cookie of a name wins');
$twice = WebgresTest::raw($port, "GET /settings HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $alice\r\n"
	  . "X-Test: caf\xc3\r\nConnection: close\r\n\r\n");
is($twice->{status}, 400, 'a header that is not valid UTF-8: 400, as when a handler reads it');

# ---- no token ----
my $res = get('/who');
is($res->{status}, 401, 'required route without a token: 401');
is($res->{headers}{'www-authenticate'}, 'Bearer', 'with a bare Bearer challenge');
is(get('/maybe')->{status}, 401, 'optional route without a token and no anon_role: 401');
is(get('/open')->{body}, 'authenticator null', 'a route with auth none runs as its owner, claims NULL');
is(get('/open', $alice)->{body}, 'authenticator null', 'and ignores tokens');

# One worker: the claims of one request are gone for the next, however it ended.
is(get('/who', $alice)->{status}, 200, 'a request with claims');
is(get('/open-setting')->{body}, 'unset', 'the next request does not see its request.jwt.claims');
is(get('/fails', $alice)->{status}, 400, 'a handler with claims fails (division by zero: 400)');
is(get('/open-setting')->{body}, 'unset', 'after a failed handler, the claims are gone too');
is(get('/sets', $alice)->{status}, 200, 'a handler sets request.jwt.claims for its session');
is(get('/open-setting')->{body}, 'unset', 'what it set ended with its request');
is(get('/constant')->{status}, 401, 'a constant route with auth is not answered from memory');
is(get('/constant')->{status}, 401, 'not the second time either');
is(get('/constant', $alice)->{body}, 'constant', 'and answers with a token');
is(get('/constant')->{status}, 401, 'and not from memory after that');

# ---- bad tokens: 401 invalid_token, no detail; the log has the reason ----
my $offset = -s $node->logfile;
my @bad = (
	[ 'expired', { alg => 'HS256', claims => claims(role => 'alice', exp => $now - 120) }, qr/expired/ ],
	[ 'not yet valid', { alg => 'HS256', claims => claims(role => 'alice', nbf => $now + 300) }, qr/not valid yet/ ],
	[ 'wrong audience', { alg => 'HS256', claims => claims(role => 'alice', aud => 'other') }, qr/aud/ ],
	[ 'wrong issuer', { alg => 'HS256', claims => claims(role => 'alice', iss => 'https://evil.test') }, qr/iss/ ],
	[ 'wrong signature', { alg => 'HS256', secret => 'another-secret-of-at-least-32-bytes!!', claims => claims(role => 'alice') }, qr/wrong signature/ ],
	[ 'wrong key', { alg => 'ES256', key => 'ec256-rotated', claims => claims(role => 'alice') }, qr/wrong signature/ ],
	[ 'alg none', { forge => 'none', claims => claims(role => 'alice') }, qr/alg is not accepted/ ],
	[ 'algorithm confusion', { forge => 'confusion', claims => claims(role => 'alice') }, qr/wrong signature/ ],
	[ 'unknown kid', { alg => 'ES256', kid => 'nobody', claims => claims(role => 'alice') }, qr/no key with the token's kid/ ],
	[ 'unknown crit', { alg => 'HS256', headers => { crit => ['exp'] }, claims => claims(role => 'alice') }, qr/critical/ ],
	[ 'duplicate claims', { forge => 'raw', header => '{"alg":"HS256"}',
		payload => encode_json(claims(sub => 'x')) =~ s/\}$/,"role":"alice","role":"postgres"}/r }, qr/named twice/ ],
	[ 'malformed JSON', { forge => 'raw', header => '{"alg":"HS256"}', payload => '{"role":"alice"' }, qr/JSON|end/ ],
	[ 'role not a string', { alg => 'HS256', claims => claims(role => [ 'alice' ]) }, qr/not a role name/ ],
	[ 'huge', { alg => 'HS256', claims => claims(role => 'alice', pad => 'x' x 9000) }, qr/too long/ ],
);
my @bad_tokens = mint(map { $_->[1] } @bad);
my ($h, $p, $s) = split /\./, $alice;
my $other_sig = (split /\./, $bad_tokens[4])[2];
push @bad, [ 'truncated', undef, qr/three|base64/ ], [ 'malformed base64url', undef, qr/base64/ ],
  [ 'tampered claims', undef, qr/wrong signature/ ],
  [ 'a cached token\'s claims with another signature', undef, qr/wrong signature/ ];
push @bad_tokens, substr($alice, 0, length($alice) - 10), "$h.$p.$s*",
  "$h." . substr($p, 0, -2) . ($p =~ /A.$/ ? 'B' : 'A') . substr($p, -1) . ".$s",
  "$h.$p.$other_sig";
for my $i (0 .. $#bad)
{
	my $res = get('/who', $bad_tokens[$i]);
	is($res->{status}, 401, "$bad[$i][0]: 401");
	is($res->{headers}{'www-authenticate'}, 'Bearer error="invalid_token"', "$bad[$i][0]: invalid_token");
	is($res->{body}, "Unauthorized\n", "$bad[$i][0]: no detail in the body")
	  or diag $res->{body};
	is(get('/maybe', $bad_tokens[$i])->{status}, 401, "$bad[$i][0]: 401 on an optional route too");
}
my $log = slurp_file($node->logfile, $offset);
for my $b (@bad)
{
	like($log, qr/a JSON Web Token was refused: .*$b->[2]/, "$b->[0]: the log says why");
}

# ---- within the leeway, and webgres.jwt_leeway itself ----
my ($late, $later) = mint(
	{ alg => 'HS256', claims => claims(role => 'alice', sub => 'late', exp => int(time) - 5) },
	{ alg => 'HS256', claims => claims(role => 'alice', sub => 'later', exp => int(time) - 90) });
is(get('/who', $late)->{status}, 200, 'a token expired within the leeway (30 s) is accepted');
is(get('/who', $later)->{status}, 401, 'one expired 90 s ago is not');
# Each token is made once the workers have the new setting, expired by
# then by the seconds its description says.
sub expired_by
{
	my ($seconds) = @_;
	return scalar mint({ alg => 'HS256', claims => claims(role => 'alice', sub => 'leeway', exp => int(time) - $seconds) });
}
ok(WebgresTest::reload_and_wait($node, 'webgres.jwt_leeway = 0'), 'webgres.jwt_leeway = 0, reloaded');
is(get('/who', expired_by(5))->{status}, 401, 'webgres.jwt_leeway = 0: a token expired 5 s ago is refused');
ok(WebgresTest::reload_and_wait($node, 'webgres.jwt_leeway = 120'), 'webgres.jwt_leeway = 120, reloaded');
my $by90 = expired_by(90);
is(get('/who', $by90)->{status}, 200, 'webgres.jwt_leeway = 120: a token expired 90 s ago is accepted');
ok(WebgresTest::reload_and_wait($node, 'webgres.jwt_leeway = 30'), 'back to 30 s');
is(get('/who', $by90)->{status}, 401, 'and the same token, now cached, is refused');

# ---- aud as an array ----
my ($aud_in, $aud_out) = mint(
	{ alg => 'HS256', claims => claims(role => 'alice', sub => 'aud', aud => [ 'another-app', 'webgres-test' ]) },
	{ alg => 'HS256', claims => claims(role => 'alice', sub => 'aud', aud => [ 'another-app', 'a-third' ]) });
is(get('/who', $aud_in)->{body}, 'alice aud aud', 'an aud array that names webgres.jwt_audience is accepted');
is(get('/who', $aud_out)->{status}, 401, 'one that does not is refused');

# ---- roles the owner may not use ----
my ($stranger, $super, $norole, $nobody) = mint(
	{ alg => 'HS256', claims => claims(role => 'stranger') },
	{ alg => 'HS256', claims => claims(role => 'admin') },
	{ alg => 'HS256', claims => claims(sub => 'no role') },
	{ alg => 'HS256', claims => claims(role => 'nobody_at_all') });
is(get('/who', $stranger)->{status}, 403, 'a role the owner is not a member of: 403');
is(get('/who', $super)->{status}, 403, 'a superuser role, even one the owner is a member of: 403');
is(get('/who', $nobody)->{status}, 403, 'a role that does not exist: 403');
like(slurp_file($node->logfile, $offset), qr/role "stranger" may not be used by the route's owner/, 'logged');
like(slurp_file($node->logfile, $offset), qr/no request may run as role "nobody_at_all": it does not exist/,
	'logged: it does not exist');
is(get('/who', $norole)->{status}, 401, 'a token without a role claim and no anon_role: 401');

# A cached token's role check is forgotten when roles or memberships change.
sub who_status_becomes
{
	my ($want) = @_;
	my $until = time + 10;
	my $status;
	while (time < $until && ($status = get('/who', $alice)->{status}) != $want) { select(undef, undef, undef, 0.05); }
	return $status;
}
is(get('/who', $alice)->{status}, 200, 'a cached token whose role check passed');
for my $change (
	[ 'REVOKE alice FROM authenticator', 403, 'REVOKE of the role from the owner: the cached token is refused' ],
	[ 'GRANT alice TO authenticator', 200, 'GRANT again: accepted' ],
	[ 'ALTER ROLE alice SUPERUSER', 403, 'the role became a superuser: refused' ],
	[ 'ALTER ROLE alice NOSUPERUSER', 200, 'no longer a superuser: accepted' ],
	[ 'ALTER ROLE alice RENAME TO alice_renamed', 403, 'the role renamed away: refused' ],
	[ 'ALTER ROLE alice_renamed RENAME TO alice', 200, 'renamed back: accepted' ])
{
	my ($sql, $status, $desc) = @$change;
	$node->safe_psql('postgres', $sql);
	is(who_status_becomes($status), $status, "$desc ($status)");
}

# ---- webgres.anon_role, and the role claim's path ----
$node->append_conf('postgresql.conf', qq{webgres.anon_role = 'web_anon'\nwebgres.jwt_role_claim = '."https://example.test/claims".roles[1]'\n});
$node->reload;
$res = WebgresTest::wait_for_status($port, '/maybe', 200);
is($res->{body}, 'web_anon - -', 'optional route without a token runs as webgres.anon_role');
is(get('/who')->{status}, 401, 'a required route still wants a token');
my $deadline;
my $nested = mint({ alg => 'HS256', claims => claims(sub => 'n', 'https://example.test/claims' => { roles => [ 'alice', 'bob' ] }) });
is(get('/who', $nested)->{body}, 'bob n n', 'webgres.jwt_role_claim follows a PostgREST-style path');
is(get('/who', $norole)->{body}, 'web_anon no role no role', 'a token without the claim runs as anon_role');
$node->append_conf('postgresql.conf', qq{webgres.jwt_role_claim = 'role'\n});
$node->reload;
$deadline = time + 30;
while (time < $deadline && get('/who', $alice)->{body} !~ /^alice/) { select(undef, undef, undef, 0.05); }
is(get('/who', $alice)->{body}, 'alice sub-HS256 sub-HS256', 'back to the role claim');

# ---- keys rotate on reload ----
my ($old_kid, $new_kid) = mint(
	{ alg => 'ES256', claims => claims(role => 'alice', sub => 'old') },
	{ alg => 'ES256', key => 'ec256-rotated', kid => 'ec-2', claims => claims(role => 'alice', sub => 'new') });
is(get('/who', $old_kid)->{status}, 200, 'before rotation: ec-1 is accepted');
is(get('/who', $new_kid)->{status}, 401, 'before rotation: ec-2 is unknown');
system('cp', "$keydir/jwks-rotated.json", "$keydir/keys.json") == 0 or die;
$node->reload;
$deadline = time + 30;
while (time < $deadline && get('/who', $new_kid)->{status} != 200) { select(undef, undef, undef, 0.05); }
is(get('/who', $new_kid)->{body}, 'alice new new', 'after reload: ec-2 is accepted');
is(get('/who', $old_kid)->{status}, 401, 'after reload: ec-1 is refused, even though it was cached');

# ---- PEM public keys: no kids, any token of a fitting alg ----
system('cp', "$keydir/rsa.pub.pem", "$keydir/keys.json") == 0 or die;
$node->reload;
my $rs = mint({ alg => 'RS256', kid => 'whatever', claims => claims(role => 'bob', sub => 'pem') });
$deadline = time + 30;
while (time < $deadline && get('/who', $rs)->{status} != 200) { select(undef, undef, undef, 0.05); }
is(get('/who', $rs)->{body}, 'bob pem pem', 'a PEM keys file: RS256 accepted');
is(get('/who', $new_kid)->{status}, 401, 'a PEM keys file: the EC key is gone');
system('cp', "$keydir/jwks-rotated.json", "$keydir/keys.json") == 0 or die;
$node->reload;
$deadline = time + 30;
while (time < $deadline && get('/who', $new_kid)->{status} != 200) { select(undef, undef, undef, 0.05); }

# ---- a token in a cookie, and the CSRF rule ----
$node->append_conf('postgresql.conf', qq{webgres.jwt_cookie = 'access_token'\nwebgres.csrf_trusted_origins = 'https://app.test, https://other.test'\n});
$node->reload;
my $cookie = { Cookie => "theme=dark; access_token=$alice" };
$deadline = time + 30;
while (time < $deadline && get('/who', undef, headers => $cookie)->{status} != 200) { select(undef, undef, undef, 0.05); }
is(get('/who', undef, headers => $cookie)->{body}, 'alice sub-HS256 sub-HS256', 'a token in webgres.jwt_cookie');
my $own = "http://127.0.0.1:$port";
my %post = (method => 'POST');
is(get('/who', undef, %post, headers => { %$cookie, Origin => 'https://evil.test' })->{status}, 403,
	'CSRF: a cookie-authenticated POST from another origin is refused');
is(get('/who', undef, %post, headers => { %$cookie })->{status}, 403,
	'CSRF: a cookie-authenticated POST without Origin or Referer is refused');
is(get('/who', undef, %post, headers => { %$cookie, Origin => 'null' })->{status}, 403,
	'CSRF: Origin null is refused');
is(get('/who', undef, %post, headers => { %$cookie, Referer => 'https://evil.test/form' })->{status}, 403,
	'CSRF: a foreign Referer is refused');
is(get('/who', undef, %post, headers => { %$cookie, Origin => $own })->{status}, 200,
	'CSRF: the server\'s own origin is accepted');
is(get('/who', undef, %post, headers => { %$cookie, Referer => "$own/page?x=1" })->{status}, 200,
	'CSRF: a Referer from the server\'s own origin is accepted');
is(get('/who', undef, %post, headers => { %$cookie, Origin => 'https://other.test' })->{status}, 200,
	'CSRF: a trusted origin is accepted');
$node->safe_psql('postgres', q{UPDATE webgres.routes SET cors_allowed_origins = '{https://cors.test}' WHERE path = '/who'});
$deadline = time + 30;
while (time < $deadline && get('/who', undef, %post, headers => { %$cookie, Origin => 'https://cors.test' })->{status} != 200)
{
	select(undef, undef, undef, 0.05);
}
is(get('/who', undef, %post, headers => { %$cookie, Origin => 'https://cors.test' })->{status}, 200,
	'CSRF: an origin the route\'s CORS settings allow is accepted');
is(get('/who', undef, %post, headers => { %$cookie, Origin => 'https://evil.test' })->{status}, 403,
	'CSRF: and still no other');
is(get('/who', $alice, %post, headers => { Origin => 'https://evil.test' })->{status}, 200,
	'CSRF: a token in the Authorization header needs no Origin check');
is(get('/who', undef, headers => { %$cookie, Origin => 'https://evil.test' })->{status}, 200,
	'CSRF: a GET needs no Origin check');

# ---- issuing tokens: webgres.jwt_sign ----
# The login route checks its password with pgcrypto's crypt(), as
# docs/authentication.md does; an installation without pgcrypto
# (docs/versions.md) skips it.
SKIP: {
skip 'pgcrypto is not in this installation (docs/versions.md)', 10 unless WebgresTest::have_module('pgcrypto');
$node->safe_psql('postgres', q{
	CREATE EXTENSION pgcrypto;
	CREATE TABLE accounts (email text PRIMARY KEY, pass text NOT NULL, role name NOT NULL);
	INSERT INTO accounts VALUES ('alice@test', crypt('wonderland', gen_salt('bf', 4)), 'alice');
	GRANT SELECT ON accounts TO authenticator;
	GRANT EXECUTE ON FUNCTION webgres.jwt_sign(jsonb, interval) TO authenticator;
});
route('POST', '/login', 'none', q{
	SELECT 200 AS status,
	       jsonb_build_object('Set-Cookie', 'access_token=' || webgres.jwt_sign(
	           jsonb_build_object('role', a.role, 'sub', a.email, 'aud', 'webgres-test', 'iss', 'https://issuer.test'),
	           interval '1 hour') || '; Path=/; HttpOnly; Secure; SameSite=Lax') AS headers,
	       'welcome' AS body
	FROM request, accounts a
	WHERE a.email = webgres.body_json(request.body)->>'email'
	  AND a.pass = crypt(webgres.body_json(request.body)->>'password', a.pass)});
$res = WebgresTest::request($port, 'POST', '/login',
	body => '{"email": "alice@test", "password": "wonderland"}');
is($res->{status}, 200, 'login: the right password');
my ($issued) = ($res->{headers}{'set-cookie'} // '') =~ /^access_token=([^;]+);/;
ok($issued, 'login: the token comes in a cookie') or diag explain $res;
like($res->{headers}{'set-cookie'}, qr/HttpOnly; Secure; SameSite=Lax/, 'with HttpOnly, Secure and SameSite');
open my $tf, '>', "$keydir/issued" or die;
print $tf $issued // '';
close $tf;
my $decoded = `$python $mint verify '$secret' < $keydir/issued`;
my $c = eval { decode_json($decoded) } // {};
is($c->{role}, 'alice', 'PyJWT verifies the issued token: role');
is($c->{sub}, 'alice@test', 'sub');
ok($c->{exp} - $c->{iat} == 3600 && abs($c->{iat} - time) < 120, 'iat is now and exp an hour later');
is(get('/who', $issued)->{body}, 'alice alice@test alice@test', 'the issued token authenticates');
# Without a ttl: an hour, unless the claims write their own exp.
sub signed_claims
{
	my ($sql) = @_;
	open my $tf, '>', "$keydir/issued" or die;
	print $tf $node->safe_psql('postgres', $sql);
	close $tf;
	return eval { decode_json(`$python $mint verify '$secret' < $keydir/issued`) } // {};
}
$c = signed_claims(q{SELECT webgres.jwt_sign('{"role": "alice"}')});
ok(defined $c->{exp} && $c->{exp} - $c->{iat} == 3600 && abs($c->{iat} - time) < 120,
	'webgres.jwt_sign() without a ttl: the token expires in an hour') or diag explain $c;
$c = signed_claims(q{SELECT webgres.jwt_sign('{"role": "alice", "exp": 2000000000}')});
ok($c->{exp} == 2000000000 && !exists $c->{iat}, 'claims with their own exp keep it') or diag explain $c;
is(WebgresTest::request($port, 'POST', '/login',
	body => '{"email": "alice@test", "password": "wrong"}')->{status}, 404, 'login: a wrong password gets no token');
my ($rc, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SELECT webgres.jwt_sign('{"role": "postgres"}')});
like($err, qr/permission denied for function jwt_sign/, 'a role without EXECUTE may not sign');
($rc, $out, $err) = $node->psql('postgres', q{SET ROLE alice; SHOW webgres.jwt_secret});
like($err, qr/must be superuser|permission denied/, 'the secret is not shown to other roles');
}

# ---- row level security as PostgREST's documentation writes it ----
$node->safe_psql('postgres', q{
	CREATE TABLE todos (id serial PRIMARY KEY, owner text NOT NULL, task text NOT NULL);
	INSERT INTO todos (owner, task) VALUES ('u1', 'walk'), ('u1', 'write'), ('u2', 'read');
	ALTER TABLE todos ENABLE ROW LEVEL SECURITY;
	CREATE POLICY todos_owner ON todos
	  USING (owner = current_setting('request.jwt.claims', true)::jsonb->>'sub');
	GRANT SELECT ON todos TO webuser;

	CREATE TABLE chat (message_from name NOT NULL, message_to name NOT NULL, message text NOT NULL);
	INSERT INTO chat VALUES ('alice', 'bob', 'hi bob'), ('bob', 'alice', 'hi alice'), ('bob', 'carol', 'psst');
	GRANT SELECT ON chat TO alice, bob;
	ALTER TABLE chat ENABLE ROW LEVEL SECURITY;
	create policy chat_policy on chat
	  using ((message_to = current_user) or (message_from = current_user))
	  with check (message_from = current_user);
});
route('GET', '/todos', 'required', q{SELECT coalesce(string_agg(task, ',' ORDER BY task), '') AS body FROM todos});
route('GET', '/chat', 'required', q{SELECT coalesce(string_agg(message, ',' ORDER BY message), '') AS body FROM chat});
my ($u1, $u2, $ca, $cb) = mint(
	{ alg => 'HS256', claims => claims(role => 'webuser', sub => 'u1') },
	{ alg => 'ES256', key => 'ec256-rotated', kid => 'ec-2', claims => claims(role => 'webuser', sub => 'u2') },
	{ alg => 'HS256', claims => claims(role => 'alice', sub => 'a') },
	{ alg => 'HS256', claims => claims(role => 'bob', sub => 'b') });
for my $round (1 .. 3)
{
	is(get('/todos', $u1)->{body}, 'walk,write', "round $round: one role, user u1 sees only its rows");
	is(get('/todos', $u2)->{body}, 'read', "round $round: the same route, user u2 sees only its rows");
	is(get('/chat', $ca)->{body}, 'hi alice,hi bob', "round $round: PostgREST's chat policy, alice");
	is(get('/chat', $cb)->{body}, 'hi alice,hi bob,psst', "round $round: the same plan, role bob");
}
is(get('/todos', $ca)->{status}, 403, 'a role without SELECT is refused by Postgres (permission denied)');

# ---- requests sharing a transaction run as their own roles ----
# With webgres.share_read_transactions, pipelined requests share one
# read-only transaction; a handler compiled once for alice must be checked
# again for bob, who may not execute its function.
$node->safe_psql('postgres', q{
	CREATE FUNCTION alice_only() RETURNS text LANGUAGE sql STABLE AS $$ SELECT 'for alice' $$;
	REVOKE EXECUTE ON FUNCTION alice_only() FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION alice_only() TO alice;
});
route('GET', '/alice-only', 'required', q{SELECT alice_only() AS body});
my ($for_bob) = mint({ alg => 'HS256', claims => claims(role => 'bob', sub => 'b') });
my $pipelined = '';
for my $t ($alice, $for_bob, $alice, $for_bob)
{
	$pipelined .= "GET /alice-only HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $t\r\n\r\n";
}
my ($answers) = WebgresTest::raw($port, $pipelined, n => 4);
is(join(' ', map { $_->{status} } @$answers), '200 403 200 403',
	'pipelined in one shared transaction: alice may run the function, bob may not');

# ---- an event stream opened with a token ends when the token expires ----
route('GET', '/events', 'required', q{
	SELECT ARRAY['news_' || (current_setting('request.jwt.claims', true)::jsonb->>'sub')] AS channels,
	       current_user || ' ' || (current_setting('request.jwt.claims', true)::jsonb->>'sub') AS data
	FROM request});
my $exp = int(time) + 4;
my $short = mint({ alg => 'HS256', claims => { %base, role => 'alice', sub => 's1', exp => $exp } });
my $sock = WebgresTest::connect_to($port);
print $sock "GET /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $short\r\n\r\n";
my $sel = IO::Select->new($sock);
my $wire = '';
my $ended_at;
$deadline = time + 60;
while (time < $deadline)
{
	next unless $sel->can_read(0.2);
	my $n = sysread($sock, my $buf, 65536);
	last unless $n;
	$wire .= $buf;
	if ($wire =~ /\r\n0\r\n\r\n\z/) { $ended_at = Time::HiRes::time; last; }
}
like($wire, qr{^HTTP/1\.1 200}, 'event stream: opened with a token');
like($wire, qr/data: alice s1/, 'event stream: both phases run as the role, with request.jwt.claims');
ok(defined $ended_at, 'event stream: ended cleanly (last chunk) once the token expired');
ok(defined $ended_at && $ended_at >= $exp, 'event stream: not before the token expired');
# docs/events.md: within a second after exp (not after exp and the leeway);
# one second more for a loaded machine.
ok(defined $ended_at && $ended_at < $exp + 2,
	'event stream: within a second or so after it expired (' . sprintf('%.2f', ($ended_at // 0) - $exp) . ' s)');
close $sock;

# ---- a stream ends when its role may no longer be used ----
# As requests with the token are refused at once, its open streams end:
# checked once a second, after the role changes.
my ($long_a, $long_b) = mint(
	{ alg => 'HS256', claims => claims(role => 'alice', sub => 'long_a') },
	{ alg => 'HS256', claims => claims(role => 'bob', sub => 'long_b') });
for my $change (
	[ 'REVOKE alice FROM authenticator', 'GRANT alice TO authenticator', 'REVOKE of the role from the owner' ],
	[ 'ALTER ROLE alice BYPASSRLS', 'ALTER ROLE alice NOBYPASSRLS', 'the role given BYPASSRLS' ],
	[ 'ALTER ROLE alice SUPERUSER', 'ALTER ROLE alice NOSUPERUSER', 'the role made a superuser' ])
{
	my ($do, $undo, $desc) = @$change;
	my $sa = SseReader::open_h1($port, '/events', headers => { Authorization => "Bearer $long_a" });
	my $sb = SseReader::open_h1($port, '/events', headers => { Authorization => "Bearer $long_b" });
	like($sa->{head} // '', qr{^HTTP/1\.1 200}, "$desc: alice's stream is open");
	my $t0 = Time::HiRes::time;
	$node->safe_psql('postgres', $do);
	SseReader::read_until([ $sa, $sb ], sub { $sa->{ended} }, 20);
	my $took = Time::HiRes::time - $t0;
	ok($sa->{ended}, "$desc: alice's stream ends cleanly (last chunk)");
	ok($took < 4, sprintf("$desc: within about two seconds (%.2f s)", $took));
	ok(!$sb->{ended} && !$sb->{eof}, "$desc: bob's stream goes on");
	my $before = $sb->{other} // 0;
	$node->safe_psql('postgres', "NOTIFY news_long_b, 'still here'");
	SseReader::read_until([$sb], sub { ($sb->{other} // 0) > $before }, 20);
	ok(($sb->{other} // 0) > $before, "$desc: and is delivered to");
	$node->safe_psql('postgres', $undo);
	close $sa->{sock};
	close $sb->{sock};
}

# ---- a stream verified with the keys file ends when its keys change ----
# The keys file is read again at each reload, but only a changed content
# ends the streams its keys verified (docs/authentication.md#event-streams);
# HS streams are not affected by it.
{
	my ($es) = mint({ alg => 'ES256', key => 'ec256-rotated', kid => 'ec-2',
		claims => claims(role => 'alice', sub => 'keys') });
	my $sa = SseReader::open_h1($port, '/events', headers => { Authorization => "Bearer $es" });
	my $sb = SseReader::open_h1($port, '/events', headers => { Authorization => "Bearer $long_b" });
	like($sa->{head} // '', qr{^HTTP/1\.1 200}, 'keys file: a stream opened with an ES256 token is open');
	like($sb->{head} // '', qr{^HTTP/1\.1 200}, 'keys file: a stream opened with an HS256 token is open');

	# A reload that leaves the file as it was: the worker has taken it once
	# its answers lose nosniff, and has looked at its streams since once a
	# role change has ended bob's stream (the same look checks the keys).
	$node->append_conf('postgresql.conf', "webgres.nosniff = off\n");
	$node->reload;
	ok(WebgresTest::poll_until(sub { !exists get('/who', $es)->{headers}{'x-content-type-options'} }),
		'keys file: an unchanged file reloaded (the worker took the reload)');
	$node->safe_psql('postgres', 'REVOKE bob FROM authenticator');
	SseReader::read_until([ $sa, $sb ], sub { $sb->{ended} }, 20);
	ok($sb->{ended}, 'keys file: a later look at the streams ran (bob\'s role was revoked)');
	ok(!$sa->{ended} && !$sa->{eof}, 'keys file: an unchanged file ends no stream');
	$node->safe_psql('postgres', 'GRANT bob TO authenticator');
	close $sb->{sock};
	$node->append_conf('postgresql.conf', "webgres.nosniff = on\n");

	# The file changed: the ES256 stream ends, an HS256 stream goes on.
	$sb = SseReader::open_h1($port, '/events', headers => { Authorization => "Bearer $long_b" });
	like($sb->{head} // '', qr{^HTTP/1\.1 200}, 'keys file: a new HS256 stream is open');
	system('cp', "$keydir/jwks.json", "$keydir/keys.json") == 0 or die;
	my $t0 = Time::HiRes::time;
	$node->reload;
	SseReader::read_until([ $sa, $sb ], sub { $sa->{ended} }, 20);
	my $took = Time::HiRes::time - $t0;
	ok($sa->{ended}, 'keys file changed: the ES256 token\'s stream ends cleanly (last chunk)');
	ok($took < 4, sprintf('keys file changed: within about two seconds (%.2f s)', $took));
	ok(!$sb->{ended} && !$sb->{eof}, 'keys file changed: the HS256 stream goes on');
	my $before = $sb->{other} // 0;
	$node->safe_psql('postgres', "NOTIFY news_long_b, 'still here'");
	SseReader::read_until([$sb], sub { ($sb->{other} // 0) > $before }, 20);
	ok(($sb->{other} // 0) > $before, 'keys file changed: and is delivered to');
	is(get('/who', $es)->{status}, 401, 'keys file changed: the retired key\'s token is refused');
	close $sa->{sock};
	close $sb->{sock};
	system('cp', "$keydir/jwks-rotated.json", "$keydir/keys.json") == 0 or die;
	$node->reload;
}

# ---- the token cache is bounded in bytes as well as in tokens ----
# Near-8 kB tokens (and claims nearly as large) fill 4 MB long before 1024
# tokens: the cache is emptied and every token still verifies.
$node->append_conf('postgresql.conf', "log_min_messages = debug1\n");
$node->reload;
my $cache_offset = -s $node->logfile;
my @big = mint(map { { alg => 'HS256', claims => claims(role => 'alice', sub => "big-$_", pad => 'x' x 5800) } } 1 .. 300);
my $big_ok = 0;
for my $t (@big)
{
	$big_ok++ if get('/who', $t)->{status} == 200;
}
is($big_ok, scalar @big, 'near-8 kB tokens: every one accepted');
my ($emptied_at) = slurp_file($node->logfile, $cache_offset) =~ /cache of verified tokens is full \((\d+) tokens/;
ok(defined $emptied_at && $emptied_at < 1024,
	'the cache was emptied by its memory bound, before 1024 tokens (' . ($emptied_at // 'never') . ')');
$node->append_conf('postgresql.conf', "log_min_messages = warning\n");
$node->reload;

unlike(slurp_file($node->logfile), qr/terminated by signal|FATAL/, 'no worker crashed or exited');
$node->stop;
done_testing();
