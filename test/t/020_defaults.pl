# Defaults that decide semantics: with nothing configured, requests that
# only read do not share a transaction (webgres.share_read_transactions is
# opt-in), so each request's now() is its own, as a separate round trip's
# would be (TechEmpower's general requirement 7).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('defaults', workers => 1);
my $port = $node->{webgres_port};

is($node->safe_psql('postgres', 'SHOW webgres.share_read_transactions'), 'off',
	'webgres.share_read_transactions is off by default');

$node->safe_psql('postgres', 'CREATE TABLE gate (g int)');
WebgresTest::add_route($node, 'GET', '/hold', q{SELECT pg_sleep(0)::text || count(*) AS body FROM gate});
WebgresTest::add_route($node, 'GET', '/xact', q{SELECT now()::text AS body});
# /hold must keep the only worker busy: never moved to an executor.
$node->safe_psql('postgres', "UPDATE webgres.routes SET mode = 'inline' WHERE path = '/hold'");
WebgresTest::wait_for_status($port, '/xact', 200);
# Each handler once alone: a route shares only once its plan is known.
WebgresTest::http_get($port, $_) for qw(/xact /xact /hold);

# Three requests that reach the only worker while it is busy with /hold, so
# that it takes them in one pass of its loop: the case that shares when
# sharing is on (t/012_shared_transactions.pl).
sub together { return WebgresTest::in_one_pass($node, $port, @_); }

my @r = together('/xact', '/xact', '/xact');
is(join(',', map { $_->{status} } @r), '200,200,200', 'requests taken in one pass are answered');
my %seen = map { $_->{body} => 1 } @r;
is(scalar(keys %seen), 3, 'each has a transaction of its own: three different now()')
  or diag(join("\n", map { $_->{body} } @r));

# The same requests, pipelined on one connection, arrive in one read.
my $batch = join '', map { "GET /xact HTTP/1.1\r\nHost: x\r\n\r\n" } 1 .. 8;
my ($list) = WebgresTest::raw($port, $batch, n => 8);
is(join(',', map { $_->{status} } @$list), join(',', (200) x 8), 'eight pipelined requests answered');
%seen = map { $_->{body} => 1 } @$list;
is(scalar(keys %seen), 8, 'eight pipelined requests: eight transactions');

$node->stop;
done_testing();
