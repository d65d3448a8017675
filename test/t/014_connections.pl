# Connection capacity: a worker holds more connections than the soft open
# file limit it inherits, stops accepting at webgres.max_connections_per_worker
# and resumes as connections close, and when accept() fails for want of
# descriptors it pauses instead of spinning, still serving what it holds.
# Counts and order are asserted, not timings (the CPU bound is generous).
use strict;
use warnings;
use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;

my $MANY = 1500;    # beyond the usual soft limit of 1024

chomp(my $hard = `sh -c 'ulimit -Hn'`);
$hard = 1 << 20 if $hard eq 'unlimited';

my $node = WebgresTest->new_node('conns', workers => 1,
	conf => "webgres.request_timeout = '5min'\n"    # answered connections stay open
	  . "webgres.http2 = on\n"
	  # /x stays on the loop under load: on an executor it needs a descriptor the fd test takes away.
	  . "webgres.inline_budget = '60s'\n");
our $port = $node->{webgres_port};
WebgresTest::add_route($node, 'GET', '/x', q{SELECT 'x' AS body});
WebgresTest::wait_for_status($port, '/x', 200);
my ($pid) = WebgresTest::worker_pids($node);

# This process opens many sockets too: lift its own soft limit.
system('prlimit', '--pid', $$, "--nofile=$hard:$hard") == 0 or diag("prlimit on the test failed");

sub open_conns
{
	my ($n) = @_;
	my @s;
	for (1 .. $n)
	{
		my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
			Timeout => 5) or last;
		$s->autoflush(1);
		binmode $s;
		push @s, $s;
	}
	return @s;
}

sub ask
{
	my ($s) = @_;
	print $s "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
}

# Waits until $want of the sockets (indexes not yet in %$done) have a whole
# response, or the deadline; marks them in %$done and returns how many did.
sub collect
{
	my ($socks, $done, $want, $timeout) = @_;
	my %buf;
	my $got = 0;
	my $deadline = time + $timeout;
	my %idx = map { (fileno($socks->[$_]) => $_) } grep { !$done->{$_} } 0 .. $#$socks;
	my $sel = IO::Select->new(map { $socks->[$_] } values %idx);
	while ($got < $want && $sel->count && time < $deadline)
	{
		for my $s ($sel->can_read(0.2))
		{
			my $i = $idx{ fileno($s) };
			my $n = sysread($s, my $chunk, 4096);
			if (!$n) { $sel->remove($s); next; }
			$buf{$i} .= $chunk;
			if ($buf{$i} =~ /\r\n\r\nx\z/)
			{
				$done->{$i} = 1;
				$got++;
				$sel->remove($s);
			}
		}
	}
	return $got;
}

sub connections_gauge
{
	return $node->safe_psql('postgres', 'SELECT connections FROM webgres.workers');
}

sub wait_gauge
{
	my ($want) = @_;
	my $deadline = time + 30;
	my $v;
	while (time < $deadline)
	{
		$v = connections_gauge();
		return $v if $v == $want;
		sleep 0.05;
	}
	return $v;
}

# ---- more connections than the inherited soft limit ----
SKIP:
{
	skip "hard open file limit $hard is too low for $MANY connections", 3 if $hard < $MANY + 200;
	my @s = open_conns($MANY);
	is(scalar(@s), $MANY, "$MANY connections opened");
	ask($_) for @s;
	my %done;
	is(collect(\@s, \%done, $MANY, 60), $MANY, "every one of $MANY connections to one worker is answered");
	is(wait_gauge($MANY), $MANY, 'webgres.workers counts them');
	close $_ for @s;
}
is(wait_gauge(0), 0, 'closed connections are no longer counted');

# ---- an HTTP/2 connection is counted, and uncounted when it closes ----
# (its screening hooks the socket's close too: both must run)
{
	my @s = open_conns(3);
	# the client preface and an empty SETTINGS frame
	print $_ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" . pack('CnCCN', 0, 0, 4, 0, 0) for @s;
	my $got = '';
	my $sel = IO::Select->new($s[0]);
	sysread($s[0], $got, 9) if $sel->can_read(10);
	is(length($got) == 9 ? unpack('x3C', $got) : -1, 4, 'an h2c connection is answered with SETTINGS');
	is(wait_gauge(3), 3, 'h2c connections are counted');
	close $_ for @s;
	is(wait_gauge(0), 0, 'closed h2c connections are no longer counted');
}

# ---- the per-worker cap ----
my $capped = WebgresTest->new_node('capped', workers => 1,
	conf => "webgres.max_connections_per_worker = 20\n"
	  . "webgres.request_timeout = '5min'\n");    # held connections stay open
WebgresTest::add_route($capped, 'GET', '/x', q{SELECT 'x' AS body});
WebgresTest::wait_for_status($capped->{webgres_port}, '/x', 200);
{
	local $port = $capped->{webgres_port};
	my @s = open_conns(30);
	is(scalar(@s), 30, '30 connections opened: the kernel queues what the worker does not take');
	ask($_) for @s;
	my %done;
	is(collect(\@s, \%done, 20, 30), 20, 'at the cap of 20, 20 are answered');
	is(collect(\@s, \%done, 1, 2), 0, 'the other 10 are not taken while the 20 stay open');
	is($capped->safe_psql('postgres', 'SELECT connections FROM webgres.workers'), 20, 'the worker holds 20');

	my @first = sort { $a <=> $b } keys %done;
	close $s[$_] for @first[0 .. 4];
	is(collect(\@s, \%done, 5, 30), 5, 'five closed: five more are taken and answered');
	is(collect(\@s, \%done, 1, 1), 0, 'and no more than five');
	close $s[$_] for @first[5 .. 19];
	is(collect(\@s, \%done, 5, 30), 5, 'the rest are answered once room is made');
	is(scalar(keys %done), 30, 'all 30 answered in the end');
	close $_ for @s;
}
$capped->stop;

# ---- accept() fails for want of descriptors: pause, do not spin ----
sub cpu_ticks
{
	my @f = split ' ', (slurp_file("/proc/$pid/stat") =~ s/^.*\) //sr);
	return $f[11] + $f[12];    # utime + stime (fields 14 and 15)
}
{
	my ($kept) = open_conns(1);
	ask($kept);
	my %d0;
	is(collect([$kept], \%d0, 1, 10), 1, 'a connection held before the limit drops is served');

	my $log_offset = -s $node->logfile;
	my $open_fds = () = glob("/proc/$pid/fd/*");
	system('prlimit', '--pid', $pid, "--nofile=" . ($open_fds + 3) . ":$hard") == 0
	  or die 'prlimit on the worker failed';
	my @s = open_conns(20);
	ask($_) for @s;
	my %done;
	my $early = collect(\@s, \%done, 20, 3);
	cmp_ok($early, '<', 20, "with the descriptors gone, not all 20 are taken ($early were)");

	my $t0 = time;
	my $c0 = cpu_ticks();
	sleep 2;
	my $used = (cpu_ticks() - $c0) / 100;    # USER_HZ is 100 on Linux
	my $wall = time - $t0;
	cmp_ok($used, '<', 0.5, sprintf('the worker does not spin: %.2f s of CPU in %.1f s', $used, $wall));

	ask($kept);
	my %d1;
	is(collect([$kept], \%d1, 1, 10), 1, 'the connection it holds is still served');

	like(slurp_file($node->logfile, $log_offset), qr/could not accept a connection: Too many open files/,
		'the failure is logged');
	my @logged = slurp_file($node->logfile, $log_offset) =~ /could not accept a connection/g;
	is(scalar(@logged), 1, 'once, however often it recurs');

	system('prlimit', '--pid', $pid, "--nofile=$hard:$hard");
	is(collect(\@s, \%done, 20 - $early, 30), 20 - $early, 'with descriptors back, the waiting connections are answered');
	close $_ for @s, $kept;
}

$node->stop;
done_testing();
