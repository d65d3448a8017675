# The access log and the slow-request log: Apache's combined format by
# default, webgres' own fields, a file opened again on SIGHUP (logrotate),
# the Postgres log as destination, streams logged when they end with their
# bytes and duration, and requests slower than a threshold logged with
# their time split; over TLS, the protocol version.
use strict;
use warnings;
use File::Copy qw(move);
use IO::Select;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use WebgresTest;
use TlsTest;

my $node = WebgresTest->new_node('access_log', workers => 1,
	conf => "webgres.executors = 1\nlog_min_messages = debug1\n"
	  . "webgres.sse_heartbeat = 300\n"
	  . "webgres.jwt_secret = 'an access log test secret, 32 bytes or more'\n");
my $port = $node->{webgres_port};
my $logfile = $node->data_dir . '/access.log';

my %id;
# Inline: its place must be logged as the loop (in mode auto a run past the budget under load moves it).
$id{hello} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/hello/:who', $$SELECT 'hi ' || (request.params->>'who') AS body FROM request$$, 'inline') RETURNING id});
$id{exec} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/exec', $$SELECT 'ran there' AS body FROM request$$, 'executor') RETURNING id});
$id{stream} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/rows', $$SELECT i FROM generate_series(1, 1000) i$$, 'stream') RETURNING id});
$id{sse} = WebgresTest::add_route($node, 'GET', '/events', q{SELECT ARRAY['obs'] AS channels, NULL::text AS data FROM request});
$id{sleepy} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/sleepy', $$SELECT pg_sleep(0.4)::text || 'slept' AS body FROM request$$, 'executor') RETURNING id});
$node->safe_psql('postgres', q{
	CREATE ROLE logged_in;
	INSERT INTO webgres.routes (method, path, handler, auth)
	VALUES ('GET', '/whoami', $$SELECT current_user::text AS body FROM request$$, 'required');
	INSERT INTO webgres.routes (method, path, handler, auth, mode)
	VALUES ('GET', '/whoami-exec', $$SELECT current_user::text AS body FROM request$$, 'required', 'executor');
});
# Planning that takes its time: an immutable function with constant
# arguments is evaluated by the planner (constant folding).
$node->safe_psql('postgres', q{
	CREATE FUNCTION slow_to_plan() RETURNS text IMMUTABLE LANGUAGE plpgsql
	AS $$ BEGIN PERFORM pg_sleep(0.4); RETURN 'planned'; END $$;
});
$id{slowplan} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/slowplan', $$SELECT slow_to_plan() AS body FROM request$$, 'executor') RETURNING id});
my $token = $node->safe_psql('postgres', q{SELECT webgres.jwt_sign('{"role": "logged_in"}', interval '1 hour')});
WebgresTest::wait_for_status($port, '/hello/x', 200);

ok(!-e $logfile, 'off by default: no access log');

# Changes settings and waits until the worker took them: it says so at
# DEBUG1 each time it reloads its settings.
sub set_conf
{
	my (%set) = @_;
	my $sql = join '', map { "ALTER SYSTEM SET $_ = '$set{$_}';" } sort keys %set;
	my $seen = () = slurp_file($node->logfile) =~ /webgres access log configured in process \d+/g;
	$node->safe_psql('postgres', $sql . 'SELECT pg_reload_conf()');
	my $deadline = time + 30;
	while (time < $deadline)
	{
		my $now = () = slurp_file($node->logfile) =~ /webgres access log configured in process \d+/g;
		return if $now > $seen;
		sleep 0.05;
	}
	die "the worker did not reload its settings";
}

# Waits until the file holds a line matching $re; returns the last such line.
sub wait_line
{
	my ($file, $re) = @_;
	my $deadline = time + 30;
	while (time < $deadline)
	{
		if (-e $file)
		{
			my @hits = grep { $_ =~ $re } split /\n/, slurp_file($file);
			return $hits[-1] if @hits;
		}
		sleep 0.1;
	}
	return '';
}

set_conf('webgres.access_log' => 'access.log');
my $res = WebgresTest::http_get($port, '/hello/ann', headers => { 'Referer' => 'http://ref.example/', 'User-Agent' => 'obs-test/1.0' });
is($res->{status}, 200, 'GET /hello/ann');
my $line = wait_line($logfile, qr{/hello/ann});
like($line, qr{^127\.0\.0\.1 - - \[\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}\] "GET /hello/ann HTTP/1\.1" 200 6 "http://ref\.example/" "obs-test/1\.0"$},
	'combined log format by default');
WebgresTest::http_get($port, '/no/such/route');
like(wait_line($logfile, qr{/no/such/route}), qr{" 404 \d+ "-" "-"$}, 'unrouted requests are logged too');
is(WebgresTest::http_get($port, '/whoami', headers => { 'Authorization' => "Bearer $token" })->{body},
	'logged_in', 'a request with a token');
like(wait_line($logfile, qr{/whoami}), qr{^127\.0\.0\.1 - logged_in \[}, '%u is the role its token chose');
is(WebgresTest::http_get($port, '/whoami-exec', headers => { 'Authorization' => "Bearer $token" })->{body},
	'logged_in', 'a request with a token, run on an executor');
like(wait_line($logfile, qr{/whoami-exec}), qr{^127\.0\.0\.1 - logged_in \[},
	'%u is the role its token chose on an executor too');

# webgres' fields.
set_conf('webgres.access_log_format' =>
	  '%s %b %{webgres.route_id}e %{webgres.route_method}e %{webgres.route}e %{webgres.place}e %{webgres.handler_ms}e %{webgres.queue_ms}e %{webgres.plan_ms}e %{webgres.duration_ms}e %U');
WebgresTest::http_get($port, '/hello/bob');
like(wait_line($logfile, qr{ /hello/bob$}), qr{^200 6 $id{hello} GET /hello/:who loop \d+\.\d{3} 0\.000 \d+\.\d{3} [\d.]+ /hello/bob$},
	'route id, method, pattern, place and handler time of a request run on the loop');
WebgresTest::http_get($port, '/exec');
like(wait_line($logfile, qr{ /exec$}), qr{^200 9 $id{exec} GET /exec executor \d+\.\d{3} \d+\.\d{3} \d+\.\d{3} [\d.]+ /exec$},
	'... and of one run on an executor');
WebgresTest::http_get($port, '/nowhere');
like(wait_line($logfile, qr{ /nowhere$}), qr{^404 \d+ - - - - - - - [\d.]+ /nowhere$}, 'no route: its fields are "-"');

# A streamed export is logged when it ends, with all its bytes.
$res = WebgresTest::http_get($port, '/rows', headers => { 'Accept' => 'application/x-ndjson' });
is($res->{status}, 200, 'the stream answered');
my $len = length($res->{body});
cmp_ok($len, '>', 1000, 'the stream sent its rows');
like(wait_line($logfile, qr{ /rows$}), qr{^200 $len $id{stream} GET /rows executor }, 'a stream is logged with the bytes it sent');

# An event stream is logged when it ends, with its duration and bytes
# (webgres.duration_ms: h2o's %{duration}x has no end for a stream whose
# client left).
my $s = WebgresTest::connect_to($port);
print $s "GET /events HTTP/1.1\r\nHost: x\r\n\r\n";
my $got = '';
my $sel = IO::Select->new($s);
my $deadline = time + 20;
while ($got !~ /\r\n\r\n/ && time < $deadline) { sysread($s, my $b, 4096) if $sel->can_read(0.2); $got .= $b // ''; }
# From here the stream is open on the server (its head came back).
my $opened = time;
$node->safe_psql('postgres', q{NOTIFY obs, 'one event'});
while ($got !~ /one event/ && time < $deadline) { my $b; sysread($s, $b, 4096) if $sel->can_read(0.2); $got .= $b // ''; }
like($got, qr/data: one event/, 'the event arrived');
my $before = -e $logfile ? scalar(grep { / \/events$/ } split /\n/, slurp_file($logfile)) : 0;
is($before, 0, 'an open event stream is not logged yet');
# The client holds the stream open for a second at least (a premise, not
# a wait for an event), so a duration in seconds, or one counted from the
# last event, would be far below what it held.
sleep 1;
my $held_ms = (time - $opened) * 1000;
close $s;
$line = wait_line($logfile, qr{ /events$});
like($line, qr{^200 (\d+) $id{sse} GET /events loop }, 'an event stream is logged when its client leaves');
my ($bytes, $dur) = $line =~ /^200 (\d+) .* ([\d.]+) \/events$/;
cmp_ok($bytes, '>=', length("data: one event\n\n"), '... with the bytes it sent');
cmp_ok($dur // 0, '>=', int($held_ms), sprintf('... and its duration in ms, at least the %.0f ms the client held it', $held_ms));

# Rotation: the file is moved away; a reload opens it anew.
move($logfile, "$logfile.1") or die "rename: $!";
WebgresTest::http_get($port, '/hello/before');
like(wait_line("$logfile.1", qr{ /hello/before$}), qr{^200}, 'until the reload, lines go to the moved file');
set_conf('webgres.access_log' => 'access.log');
WebgresTest::http_get($port, '/hello/after');
like(wait_line($logfile, qr{ /hello/after$}), qr{^200}, 'after SIGHUP, to the file of the setting\'s name');
unlike(slurp_file("$logfile.1"), qr{/hello/after}, '... and no longer to the moved one');

# The Postgres log as destination.
set_conf('webgres.access_log' => 'postgres', 'webgres.access_log_format' => 'ACCESS %s %U %{webgres.route}e');
WebgresTest::http_get($port, '/hello/pglog');
like(wait_line($node->logfile, qr{ACCESS 200 /hello/pglog}), qr{LOG:  ACCESS 200 /hello/pglog /hello/:who$},
	'lines go to the Postgres log');

my ($rc, $out, $err) = $node->psql('postgres', "ALTER SYSTEM SET webgres.access_log_format = '%{oops'");
like($err, qr/invalid value for parameter "webgres.access_log_format"/, 'a format that does not compile is refused');

# Off again: nothing more is logged.  A request's line is written before
# its connection closes, which http_get waits for; the log is then turned
# back on and a marker request waited for, so the quiet request had every
# chance to be logged first.
set_conf('webgres.access_log' => '');
is(WebgresTest::http_get($port, '/hello/quiet')->{status}, 200, 'with the access log off, a request is answered');
set_conf('webgres.access_log' => 'postgres');
WebgresTest::http_get($port, '/hello/marker-after-quiet');
like(wait_line($node->logfile, qr{ACCESS 200 /hello/marker-after-quiet}), qr{ACCESS 200},
	'logged again once turned back on');
my @quiet = grep { m{/hello/quiet} } split /\n/, slurp_file($node->logfile) . slurp_file($logfile);
is_deeply(\@quiet, [], 'an empty webgres.access_log logs nothing');
set_conf('webgres.access_log' => '');

# Slow requests.
set_conf('webgres.log_slow_requests' => '300ms');
WebgresTest::http_get($port, '/hello/fast');
WebgresTest::http_get($port, '/sleepy');
$line = wait_line($node->logfile, qr{webgres slow request: GET /sleepy});
like($line, qr{LOG:  webgres slow request: GET /sleepy answered 200 in \d+\.\d{3} ms$}, 'a slow request is logged');
like(slurp_file($node->logfile), qr{DETAIL:  Route $id{sleepy} \(GET /sleepy\) on the executor: waited [\d.]+ ms for the loop, [\d.]+ ms queued for an executor, planned [\d.]+ ms, executed (\d+)\.\d{3} ms, sent in [\d.]+ ms\.},
	'... with its route and time split');
my ($planned, $ran) = slurp_file($node->logfile) =~ /Route $id{sleepy} .* planned (\d+)\.\d{3} ms, executed (\d+)\.\d{3} ms/;
cmp_ok($ran, '>=', 400, 'executing took its sleep');
cmp_ok($planned, '<', 400, '... which is not counted as planning');
WebgresTest::http_get($port, '/slowplan');
wait_line($node->logfile, qr{webgres slow request: GET /slowplan});
($planned, $ran) = slurp_file($node->logfile) =~ /Route $id{slowplan} .* planned (\d+)\.\d{3} ms, executed (\d+)\.\d{3} ms/;
cmp_ok($planned // 0, '>=', 400, 'a handler slow to plan: the time is planning');
cmp_ok($ran // 1e9, '<', 400, '... not executing');
unlike(slurp_file($node->logfile), qr{slow request: GET /hello/fast}, 'a fast one is not');

$node->stop;

# Over TLS: h2o's own %{ssl.protocol-version}x, and the protocol by ALPN.
my $dir = PostgreSQL::Test::Utils::tempdir();
my $certs = TlsTest::make_ca($dir);
TlsTest::make_leaf($certs, 'server');
my $tport = PostgreSQL::Test::Cluster::get_free_port();
my $tnode = WebgresTest->new_node('access_log_tls', workers => 1, conf => <<"EOC");
webgres.tls_listen = '127.0.0.1:$tport'
webgres.tls_cert_file = '$dir/server.chain.pem'
webgres.tls_key_file = '$dir/server.key'
webgres.access_log = 'access.log'
webgres.access_log_format = '%{ssl.protocol-version}x %H %s %U %{webgres.route}e'
EOC
WebgresTest::add_route($tnode, 'GET', '/hi/:who', q{SELECT 'hi' AS body});
WebgresTest::wait_for_status($tnode->{webgres_port}, '/hi/plain', 200);
ok(WebgresTest::wait_for_listen($tport), 'the TLS listener is up');
my ($trc, $cout, $cerr) = TlsTest::curl('--cacert', $certs->{ca}, '--http2',
	"https://localhost:$tport/hi/tls", '--resolve', "localhost:$tport:127.0.0.1");
is("$trc $cout", "0 hi", "a request over TLS") or diag($cerr);
my $tlog = $tnode->data_dir . '/access.log';
like(wait_line($tlog, qr{ /hi/tls }), qr{^TLSv1\.[23] HTTP/2 200 /hi/tls /hi/:who$},
	'the TLS version and HTTP/2 are logged');
like(wait_line($tlog, qr{ /hi/plain }), qr{^- HTTP/1\.1 200 /hi/plain /hi/:who$},
	'a cleartext request has no TLS version');
$tnode->stop;

done_testing();
