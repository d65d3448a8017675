# ChaosTest: helpers for the tests that break things under a running
# server (t/122, t/13x): waits on conditions with generous deadlines, and
# what a process holds (anonymous memory, descriptors).
package ChaosTest;

use strict;
use warnings;

use Time::HiRes qw(time sleep);

# Polls $cond every 50 ms until it is true or $seconds (60) pass; returns
# its last value.  The deadline is for a loaded machine, not a measure.
sub wait_for
{
	my ($cond, $seconds) = @_;
	my $deadline = time + ($seconds // 60);
	while (1)
	{
		my $v = $cond->();
		return $v if $v || time >= $deadline;
		sleep 0.05;
	}
}

# A field of /proc/PID/status in kB (RssAnon, VmRSS), 0 if the process is gone.
sub status_kb
{
	my ($pid, $field) = @_;
	open my $f, '<', "/proc/$pid/status" or return 0;
	my ($kb) = join('', <$f>) =~ /^\Q$field\E:\s+(\d+)/m;
	return $kb // 0;
}

# How many descriptors the process has open.
sub fd_count
{
	my ($pid) = @_;
	opendir my $d, "/proc/$pid/fd" or return -1;
	my @fds = grep { !/^\./ } readdir $d;
	return scalar @fds;
}

1;
