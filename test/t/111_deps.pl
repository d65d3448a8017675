# scripts/deps.sh, which `make run`, `make test` and the image run first,
# must find everything it lists already installed here (the tests are
# running, so it is) and return at once without asking apt for anything.
# A package name dpkg never reports as installed (a virtual one) would make
# it run apt-get on every call, or fail without root.
use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use IPC::Run;
use Test::More;

my $top = $ENV{WEBGRES_SRC} // abs_path(dirname(__FILE__) . "/../..");
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ "$top/scripts/deps.sh" ], '>', \$out, '2>', \$err);
ok($ok, 'deps.sh succeeds when everything is installed') or diag($err);
is($out . $err, '', 'and neither installs nor asks for anything');

done_testing();
