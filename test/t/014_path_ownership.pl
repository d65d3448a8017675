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
($ret, $err) = as('bob', q{INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/bob', $$SELECT 'bob' AS body$$)});
is(WebgresTest::wait_for_status($port, '/bob', 200)->{body}, 'bob', 'bob\'s route serves');
($ret, my $out2, $err) = $node->psql('postgres', q{REVOKE ALL ON webgres.routes FROM bob; DROP ROLE bob});
like($err, qr/role "bob" cannot be dropped because some objects depend on it\nDETAIL:  owner of webgres route GET \/bob/,
	'DROP ROLE of a route owner is refused, naming the route');
$node->safe_psql('postgres', q{REASSIGN OWNED BY bob TO alice; DROP ROLE bob});
is($node->safe_psql('postgres', q{SELECT owner FROM webgres.routes WHERE path = '/bob'}), 'alice',
	'REASSIGN OWNED gave the route to alice');
is(WebgresTest::http_get($port, '/bob')->{body}, 'bob', 'and it still serves');
$node->safe_psql('postgres', q{DROP OWNED BY alice});
is(WebgresTest::wait_for_status($port, '/bob', 404)->{status}, 404, 'DROP OWNED deleted alice\'s routes');
is($node->safe_psql('postgres', q{SELECT count(*) FROM webgres.routes WHERE owner = 'alice'::regrole}), '0',
	'none left');
$node->safe_psql('postgres', q{DROP ROLE alice});

$node->stop;
done_testing();
