# A standby answers what needs the primary (routes that write, event
# streams) with 307 to webgres.primary_url, or 503 with Retry-After
# without it; reads, streams and exports are served; the primary, with the
# same setting, never redirects.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $primary = WebgresTest->new_node('primary', workers => 1, init => { allows_streaming => 1 });
my $pport = $primary->{webgres_port};
my $purl = "http://127.0.0.1:$pport";
# The same setting on every node: only a standby acts on it.
$primary->safe_psql('postgres', qq{ALTER SYSTEM SET webgres.primary_url = '$purl'; SELECT pg_reload_conf()});
$primary->safe_psql('postgres', q{
	CREATE TABLE kv (k text PRIMARY KEY, v text);
	INSERT INTO kv VALUES ('a', '1');
	CREATE FUNCTION touch(k text) RETURNS text LANGUAGE sql VOLATILE
	  AS $$ INSERT INTO kv VALUES (k, 'touched') ON CONFLICT (k) DO UPDATE SET v = 'touched' RETURNING v $$;
});
WebgresTest::add_route($primary, 'GET', '/kv/:k', q{
	SELECT v AS body FROM kv JOIN request ON kv.k = request.params->>'k'});
WebgresTest::add_route($primary, 'PUT', '/kv/:k', q{
	INSERT INTO kv SELECT request.params->>'k', convert_from(request.body, 'UTF8') FROM request
	ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING 201 AS status, v AS body});
# Looks like a read (a plain SELECT), writes through a volatile function.
WebgresTest::add_route($primary, 'GET', '/touch/:k', q{
	SELECT touch(request.params->>'k') AS body FROM request});
WebgresTest::add_route($primary, 'GET', '/lock/:k', q{
	SELECT v AS body FROM kv JOIN request ON kv.k = request.params->>'k' FOR UPDATE OF kv});
WebgresTest::add_route($primary, 'GET', '/events', q{
	SELECT ARRAY['kv'] AS channels FROM request});
$primary->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/export', 'SELECT k, v FROM kv ORDER BY k', 'stream')});

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
my $sport = PostgreSQL::Test::Cluster::get_free_port();
$standby->append_conf('postgresql.conf', "webgres.listen = '127.0.0.1:$sport'\n");
$standby->start;
$primary->wait_for_catchup($standby);
WebgresTest::wait_for_listen($sport);

is(WebgresTest::wait_for_status($sport, '/kv/a', 200)->{body}, '1', 'the standby serves reads');

# Requests that ended in an SQL error, on the standby's worker.
sub handler_errors { return $standby->safe_psql('postgres', 'SELECT sum(handler_errors) FROM webgres.workers'); }

my $errors = handler_errors();
my $res = WebgresTest::request($sport, 'PUT', '/kv/b?via=standby', body => 'two');
is($res->{status}, 307, 'a write route on the standby: 307');
is(handler_errors(), $errors, 'decided from the plan: the handler never ran (no SQL error)');
is($res->{headers}{location}, "$purl/kv/b?via=standby", 'to the same path and query on the primary');
is(WebgresTest::http_get($sport, '/kv/b')->{status}, 404, 'nothing was written on the standby');

# The client repeats the request where it was sent: the primary takes it.
$res = WebgresTest::request($pport, 'PUT', '/kv/b?via=standby', body => 'two');
is($res->{status}, 201, 'the primary takes the redirected write (and does not redirect)');
$primary->wait_for_catchup($standby);
is(WebgresTest::wait_for_status($sport, '/kv/b', 200)->{body}, 'two', 'and the standby serves it once replayed');

$res = WebgresTest::http_get($sport, '/touch/c');
is($res->{status}, 307, 'a handler that looked read-only and wrote: 307 (SQLSTATE 25006)');
is(handler_errors(), $errors + 1, 'that one ran, and failed at its write');
is($res->{headers}{location}, "$purl/touch/c", 'to the primary');
$res = WebgresTest::http_get($sport, '/lock/a');
is($res->{status}, 307, 'a handler that locks rows: 307');
$res = WebgresTest::http_get($sport, '/events');
is($res->{status}, 307, 'an event stream on a standby goes to the primary (NOTIFY is not replicated)');
is($res->{headers}{location}, "$purl/events", 'with its path');

$res = WebgresTest::http_get($sport, '/export', headers => { Accept => 'application/json' });
is($res->{status}, 200, 'a streamed export (a read) is served on the standby');
like($res->{body}, qr/"k":"a".*"k":"b"/s, 'with the standby\'s rows');

# Without a primary URL: 503 and when to try again.
$standby->safe_psql('postgres', q{ALTER SYSTEM SET webgres.primary_url = ''; SELECT pg_reload_conf()});
$res = WebgresTest::wait_for_status($sport, '/kv/x', 404);
my $deadline = time + 30;
do { $res = WebgresTest::request($sport, 'PUT', '/kv/x', body => 'y') }
  while ($res->{status} == 307 && time < $deadline && select(undef, undef, undef, 0.05) >= 0);
is($res->{status}, 503, 'no primary URL: 503');
is($res->{headers}{'retry-after'}, '5', 'with Retry-After');

# A bad URL is refused by the setting's check.
my ($rc, $out, $err) = $standby->psql('postgres', q{ALTER SYSTEM SET webgres.primary_url = 'db1:8443'});
isnt($rc, 0, 'a primary URL without a scheme is refused');
like($err, qr/must be an http:\/\/ or https:\/\/ URL/, 'and the error says what is wanted');

$standby->stop;
$primary->stop;
done_testing();
