# The README's Authentication example, as written there: its settings and
# its SQL are taken from README.md and run, then its curl calls are made
# and answered as the README shows.
use strict;
use warnings;
use FindBin;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

# The example's login route checks passwords with pgcrypto.
plan skip_all => 'pgcrypto is not in this installation (docs/versions.md)'
  unless WebgresTest::have_module('pgcrypto');

my $readme = slurp_file("$FindBin::RealBin/../../README.md");
my ($section) = $readme =~ /^## Authentication\n(.*?)^## /ms or die "no Authentication section";
my @blocks = $section =~ /^```(\w*)\n(.*?)^```/gms;
my ($conf, $sql, $session);
while (my ($lang, $text) = splice @blocks, 0, 2)
{
	if ($lang eq 'sql') { $sql = $text; }
	elsif ($text =~ /^webgres\./m) { $conf = $text; }
	elsif ($text =~ /^\$ /m) { $session = $text; }
}
ok($conf && $sql && $session, 'the README has settings, SQL and a session');

my $node = WebgresTest->new_node('readme_auth', workers => 1, conf => $conf);
my $port = $node->{webgres_port};
$node->safe_psql('postgres', $sql);

sub call
{
	my ($method, $path, %o) = @_;
	return WebgresTest::request($port, $method, $path, %o);
}

# The session's expected outputs, in order.
my @expected = grep { !/^\$ / && length } split /\n/, $session;

my $alice = call('POST', '/login', body => '{"email": "alice@example.com", "password": "wonderland"}');
is($alice->{status}, 200, 'alice logs in');
like($alice->{headers}{'set-cookie'}, qr/^access_token=\Q$alice->{body}\E; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
	'the token comes in the body and in the cookie');
my $bob = call('POST', '/login', body => '{"email": "bob@example.com", "password": "builder"}')->{body};

is(call('GET', '/todos', headers => { Authorization => "Bearer $alice->{body}" })->{body}, $expected[0], "alice's todos");
is(call('GET', '/todos', headers => { Authorization => "Bearer $bob" })->{body}, $expected[1], "bob's todos");
is(call('GET', '/todos', headers => { Cookie => "access_token=$bob" })->{body}, $expected[2], "bob's, by cookie");
my $none = call('GET', '/todos');
is($none->{status_line}, $expected[3], 'no token: 401');
is(lc($expected[4]), 'www-authenticate: ' . lc($none->{headers}{'www-authenticate'}), 'with the challenge shown');
is(call('GET', '/whoami')->{body}, $expected[5], 'whoami without a token: the anon role');
is(call('POST', '/login', body => '{"email": "bob@example.com", "password": "wrong"}')->{status}, 404,
	'a wrong password gets no token');

$node->stop;
done_testing();
