# WebgresHarness: prove's harness (scripts/test.sh runs prove
# --harness=WebgresHarness) with one addition: after the run it writes
# one line per TAP file to $WEBGRES_TAP_SUMMARY, "passed FILE",
# "failed FILE" or "skipped FILE REASON" (a file that skipped all its
# tests), so that the closing line can count each file once, whatever
# prove's output looks like (-v, -j).
package WebgresHarness;

use strict;
use warnings;
use parent 'TAP::Harness';

# Runs the files as TAP::Harness does, then writes the summary.
sub runtests
{
	my ($self, @tests) = @_;
	my $aggregator = $self->SUPER::runtests(@tests);
	my $path = $ENV{WEBGRES_TAP_SUMMARY} or return $aggregator;
	open my $fh, '>', $path or die "cannot write $path: $!";
	for my $file ($aggregator->descriptions)
	{
		my ($parser) = $aggregator->parsers($file);
		my $state =
		    $parser->has_problems ? 'failed'
		  : defined $parser->skip_all ? 'skipped'
		  : 'passed';
		my $reason = $state eq 'skipped' ? ' ' . ($parser->skip_all || 'no reason given') : '';
		$reason =~ s/\s+/ /g;
		print $fh "$state $file$reason\n";
	}
	close $fh or die "cannot write $path: $!";
	return $aggregator;
}

1;
