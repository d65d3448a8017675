# pg_ctl stop -m fast while streamed exports, event streams and slow
# handlers (inline and on executors) are in flight: every client sees its
# response end cleanly (an event stream with the end of its response, a
# slow handler answered or its connection closed, never a success for what
# did not run, an export whose end it could not reach cut without its last
# chunk), nothing acknowledged is lost, and no process is left.
use strict;
use warnings;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use ChaosTest;
use SseReader;

my $node = WebgresTest->new_node('chaos_stop', workers => 2,
	conf => "webgres.executors = 3\nwebgres.http2 = on\nwebgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', 'CREATE TABLE acks (id int PRIMARY KEY)');
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	  ('GET', '/events/:ch', $h$SELECT ARRAY[request.params->>'ch'] AS channels FROM request$h$, 'auto'),
	  ('POST', '/ack/:id', $h$INSERT INTO acks SELECT (request.params->>'id')::int FROM request
	                        RETURNING 201 AS status$h$, 'auto'),
	  ('GET', '/slow', $h$SELECT pg_sleep(60)::text AS body FROM request$h$, 'executor'),
	  ('GET', '/inline-slow', $h$SELECT pg_sleep(60)::text AS body FROM request$h$, 'inline'),
	  ('GET', '/export', $h$SELECT i, repeat('x', 100) AS pad, CASE WHEN i = 3000 THEN pg_sleep(60)::text END AS s
	                      FROM generate_series(1, 6000) i$h$, 'stream'),
	  ('GET', '/ping', $h$SELECT 'pong' AS body$h$, 'inline')});
WebgresTest::wait_for_status($port, '/ping', 200);

my @acked = grep { WebgresTest::request($port, 'POST', "/ack/$_")->{status} == 201 } 1 .. 30;
is(scalar(@acked), 30, 'writes acknowledged before the stop');

my @events = map { SseReader::open_h1($port, "/events/stop$_") } 1 .. 4;
$node->safe_psql('postgres', 'NOTIFY stop1, ' . "'1 before'");
SseReader::read_until([ $events[0] ], sub { $events[0]{n} >= 1 }, 30);
is($events[0]{n}, 1, 'the event streams are live');
my $h2events = ChaosTest::h2_open($port, '/events/stop1');
ok(ChaosTest::h2_until($h2events, sub { $_[0]{type} == 0 && $_[0]{stream} == 1 }),
	'an HTTP/2 event stream is live');
my $export = ChaosTest::send_request($port, 'GET', '/export');
my ($exp_bytes) = ChaosTest::read_some($export, sub { $_[0] =~ /\r\n\r\n.{1000}/s });
my $slow = ChaosTest::send_request($port, 'GET', '/slow');
# The inline handler holds its worker's loop: it goes last, so that it
# holds up nothing the test waits for.
ok(ChaosTest::wait_for(sub { $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE query ~ '^GET /(slow|export) '}) eq '2' }), 'a slow handler and an export run on executors');
my $inline = ChaosTest::send_request($port, 'GET', '/inline-slow');
ok(ChaosTest::wait_for(sub { $node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE query ~ '^GET /inline-slow '}) eq '1' }), 'a slow handler runs on a worker\'s loop')
  or diag($node->safe_psql('postgres', q{SELECT backend_type, state, query FROM pg_stat_activity WHERE backend_type ~ 'webgres'}));

my @pids = split /\n/, $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type IN ('webgres worker', 'webgres executor')");
is(scalar(@pids), 5, 'two workers and three executors are running');
my ($supervisor) = slurp_file($node->logfile) =~ /\[(\d+)\] LOG:  webgres supervisor started/;
push @pids, $supervisor, $node->{_pid};

my $t0 = time;
$node->stop('fast');
my $took = time - $t0;
note(sprintf('pg_ctl stop -m fast took %.3f s', $took));

SseReader::read_until(\@events, sub { !grep { !$_->{eof} } @events }, 30);
ok(!grep({ !$_->{ended} } @events), 'every HTTP/1.1 event stream got the end of its response');
ok(!grep({ !$_->{eof} } @events), '... and its connection closed');
ok(ChaosTest::h2_until($h2events, sub { $_[0]{stream} == 1 && $_[0]{type} == 0 && ($_[0]{flags} & 1) }),
	'the HTTP/2 event stream ended with END_STREAM');
my ($rest, $closed) = ChaosTest::read_to_end($export);
$exp_bytes .= $rest;
ok($closed && !ChaosTest::has_last_chunk($exp_bytes), 'the export it could not finish is cut without its last chunk');
# The worker cancels the handler it runs and answers; an executor's request
# is answered if its worker is still there when the executor goes.
my ($bytes, $end) = ChaosTest::read_to_end($inline);
is(ChaosTest::status_of($bytes), 503, 'the slow inline handler is cancelled and answered 503');
($bytes, $end) = ChaosTest::read_to_end($slow);
my $status = ChaosTest::status_of($bytes);
ok($end && ($status == 0 || $status == 503), "the slow handler on an executor ends with 503 or a closed connection ($status)");

# pg_ctl returns once the postmaster removed its pid file, a moment before it exits.
ChaosTest::wait_for(sub { !grep { kill 0, $_ } @pids });
my @left = grep { kill 0, $_ } @pids;
is("@left", '', 'no process is left: workers, executors, supervisor, postmaster');

$node->start;
is($node->safe_psql('postgres', 'SELECT count(*) FROM acks'), scalar(@acked), 'every acknowledged write is there');
is(WebgresTest::wait_for_status($port, '/ping', 200)->{status}, 200, 'serving after the restart');
$node->stop;
done_testing();
