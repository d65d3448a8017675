# A worker killed with SIGKILL while it holds event streams and an inline
# request: Postgres reinitializes, service comes back (the time is
# reported), nothing acknowledged is lost, and event-stream clients that
# reconnect with Last-Event-ID get every event the route's catch-up query
# can return, in order, once, and the live ones after it.
use strict;
use warnings;
use Time::HiRes qw(time);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use ChaosTest;
use SseReader;

my $node = WebgresTest->new_node('chaos_worker', workers => 2,
	conf => "restart_after_crash = on\nwebgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE room_events (id bigserial PRIMARY KEY, data text NOT NULL);
	CREATE FUNCTION announce() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
	  PERFORM pg_notify('room', json_build_object('id', NEW.id, 'data', NEW.data)::text);
	  RETURN NULL;
	END $$;
	CREATE TRIGGER announce AFTER INSERT ON room_events FOR EACH ROW EXECUTE FUNCTION announce();
});
WebgresTest::add_route($node, 'GET', '/events', q{
	SELECT ARRAY['room'] AS channels, e.id, e.data
	FROM request LEFT JOIN room_events e
	  ON e.id > coalesce((request.headers->>'last-event-id')::bigint, 0)
	ORDER BY e.id});
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	  ('POST', '/post', $h$INSERT INTO room_events (data) SELECT 'posted' FROM request
	                     RETURNING 201 AS status, id::text AS body$h$, 'inline'),
	  ('GET', '/hold', $h$SELECT pg_sleep(60)::text AS body FROM request$h$, 'inline'),
	  ('GET', '/pid', $h$SELECT pg_backend_pid()::text AS body$h$, 'inline')});
WebgresTest::wait_for_status($port, '/pid', 200);

# Events are numbered by id; their data starts with it, so that the
# subscribers count them in order.
sub insert_events
{
	my ($n) = @_;
	$node->safe_psql('postgres', q{
		WITH s AS (SELECT nextval('room_events_id_seq') AS id FROM generate_series(1, } . $n . q{))
		INSERT INTO room_events SELECT id, id || ' event' FROM s ORDER BY id});
}

my @subs = map { SseReader::open_h1($port, '/events', keep_ids => 1) } 1 .. 8;
insert_events(50);
SseReader::read_until(\@subs, sub { !grep { $_->{n} < 50 } @subs }, 60);
ok(!grep({ $_->{n} != 50 || $_->{bad} } @subs), '8 subscribers got the first 50 events')
  or diag(join "\n", map { sprintf 'subscriber %d: %d event(s), %d bad, eof %d, ids %s, head %s', $_,
		$subs[$_]{n}, $subs[$_]{bad}, $subs[$_]{eof}, join(',', @{ $subs[$_]{ids} }[0 .. 2]),
		($subs[$_]{head} // '') =~ s/\r\n.*//sr } 0 .. $#subs);

# Inline requests that hold both workers' loops, and the worker that runs one.
my @holds = map { ChaosTest::send_request($port, 'GET', '/hold') } 1 .. 2;
ok(ChaosTest::wait_for(sub { $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'webgres worker' AND query LIKE 'GET /hold%'") >= 1 }),
	'a worker runs an inline request');
my ($victim) = split /\n/, $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker' AND query LIKE 'GET /hold%' LIMIT 1");

my $t0 = time;
kill 'KILL', $victim;

# Writes go on while the cluster comes back: those answered 201 must stay.
# The other worker may still answer one before Postgres takes it down too:
# service is back with the first write acknowledged after the reinitialization.
my @acked;
my $post = sub {
	my $r = eval { WebgresTest::request($port, 'POST', '/post', timeout => 2) };
	push @acked, $r->{body} if $r && $r->{status} == 201;
	return $r && $r->{status} == 201;
};
my $reinit = ChaosTest::wait_for(sub {
	$post->();
	return slurp_file($node->logfile) =~ /all server processes terminated; reinitializing/;
}, 120);
ok($reinit, 'Postgres reinitialized');
my $back = ChaosTest::wait_for($post, 120);
my $took = time - $t0;
ok($back, 'service came back after the worker was killed');
diag(sprintf('a worker killed with SIGKILL: the first write after the reinitialization was acknowledged %.3f s later', $took));
cmp_ok($took, '<', 60, 'within a minute');

for my $h (@holds)
{
	my ($bytes, $closed) = ChaosTest::read_to_end($h);
	ok($closed && ChaosTest::status_of($bytes) != 200, 'the inline request is not answered as a success');
	close $h;
}
SseReader::read_until(\@subs, sub { !grep { !$_->{eof} } @subs }, 30);
ok(!grep({ !$_->{eof} } @subs), 'every event stream was cut');
ok(!grep({ $_->{ended} } @subs), 'none with the end of its response');

# While they are away, more events; then they come back with Last-Event-ID
# (some from the middle: as if they had missed the last events).
insert_events(30);
my @again;
for my $i (0 .. $#subs)
{
	my @ids = @{ $subs[$i]{ids} };
	my $last = $i % 2 ? $ids[-1] : $ids[ 40 - 1 ];
	push @again, SseReader::open_h1($port, '/events', keep_ids => 1, headers => { 'Last-Event-ID' => $last });
	$again[-1]{from} = $last;
}
insert_events(20);
# (The ids have a gap: a sequence skips ahead after a crash.)
my @all = split /\n/, $node->safe_psql('postgres', 'SELECT id FROM room_events ORDER BY id');
my $max = $all[-1];
SseReader::read_until(\@again, sub { !grep { ($_->{next} // 0) <= $max } @again }, 60);
for my $c (@again)
{
	is_deeply($c->{ids}, [ grep { $_ > $c->{from} } @all ],
		"a stream resumed after $c->{from} got every event up to $max, in order, once");
}
my %in_table = map { $_ => 1 } split /\n/, $node->safe_psql('postgres', 'SELECT id FROM room_events');
is(scalar(grep { !$in_table{$_} } @acked), 0, 'every acknowledged write is there (' . scalar(@acked) . ')');

close $_->{sock} for @subs, @again;
$node->stop;
done_testing();
