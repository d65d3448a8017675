# Handlers run with their route owner's privileges and cannot escape them.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('privileges', workers => 1);
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE app LOGIN;
	CREATE TABLE public_info (v text);
	INSERT INTO public_info VALUES ('visible');
	CREATE TABLE secrets (v text);
	INSERT INTO secrets VALUES ('classified');
	GRANT SELECT ON public_info TO app;
	GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO app;
});

sub app_route
{
	my ($path, $handler) = @_;
	WebgresTest::add_route($node, 'GET', $path, $handler,
		psql => { extra_params => [ '-U', 'app' ] });
}

app_route('/info', q{SELECT v AS body FROM public_info});
app_route('/secret', q{SELECT v AS body FROM secrets});
app_route('/whoami', q{SELECT current_user || ',' || session_user AS body});
app_route('/setrole', q{SELECT set_config('role', 'postgres', false) AS body});
app_route('/setsession', q{SELECT set_config('session_authorization', 'postgres', false) AS body});
app_route('/setpath', q{SELECT set_config('search_path', 'pg_catalog', false) AS body});
app_route('/path', q{SELECT current_setting('search_path') AS body});
app_route('/setx', q{SELECT set_config('webgres_test.x', 'leaked', false) AS body});
app_route('/getx', q{SELECT coalesce(nullif(current_setting('webgres_test.x', true), ''), 'unset') AS body});
# Both on the worker's own loop, so that a leak would be seen by the next request.
$node->safe_psql('postgres', q{UPDATE webgres.routes SET mode = 'inline' WHERE path IN ('/setx', '/getx')});

is($node->safe_psql('postgres', q{SELECT owner FROM webgres.routes WHERE path = '/info'}), 'app',
	'the owner is the role that created the route');

my $res = WebgresTest::wait_for_status($port, '/info', 200);
is($res->{body}, 'visible', 'the owner can read what it was granted');
$res = WebgresTest::http_get($port, '/secret');
is($res->{status}, 403, 'a table the owner cannot read: 403');
unlike($res->{body}, qr/classified/, 'nothing of it is sent');
like(slurp_file($node->logfile), qr/permission denied for table secrets/, 'refused for the privilege, says the log');
# The same route serves the table once its owner may read it: the 403 came
# from the owner's privileges, not from the route.
$node->safe_psql('postgres', 'GRANT SELECT ON secrets TO app');
is(WebgresTest::wait_for_status($port, '/secret', 200)->{body}, 'classified', 'granted to the owner: served');
$node->safe_psql('postgres', 'REVOKE SELECT ON secrets FROM app');
$res = WebgresTest::wait_for_status($port, '/secret', 403);
is($res->{status}, 403, 'revoked again: 403');
unlike($res->{body}, qr/classified/, 'and nothing of it is sent');
is(WebgresTest::http_get($port, '/whoami')->{body}, 'app,postgres', 'current_user is the owner');

# SET ROLE and SET SESSION AUTHORIZATION cannot be used to escape.
is(WebgresTest::http_get($port, '/setrole')->{status}, 403, 'set_config(role) is refused: 403');
is(WebgresTest::http_get($port, '/setsession')->{status}, 403, 'set_config(session_authorization) is refused: 403');
is(WebgresTest::http_get($port, '/whoami')->{body}, 'app,postgres', 'still the owner afterwards');
like(slurp_file($node->logfile), qr/cannot set parameter "role" within security-definer function/,
	'the log says why');

# Settings a handler changes end with its request.
my $before = WebgresTest::http_get($port, '/path')->{body};
is(WebgresTest::http_get($port, '/setpath')->{body}, 'pg_catalog', 'handler changed search_path');
is(WebgresTest::http_get($port, '/path')->{body}, $before, 'the next request has the old search_path');
# The route's own search_path is set for each request anyway: a setting
# nothing sets again shows whether a change outlives its request.
is(WebgresTest::http_get($port, '/getx')->{body}, 'unset', 'a custom setting is unset at first');
is(WebgresTest::http_get($port, '/setx')->{body}, 'leaked', 'a handler sets it (not locally)');
is(WebgresTest::http_get($port, '/getx')->{body}, 'unset', 'the next request does not see it');

# A superuser's route says so when it is created.
my ($ret, $out, $err) = $node->psql('postgres',
	q{INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/su', 'SELECT 1 AS status')});
like($err, qr/runs its handler with superuser privileges/, 'superuser-owned route gives a notice');

# Routes of a dropped role are skipped, with a warning, not run as someone else.
$node->safe_psql('postgres', q{
	CREATE ROLE temp_owner;
	GRANT SELECT ON public_info TO temp_owner;
	INSERT INTO webgres.routes (method, path, handler, owner) VALUES ('GET', '/orphan', 'SELECT v AS body FROM public_info', 'temp_owner');
});
is(WebgresTest::wait_for_status($port, '/orphan', 200)->{body}, 'visible', 'route of temp_owner served');
$node->safe_psql('postgres', q{REVOKE ALL ON public_info FROM temp_owner});
my (undef, undef, $drop_err) = $node->psql('postgres', q{DROP ROLE temp_owner});
like($drop_err, qr/role "temp_owner" cannot be dropped because some objects depend on it/,
	'a route owner cannot be dropped where its routes are');
# From another database too: the route's owner entry in pg_shdepend keeps it.
$node->safe_psql('postgres', q{CREATE DATABASE elsewhere});
(undef, undef, $drop_err) = $node->psql('elsewhere', q{DROP ROLE temp_owner});
like($drop_err, qr/role "temp_owner" cannot be dropped because some objects depend on it\nDETAIL:  1 object in database postgres/,
	'nor from another database');
# A route saved before 1.3 had no entry, and its owner went that way.
$node->safe_psql('postgres', q{DELETE FROM pg_shdepend
	WHERE classid = 'webgres.routes'::regclass AND refobjid = 'temp_owner'::regrole});
$node->safe_psql('elsewhere', q{DROP ROLE temp_owner});
# The DROP did not touch webgres.routes; a no-op statement fires the reload trigger.
$node->safe_psql('postgres', q{DELETE FROM webgres.routes WHERE false});
is(WebgresTest::http_get($port, '/orphan')->{status}, 404, 'route whose owner is gone is not served');
like(slurp_file($node->logfile), qr/route GET \/orphan .* is ignored: its owner role .* no longer exists/,
	'and the log says why');

$node->stop;
done_testing();
