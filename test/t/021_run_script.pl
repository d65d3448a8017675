# make run's script (scripts/run.sh) refuses to start over a server that is
# already there: a second run on the same data directory would have stopped
# the first one's cluster, and one on the same HTTP port would have shared
# it through SO_REUSEPORT.  It names what holds the directory or the port,
# and the first run keeps serving.  Also: make run's configuration keeps
# webgres.share_read_transactions off (TechEmpower's requirement 7).
use strict;
use warnings;

use Cwd qw(abs_path realpath);
use File::Basename qw(dirname);
use IO::Socket::INET;
use IPC::Run;
use Time::HiRes qw(sleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $top = $ENV{WEBGRES_SRC} // abs_path(dirname(__FILE__) . "/../..");
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $data = "$tmp/first";
my $http_port = PostgreSQL::Test::Cluster::get_free_port();
my $pg_port = PostgreSQL::Test::Cluster::get_free_port();

sub curl
{
	my ($port, $path) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-s', '--max-time', '5', '-o', '-', '-w', '\n%{http_code}',
		"http://127.0.0.1:$port$path" ], '>', \$out, '2>', \$err);
	my ($body, $code) = $out =~ /^(.*)\n(\d+)$/s;
	return ($code // 0, $body // '');
}

# Runs scripts/run.sh to its end (60 s at most, then SIGTERM) with these
# settings; returns (exit status, stdout, stderr).
sub run_script
{
	my (%env) = @_;
	local @ENV{ keys %env } = values %env;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ "$top/scripts/run.sh" ], '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(60));
	# Still running after 60 s: it started a server after all.
	if (!eval { $h->finish; 1 })
	{
		$h->signal('TERM');
		eval { $h->finish; 1 } or $h->kill_kill;
		return ('still running after 60 s', $out, $err);
	}
	return ($h->result, $out, $err);
}

my %first = (PORT => $http_port, PGPORT => $pg_port, WEBGRES_DATA => $data, WORKERS => 1);

# The first run: serving once it prints so.
my ($out, $err) = ('', '');
my $h;
{
	local @ENV{ keys %first } = values %first;
	$h = IPC::Run::start([ "$top/scripts/run.sh" ], '<', \undef, '>', \$out, '2>', \$err);
}
my $deadline = time + 120;
while (time < $deadline && $h->pumpable && $out !~ /webgres is serving/)
{
	$h->pump_nb;
	sleep 0.2;
}
# Nothing below means anything without the first run: end this file (as
# a failure), not the whole suite; TERM lets run.sh stop what it started.
unless (like($out, qr/webgres is serving http:\/\/127\.0\.0\.1:$http_port/, 'the first run serves'))
{
	$h->kill_kill(grace => 60);
	die "run.sh did not start: $err";
}
my ($code, $body) = curl($http_port, '/plaintext');
is("$code $body", '200 Hello, World!', 'the first run answers /plaintext');
my $pmpid = (split /\n/, slurp_file("$data/postmaster.pid"))[0];
my $real = realpath($data);

# The first run's settings.
my $show = `psql -X -A -t -h '$data/socket' -p $pg_port -U postgres -d hello_world -c 'SHOW webgres.share_read_transactions'`;
chomp $show;
is($show, 'off', 'make run keeps webgres.share_read_transactions off');
# TechEmpower's Postgres settings, from the file every script reads.
my @tfb = WebgresTest::tfb_settings($top);
cmp_ok(scalar(@tfb), '>=', 10, 'scripts/tfb-postgres.conf lists TechEmpower\'s settings');
for my $s (@tfb)
{
	my $v = `psql -X -A -t -h '$data/socket' -p $pg_port -U postgres -d hello_world -c 'SHOW $s->[0]'`;
	chomp $v;
	is($v, $s->[1], "make run sets $s->[0] as scripts/tfb-postgres.conf does");
}

# The same PGPORT, hence the same data directory: refused, not taken over.
my ($rc, $out2, $err2) = run_script(%first);
isnt($rc, 0, 'a second run on the same data directory exits non-zero');
like($err2, qr/the cluster in \Q$data\E is already running \(postmaster PID $pmpid, Postgres port $pg_port\)/,
	'and names the running cluster, its PID and port');
($code, $body) = curl($http_port, '/plaintext');
is($code, 200, 'the first run still serves');
is((split /\n/, slurp_file("$data/postmaster.pid"))[0], $pmpid, 'with the same postmaster');

# The same HTTP port with another cluster: refused before anything starts.
my $pg_port2 = PostgreSQL::Test::Cluster::get_free_port();
($rc, $out2, $err2) = run_script(%first, PGPORT => $pg_port2, WEBGRES_DATA => "$tmp/second");
isnt($rc, 0, 'a second run on the same HTTP port exits non-zero');
like($err2, qr/HTTP port $http_port is already in use by postgres \(PID $pmpid, data directory \Q$real\E\)/,
	'and names the server holding it, its PID and data directory');
ok(!-e "$tmp/second", 'without creating a cluster');
($code, $body) = curl($http_port, '/plaintext');
is($code, 200, 'the first run still serves');

# Ports held by something else altogether.
my $squatter = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1', ReuseAddr => 1,
	LocalPort => PostgreSQL::Test::Cluster::get_free_port())
  or die "listen: $!";
my $busy = $squatter->sockport;
($rc, $out2, $err2) = run_script(PORT => PostgreSQL::Test::Cluster::get_free_port(),
	PGPORT => $busy, WEBGRES_DATA => "$tmp/third", WORKERS => 1);
isnt($rc, 0, 'a Postgres port another program listens on: non-zero');
like($err2, qr/Postgres port $busy is already in use by \S+ \(PID $$\)/, 'naming that program');
($rc, $out2, $err2) = run_script(PORT => $busy, PGPORT => PostgreSQL::Test::Cluster::get_free_port(),
	WEBGRES_DATA => "$tmp/third", WORKERS => 1);
isnt($rc, 0, 'an HTTP port another program listens on: non-zero');
like($err2, qr/HTTP port $busy is already in use by \S+ \(PID $$\)/, 'naming that program');
ok(!-e "$tmp/third", 'neither created a cluster');
close $squatter;

# The first run still stops cleanly on SIGTERM.
($code, $body) = curl($http_port, '/plaintext');
is($code, 200, 'the first run serves to the end');
$h->signal('TERM');
my $finished = eval { $h->finish; 1 };
ok($finished && $h->full_result == 0, 'the first run exits 0 on SIGTERM') or diag("stderr: $err");
ok(!-e "$data/postmaster.pid", 'and its cluster stopped');

done_testing();
