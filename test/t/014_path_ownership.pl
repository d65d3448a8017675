# Paths belong to their owners: a publishing role cannot capture another
# role's path over HTTP, concurrent saves cannot both take one path, and
# routes follow DROP ROLE, DROP OWNED and REASSIGN OWNED.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('ownership', workers => 1);
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE admin_app LOGIN;
	CREATE ROLE alice LOGIN;
	CREATE ROLE bob LOGIN;
	GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO admin_app, alice, bob;
});
sub as
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $role ]);
	return ($ret, $err);
}

my ($ret, $err) = as('admin_app', q{INSERT INTO webgres.routes (method, path, handler)
	VALUES ('GET', '/admin', $$SELECT 'admin page' AS body FROM request WHERE request.method IS NOT NULL$$)});
is($ret, 0, 'admin_app publishes GET /admin');
is(WebgresTest::wait_for_status($port, '/admin', 200)->{body}, 'admin page', 'and it answers');

# The capture attempt of the issue, and its variants.  (The admin's handler
# reads request, so every request runs it in a transaction, which sees
# route changes at once.)
($ret, $err) = as('alice', q{INSERT INTO webgres.routes (method, path, priority, handler)
	VALUES ('GET', '/admin', 1000, $$SELECT 'captured: ' || (request.headers->>'cookie') AS body FROM request$$)});
like($err, qr/route path "\/admin" overlaps route GET \/admin of role "admin_app"/,
	'alice cannot save GET /admin above the admin\'s');
($ret, $err) = as('alice', q{INSERT INTO webgres.routes (method, path, priority, handler)
	VALUES (NULL, '/*', 2000, $$SELECT 'all: ' || (request.headers->>'cookie') AS body FROM request$$)});
like($err, qr/overlaps route GET \/admin/, 'nor a catch-all');
($ret, $err) = as('alice', q{INSERT INTO webgres.routes (method, path, handler)
	VALUES ('POST', '/admin', $$SELECT 'posted' AS body$$)});
like($err, qr/overlaps route GET \/admin/, 'nor another method on the admin\'s path');

my $res = WebgresTest::request($port, 'GET', '/admin', headers => { Cookie => 'session=secret' });
is($res->{status}, 200, '/admin still answers 200');
is($res->{body}, 'admin page', 'with the admin\'s page');
unlike($res->{body}, qr/secret/, 'and no cookie of the admin\'s users');
is(WebgresTest::request($port, 'POST', '/admin')->{status}, 405, 'POST /admin is still the admin\'s 405');

# Two saves of overlapping paths at once: the second waits for the first
# and is then refused, even under REPEATABLE READ.
my $s1 = $node->background_psql('postgres', extra_params => [ '-U', 'alice' ]);
my $s2 = $node->background_psql('postgres', extra_params => [ '-U', 'bob' ], on_error_stop => 0);
# bob's snapshot predates alice's save: the check must see it all the same.
$s2->query_safe(q{BEGIN ISOLATION LEVEL REPEATABLE READ});
$s2->query_safe(q{SELECT count(*) FROM webgres.routes});
$s1->query_safe(q{BEGIN});
$s1->query_safe(q{INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/shared/:x', $$SELECT 'alice' AS body$$)});
$s2->query_until(qr/started/, q{\echo started
INSERT INTO webgres.routes (method, path, handler) VALUES ('POST', '/shared/*', $$SELECT 'bob' AS body$$);
});
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND locktype = 'object'
	  AND classid = 'pg_class'::regclass AND objid = 'webgres.routes'::regclass}),
	'the second save waits for the first');
$s1->query_safe(q{COMMIT});
my ($out, $failed) = $s2->query(q{SELECT 'after'});
like($s2->{stderr}, qr/route path "\/shared\/\*" overlaps route GET \/shared\/:x of role "alice"/,
	'and is refused once the first commits');
$s2->query(q{COMMIT});
$s1->quit;
$s2->quit;
is($node->safe_psql('postgres', q{SELECT string_agg(path || ' ' || owner, ',') FROM webgres.routes WHERE path LIKE '/shared%'}),
	'/shared/:x alice', 'only the first save is there');

# A route owner cannot be dropped; DROP OWNED and REASSIGN OWNED act on routes.
# current_user, not a constant: the handler runs on every request (a
# constant route may be answered from memory), as its owner.
($ret, $err) = as('bob', q{INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bob', $$SELECT current_user::text AS body$$)});
is(WebgresTest::wait_for_status($port, '/bob', 200)->{body}, 'bob', 'bob\'s route serves, as bob');
($ret, my $out2, $err) = $node->psql('postgres', q{REVOKE ALL ON webgres.routes FROM bob; DROP ROLE bob});
like($err, qr/role "bob" cannot be dropped because some objects depend on it\nDETAIL:  owner of webgres route GET \/bob/,
	'DROP ROLE of a route owner is refused, naming the route');
$node->safe_psql('postgres', q{REASSIGN OWNED BY bob TO alice; DROP ROLE bob});
is($node->safe_psql('postgres', q{SELECT owner FROM webgres.routes WHERE path = '/bob'}), 'alice',
	'REASSIGN OWNED gave the route to alice');
is(WebgresTest::wait_for_body($port, '/bob', 'alice')->{body}, 'alice', 'and it still serves, now as alice');
$node->safe_psql('postgres', q{DROP OWNED BY alice});
is(WebgresTest::wait_for_status($port, '/bob', 404)->{status}, 404, 'DROP OWNED deleted alice\'s routes');
is($node->safe_psql('postgres', q{SELECT count(*) FROM webgres.routes WHERE owner = 'alice'::regrole}), '0',
	'none left');
$node->safe_psql('postgres', q{DROP ROLE alice});

# Route owners are recorded in pg_shdepend, so that Postgres refuses their
# DROP ROLE from every database, not only from the one serving them.
$node->safe_psql('postgres', q{
	CREATE DATABASE elsewhere;
	CREATE ROLE carol LOGIN;
	CREATE ROLE dave LOGIN;
	GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO carol, dave;
});
($ret, $err) = as('carol', q{INSERT INTO webgres.routes (method, path, handler) VALUES
	('GET', '/carol/a', $$SELECT 'a' AS body$$), ('GET', '/carol/b', $$SELECT 'b' AS body$$)});
is($ret, 0, 'carol saves two routes');
my $routes_class = $node->safe_psql('postgres', q{SELECT 'webgres.routes'::regclass::oid});
sub entries
{
	my ($role) = @_;
	# An entry whose route is gone shows as "gone".
	return $node->safe_psql('postgres', qq{SELECT coalesce(string_agg(coalesce(r.path, 'gone'), ',' ORDER BY r.path), '')
		FROM pg_shdepend d LEFT JOIN webgres.routes r ON r.id = d.objid
		WHERE d.dbid = (SELECT oid FROM pg_database WHERE datname = 'postgres')
		AND d.classid = $routes_class AND d.objsubid = 0 AND d.deptype = 'o'
		AND d.refclassid = 'pg_authid'::regclass AND d.refobjid = '$role'::regrole});
}
is(entries('carol'), '/carol/a,/carol/b', 'each route has its owner entry');
# Only the routes keep carol and dave now (grants are entries too).
$node->safe_psql('postgres', q{REVOKE ALL ON webgres.routes FROM carol, dave});
sub drop_elsewhere
{
	my ($role) = @_;
	my ($r, $o, $e) = $node->psql('elsewhere', "\\set VERBOSITY verbose\nDROP ROLE $role");
	return ($r, $e);
}
($ret, $err) = drop_elsewhere('carol');
like($err, qr/ERROR:  2BP01: role "carol" cannot be dropped because some objects depend on it\nDETAIL:  2 objects in database postgres/,
	'DROP ROLE of a route owner from another database is refused (2BP01), counting its routes');
$node->safe_psql('postgres', q{DELETE FROM webgres.routes WHERE path = '/carol/b'});
is(entries('carol'), '/carol/a', 'DELETE of a route removes its entry');
($ret, $err) = drop_elsewhere('carol');
like($err, qr/DETAIL:  1 object in database postgres/, 'and the refusal counts one route');

($ret, $out, $err) = $node->psql('postgres', q{INSERT INTO webgres.routes (id, method, path, handler, owner)
	VALUES (5000000000, 'GET', '/carol/big', $$SELECT 1 AS status$$, 'carol')});
like($err, qr/ERROR:  route id 5000000000 is out of range/, 'a route id that cannot name an entry is refused');

# DROP OWNED and REASSIGN OWNED act before Postgres, but with its checks.
($ret, $err) = as('dave', q{REASSIGN OWNED BY carol TO dave});
like($err, qr/ERROR:  permission denied to reassign objects/, 'REASSIGN OWNED keeps Postgres\' privilege check');
($ret, $err) = as('dave', q{DROP OWNED BY carol});
like($err, qr/ERROR:  permission denied to drop objects/, 'so does DROP OWNED');
is(entries('carol'), '/carol/a', 'and neither touched carol\'s route');

$node->safe_psql('postgres', q{REASSIGN OWNED BY carol TO dave});
is(entries('carol') . ';' . entries('dave'), ';/carol/a', 'REASSIGN OWNED moves the entry to the new owner');
($ret, $err) = drop_elsewhere('carol');
is($ret, 0, 'then DROP ROLE of the old owner from another database succeeds') or diag($err);
($ret, $err) = drop_elsewhere('dave');
like($err, qr/ERROR:  2BP01: role "dave" cannot be dropped because some objects depend on it\nDETAIL:  1 object in database postgres/,
	'and that of the new owner is refused');

$node->safe_psql('postgres', q{UPDATE webgres.routes SET id = id + 1000 WHERE path = '/carol/a'});
is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_shdepend WHERE classid = $routes_class
	AND objid = (SELECT id FROM webgres.routes WHERE path = '/carol/a') AND refobjid = 'dave'::regrole}), '1',
	'a new id moves the entry along');
is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_shdepend WHERE classid = $routes_class
	AND refobjid = 'dave'::regrole}), '1', 'leaving none behind');

$node->safe_psql('postgres', q{DROP OWNED BY dave});
is(entries('dave'), '', 'DROP OWNED deletes the routes and their entries');
($ret, $err) = drop_elsewhere('dave');
is($ret, 0, 'then DROP ROLE from another database succeeds') or diag($err);

# Entries are kept under session_replication_role = replica too; one left
# by a route deleted with the triggers disabled does not break DROP OWNED
# or DROP ROLE in the routes' database.
$node->safe_psql('postgres', q{
	CREATE ROLE frank;
	CREATE ROLE gina;
	SET client_min_messages = warning;
	SET session_replication_role = replica;
	INSERT INTO webgres.routes (method, path, handler, owner, search_path) VALUES
		('GET', '/frank', $$SELECT 1 AS status$$, 'frank', 'public'),
		('GET', '/gina', $$SELECT 1 AS status$$, 'gina', 'public');
});
is(entries('frank') . ';' . entries('gina'), '/frank;/gina', 'a route saved as a replica records its owner');
$node->safe_psql('postgres', q{
	ALTER TABLE webgres.routes DISABLE TRIGGER route_owner_recorded;
	DELETE FROM webgres.routes WHERE path IN ('/frank', '/gina');
	ALTER TABLE webgres.routes ENABLE ALWAYS TRIGGER route_owner_recorded;
});
($ret, $err) = drop_elsewhere('frank');
like($err, qr/DETAIL:  1 object in database postgres/, 'an entry left behind keeps its role from other databases');
($ret, $out, $err) = $node->psql('postgres', q{DROP OWNED BY frank; DROP ROLE frank});
is($ret, 0, 'but not from DROP OWNED in its database') or diag($err);
($ret, $out, $err) = $node->psql('postgres', q{DROP ROLE gina});
is($ret, 0, 'nor from DROP ROLE there') or diag($err);

# A route loaded without the triggers (pg_upgrade, --disable-triggers) is
# recorded by record_route_owners().
$node->safe_psql('postgres', q{
	CREATE ROLE ivy;
	ALTER TABLE webgres.routes DISABLE TRIGGER route_owner_recorded;
	INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/ivy', $$SELECT 1 AS status$$, 'ivy');
	ALTER TABLE webgres.routes ENABLE ALWAYS TRIGGER route_owner_recorded;
});
is(entries('ivy'), '', 'a route loaded without the triggers has no entry');
$node->safe_psql('postgres', q{SELECT webgres.record_route_owners()});
is(entries('ivy'), '/ivy', 'record_route_owners() records it');
$node->safe_psql('postgres', q{DELETE FROM webgres.routes WHERE path = '/ivy'; DROP ROLE ivy});

# TRUNCATE and DROP EXTENSION take the entries along.
$node->safe_psql('postgres', q{
	CREATE ROLE erin;
	SET client_min_messages = warning;
	INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/erin', $$SELECT 1 AS status$$, 'erin');
});
is(entries('erin'), '/erin', 'a superuser\'s route given to erin records erin');
$node->safe_psql('postgres', q{TRUNCATE webgres.routes});
is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_shdepend WHERE classid = $routes_class}), '0',
	'TRUNCATE forgets every entry');
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/erin', $$SELECT 1 AS status$$, 'erin');
});
($ret, $err) = drop_elsewhere('erin');
like($err, qr/DETAIL:  1 object in database postgres/, 'erin\'s new route keeps her');
$node->safe_psql('postgres', q{DROP EXTENSION webgres});
is($node->safe_psql('postgres', qq{SELECT count(*) FROM pg_shdepend WHERE classid = $routes_class}), '0',
	'DROP EXTENSION forgets every entry');
($ret, $err) = drop_elsewhere('erin');
is($ret, 0, 'and DROP ROLE of a former route owner then succeeds') or diag($err);

# Dropped where webgres is not loaded (no longer preloaded), the table
# leaves its entries behind: docs/backup.md says how to remove them.
$node->safe_psql('postgres', q{
	SET client_min_messages = warning;
	CREATE EXTENSION webgres;
	CREATE ROLE hal;
	INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/hal', $$SELECT 1 AS status$$, 'hal');
});
$routes_class = $node->safe_psql('postgres', q{SELECT 'webgres.routes'::regclass::oid});
is(entries('hal'), '/hal', 'hal\'s route is recorded');
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''\n");
$node->restart;
$node->safe_psql('postgres', q{DROP EXTENSION webgres});
($ret, $err) = drop_elsewhere('hal');
like($err, qr/DETAIL:  1 object in database postgres/, 'without the library, DROP EXTENSION leaves the entry');
$node->safe_psql('postgres', q{DELETE FROM pg_catalog.pg_shdepend
	WHERE dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
	AND classid NOT IN (SELECT oid FROM pg_catalog.pg_class)});
($ret, $err) = drop_elsewhere('hal');
is($ret, 0, 'which the documented DELETE removes') or diag($err);

$node->stop;
done_testing();
