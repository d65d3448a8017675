# Hot standbys serve too: routes follow the primary through WAL, handlers run
# read-only there, and a write on a standby is answered 503.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $primary = WebgresTest->new_node('primary', workers => 1, init => { allows_streaming => 1 });
my $pport = $primary->{webgres_port};
$primary->safe_psql('postgres', q{CREATE TABLE kv (k text PRIMARY KEY, v text); INSERT INTO kv VALUES ('a', '1')});
WebgresTest::add_route($primary, 'GET', '/kv/:k', q{
	SELECT v AS body FROM kv JOIN request ON kv.k = request.params->>'k'});
WebgresTest::add_route($primary, 'PUT', '/kv/:k', q{
	INSERT INTO kv SELECT request.params->>'k', 'x' FROM request RETURNING 201 AS status});

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
my $sport = PostgreSQL::Test::Cluster::get_free_port();
$standby->append_conf('postgresql.conf', "webgres.listen = '127.0.0.1:$sport'\n");
$standby->start;
$primary->wait_for_catchup($standby);

is(WebgresTest::wait_for_status($sport, '/kv/a', 200)->{body}, '1', 'the standby serves a read route');
is(WebgresTest::request($sport, 'PUT', '/kv/b')->{status}, 503, 'a write on the standby: 503');

# A route changed on the primary reaches the standby's workers.
$primary->safe_psql('postgres', q{
	UPDATE webgres.routes SET handler = 'SELECT ''v='' || v AS body FROM kv JOIN request ON kv.k = request.params->>''k'''
	WHERE method = 'GET'});
$primary->wait_for_catchup($standby);
my $res = WebgresTest::wait_for_status($sport, '/kv/a', 200);
my $deadline = time + 10;
while ($res->{body} ne 'v=1' && time < $deadline)
{
	select(undef, undef, undef, 0.05);
	$res = WebgresTest::http_get($sport, '/kv/a');
}
is($res->{body}, 'v=1', 'route changed on the primary is served by the standby');

is(WebgresTest::request($pport, 'PUT', '/kv/c')->{status}, 201, 'the primary still takes writes');

$standby->stop;
$primary->stop;
done_testing();
