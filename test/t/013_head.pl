# A response to HEAD carries the GET's status and headers, Content-Length
# included, and not one byte of content (RFC 9110 section 9.3.2), on every
# path a response can take: handlers, constant routes answered from memory,
# 404, 405, handler errors and screening refusals, over HTTP/1.1 and h2c.
# Checked on the wire: a GET pipelined behind the HEAD must start right
# where the HEAD's headers end.
use strict;
use warnings;
use IO::Select;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;

# h2c is off by default (docs/http2.md); the HTTP/2 cases below need it.
# webgres.inline_budget: /c stays on the loop, answered from memory, on a loaded machine too.
my $node = WebgresTest->new_node('head', workers => 1,
	conf => "webgres.http2 = on\nwebgres.inline_budget = '60s'\n");
my $port = $node->{webgres_port};

WebgresTest::add_route($node, 'GET', '/h', q{
	SELECT 'handler body ' || (SELECT count(*) FROM pg_class WHERE relname = 'pg_class') AS body,
	       jsonb_build_object('X-Path', 'handler') AS headers});
WebgresTest::add_route($node, 'GET', '/c', q{
	SELECT 'constant body' AS body, '{"X-Path": "constant"}'::jsonb AS headers});
WebgresTest::add_route($node, 'POST', '/p', q{SELECT 'posted' AS body});
WebgresTest::add_route($node, 'GET', '/e', q{SELECT (1 / 0)::text AS body});
WebgresTest::wait_for_status($port, '/h', 200);

# Reads everything until the server closes (or the deadline passes).
sub read_all
{
	my ($s) = @_;
	my $buf = '';
	my $sel = IO::Select->new($s);
	my $deadline = time + 20;
	while (time < $deadline)
	{
		next unless $sel->can_read(0.5);
		my $got = sysread($s, my $chunk, 65536);
		last unless $got;
		$buf .= $chunk;
	}
	return $buf;
}

# Sends the bytes on a new connection; returns all the server sent.
sub exchange
{
	my ($bytes) = @_;
	my $s = WebgresTest::connect_to($port);
	print $s $bytes;
	my $got = read_all($s);
	close $s;
	return $got;
}

# Header lines of a response head, without Date (which moves).
sub head_lines
{
	my ($head) = @_;
	return [ grep { !/^date:/i } split /\r\n/, $head ];
}

# HEAD then GET on one connection: the HEAD's head equals the GET's, its
# Content-Length is the GET body's length, and the GET's response follows
# at once.  With $closes, the HEAD is refused and its connection closed, so
# nothing follows.
sub check_pair
{
	my ($name, $target, $status, %o) = @_;
	my $alone = exchange("GET $target HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	my ($get_head, $get_body) = $alone =~ /\A(.*?)\r\n\r\n(.*)\z/s
	  or return fail("$name: GET answered");
	my ($get_len) = $get_head =~ /^Content-Length: (\d+)\r?$/mi;
	is(length($get_body), $get_len // -1, "$name: GET body as long as its Content-Length");
	cmp_ok(length($get_body), '>', 0, "$name: GET has a body to leave out");

	my $prefix = $o{prefix} // '';
	my $stream = exchange($prefix
		  . "HEAD $target HTTP/1.1\r\nHost: x\r\n\r\n"
		  . "GET $target HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
	if ($o{prefix})
	{
		# Drop the warm-up GET's response, body and all.
		$stream =~ s/\A(.*?)\r\n\r\n//s;
		my ($len) = $1 =~ /^Content-Length: (\d+)\r?$/mi;
		substr($stream, 0, $len) = '';
	}
	my ($head, $rest) = $stream =~ /\A(.*?)\r\n\r\n(.*)\z/s
	  or return fail("$name: HEAD answered");
	like($head, qr{\AHTTP/1\.1 $status }, "$name: HEAD status $status");
	my ($head_len) = $head =~ /^Content-Length: (\d+)\r?$/mi;
	is($head_len, length($get_body), "$name: HEAD Content-Length is the GET body's length");
	if ($o{closes})
	{
		is($rest, '', "$name: nothing after the refused HEAD's head");
		my $get_lines = head_lines($get_head);
		is_deeply(head_lines($head), $get_lines, "$name: HEAD head equals the GET's");
		return;
	}
	like($rest, qr{\AHTTP/1\.1 $status }, "$name: the GET's response starts right after the HEAD's head");
	my $get_lines = [ grep { !/^connection:/i } @{ head_lines($get_head) } ];
	is_deeply([ grep { !/^connection:/i } @{ head_lines($head) } ], $get_lines,
		"$name: HEAD head equals the GET's");
	my ($head2, $body2) = $rest =~ /\A(.*?)\r\n\r\n(.*)\z/s;
	is($body2, $get_body, "$name: the pipelined GET's body is whole and nothing follows");
}

check_pair('handler', '/h', 200);

my $from_memory = sub {
	$node->safe_psql('postgres', 'SELECT sum(from_memory) FROM webgres.workers');
};
WebgresTest::http_get($port, '/c') for 1 .. 3;    # the route is found constant on use
my $before = $from_memory->();
# A GET just before the HEAD makes the constant route's cached answer fresh.
check_pair('constant route', '/c', 200, prefix => "GET /c HTTP/1.1\r\nHost: x\r\n\r\n");
# The GETs alone are answered from memory: count HEADs.  Twenty pipelined
# behind a GET are taken within a few milliseconds, and a constant route
# goes the full way at most once per 100 ms, so if HEAD is answered from
# memory, more than the two GETs are counted.
$before = $from_memory->();
my $many = exchange("GET /c HTTP/1.1\r\nHost: x\r\n\r\n"
	  . ("HEAD /c HTTP/1.1\r\nHost: x\r\n\r\n" x 20)
	  . "GET /c HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
my @heads = $many =~ m{(HTTP/1\.1 200 )}g;
is(scalar(@heads), 22, 'constant route: a GET, twenty HEADs and a GET, pipelined, all answered');
like($many, qr/\r\n\r\nconstant body\z/, '... the last GET\'s body ending the stream');
cmp_ok($from_memory->() - $before, '>', 2, 'constant route: HEAD answered from memory');

check_pair('404', '/nowhere', 404);
check_pair('405', '/p', 405);
check_pair('handler error', '/e', 400);    # 22012 is a client's data error
check_pair('screening refusal', '/h/../c', 400, closes => 1);
check_pair('percent-escape refusal', '/h/%zz', 400, closes => 1);

# ---- h2c with prior knowledge, frames written by hand ----

sub frame
{
	my ($type, $flags, $stream, $payload) = @_;
	return pack('NCN', (length($payload) << 8) | $type, $flags, $stream) . $payload;
}

# A literal header field without indexing whose name is a static-table index.
sub literal
{
	my ($index, $value) = @_;
	return chr($index) . chr(length $value) . $value;
}

# Sends one request on stream 1; returns (stream ended, DATA payload bytes).
sub h2_request
{
	my ($method) = @_;
	my $block = literal(2, $method) . chr(0x86) . literal(4, '/h') . literal(1, 'x');
	my $s = WebgresTest::connect_to($port);
	print $s "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" . frame(4, 0, 0, '') . frame(1, 0x5, 1, $block);
	my $buf = '';
	my ($ended, $data) = (0, 0);
	my $sel = IO::Select->new($s);
	my $deadline = time + 20;
	while (!$ended && time < $deadline)
	{
		while (length($buf) >= 9)
		{
			my ($lt, $flags, $sid) = unpack('NCN', $buf);
			my ($len, $type) = ($lt >> 8, $lt & 0xff);
			last if length($buf) < 9 + $len;
			substr($buf, 0, 9 + $len) = '';
			print $s frame(4, 1, 0, '') if $type == 4 && !($flags & 1);
			next unless ($sid & 0x7fffffff) == 1;
			$data += $len if $type == 0;
			$ended = 1 if ($type == 0 || $type == 1) && ($flags & 1);
		}
		last if $ended;
		next unless $sel->can_read(0.5);
		my $got = sysread($s, my $chunk, 65536);
		last unless $got;
		$buf .= $chunk;
	}
	close $s;
	return ($ended, $data);
}

my ($ended, $data) = h2_request('GET');
ok($ended, 'h2c GET: stream ended');
cmp_ok($data, '>', 0, 'h2c GET: DATA carries the body');
($ended, $data) = h2_request('HEAD');
ok($ended, 'h2c HEAD: stream ended');
is($data, 0, 'h2c HEAD: no DATA frame carries content');

$node->stop;
done_testing();
