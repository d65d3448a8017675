# The board (examples/board), set up by scripts/demo.sh as 'make demo'
# does, on ports of its own, driven end to end in a real headless browser
# (test/browser/board.py): two users, live updates, privacy by row-level
# security, HTTP/2 over TLS, 304s, the CSV export, a forged cross-site
# request, logging out, a clean console, attachments.  Screenshots go to
# tmp_check/board-screenshots.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use BrowserTest;
use WebgresTest;

BrowserTest::require_browser();
# The board keeps its passwords with pgcrypto's crypt().
plan skip_all => 'pgcrypto is not in this installation (docs/versions.md)'
  unless WebgresTest::have_module('pgcrypto');

my $src = $ENV{WEBGRES_SRC} or die 'WEBGRES_SRC is not set';
my $data = PostgreSQL::Test::Utils::tempdir() . '/board';
my %env = (
	PORT => PostgreSQL::Test::Cluster::get_free_port(),
	HTTP_PORT => PostgreSQL::Test::Cluster::get_free_port(),
	PGPORT => PostgreSQL::Test::Cluster::get_free_port(),
	WEBGRES_DATA => $data,
	WORKERS => 1,
	EXECUTORS => 1,
	DEMO_UP_ONLY => 1);

# Runs scripts/demo.sh with the test's ports; dies with its output if it fails.
sub demo
{
	my @args = @_;
	my ($out, $err) = ('', '');
	local @ENV{ keys %env } = values %env;
	IPC::Run::run([ "$src/scripts/demo.sh", @args ], '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(180))
	  or die "demo.sh @args failed:\n$out\n$err";
	return $out;
}

my $out = demo();
like($out, qr{The board is serving https://localhost:$env{PORT}/}, 'demo.sh sets the board up and says where');

my $shots = "$PostgreSQL::Test::Utils::tmp_check/board-screenshots";
my ($bout, $berr) = ('', '');
IPC::Run::run(
	[ $BrowserTest::PYTHON, "$src/test/browser/board.py",
	  '--url', "https://localhost:$env{PORT}",
	  '--cert', "$data/demo-cert.pem", '--key', "$data/demo-key.pem",
	  '--out', $shots ],
	'<', \undef, '>', \$bout, '2>', \$berr, IPC::Run::timeout(300));
my $board_status = $? >> 8;
diag("board.py: $berr") if length $berr;
my $checks = 0;
for my $line (split /\n/, $bout)
{
	next unless $line =~ /^(not ok|ok) - (.*)$/;
	ok($1 eq 'ok', $2);
	$checks++;
}
# board.py makes 20 checks (its CHECKS); every one must have run, and
# its own verdict (0: all passed, 1: one failed, 2: the run broke) agree.
is($checks, 20, 'the browser ran every check');
is($board_status, 0, 'board.py exits 0');

# The forged request reached webgres with the cookie and was refused by
# the CSRF rule, not merely sent without a cookie.
my $log = slurp_file("$data/postgres.log");
like($log, qr/a cookie-authenticated request came from another origin/,
	'the forged request carried the session cookie and was refused as cross-site');
my @shots = glob("$shots/*.png");
cmp_ok(scalar(@shots), '>=', 4, 'a screenshot of each step (' . scalar(@shots) . ')');

demo('down');
done_testing();
