# Hostile WebSocket clients, on raw sockets: one that asks for a flood of
# replies and reads none of them (cut with a reset, the worker's memory
# bounded, another socket served meanwhile), one that reads none of a
# burst of notifications (cut, while the sockets that read get all of it in
# order), a close flood (hundreds of
# sockets opened and closed at once: every close handler runs once), and
# garbage after a close.  After each, the worker still serves HTTP.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;
use WsClient;

my $node = WebgresTest->new_node('hostile_websocket', workers => 1, conf => <<"EOC");
webgres.executors = 2
webgres.sse_buffer_limit = 65536
EOC
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE closes (conn bigint, code int);
	INSERT INTO webgres.routes (method, path, handler, upgrade, on_message, on_close) VALUES
	  ('GET', '/flood', 'SELECT NULL::text AS body', 'websocket',
	   $$SELECT repeat('x', 100000) FROM generate_series(1, $2::int)$$, NULL),
	  ('GET', '/echo', 'SELECT NULL::text AS body', 'websocket', $$SELECT $2$$,
	   $$INSERT INTO closes VALUES ($1, $2)$$),
	  ('GET', '/burst', $$SELECT ARRAY['burst'] AS channels, NULL::text AS body$$, 'websocket', NULL, NULL);
});
WebgresTest::add_route($node, 'GET', '/ping', q{SELECT 'pong' AS body});
WebgresTest::wait_for_status($port, '/ping', 200);

# Whether the client's connection from local port $cport is established
# (/proc/net/tcp: state 01), read without reading the socket itself.
sub established
{
	my ($cport) = @_;
	my ($local, $remote) = (sprintf(':%04X', $cport), sprintf(':%04X', $port));
	open my $fh, '<', '/proc/net/tcp' or die;
	<$fh>;
	while (my $line = <$fh>)
	{
		my @f = split ' ', $line;
		return 1 if $f[1] =~ /\Q$local\E$/ && $f[2] =~ /\Q$remote\E$/ && $f[3] eq '01';
	}
	return 0;
}

# The worker still answers HTTP.
sub serves
{
	my ($what) = @_;
	my $r = WebgresTest::http_get($port, '/ping');
	is($r->{body}, 'pong', "the worker serves after $what");
}

# ---- a client that asks for 20 MB and reads nothing ----
my $slow = WsClient->open($port, '/flood');
is($slow->{status}, 101, 'a socket that will not read');
$slow->send_text('200');
my $reader = WsClient->open($port, '/echo');
$reader->send_text('meanwhile');
is(($reader->next_message // {})->{payload}, 'meanwhile', 'another socket is answered while it holds its replies back');
# Let the server fill its buffer and find the client does not read.
my ($pid) = WebgresTest::worker_pids($node);
my $t0 = time;
my $cut = WebgresTest::poll_until(sub { !established($slow->{sock}->sockport) }, 15);
ok($cut, 'the socket of the client that does not read is closed');
cmp_ok(time - $t0, '<', 10, 'within seconds');
$slow->fill(sub { 0 }, 10);
ok($slow->{eof}, 'its connection ends');
cmp_ok(length $slow->{buf}, '<', 20_000_000, 'before all 20 MB went out');
my $rss = `ps -o rss= -p $pid`;
cmp_ok($rss, '<', 200_000, "the worker's memory stays bounded (${rss}kB)");
serves('a client that reads nothing');

# ---- a burst of notifications: readers get it whole, a non-reader is cut ----
my @readers = map { WsClient->open($port, '/burst') } 1 .. 5;
my $idle = WsClient->open($port, '/burst');
is(scalar(grep { $_->{status} == 101 } @readers, $idle), 6, 'six sockets listen on a channel');
# 2,000 notifications of 4 kB in one commit: 8 MB, far over the buffer limit.
$node->safe_psql('postgres', q{
	SELECT pg_notify('burst', lpad(i::text, 4000, '.')) FROM generate_series(1, 2000) AS i});
# The readers are read together, as clients that keep up would be.
my @got = map { [] } @readers;
my $until = time + 30;
while (time < $until && grep { @{ $got[$_] } < 2000 && !$readers[$_]{eof} } 0 .. $#readers)
{
	for my $i (0 .. $#readers)
	{
		$readers[$i]->pump(0.001);
		while (my $f = $readers[$i]->take_frame) { push @{ $got[$i] }, $f->{payload} =~ /(\d+)$/ ? $1 : -1 }
	}
}
my @whole = map { join(',', @$_) eq join(',', 1 .. 2000) ? 1 : 0 } @got;
is_deeply(\@whole, [1, 1, 1, 1, 1], 'every reading socket gets the burst whole, in order, once')
  or diag('messages each reader got: ' . join(' ', map { scalar @$_ } @got)
	. '; ended: ' . join(' ', map { $_->{eof} ? 1 : 0 } @readers)
	. '; idle established: ' . established($idle->{sock}->sockport));
ok(WebgresTest::poll_until(sub { !established($idle->{sock}->sockport) }, 15),
	'the socket that reads none of it is cut');
serves('a burst with a client that does not read');

# ---- a close flood ----
my @socks = map { WsClient->open($port, '/echo') } 1 .. 200;
is(scalar(grep { $_->{status} == 101 } @socks), 200, '200 sockets open');
$_->send_close(1000 + 0, 'bye') for @socks;
$_->send_raw(WsClient::frame(opcode => 1, payload => 'after the close')) for @socks;
$_->send_close(1000) for @socks;
is(scalar(grep { ($_->wait_close(10) // 0) == 1000 } @socks), 200, 'each gets its close echoed once');
ok(WebgresTest::poll_until(sub {
	$node->safe_psql('postgres', q{SELECT count(*) || ' ' || count(DISTINCT conn) || ' ' || min(code) FROM closes})
	  eq '200 200 1000' }), 'every close handler ran once, with the code');
serves('a close flood');

done_testing();
