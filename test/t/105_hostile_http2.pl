# Hostile HTTP/2: frames that are cheap to send and costly to serve.
# Each abuse case must end in GOAWAY (ENHANCE_YOUR_CALM, 0xb) and a closed
# connection, with the writing route run a bounded number of times; a
# request whose RST_STREAM came in the same read is not run at all; a
# normal HTTP/2 client is not cut off; HTTP/1.1 clients are served while an
# abuser runs; and with webgres.http2 off there is no HTTP/2 at all.
use strict;
use warnings;
use Errno qw(ECONNRESET);
use IO::Select;
use POSIX ();
use Socket qw(IPPROTO_TCP TCP_NODELAY);
use Test::More;
use Time::HiRes qw(time);
use H2Test;
use HostileTest;

$SIG{PIPE} = 'IGNORE';

my $h = HostileTest->new('http2', conf => "webgres.http2 = on\n");
my $port = $h->port;

use constant {
	DATA => 0, HEADERS => 1, PRIORITY => 2, RST_STREAM => 3, SETTINGS => 4,
	PING => 6, GOAWAY => 7, WINDOW_UPDATE => 8, CONTINUATION => 9,
	END_STREAM => 0x1, ACK => 0x1, END_HEADERS => 0x4,
	ENHANCE_YOUR_CALM => 0xb,
};
my $PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

sub frame
{
	my ($type, $flags, $stream, $payload) = @_;
	$payload //= '';
	return substr(pack('N', length $payload), 1) . pack('CCN', $type, $flags, $stream) . $payload;
}

# A header block of literal fields without indexing (RFC 7541 6.2.2),
# name from the static table: :path is 4, :authority is 1.
sub lit { my ($idx, $v) = @_; return chr($idx) . hstr($v); }

# An HPACK string literal (RFC 7541 5.2), not Huffman-coded.
sub hstr
{
	my ($v) = @_;
	my $n = length $v;
	return chr($n) . $v if $n < 127;
	my $out = chr(127);
	$n -= 127;
	while ($n >= 128) { $out .= chr(($n & 0x7f) | 0x80); $n >>= 7; }
	return $out . chr($n) . $v;
}
sub block
{
	my ($method, $path) = @_;
	return ($method eq 'POST' ? "\x83" : "\x82") . "\x86" . lit(4, $path) . lit(1, 'h');
}
sub get { my ($stream, $path) = @_; return frame(HEADERS, END_STREAM | END_HEADERS, $stream, block('GET', $path)); }
sub rst { return frame(RST_STREAM, 0, $_[0], pack('N', 8)); }
sub start { return $PREFACE . frame(SETTINGS, 0, 0); }

# Small frames go out at once, one write per read on the server where it matters.
sub connect_h2
{
	my $s = WebgresTest::connect_to($port);
	setsockopt($s, IPPROTO_TCP, TCP_NODELAY, 1);
	return $s;
}

sub send_all
{
	my ($s, $bytes) = @_;
	my $off = 0;
	while ($off < length $bytes)
	{
		my $n = syswrite($s, $bytes, length($bytes) - $off, $off);
		return 0 unless defined $n;		# the server closed: fine
		$off += $n;
	}
	return 1;
}

# Reads frames until $o{until}->(frames) holds, the peer closes, or the
# timeout.  A GOAWAY is always followed to the close.
sub read_frames
{
	my ($s, %o) = @_;
	my $until = $o{until} // sub { 0 };
	my ($buf, @frames, $closed, $goaway) = ('');
	my $deadline = time + ($o{timeout} // 10);
	my $sel = IO::Select->new($s);
	while (time < $deadline)
	{
		while (length $buf >= 9)
		{
			my ($l1, $l2, $type, $flags, $stream) = unpack('nCCCN', $buf);
			my $len = ($l1 << 8) | $l2;
			last if length $buf < 9 + $len;
			my $f = { type => $type, flags => $flags, stream => $stream & 0x7fffffff,
				payload => substr($buf, 9, $len) };
			substr($buf, 0, 9 + $len) = '';
			push @frames, $f;
			if ($type == GOAWAY)
			{
				my ($last, $code) = unpack('NN', $f->{payload});
				$goaway = { last => $last, code => $code, debug => substr($f->{payload}, 8) };
			}
		}
		last if !$goaway && $until->(\@frames);
		next unless $sel->can_read(0.2);
		my $n = sysread($s, my $chunk, 65536);
		if (!$n) { $closed = 1 if defined $n || $! == ECONNRESET; last; }
		$buf .= $chunk;
	}
	return { frames => \@frames, closed => $closed, goaway => $goaway };
}

sub responses { my ($r) = @_; return grep { $_->{type} == HEADERS } @{ $r->{frames} }; }
sub count_type { my ($r, $t) = @_; return scalar grep { $_->{type} == $t } @{ $r->{frames} }; }

# The abuse case must end in GOAWAY (0xb) and a closed connection.
sub calmed
{
	my ($r, $desc) = @_;
	ok($r->{goaway}, "$desc: GOAWAY sent");
	is($r->{goaway} && $r->{goaway}{code}, ENHANCE_YOUR_CALM, "$desc: error code ENHANCE_YOUR_CALM (0xb)");
	ok($r->{closed}, "$desc: connection closed");
	note("$desc: debug data: " . ($r->{goaway} ? $r->{goaway}{debug} : 'none'));
}

# ---- a normal HTTP/2 client is served and not cut off ----
{
	my $s = connect_h2();
	send_all($s, start() . frame(SETTINGS, 0, 0, pack('nN', 4, 1 << 20))
		  . get(1, '/hello') . get(3, '/count') . get(5, '/hello')
		  . frame(PING, 0, 0, 'abcdefgh') . frame(SETTINGS, 0, 0, pack('nN', 2, 0)));
	my $r = read_frames($s, until => sub { (grep { $_->{type} == DATA } @{ $_[0] }) >= 3 && grep { $_->{type} == PING } @{ $_[0] } });
	my @resp = responses($r);
	is(scalar @resp, 3, 'normal client: three responses');
	is_deeply([ map { substr($_->{payload}, 0, 1) } @resp ], [ ("\x88") x 3 ], 'normal client: each :status 200');
	is(join(',', map { $_->{payload} } grep { $_->{type} == DATA && length $_->{payload} } @{ $r->{frames} }),
		'hi,counted,hi', 'normal client: the bodies, in order');
	ok((grep { $_->{type} == PING && $_->{flags} & ACK && $_->{payload} eq 'abcdefgh' } @{ $r->{frames} }), 'normal client: PING answered');
	# More requests on the same connection, with window updates between.
	for my $i (0 .. 19)
	{
		my $id = 7 + 2 * $i;
		send_all($s, get($id, '/hello') . frame(WINDOW_UPDATE, 0, 0, pack('N', 1000)) . frame(SETTINGS, ACK, 0));
	}
	$r = read_frames($s, until => sub { (grep { $_->{type} == HEADERS } @{ $_[0] }) >= 20 });
	is(scalar(responses($r)), 20, 'normal client: twenty more requests on the same connection');
	ok(!$r->{goaway} && !$r->{closed}, 'normal client: no GOAWAY, still open');
	close $s;
	is($h->hits, 1, 'normal client: the writing route ran once');
	$h->reset_hits;
}

# ---- a request the screen refuses is refused on its stream alone ----
# (each screening rule is tested over both protocols in 101_hostile_requests.pl)
{
	my $s = connect_h2();
	send_all($s, start() . get(1, '/count#frag') . get(3, "/count/caf\xc3\xa9") . get(5, '/hello'));
	my $r = read_frames($s, until => sub { (grep { $_->{type} == DATA && $_->{flags} & END_STREAM } @{ $_[0] }) >= 3 });
	my %status = map { $_->{stream} => H2Test::status_of($_->{payload}) } responses($r);
	is_deeply(\%status, { 1 => 400, 3 => 400, 5 => 200 },
		'a fragment and raw UTF-8 in :path: 400 on their streams, the next request served');
	ok(!$r->{goaway} && !$r->{closed}, '... on the same connection, still open');
	close $s;
	is($h->hits, 0, '... and neither reached the counting route');
}

# ---- rapid reset: a stream reset in the same read is not run ----
{
	my $s = connect_h2();
	send_all($s, start() . join('', map { get(2 * $_ + 1, '/count') . rst(2 * $_ + 1) } 0 .. 39));
	# A last request not reset, so that its answer shows the rest was read.
	send_all($s, get(81, '/count'));
	my $r = read_frames($s, until => sub { grep { $_->{type} == HEADERS && $_->{stream} == 81 } @{ $_[0] } });
	ok((grep { $_->{stream} == 81 } responses($r)), 'reset in the same read: the request after them is answered');
	ok(!$r->{goaway}, 'reset in the same read: 40 resets are within the budget');
	close $s;
	is($h->hits, 1, 'reset in the same read: none of the 40 reset requests ran');
	$h->reset_hits;
}

# ---- rapid reset flood ----
{
	my $s = connect_h2();
	send_all($s, start() . join('', map { get(2 * $_ + 1, '/count') . rst(2 * $_ + 1) } 0 .. 4999));
	my $r = read_frames($s);
	calmed($r, 'rapid reset flood');
	my $hits = $h->hits;
	cmp_ok($hits, '<=', 10, "rapid reset flood: the writing route ran $hits times for 5000 requests");
	$h->reset_hits;
}

# ---- resets in separate reads: the handler runs, but the budget ends it ----
{
	my $s = connect_h2();
	send_all($s, start());
	my $r;
	for my $i (0 .. 399)
	{
		my $id = 2 * $i + 1;
		last unless send_all($s, get($id, '/count'));
		# Wait for the answer, so that the reset comes in a later read.
		$r = read_frames($s, timeout => 5, until => sub { grep { $_->{type} == HEADERS && $_->{stream} == $id } @{ $_[0] } });
		last if $r->{goaway} || $r->{closed};
		last unless send_all($s, rst($id));
	}
	$r = read_frames($s) unless $r->{goaway};
	calmed($r, 'slow rapid reset');
	my $hits = $h->hits;
	cmp_ok($hits, '<=', 210, "slow rapid reset: the writing route ran $hits times, not 400");
	$h->reset_hits;
}

# ---- floods of control frames ----
my %floods = (
	'PING flood' => sub { frame(PING, 0, 0, pack('NN', 0, $_[0])) },
	'SETTINGS flood' => sub { frame(SETTINGS, 0, 0) },
	'WINDOW_UPDATE flood' => sub { frame(WINDOW_UPDATE, 0, 0, pack('N', 1)) },
	# PRIORITY for a stream already closed: h2o ignores them.
	'PRIORITY flood' => sub { frame(PRIORITY, 0, 1, pack('NC', 0, 15)) },
);
for my $desc (sort keys %floods)
{
	my $s = connect_h2();
	send_all($s, start() . get(1, '/count') . join('', map { $floods{$desc}->($_) } 1 .. 3000));
	my $r = read_frames($s);
	calmed($r, $desc);
	if ($desc eq 'PING flood')
	{
		my $acks = count_type($r, PING);
		cmp_ok($acks, '<=', 1100, "PING flood: $acks of 3000 PINGs answered");
	}
	is($h->hits, 0, "$desc: nothing in the read that overspent was processed");
	$h->reset_hits;
}

# ---- cheap frames after h2o has stopped and restarted reading ----
# h2o stops reading a connection while more than 512 kB of its output wait
# (response headers: DATA frames wait in the streams, under flow control)
# and restarts it, with its own read callback, from a write completion once
# they have gone.  Each case makes it stop with responses that have large
# headers, to a client that reads nothing yet (a small receive buffer), then
# reads them all and sends a flood of control frames and no request: the
# screening must be back in front of h2o by then.  The cases start h2o's
# writes from each place it starts them: its read callback when the
# requests came with the preface or on their own, and its write timer when
# the answers come from executors.
WebgresTest::add_route($h->node, 'GET', '/bighead',
	q{SELECT 'x' AS body, jsonb_build_object('X-Big', repeat(md5('b'), 1500)) AS headers});
WebgresTest::add_route($h->node, 'GET', '/bighead-executor',
	q{SELECT 'x' AS body, jsonb_build_object('X-Big', repeat(md5('b'), 6000)) AS headers});
$h->node->safe_psql('postgres', q{UPDATE webgres.routes SET mode = 'executor' WHERE path = '/bighead-executor'});
WebgresTest::wait_for_status($port, '/bighead', 200);
WebgresTest::wait_for_status($port, '/bighead-executor', 200);

# Opens a connection that reads slowly, has $n requests for $path answered
# before reading anything, then reads every answer.  The requests go with
# the preface, or after the server's SETTINGS ACK if $o{handshake}.
sub stall_then_drain
{
	my ($path, $n, %o) = @_;
	socket(my $s, Socket::PF_INET(), Socket::SOCK_STREAM(), 0) or die "socket: $!";
	setsockopt($s, Socket::SOL_SOCKET(), Socket::SO_RCVBUF(), 4096);
	connect($s, Socket::pack_sockaddr_in($port, Socket::inet_aton('127.0.0.1'))) or die "connect: $!";
	setsockopt($s, IPPROTO_TCP, TCP_NODELAY, 1);
	my $before = $h->node->safe_psql('postgres', 'SELECT sum(responses_2xx) FROM webgres.workers');
	my $requests = join('', map { get(2 * $_ - 1, $path) } 1 .. $n);
	if ($o{handshake})
	{
		send_all($s, start());
		read_frames($s, until => sub { grep { $_->{type} == SETTINGS && $_->{flags} & ACK } @{ $_[0] } });
		send_all($s, $requests);
	}
	else
	{
		send_all($s, start() . $requests);
	}
	# Let the answers pile up in the server before reading them.
	$h->node->poll_query_until('postgres',
		"SELECT sum(responses_2xx) >= $before + $n FROM webgres.workers")
	  or diag("$path: the $n answers were not all counted");
	my $r = read_frames($s, timeout => 60,
		until => sub { (grep { $_->{type} == DATA && $_->{flags} & END_STREAM } @{ $_[0] }) >= $n });
	is(scalar(grep { $_->{type} == DATA && $_->{flags} & END_STREAM } @{ $r->{frames} }), $n,
		"$o{desc}: output drained, all $n answers read");
	return $s;
}

for my $case (
	[ 'PING flood after reading restarted (requests with the preface)', '/bighead', 100, 0, PING,
		sub { frame(PING, 0, 0, pack('NN', 1, $_[0])) } ],
	[ 'SETTINGS flood after reading restarted (requests after the handshake)', '/bighead', 100, 1, SETTINGS,
		sub { frame(SETTINGS, 0, 0) } ],
	[ 'PING flood after reading restarted (answers from executors)', '/bighead-executor', 50, 0, PING,
		sub { frame(PING, 0, 0, pack('NN', 2, $_[0])) } ])
{
	my ($desc, $path, $n, $handshake, $type, $flood) = @$case;
	my $s = stall_then_drain($path, $n, handshake => $handshake, desc => $desc);
	send_all($s, join('', map { $flood->($_) } 1 .. 3000));
	my $r = read_frames($s);
	calmed($r, $desc);
	is($r->{goaway} && $r->{goaway}{debug}, 'too many control frames', "$desc: the GOAWAY says why");
	my $acks = scalar grep { $_->{type} == $type && $_->{flags} & ACK } @{ $r->{frames} };
	cmp_ok($acks, '<=', 1100, "$desc: $acks of 3000 answered");
	close $s;
}
# And a normal HTTP/2 client is served after them.
{
	my $s = connect_h2();
	send_all($s, start() . get(1, '/hello'));
	my $r = read_frames($s, until => sub { grep { $_->{type} == DATA && $_->{flags} & END_STREAM } @{ $_[0] } });
	is(join(',', map { $_->{payload} } grep { $_->{type} == DATA } @{ $r->{frames} }), 'hi',
		'after the floods: a normal HTTP/2 client is served');
	ok(!$r->{goaway}, 'after the floods: no GOAWAY for it');
	close $s;
}

# Empty DATA frames on an open request body.
{
	my $s = connect_h2();
	send_all($s, start() . frame(HEADERS, END_HEADERS, 1, block('POST', '/count'))
		  . join('', map { frame(DATA, 0, 1) } 1 .. 3000));
	calmed(read_frames($s), 'empty DATA flood');
	is($h->hits, 0, 'empty DATA flood: the request did not run');
	$h->reset_hits;
}

# ---- header blocks ----
# CONTINUATION frames without END_HEADERS, never ending.
{
	my $s = connect_h2();
	send_all($s, start() . frame(HEADERS, END_STREAM, 1, block('GET', '/count'))
		  . join('', map { frame(CONTINUATION, 0, 1, lit(1, 'h')) } 1 .. 200));
	calmed(read_frames($s), 'CONTINUATION flood');
	is($h->hits, 0, 'CONTINUATION flood: the request did not run');
	$h->reset_hits;
}

# A header block larger than 64 kB, in 16 kB frames.
{
	my $s = connect_h2();
	my $field = "\x00" . hstr('x') . hstr('a' x 16000);	# literal field, new name
	send_all($s, start() . frame(HEADERS, END_STREAM, 1, block('GET', '/count'))
		  . join('', map { frame(CONTINUATION, $_ == 5 ? END_HEADERS : 0, 1, $field) } 1 .. 5));
	calmed(read_frames($s), 'huge header block');
	is($h->hits, 0, 'huge header block: the request did not run');
	$h->reset_hits;
}

# HPACK bomb: one 4000-byte entry in the dynamic table, referred to 200
# times by one byte each, decodes to 800 kB from a 4 kB block.
{
	my $s = connect_h2();
	my $entry = "\x40" . hstr('x') . hstr('a' x 4000);	# literal with incremental indexing
	my $blk = block('GET', '/count') . $entry . ("\xbe" x 200);	# index 62: the newest entry
	send_all($s, start() . frame(HEADERS, END_STREAM | END_HEADERS, 1, $blk));
	my $r = read_frames($s);
	calmed($r, 'HPACK bomb');
	is($h->hits, 0, 'HPACK bomb: the request did not run');
	$h->reset_hits;
}

# ---- HTTP/1.1 clients are served while abusers run ----
# The attacker, a child process, opens rapid-reset connections one after
# another until the parent has made its HTTP/1.1 requests (at least one
# attack, at most 200), and tells the parent when its first attack is under
# way, so the requests overlap the attack.  Each attack must connect, send
# its 3000 requests and resets, and be calmed (GOAWAY ENHANCE_YOUR_CALM and
# a close); the child's exit status counts those that were not, and it
# reports how many it made.
{
	pipe(my $started_r, my $started_w) or die "pipe: $!";
	pipe(my $stop_r, my $stop_w) or die "pipe: $!";
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		close $started_r;
		close $stop_w;
		my $stop = IO::Select->new($stop_r);
		my ($made, $failed) = (0, 0);
		while ($made < 200 && ($made == 0 || !$stop->can_read(0)))
		{
			$made++;
			my $s = eval { connect_h2() };
			if (!$s) { $failed++; next; }
			my $sent = send_all($s, start() . join('', map { get(2 * $_ + 1, '/count') . rst(2 * $_ + 1) } 0 .. 2999));
			syswrite($started_w, "started\n") if $made == 1;
			my $r = read_frames($s, timeout => 60);
			$failed++ unless $sent && $r->{goaway} && $r->{goaway}{code} == ENHANCE_YOUR_CALM && $r->{closed};
			close $s;
		}
		syswrite($started_w, "made $made\n");
		POSIX::_exit($failed > 255 ? 255 : $failed);	# not exit: the test's END blocks belong to the parent
	}
	close $started_w;
	close $stop_r;
	my $line = <$started_r>;
	is($line, "started\n", 'the attacker is under way');
	my $ok = 0;
	for (1 .. 30)
	{
		my $r = eval { WebgresTest::http_get($port, '/hello', timeout => 30) };
		$ok++ if $r && $r->{status} == 200;
	}
	close $stop_w;
	my ($made) = (<$started_r> // '') =~ /^made (\d+)$/;
	waitpid($pid, 0);
	is($?, 0, 'every attacking connection was made, sent its attack and got GOAWAY (ENHANCE_YOUR_CALM)');
	ok($made && $made >= 1, 'attacking connections made: ' . ($made // 'none'));
	is($ok, 30, 'HTTP/1.1 requests during a rapid reset attack: 30 of 30 answered');
	my $hits = $h->hits;
	cmp_ok($hits, '<=', 10 * ($made // 0), "$made attacking connections of 3000 requests each: the writing route ran $hits times");
	$h->reset_hits;
}

# ---- Upgrade: h2c is served as HTTP/1.1 ----
my $up = $h->answered("GET /hello HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, HTTP2-Settings\r\n"
	  . "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n", 200, 'Upgrade: h2c is served as HTTP/1.1');
is($up && $up->{body}, 'hi', 'Upgrade: h2c: the HTTP/1.1 answer');

# ---- webgres.http2_max_resets ----
# Lowered to 10 (it applies to new connections): ten requests reset in one
# write spend the ten resets allowed, and a PING after them is answered;
# eleven are one too many.  None of the requests runs.
ok(WebgresTest::reload_and_wait($h->node, "webgres.http2_max_resets = 10\n"),
	'the worker took webgres.http2_max_resets = 10');
$h->reset_hits;
{
	my $s = connect_h2();
	send_all($s, start() . join('', map { get(2 * $_ + 1, '/count') . rst(2 * $_ + 1) } 0 .. 9)
		  . frame(PING, 0, 0, 'tenreset'));
	my $r = read_frames($s, until => sub { grep { $_->{type} == PING && $_->{flags} & ACK } @{ $_[0] } });
	ok(!$r->{goaway}, 'ten resets, webgres.http2_max_resets = 10: no GOAWAY');
	ok((grep { $_->{type} == PING && $_->{flags} & ACK && $_->{payload} eq 'tenreset' } @{ $r->{frames} }),
		'... the connection answers the PING after them');
	close $s;
}
{
	my $s = connect_h2();
	send_all($s, start() . join('', map { get(2 * $_ + 1, '/count') . rst(2 * $_ + 1) } 0 .. 10));
	calmed(read_frames($s), 'eleven resets, webgres.http2_max_resets = 10');
	close $s;
}
is($h->hits, 0, 'webgres.http2_max_resets: none of the reset requests ran');

# ---- webgres.http2 = off ----
$h->node->append_conf('postgresql.conf', "webgres.http2 = off\n");
$h->node->reload;
# Wait for the workers to take the reload (a generous deadline), then send
# the preface once more.
my $deadline = time + 60;
while (time < $deadline)
{
	my $s = connect_h2();
	send_all($s, start() . get(1, '/hello'));
	my ($res) = WebgresTest::read_responses($s, 1, 5);
	close $s;
	last if @$res && $res->[0]{status} == 400;
	select(undef, undef, undef, 0.1);
}
$h->reset_hits;
{
	my $s = connect_h2();
	send_all($s, start() . get(1, '/count'));
	my ($res, $closed) = WebgresTest::read_responses($s, 1, 5);
	is(@$res && $res->[0]{status}, 400, 'http2 off: the preface is answered 400');
	ok($closed || HostileTest::closes($s), 'http2 off: and the connection closed');
	close $s;
	is($h->hits, 0, 'http2 off: the request after the preface did not run');
}
$h->still_serving('http2 off');

$h->finish;
