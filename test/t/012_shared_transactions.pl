# Requests a worker takes in one pass of its event loop share a read-only
# transaction when their handlers cannot write (webgres.share_read_transactions).
# Sharing shows in now(), the transaction's start: requests that shared one
# report the same instant.  Handlers that may write, or call anything
# volatile, keep a transaction of their own, and an error in one request
# ends the shared transaction without touching the others.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;

# Off by default (t/020_defaults.pl checks that): this file turns it on.
my $node = WebgresTest->new_node('shared', workers => 1,
	conf => "webgres.share_read_transactions = on\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE counts (n int);
	INSERT INTO counts VALUES (1), (2);
	CREATE TABLE log (at timestamptz);
	CREATE TABLE gate (g int);
	CREATE FUNCTION tag() RETURNS text STABLE LANGUAGE sql AS $$SELECT 'tag'$$;
	CREATE FUNCTION roll() RETURNS float8 VOLATILE LANGUAGE sql AS $$SELECT random()$$;
	CREATE FUNCTION write_log() RETURNS text VOLATILE LANGUAGE plpgsql
		AS $$BEGIN INSERT INTO log VALUES (now()); RETURN 'logged'; END$$;
	-- Mislabelled: stable, yet it writes through a volatile function.
	CREATE FUNCTION sneaky() RETURNS text STABLE LANGUAGE plpgsql
		AS $$BEGIN RETURN write_log(); END$$;
});

my %routes = (
	'/hold'   => q{SELECT pg_sleep(0)::text || count(*) AS body FROM gate},
	'/stamp'  => q{SELECT now()::text AS body},
	'/echo'   => q{SELECT now()::text || ' ' || (request.query->>'x') AS body FROM request},
	'/count'  => q{SELECT now()::text AS body FROM counts WHERE n = 1},
	'/tagged' => q{SELECT now()::text AS body WHERE tag() = 'tag'},
	'/random' => q{SELECT now()::text AS body
	               WHERE random() >= 0 AND gen_random_uuid() IS NOT NULL
	                 AND clock_timestamp() IS NOT NULL
	                 AND webgres.random_distinct_ints(1, 1, 5) IS NOT NULL},
	'/roll'   => q{SELECT now()::text AS body WHERE roll() >= 0},
	'/fail'   => q{SELECT now()::text AS body FROM request WHERE 1 / (request.query->>'d')::int = 1},
	'/write'  => q{INSERT INTO log VALUES (now()) RETURNING now()::text AS body},
	'/sneaky' => q{SELECT sneaky() AS body},
	# Nine or more constants: a hash table, built on the first evaluation.
	'/in'     => q{SELECT now()::text || ' ' || CASE WHEN request.query->>'w' IN
	               ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l')
	               THEN 'in' ELSE 'out' END AS body FROM request},
);
WebgresTest::add_route($node, 'GET', $_, $routes{$_}) for sort keys %routes;
# Every route runs on the loop (mode inline), where transactions are
# shared: a route in mode auto whose run took longer than
# webgres.inline_budget, as a first run that plans can on a loaded machine,
# would go to executors, each request in a transaction of its own.  /hold
# must keep the only worker busy.
$node->safe_psql('postgres', "UPDATE webgres.routes SET mode = 'inline'");
WebgresTest::wait_for_status($port, '/stamp', 200);

# Requests the only worker takes in one pass of its loop (WebgresTest::in_one_pass).
sub together { return WebgresTest::in_one_pass($node, $port, @_); }

sub distinct { my %seen = map { $_ => 1 } @_; return scalar keys %seen; }

# Every response is a 200 whose body starts with a timestamp (now()): a
# timeout or an error, however alike, is not taken for a shared transaction.
sub all_answered
{
	my ($desc, @r) = @_;
	my @bad = grep { $_->{status} != 200 || $_->{body} !~ /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/ } @r;
	ok(!@bad, "$desc: each answered 200 with its transaction's now()")
	  or diag(join "\n", map { "$_->{status} $_->{body}" } @bad);
}

# Every handler runs once alone first: a route is known not to write only
# after its plan has been made.
WebgresTest::http_get($port, $_) for qw(/stamp /echo?x=0 /count /tagged /random /roll /sneaky /fail?d=1 /in?w=a);

my @r = together('/stamp', '/count', '/tagged', '/stamp');
all_answered('requests taken together', @r);
is(distinct(map { $_->{body} } @r), 1,
	'read-only handlers, with or without a table or a stable function, share one transaction');

# An expression handler is compiled once for the shared transaction, yet
# reads each request's own values.
@r = together('/echo?x=1', '/echo?x=2', '/echo?x=3');
all_answered('expression handler', @r);
my @stamps = map { (split / /, $_->{body})[0] . ' ' . (split / /, $_->{body})[1] } @r;
is(distinct(@stamps), 1, 'requests to one expression handler share a transaction');
is(join(',', map { (split / /, $_->{body})[-1] } @r), '1,2,3', 'and each sees its own request');

# A hashed IN list's table, built by the first request, serves the others:
# it must outlive the first request's memory.
@r = together('/in?w=a', '/in?w=z', '/in?w=l', '/in?w=m');
all_answered('hashed IN list', @r);
is(distinct(map { (split / /, $_->{body})[1] } @r), 1, 'requests to it share a transaction');
is(join(',', map { (split / /, $_->{body})[-1] } @r), 'in,out,in,out',
	'and each is looked up in the table the first built');

@r = together('/random', '/random', '/random');
all_answered('numbers and clock', @r);
is(distinct(map { $_->{body} } @r), 1,
	'volatile functions that only draw numbers or read the clock do not stop sharing');

@r = together('/roll', '/roll', '/roll');
all_answered('other volatile function', @r);
is(distinct(map { $_->{body} } @r), 3, 'a handler that calls any other volatile function has its own');

my $logged = $node->safe_psql('postgres', 'SELECT count(*) FROM log');
@r = together('/stamp', '/write', '/stamp');
is(join(',', map { $_->{status} } @r), '200,200,200', 'a writing handler among readers is answered');
is($node->safe_psql('postgres', 'SELECT count(*) FROM log'), $logged + 1, 'and its row is kept');
isnt($r[1]{body}, $r[0]{body}, 'in a transaction of its own');

@r = together('/stamp', '/fail?d=0', '/stamp', '/fail?d=1');
is(join(',', map { $_->{status} } @r), '200,400,200,200',
	'an error in one request answers only that request');
is(WebgresTest::http_get($port, '/stamp')->{status}, 200, 'and the worker keeps serving');

# A function the handler calls turns volatile: the plan is made again and
# the handler no longer shares, from the first request after the change.
$node->safe_psql('postgres', 'ALTER FUNCTION tag() VOLATILE');
@r = together('/tagged', '/tagged', '/tagged');
all_answered('a handler whose function turned volatile', @r);
is(distinct(map { $_->{body} } @r), 3, 'each request in its own transaction');

# A replaced handler is looked at afresh before it shares.
$node->safe_psql('postgres', q{UPDATE webgres.routes SET handler =
	'SELECT now()::text AS body WHERE roll() >= 0' WHERE path = '/count'});
WebgresTest::wait_for_status($port, '/count', 200);
@r = together('/count', '/count', '/count');
all_answered('replaced handler', @r);
is(distinct(map { $_->{body} } @r), 3, 'a replaced handler that calls a volatile function does not share');

# A stable function that writes after all fails in the read-only shared
# transaction rather than have its write undone by another request's error.
# (Its first request after the route table was reloaded ran alone, and wrote.)
is(WebgresTest::http_get($port, '/sneaky')->{body}, 'logged', 'a mislabelled function writes when run alone');
$logged = $node->safe_psql('postgres', 'SELECT count(*) FROM log');
my $res = WebgresTest::http_get($port, '/sneaky');
is($res->{status}, 503, 'a write from a function declared stable is refused');
is($node->safe_psql('postgres', 'SELECT count(*) FROM log'), $logged, 'and nothing is written');

# Off: every request has its own transaction.
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.share_read_transactions = off;
	SELECT pg_reload_conf()});
# The worker reads the setting at its next pass after the reload signal:
# polled, with a generous deadline.
my $deadline = time() + 60;
while (1)
{
	@r = together('/stamp', '/stamp', '/stamp');
	last if distinct(map { $_->{body} } @r) == 3 || time() > $deadline;
	sleep 0.2;
}
all_answered('with sharing off', @r);
is(distinct(map { $_->{body} } @r), 3, 'each in its own transaction');
is(WebgresTest::http_get($port, '/sneaky')->{body}, 'logged', 'and the mislabelled function writes');

$node->stop;
done_testing();
