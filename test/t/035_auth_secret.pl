# The HS secret is kept from every role but superusers, by every path a
# member of pg_monitor (so of pg_read_all_settings) has: current_setting(),
# SHOW, pg_settings, pg_file_settings, pg_db_role_setting, the server log
# and error messages; a reload that changes it logs nothing of it.  The
# secret file (webgres.jwt_secret_file) is refused with group or world
# access, as Postgres refuses such an ssl_key_file, and takes the place of
# the setting; webgres.jwt_sign() signs with it.
use strict;
use warnings;
use FindBin;
use JSON::PP;
use PostgreSQL::Test::Utils;
use SseReader;
use Test::More;
use Time::HiRes ();
use WebgresTest;

my $python = $ENV{WEBGRES_PYTHON} // 'python3';
my $mint = "$FindBin::RealBin/jwt_mint.py";
my $dir = PostgreSQL::Test::Utils::tempdir();

# Four secrets, each of which must never be seen.
my %secret = map { $_ => "secret-$_-" . join('', map { ('a' .. 'z')[ rand 26 ] } 1 .. 40) } qw(a b c file);
my $short = 'too-short-' . join('', map { ('a' .. 'z')[ rand 26 ] } 1 .. 8);

# An HS256 token for role alice signed with $key, by PyJWT.
sub token
{
	my ($key) = @_;
	open my $fh, '>', "$dir/spec.json" or die;
	print $fh encode_json([ { alg => 'HS256', secret => $key, claims => { role => 'alice', exp => time + 600 } } ]);
	close $fh;
	my $t = `$python $mint tokens $dir < $dir/spec.json`;
	chomp $t;
	die "minting failed" unless $t;
	return $t;
}

my $node = WebgresTest->new_node('secret', conf => "webgres.jwt_secret = '$secret{a}'\n");
my $port = $node->{webgres_port};
$node->safe_psql('postgres', q{
	CREATE ROLE alice;
	CREATE ROLE authenticator;
	GRANT alice TO authenticator;
	CREATE ROLE monitor LOGIN;
	GRANT pg_monitor TO monitor;
	INSERT INTO webgres.routes (method, path, handler, owner, auth)
	VALUES ('GET', '/who', $$SELECT current_user::text AS body$$, 'authenticator', 'required');
});

# The status of GET /who with a token signed with $key.
sub status_with
{
	my ($key) = @_;
	return WebgresTest::request($port, 'GET', '/who',
		headers => { Authorization => 'Bearer ' . token($key) })->{status};
}

# Polls until a token signed with $key gets $want.
sub becomes
{
	my ($key, $want) = @_;
	my $t = token($key);
	return WebgresTest::poll_until(sub {
		WebgresTest::request($port, 'GET', '/who', headers => { Authorization => "Bearer $t" })->{status} == $want;
	});
}

# A query as the pg_monitor member: (exit code, stdout, stderr).
sub as_monitor
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', 'monitor' ]);
	return ($ret, $out, $err);
}

is(status_with($secret{a}), 200, 'the secret in postgresql.conf signs tokens');

# ---- every path a pg_monitor member has ----
my ($ret, $out, $err) = as_monitor(q{SELECT current_setting('webgres.jwt_secret')});
is($ret, 0, 'pg_monitor: current_setting() is allowed (pg_read_all_settings)');
is($out, '********', 'pg_monitor: current_setting() gives the mask, not the secret');
($ret, $out) = as_monitor(q{SHOW webgres.jwt_secret});
is($out, '********', 'pg_monitor: SHOW gives the mask');
($ret, $out) = as_monitor(q{SELECT count(*) FROM pg_settings WHERE name = 'webgres.jwt_secret'});
is($out, '0', 'pg_monitor: pg_settings has no row for it (GUC_NO_SHOW_ALL)');
($ret, $out) = as_monitor(q{SELECT count(*) FROM pg_show_all_settings() s
	WHERE concat_ws(' ', s.setting, s.reset_val, s.boot_val) LIKE '%secret-%'});
is($out, '0', 'pg_monitor: no column of any row of pg_show_all_settings() holds it');
($ret, $out) = as_monitor(q{SELECT name FROM pg_settings WHERE name LIKE 'webgres.jwt_secret%' ORDER BY 1});
is($out, 'webgres.jwt_secret_file', 'pg_monitor: pg_settings shows the secret file setting (a path) only');
($ret, $out, $err) = as_monitor(q{SELECT setting FROM pg_file_settings});
like($err, qr/permission denied/, 'pg_monitor: pg_file_settings is denied (superusers only by default)');
($ret, $out, $err) = as_monitor(q{SELECT setting FROM pg_show_all_file_settings()});
like($err, qr/permission denied/, 'pg_monitor: and so is pg_show_all_file_settings()');
($ret, $out, $err) = as_monitor(q{SELECT pg_read_file('postgresql.conf')});
like($err, qr/permission denied/, 'pg_monitor: the configuration file cannot be read');
# (A value typed into SQL is in the log when log_statement logs it, as the
# test cluster's does: these use a value that is nobody's secret.)
my $typed = 'typed-into-sql-' . ('x' x 32);
($ret, $out, $err) = $node->psql('postgres', qq{ALTER ROLE monitor SET webgres.jwt_secret = '$typed'});
like($err, qr/cannot be changed now/, 'ALTER ROLE ... SET is refused (the setting is SIGHUP)');
($ret, $out, $err) = $node->psql('postgres', qq{ALTER DATABASE postgres SET webgres.jwt_secret = '$typed'});
like($err, qr/cannot be changed now/, 'ALTER DATABASE ... SET too');
($ret, $out) = as_monitor(q{SELECT count(*) FROM pg_db_role_setting WHERE array_to_string(setconfig, ' ') LIKE '%jwt_secret%'});
is($out, '0', 'pg_monitor: pg_db_role_setting holds no copy');
is($node->safe_psql('postgres', 'SHOW webgres.jwt_secret'), '********', 'a superuser sees the mask too');
($ret, $out, $err) = $node->psql('postgres', qq{SET ROLE alice; SELECT current_setting('webgres.jwt_secret')});
# (15's words; 16 and later say "permission denied to examine")
like($err, qr/must be superuser or have privileges of pg_read_all_settings|permission denied to examine "webgres\.jwt_secret"/,
	'a role without pg_read_all_settings is refused');

# The attack that was possible: the mask signs nothing.
is(status_with('********'), 401, 'a token signed with what pg_monitor reads is refused');

# ---- reloads: a new secret and a bad one, none in the log ----
$node->append_conf('postgresql.conf', "webgres.jwt_secret = '$secret{b}'\n");
$node->reload;
ok(becomes($secret{b}, 200), 'after a reload the new secret signs tokens');
is(status_with($secret{a}), 401, 'and the old one no longer');
my $offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "webgres.jwt_secret = '$short'\n");
$node->reload;
ok(WebgresTest::poll_until(sub { slurp_file($node->logfile, $offset) =~ /webgres\.jwt_secret is shorter than 32 bytes/ }),
	'a short secret at reload: logged as too short');
is(status_with($secret{b}), 200, 'and the secret before it stays in effect');

# ALTER SYSTEM works, and with log_statement off its text is not logged
# (psql sends the two statements one after the other).
$node->safe_psql('postgres', qq{SET log_statement = 'none';\nALTER SYSTEM SET webgres.jwt_secret = '$secret{c}';});
$node->reload;
ok(becomes($secret{c}, 200), 'ALTER SYSTEM SET webgres.jwt_secret and a reload: the new secret signs');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_file_settings WHERE name = 'webgres.jwt_secret' AND setting LIKE 'secret-%'}) > 0,
	1, 'a superuser reads the secret as written through pg_file_settings');
$node->safe_psql('postgres', q{GRANT SELECT ON pg_file_settings TO monitor;
	GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO monitor});
($ret, $out) = as_monitor(q{SELECT count(*) FROM pg_file_settings WHERE setting LIKE 'secret-%'});
ok($out > 0, 'so would anyone granted pg_file_settings: what docs/security.md says, and why the file is better');
$node->safe_psql('postgres', q{REVOKE SELECT ON pg_file_settings FROM monitor;
	REVOKE EXECUTE ON FUNCTION pg_show_all_file_settings() FROM monitor});

my $log = slurp_file($node->logfile);
unlike($log, qr/\Q$_\E/, "the server log holds no trace of secret $_") for map { $secret{$_} } qw(a b c);
unlike($log, qr/\Q$short\E/, 'nor of the short one');
unlike($log, qr/parameter "webgres\.jwt_secret" changed/, 'no reload logged a change of the setting');

# ---- the secret file ----
my $file = "$dir/jwt.secret";
open my $fh, '>', $file or die;
print $fh "$secret{file}\n";
close $fh;
chmod 0644, $file;
$offset = -s $node->logfile;
$node->append_conf('postgresql.conf', "webgres.jwt_secret_file = '$file'\n");
$node->reload;
ok(WebgresTest::poll_until(sub { slurp_file($node->logfile, $offset) =~ /webgres\.jwt_secret_file cannot be used: it has group or world access/ }),
	'a secret file others may read: a warning at reload');
ok(becomes($secret{c}, 401), 'and no HS token is accepted, not even with the setting\'s secret');
is(status_with($secret{file}), 401, 'nor with the file\'s');
chmod 0600, $file;
ok(becomes($secret{file}, 200), 'the file made u=rw only: its secret signs tokens (read again as it changed)');
like(slurp_file($node->logfile, $offset), qr/both webgres\.jwt_secret and webgres\.jwt_secret_file are set; the file is used/,
	'with both set, a warning says the file wins');
is(status_with($secret{c}), 401, 'and the setting\'s secret is not used');
($ret, $out) = as_monitor(q{SELECT current_setting('webgres.jwt_secret_file')});
is($out, $file, 'pg_monitor may see the file\'s path');
($ret, $out, $err) = as_monitor(qq{SELECT pg_read_file('$file')});
like($err, qr/permission denied/, 'but not read the file');

# webgres.jwt_sign() signs with the file's secret.
$node->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION webgres.jwt_sign(jsonb, interval) TO monitor});
($ret, $out, $err) = as_monitor(q{SELECT webgres.jwt_sign('{"role": "alice"}', interval '5 minutes')});
is(WebgresTest::request($port, 'GET', '/who', headers => { Authorization => "Bearer $out" })->{body},
	'alice', 'webgres.jwt_sign() signs with the file\'s secret');
chmod 0640, $file;
($ret, $out, $err) = as_monitor(q{SELECT webgres.jwt_sign('{"role": "alice"}')});
like($err, qr/the secret to sign JSON Web Tokens with cannot be read/, 'jwt_sign with an unusable file: an error');
unlike($err, qr/\Q$file\E|group or world/, 'which tells the caller nothing of the file');
like(slurp_file($node->logfile, $offset), qr/DETAIL:  webgres\.jwt_secret_file cannot be used: it has group or world access/,
	'the log has the reason');
chmod 0600, $file;

# A token verified with the file's secret is kept in a worker's cache; a
# new content of the file revokes it all the same (docs/authentication.md).
my $cached = token($secret{file});
is(WebgresTest::request($port, 'GET', '/who', headers => { Authorization => "Bearer $cached" })->{status},
	200, 'a token signed with the file\'s secret is accepted, and cached');
open $fh, '>', $file or die;
print $fh "$secret{b}\n";
close $fh;
ok(WebgresTest::poll_until(sub {
	WebgresTest::request($port, 'GET', '/who', headers => { Authorization => "Bearer $cached" })->{status} == 401 }, 10),
	'the file given another secret: the cached token is refused');
ok(becomes($secret{b}, 200), 'and the new secret signs tokens');

# ---- an open event stream ends when the secret changes ----
# As a request with its token is refused, a stream opened with an HS token
# ends (cleanly, as at exp) once the file's new content is seen; a stream
# of a route without auth goes on (docs/events.md).
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, owner, auth) VALUES
	('GET', '/feed', $$SELECT ARRAY['feed'] AS channels, current_user::text AS data FROM request$$,
	 'authenticator', 'required'),
	('GET', '/open-feed', $$SELECT ARRAY['feed'] AS channels, 'open' AS data FROM request$$,
	 'authenticator', 'none');
});
my $held = token($secret{b});
my ($authed, $open);
WebgresTest::poll_until(sub {
	$authed = SseReader::open_h1($port, '/feed', headers => { Authorization => "Bearer $held" });
	($authed->{head} // '') =~ m{^HTTP/1\.1 200};
});
$open = SseReader::open_h1($port, '/open-feed');
like($authed->{head} // '', qr{^HTTP/1\.1 200}, 'secret change: a stream opened with an HS token is open');
like($open->{head} // '', qr{^HTTP/1\.1 200}, 'secret change: a stream of a route without auth is open');
my $t0 = Time::HiRes::time;
open $fh, '>', $file or die;
print $fh "$secret{a}\n";
close $fh;
SseReader::read_until([ $authed, $open ], sub { $authed->{ended} }, 20);
my $took = Time::HiRes::time - $t0;
ok($authed->{ended}, 'secret change: the HS token\'s stream ends cleanly (last chunk)');
ok($took < 3, sprintf('secret change: within about two seconds (%.2f s)', $took));
ok(!$open->{ended} && !$open->{eof}, 'secret change: the stream without auth goes on');
my $before = $open->{other} // 0;
$node->safe_psql('postgres', "NOTIFY feed, 'still here'");
SseReader::read_until([$open], sub { ($open->{other} // 0) > $before }, 20);
ok(($open->{other} // 0) > $before, 'secret change: and is delivered to');
close $authed->{sock};
close $open->{sock};

$log = slurp_file($node->logfile);
unlike($log, qr/\Q$secret{file}\E/, 'the server log holds no trace of the file\'s secret');
unlike($log, qr/terminated by signal|FATAL/, 'no process crashed');
$node->stop;
done_testing();
