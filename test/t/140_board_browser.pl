# The board (examples/board), set up by scripts/demo.sh as 'make demo'
# does, on ports of its own, driven end to end in a real headless browser
# (test/browser/board.py): two users, live updates, privacy by row-level
# security, HTTP/2 over TLS, 304s, the CSV export, a forged cross-site
# request, presence and typing over a WebSocket, logging out, a clean
# console, attachments.  Screenshots go to
# tmp_check/board-screenshots.
use strict;
use warnings;
use IPC::Run;
use Time::HiRes;
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

# Runs SQL in the board's database; returns its output, trimmed.
sub board_sql
{
	my ($sql) = @_;
	my ($o, $e) = ('', '');
	local @ENV{ keys %env } = values %env;
	IPC::Run::run([ "$src/scripts/cluster.sh", 'psql', $data, '-d', 'board', '-tAc', $sql ],
		'<', \undef, '>', \$o, '2>', \$e, IPC::Run::timeout(60))
	  or die "psql failed: $e";
	chomp $o;
	return $o;
}

# Two presence rows of sockets that died without a close: one of a worker
# process id nobody has, one of the live worker's id but another start
# time (the id reused).  Neither may show in the browsers' lists (board.py
# checks the exact names), and the first socket that opens removes both.
board_sql(q{
	INSERT INTO board.accounts (name, password) VALUES ('ghost', 'x');
	INSERT INTO board.presence (conn, account, name, worker_started)
	SELECT (w.pid::bigint << 32) | 1, a.id, 'ghost', w.started
	FROM board.accounts a,
	     (VALUES (2147483646, now()),
	             ((SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker' LIMIT 1),
	              now() - interval '1 day')) AS w(pid, started)
	WHERE a.name = 'ghost'});
is(board_sql('SELECT count(*) FROM board.presence'), '2', 'two stale presence rows planted');
# Presence learns a worker's start time through one function, not by
# reading every session's activity.
is(board_sql(q{SELECT pg_has_role('board_accounts', 'pg_read_all_stats', 'MEMBER')}),
	'f', 'board_accounts is no member of pg_read_all_stats');

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
# board.py makes 27 checks (its CHECKS); every one must have run, and
# its own verdict (0: all passed, 1: one failed, 2: the run broke) agree.
is($checks, 27, 'the browser ran every check');
is($board_status, 0, 'board.py exits 0');

# The forged request reached webgres with the cookie and was refused by
# the CSRF rule, not merely sent without a cookie.
# Both pages have closed their sockets (bob's page closed, alice logged
# out): their close handlers removed their rows, and the stale ones went
# when the first socket opened.
my $deadline = time() + 30;
my $rows;
while (($rows = board_sql('SELECT count(*) FROM board.presence')) ne '0' && time() < $deadline)
{
	Time::HiRes::usleep(100_000);
}
is($rows, '0', 'no presence row is left: the closes removed theirs, an open the stale ones');

my $log = slurp_file("$data/postgres.log");
like($log, qr/a cookie-authenticated request came from another origin/,
	'the forged request carried the session cookie and was refused as cross-site');
my @shots = glob("$shots/*.png");
cmp_ok(scalar(@shots), '>=', 4, 'a screenshot of each step (' . scalar(@shots) . ')');

demo('down');
done_testing();
