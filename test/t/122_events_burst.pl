# A burst of notifications in one commit reaches every subscriber that reads
# it, whole, in order, exactly once, whatever its size: the worker takes the
# queue in slices and offers each to the clients before it reads the next,
# so webgres.sse_buffer_limit counts only what a client leaves waiting when
# it could have taken it.  A client that does not read is still cut, alone
# (its connection on HTTP/1.1, its stream on HTTP/2), and the worker's
# memory stays bounded by the limit times the streams while it waits.
use strict;
use warnings;
use IPC::Run;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use SseReader;
use ChaosTest;
use H2Test qw(frame request_block read_stream read_frames);

my $limit = 262144;
my $node = WebgresTest->new_node('events_burst', workers => 1,
	conf => "webgres.http2 = on\nwebgres.sse_buffer_limit = $limit\nwebgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/ch/:ch',
	q{SELECT ARRAY[request.params->>'ch'] AS channels FROM request});
WebgresTest::add_route($node, 'GET', '/hello', q{SELECT 'hello' AS body});
WebgresTest::wait_for_status($port, '/hello', 200);
my ($worker) = WebgresTest::worker_pids($node);

# N notifications of 1 kB on a channel, in one transaction.
sub burst
{
	my ($channel, $n) = @_;
	$node->safe_psql('postgres',
		"SELECT count(pg_notify('$channel', g || ' ' || repeat('x', 1000))) FROM generate_series(1, $n) g");
}

sub log_count
{
	my ($re) = @_;
	my @m = slurp_file($node->logfile) =~ /$re/g;
	return scalar @m;
}

my $cut = qr/disconnects an event-stream client that is not reading/;

# ---- 20 MB in one commit to 10 subscribers that read ----
{
	my $n = 20000;
	my @subs = map { SseReader::open_h1($port, '/ch/big') } 1 .. 10;
	ok(!grep({ !defined $_->{head} } @subs), '10 subscribers are listening');
	burst('big', $n);
	SseReader::read_until(\@subs, sub { !grep { $_->{n} < $n } @subs }, 180);
	for my $i (0 .. $#subs)
	{
		my $c = $subs[$i];
		ok($c->{n} == $n && $c->{bad} == 0 && $c->{first} == 1 && $c->{next} == $n + 1 && !$c->{eof},
			"subscriber $i received all $n events of the 20 MB burst, in order, once")
		  or diag("n=$c->{n} bad=$c->{bad} first=" . ($c->{first} // '-')
			  . " eof=$c->{eof} bytes=$c->{bytes}");
	}
	is(log_count($cut), 0, 'no reading client was cut');
	close $_->{sock} for @subs;
}

# ---- a client that does not read: cut alone, and the memory stays bounded ----
sub rss_anon_kb { return ChaosTest::status_kb($worker, 'RssAnon'); }

{
	my $n = 16000;
	my @still = map { SseReader::open_h1($port, '/ch/mixed', rcvbuf => 4096) } 1 .. 3;
	my $fast = SseReader::open_h1($port, '/ch/mixed');
	my $fds = ChaosTest::fd_count($worker);
	my $before = rss_anon_kb();
	my $peak = $before;
	burst('mixed', $n);
	SseReader::read_until([$fast], sub { $fast->{n} >= $n }, 180,
		sub { my $r = rss_anon_kb(); $peak = $r if $r > $peak; });
	ok($fast->{n} == $n && $fast->{bad} == 0,
		'the client that reads received the 16 MB burst whole while 3 did not read')
	  or diag("n=$fast->{n} bad=$fast->{bad}");
	ok(ChaosTest::wait_for(sub { log_count($cut) >= 3 }), 'the clients that do not read were cut');
	is(log_count($cut), 3, 'they alone');
	ok(ChaosTest::wait_for(sub { ChaosTest::fd_count($worker) <= $fds - 3 }),
		'and their connections closed');
	# One copy of what the read returned (16 MB of payloads), and per stream
	# at most the limit, a 64 kB slice and an event, in two buffers whose
	# allocations may have doubled.  Streams that took it all as it came
	# would hold the burst each: 64 MB more.
	my $bound_kb = int(1.3 * $n * 1024 / 1024 + 4 * 4 * ($limit + 65536 + 2048) / 1024 + 4096);
	my $grew = $peak - $before;
	cmp_ok($grew, '<', $bound_kb,
		"the worker's memory grew by $grew kB: the burst once, and the limit per stream");
	close $_->{sock} for @still, $fast;
}

# ---- a stream that begins while a burst is being delivered ----
# gets none of it: that burst was read before its LISTEN (its catch-up
# query is what covers it), as if it had been delivered at once.  A client
# that does not read holds the delivery up for a second, during which the
# new stream begins.
{
	# More than the kernel's buffers for the client that does not read hold.
	my $n = 12000;
	my $still = SseReader::open_h1($port, '/ch/mid', rcvbuf => 4096);
	my $reader = SseReader::open_h1($port, '/ch/mid');
	my $cuts = log_count($cut);
	burst('mid', $n);
	SseReader::read_until([$reader], sub { $reader->{n} >= 1 }, 60);
	my $late = SseReader::open_h1($port, '/ch/mid');
	ok(defined $late->{head}, 'a stream began after the burst was read');
	# Mid-burst: the client that does not read still holds the delivery up
	# (it is cut a second after it went over the limit), so the reader,
	# drained of all it can get now, cannot have the whole burst yet.
	is(log_count($cut), $cuts, '... while the client that does not read held the burst up');
	SseReader::read_until([$reader], sub { 0 }, 0.3);
	cmp_ok($reader->{n}, '<', $n, '... and before the burst was delivered');
	# The reader keeps reading while the test waits: a reader left unread
	# for the server's one-second grace on a busy machine is cut too.
	ok(ChaosTest::wait_for(sub {
		SseReader::read_until([$reader], sub { 0 }, 0.1);
		log_count($cut) > $cuts;
	}), 'the client that held it up was cut');
	SseReader::read_until([$reader], sub { $reader->{n} >= $n }, 120);
	is($reader->{n}, $n, 'the stream that was there got the whole burst');
	$node->safe_psql('postgres', q{SELECT pg_notify('mid', '900000 after')});
	SseReader::read_until([$late], sub { $late->{n} >= 1 }, 30);
	is($late->{first} // 0, 900000, 'the new stream got nothing of the burst, then what came after');
	is($late->{n}, 1, 'only that');
	close $_->{sock} for $still, $reader, $late;
}

# ---- HTTP/2: a reader gets the burst whole; a stream that does not read is reset alone ----
{
	my $n = 5000;
	# A client that reads nothing: a window of 0 for every stream.
	my $s = WebgresTest::connect_to($port);
	print $s $H2Test::PREFACE . frame(4, 0, 0, pack('nN', 4, 0))
	  . frame(1, 0x5, 1, request_block('/ch/h2burst'));
	my @f = read_frames($s, sub { $_[0]{type} == 1 && $_[0]{stream} == 1 });
	ok(@f && $f[-1]{type} == 1, 'the HTTP/2 stream that will not read is open');

	my $out = "$PostgreSQL::Test::Utils::tmp_check/h2burst.out";
	my $curl = IPC::Run::start(
		[ 'curl', '-s', '-N', '--http2-prior-knowledge', '--max-time', '120', '-o', $out,
		  "http://127.0.0.1:$port/ch/h2burst" ]);
	my $cuts = log_count($cut);
	# The curl stream is open once the worker follows the channel twice.
	ok(ChaosTest::wait_for(sub { -s $out }), 'an HTTP/2 reader is listening');
	burst('h2burst', $n);
	my $events = sub { my @d = slurp_file($out) =~ /^data: (\d+) x/mg; \@d };
	ok(ChaosTest::wait_for(sub { @{ $events->() } >= $n }, 120), 'the HTTP/2 reader received the burst');
	is_deeply($events->(), [ 1 .. $n ], 'whole, in order, once');
	$curl->kill_kill;

	@f = read_frames($s, sub { $_[0]{type} == 3 && $_[0]{stream} == 1 }, 30);
	ok(@f && $f[-1]{type} == 3, 'the HTTP/2 stream that does not read is reset');
	is(@f ? unpack('N', $f[-1]{payload}) : undef, 8, 'with CANCEL');
	ok(!grep({ $_->{type} == 7 } @f), 'and its connection is not ended (no GOAWAY)');
	print $s frame(4, 0, 0, pack('nN', 4, 65535)) . frame(1, 0x5, 3, request_block('/hello'));
	my ($status, $body) = read_stream($s, 3);
	is("$status $body", '200 hello', 'another stream on that connection is answered');
	is(log_count($cut), $cuts + 1, 'one client was cut');
	close $s;
}

# ---- one read over webgres.events_read_limit ----
# Postgres hands the worker the whole queue in one read: what is over the
# limit is not kept, and a stream that followed the channel gets what was
# kept, in order, then a comment and the end of its response, so that its
# client reconnects.  Other channels' streams go on.
{
	ok(WebgresTest::reload_and_wait($node, "webgres.events_read_limit = '1MB'"),
		'the worker took webgres.events_read_limit = 1MB');
	my $over = SseReader::open_h1($port, '/ch/over');
	my $calm = SseReader::open_h1($port, '/ch/calm');
	burst('over', 3000);
	SseReader::read_until([$over], sub { $over->{ended} || $over->{eof} }, 60);
	ok($over->{ended}, 'the stream that lost notifications was ended (the last chunk)');
	is($over->{lost}, 1, '... after a comment saying so');
	ok($over->{first} == 1 && $over->{bad} == 0 && $over->{n} >= 500 && $over->{n} < 3000,
		"... having got the first $over->{n} events of 3000, in order, each once")
	  or diag("n=$over->{n} bad=$over->{bad} first=" . ($over->{first} // '-'));
	like(slurp_file($node->logfile), qr/webgres worker dropped \d+ notifications \(\d+ bytes\) over webgres.events_read_limit/,
		'the worker logged what it dropped');
	$node->safe_psql('postgres', q{SELECT pg_notify('calm', '7 calm')});
	SseReader::read_until([$calm], sub { $calm->{n} >= 1 }, 30);
	ok($calm->{n} == 1 && !$calm->{ended}, 'a stream on another channel goes on');
	my $again = SseReader::open_h1($port, '/ch/over');
	$node->safe_psql('postgres', q{SELECT pg_notify('over', '9000 again')});
	SseReader::read_until([$again], sub { $again->{n} >= 1 }, 30);
	is($again->{first} // 0, 9000, 'a stream opened again on that channel gets what comes next');
	close $_->{sock} for $over, $calm, $again;
}

is(WebgresTest::http_get($port, '/hello')->{status}, 200, 'the worker keeps serving');
$node->stop;
done_testing();
