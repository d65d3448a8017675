# CORS in a real browser: a page on one origin (a Python server on one
# loopback port) calls webgres on another (a second port) with fetch().
# Headless Chromium must let the allowed calls through, preflighted and
# credentialed ones included, and refuse the others.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BrowserTest;
use WebgresTest;

BrowserTest::require_browser();

my $node = WebgresTest->new_node('cors_browser', workers => 1);
my $api = "http://127.0.0.1:$node->{webgres_port}";
my $page_port = PostgreSQL::Test::Cluster::get_free_port();
my $page_origin = "http://127.0.0.1:$page_port";

$node->safe_psql('postgres', q{
	CREATE TABLE notes (body text);
	GRANT ALL ON notes TO PUBLIC;
});
sub route
{
	my ($method, $path, $handler, $cols) = @_;
	my ($names, $vals) = ('', '');
	for my $k (sort keys %$cols) { $names .= ", $k"; $vals .= ", $cols->{$k}"; }
	$node->safe_psql('postgres', "INSERT INTO webgres.routes (method, path, handler$names) "
		  . "VALUES ('$method', '$path', \$h\$$handler\$h\$$vals)");
}
my %allowed = (cors_allowed_origins => "'{$page_origin}'", cors_exposed_headers => "'{X-Total}'");
route('GET', '/api/data', q{SELECT '{"x-total": "3"}'::jsonb AS headers, 'application/json' AS content_type, '[1,2,3]' AS body}, \%allowed);
route('PUT', '/api/data', q{INSERT INTO notes SELECT webgres.body_text(body) FROM request RETURNING 'stored' AS body}, \%allowed);
route('GET', '/api/private', q{SELECT 'secret' AS body}, { cors_allowed_origins => "'{http://127.0.0.1:1}'" });
route('PUT', '/api/private', q{INSERT INTO notes VALUES ('must not happen') RETURNING 'stored' AS body},
	{ cors_allowed_origins => "'{http://127.0.0.1:1}'" });
my %cred = (cors_allowed_origins => "'{$page_origin}'", cors_allow_credentials => 'true');
route('GET', '/api/login', q{SELECT '{"set-cookie": "session=s3cret; Path=/"}'::jsonb AS headers, 'in' AS body}, \%cred);
route('GET', '/api/me', q{SELECT coalesce(request.headers->>'cookie', 'no cookie') AS body FROM request}, \%cred);
WebgresTest::wait_for_status($node->{webgres_port}, '/api/data', 200);

my $script = <<"JS";
const done = arguments[arguments.length - 1];
const api = '$api';
async function attempt(name, path, init) {
	try {
		const r = await fetch(api + path, init);
		return {name, ok: true, status: r.status, body: await r.text(), total: r.headers.get('x-total')};
	} catch (e) {
		return {name, ok: false, error: String(e)};
	}
}
(async () => {
	const out = {origin: location.origin};
	for (const [name, path, init] of [
		['simple', '/api/data'],
		['preflighted', '/api/data', {method: 'PUT', headers: {'Content-Type': 'application/json', 'X-Token': 't'}, body: '{"n": 1}'}],
		['disallowed', '/api/private'],
		['disallowed preflighted', '/api/private', {method: 'PUT', headers: {'Content-Type': 'application/json'}, body: '{}'}],
		['login', '/api/login', {credentials: 'include'}],
		['credentialed', '/api/me', {credentials: 'include'}],
		['credentials not allowed', '/api/data', {credentials: 'include'}],
	])
		out[name] = await attempt(name, path, init);
	done(out);
})();
JS

my $r = BrowserTest::run(page_port => $page_port, page => "<!doctype html><title>cors</title>\n",
	script => $script);
ok(defined $r, 'the browser ran the page') or die 'no browser result';
is($r->{origin}, $page_origin, 'the page has its own origin');

is_deeply([ @{ $r->{simple} }{qw(ok status body total)} ], [ JSON::PP::true, 200, '[1,2,3]', '3' ],
	'allowed origin: a simple GET is read, and the exposed header with it');
is_deeply([ @{ $r->{preflighted} }{qw(ok status body)} ], [ JSON::PP::true, 200, 'stored' ],
	'allowed origin: a PUT with a JSON body passes its preflight and is read');
ok(!$r->{disallowed}{ok}, 'disallowed origin: fetch fails') or diag(explain($r->{disallowed}));
like($r->{disallowed}{error} // '', qr/TypeError/, '... with the TypeError browsers give for CORS');
ok(!$r->{'disallowed preflighted'}{ok}, 'disallowed origin: a preflighted PUT fails');
ok($r->{login}{ok}, 'credentialed fetch to a route that allows credentials: read');
is($r->{credentialed}{body}, 'session=s3cret', '... and the cookie it set goes along on the next one');
ok(!$r->{'credentials not allowed'}{ok}, 'credentialed fetch to a route that does not allow credentials: fails');

is($node->safe_psql('postgres', 'SELECT string_agg(body, \'|\') FROM notes'), '{"n": 1}',
	'only the allowed PUT reached its handler: the refused preflight stopped the other');

done_testing();
