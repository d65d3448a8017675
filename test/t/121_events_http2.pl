# An event stream over HTTP/2 (h2c) whose client stops reading: only its
# stream is reset (RST_STREAM, CANCEL) once more than
# webgres.sse_buffer_limit bytes wait for it; the connection and its other
# streams go on.  The client reads nothing by granting a window of 0
# (SETTINGS_INITIAL_WINDOW_SIZE), so the server may send no DATA at all.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use H2Test qw(frame request_block read_stream read_frames);

my $node = WebgresTest->new_node('events_h2', workers => 1,
	conf => "webgres.http2 = on\nwebgres.sse_buffer_limit = 4096\n");
my $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/ch/:ch',
	q{SELECT ARRAY[request.params->>'ch'] AS channels FROM request});
WebgresTest::add_route($node, 'GET', '/hello', q{SELECT 'hello' AS body});
WebgresTest::wait_for_status($port, '/hello', 200);

# SETTINGS_INITIAL_WINDOW_SIZE (4): 0, then the event stream on stream 1.
my $s = WebgresTest::connect_to($port);
print $s $H2Test::PREFACE . frame(4, 0, 0, pack('nN', 4, 0))
  . frame(1, 0x5, 1, request_block('/ch/slowpoke'));
my @f = read_frames($s, sub { $_[0]{type} == 1 && $_[0]{stream} == 1 });
ok(@f && $f[-1]{type} == 1, 'the event stream answers with its headers');

# Three events of 2 kB: more than the 4 kB limit wait for a client that
# grants no window.
$node->safe_psql('postgres',
	q{SELECT pg_notify('slowpoke', repeat('x', 2000) || g) FROM generate_series(1, 3) g});
@f = read_frames($s, sub { $_[0]{type} == 3 && $_[0]{stream} == 1 });
ok(@f && $f[-1]{type} == 3, 'the stream of the client that does not read is reset');
is(@f ? unpack('N', $f[-1]{payload}) : undef, 8, 'with CANCEL');
ok(!grep({ $_->{type} == 7 } @f), 'and the connection is not ended (no GOAWAY)');

# The same connection serves another stream, once the client grants a window.
print $s frame(4, 0, 0, pack('nN', 4, 65535)) . frame(1, 0x5, 3, request_block('/hello'));
my ($status, $body) = read_stream($s, 3);
is("$status $body", '200 hello', 'another stream on the same connection is answered');
close $s;

like(slurp_file($node->logfile), qr/disconnects an event-stream client that is not reading/,
	'the reset is logged');
is(WebgresTest::http_get($port, '/hello')->{status}, 200, 'the worker keeps serving');
$node->stop;
done_testing();
