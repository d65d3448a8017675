# The TLS settings a client sees, and key files that cannot be used
# (docs/tls.md): webgres.tls_min_version (TLS 1.2 served by default, then
# refused to new connections once TLS 1.3 is the minimum, while an open
# TLS 1.2 connection goes on); webgres.tls_ciphers and
# webgres.tls_ciphersuites (the default refuses a CBC cipher; a list of one
# is what is negotiated, and a client offering none of it is refused);
# values OpenSSL does not take are refused when set; a key file that is not
# PEM, an encrypted key, an unreadable key and a certificate file that is
# not PEM, each at reload: logged naming the setting, the old certificate
# kept; an encrypted key at start: the worker does not start until mended.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IO::Socket::SSL;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;
use TlsTest;

$SIG{PIPE} = 'IGNORE';

my $dir = PostgreSQL::Test::Utils::tempdir();
my $certs = TlsTest::make_ca($dir);
my $ca = $certs->{ca};
my ($cert, $key) = TlsTest::make_leaf($certs, 'settings');
TlsTest::write_file("$dir/server.key", TlsTest::read_file($key));

my $tport = PostgreSQL::Test::Cluster::get_free_port();
my $node = WebgresTest->new_node('tls_settings', workers => 1, conf => <<"EOC");
webgres.tls_listen = '127.0.0.1:$tport'
webgres.tls_cert_file = '$cert'
webgres.tls_key_file = '$dir/server.key'
EOC
WebgresTest::add_route($node, 'GET', '/hello', q{SELECT 'hello' AS body});
WebgresTest::wait_for_status($node->{webgres_port}, '/hello', 200);
ok(WebgresTest::wait_for_listen($tport), 'the TLS listener accepts connections');

# A new connection offering only the TLS version, TLS 1.2 ciphers and
# TLS 1.3 suites named (IO::Socket::SSL's SSL_version, SSL_cipher_list,
# SSL_ciphersuites; its defaults otherwise): "VERSION CIPHER status" of a
# request on it, or "refused".
sub try_tls
{
	my (%o) = @_;
	my $c = IO::Socket::SSL->new(PeerAddr => '127.0.0.1', PeerPort => $tport, Timeout => 10,
		SSL_hostname => 'localhost', SSL_verify_mode => SSL_VERIFY_PEER, SSL_ca_file => $ca,
		SSL_verifycn_scheme => 'http', SSL_verifycn_name => 'localhost', %o)
	  or return 'refused';
	my $r = TlsTest::request($c, 'GET', '/hello');
	my $got = join(' ', $c->get_sslversion, $c->get_cipher, $r ? $r->{status} : 'no answer');
	close $c;
	return $got;
}

# ---- webgres.tls_min_version ----
is(try_tls(SSL_version => 'TLSv1_2', SSL_cipher_list => 'ECDHE-ECDSA-AES128-GCM-SHA256'),
	'TLSv1_2 ECDHE-ECDSA-AES128-GCM-SHA256 200', 'by default TLS 1.2 is served');
like(try_tls(SSL_version => 'TLSv1_3'), qr/^TLSv1_3 \S+ 200$/, '... and TLS 1.3');
my $open12 = TlsTest::connect($tport, ca => $ca, version => 'TLSv1_2');
ok(WebgresTest::reload_and_wait($node, "webgres.tls_min_version = 'TLSv1.3'"), 'tls_min_version = TLSv1.3 reloaded');
is(try_tls(SSL_version => 'TLSv1_2'), 'refused', 'a new TLS 1.2 connection is then refused');
like(try_tls(SSL_version => 'TLSv1_3'), qr/^TLSv1_3 \S+ 200$/, 'TLS 1.3 is served');
is(TlsTest::request($open12, 'GET', '/hello')->{status}, 200, 'a TLS 1.2 connection opened before goes on');
close $open12;
my ($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.tls_min_version = 'TLSv1.1'});
like($err, qr/invalid value for parameter "webgres.tls_min_version": "TLSv1.1"/, 'TLSv1.1 is no value of it');
ok(WebgresTest::reload_and_wait($node, "webgres.tls_min_version = 'TLSv1.2'"), 'back to TLSv1.2');
like(try_tls(SSL_version => 'TLSv1_2'), qr/^TLSv1_2 \S+ 200$/, 'TLS 1.2 is served again');

# ---- webgres.tls_ciphers and webgres.tls_ciphersuites ----
# The default, Mozilla's intermediate profile, has no CBC cipher.
is(try_tls(SSL_version => 'TLSv1_2', SSL_cipher_list => 'ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES128-SHA'), 'refused',
	'by default a client offering only CBC ciphers is refused');
ok(WebgresTest::reload_and_wait($node,
		"webgres.tls_ciphers = 'ECDHE-ECDSA-AES256-GCM-SHA384'\n"
		  . "webgres.tls_ciphersuites = 'TLS_CHACHA20_POLY1305_SHA256'"),
	'tls_ciphers and tls_ciphersuites set to one each');
is(try_tls(SSL_version => 'TLSv1_2'), 'TLSv1_2 ECDHE-ECDSA-AES256-GCM-SHA384 200',
	'TLS 1.2: the one cipher listed is negotiated');
is(try_tls(SSL_version => 'TLSv1_2', SSL_cipher_list => 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-CHACHA20-POLY1305'),
	'refused', '... and a client offering only others, of the default list, is refused');
is(try_tls(SSL_version => 'TLSv1_3'), 'TLSv1_3 TLS_CHACHA20_POLY1305_SHA256 200',
	'TLS 1.3: the one suite listed is negotiated');
is(try_tls(SSL_version => 'TLSv1_3', SSL_ciphersuites => 'TLS_AES_128_GCM_SHA256'), 'refused',
	'... and a client offering only another is refused');
($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.tls_ciphers = 'NOT-A-CIPHER'});
like($err, qr/invalid value for parameter "webgres.tls_ciphers".*OpenSSL does not accept it/s,
	'a cipher list OpenSSL does not take is refused when set');
($rc, $out, $err) = $node->psql('postgres', q{ALTER SYSTEM SET webgres.tls_ciphersuites = 'TLS_NOT_A_SUITE'});
like($err, qr/invalid value for parameter "webgres.tls_ciphersuites".*OpenSSL does not accept it/s,
	'... and a suite list');
ok(WebgresTest::reload_and_wait($node,
		"webgres.tls_ciphers = 'HIGH'\nwebgres.tls_ciphersuites = 'TLS_AES_256_GCM_SHA384'"),
	'wider lists reloaded');

# ---- key and certificate files that cannot be used, at reload ----
# Each: the error names the setting and the file, the worker keeps the
# certificate it had, and TLS goes on being served with it.
TlsTest::openssl('pkey', '-in', $key, '-aes256', '-passout', 'pass:secret', '-out', "$dir/encrypted.key");
TlsTest::write_file("$dir/garbage.pem", "not a PEM file\n" x 4);
TlsTest::write_file("$dir/unreadable.key", TlsTest::read_file($key));
chmod 0000, "$dir/unreadable.key";
for my $case (
	[ 'an encrypted key', "webgres.tls_key_file = '$dir/encrypted.key'",
		qr/could not load webgres\.tls_key_file ".*encrypted\.key": .*\n.*HINT:  The file must hold an unencrypted private key in PEM\./ ],
	[ 'a key file that is not PEM', "webgres.tls_key_file = '$dir/garbage.pem'",
		qr/could not load webgres\.tls_key_file ".*garbage\.pem": / ],
	[ 'an unreadable key file', "webgres.tls_key_file = '$dir/unreadable.key'",
		qr/could not read webgres\.tls_key_file ".*unreadable\.key": Permission denied/ ],
	[ 'a certificate file that is not PEM', "webgres.tls_cert_file = '$dir/garbage.pem'",
		qr/could not load webgres\.tls_cert_file ".*garbage\.pem": .*\n.*HINT:  The file must hold the server certificate in PEM/ ])
{
	my ($what, $conf, $error) = @{$case};
	my $logpos = -s $node->logfile;
	$node->append_conf('postgresql.conf', "$conf\n");
	$node->reload;
	my $log = '';
	WebgresTest::poll_until(sub {
		$log = substr(slurp_file($node->logfile), $logpos);
		$log =~ /keeps serving the TLS certificate it had/;
	}, 60);
	like($log, $error, "$what at reload: logged, naming the setting and the file");
	like($log, qr/keeps serving the TLS certificate it had/, '... the certificate it had kept');
	like(try_tls(), qr/ 200$/, '... and TLS still served');
	# Mended again before the next case.
	$node->append_conf('postgresql.conf', "webgres.tls_cert_file = '$cert'\nwebgres.tls_key_file = '$dir/server.key'\n");
}

# ---- an encrypted key at start: the worker does not start ----
$node->stop;
my $logpos = -s $node->logfile;
$node->append_conf('postgresql.conf', "webgres.tls_key_file = '$dir/encrypted.key'\n");
$node->start;
my $log = '';
WebgresTest::poll_until(sub {
	$log = substr(slurp_file($node->logfile), $logpos);
	$log =~ /could not load webgres\.tls_key_file/;
}, 60);
like($log, qr/FATAL:  could not load webgres\.tls_key_file ".*encrypted\.key"/,
	'an encrypted key at start ends the worker with the error');
is(try_tls(), 'refused', '... and nothing serves TLS');
ok(!eval { WebgresTest::http_get($node->{webgres_port}, '/hello', timeout => 2) },
	'... nor cleartext');
# Mended, the supervisor's next start serves again.
TlsTest::write_file("$dir/encrypted.key", TlsTest::read_file($key));
ok(WebgresTest::wait_for_listen($tport, 60), 'with the key mended, the worker starts');
like(try_tls(), qr/ 200$/, '... and serves TLS');

$node->stop;
done_testing();
