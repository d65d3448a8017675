# Hostile connections: pipelined mixes of good and bad requests, many idle
# connections, clients that trickle their request.  Slow clients get 408
# once they started a request, idle ones are closed quietly, and everyone
# else is served meanwhile.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(time sleep);
use HostileTest;

my $h = HostileTest->new('connections', conf => "webgres.header_timeout = '1s'\n"
	  . "webgres.body_timeout = '1s'\nwebgres.request_timeout = '2s'\n");
my $port = $h->port;
my $H = "Host: h\r\n";

# Pipelined: good requests before a bad one are answered in order, the bad
# one is refused, and nothing after it is read.
my ($res, $closed) = $h->send_raw("GET /count?1 HTTP/1.1\r\n$H\r\nGET /p/%zz HTTP/1.1\r\n$H\r\nGET /count?3 HTTP/1.1\r\n$H\r\n", n => 3);
is_deeply([ map { $_->{status} } @$res ], [ 200, 400 ], 'pipelined good, bad, good: 200, 400 and nothing more');
ok($closed, 'closed after the bad one');
is($h->hit_list, 'GET /count', 'only the request before the bad one ran');
$h->reset_hits;

($res) = $h->send_raw(join('', map { "GET /hello HTTP/1.1\r\n$H\r\n" } 1 .. 50), n => 50);
is(scalar(grep { $_->{status} == 200 } @$res), 50, '50 pipelined requests on one connection');

my $post = "POST /count HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabc";
my $chunk = "POST /count HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
($res, $closed) = $h->send_raw("$post$chunk$post" . "GET /hello HTTP/1.1\r\n\r\n$post", n => 5);
is_deeply([ map { $_->{status} } @$res ], [ 200, 200, 200, 400 ], 'bodies pipelined, then a request without Host');
is($h->hits, 3, 'the three requests before it ran, the one after it did not');

# Many idle connections do not keep others from being served.
my @idle = map { IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port) } 1 .. 200;
is(scalar(grep { defined } @idle), 200, '200 idle connections open');
$h->still_serving('with 200 idle connections');
my $t0 = time;
ok(HostileTest::closes($idle[0], 10), 'an idle connection is closed');
my $took = time - $t0;
ok($took > 1.0 && $took < 5, "after about webgres.request_timeout ($took s)");
# Opened together, so by now the others are closed too, or about to be:
# each is read to its end, for at most 5 s in all.
my ($n, $sent) = (0, '');
my $sel = IO::Select->new;
my $deadline = time + 5;
for my $s (@idle)
{
	$sel->add($s);
	while (time < $deadline)
	{
		next unless $sel->can_read(0.2);
		my $got = sysread($s, my $buf, 100);
		$sent .= $buf if $got;
		if (defined $got && !$got) { $n++; last; }
		last unless defined $got;
	}
	$sel->remove($s);
}
is($n, 200, 'every idle connection is closed');
is($sent, '', 'idle connections get no response');
close $_ for @idle;

# A client trickling its head gets 408 after webgres.header_timeout,
# while other clients are served.
my $slow = WebgresTest::connect_to($port);
print $slow "GET /count HTTP/1.1\r\n";
$deadline = time + 0.8;
while (time < $deadline) { print $slow "X: y\r\n"; sleep 0.1; }
$h->still_serving('while a client trickles its head');
$t0 = time;
($res, $closed) = WebgresTest::read_responses($slow, 1, 10);
is($res->[0]{status}, 408, 'trickled head: 408');
ok($closed || HostileTest::closes($slow), 'and the connection closed');
close $slow;

# A body that stops arriving gets 408 after webgres.body_timeout.
$slow = WebgresTest::connect_to($port);
print $slow "POST /count HTTP/1.1\r\n${H}Content-Length: 100\r\n\r\nabc";
$t0 = time;
($res, $closed) = WebgresTest::read_responses($slow, 1, 10);
$took = time - $t0;
is($res->[0]{status}, 408, 'stalled body: 408');
ok($took > 0.8 && $took < 4, "after about webgres.body_timeout ($took s)");
close $slow;

$slow = WebgresTest::connect_to($port);
print $slow "POST /count HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nab";
($res) = WebgresTest::read_responses($slow, 1, 10);
is($res->[0]{status}, 408, 'stalled chunked body: 408');
close $slow;

# The timeouts follow a reload.
$h->node->append_conf('postgresql.conf', "webgres.header_timeout = '3s'\n");
$h->node->reload;
sleep 0.5;
$slow = WebgresTest::connect_to($port);
print $slow "GET /hello HTTP/1.1\r\n";
$t0 = time;
($res) = WebgresTest::read_responses($slow, 1, 10);
$took = time - $t0;
is($res->[0]{status}, 408, '408 after a reload');
ok($took > 2.5, "with the new webgres.header_timeout ($took s)");
close $slow;

is($h->hits, 3, 'no timed-out request ran');
$h->finish;
