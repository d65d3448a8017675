# Hostile TLS clients on a webgres.tls_listen port: a handshake that
# stalls, garbage instead of a ClientHello, an oversized ClientHello, a
# record longer than TLS allows, a renegotiation attempt, and HTTP/1.1
# and HTTP/2 screening and timeouts behind TLS.  Each must close the connection (or
# refuse what it asks) without harm: the worker keeps serving cleartext and
# TLS, and finish() checks that no worker exited.
use strict;
use warnings;
use IO::Socket::INET;
use Net::SSLeay;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use H2Test;
use HostileTest;
use TlsTest;

$SIG{PIPE} = 'IGNORE';

my $dir = PostgreSQL::Test::Utils::tempdir();
my $certs = TlsTest::make_ca($dir);
my ($cert, $key) = TlsTest::make_leaf($certs, 'hostile');
my $ca = $certs->{ca};
my $tport = PostgreSQL::Test::Cluster::get_free_port();

my $h = HostileTest->new('tls', conf => <<"EOC");
webgres.tls_listen = '127.0.0.1:$tport'
webgres.tls_cert_file = '$cert'
webgres.tls_key_file = '$key'
webgres.header_timeout = 1000
webgres.request_timeout = 2000
EOC
ok(WebgresTest::wait_for_listen($tport), 'the TLS listener accepts connections');

sub tcp
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $tport, Timeout => 5)
	  or die "connect: $!";
	binmode $s;
	$s->autoflush(1);
	return $s;
}

# After each case: both listeners still serve.
sub still_serving
{
	my ($desc) = @_;
	$h->still_serving($desc);
	my $s = TlsTest::connect($tport, ca => $ca);
	my $r = $s ? TlsTest::request($s, 'GET', '/hello') : undef;
	ok($r && $r->{status} == 200, "$desc: TLS is served afterwards");
}

# A TLS record of content type $type.
sub record { my ($type, $body) = @_; return pack('Cnn', $type, 0x0301, length $body) . $body; }

# ---- a handshake that stalls ----
my $s = tcp();
my $t0 = time;
print $s "\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03" . ("\x00" x 20);
ok(TlsTest::peer_closes($s, 30), 'a client that stalls mid-handshake is closed');
my $took = time - $t0;
ok($took >= 0.5, "... after webgres.header_timeout, not at once (${took}s)");
close $s;
still_serving('stalled handshake');

$s = tcp();
ok(TlsTest::peer_closes($s, 30), 'a client that connects and says nothing is closed');
close $s;

# ---- garbage instead of a ClientHello ----
$s = tcp();
print $s "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
ok(TlsTest::peer_closes($s, 10), 'cleartext HTTP on the TLS port: the connection is closed');
close $s;
$s = tcp();
print $s join('', map { chr(($_ * 7919) % 256) } 1 .. 4096);
ok(TlsTest::peer_closes($s, 10), 'binary garbage on the TLS port: the connection is closed');
close $s;
still_serving('garbage');

# ---- oversized ClientHello ----
# A handshake message claiming 16 MB, then records of filler.
$s = tcp();
my $hello = "\x01" . "\xff\xff\xff" . "\x03\x03" . ("\x41" x 16378);
my $sent = 0;
for my $i (1 .. 64)
{
	my $chunk = $i == 1 ? record(22, $hello) : record(22, "\x41" x 16384);
	last unless defined syswrite($s, $chunk);
	$sent += length $chunk;
}
ok(TlsTest::peer_closes($s, 10), 'a ClientHello claiming 16 MB: the connection is closed');
close $s;

# A record longer than TLS allows (2^14 + 2048 for ciphertext).
$s = tcp();
print $s pack('Cnn', 22, 0x0301, 0xffff) . ("\x00" x 1000);
ok(TlsTest::peer_closes($s, 10), 'a 64 kB record: the connection is closed');
close $s;

# A real client with a ClientHello of 60 kB (a long ALPN list), which
# OpenSSL takes: ALPN then falls back to HTTP/1.1.
my $alpn = join(',', (map { "p$_" . ('x' x 200) } 1 .. 300), 'http/1.1');
my $out = TlsTest::s_client($tport, '-alpn', $alpn, '-CAfile', $ca, '-servername', 'localhost');
like($out, qr{ALPN protocol: http/1\.1|handshake failure|excessive message size},
	'a 60 kB ClientHello is served or refused, nothing else');
still_serving('oversized ClientHello');

# ---- renegotiation ----
$s = TlsTest::connect($tport, ca => $ca, version => 'TLSv1_2');
ok($s, 'a TLS 1.2 client');
is(TlsTest::request($s, 'GET', '/hello')->{status}, 200, '... is served');
my $ssl = $s->_get_ssl_object;
Net::SSLeay::renegotiate($ssl);
my $rc = Net::SSLeay::do_handshake($ssl);
ok($rc <= 0, 'a client-initiated renegotiation is refused');
close $s;
still_serving('renegotiation');

# ---- TLS 1.0 and 1.1 ----
for my $v ([ 'TLSv1', 'TLS 1.0' ], [ 'TLSv1_1', 'TLS 1.1' ])
{
	my $c = TlsTest::connect($tport, version => $v->[0], cipher_list => 'DEFAULT:@SECLEVEL=0');
	ok(!$c, "$v->[1] is refused");
	diag("a $v->[1] handshake succeeded: " . $c->get_sslversion) if $c;
}
$out = TlsTest::s_client($tport, '-tls1_1', '-cipher', 'DEFAULT:@SECLEVEL=0');
like($out, qr/Cipher is \(NONE\)/, 'openssl s_client -tls1_1: no session is made');
unlike($out, qr/Server certificate/, '... and the server sends no certificate');

# ---- HTTP/1.1 behind TLS keeps its screening and timeouts ----
$s = TlsTest::connect($tport, ca => $ca);
my $r = TlsTest::request($s, 'GET', '/x/../hello');
is($r ? $r->{status} : 'none', 400, 'a dot segment in the target over TLS: 400, as in cleartext');
close $s;

# ---- HTTP/2 behind TLS: the same screening as HTTP/1.1 ----
for my $case ([ '/count#frag', 'a fragment' ], [ "/count/caf\xc3\xa9", 'raw UTF-8' ],
	[ '/count/../hello', 'a dot segment' ], [ '/count/%zz', 'a malformed escape' ])
{
	$s = TlsTest::connect($tport, ca => $ca, alpn => [ 'h2' ]);
	my ($status) = H2Test::exchange($s, path => $case->[0]);
	is($status // 'none', 400, "HTTP/2 over TLS: $case->[1] in :path: 400, as over HTTP/1.1");
	close $s;
	$s = TlsTest::connect($tport, ca => $ca);
	$r = TlsTest::request($s, 'GET', $case->[0]);
	is($r ? $r->{status} : 'none', 400, "HTTP/1.1 over TLS: $case->[1] in the target: 400");
	close $s;
}
$s = TlsTest::connect($tport, ca => $ca, alpn => [ 'h2' ]);
my ($h2_status, $h2_body) = H2Test::exchange($s, path => '/hello');
is("$h2_status $h2_body", '200 hi', 'HTTP/2 over TLS: a well-formed request is served');
close $s;
is($h->hits, 0, 'no refused request over TLS reached a counting route');

$s = TlsTest::connect($tport, ca => $ca);
print $s "GET /hello HTTP/1.1\r\nHost: x\r\n";
ok(TlsTest::peer_closes($s, 30), 'half a request head over TLS is closed after webgres.header_timeout');
close $s;

$s = TlsTest::connect($tport, ca => $ca);
ok(TlsTest::peer_closes($s, 30), 'an idle TLS connection is closed after webgres.request_timeout');
close $s;

# An HTTP/2 client that sends half its preface.
$s = TlsTest::connect($tport, ca => $ca, alpn => ['h2']);
print $s "PRI * HTTP/2.0\r\n";
ok(TlsTest::peer_closes($s, 30), 'an HTTP/2 client over TLS that sends half its preface is closed');
close $s;
still_serving('timeouts');

$h->finish;
