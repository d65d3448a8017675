# WebgresHarness: prove's harness (scripts/test.sh runs prove
# --harness=WebgresHarness) with three additions:
#
# - After the run it writes one line per TAP file to $WEBGRES_TAP_SUMMARY,
#   "passed FILE", "failed FILE" or "skipped FILE REASON" (a file that
#   skipped all its tests), so that the closing line can count each file
#   once, whatever prove's output looks like (-v, -j).
# - It prints how long each file took, the slowest first, and keeps the
#   times in $WEBGRES_TAP_TIMES ("SECONDS FILE" a line) when set.
# - With prove -j N (scripts/test.sh: WEBGRES_TAP_JOBS, default 3) the
#   files run N at a time, the slowest of the last run's times first (new
#   files before them), so that no long file starts last; then the files of
#   @SERIAL run one after another with nothing else running.
package WebgresHarness;

use strict;
use warnings;
use parent 'TAP::Harness';

# Files that cannot share the machine with other files, with the reason:
# they run after the others, alone.  A file belongs here when what it
# asserts depends on the time its requests take (a rate, an upper bound on
# a wait) or when it loads the machine on purpose.  Everything else waits
# on conditions and takes its ports and directories from
# PostgreSQL::Test::Cluster, so it runs beside other files.
our @SERIAL = (
	[ 't/030_auth.pl' =>
		  'event streams must end within 2 s of a token expiring, and 4 s of a role or key change' ],
	[ 't/035_auth_secret.pl' =>
		  'a stream verified with the old secret must end within 3 s of the file changing' ],
	[ 't/036_auth_refusals.pl' =>
		  'five requests over a busy executor must be answered within 5 s' ],
	[ 't/040_rate_limits.pl' =>
		  'a bucket of rate 1/s must be served five requests at once and still be empty for the sixth' ],
);

# The reason a file must run alone, or undef.
sub serial_reason
{
	my ($file) = @_;
	for my $s (@SERIAL)
	{
		return $s->[1] if $s->[0] eq $file;
	}
	return undef;
}

# The file name of a test as runtests() takes it (a name or [name, alias]).
sub _name { return ref $_[0] ? $_[0]->[0] : $_[0]; }

# The times of the last run ($WEBGRES_TAP_TIMES), file => seconds.
sub _last_times
{
	my %t;
	my $path = $ENV{WEBGRES_TAP_TIMES};
	return %t unless $path && -r $path;
	open my $fh, '<', $path or return %t;
	while (<$fh>)
	{
		$t{$2} = $1 if /^([0-9.]+) (\S+)$/;
	}
	close $fh;
	return %t;
}

# With jobs > 1: the parallel files, longest first, then the serial ones
# in sequence (TAP::Parser::Scheduler runs a 'seq' list's parts one after
# another, and a 'par' part wholly before the next starts).
sub make_scheduler
{
	my ($self, @tests) = @_;
	if (($self->jobs // 1) > 1 && !defined $self->rules)
	{
		my %last = _last_times();
		my @names = map { _name($_) } @tests;
		my @serial = grep { defined serial_reason($_) } @names;
		my @par = grep { !defined serial_reason($_) } @names;
		# Stable: files with the same time (or none) keep their order.
		my $i = 0;
		my %pos = map { $_ => $i++ } @par;
		@par = sort {
			($last{$b} // 1e9) <=> ($last{$a} // 1e9) or $pos{$a} <=> $pos{$b}
		} @par;
		my @parts;
		push @parts, { par => [ map { quotemeta_glob($_) } @par ] } if @par;
		push @parts, { seq => [ map { quotemeta_glob($_) } @serial ] } if @serial;
		$self->rules({ seq => \@parts });
	}
	return $self->SUPER::make_scheduler(@tests);
}

# A file name as a pattern of the scheduler's rules that matches only it.
sub quotemeta_glob
{
	my ($name) = @_;
	$name =~ s/([\\*?{},])/\\$1/g;
	return $name;
}

# Runs the files as TAP::Harness does, then writes the summary, the
# times, and prints the slowest files.
sub runtests
{
	my ($self, @tests) = @_;
	my $aggregator = $self->SUPER::runtests(@tests);
	my %took;
	for my $file ($aggregator->descriptions)
	{
		my ($parser) = $aggregator->parsers($file);
		$took{$file} = ($parser->end_time // 0) - ($parser->start_time // 0)
		  if defined $parser->start_time;
	}
	my @slow = sort { $took{$b} <=> $took{$a} } keys %took;
	if (@slow)
	{
		my $n = @slow < 15 ? @slow : 15;
		my $sum = 0;
		$sum += $_ for values %took;
		printf "TAP files by time (%d slowest of %d, %.0f s in all%s):\n", $n,
		  scalar @slow, $sum, ($self->jobs // 1) > 1 ? ', ' . $self->jobs . ' at a time' : '';
		printf "  %6.1f s  %s%s\n", $took{$_}, $_,
		  (defined serial_reason($_) && ($self->jobs // 1) > 1 ? ' (alone)' : '')
		  for @slow[ 0 .. $n - 1 ];
	}
	if (my $path = $ENV{WEBGRES_TAP_TIMES})
	{
		# Files not run this time keep their last time.
		my %all = (_last_times(), %took);
		if (open my $fh, '>', $path)
		{
			printf $fh "%.1f %s\n", $all{$_}, $_ for sort keys %all;
			close $fh;
		}
	}
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
