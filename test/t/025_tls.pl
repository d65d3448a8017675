# TLS listeners (webgres.tls_listen): HTTP/2 or HTTP/1.1 by ALPN, the
# request relation's tls column, the redirect of cleartext requests, HTTP/2
# screening over TLS, event streams and streamed exports over HTTP/2 with
# TLS, and certificates reloaded on SIGHUP: a renewed one for new
# connections while open ones go on, a bad one refused with the old one
# kept, and a bad one at start refused by the worker.  The certificates
# are made for this run by openssl (TlsTest.pm).
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;
use H2Test qw(frame request_block read_stream read_frames);
use TlsTest;

$SIG{PIPE} = 'IGNORE';

my $dir = PostgreSQL::Test::Utils::tempdir();
my $certs = TlsTest::make_ca($dir);
my $ca = $certs->{ca};
TlsTest::make_leaf($certs, 'first');
TlsTest::make_leaf($certs, 'second');
TlsTest::make_leaf($certs, 'stranger');
my ($other_cert, $other_key) = TlsTest::make_leaf($certs, 'other', 'DNS:other.test,DNS:*.other.test');
# The files the server reads; each step copies a pair over them.
sub install_pair
{
	my ($cert, $key) = @_;
	TlsTest::write_file("$dir/server.pem", TlsTest::read_file("$dir/$cert.chain.pem"));
	TlsTest::write_file("$dir/server.key", TlsTest::read_file("$dir/$key.key"));
}
install_pair('first', 'first');

my $tport = PostgreSQL::Test::Cluster::get_free_port();
my $node = WebgresTest->new_node('tls', workers => 1, conf => <<"EOC");
webgres.tls_listen = '127.0.0.1:$tport'
webgres.tls_cert_file = '$dir/server.pem'
webgres.tls_key_file = '$dir/server.key'
webgres.http2_max_resets = 10
EOC
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/hello', q{SELECT 'hello' AS body});
WebgresTest::add_route($node, 'GET', '/tls', q{SELECT request.tls::text AS body FROM request});
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/tls-executor', $$SELECT request.tls::text AS body FROM request$$, 'executor');
	INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/export', $$SELECT i, repeat('x', 100) AS pad FROM generate_series(1, 20000) i$$, 'stream');
	INSERT INTO webgres.routes (method, path, handler)
	VALUES ('GET', '/events/:ch', $$SELECT ARRAY[request.params->>'ch'] AS channels FROM request$$);
});
WebgresTest::wait_for_status($port, '/hello', 200);
ok(WebgresTest::wait_for_listen($tport), 'the TLS listener accepts connections');

# ---- ALPN ----
my ($rc, $out, $err) = TlsTest::curl('--cacert', $ca, '--http2', '-w', ' %{http_version}',
	"https://localhost:$tport/hello", '--resolve', "localhost:$tport:127.0.0.1");
is("$rc $out", '0 hello 2', 'curl --http2 over TLS gets HTTP/2, verified through the chain') or diag($err);
($rc, $out, $err) = TlsTest::curl('--cacert', $ca, '--http1.1', '-w', ' %{http_version}',
	"https://127.0.0.1:$tport/hello");
is("$rc $out", '0 hello 1.1', 'curl --http1.1 over TLS gets HTTP/1.1') or diag($err);

$out = TlsTest::s_client($tport, '-alpn', 'h2', '-CAfile', $ca, '-servername', 'localhost');
like($out, qr/ALPN protocol: h2\b/, 'openssl s_client -alpn h2 negotiates h2');
like($out, qr/Verify return code: 0 \(ok\)/, '... and verifies the certificate chain');
$out = TlsTest::s_client($tport, '-alpn', 'spdy/3,http/1.1');
like($out, qr{ALPN protocol: http/1\.1}, 'a client offering http/1.1 among others gets http/1.1');

my $s = TlsTest::connect($tport, ca => $ca);
ok($s, 'a client offering no ALPN completes the handshake') or diag($IO::Socket::SSL::SSL_ERROR);
is(TlsTest::request($s, 'GET', '/hello')->{body}, 'hello', '... and is served HTTP/1.1');
close $s if $s;

# ---- the request relation's tls ----
is(TlsTest::request(TlsTest::connect($tport, ca => $ca), 'GET', '/tls')->{body}, 'true',
	'request.tls is true over TLS (HTTP/1.1)');
($rc, $out) = TlsTest::curl('--cacert', $ca, '--http2', "https://127.0.0.1:$tport/tls");
is($out, 'true', 'request.tls is true over TLS (HTTP/2)');
is(WebgresTest::http_get($port, '/tls')->{body}, 'false', 'request.tls is false in cleartext');
is(TlsTest::request(TlsTest::connect($tport, ca => $ca), 'GET', '/tls-executor')->{body}, 'true',
	'request.tls is true on an executor');
is(WebgresTest::http_get($port, '/tls-executor')->{body}, 'false', '... and false there in cleartext');

# An h2c client cannot claim TLS with :scheme https (request_block sends it).
$node->append_conf('postgresql.conf', "webgres.http2 = on\n");
$node->reload;
my $h2c_tls;
my $deadline = time + 30;
while (time < $deadline)
{
	my $c = WebgresTest::connect_to($port);
	print $c $H2Test::PREFACE . frame(4, 0, 0, '')
	  . frame(1, 0x5, 1, "\x82\x87\x04" . H2Test::hstr('/tls') . "\x01" . H2Test::hstr('h'));
	my ($st, $b) = read_stream($c, 1);
	close $c;
	if (defined $st && $st == 200) { $h2c_tls = $b; last; }
	sleep 0.1;
}
is($h2c_tls, 'false', 'request.tls is false for h2c with :scheme https');

# ---- streams over HTTP/2 with TLS ----
($rc, $out, $err) = TlsTest::curl('--cacert', $ca, '--http2', '-H', 'Accept: text/csv',
	'-w', '\n%{http_version}', "https://127.0.0.1:$tport/export");
my @lines = split /\r?\n/, $out;
is($lines[-1], '2', 'a streamed export over TLS is served with HTTP/2');
is(scalar(grep { /^\d+,x{100}$/ } @lines), 20000, '... with all its rows') or diag($err);

my $ev = TlsTest::connect($tport, ca => $ca, alpn => ['h2']);
is($ev && $ev->alpn_selected, 'h2', 'an HTTP/2 client over TLS');
print $ev $H2Test::PREFACE . frame(4, 0, 0, '') . frame(1, 0x5, 1, request_block('/events/tlsch'));
my @f = read_frames($ev, sub { $_[0]{type} == 1 && $_[0]{stream} == 1 });
ok(@f && $f[-1]{type} == 1, 'an event stream over HTTP/2 with TLS answers with its headers');
$node->safe_psql('postgres', q{SELECT pg_notify('tlsch', 'over tls')});
@f = read_frames($ev, sub { $_[0]{type} == 0 && $_[0]{payload} =~ /over tls/ });
like(@f ? $f[-1]{payload} : '', qr/data: over tls/, '... and delivers a notification as an event');
close $ev;

# ---- static files and compression over HTTP/2 with TLS ----
mkdir("$dir/site") or die "mkdir: $!";
TlsTest::write_file("$dir/site/app.js", "console.log('tls');\n" x 400);
$node->safe_psql('postgres', "INSERT INTO webgres.static_mounts (prefix, directory) VALUES ('/static', '$dir/site')");
$node->append_conf('postgresql.conf', "webgres.compress = on\n");
$node->reload;
my $plain = "console.log('tls');\n" x 400;
my ($hdrs, $gz) = ('', '');
$deadline = time + 30;
while (time < $deadline)
{
	($rc, $gz, $err) = TlsTest::curl('--cacert', $ca, '--http2', '--compressed', '-D', '-',
		"https://127.0.0.1:$tport/static/app.js");
	last if $gz =~ /content-encoding: gzip/i;
	sleep 0.1;
}
like($gz, qr{^HTTP/2 200}, 'a static file over HTTP/2 with TLS');
like($gz, qr/^content-encoding: gzip/mi, '... compressed when asked');
($hdrs, $out) = split /\r\n\r\n/, $gz, 2;
is($out, $plain, '... and what curl decompresses is the file');

# ---- HTTP/2 screening over TLS ----
# The rapid-reset pattern: a stream opened and reset, again and again.
my $rr = TlsTest::connect($tport, ca => $ca, alpn => ['h2']);
my $burst = $H2Test::PREFACE . frame(4, 0, 0, '');
for (my $id = 1; $id < 80; $id += 2)
{
	$burst .= frame(1, 0x5, $id, request_block('/hello')) . frame(3, 0, $id, pack('N', 8));
}
print $rr $burst;
@f = read_frames($rr, sub { $_[0]{type} == 7 });
ok(@f && $f[-1]{type} == 7, 'rapid resets over TLS end in GOAWAY, as over h2c');
is(@f && $f[-1]{type} == 7 ? unpack('x4N', $f[-1]{payload}) : undef, 0xb, '... with ENHANCE_YOUR_CALM');
close $rr;

# ---- redirect ----
$node->append_conf('postgresql.conf', "webgres.tls_redirect = on\n");
$node->reload;
my $res;
$deadline = time + 30;
while (time < $deadline)
{
	$res = WebgresTest::raw($port, "GET /hello?a=1 HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n");
	last if $res && $res->{status} == 308;
	sleep 0.1;
}
is($res->{status}, 308, 'with webgres.tls_redirect, a cleartext request is answered 308');
is($res->{headers}{location}, "https://example.com:$tport/hello?a=1", '... to its https URL on the TLS port');
$res = WebgresTest::raw($port, "GET /hello HTTP/1.1\r\nHost: bad\@host\r\nConnection: close\r\n\r\n");
is($res->{status}, 400, '... and 400 when the Host is not a host name');
($rc, $out) = TlsTest::curl('--cacert', $ca, "https://127.0.0.1:$tport/hello");
is($out, 'hello', 'TLS requests are served, not redirected');

# ---- certificate reload ----
my $old = TlsTest::connect($tport, ca => $ca);
is(TlsTest::served_name($old), 'first', 'the first certificate is served');
is(TlsTest::request($old, 'GET', '/hello')->{status}, 200, 'a keep-alive connection is served');

# Waits until a new connection is given the certificate of $name.
sub wait_for_cert
{
	my ($name) = @_;
	my $deadline = time + 30;
	my $got = '';
	while (time < $deadline)
	{
		my $c = TlsTest::connect($tport, ca => $ca);
		$got = $c ? TlsTest::served_name($c) : 'no handshake';
		return $got if $got eq $name;
		sleep 0.1;
	}
	return $got;
}

install_pair('second', 'second');
$node->reload;
is(wait_for_cert('second'), 'second', 'after a reload, a new connection gets the renewed certificate');
is(TlsTest::request($old, 'GET', '/hello')->{status}, 200,
	'the connection opened before the reload is still served');
is(TlsTest::served_name($old), 'first', '... with the certificate it started with');
close $old;

# ---- a second certificate, chosen by SNI ----
$node->append_conf('postgresql.conf',
	"webgres.tls_sni_cert_file = '$other_cert'\nwebgres.tls_sni_key_file = '$other_key'\n");
$node->reload;
$deadline = time + 30;
my $sni = '';
while (time < $deadline)
{
	my $c = TlsTest::connect($tport, ca => $ca, host => 'other.test');
	$sni = $c ? TlsTest::served_name($c) : 'no handshake';
	last if $sni eq 'other';
	sleep 0.1;
}
is($sni, 'other', 'a client naming a host of the SNI certificate gets it');
my $w = TlsTest::connect($tport, ca => $ca, host => 'www.other.test', alpn => ['h2']);
is($w ? TlsTest::served_name($w) . ' ' . $w->alpn_selected : 'no handshake', 'other h2',
	'... for a wildcard name too, with ALPN');
close $w if $w;
is(TlsTest::served_name(TlsTest::connect($tport, ca => $ca)), 'second',
	'localhost still gets the main certificate');
my $none = TlsTest::connect($tport, host => 'unknown.test');
is($none ? TlsTest::served_name($none) : 'no handshake', 'second', 'an unknown name gets the main certificate');
($rc, $out) = TlsTest::curl('--cacert', $ca, '--http2', '-w', ' %{http_version}',
	'--resolve', "other.test:$tport:127.0.0.1", "https://other.test:$tport/hello");
is("$rc $out", '0 hello 2', 'curl verifies and is served under the SNI name');

# A key that does not belong to the certificate: the old pair stays.
my $logpos = -s $node->logfile;
install_pair('first', 'stranger');
$node->reload;
my $log = '';
$deadline = time + 30;
while (time < $deadline && $log !~ /keeps serving the TLS certificate/)
{
	$log = substr(slurp_file($node->logfile), $logpos);
	sleep 0.1;
}
like($log, qr/webgres\.tls_key_file ".*server\.key" does not match the certificate in webgres\.tls_cert_file/,
	'a mismatched key at reload is logged, naming the settings');
like($log, qr/keeps serving the TLS certificate it had/, '... and the old certificate is kept');
my $c = TlsTest::connect($tport, ca => $ca);
is($c ? TlsTest::served_name($c) : 'no handshake', 'second', 'new connections still get the last good certificate');
is($c ? TlsTest::request($c, 'GET', '/hello')->{status} : 0, 200, '... and are served');
$c = TlsTest::connect($tport, ca => $ca, host => 'other.test');
is($c ? TlsTest::served_name($c) : 'no handshake', 'other', '... and the SNI certificate stays too');

# An unreadable path at reload.
$logpos = -s $node->logfile;
$node->append_conf('postgresql.conf', "webgres.tls_key_file = '$dir/missing.key'\n");
$node->reload;
$log = '';
$deadline = time + 30;
while (time < $deadline && $log !~ /keeps serving the TLS certificate/)
{
	$log = substr(slurp_file($node->logfile), $logpos);
	sleep 0.1;
}
like($log, qr/could not read webgres\.tls_key_file ".*missing\.key": No such file/,
	'a missing key file at reload is logged, naming the setting');
$c = TlsTest::connect($tport, ca => $ca);
is($c ? TlsTest::request($c, 'GET', '/hello')->{status} : 0, 200, '... and TLS is still served');

# ---- at start ----
# The mismatched pair again, now at start: the worker does not start.
$node->append_conf('postgresql.conf', "webgres.tls_key_file = '$dir/server.key'\n");
$node->stop;
$logpos = -s $node->logfile;
$node->start;
$log = '';
$deadline = time + 30;
while (time < $deadline && $log !~ /does not match/)
{
	$log = substr(slurp_file($node->logfile), $logpos);
	sleep 0.1;
}
like($log, qr/FATAL:.*webgres\.tls_key_file ".*server\.key" does not match the certificate/,
	'a mismatched key at start ends the worker with the error');
ok(!TlsTest::connect($tport), '... and nothing serves TLS');
ok(!eval { WebgresTest::http_get($port, '/hello', timeout => 2) },
	'... nor cleartext: the worker did not start');

# Mended, the supervisor's next start serves again.
install_pair('first', 'first');
ok(WebgresTest::wait_for_listen($tport, 60), 'with the files mended, the worker starts');
is(TlsTest::served_name(TlsTest::connect($tport, ca => $ca)), 'first', '... and serves TLS');

# A TLS port that is also a cleartext one is refused.
$node->stop;
$logpos = -s $node->logfile;
$node->append_conf('postgresql.conf', "webgres.tls_listen = '127.0.0.1:$port'\n");
$node->start;
$log = '';
$deadline = time + 30;
while (time < $deadline && $log !~ /shares its port/)
{
	$log = substr(slurp_file($node->logfile), $logpos);
	sleep 0.1;
}
like($log, qr/webgres\.tls_listen entry "127\.0\.0\.1:$port" shares its port with webgres\.listen entry/,
	'a TLS address on the cleartext port is refused');
$node->stop;
done_testing();
