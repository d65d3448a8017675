# Where an event stream runs when webgres.inline_budget is 0, which sends
# every other request of a route in mode auto to an executor: on the
# worker's loop, which listens, from the first request of a route the
# worker has never run (mode auto and mode executor alike), and also when
# a later route of its path runs on executors (which still serve that
# route's requests); an executor handed an event stream all the same (the
# stream declined on the loop, the later route sent the request there and
# the stream answered there) answers it with an error instead of dying.
# With the default budget, a lock that holds a stream's first run past it
# before the worker could tell it was a stream sends it to an executor as
# any slow route's: it waits there as any handler would, and is answered
# 503 with Retry-After once the lock is gone, or 504 at handler_timeout,
# never 500; the route then stays on the loop.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;
use SseReader;

my $node = WebgresTest->new_node('events_placement', workers => 1,
	conf => "webgres.executors = 1\nwebgres.inline_budget = 0\nwebgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};

# One statement, so one route table holds them all: the marker (inline)
# shows the worker has it without running, or preparing, any other route.
# /mixed's first route answers only on an executor: it declines on the
# loop, its second route (mode executor) sends the request there, and
# there it meets a stream.  /feed and /feed2 share their path between a
# stream and a route in mode executor: for any method, and for POST.
my %id = map { split /\|/ } split /\n/, $node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, priority, handler, mode) VALUES
	  ('GET', '/marker', 0, $$SELECT 'here' AS body$$, 'inline'),
	  ('GET', '/auto/:ch', 0, $$SELECT ARRAY[request.params->>'ch'] AS channels FROM request$$, 'auto'),
	  ('GET', '/exec/:ch', 0, $$SELECT ARRAY[request.params->>'ch'] AS channels FROM request$$, 'executor'),
	  ('GET', '/plain', 0, $$SELECT 'ran' AS body FROM request$$, 'auto'),
	  ('GET', '/mixed', 1, $$SELECT ARRAY['mixed'] AS channels FROM request
	                         WHERE EXISTS (SELECT FROM pg_stat_activity WHERE pid = pg_backend_pid()
	                                       AND application_name LIKE 'webgres executor%')$$, 'auto'),
	  ('GET', '/mixed', 0, $$SELECT 'not reached' AS body FROM request$$, 'executor'),
	  ('GET', '/feed', 1, $$SELECT ARRAY['feed'] AS channels FROM request$$, 'auto'),
	  (NULL, '/feed', 0, $$SELECT 'from ' || application_name AS body FROM pg_stat_activity
	                     WHERE pid = pg_backend_pid()$$, 'executor'),
	  ('GET', '/feed2', 1, $$SELECT ARRAY['feed2'] AS channels FROM request$$, 'auto'),
	  ('POST', '/feed2', 0, $$SELECT 'from ' || application_name AS body FROM pg_stat_activity
	                     WHERE pid = pg_backend_pid()$$, 'executor')
	RETURNING path || priority, id});
WebgresTest::wait_for_status($port, '/marker', 200);

# The first request of each stream route: its head comes once the worker
# LISTENs, and a NOTIFY reaches it.
my %stream;
for my $kind ('auto', 'exec')
{
	my $c = $stream{$kind} = SseReader::open_h1($port, "/$kind/ch_$kind");
	like($c->{head} // '', qr{^HTTP/1\.1 200 .*text/event-stream}s,
		"mode $kind: the first request of an event stream opens it (200) with a budget of 0");
	$node->safe_psql('postgres', "NOTIFY ch_$kind, '1 first'");
	SseReader::read_until([$c], sub { $c->{n} >= 1 }, 30);
	is($c->{n}, 1, "mode $kind: ... and a NOTIFY reaches it");
}

# An ordinary route in mode auto still goes to an executor; the streams
# never did (an executor's run gives a route its shared execution state).
is(WebgresTest::http_get($port, '/plain')->{body}, 'ran', 'an ordinary auto route answers');
my %placed = map { $_ => 1 } split /\n/,
  $node->safe_psql('postgres', 'SELECT route_id FROM webgres.route_execution()');
ok($placed{ $id{'/plain0'} }, '... from an executor');
ok(!$placed{ $id{'/auto/:ch0'} } && !$placed{ $id{'/exec/:ch0'} }, 'no stream was handed to an executor');

# A path whose event stream shares it with a route in mode executor: a GET
# (or HEAD) the stream comes first for is served on the loop as if the
# path had no other route, and every other request still goes to an
# executor.  Twice for each: the worker's first request describes the
# handlers in its transaction, the second is placed from what it knows.
for my $p ('/feed', '/feed2')
{
	for my $round (1, 2)
	{
		(my $ch = $p) =~ s{^/}{};
		my $c = SseReader::open_h1($port, $p);
		like($c->{head} // '', qr{^HTTP/1\.1 200 .*text/event-stream}s,
			"$p ($round): the event stream sharing its path with an executor route opens (200)");
		$node->safe_psql('postgres', "NOTIFY $ch, '$round shared'");
		SseReader::read_until([$c], sub { $c->{n} >= 1 }, 30);
		is($c->{n}, 1, "$p ($round): ... on the loop: a NOTIFY reaches it");
		close $c->{sock};
		my $post = WebgresTest::request($port, 'POST', $p);
		is($post->{status}, 200, "$p ($round): POST is answered by the executor route");
		like($post->{body}, qr/^from webgres executor/, "$p ($round): ... on an executor");
	}
}
%placed = map { $_ => 1 } split /\n/,
  $node->safe_psql('postgres', 'SELECT route_id FROM webgres.route_execution()');
ok(!$placed{ $id{'/feed1'} } && !$placed{ $id{'/feed21'} }, 'neither shared stream went to an executor');

# An executor that meets a stream answers 500 and says why; it goes on.
my $res = WebgresTest::http_get($port, '/mixed');
is($res->{status}, 500, 'an executor answers an event stream it was handed with 500');
like(slurp_file($node->logfile), qr/webgres route GET \/mixed .*answers with an event stream, which an executor cannot serve/,
	'... and logs why');
is(WebgresTest::http_get($port, '/plain')->{body}, 'ran', 'the executor serves the next request');

# The streams opened first are still served: nothing restarted.
$node->safe_psql('postgres', q{NOTIFY ch_auto, '2 after'});
SseReader::read_until([$stream{auto}], sub { $stream{auto}{n} >= 2 }, 30);
is($stream{auto}{n}, 2, 'the first stream still gets notifications');

# With the default budget (10 ms), a stream's first run while a table its
# handler reads is locked (an ALTER TABLE in progress): the worker waits
# only a few milliseconds to tell what the handler answers, so the run
# goes on under the budget, is cut there and goes to an executor as any
# slow route's.  The executor waits for the lock as any handler would;
# once it is gone it cannot hold the stream open, so it answers 503 with
# Retry-After (never 500: the lock is someone else's).  The route, marked
# slow, is then told to be a stream and served on the loop.
ok(WebgresTest::reload_and_wait($node, "webgres.inline_budget = 10\n"), 'the budget is back to 10 ms');
$node->safe_psql('postgres', q{
	CREATE TABLE gate (x int);
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	  ('GET', '/marker2', $$SELECT 'here' AS body$$, 'inline'),
	  ('GET', '/gated/:ch', $$SELECT ARRAY[request.params->>'ch'] AS channels FROM request, (SELECT count(*) FROM gate) AS g$$, 'auto')});
WebgresTest::wait_for_status($port, '/marker2', 200);
# The new table's first request to /feed, with the default budget: its
# stream is still served on the loop.
{
	my $c = SseReader::open_h1($port, '/feed');
	like($c->{head} // '', qr{^HTTP/1\.1 200 .*text/event-stream}s,
		'/feed with a budget of 10 ms: the shared stream opens (200)');
	close $c->{sock};
}
{
	my $locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
	my $first = SseReader::open_h1($port, '/gated/ch_gated', no_wait => 1);
	ok(WebgresTest::poll_until(sub {
		$node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND backend_type = 'webgres executor'
			  AND query LIKE 'GET /gated/%'}) ne '0' }),
		'a stream\'s first run held by a lock goes to an executor, as a slow route');
	$locker->query_safe('COMMIT');
	$locker->quit;
	SseReader::read_until([$first], sub { defined $first->{head} }, 30);
	like($first->{head} // '', qr{^HTTP/1\.1 503 }, '... which answers 503 once the lock is gone, not 500');
	like($first->{head} // '', qr{^Retry-After: 1\r?$}mi, '... with Retry-After');
	close $first->{sock};
	is($node->safe_psql('postgres', q{SELECT e.slow FROM webgres.route_execution() e
		JOIN webgres.routes r ON r.id = e.route_id WHERE r.path = '/gated/:ch'}), 't', '... and the route is marked slow');

	my $gated = SseReader::open_h1($port, '/gated/ch_gated');
	like($gated->{head} // '', qr{^HTTP/1\.1 200 .*text/event-stream}s,
		'the next request of the route, now marked slow, opens the stream on the loop (200)');
	$node->safe_psql('postgres', q{NOTIFY ch_gated, '1 gated'});
	SseReader::read_until([$gated], sub { $gated->{n} >= 1 }, 30);
	is($gated->{n}, 1, '... and gets a NOTIFY');
	close $gated->{sock};
}

# A lock held past webgres.handler_timeout: the first run of a stream the
# worker could not describe ends as any handler's would, 504, not 500.
ok(WebgresTest::reload_and_wait($node, "webgres.handler_timeout = 2000\n"), 'handler_timeout is 2 s');
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler, mode) VALUES
	  ('GET', '/marker3', $$SELECT 'here' AS body$$, 'inline'),
	  ('GET', '/held/:ch', $$SELECT ARRAY[request.params->>'ch'] AS channels FROM request, (SELECT count(*) FROM gate) AS g$$, 'auto')});
WebgresTest::wait_for_status($port, '/marker3', 200);
{
	my $locker = $node->background_psql('postgres');
	$locker->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
	my $held = SseReader::open_h1($port, '/held/ch_held', no_wait => 1);
	SseReader::read_until([$held], sub { defined $held->{head} }, 30);
	like($held->{head} // '', qr{^HTTP/1\.1 504 }, 'a stream\'s first run held by a lock past handler_timeout answers 504');
	close $held->{sock};
	$locker->query_safe('COMMIT');
	$locker->quit;
}

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the cluster is up');
unlike(slurp_file($node->logfile), qr/terminated by signal/, 'no process crashed');

close $_->{sock} for values %stream;
$node->stop;
done_testing();
