# The image's start-up script, outside Docker: docker/start.sh creates a
# cluster in an empty directory, loads TFB, serves HTTP in the foreground,
# and stops cleanly on SIGTERM; a second start reuses the cluster.
use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use IPC::Run;
use Time::HiRes qw(sleep time);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

# The image's Postgres (Debian's 15) has pg_stat_statements, which TFB's
# verifier reads and docker/start.sh preloads; an installation without it
# (docs/versions.md) cannot run the script.
plan skip_all => 'pg_stat_statements is not in this installation (docs/versions.md)'
  unless WebgresTest::have_module('pg_stat_statements');

my $top = $ENV{WEBGRES_SRC} // abs_path(dirname(__FILE__) . "/../..");
my $data = PostgreSQL::Test::Utils::tempdir() . '/data';
my $http_port = PostgreSQL::Test::Cluster::get_free_port();
my $pg_port = PostgreSQL::Test::Cluster::get_free_port();

local $ENV{WEBGRES_DATA} = $data;
local $ENV{WEBGRES_LISTEN} = "127.0.0.1:$http_port";
local $ENV{WEBGRES_WORKERS} = 1;
local $ENV{PGPORT} = $pg_port;
delete $ENV{WEBGRES_PG_LISTEN};

sub curl
{
	my ($path) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'curl', '-s', '--max-time', '5', '-o', '-', '-w', '\n%{http_code}',
		"http://127.0.0.1:$http_port$path" ], '>', \$out, '2>', \$err);
	my ($body, $code) = $out =~ /^(.*)\n(\d+)$/s;
	return ($code // 0, $body // '');
}

sub start_and_check
{
	my ($what) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ "$top/docker/start.sh" ], '>', \$out, '2>', \$err);
	my ($code, $body) = (0, '');
	my $deadline = time + 90;
	while (time < $deadline && $h->pumpable)
	{
		($code, $body) = curl('/json');
		last if $code == 200;
		sleep 0.3;
		$h->pump_nb;
	}
	is($code, 200, "$what: /json answers 200");
	like($body, qr/^\{\s*"message"\s*:\s*"Hello, World!"\s*\}$/, "$what: /json body");
	my ($fcode, $fbody) = curl('/fortunes');
	like($fbody, qr{<td>Additional fortune added at request time.</td>}, "$what: /fortunes served");
	# TechEmpower's Postgres settings, from the file every script reads.
	for my $s (WebgresTest::tfb_settings($top))
	{
		my $v = `psql -X -A -t -h '$data/socket' -p $pg_port -U postgres -d hello_world -c 'SHOW $s->[0]'`;
		chomp $v;
		is($v, $s->[1], "$what: $s->[0] as scripts/tfb-postgres.conf sets it");
	}

	$h->signal('TERM');
	my $finished = eval { $h->finish; 1 };
	# full_result: a script killed by the signal has result 0 too.
	ok($finished && $h->full_result == 0, "$what: exits 0 on SIGTERM") or diag("stderr: $err");
	ok(!-e "$data/postmaster.pid", "$what: Postgres stopped");
	return $err;
}

my $err = start_and_check('first start');
like($err, qr/creating cluster/, 'first start creates the cluster');
$err = start_and_check('second start');
unlike($err, qr/creating cluster/, 'second start reuses the cluster');

my ($out, $init_err);
ok(IPC::Run::run([ "$top/docker/start.sh", '--init-only' ], '>', \$out, '2>', \$init_err),
	'--init-only on an existing cluster succeeds');
ok(!-e "$data/postmaster.pid", '--init-only leaves Postgres stopped');

done_testing();
