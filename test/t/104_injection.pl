# Request data reaches SQL only as values: SQL-injection payloads sent
# through path parameters, the query string, headers and the body are read
# back as the text they are, and nothing in them runs.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('injection', workers => 1);
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE victims (name text PRIMARY KEY);
	INSERT INTO victims VALUES ('alice'), ('bob');
	CREATE TABLE seen (v text);
});
WebgresTest::add_route($node, 'GET', '/lookup/:name', q{
	SELECT name AS body FROM victims JOIN request ON victims.name = request.params->>'name'});
WebgresTest::add_route($node, 'POST', '/echo/:p', q{
	INSERT INTO seen SELECT concat_ws('|', request.params->>'p', request.query->>'q',
	                                  request.headers->>'x-evil', webgres.body_text(request.body))
	FROM request RETURNING v AS body});
WebgresTest::wait_for_status($port, '/lookup/alice', 200);

sub enc
{
	my ($s) = @_;
	$s =~ s/([^A-Za-z0-9\-._~])/sprintf('%%%02X', ord($1))/ge;
	return $s;
}

my @payloads = (
	q{'; DROP TABLE victims; --},
	q{alice' OR '1'='1},
	q{x'); DELETE FROM victims; --},
	q{$1},
	q{$$; TRUNCATE victims; $$},
	q{\\'; UPDATE victims SET name = 'owned'; --},
	q{1; SELECT pg_sleep(10)},
	q{E'\\x27'},
	q{*/ DROP TABLE victims /*},
);

for my $p (@payloads)
{
	my $res = WebgresTest::http_get($port, '/lookup/' . enc($p));
	is($res->{status}, 404, "path parameter $p: no row matched, nothing ran");

	my $hv = $p;
	$res = WebgresTest::request($port, 'POST', '/echo/' . enc($p) . '?q=' . enc($p),
		headers => { 'X-Evil' => $hv }, body => $p);
	is($res->{status}, 200, "payload $p through path, query, header and body: answered");
	is($res->{body}, join('|', $p, $p, $p, $p), "payload $p read back as plain text");
}

is($node->safe_psql('postgres', 'SELECT string_agg(name, \',\' ORDER BY name) FROM victims'),
	'alice,bob', 'the victims table is untouched');
is($node->safe_psql('postgres', 'SELECT count(*) FROM seen'), scalar(@payloads),
	'exactly one row stored per request');
is(WebgresTest::http_get($port, '/lookup/alice')->{body}, 'alice', 'and the route still works');

$node->stop;
done_testing();
