# Requests authentication refuses, and what the refusals cost: a flood of
# bad tokens writes a bounded number of log lines and a summary; roles no
# token may become (superusers, BYPASSRLS, predefined pg_ roles) are
# refused 403 on a superuser's route, logged once per token; two cookies
# of the token's name are no token (401, saying so); requests for routes on
# executors are checked before they may wait for one, so that requests
# without a valid token neither fill a route's queue nor wait; a keys file
# without an audience draws a warning at start and reload.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;

my $python = $ENV{WEBGRES_PYTHON} // 'python3';
my $mint = "$FindBin::RealBin/jwt_mint.py";
my $dir = PostgreSQL::Test::Utils::tempdir();
system($python, $mint, 'keys', $dir) == 0 or die "could not make keys";
# The secret jwt_mint.py signs HS tokens with, in a file as recommended.
my $secret = 'the-test-secret-of-at-least-32-bytes!';
open my $sf, '>', "$dir/secret" or die;
print $sf "$secret\n";
close $sf;
chmod 0600, "$dir/secret";

# Tokens from specs, in one run of Python.
sub mint
{
	my @specs = @_;
	open my $fh, '>', "$dir/specs.json" or die;
	print $fh encode_json(\@specs);
	close $fh;
	my @tokens = split /\n/, `$python $mint tokens $dir < $dir/specs.json`;
	die "minting failed" unless @tokens == @specs;
	return wantarray ? @tokens : $tokens[0];
}
sub claims { return { exp => int(time) + 600, @_ }; }

my $node = WebgresTest->new_node('refusals', workers => 1, conf => <<"EOC");
webgres.jwt_secret_file = '$dir/secret'
webgres.jwt_keys_file = '$dir/jwks.json'
webgres.jwt_cookie = '__Host-token'
webgres.executors = 1
webgres.max_queue = 1
EOC
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE plain;
	CREATE ROLE su SUPERUSER;
	CREATE ROLE bypasser BYPASSRLS;
	GRANT plain TO authenticator;
	CREATE TABLE gate (x int);
	GRANT SELECT ON gate TO plain;
});
sub route
{
	my ($method, $path, $handler, %o) = @_;
	my $owner = $o{owner} // 'authenticator';
	my $mode = $o{mode} // 'auto';
	my $cap = $o{max_concurrency} // 'NULL';
	$node->safe_psql('postgres', qq{
		INSERT INTO webgres.routes (method, path, handler, owner, auth, mode, max_concurrency)
		VALUES ('$method', '$path', \$h\$$handler\$h\$, '$owner', 'required', '$mode', $cap)});
}
route('GET', '/who', q{SELECT current_user::text AS body});
route('POST', '/who', q{SELECT current_user::text AS body});
route('GET', '/root-who', q{SELECT current_user::text AS body}, owner => 'postgres');
route('GET', '/slow', q{SELECT current_user || ' ' || count(*) AS body FROM gate},
	mode => 'executor', max_concurrency => 1);
route('GET', '/export', q{SELECT current_user AS who FROM gate}, mode => 'stream');

sub get
{
	my ($path, %h) = @_;
	# No answer within the timeout is status 0.
	return WebgresTest::request($port, 'GET', $path, headers => \%h, timeout => 10)
	  // { status => 0, body => '', headers => {} };
}
my $plain = mint({ alg => 'HS256', claims => claims(role => 'plain') });

# ---- a keys file without an audience ----
like(slurp_file($node->logfile),
	qr/WARNING:  webgres\.jwt_keys_file is set but webgres\.jwt_audience is empty\n.*DETAIL:  Tokens the same identity provider issued for other applications are accepted/,
	'a keys file and no webgres.jwt_audience: a warning at start');

# ---- a flood of bad tokens: bounded lines, and a summary ----
# First, so that no refusal before it shares its period.
my $offset = -s $node->logfile;
my $flood = 200;
my $bad = mint({ alg => 'HS256', secret => 'another-secret-of-at-least-32-bytes!!', claims => claims(role => 'plain') });
my ($answers) = WebgresTest::raw($port, "GET /who HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $bad\r\n\r\n" x $flood,
	n => $flood, timeout => 30);
is(scalar(grep { $_->{status} == 401 } @$answers), $flood, "$flood bad tokens: $flood answers 401");
my $summarised = 0;
my $lines;
ok(WebgresTest::poll_until(sub {
		my $log = slurp_file($node->logfile, $offset);
		$lines = () = $log =~ /a JSON Web Token was refused: wrong signature/g;
		$summarised = 0;
		$summarised += $1 while $log =~ /webgres: (\d+) more refused requests in the last 10 s were not logged/g;
		$lines + $summarised >= $flood;
	}, 40), 'the refusals left out are summarised once their period is over');
ok($lines <= 2 * 64, "at most the burst is logged in full per period ($lines lines)");
is($lines + $summarised, $flood, 'every refusal is either logged or counted in a summary');
like(slurp_file($node->logfile, $offset), qr/DETAIL:  The last one: wrong signature\./, 'the summary names the last reason');

# ---- roles no token may become, whoever owns the route ----
is(get('/root-who', Authorization => "Bearer $plain")->{body}, 'plain',
	'a superuser\'s route accepts a token for an ordinary role');
my %forbidden = (su => 'it is a superuser', bypasser => 'it has BYPASSRLS',
	pg_read_server_files => "it is one of Postgres' predefined roles",
	postgres => 'it is a superuser');
$offset = -s $node->logfile;
for my $role (sort keys %forbidden)
{
	my $t = mint({ alg => 'HS256', claims => claims(role => $role) });
	my @statuses = map { get('/root-who', Authorization => "Bearer $t")->{status} } 1 .. 3;
	is("@statuses", '403 403 403', "a token for $role on a route owned by the bootstrap superuser: 403");
}
my $log = slurp_file($node->logfile, $offset);
for my $role (sort keys %forbidden)
{
	my $n = () = $log =~ /no request may run as role "\Q$role\E": \Q$forbidden{$role}\E/g;
	is($n, 1, "$role: logged once for its token, not for each of its three requests");
}
like($log, qr/HINT:  Tokens and webgres.anon_role must name roles without SUPERUSER or BYPASSRLS/, 'with a hint');

# ---- two cookies of the token's name ----
my ($other) = mint({ alg => 'HS256', claims => claims(role => 'plain', sub => 'attacker') });
is(get('/who', Cookie => "__Host-token=$plain")->{body}, 'plain', 'one token cookie: accepted');
my $two = get('/who', Cookie => "__Host-token=$other; theme=dark; __Host-token=$plain");
is($two->{status}, 401, 'two cookies of the token\'s name: 401');
is($two->{body}, qq{Unauthorized: the request has more than one "__Host-token" cookie\n}, 'saying why');
is($two->{headers}{'www-authenticate'}, 'Bearer error="invalid_token"', 'as an invalid token');
my $split = WebgresTest::raw($port, "GET /who HTTP/1.1\r\nHost: x\r\nCookie: __Host-token=$plain\r\n"
	  . "Cookie: __Host-token=$plain\r\nConnection: close\r\n\r\n");
is($split->{status}, 401, 'the same in two Cookie headers, even with one value');
is(get('/who', Cookie => "__Host-token=$other; __Host-token=$plain", Authorization => "Bearer $plain")->{body}, 'plain',
	'a Bearer token is used whatever the cookies');
like(slurp_file($node->logfile, $offset), qr/a JSON Web Token was refused: the request has more than one "__Host-token" cookie/,
	'logged');

# ---- checked before waiting for an executor ----
my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
sub send_on_new
{
	my ($path, $token) = @_;
	my $s = WebgresTest::connect_to($port);
	print $s "GET $path HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $token\r\nConnection: close\r\n\r\n";
	return $s;
}
sub queued
{
	return $node->safe_psql('postgres', q{SELECT coalesce(sum(e.running) || ' ' || sum(e.queued), '0 0')
		FROM webgres.route_execution() e JOIN webgres.routes r ON r.id = e.route_id WHERE r.path = '/slow'});
}
my $running = send_on_new('/slow', $plain);
ok(WebgresTest::poll_until(sub { queued() eq '1 0' }), '/slow: one request runs, held by the gate');
my $waiting = send_on_new('/slow', $plain);
ok(WebgresTest::poll_until(sub { queued() eq '1 1' }), '/slow: a second one waits: the queue (max_queue 1) is full');
is(get('/slow', Authorization => "Bearer $plain")->{status}, 503, 'a third with a valid token: 503, queue full');
my ($expired) = mint({ alg => 'HS256', claims => claims(role => 'plain', exp => int(time) - 3600) });
my %unauthenticated = (
	'no token' => [],
	'a bad signature' => [ Authorization => "Bearer $bad" ],
	'an expired token' => [ Authorization => "Bearer $expired" ],
	'a malformed token' => [ Authorization => 'Bearer not.a.token' ],
	'two token cookies' => [ Cookie => "__Host-token=$plain; __Host-token=$plain" ]);
for my $case (sort keys %unauthenticated)
{
	my @statuses = map { get('/slow', @{ $unauthenticated{$case} })->{status} } 1 .. 5;
	is("@statuses", '401 401 401 401 401', "a full queue: $case is answered 401, not 503");
}
my $csrf = WebgresTest::request($port, 'POST', '/who', headers => { Cookie => "__Host-token=$plain", Origin => 'https://evil.test' });
is($csrf->{status}, 403, 'CSRF on the loop as before');
my $t0 = time;
my @exports = map { get('/export', @{ $unauthenticated{$_} })->{status} } sort keys %unauthenticated;
is("@exports", '401 401 401 401 401', 'a route in mode stream, its executor busy: each answered 401');
ok(time - $t0 < 5, 'at once, without waiting for the executor');
is(queued(), '1 1', 'and the queue holds what it held');
$gate->query_safe('COMMIT');
$gate->quit;
my ($r1) = WebgresTest::read_responses($running, 1, 20);
my ($r2) = WebgresTest::read_responses($waiting, 1, 20);
is(join(' ', map { $_->[0]{status} // 0 } $r1, $r2), '200 200', 'the gate opened: the running and the waiting request answer');
is($r1->[0]{body}, 'plain 0', 'as the token\'s role, on the executor');

# ---- the audience warning follows reloads ----
my $warned = () = slurp_file($node->logfile) =~ /webgres\.jwt_keys_file is set but webgres\.jwt_audience is empty/g;
$node->append_conf('postgresql.conf', "webgres.executors = 2\n");
$node->reload;
ok(WebgresTest::poll_until(sub { slurp_file($node->logfile) =~ /webgres\.executors changed from 1 to 2/ }), 'a reload');
my $now_warned = () = slurp_file($node->logfile) =~ /webgres\.jwt_keys_file is set but webgres\.jwt_audience is empty/g;
is($now_warned, $warned + 1, 'warns again');
$node->append_conf('postgresql.conf', "webgres.jwt_audience = 'refusals-test'\nwebgres.executors = 1\n");
$node->reload;
ok(WebgresTest::poll_until(sub { slurp_file($node->logfile) =~ /webgres\.executors changed from 2 to 1/ }), 'a reload with an audience');
$now_warned = () = slurp_file($node->logfile) =~ /webgres\.jwt_keys_file is set but webgres\.jwt_audience is empty/g;
is($now_warned, $warned + 1, 'no warning then');

# (The executor the second reload stops ends with a FATAL of its own.)
unlike(slurp_file($node->logfile), qr/terminated by signal|FATAL:  (?!terminating background worker "webgres executor")/,
	'no process crashed');
$node->stop;
done_testing();
