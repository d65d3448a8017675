# Rate limits (docs/rate-limits.md): token buckets in shared memory, keyed
# by the client's address, by a claim of its token or by route; checked
# before a request may wait for an executor; shared by the workers.
# Clients come from many addresses of the loopback range 127.0.0.0/8, each
# socket bound to its own before it connects.
use strict;
use warnings;
use FindBin;
use IO::Socket::INET;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);
use JSON::PP qw(encode_json);
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use WebgresTest;

my $python = $ENV{WEBGRES_PYTHON} // 'python3';
my $mint = "$FindBin::RealBin/jwt_mint.py";
my $secret = 'the-test-secret-of-at-least-32-bytes!';
my $keydir = PostgreSQL::Test::Utils::tempdir();
system($python, $mint, 'keys', $keydir) == 0 or die "could not make keys";

my $node = WebgresTest->new_node('rate_limits', workers => 2, init => { allows_streaming => 1 },
	conf => <<"EOC");
webgres.jwt_secret = '$secret'
webgres.executors = 1
webgres.metrics_path = '/metrics'
EOC
our $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE alice;
	GRANT alice TO authenticator;
});

# Adds a route with a rate limit; returns its id.
sub route
{
	my ($path, $handler, %o) = @_;
	my $rate = $o{rate} // 'NULL';
	my $burst = $o{burst} // 0;
	my $key = $o{key} // 'address';
	my $auth = $o{auth} // 'none';
	my $mode = $o{mode} // 'auto';
	my $owner = $o{auth} ? "'authenticator'" : 'current_user::regrole';
	return $node->safe_psql('postgres', qq{
		INSERT INTO webgres.routes (method, path, handler, owner, auth, mode,
			rate_limit, rate_burst, rate_key)
		VALUES ('GET', '$path', \$h\$$handler\$h\$, $owner, '$auth', '$mode',
			$rate, $burst, '$key') RETURNING id});
}

# One GET from the client address $from (127.0.0.x) on a new connection.
sub get_from
{
	my ($from, $path, %o) = @_;
	my $s = IO::Socket::INET->new(LocalAddr => $from, PeerAddr => '127.0.0.1',
		PeerPort => $port, Proto => 'tcp', Timeout => 5)
	  or die "connect from $from: $!";
	$s->autoflush(1);
	binmode $s;
	my $h = "GET $path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n";
	$h .= "Authorization: Bearer $o{token}\r\n" if $o{token};
	print $s "$h\r\n";
	my ($res) = WebgresTest::read_responses($s, 1, $o{timeout} // 10, 0, 1);
	close $s;
	return $res->[0] // { status => 0, headers => {}, body => '' };
}

# Statuses of $n requests from $from, one connection each.
sub statuses
{
	my ($from, $path, $n, %o) = @_;
	return join ' ', map { get_from($from, $path, %o)->{status} } 1 .. $n;
}

my %id;
# One request per 1000 s, two more at once: three, then 429.
$id{addr} = route('/addr', q{SELECT 'served' AS body}, rate => 0.001, burst => 2);
$id{plain} = route('/plain', q{SELECT 'plain' AS body});
# Inline: its pid must be a worker's (in mode auto a run past the budget under load moves it to the executor).
$id{spread} = route('/spread', q{SELECT pg_backend_pid()::text AS body}, rate => 0.001, burst => 9,
	mode => 'inline');
$id{burst} = route('/burst', q{SELECT 'b' AS body}, rate => 1, burst => 4);
$id{claim} = route('/claim', q{SELECT 'c' AS body FROM request}, rate => 0.001, burst => 1,
	key => 'claim:sub', auth => 'required');
$id{busy} = route('/busy', q{SELECT pg_sleep(3)::text || 'slept' AS body FROM request},
	rate => 0.001, burst => 0, key => 'route', mode => 'executor');
WebgresTest::wait_for_status($port, '/plain', 200) or die;

# ---- each address its own budget ----
my @addrs = map { "127.0.0.$_" } 2 .. 21;
my %seen;
$seen{$_} = statuses($_, '/addr', 4) for @addrs;
is_deeply([ grep { $seen{$_} ne '200 200 200 429' } @addrs ], [],
	'each of 20 client addresses gets its own budget: burst 2 serves 3, the 4th is 429')
  or diag explain \%seen;

# ---- 429 and its headers, as they go over the wire ----
my $over = get_from('127.0.0.2', '/addr');
is($over->{status}, 429, 'over the limit: 429');
like($over->{status_line}, qr{^HTTP/1\.1 429 }, 'the status line says 429');
like($over->{headers}{'retry-after'} // '', qr/^[1-9][0-9]*$/, 'Retry-After: whole seconds');
ok(($over->{headers}{'retry-after'} // 0) > 900, 'Retry-After: when the bucket lets one more through')
  or diag $over->{headers}{'retry-after'};
like($over->{headers}{'ratelimit-policy'} // '', qr/^"route";q=3;w=\d+$/,
	'RateLimit-Policy: the route\'s quota of burst + 1');
like($over->{headers}{'ratelimit'} // '', qr/^"route";r=0;t=[1-9][0-9]*$/,
	'RateLimit: none remaining, and when one is');
is(get_from('127.0.0.2', '/plain')->{status}, 200, 'a route without a limit still serves that address');

# ---- one budget across the workers ----
my (%served_by, $served, $refused) = ((), 0, 0);
for (1 .. 40)
{
	my $r = get_from('127.0.0.60', '/spread');
	if ($r->{status} == 200) { $served++; $served_by{ $r->{body} }++; }
	elsif ($r->{status} == 429) { $refused++; }
}
is($served, 10, 'a client whose connections go to two workers gets one budget (burst 9: 10 served)');
is($refused, 30, 'the other 30 are 429');
cmp_ok(scalar(keys %served_by), '>=', 2, 'the served requests came from both workers')
  or diag explain \%served_by;

# ---- burst, nodelay, and the rate refilling ----
my $t0 = time;
my @b = map { get_from('127.0.0.70', '/burst') } 1 .. 5;
my $took = time - $t0;
is(join(' ', map { $_->{status} } @b), '200 200 200 200 200', 'rate 1/s burst 4: five at once are served');
cmp_ok($took, '<', 3.5, 'the burst is served without delay (nodelay), not spaced at the rate');
my $sixth = get_from('127.0.0.70', '/burst');
is($sixth->{status}, 429, 'the sixth at once is 429');
is($sixth->{headers}{'retry-after'}, '1', 'Retry-After: 1 second at 1 request a second');
like($sixth->{headers}{'ratelimit-policy'}, qr/^"route";q=5;w=5$/, 'its policy: 5 in 5 seconds');
my $again = WebgresTest::poll_until(sub { get_from('127.0.0.70', '/burst')->{status} == 200 }, 10);
ok($again, 'the bucket refills at the rate: one more is served a second later');
cmp_ok(time - $t0, '>=', 0.9, '... and not before');

# ---- limits keyed by a claim of the token ----
my $exp = int(time) + 3600;
my ($tok_a, $tok_b) = split /\n/, do {
	my $in = "$keydir/specs.json";
	open my $fh, '>', $in or die;
	print $fh encode_json([ map { { alg => 'HS256', claims => { role => 'alice', sub => $_, exp => $exp } } }
		  qw(user-a user-b) ]);
	close $fh;
	`$python $mint tokens $keydir < $in`;
};
is(statuses('127.0.0.80', '/claim', 3, token => $tok_a), '200 200 429',
	'keyed by claim sub: user-a gets 2 (burst 1), then 429');
is(statuses('127.0.0.80', '/claim', 2, token => $tok_b), '200 200',
	'user-b from the same address has a budget of its own');
is(statuses('127.0.0.81', '/claim', 1, token => $tok_a), '429',
	'user-a from another address is still over its limit');
is(get_from('127.0.0.82', '/claim')->{status}, 401,
	'without a token, authentication refuses first');
$id{role} = route('/role', q{SELECT 'r' AS body FROM request}, rate => 0.001, burst => 0,
	key => 'role', auth => 'required');
is(statuses('127.0.0.83', '/role', 1, token => $tok_a) . ' ' . statuses('127.0.0.84', '/role', 1, token => $tok_b),
	'200 429', 'keyed by role: two users of role alice, from two addresses, share its budget');
my ($rc, $out, $err) = $node->psql('postgres',
	"UPDATE webgres.routes SET rate_key = 'claim:..bad' WHERE id = $id{claim}");
like($err, qr/invalid claim path in rate_key/, 'a malformed claim path is refused when saved');

# ---- a limited request never waits for an executor ----
my $first = IO::Socket::INET->new(LocalAddr => '127.0.0.90', PeerAddr => '127.0.0.1',
	PeerPort => $port, Proto => 'tcp', Timeout => 5) or die;
$first->autoflush(1);
print $first "GET /busy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
ok(WebgresTest::poll_until(sub {
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%/busy (route%' AND state = 'active'") > 0 }, 10),
	'the first request holds the only executor');
$t0 = time;
my $limited = get_from('127.0.0.91', '/busy', timeout => 10);
my $waited = time - $t0;
is($limited->{status}, 429, 'with the executor busy, a request over the limit is 429, not queued or 503');
cmp_ok($waited, '<', 2, 'answered at once, from the loop');
my ($done) = WebgresTest::read_responses($first, 1, 15, 0, 1);
is($done->[0]{status}, 200, 'the request that was within the limit is served');
close $first;

# ---- counted per route ----
my $row = $node->safe_psql('postgres',
	"SELECT rate_limited || ' ' || queue_full || ' ' || responses_4xx FROM webgres.route_stats WHERE route_id = $id{busy}");
is($row, '1 0 1', 'webgres.route_stats: rate_limited counts the 429; it never took a queue place');
is($node->safe_psql('postgres', "SELECT rate_limited FROM webgres.route_stats WHERE route_id = $id{addr}"),
	'21', 'and 21 for /addr (one per address, one more)');
my $metrics = WebgresTest::http_get($port, '/metrics')->{body};
like($metrics, qr/^webgres_route_rate_limited_total\{[^}]*route_id="$id{busy}"[^}]*\} 1$/m,
	'Prometheus: webgres_route_rate_limited_total');

# ---- a limited route behind one that declines (zero rows: the next route) ----
# Each path has a first route whose handler returns no rows and a second,
# limited one (burst 1: two served, then 429), on the loop and on executors.
route('/behind', q{SELECT 'first' AS body WHERE false});
route('/behind', q{SELECT 'second' AS body}, rate => 0.001, burst => 1);
is(statuses('127.0.0.110', '/behind', 3), '200 200 429',
	'on the loop: the limited route behind a declining one is 429 after its budget');
route('/behind_exec', q{SELECT 'first' AS body WHERE false});
route('/behind_exec', q{SELECT 'second' AS body}, rate => 0.001, burst => 1, mode => 'executor');
is(statuses('127.0.0.111', '/behind_exec', 3), '200 200 429',
	'handed to an executor by the second route: 429 after its budget');
route('/behind_both', q{SELECT 'first' AS body WHERE false}, mode => 'executor');
route('/behind_both', q{SELECT 'second' AS body}, rate => 0.001, burst => 1, mode => 'executor');
is(statuses('127.0.0.112', '/behind_both', 3), '200 200 429',
	'the executor walks on to the limited route itself: 429 after its budget');
route('/behind_role', q{SELECT 'first' AS body WHERE false}, mode => 'executor');
route('/behind_role', q{SELECT 'second' AS body FROM request}, rate => 0.001, burst => 1,
	key => 'role', auth => 'required', mode => 'executor');
is(statuses('127.0.0.113', '/behind_role', 3, token => $tok_a), '200 200 429',
	'a limit by role, on an executor behind a declining route: 429 after its budget');
my $bh = get_from('127.0.0.111', '/behind_exec');
like($bh->{headers}{'ratelimit-policy'} // '', qr/^"route";q=2;w=\d+$/,
	'the executor\'s 429 carries the route\'s policy');

# ---- a request that runs again after a plan changed is counted once ----
# With shared read transactions, a request whose route's plan was
# invalidated (ALTER TABLE) since the worker looked runs its routes again
# in a transaction of its own; both limited routes it passes count it once.
# One keep-alive connection keeps the requests on the worker that planned.
ok(WebgresTest::reload_all_workers($node, "webgres.share_read_transactions = on\n"),
	'reloaded with shared read transactions');
$node->safe_psql('postgres', q{CREATE TABLE rl_plan (x text); INSERT INTO rl_plan VALUES ('planned')});
route('/rerun', q{SELECT 'first' AS body WHERE false}, rate => 0.001, burst => 2);
route('/rerun', q{SELECT x AS body FROM rl_plan}, rate => 0.001, burst => 2);
{
	my $s = IO::Socket::INET->new(LocalAddr => '127.0.0.114', PeerAddr => '127.0.0.1',
		PeerPort => $port, Proto => 'tcp', Timeout => 5) or die;
	$s->autoflush(1);
	binmode $s;
	my $ask = sub {
		print $s "GET /rerun HTTP/1.1\r\nHost: x\r\n\r\n";
		# One response, not the close: the connection is kept for the next
		# request (waiting for a close that never comes let the idle
		# timeout end it between requests on a slow machine).
		my ($res) = WebgresTest::read_responses($s, 1, 10, 0, 0);
		return $res->[0]{status} // 0;
	};
	is($ask->(), 200, 'the first request plans the routes');
	$node->safe_psql('postgres', 'ALTER TABLE rl_plan ADD COLUMN y int');
	is($ask->(), 200, 'the plan changed: the request runs again, served');
	is(join(' ', $ask->(), $ask->()), '200 429',
		'each limit counted the request that ran again once: the third is served, the fourth 429');
	close $s;
}
ok(WebgresTest::reload_all_workers($node, "webgres.share_read_transactions = off\n"),
	'shared read transactions off again');

# ---- the server's limit, set by a superuser ----
ok(WebgresTest::reload_all_workers($node, "webgres.rate_limit = 0.001\nwebgres.rate_limit_burst = 1\n"),
	'reloaded with webgres.rate_limit');
is(statuses('127.0.0.101', '/plain', 3), '200 200 429', 'webgres.rate_limit: every route, per address');
my $gr = get_from('127.0.0.101', '/plain');
like($gr->{headers}{'ratelimit-policy'} // '', qr/^"server";q=2;w=\d+$/, 'its policy is the server\'s');
is(statuses('127.0.0.102', '/plain', 1), '200', 'another address has its own');
ok(WebgresTest::reload_all_workers($node, "webgres.rate_limit = 0\n"), 'the server limit off again');
is(statuses('127.0.0.101', '/plain', 2), '200 200', 'and the address is served again');

# ---- the rate limits' state in a REQUEST frame, as the executor reads it ----
# A worker hands a request to an executor with what its limits counted:
# the rate-limit module's own section of the frame (module id, length,
# bytes; docs/internals-modules.md).  These frames are written here, as a
# worker writes them, on the executors' socket.  The module's id is its
# place in src/serve/phase_list.h (cors, rate_limit, ...).
my $RL_MODULE = 1;
$id{wire} = route('/wire', q{SELECT 'wire' AS body}, rate => 0.001, burst => 0, mode => 'executor');
WebgresTest::wait_for_status($port, '/plain', 200) or die;

# A length-prefixed string.
sub wstr { return pack('N', length $_[0]) . $_[0]; }

# The rate limits' state: flags (1 the address key, 2 the server's limit
# counted), the key, the routes whose limits counted the request.
sub rl_state
{
	my ($flags, $k0, $k1, @done) = @_;
	return pack('C Q> Q> C', $flags, $k0, $k1, scalar @done) . join('', map { pack('Q>', $_) } @done);
}

# A REQUEST frame for GET $path with these module states ([id, bytes] each).
sub request_frame
{
	my ($path, @states) = @_;
	my $p = pack('Q> Q> C', 0, $id{wire}, 0);
	$p .= pack('C', scalar @states) . join('', map { pack('C', $_->[0]) . wstr($_->[1]) } @states);
	$p .= pack('C', 0) . wstr('x') . wstr('GET') . wstr($path) . pack('Q>', ~0);
	$p .= pack('N', 0) . pack('C', 0) . pack('N', 0);
	return pack('N', length $p) . 'Q' . $p;
}

# Sends a frame to the executors; the status of the HEAD frame that comes
# back, or 0 if the executor closed the connection without one.
sub to_executor
{
	my ($frame) = @_;
	my ($pm) = split /\n/, slurp_file($node->data_dir . '/postmaster.pid');
	my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => "\0webgres-executors-$pm")
	  or die "connect to the executors: $!";
	binmode $s;
	print $s $frame;
	my $in = '';
	my $deadline = time + 10;
	while (time < $deadline)
	{
		my $n = sysread($s, my $buf, 65536);
		last if !$n;
		$in .= $buf;
	}
	close $s;
	return 0 if length($in) < 9 || substr($in, 4, 1) ne 'H';
	return unpack('N', substr($in, 5, 4));
}

is(join(' ', map { to_executor(request_frame('/wire', [ $RL_MODULE, rl_state(1, 7, 1, $id{wire}) ])) } 1 .. 2),
	'200 200', 'a state saying the worker counted the route: the executor does not count it again');
is(join(' ', map { to_executor(request_frame('/wire', [ $RL_MODULE, rl_state(1, 7, 2) ])) } 1 .. 2),
	'200 429', 'a state with the address key and nothing counted: the executor counts by that key');

my %bad = (
	'a module id no module has' => [ [ 250, rl_state(1, 7, 3) ] ],
	'the rate limits\' state a byte short' => [ [ $RL_MODULE, substr(rl_state(1, 7, 3, 5), 0, -1) ] ],
	'a flag the rate limits do not know' => [ [ $RL_MODULE, rl_state(4, 7, 3) ] ],
	'more counted routes than a state holds' => [ [ $RL_MODULE, rl_state(1, 7, 3, 1 .. 9) ] ],
	'one module\'s state twice' => [ [ $RL_MODULE, rl_state(1, 7, 3) ], [ $RL_MODULE, rl_state(1, 7, 3) ] ],
);
for my $what (sort keys %bad)
{
	my $offset = -s $node->logfile;
	is(to_executor(request_frame('/wire', @{ $bad{$what} })), 0, "$what: the executor answers nothing");
	ok(WebgresTest::poll_until(sub { slurp_file($node->logfile, $offset) =~ /got a malformed request/ }, 10),
		"$what: a malformed frame, logged");
}
is(to_executor(request_frame('/wire', [ $RL_MODULE, rl_state(1, 7, 4) ])), 200,
	'the executor serves the next well-formed frame');
is(get_from('127.0.0.120', '/wire')->{status}, 200, 'and requests handed over by the workers');

# ---- buckets live in shared memory: a restart forgets them ----
is(get_from('127.0.0.3', '/addr')->{status}, 429, 'before a restart, 127.0.0.3 is over its limit');
$node->restart;
WebgresTest::wait_for_listen($port) or die;
WebgresTest::wait_for_status($port, '/plain', 200);
is(statuses('127.0.0.3', '/addr', 4), '200 200 200 429', 'after a restart its bucket is full again');

# ---- a standby: the limits come through WAL, the buckets are its own ----
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('rate_limits_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
my $sport = PostgreSQL::Test::Cluster::get_free_port();
$standby->append_conf('postgresql.conf', "webgres.listen = '127.0.0.1:$sport'\n");
$standby->start;
$node->wait_for_catchup($standby);
WebgresTest::wait_for_status($sport, '/plain', 200) or die;
is(statuses('127.0.0.4', '/addr', 4), '200 200 200 429', 'primary: 127.0.0.4 gets its budget');
{
	local $port = $sport;
	is(statuses('127.0.0.4', '/addr', 4), '200 200 200 429',
		'a read-only standby limits too, with a budget of its own');
}
$standby->stop;

# ---- a routes table without the module's columns (an older extension) ----
# The route table selects each of the rate-limit module's columns that
# exists and a NULL of its type for each that does not: a missing rate_key
# keys by address, a missing rate_limit is no limit, and routes still load.
$node->safe_psql('postgres', 'ALTER TABLE webgres.routes DROP COLUMN rate_key');
# Fresh client addresses, 127.0.1.1 on, one budget each.
my $next_addr = 0;
sub fresh_address
{
	my $n = $next_addr++;
	return sprintf('127.0.%d.%d', 1 + int($n / 250), 1 + $n % 250);
}
# Polls from fresh addresses (the table reloads as the change is seen)
# until one gets $want from $n requests to $path; returns what the last
# one got.
sub statuses_settle
{
	my ($path, $n, $want) = @_;
	my $got = '';
	WebgresTest::poll_until(sub {
		$got = statuses(fresh_address(), $path, $n);
		return $got eq $want;
	}, 10);
	return $got;
}
is(statuses_settle('/addr', 4, '200 200 200 429'), '200 200 200 429',
	'without rate_key the routes load, and a limit counts by address');
$node->safe_psql('postgres', 'ALTER TABLE webgres.routes DROP COLUMN rate_limit, DROP COLUMN rate_burst');
is(statuses_settle('/addr', 4, '200 200 200 200'), '200 200 200 200',
	'without rate_limit a route has no limit of its own');
is(get_from(fresh_address(), '/plain')->{status}, 200, 'and the others serve as before');

done_testing();
