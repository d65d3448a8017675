# Handlers that are one row of expressions (no FROM but the request) are
# evaluated without the executor: they must still see the request, follow
# changes to what they call, check privileges, time out, and go back to the
# executor when a change gives them a plan of another shape.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('simple', workers => 1,
	conf => "webgres.handler_timeout = '500ms'\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
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
app_route('/secret', q{SELECT secret() AS body});
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

# An inlined function whose new body reads a table: the plan is no longer
# one row of expressions, and the executor runs it.
is(WebgresTest::http_get($port, '/suffix?a')->{body}, 'a!', 'inlined function');
$node->safe_psql('postgres', q{CREATE OR REPLACE FUNCTION suffix(t text) RETURNS text IMMUTABLE
	LANGUAGE sql AS $$SELECT t || (SELECT sum(n) FROM counts)::text$$});
is(WebgresTest::http_get($port, '/suffix?a')->{body}, 'a6', 'after it reads a table');
$node->safe_psql('postgres', q{CREATE OR REPLACE FUNCTION suffix(t text) RETURNS text IMMUTABLE
	LANGUAGE sql AS $$SELECT t || '?'$$});
is(WebgresTest::http_get($port, '/suffix?b')->{body}, 'b?', 'and back');

$res = WebgresTest::http_get($port, '/secret');
is($res->{status}, 403, 'a function the owner may not execute: 403');
like(slurp_file($node->logfile), qr/permission denied for function secret/, 'the log says why');
$node->safe_psql('postgres', q{GRANT EXECUTE ON FUNCTION secret() TO app});
is(WebgresTest::http_get($port, '/secret')->{body}, 'x', 'granted, it runs');

$res = WebgresTest::http_get($port, '/fail');
is($res->{status}, 400, 'an error in the expression answers with its status');
like(slurp_file($node->logfile), qr/division by zero/, 'and is logged');

$res = WebgresTest::http_get($port, '/sleep');
is($res->{status}, 504, 'an expression that runs too long times out: 504');

is(WebgresTest::http_get($port, '/hi/cy')->{body}, 'hi cy -', 'the worker keeps serving');

$node->stop;
done_testing();
