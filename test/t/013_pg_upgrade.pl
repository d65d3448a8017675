# pg_upgrade from an older Postgres to the one under test keeps webgres
# serving: a cluster with the TechEmpower database and routes, the example
# route, routes with path parameters, token authentication (required and
# optional routes, a secret, an anonymous role) and a static mount is
# upgraded with the new version's pg_upgrade, and every request answers
# what it answered before, byte for byte but the Date.  A database whose
# extension is still at 1.0 comes along and updates in place on the new
# version.
#
# The old installation is Postgres 15 with webgres built for it:
# scripts/test.sh makes one and names it in WEBGRES_UPGRADE_FROM (the
# folder holding its bin and lib) for every version it tests, so on 15
# the upgrade is from 15 to 15 (a new cluster of the same major).
use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $from = $ENV{WEBGRES_UPGRADE_FROM};
plan skip_all => 'no Postgres 15 installation to upgrade from (scripts/test.sh sets WEBGRES_UPGRADE_FROM)'
  unless $from;

my $top = $ENV{WEBGRES_SRC} // abs_path(dirname(__FILE__) . "/../..");
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $http_port = PostgreSQL::Test::Cluster::get_free_port();
my $secret = 'upgrade-test-secret-of-at-least-32-bytes';

# The same settings on both sides: the new cluster serves what the old did.
my $conf = qq{
shared_preload_libraries = 'webgres'
webgres.listen = '127.0.0.1:$http_port'
webgres.workers = 1
webgres.database = 'hello_world'
webgres.jwt_secret = '$secret'
webgres.anon_role = 'web_anon'
max_worker_processes = 32
};

# Checksums on both sides: 18's initdb turns them on by default, and
# pg_upgrade wants old and new to agree.
my $old = PostgreSQL::Test::Cluster->new('old', install_path => $from);
$old->init(extra => ['--data-checksums']);
$old->append_conf('postgresql.conf', $conf);
# A server that does not start fails this file alone (Cluster's own
# start would end the whole run).
$old->start(fail_ok => 1) or die 'the old cluster did not start';
my $old_version = $old->safe_psql('postgres', 'SHOW server_version_num');

# TechEmpower's database as make run loads it, with the old installation's psql.
{
	local $ENV{PGHOST} = $old->host;
	local $ENV{PGPORT} = $old->port;
	local $ENV{PGUSER} = 'postgres';
	local $ENV{WEBGRES_BINDIR} = "$from/bin";
	my ($out, $err);
	ok(IPC::Run::run([ "$top/scripts/tfb-db.sh" ], '>', \$out, '2>', \$err),
		'scripts/tfb-db.sh loads hello_world into the old cluster') or diag($err);
}

# The files of the static mount, where the server's user reads them.
mkdir "$tmp/site" or die "mkdir: $!";
mkdir "$tmp/site/css" or die "mkdir: $!";
PostgreSQL::Test::Utils::append_to_file("$tmp/site/index.html", "<!doctype html><title>site</title>\n");
PostgreSQL::Test::Utils::append_to_file("$tmp/site/css/app.css", "body { color: #333 }\n");

my $example = PostgreSQL::Test::Utils::slurp_file("$top/sql/examples/hello.sql");
$old->safe_psql('hello_world', qq{
	SET ROLE benchmarkdbuser;
	$example
	RESET ROLE;
	INSERT INTO webgres.routes (method, path, handler, owner) VALUES
	  ('GET', '/worlds/:id', \$\$
	    SELECT json_build_object('id', w.id, 'randomNumber', w.randomnumber) AS body
	    FROM request JOIN world w ON w.id = (request.params->>'id')::int \$\$, 'benchmarkdbuser');

	CREATE ROLE authenticator NOINHERIT;
	CREATE ROLE web_anon;
	CREATE ROLE todo_user;
	GRANT web_anon, todo_user TO authenticator;
	CREATE TABLE todos (id int PRIMARY KEY, task text, owner name);
	INSERT INTO todos VALUES (1, 'upgrade', 'todo_user'), (2, 'serve', 'todo_user');
	GRANT SELECT ON todos TO todo_user;
	INSERT INTO webgres.routes (method, path, auth, owner, handler) VALUES
	  ('GET', '/todos', 'required', 'authenticator',
	   \$\$ SELECT jsonb_agg(t ORDER BY t.id) AS body FROM todos t \$\$),
	  ('GET', '/whoami', 'optional', 'authenticator',
	   \$\$ SELECT current_user::text || ' ' || coalesce(request.claims->>'role', '-') AS body FROM request \$\$);

	INSERT INTO webgres.static_mounts (prefix, directory, owner)
	  VALUES ('/site', '$tmp/site', 'benchmarkdbuser');
});
my $token = $old->safe_psql('hello_world', q{SELECT webgres.jwt_sign('{"role": "todo_user"}')});

# An application that never updated its extension: at 1.0, in a database
# the workers do not serve.
$old->safe_psql('postgres', 'CREATE DATABASE legacy');
$old->safe_psql('legacy', q{
	CREATE EXTENSION webgres VERSION '1.0';
	INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/legacy', $$SELECT 'old' AS body$$);
});

# The workers serve hello_world, which did not exist when they started.
$old->stop;
$old->start(fail_ok => 1) or die 'the old cluster did not start again';
WebgresTest::wait_for_listen($http_port) or die "webgres did not start listening on $http_port";

# What each request answers: the status line, the headers but Date, the body.
my @requests = (
	[ '/plaintext' ], [ '/json' ], [ '/fortunes' ], [ '/hello/upgrade%20%3Cday%3E' ],
	[ '/worlds/1' ], [ '/worlds/10000' ], [ '/worlds/10001' ], [ '/nothing-here' ],
	[ '/todos' ], [ '/todos', Authorization => "Bearer $token" ],
	[ '/todos', Authorization => 'Bearer not.a.token' ],
	[ '/whoami' ], [ '/whoami', Authorization => "Bearer $token" ],
	[ '/site/' ], [ '/site/css/app.css' ], [ '/site' ], [ '/site/missing.css' ],
);

sub answers
{
	my %got;
	for my $r (@requests)
	{
		my ($path, %headers) = @$r;
		my $res = WebgresTest::http_get($http_port, $path, headers => \%headers);
		my $key = join(' ', $path, %headers);
		$got{$key} = join("\n", $res->{status_line},
			(map { "$_->[0]: $_->[1]" } grep { lc $_->[0] ne 'date' } @{ $res->{raw_headers} }),
			'', $res->{body});
	}
	return \%got;
}

# /db draws a random row: it answers the row the table holds for that id.
sub db_row_matches
{
	my ($node, $what) = @_;
	my $res = WebgresTest::http_get($http_port, '/db');
	my ($id, $n) = $res->{body} =~ /^\{"id" ?: ?(\d+), ?"randomNumber" ?: ?(\d+)\}$/;
	ok(defined $id, "$what: /db answers a row") or diag($res->{wire});
	is($n, $node->safe_psql('hello_world', "SELECT randomnumber FROM world WHERE id = " . ($id // 0)),
		"$what: /db's randomNumber is the table's");
}

WebgresTest::wait_for_status($http_port, '/plaintext', 200);
my $before = answers();
like($before->{'/todos Authorization Bearer ' . $token}, qr/^HTTP\/1\.1 200 .*"task": "upgrade"/s,
	'old: the token reads the todos');
like($before->{'/site/css/app.css'}, qr/^HTTP\/1\.1 200 .*color: #333/s, 'old: the mount serves its files');
like($before->{'/worlds/10001'}, qr/^HTTP\/1\.1 404/, 'old: a parameter that finds no row is 404');
db_row_matches($old, 'old');

# The new cluster: this version's initdb and pg_upgrade, webgres built for it.
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init(extra => ['--data-checksums']);
$new->append_conf('postgresql.conf', $conf);

# Postgres 15.20 (Debian's here) stamps every column with an attribute
# option, pg_attver, that releases made before it do not know (the 16.2 and
# 18.6 of docs/versions.md): their pg_dump copies the option and their
# server refuses it, for any table, webgres or not.  A new version of the
# same release round or later takes it; for an older one the stamps of the
# old cluster's own tables are taken out before the upgrade, and the test
# says so.
$new->start(fail_ok => 1) or die 'the new cluster did not start';
my ($probe_rc, $probe_out, $probe_err) = $new->psql('postgres',
	'CREATE TABLE attver_probe (a int); ALTER TABLE attver_probe ALTER COLUMN a SET (pg_attver = 1)');
$new->safe_psql('postgres', 'DROP TABLE IF EXISTS attver_probe');
$new->stop;
my $unknown_attver = $probe_err =~ /unrecognized parameter "pg_attver"/;
for my $db ('hello_world', 'legacy')
{
	my $stamped = $old->safe_psql($db, q{SELECT count(*) FROM pg_attribute
		WHERE attrelid >= 16384 AND array_to_string(attoptions, ',') ~ '(^|,)pg_attver='});
	next unless $stamped && $unknown_attver;
	note("$db: $stamped columns stamped with pg_attver, which the new version does not know: removed");
	$old->safe_psql($db, q{UPDATE pg_attribute
		SET attoptions = (SELECT array_agg(o) FROM unnest(attoptions) o WHERE o !~ '^pg_attver=')
		WHERE attrelid >= 16384 AND array_to_string(attoptions, ',') ~ '(^|,)pg_attver='});
}
$old->stop;
chomp(my $new_bindir = `pg_config --bindir`);
# pg_upgrade starts each server itself: without HTTP workers or executors
# meanwhile.
$new->command_ok(
	[
		'pg_upgrade', '--no-sync',
		'--old-datadir' => $old->data_dir, '--new-datadir' => $new->data_dir,
		'--old-bindir' => "$from/bin", '--new-bindir' => $new_bindir,
		'--old-port' => $old->port, '--new-port' => $new->port,
		'--socketdir' => $new->host,
		'--old-options' => '-c webgres.workers=0 -c webgres.executors=0',
		'--new-options' => '-c webgres.workers=0 -c webgres.executors=0',
	],
	"pg_upgrade from $old_version to this version");

$new->start(fail_ok => 1) or die 'the upgraded cluster did not start';
my $new_version = $new->safe_psql('postgres', 'SHOW server_version_num');
note("upgraded from $old_version to $new_version");
WebgresTest::wait_for_listen($http_port) or die "webgres did not start listening on $http_port";
WebgresTest::wait_for_status($http_port, '/plaintext', 200);

my $after = answers();
for my $key (map { join(' ', @$_) } @requests)
{
	(my $name = $key) =~ s/\Q$token\E/(the token)/;
	is($after->{$key}, $before->{$key}, "after pg_upgrade, GET $name answers as before");
}
db_row_matches($new, 'new');
is(WebgresTest::request($http_port, 'GET', '/updates?queries=3')->{status}, 200, 'new: /updates writes');

# The extension objects came over whole: the routes' table and its checks.
is($new->safe_psql('hello_world', q{SELECT extversion FROM pg_extension WHERE extname = 'webgres'}),
	$new->safe_psql('hello_world', q{SELECT default_version FROM pg_available_extensions WHERE name = 'webgres'}),
	'hello_world keeps the current extension version');
my ($rc, $out, $err) = $new->psql('hello_world',
	q{INSERT INTO webgres.routes (method, path, handler) VALUES ('GET', '/broken', 'SELEC 1 AS body')});
like($err, qr/syntax error/, 'a route whose handler does not parse is still refused');

# The 1.0 database updates in place, on the new version, through every script.
$new->safe_psql('legacy', 'ALTER EXTENSION webgres UPDATE');
is($new->safe_psql('legacy', q{SELECT extversion = (SELECT default_version FROM pg_available_extensions
	WHERE name = 'webgres') FROM pg_extension WHERE extname = 'webgres'}), 't',
	'legacy: ALTER EXTENSION webgres UPDATE reaches the current version after pg_upgrade');
is($new->safe_psql('legacy', q{SELECT handler FROM webgres.routes WHERE path = '/legacy'}),
	q{SELECT 'old' AS body}, 'legacy: its route is kept');

$new->stop;
done_testing();
