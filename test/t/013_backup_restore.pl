# Routes survive pg_dump and restore (plain through psql, custom through
# pg_restore) and serve from the restored database, whatever their handlers
# name unqualified; a route runs with the search_path it was saved with.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('backup', workers => 1, no_extension => 1);
my $port = $node->{webgres_port};
my $tmp = PostgreSQL::Test::Utils::tempdir;

$node->safe_psql('postgres', q{
	CREATE DATABASE app;
	CREATE DATABASE restored_plain;
	CREATE DATABASE restored_custom;
	CREATE ROLE app_owner LOGIN;
});
$node->append_conf('postgresql.conf', "webgres.database = 'app'\n");
$node->restart;
WebgresTest::wait_for_listen($port) or die "not listening";
$node->safe_psql('app', q{
	CREATE EXTENSION webgres;
	CREATE TABLE users (name text);
	INSERT INTO users VALUES ('ann');
	CREATE SCHEMA myapp;
	CREATE TABLE myapp.things (name text);
	INSERT INTO myapp.things VALUES ('lamp');
	CREATE TABLE counters (name text PRIMARY KEY, n int);
	GRANT USAGE ON SCHEMA myapp TO app_owner;
	GRANT SELECT ON users, myapp.things TO app_owner;
	GRANT SELECT, INSERT, UPDATE ON counters TO app_owner;
	GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO app_owner;
});

# Routes of a publishing role: one on public (the default search_path),
# one saved under another search_path, one whose ON CONFLICT needs the
# primary key (which a restore creates after loading the data).
$node->safe_psql('app', q{
	SET ROLE app_owner;
	INSERT INTO webgres.routes (method, path, handler)
		VALUES ('GET', '/users', $$SELECT string_agg(name, ',') AS body FROM users$$);
	INSERT INTO webgres.routes (method, path, handler)
		VALUES ('POST', '/hit', $$INSERT INTO counters VALUES ('hits', 1)
			ON CONFLICT (name) DO UPDATE SET n = counters.n + 1 RETURNING n::text AS body$$);
	SET search_path = myapp, public;
	INSERT INTO webgres.routes (method, path, handler)
		VALUES ('GET', '/things', $$SELECT string_agg(name, ',') AS body FROM things$$);
});
# A superuser's route, saved with search_path myapp only.
$node->safe_psql('app', q{
	SET client_min_messages = warning;
	SET search_path = myapp;
	INSERT INTO webgres.routes (method, path, handler)
		VALUES ('GET', '/things-su', $$SELECT 'su:' || string_agg(name, ',') AS body FROM things$$);
});

# The search_path a route was checked with is the one it runs with.
sub check_serving
{
	my ($what) = @_;
	my $res = WebgresTest::wait_for_status($port, '/users', 200);
	is($res->{status} . ' ' . $res->{body}, '200 ann', "$what: /users (public, default search_path)");
	$res = WebgresTest::http_get($port, '/things');
	is($res->{status} . ' ' . $res->{body}, '200 lamp', "$what: /things (saved under search_path myapp, public)");
	$res = WebgresTest::http_get($port, '/things-su');
	is($res->{status} . ' ' . $res->{body}, '200 su:lamp', "$what: /things-su (saved under search_path myapp)");
	$res = WebgresTest::request($port, 'POST', '/hit');
	is($res->{status}, 200, "$what: POST /hit (ON CONFLICT on the primary key)");
}
check_serving('original');
is($node->safe_psql('app', q{SELECT search_path FROM webgres.routes WHERE path = '/things'}),
	'myapp, public', 'the route records the search_path it was saved with');

my $routes_sql = q{SELECT id, method, path, priority, handler, owner, search_path
	FROM webgres.routes ORDER BY id};
my $original = $node->safe_psql('app', $routes_sql);

# Route owners are recorded in pg_shdepend (but the bootstrap superuser,
# whom Postgres never records); a restore records them again.
my $owners_sql = q{SELECT string_agg(d.objid || ' ' || d.refobjid::regrole, ',' ORDER BY d.objid)
	FROM pg_shdepend d JOIN pg_database db ON db.oid = d.dbid
	WHERE db.datname = current_database() AND d.classid = 'webgres.routes'::regclass
	AND d.deptype = 'o'};
my $owners = $node->safe_psql('app', $owners_sql);
is($owners, $node->safe_psql('app', q{SELECT string_agg(id || ' ' || owner, ',' ORDER BY id)
	FROM webgres.routes WHERE owner <> 10::oid::regrole}), 'every route owner is recorded in pg_shdepend');
is(scalar(() = $owners =~ /app_owner/g), 3, 'the three routes of app_owner');

# Plain format through psql, stopping at the first error.
$node->command_ok([ 'pg_dump', '-d', $node->connstr('app'), '-f', "$tmp/app.sql" ], 'pg_dump -Fp');
my ($ret, $out, $err) = $node->psql('restored_plain', undef,
	extra_params => [ '-v', 'ON_ERROR_STOP=1', '-f', "$tmp/app.sql" ]);
is($ret, 0, 'psql restores the plain dump without an error');
unlike($err, qr/ERROR/, 'and prints none') or diag($err);
is($node->safe_psql('restored_plain', $routes_sql), $original, 'plain: every route restored as it was');
is($node->safe_psql('restored_plain', $owners_sql), $owners, 'plain: and every owner recorded');

# Custom format through pg_restore.
$node->command_ok([ 'pg_dump', '-Fc', '-d', $node->connstr('app'), '-f', "$tmp/app.dump" ], 'pg_dump -Fc');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored_custom'), "$tmp/app.dump" ],
	'pg_restore restores the custom dump without an error');
is($node->safe_psql('restored_custom', $routes_sql), $original, 'custom: every route restored as it was');
is($node->safe_psql('restored_custom', $owners_sql), $owners, 'custom: and every owner recorded');

# The id sequence came along: a new route does not collide with a restored one.
is($node->safe_psql('restored_custom', q{
	INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/new', 'SELECT 1 AS status')
	RETURNING id > (SELECT max(id) FROM webgres.routes WHERE path <> '/new')}), 't',
	'a route added after the restore gets a new id');

# Each restored database serves every route.
for my $db ('restored_plain', 'restored_custom')
{
	$node->append_conf('postgresql.conf', "webgres.database = '$db'\n");
	$node->restart;
	WebgresTest::wait_for_listen($port) or die "not listening";
	check_serving($db);
}

$node->stop;
done_testing();
