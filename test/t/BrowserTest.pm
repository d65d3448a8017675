# BrowserTest: runs a script in a page of a real headless Chromium
# (test/browser/browser.py: Debian's chromium and chromium-driver, driven
# with selenium; make test installs them: scripts/deps.sh the first two,
# scripts/pydeps.sh selenium into the environment $WEBGRES_PYTHON runs).
#
#   my $port = PostgreSQL::Test::Cluster::get_free_port();
#   my $result = BrowserTest::run(page_port => $port, page => $html,
#       script => 'arguments[arguments.length - 1](document.title);');
#
# The page is served from http://127.0.0.1:$port/index.html, so a test can
# give a webgres route that origin; the script ends by calling its last
# argument with a JSON-able result, which run() returns decoded.  A browser
# that cannot start, or a script that fails, fails the calling test.
package BrowserTest;

use strict;
use warnings;

use File::Temp qw(tempfile);
use IPC::Run;
use JSON::PP;
use Test::More;

# The tests' Python (scripts/test.sh sets it), with selenium.
our $PYTHON = $ENV{WEBGRES_PYTHON} // '/usr/bin/python3';

# What the browser harness needs that is not installed; empty when ready.
sub missing
{
	my @missing = grep { !-x $_ } ('/usr/bin/chromium', '/usr/bin/chromedriver', $PYTHON);
	push @missing, 'selenium (Python)'
	  unless IPC::Run::run([ $PYTHON, '-c', 'import selenium' ], '>', \my $o, '2>', \my $e);
	return @missing;
}

# Skips the whole file, naming what is missing, when the browser harness
# is not installed.  scripts/test.sh counts the file as skipped, and under
# make test (WEBGRES_REQUIRE_ALL, which installs all of it) fails the run.
sub require_browser
{
	my @missing = missing();
	plan skip_all => "the browser harness lacks @missing (make test installs it:"
	  . " WEBGRES_DEPS_TESTS=1 scripts/deps.sh, scripts/pydeps.sh)"
	  if @missing;
	return;
}

# Runs the script in the page; returns its result, or undef (the browser's
# error shown as a diagnostic).
sub run
{
	my (%o) = @_;
	my $top = $ENV{WEBGRES_SRC} or die "WEBGRES_SRC is not set";
	my ($pfh, $page) = tempfile('browser-page-XXXXXX', SUFFIX => '.html', TMPDIR => 1, UNLINK => 1);
	my ($sfh, $script) = tempfile('browser-script-XXXXXX', SUFFIX => '.js', TMPDIR => 1, UNLINK => 1);
	print $pfh $o{page};
	print $sfh $o{script};
	close $pfh;
	close $sfh;
	my ($out, $err) = ('', '');
	my $timeout = $o{timeout} // 60;
	my $ok = IPC::Run::run(
		[ $PYTHON, "$top/test/browser/browser.py", '--page-port', $o{page_port},
		  '--page', $page, '--script', $script, '--timeout', $timeout ],
		'>', \$out, '2>', \$err, IPC::Run::timeout($timeout * 3));
	diag("browser: $err") if length $err;
	return undef unless $ok;
	return JSON::PP->new->decode($out);
}

1;
