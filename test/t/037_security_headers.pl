# Security headers (docs/security.md): Server on every response (a
# handler's own kept, never two), X-Content-Type-Options: nosniff on
# every response by default (webgres.nosniff), and webgres.hsts's
# Strict-Transport-Security on every response over TLS and never in
# cleartext: handlers, constant routes, executors, streams, errors,
# refusals, static files, libh2o's own errors and the metrics listener,
# over HTTP/1.1, h2c and HTTP/2 over TLS.  A handler's own header wins;
# both settings follow a reload; a bad webgres.hsts is refused.  Then
# testssl.sh judges the TLS listener: HSTS offered, and nothing below OK but
# what a test certificate without revocation information brings.
use strict;
use warnings;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;
use TlsTest;

my $HSTS = 'max-age=31536000; includeSubDomains';

my $dir = PostgreSQL::Test::Utils::tempdir();
my $certs = TlsTest::make_ca($dir);
my ($cert, $key) = TlsTest::make_leaf($certs, 'server');
my $ca = $certs->{ca};
mkdir "$dir/files" or die;
TlsTest::write_file("$dir/files/a.txt", "a static file\n");
my $tport = PostgreSQL::Test::Cluster::get_free_port();
my $mport = PostgreSQL::Test::Cluster::get_free_port();
my $node = WebgresTest->new_node('headers', workers => 1, conf => <<"EOC");
webgres.http2 = on
webgres.tls_listen = '127.0.0.1:$tport'
webgres.tls_cert_file = '$cert'
webgres.tls_key_file = '$key'
webgres.hsts = '$HSTS'
webgres.metrics_path = '/metrics'
webgres.metrics_listen = '127.0.0.1:$mport'
EOC
my $port = $node->{webgres_port};
$node->safe_psql('postgres', qq{
	INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/files', '$dir/files');
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
		('GET', '/hello', \$\$SELECT 'hi' AS body\$\$, 'auto'),
		('GET', '/echo', \$\$SELECT request.path AS body FROM request\$\$, 'auto'),
		('GET', '/fail', \$\$SELECT (1/0)::text AS body\$\$, 'auto'),
		('GET', '/exec', \$\$SELECT 'from an executor' AS body\$\$, 'executor'),
		('GET', '/export', \$\$SELECT i FROM generate_series(1, 3) i\$\$, 'stream'),
		('GET', '/own', \$\$SELECT 'own' AS body, '{"strict-transport-security": "max-age=60",
			"x-content-type-options": "nosniff", "server": "own-server"}'::jsonb AS headers\$\$, 'auto');
});
WebgresTest::wait_for_status($port, '/exec', 200);
ok(WebgresTest::wait_for_listen($tport), 'the TLS listener accepts connections');

# The header lines of a response (curl -D), lower-cased names, in a hash
# of lists; {status} the status.
sub head_of
{
	my ($text) = @_;
	my %h;
	my @blocks = split /\r\n\r\n/, $text;
	my ($last) = grep { /^HTTP\// } reverse @blocks;
	return { status => 0 } unless $last;
	my ($status) = $last =~ m{^HTTP/\S+ (\d{3})};
	for my $line (split /\r\n/, $last)
	{
		my ($k, $v) = $line =~ /^([^:]+):\s*(.*)$/ or next;
		push @{ $h{ lc $k } }, $v;
	}
	$h{status} = $status + 0;
	return \%h;
}

# GET $url with curl and the given options; the response's head.
sub curl_head
{
	my ($url, @opts) = @_;
	my ($rc, $out, $err) = TlsTest::curl('--cacert', $ca, '-D', '-', '-o', '/dev/null', @opts, $url);
	diag("curl $url: $err") if $rc;
	return head_of($out);
}

my %cases = (
	'/hello' => [ 200, 'a constant route' ],
	'/echo' => [ 200, 'a route reading the request' ],
	'/fail' => [ 400, 'a handler error (division by zero)' ],
	'/nothing' => [ 404, 'no route' ],
	'/exec' => [ 200, 'an executor' ],
	'/export' => [ 200, 'a streamed export' ],
	'/files/a.txt' => [ 200, 'a static file' ],
	'/files/none.txt' => [ 404, 'a missing static file' ],
	'/files' => [ 301, 'a static mount\'s redirect' ],
	'/hello/../x' => [ 400, 'a refused target' ],
);

# ---- cleartext: nosniff, never HSTS ----
for my $path (sort keys %cases)
{
	my ($status, $desc) = @{ $cases{$path} };
	for my $proto ([ 'HTTP/1.1', '--http1.1' ], [ 'h2c', '--http2-prior-knowledge' ])
	{
		my $h = curl_head("http://127.0.0.1:$port$path", '--path-as-is', $proto->[1]);
		is($h->{status}, $status, "$proto->[0] $desc ($path): $status");
		is_deeply($h->{'x-content-type-options'}, ['nosniff'], '... X-Content-Type-Options: nosniff, once');
		ok(!exists $h->{'strict-transport-security'}, '... no Strict-Transport-Security in cleartext');
		is_deeply($h->{server}, ['webgres'], '... Server: webgres, once');
	}
}

# ---- TLS: nosniff and HSTS, over HTTP/1.1 and HTTP/2 ----
for my $path (sort keys %cases)
{
	my ($status, $desc) = @{ $cases{$path} };
	for my $proto ([ 'HTTP/1.1 over TLS', '--http1.1' ], [ 'HTTP/2 over TLS', '--http2' ])
	{
		my $h = curl_head("https://localhost:$tport$path", '--path-as-is', $proto->[1]);
		is($h->{status}, $status, "$proto->[0] $desc ($path): $status");
		is_deeply($h->{'x-content-type-options'}, ['nosniff'], '... X-Content-Type-Options: nosniff, once');
		is_deeply($h->{'strict-transport-security'}, [$HSTS], '... Strict-Transport-Security, once');
		is_deeply($h->{server}, ['webgres'], '... Server: webgres, once');
	}
}

# libh2o's own errors (a body over webgres.max_body_size is refused by it,
# before any route): through its fallback path, with the same headers.
my $big = 'x' x (2 * 1024 * 1024);
my $r = WebgresTest::request($port, 'POST', '/hello', body => $big);
is($r->{status}, 413, "libh2o's 413 in cleartext");
is($r->{headers}{'x-content-type-options'}, 'nosniff', '... nosniff');
ok(!exists $r->{headers}{'strict-transport-security'}, '... no HSTS');
is($r->{headers}{server}, 'webgres', '... Server: webgres');
TlsTest::write_file("$dir/big", $big);
my $h = curl_head("https://localhost:$tport/hello", '--http1.1', '--data-binary', "\@$dir/big");
is($h->{status}, 413, "libh2o's 413 over TLS");
is_deeply($h->{'strict-transport-security'}, [$HSTS], '... with HSTS');
is_deeply($h->{'x-content-type-options'}, ['nosniff'], '... and nosniff');
is_deeply($h->{server}, ['webgres'], '... and Server: webgres, once');

# A client that claims https in cleartext (absolute-form) gets no HSTS.
$r = WebgresTest::raw($port, "GET https://localhost/hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
	until_close => 1);
is($r->{status}, 200, 'an https:// absolute-form request in cleartext: 200');
ok(!exists $r->{headers}{'strict-transport-security'}, '... and no HSTS: the connection decides, not the URL');

# The metrics listener: nosniff (it is cleartext).
$h = curl_head("http://127.0.0.1:$mport/metrics");
is($h->{status}, 200, 'the metrics listener: 200');
is_deeply($h->{'x-content-type-options'}, ['nosniff'], '... nosniff');
$h = curl_head("http://127.0.0.1:$mport/other");
is($h->{status}, 404, "the metrics listener's 404");
is_deeply($h->{'x-content-type-options'}, ['nosniff'], '... nosniff');
is_deeply($h->{server}, ['webgres'], '... Server: webgres, once');

# A handler's own headers are kept, not doubled.
$h = curl_head("https://localhost:$tport/own", '--http2');
is_deeply($h->{'strict-transport-security'}, ['max-age=60'], "a handler's own Strict-Transport-Security is kept");
is_deeply($h->{'x-content-type-options'}, ['nosniff'], "... and its own nosniff is not doubled");
is_deeply($h->{server}, ['own-server'], "... nor its own Server");
$h = curl_head("http://127.0.0.1:$port/own", '--http1.1');
is_deeply($h->{server}, ['own-server'], "a handler's own Server over HTTP/1.1 is the only one");

# ---- the settings ----
my ($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.hsts = 'includeSubDomains'});
like($err, qr/invalid value for parameter "webgres.hsts".*\n.*max-age directive is required/,
	'webgres.hsts without max-age is refused');
($rc, $out, $err) = $node->psql('postgres', qq{ALTER SYSTEM SET webgres.hsts = E'max-age=1\\r\\nX-Injected: 1'});
like($err, qr/printable ASCII/, '... so is one with CR LF');
($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.hsts = 'max-age=abc'});
like($err, qr/number of seconds/, '... and one whose max-age is not a number');

ok(WebgresTest::reload_and_wait($node, "webgres.hsts = ''\nwebgres.nosniff = off\n"),
	'the worker took webgres.hsts empty and webgres.nosniff off');
$h = curl_head("https://localhost:$tport/hello", '--http2');
is($h->{status}, 200, 'after the reload: 200 over TLS');
ok(!exists $h->{'strict-transport-security'}, '... no Strict-Transport-Security');
ok(!exists $h->{'x-content-type-options'}, '... no X-Content-Type-Options');
is_deeply($h->{server}, ['webgres'], '... but Server: webgres still, once');
ok(WebgresTest::reload_and_wait($node, "webgres.hsts = '$HSTS'\nwebgres.nosniff = on\n"),
	'the worker took them back');
# The filter stays on the paths' lists with both off (it writes Server); back on, both come again.
$h = curl_head("https://localhost:$tport/hello", '--http2');
is_deeply($h->{'strict-transport-security'}, [$HSTS], '... Strict-Transport-Security again');
is_deeply($h->{'x-content-type-options'}, ['nosniff'], '... and X-Content-Type-Options again');

# ---- testssl.sh ----
# Not installed is a failure, not a skip: make test installs it
# (scripts/deps.sh, with WEBGRES_DEPS_TESTS).
if (!ok((grep { -x "$_/testssl" } split /:/, $ENV{PATH}),
		'testssl.sh is installed (apt-get install testssl.sh)'))
{
	$node->stop;
	done_testing();
	exit;
}
{
	my $json = "$dir/testssl.json";
	my $started = time;
	# Protocols, cipher categories, forward secrecy, server defaults (the
	# certificate), headers and vulnerabilities: what a scan of a public
	# server reports, without the slow per-cipher enumeration.
	my ($tout, $terr) = ('', '');
	my $findings = [];
	# testssl.sh makes a few hundred connections; on a loaded machine one of
	# its own clients can give up (it reports "connect problem" as a WARN).
	# Such a scan is run again, at most twice; any other finding stands.
	for my $attempt (1 .. 3)
	{
		unlink $json;
		IPC::Run::run([ 'testssl', '--quiet', '--color', '0', '--warnings', 'off', '--ip', '127.0.0.1',
			'--nodns', 'min', '--add-ca', $ca, '--jsonfile', $json, '-p', '-s', '-f', '-S', '-h', '-U',
			"https://localhost:$tport/hello" ], '<', \'', '>', \$tout, '2>', \$terr, IPC::Run::timeout(600));
		$findings = eval { decode_json(TlsTest::read_file($json)) } // [];
		my @lost = grep { ($_->{finding} // '') =~ /connect problem/ } @$findings;
		last unless @lost;
		note("testssl.sh scan $attempt: its client lost a connection ($lost[0]{id}); scanning again");
	}
	note(sprintf('testssl.sh took %.0f s', time - $started));
	ok(scalar @$findings, 'testssl.sh reported findings') or diag($tout . $terr);
	my ($hsts) = grep { $_->{id} eq 'HSTS_time' } @$findings;
	is($hsts && $hsts->{severity}, 'OK', 'testssl.sh: HSTS offered, OK')
	  or diag(explain([ grep { $_->{id} =~ /HSTS/ } @$findings ]));
	# What a certificate made for this run brings: it lives two days, its
	# CA publishes no CRL or OCSP responder, and localhost has no CAA record.
	my %test_certificate = map { $_ => 1 }
	  qw(cert_expirationStatus cert_notAfter cert_revocation cert_ocspURL cert_crlDistributionPoints
	  OCSP_stapling DNS_CAArecord);
	# What testssl.sh says of its own OpenSSL, not of the server: OpenSSL
	# 3.0.19's command line has no GOST engine (WARN engine_problem).
	my %scanner = map { $_ => 1 } qw(engine_problem);
	my @bad = grep {
		$_->{severity} =~ /^(LOW|MEDIUM|HIGH|CRITICAL|WARN)$/
		  && !$test_certificate{ $_->{id} } && !$scanner{ $_->{id} }
	} @$findings;
	is(scalar @bad, 0, 'testssl.sh: nothing below OK but what the test certificate brings')
	  or diag(join("\n", map { "$_->{severity} $_->{id}: $_->{finding}" } @bad));
	note(join("\n", map { "$_->{severity} $_->{id}: $_->{finding}" }
		  grep { $test_certificate{ $_->{id} } && $_->{severity} ne 'OK' && $_->{severity} ne 'INFO' } @$findings));
}

$node->stop;
done_testing();
