# An event stream's second phase starts its response only once its
# transaction has committed (events.c), so that a COMMIT that fails is
# answered with its error and no event of a rolled-back transaction goes
# out.  The usual way to make a COMMIT fail, a deferred constraint, cannot
# reach it: Postgres refuses to queue a deferred trigger inside the
# security-restricted operation a handler runs in, at the statement.  This
# file checks that refusal (one clean error response, no stream, the
# worker serving on) and that a stream whose phases commit opens with its
# catch-up events.
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('events_commit', workers => 1,
	conf => "webgres.sse_heartbeat = 300\n");
my $port = $node->{webgres_port};

# Each run of the handler notes itself under the same key through a
# function (the route check sees only the handler's own SQL); the key is
# unique, checked at COMMIT: phase 1's insert commits, phase 2's would
# have to queue the check.
$node->safe_psql('postgres', q{
	CREATE TABLE runs (k int UNIQUE DEFERRABLE INITIALLY DEFERRED);
	CREATE TABLE items (id int, data text);
	INSERT INTO items VALUES (1, 'first');
	CREATE FUNCTION note_run() RETURNS int LANGUAGE sql VOLATILE
	  AS 'INSERT INTO runs VALUES (1) RETURNING k';
});
WebgresTest::add_route($node, 'GET', '/feed', q{
	SELECT ARRAY['feed'] AS channels, i.id, i.data FROM items i, request WHERE note_run() = 1});
WebgresTest::add_route($node, 'GET', '/plain', q{
	SELECT ARRAY['feed'] AS channels, i.id, i.data FROM items i, request});
WebgresTest::add_route($node, 'GET', '/fast', q{SELECT 'fast' AS body});
WebgresTest::wait_for_status($port, '/fast', 200);
my ($pid) = WebgresTest::worker_pids($node);

my $log_offset = -s $node->logfile;
my $s = WebgresTest::connect_to($port);
print $s "GET /feed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
my ($res, $closed, $rest) = WebgresTest::read_responses($s, 2, 30, 0, 1);
close $s;
ok($closed, 'the connection ends');
is(scalar(@$res), 1, 'with one response');
is($res->[0]{status} // 0, 403, 'the refused deferred trigger is answered 403');
unlike($res->[0]{wire} // '', qr/text\/event-stream|data: first/, 'no stream began, no event went out');
is($rest, '', 'nothing after it');
like(slurp_file($node->logfile, $log_offset), qr/cannot fire deferred trigger within security-restricted operation/,
	'the error is logged');
# Phase 1's insert met no other key and queued no check; phase 2's did.
is($node->safe_psql('postgres', 'SELECT count(*) FROM runs'), '1', 'phase 1 committed, phase 2 rolled back');
is(join(',', WebgresTest::worker_pids($node)), $pid, 'the same worker runs');
is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'and serves');

# A stream whose phases commit starts after the second one has.
$s = WebgresTest::connect_to($port);
print $s "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n";
my $got = '';
ok(WebgresTest::poll_until(sub {
	my $buf = '';
	$got .= $buf if IO::Select->new($s)->can_read(0.2) && sysread($s, $buf, 65536);
	$got =~ /data: first\n\n/ }, 30), 'a stream that commits opens with its catch-up event');
like($got, qr{^HTTP/1\.1 200 .*text/event-stream}s, 'as an event stream');
close $s;
is(WebgresTest::http_get($port, '/fast')->{status}, 200, 'the worker serves on');

$node->stop;
done_testing();
