# Hostile TLS clients on a webgres.tls_listen port: a handshake that
# stalls, garbage instead of a ClientHello, an oversized ClientHello, a
# record longer than TLS allows, a renegotiation attempt, and HTTP/1.1
# and HTTP/2 screening and timeouts behind TLS.  Each must close the connection (or
# refuse what it asks) without harm: the worker keeps serving cleartext and
# TLS, and finish() checks that no worker exited.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use Socket qw(AF_UNIX SOCK_STREAM PF_UNSPEC);
use IPC::Run;
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
log_min_messages = debug1
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

# Reads a TLS connection until the peer closes it or $seconds pass;
# returns (how it ended, what it sent, seconds taken).  How: 'closed' (a
# close_notify or a bare close, which OpenSSL calls an unexpected EOF),
# 'broken: ERROR' (bytes that are not TLS records, say), or 'open'.
sub read_to_close
{
	my ($sock, $seconds) = @_;
	my $sel = IO::Select->new($sock);
	my ($t0, $got) = (time, '');
	while (time < $t0 + $seconds)
	{
		next unless $sock->pending || $sel->can_read(0.5);
		my $n = sysread($sock, my $chunk, 65536);
		if (!$n)
		{
			my $err = $IO::Socket::SSL::SSL_ERROR // '';
			my $how = defined $n || $err =~ /unexpected eof/ ? 'closed' : "broken: $err";
			return ($how, $got, time - $t0);
		}
		$got .= $chunk;
	}
	return ('open', $got, time - $t0);
}

# A TLS 1.2 connection asks to renegotiate: its ClientHello is sent, then
# the bytes that come back are read below TLS.  A record's content type
# is in the clear: returns the first record's (22 a handshake, 21 an
# alert), 'closed' if the peer closed first, 'nothing' if it said nothing
# for 30 s; and whether the peer closed the connection afterwards.
sub renegotiation_answer
{
	my ($port) = @_;
	my $s = TlsTest::connect($port, version => 'TLSv1_2') or return ("no connection: $IO::Socket::SSL::SSL_ERROR", 0);
	open(my $raw, '<&=', fileno($s)) or die "fdopen: $!";
	# OpenSSL writes to the socket but reads from an empty socket of a
	# pair, so that it cannot take the answer before this reads it.
	socketpair(my $quiet, my $other, AF_UNIX, SOCK_STREAM, PF_UNSPEC) or die "socketpair: $!";
	$quiet->blocking(0);
	my $ssl = $s->_get_ssl_object;
	Net::SSLeay::set_rfd($ssl, fileno($quiet));
	Net::SSLeay::renegotiate($ssl) or return ('renegotiation not started', 0);
	Net::SSLeay::do_handshake($ssl);    # sends the ClientHello, then wants to read
	my $sel = IO::Select->new($raw);
	my ($buf, $eof, $deadline) = ('', 0, time + 30);
	while (!$eof && length($buf) < 5 && time < $deadline)
	{
		next unless $sel->can_read(0.5);
		my $n = sysread($raw, $buf, 65536, length $buf);
		$eof = 1 if defined $n && $n == 0;
	}
	my $first = length($buf) >= 5 ? ord($buf) : $eof ? 'closed' : 'nothing';
	while (!$eof && time < $deadline)
	{
		next unless $sel->can_read(0.5);
		my $n = sysread($raw, my $more, 65536);
		$eof = 1 if defined $n && $n == 0;
	}
	Net::SSLeay::ERR_clear_error();
	close $s;
	return ($first, $eof);
}

# The control: openssl's own server, allowing TLS 1.0 and 1.1 (security
# level 0) and client-initiated renegotiation, with the same certificate.
# What the clients below are refused by webgres they must get from it, or
# a refusal could be the client's own doing.
my $cport = PostgreSQL::Test::Cluster::get_free_port();
my ($cin, $cout) = ('', '');
my $control = IPC::Run::start([ 'openssl', 's_server', '-accept', "127.0.0.1:$cport", '-cert', $cert,
		'-key', $key, '-cipher', 'DEFAULT:@SECLEVEL=0', '-client_renegotiation', '-quiet' ],
	'<', \$cin, '>', \$cout, '2>&1');
WebgresTest::wait_for_listen($cport) or die "openssl s_server did not start: $cout";

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
close $s;
my ($first, $closed) = renegotiation_answer($cport);
is($first, 22, 'a server that allows renegotiation (openssl s_server) answers the client\'s ClientHello with a handshake record');
($first, $closed) = renegotiation_answer($tport);
is($first, 21, 'webgres answers it at once with an alert record, not a handshake or silence till a timeout');
ok($closed, '... and closes the connection');
still_serving('renegotiation');

# ---- TLS 1.0 and 1.1 ----
# The clients offer them: openssl s_server takes them.  webgres answers
# the ClientHello with nothing and closes, logging a failed handshake
# (libh2o 2.2.5 closes a failed handshake without sending OpenSSL's
# alert), while the same client settings with TLS 1.2 get a session: the
# refusal is the server's, for the version.
my $log = $h->node->logfile;
my $failed_handshakes = sub { scalar(() = slurp_file($log) =~ /TLS handshake failed: ssl handshake failure/g) };
my $c = TlsTest::connect($tport, version => 'TLSv1_2', cipher_list => 'DEFAULT:@SECLEVEL=0');
is($c ? $c->get_sslversion : "refused: $IO::Socket::SSL::SSL_ERROR", 'TLSv1_2',
	'the clients\' settings with TLS 1.2: a session with webgres');
close $c if $c;
for my $v ([ 'TLSv1', 'TLS 1.0', '-tls1', 'TLSv1' ], [ 'TLSv1_1', 'TLS 1.1', '-tls1_1', 'TLSv1.1' ])
{
	$c = TlsTest::connect($cport, version => $v->[0], cipher_list => 'DEFAULT:@SECLEVEL=0');
	is($c ? $c->get_sslversion : "refused: $IO::Socket::SSL::SSL_ERROR", $v->[0],
		"the client speaks $v->[1] to a server that allows it");
	close $c if $c;
	my $before = $failed_handshakes->();
	$c = TlsTest::connect($tport, version => $v->[0], cipher_list => 'DEFAULT:@SECLEVEL=0');
	ok(!$c, "$v->[1] is refused by webgres");
	diag("a $v->[1] handshake succeeded: " . $c->get_sslversion) if $c;
	ok(WebgresTest::poll_until(sub { $failed_handshakes->() > $before }, 30),
		'... which logs a failed handshake');

	$out = TlsTest::s_client($cport, $v->[2], '-cipher', 'DEFAULT:@SECLEVEL=0');
	like($out, qr/^ *Protocol *: \Q$v->[3]\E$/m, "openssl s_client $v->[2] with openssl s_server: $v->[1]");
	like($out, qr/Cipher is (?!\(NONE\))/, '... and a session');
	$out = TlsTest::s_client($tport, $v->[2], '-cipher', 'DEFAULT:@SECLEVEL=0');
	like($out, qr/Cipher is \(NONE\)/, "openssl s_client $v->[2] with webgres: no session");
	like($out, qr/SSL handshake has read 0 bytes/, '... not a byte in answer to its ClientHello, no certificate');
}

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

# Each timeout answers as documented, and not before it is due (a close
# for any other reason, a crash among them, is quicker or says otherwise).
$s = TlsTest::connect($tport, ca => $ca);
print $s "GET /hello HTTP/1.1\r\nHost: x\r\n";
my ($how, $got);
($how, $got, $took) = read_to_close($s, 30);
is($how, 'closed', 'half a request head over TLS is closed');
is($got, '', '... without the 408 cleartext gets (docs/tls.md)');
cmp_ok($took, '>=', 0.9, "... after webgres.header_timeout (1 s), not sooner (${took}s)");
close $s;

$s = TlsTest::connect($tport, ca => $ca);
($how, $got, $took) = read_to_close($s, 30);
is($how, 'closed', 'an idle TLS connection is closed');
is($got, '', '... without a response');
cmp_ok($took, '>=', 1.9, "... after webgres.request_timeout (2 s), not sooner (${took}s)");
close $s;

# An HTTP/2 client that sends half its preface.
$s = TlsTest::connect($tport, ca => $ca, alpn => ['h2']);
print $s "PRI * HTTP/2.0\r\n";
ok(TlsTest::peer_closes($s, 30), 'an HTTP/2 client over TLS that sends half its preface is closed');
close $s;
still_serving('timeouts');

$control->kill_kill;
$h->finish;
