# Handlers that are one row of expressions (no FROM but the request) are
# evaluated without the executor: they must still see the request, follow
# changes to what they call, check privileges and time out, and handlers of
# any other shape must still run in the executor.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

# pg_stat_statements sees what the executor runs: it tells the two paths apart.
plan skip_all => 'pg_stat_statements is not in this installation (docs/versions.md)'
  unless WebgresTest::have_module('pg_stat_statements');
# webgres.inline_budget: each route runs once, on the loop, whatever the load (a
# run past 10 ms, cancelled and run again on an executor, could be counted twice).
my $node = WebgresTest->new_node('simple', workers => 1,
	conf => "webgres.handler_timeout = '500ms'\nwebgres.inline_budget = '60s'\n"
	  . "shared_preload_libraries = 'webgres,pg_stat_statements'\n"
	  . "pg_stat_statements.track = all\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE EXTENSION pg_stat_statements;
	CREATE ROLE app LOGIN;
	GRANT SELECT, INSERT, UPDATE, DELETE ON webgres.routes TO app;
	CREATE TABLE counts (n int);
	INSERT INTO counts VALUES (1), (2), (3);
	GRANT SELECT ON counts TO app;
	CREATE FUNCTION greet(who text) RETURNS text STABLE LANGUAGE plpgsql
		AS $$BEGIN RETURN 'hello ' || who; END$$;
	CREATE FUNCTION suffix(t text) RETURNS text IMMUTABLE LANGUAGE sql
		AS $$SELECT t || '!'$$;
	CREATE FUNCTION secret() RETURNS text VOLATILE LANGUAGE sql AS $$SELECT 'x'$$;
	REVOKE EXECUTE ON FUNCTION secret() FROM PUBLIC;
	CREATE VIEW hidden AS SELECT 'hidden'::text AS s;
});

sub app_route
{
	my ($path, $handler) = @_;
	WebgresTest::add_route($node, 'GET', $path, $handler,
		psql => { extra_params => [ '-U', 'app' ] });
}

app_route('/hi/:name', q{
	SELECT greet(request.params->>'name') || ' ' || coalesce(request.query->>'x', '-') AS body,
	       jsonb_build_object('X-Method', request.method) AS headers
	FROM request});
app_route('/suffix', q{SELECT suffix(request.query_string) AS body FROM request});
app_route('/random', q{SELECT random()::text AS body});
app_route('/count', q{SELECT count(*)::text AS body FROM counts});
app_route('/secret', q{SELECT secret() AS body});
app_route('/hidden', q{SELECT s AS body FROM hidden});
app_route('/fail', q{SELECT (1 / (length(request.path) - 5))::text AS body FROM request});
app_route('/sleep', q{SELECT pg_sleep(5)::text AS body});

my $res = WebgresTest::wait_for_status($port, '/hi/ann?x=1', 200);
is($res->{body}, 'hello ann 1', 'path captures and query parameters reach the expression');
is($res->{headers}{'x-method'}, 'GET', 'and so does every other column of request');
is(WebgresTest::http_get($port, '/hi/bob')->{body}, 'hello bob -', 'each request its own values');

isnt(WebgresTest::http_get($port, '/random')->{body}, WebgresTest::http_get($port, '/random')->{body},
	'a volatile expression is evaluated on every request');

# A function the expression calls is replaced: the next request sees it.
$node->safe_psql('postgres', q{CREATE OR REPLACE FUNCTION greet(who text) RETURNS text STABLE
	LANGUAGE plpgsql AS $$BEGIN RETURN 'hi ' || who; END$$});
is(WebgresTest::http_get($port, '/hi/ann')->{body}, 'hi ann -', 'a replaced function is used at once');

# pg_stat_statements counts what the executor runs: a handler that is one
# row of expressions is not among it, one that reads a table is, and a
# statement inside a function the expression calls is counted on its own.
sub calls
{
	my ($like) = @_;
	return $node->safe_psql('postgres',
		qq{SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE '$like'});
}
sub three_times
{
	my ($path, $like) = @_;
	my $before = calls($like);
	my @bodies = map { WebgresTest::http_get($port, $path)->{body} } 1 .. 3;
	return (join(',', @bodies), calls($like) - $before);
}
my ($bodies, $runs) = three_times('/suffix?a', '%suffix(request.query_string)%');
is($bodies, 'a!,a!,a!', 'inlined function');
is($runs, 0, 'one row of expressions: the executor does not run the handler');
($bodies, $runs) = three_times('/count', '%count(*)::text AS body FROM counts%');
is($bodies, '3,3,3', 'a handler that reads a table');
is($runs, 3, 'runs in the executor');

# The function's new body reads a table: it is no longer inlined, and its
# own statement runs (in its own executor) on every request.
$node->safe_psql('postgres', q{CREATE OR REPLACE FUNCTION suffix(t text) RETURNS text IMMUTABLE
	LANGUAGE sql AS $$SELECT t || (SELECT sum(n) FROM counts)::text$$});
($bodies, $runs) = three_times('/suffix?a', '%sum(n) FROM counts%');
is($bodies, 'a6,a6,a6', 'a replaced function that reads a table');
is($runs, 3, 'its statement runs on every request');
$node->safe_psql('postgres', q{INSERT INTO counts VALUES (4)});
is(WebgresTest::http_get($port, '/suffix?a')->{body}, 'a10', 'and sees new rows');
$node->safe_psql('postgres', q{CREATE OR REPLACE FUNCTION suffix(t text) RETURNS text IMMUTABLE
	LANGUAGE sql AS $$SELECT t || '?'$$});
($bodies, $runs) = three_times('/suffix?b', '%suffix(request.query_string)%');
is($bodies, 'b?,b?,b?', 'and back to an inlined one');
is($runs, 0, 'still without the executor');

$res = WebgresTest::http_get($port, '/secret');
is($res->{status}, 403, 'a function the owner may not execute: 403');
like(slurp_file($node->logfile), qr/permission denied for function secret/, 'the log says why');
$node->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION secret() TO app});
is(WebgresTest::http_get($port, '/secret')->{body}, 'x', 'granted, it runs');

# A view the planner folds to a constant still has its privileges checked.
$res = WebgresTest::http_get($port, '/hidden');
is($res->{status}, 403, 'a view the owner may not read, folded to a constant: 403');
unlike($res->{body}, qr/hidden/, 'nothing of it is sent');
$node->safe_psql('postgres', q{GRANT SELECT ON hidden TO app});
is(WebgresTest::http_get($port, '/hidden')->{body}, 'hidden', 'granted, it is served');

$res = WebgresTest::http_get($port, '/fail');
is($res->{status}, 400, 'an error in the expression answers with its status');
like(slurp_file($node->logfile), qr/division by zero/, 'and is logged');

$res = WebgresTest::http_get($port, '/sleep');
is($res->{status}, 504, 'an expression that runs too long times out: 504');

is(WebgresTest::http_get($port, '/hi/cy')->{body}, 'hi cy -', 'the worker keeps serving');

# A compiled expression is kept as long as its plan, across transactions.
# Privileges are still checked in every transaction: a REVOKE on a built-in
# function (which no plan depends on) or a membership taken away changes no
# plan, yet refuses the very next request.
$node->safe_psql('postgres', q{
	CREATE ROLE upper_users NOLOGIN;
	REVOKE EXECUTE ON FUNCTION upper(text) FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION upper(text) TO upper_users;
	GRANT upper_users TO app;
});
app_route('/upper', q{SELECT upper(request.query->>'s') AS body FROM request});
is(WebgresTest::wait_for_status($port, '/upper?s=ab', 200)->{body}, 'AB', 'a built-in function through a role');
is(WebgresTest::http_get($port, '/upper?s=cd')->{body}, 'CD', 'and again, from the kept expression');
$node->safe_psql('postgres', q{REVOKE upper_users FROM app});
is(WebgresTest::http_get($port, '/upper?s=ef')->{status}, 403, 'the membership taken away: 403 at once');
$node->safe_psql('postgres', q{GRANT upper_users TO app});
is(WebgresTest::http_get($port, '/upper?s=gh')->{body}, 'GH', 'given back: served');
$node->safe_psql('postgres', q{REVOKE EXECUTE ON FUNCTION upper(text) FROM upper_users});
is(WebgresTest::http_get($port, '/upper?s=ij')->{status}, 403, 'EXECUTE revoked from the role: 403 at once');
$node->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION upper(text) TO PUBLIC});
is(WebgresTest::http_get($port, '/upper?s=kl')->{body}, 'KL', 'granted to everyone: served');

# What compiling bakes in and no plan invalidation follows is never kept
# stale.  A domain's checks: one added is enforced on the next request.
$node->safe_psql('postgres', q{
	CREATE DOMAIN posint AS int CHECK (VALUE > 0);
	CREATE TABLE pairs (a int, b text);
});
app_route('/posint', q{SELECT (request.query->>'n')::int::posint::text AS body FROM request});
is(WebgresTest::wait_for_status($port, '/posint?n=50', 200)->{body}, '50', 'a domain value');
is(WebgresTest::http_get($port, '/posint?n=60')->{body}, '60', 'and another');
$node->safe_psql('postgres', q{ALTER DOMAIN posint ADD CONSTRAINT small CHECK (VALUE < 10)});
is(WebgresTest::http_get($port, '/posint?n=50')->{status}, 400, 'a check added to the domain refuses at once');
is(WebgresTest::http_get($port, '/posint?n=5')->{body}, '5', 'and lets the rest through');
is(WebgresTest::http_get($port, '/posint?n=0')->{status}, 400, 'the first check still refuses: 400');

# A row of a table's type: after a column is added, the plan made before
# builds the row to the new type, the new column NULL (as the executor
# builds it), not a row of the old type that reads the column's default.
app_route('/pair', q{SELECT to_jsonb(ROW(1, request.query->>'b')::pairs)::text AS body FROM request});
is(WebgresTest::wait_for_status($port, '/pair?b=x', 200)->{body}, '{"a": 1, "b": "x"}', 'a row of a named type');
is(WebgresTest::http_get($port, '/pair?b=y')->{body}, '{"a": 1, "b": "y"}', 'and again, from the kept expression');
$node->safe_psql('postgres', q{ALTER TABLE pairs ADD COLUMN c int DEFAULT 7});
is(WebgresTest::http_get($port, '/pair?b=z')->{body}, '{"a": 1, "b": "z", "c": null}',
	'a column added to its type: the row is built to the new type');

# An IN list of nine or more constants is looked up in a hash table that
# its first evaluation builds and keeps with the compiled expression: each
# request, in a transaction of its own, gets its own answer from it.  (That
# the table outlives the memory of the request that built it is shown by
# t/012, whose requests share one transaction.)
app_route('/in', q{SELECT CASE WHEN request.query->>'w' IN ('a', 'b', 'c', 'd', 'e', 'f',
	'g', 'h', 'i', 'j', 'k', 'l') THEN 'in' ELSE 'out' END || ' ' || repeat('x', 3000) AS body
	FROM request});
WebgresTest::wait_for_status($port, '/in?w=a', 200);
my @in;
for my $w (qw(a z l m b y c))
{
	push @in, (split / /, WebgresTest::http_get($port, "/in?w=$w")->{body})[0];
	WebgresTest::http_get($port, "/hi/$w$w$w");
}
is(join(',', @in), 'in,out,in,out,in,out,in', 'a hashed IN list answers right on every request');

# An error leaves nothing half made behind: the next request is served.
app_route('/div', q{SELECT (100 / (request.query->>'d')::int)::text AS body FROM request});
is(WebgresTest::wait_for_status($port, '/div?d=4', 200)->{body}, '25', 'an expression served');
is(WebgresTest::http_get($port, '/div?d=0')->{status}, 400, 'its error: 400');
is(WebgresTest::http_get($port, '/div?d=5')->{body}, '20', 'and the next request is served');

# Row locks taken below the top query (a subquery, a CTE, a sublink) make a
# handler one that writes: it must not run in read-only mode, where SPI
# refuses FOR UPDATE ("not allowed in a non-volatile function").
$node->safe_psql('postgres', q{
	CREATE TABLE locked (id int PRIMARY KEY, v text);
	INSERT INTO locked VALUES (1, 'locked');
	GRANT SELECT, UPDATE ON locked TO app;
});
app_route('/lock/sublink', q{SELECT (SELECT v FROM locked WHERE id = 1 FOR UPDATE) AS body FROM request});
app_route('/lock/from', q{SELECT s.v AS body FROM (SELECT v FROM locked WHERE id = 1 FOR SHARE) s, request});
app_route('/lock/cte', q{WITH l AS (SELECT v FROM locked WHERE id = 1 FOR UPDATE) SELECT v AS body FROM l, request});
for my $path ('/lock/sublink', '/lock/from', '/lock/cte')
{
	$res = WebgresTest::wait_for_status($port, $path, 200, 10);
	is($res->{status} . ' ' . $res->{body}, '200 locked', "$path: a row lock below the top query runs");
}

$node->stop;
done_testing();
