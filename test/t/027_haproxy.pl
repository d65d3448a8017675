# A real topology: a primary, two streaming standbys and HAProxy in front,
# configured by scripts/haproxy/webgres.cfg as users would copy it.  Reads
# spread over every ready node; writes reach the primary (through HAProxy,
# and by the redirect from a standby); a route changed on the primary is
# served by both standbys; a paused or stopped standby leaves the pool
# without a client error; promoting a standby restores writes.
use strict;
use warnings;
use Time::HiRes qw(time sleep);
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $haproxy_bin = '/usr/sbin/haproxy';
plan skip_all => 'haproxy is not installed (make test installs it)' unless -x $haproxy_bin;

my $src = $ENV{WEBGRES_SRC} or die 'WEBGRES_SRC is not set';
my $front = PostgreSQL::Test::Cluster::get_free_port();
my $writes = PostgreSQL::Test::Cluster::get_free_port();
my $health = "webgres.readiness_path = '/readyz'\n"
  . "webgres.primary_path = '/primary'\n"
  . "webgres.primary_url = 'http://127.0.0.1:$writes'\n"
  . "webgres.max_replica_lag = '2s'\n";

my $primary = WebgresTest->new_node('primary', workers => 1,
	init => { allows_streaming => 1 }, conf => $health);
$primary->safe_psql('postgres', q{CREATE TABLE kv (k text PRIMARY KEY, v text)});
# Which node answered: each cluster has its own Postgres port.
WebgresTest::add_route($primary, 'GET', '/whoami', q{SELECT current_setting('port') AS body FROM request});
WebgresTest::add_route($primary, 'GET', '/kv/:k', q{
	SELECT v AS body FROM kv JOIN request ON kv.k = request.params->>'k'});
WebgresTest::add_route($primary, 'PUT', '/kv/:k', q{
	INSERT INTO kv SELECT request.params->>'k', convert_from(request.body, 'UTF8') FROM request
	ON CONFLICT (k) DO UPDATE SET v = excluded.v RETURNING 201 AS status, current_setting('port') AS body});
$primary->backup('b');

# A standby of $primary from backup 'b', with its own webgres port.
sub new_standby
{
	my ($name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, 'b', has_streaming => 1);
	$node->{webgres_port} = PostgreSQL::Test::Cluster::get_free_port();
	$node->append_conf('postgresql.conf', "webgres.listen = '127.0.0.1:$node->{webgres_port}'\n");
	$node->start;
	return $node;
}
my $s1 = new_standby('standby1');
my $s2 = new_standby('standby2');
my @nodes = ($primary, $s1, $s2);
$primary->wait_for_catchup($_) for ($s1, $s2);
WebgresTest::wait_for_listen($_->{webgres_port}) for @nodes;

my $hadir = PostgreSQL::Test::Utils::tempdir();
my ($hout, $herr) = ('', '');
my $haproxy = IPC::Run::start(
	[ $haproxy_bin, '-db', '-f', "$src/scripts/haproxy/webgres.cfg" ],
	'<', \undef, '>', \$hout, '2>', \$herr,
	init => sub {
		$ENV{WEBGRES_NODE1} = "127.0.0.1:$primary->{webgres_port}";
		$ENV{WEBGRES_NODE2} = "127.0.0.1:$s1->{webgres_port}";
		$ENV{WEBGRES_NODE3} = "127.0.0.1:$s2->{webgres_port}";
		$ENV{WEBGRES_FRONT} = "127.0.0.1:$front";
		$ENV{WEBGRES_WRITES} = "127.0.0.1:$writes";
	});
# Without haproxy nothing below means anything: this file fails, the
# suite goes on.
unless (WebgresTest::wait_for_listen($front) && WebgresTest::wait_for_listen($writes))
{
	$haproxy->kill_kill;
	die "haproxy did not start: $herr";
}

# Polls until $cond->() holds; false if it never did within $timeout s.
sub wait_until
{
	my ($cond, $timeout) = @_;
	my $deadline = time + ($timeout // 60);
	while (time < $deadline)
	{
		return 1 if $cond->();
		sleep 0.1;
	}
	return 0;
}

# The Postgres ports that answered $n reads through HAProxy, and the
# statuses that were not 200.
sub reads
{
	my ($n) = @_;
	my (%seen, @bad);
	for (1 .. $n)
	{
		my $res = eval { WebgresTest::http_get($front, '/whoami', timeout => 10) };
		if ($res && $res->{status} == 200)
		{
			# The port, after the route change too ('v2:<port>').
			(my $port = $res->{body}) =~ s/^v2://;
			$seen{$port}++;
		}
		else { push @bad, $res ? $res->{status} : 'no answer'; }
	}
	return (\%seen, \@bad);
}

my %port_of = map { $_->port => $_->name } @nodes;

# ---- reads spread over all ready nodes ----
ok(wait_until(sub { my ($seen) = reads(6); keys %$seen == 3 }),
	'reads through HAProxy reach all three nodes once they are ready');
my ($seen, $bad) = reads(30);
is_deeply($bad, [], 'thirty reads, no error');
is(scalar(keys %$seen), 3, 'spread over the primary and both standbys: '
	  . join(', ', map { "$port_of{$_} $seen->{$_}" } sort keys %$seen));

# ---- writes reach the primary ----
# HAProxy counts a server up until its checks have failed 'fall' times:
# until then the primary backend may still pick a standby.
ok(wait_until(sub {
	for (1 .. 6)
	{
		my $r = eval { WebgresTest::http_get($writes, '/whoami') };
		return 0 unless $r && $r->{status} == 200 && $r->{body} eq $primary->port;
	}
	return 1;
}, 30), 'HAProxy\'s primary backend settles on the primary');
my $res = WebgresTest::request($front, 'PUT', '/kv/a', body => 'one');
is($res->{status}, 201, 'a write through HAProxy: 201');
is($res->{body}, $primary->port, 'written on the primary');
$res = WebgresTest::request($s1->{webgres_port}, 'PUT', '/kv/b', body => 'two');
is($res->{status}, 307, 'a write sent to a standby directly: 307');
is($res->{headers}{location}, "http://127.0.0.1:$writes/kv/b", 'to HAProxy\'s primary address');
$res = WebgresTest::request($writes, 'PUT', '/kv/b', body => 'two');
is($res->{status}, 201, 'the redirected write, repeated there, lands on the primary');

# ---- a route changed on the primary reaches both standbys ----
$primary->safe_psql('postgres', q{UPDATE webgres.routes SET handler = 'SELECT ''v2:'' || current_setting(''port'') AS body FROM request' WHERE path = '/whoami'});
my $t0 = time;
for my $s ($s1, $s2)
{
	ok(wait_until(sub { my $r = eval { WebgresTest::http_get($s->{webgres_port}, '/whoami') }; $r && $r->{body} =~ /^v2:/ }, 30),
		$s->name . ' serves the changed route');
}
note(sprintf('route change served by both standbys after %.2f s', time - $t0));

# ---- a paused standby leaves the pool, with no client error ----
# "No read reached it" counts only when every read was answered: reads
# that failed reached nothing, and are errors.
$s2->safe_psql('postgres', 'SELECT pg_wal_replay_pause()');
my @errors;
ok(wait_until(sub {
	my ($seen, $bad) = reads(5);
	push @errors, @$bad;
	$primary->safe_psql('postgres', "INSERT INTO kv VALUES ('tick' || random(), 'x')");
	my ($after, $after_bad) = reads(12);
	push @errors, @$after_bad;
	my $answered = 0;
	$answered += $_ for values %$after;
	$answered == 12 && !exists $after->{ $s2->port };
}, 60), 'a paused standby stops getting reads (twelve answered by the others)');
is_deeply(\@errors, [], 'while it left the pool, no read failed');
$s2->safe_psql('postgres', 'SELECT pg_wal_replay_resume()');
ok(wait_until(sub { my ($seen) = reads(6); exists $seen->{ $s2->port } }, 60), 'resumed, it takes reads again');

# ---- a stopped standby: reads go on without error ----
my $reader = sub { my ($s, $b) = reads(3); push @errors, @$b; };
$reader->();
$s2->stop('fast');
$reader->() for 1 .. 10;
is_deeply(\@errors, [], 'reads went on while a standby stopped');
($seen, $bad) = reads(12);
ok(!exists $seen->{ $s2->port } && !@$bad, 'and the stopped standby is out of the pool');

# ---- the primary goes, a standby is promoted: writes come back ----
$primary->wait_for_catchup($s1);
$primary->stop('fast');
$s1->promote;
my $promoted_at = time;
ok(wait_until(sub { my $r = eval { WebgresTest::request($front, 'PUT', '/kv/c', body => 'three', timeout => 5) }; $r && $r->{status} == 201 }, 60),
	'after promotion, writes through HAProxy succeed');
note(sprintf('writes through HAProxy back %.2f s after promotion', time - $promoted_at));
is(WebgresTest::http_get($front, '/kv/c')->{body}, 'three', 'and read back through HAProxy');
is(WebgresTest::http_get($front, '/kv/a')->{body}, 'one', 'what the old primary had is there');

$haproxy->kill_kill;
$s1->stop;
done_testing();
