# A static mount's cache_control column: the Cache-Control sent with every
# file of the mount, on 200 and on 304 alike, so that an application can
# have browsers revalidate on each load; none without it; control
# characters refused when the row is saved.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $dir = PostgreSQL::Test::Utils::tempdir();
for my $d ("$dir/fresh", "$dir/plain")
{
	mkdir $d or die;
	open my $f, '>', "$d/app.js" or die;
	print $f "start();\n";
	close $f;
}

my $node = WebgresTest->new_node('cache', workers => 1);
my $port = $node->{webgres_port};
$node->safe_psql('postgres', qq{
	INSERT INTO webgres.static_mounts (prefix, directory, cache_control)
		VALUES ('/fresh', '$dir/fresh', 'no-cache');
	INSERT INTO webgres.static_mounts (prefix, directory)
		VALUES ('/plain', '$dir/plain');
});
my $res = WebgresTest::wait_for_status($port, '/fresh/app.js', 200);
is($res->{headers}{'cache-control'}, 'no-cache', 'a mount with cache_control sends it with a file');
is($res->{body}, "start();\n", 'and the file');
my $etag = $res->{headers}{etag};
ok(defined $etag, 'with an ETag');

$res = WebgresTest::http_get($port, '/fresh/app.js', headers => { 'If-None-Match' => $etag });
is($res->{status}, 304, 'revalidated: 304');
is($res->{headers}{'cache-control'}, 'no-cache', 'the 304 carries it too');

$res = WebgresTest::wait_for_status($port, '/plain/app.js', 200);
is($res->{status}, 200, 'a mount without cache_control serves its file');
is($res->{body}, "start();\n", '... the file');
ok(!exists $res->{headers}{'cache-control'}, '... with no Cache-Control');

$node->safe_psql('postgres', q{UPDATE webgres.static_mounts SET cache_control = 'max-age=60' WHERE prefix = '/fresh'});
my $deadline = time + 30;
do { $res = WebgresTest::http_get($port, '/fresh/app.js') }
  while (($res->{headers}{'cache-control'} // '') ne 'max-age=60' && time < $deadline && select(undef, undef, undef, 0.05) >= 0);
is($res->{headers}{'cache-control'}, 'max-age=60', 'a change reaches the workers without a reload');

my ($rc, $out, $err) = $node->psql('postgres',
	qq{UPDATE webgres.static_mounts SET cache_control = E'no-cache\\r\\nX-Injected: 1' WHERE prefix = '/fresh'});
isnt($rc, 0, 'a value with CR LF is refused');
like($err, qr/static_mounts_cache_control_check/, 'by the column\'s check');

$node->stop;
done_testing();
