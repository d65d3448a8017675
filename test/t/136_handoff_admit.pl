# Admitting queued hand-offs when the executors cannot be reached: with
# several requests of a capped route waiting and the worker out of file
# descriptors, each connect to the executors fails and answers 503, which
# frees the route's place and admits the next waiter from inside the same
# admission pass.  Every waiting request must get exactly one answer, the
# worker must live on, and the route's shared queue count must come back to
# zero so that the route serves again once descriptors are back.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;

my $WAITERS = 4;

chomp(my $hard = `sh -c 'ulimit -Hn'`);
$hard = 1 << 20 if $hard eq 'unlimited';

my $node = WebgresTest->new_node('admit', workers => 1,
	conf => "webgres.executors = 2\n"
	  . "webgres.handler_timeout = '120s'\n"
	  . "webgres.max_queue = 10\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE gate (g int);
	INSERT INTO webgres.routes (method, path, handler, mode, max_concurrency)
	VALUES ('GET', '/gated', $h$SELECT 'gated ' || count(*) AS body FROM gate, request$h$, 'executor', 1);
});
WebgresTest::wait_for_status($port, '/gated', 200);
my ($pid) = WebgresTest::worker_pids($node);
ok($pid, "the worker runs (pid $pid)");

# Sends a GET on a new connection without waiting for the answer.
sub send_get
{
	my $s = WebgresTest::connect_to($port);
	print $s "GET /gated HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	return $s;
}

# Everything the server sent on a connection until it closed it.
sub all_of
{
	my ($s) = @_;
	my ($res, $closed, $rest) = WebgresTest::read_responses($s, 10, 30, 0, 1);
	close $s;
	return ($res, $closed, $rest);
}

my $queued_sql = "SELECT coalesce(sum(queued), 0) || ' ' || coalesce(sum(running), 0) "
  . "FROM webgres.route_execution() e JOIN webgres.routes r ON r.id = e.route_id "
  . "WHERE r.path = '/gated'";

# A soft open file limit below every socket the worker holds: a descriptor
# it frees (the running request's executor connection) has a number above
# the limit too, so no socket it opens from now on can be created.
my $LOW_LIMIT = 3;

# One request runs (held by a lock on gate), $WAITERS wait behind the cap.
my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
my $first = send_get();
ok(WebgresTest::poll_until(sub { $node->safe_psql('postgres', $queued_sql) eq '0 1' }, 30),
	'one request of the capped route runs');
my @waiting = map { send_get() } 1 .. $WAITERS;
ok(WebgresTest::poll_until(sub { $node->safe_psql('postgres', $queued_sql) eq "$WAITERS 1" }, 30),
	"$WAITERS requests wait behind it");

# The worker can open no more sockets; then the running one ends.
my $log_offset = -s $node->logfile;
system('prlimit', '--pid', $pid, "--nofile=$LOW_LIMIT:$hard") == 0
  or die "prlimit on the worker failed";
$gate->query_safe('COMMIT');
$gate->quit;

my ($res) = all_of($first);
is($res->[0]{status} // 0, 200, 'the running request is answered');
my @answers;
for my $s (@waiting)
{
	my ($r, $closed, $rest) = all_of($s);
	push @answers, { n => scalar(@$r), status => $r->[0]{status} // 0, closed => $closed, rest => $rest };
}
is(scalar(grep { $_->{n} == 1 && $_->{rest} eq '' && $_->{closed} } @answers), $WAITERS,
	'each waiting request got exactly one response, nothing after it')
  or diag(explain(\@answers));
is(join(' ', map { $_->{status} } @answers), join(' ', ('503') x $WAITERS),
	'each answered 503: the executors could not be reached');
my @logged = slurp_file($node->logfile, $log_offset) =~
  /could not hand a request to a webgres executor: Too many open files/g;
is(scalar(@logged), $WAITERS, "each failed connect is logged once ($WAITERS)");

system('prlimit', '--pid', $pid, "--nofile=$hard:$hard") == 0 or die "prlimit on the worker failed";
is(join(',', WebgresTest::worker_pids($node)), $pid, 'the same worker still serves');
ok(WebgresTest::poll_until(sub { $node->safe_psql('postgres', $queued_sql) eq '0 0' }, 30),
	'the route holds no queued or running place')
  or diag($node->safe_psql('postgres', $queued_sql));
for my $i (1 .. 3)
{
	my ($r) = all_of(send_get());
	is(($r->[0]{status} // 0) . ' ' . ($r->[0]{body} // ''), '200 gated 0', "the route serves again ($i)");
}

$node->stop;
done_testing();
