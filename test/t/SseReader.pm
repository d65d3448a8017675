# SseReader: event-stream subscribers for TAP tests that read large bursts
# off real sockets without keeping them: each subscriber de-chunks what it
# reads as it goes (HTTP/1.1) and counts the events whose data starts with
# a number, checking that the numbers come in order, each exactly once.
#
#   my $c = SseReader::open_h1($port, '/ch/burst');     # after its head
#   SseReader::read_until([$c, ...], sub { $c->{n} >= 1000 }, 60);
#   is($c->{n}, 1000); is($c->{bad}, 0);
package SseReader;

use strict;
use warnings;

use IO::Select;
use Socket;
use Time::HiRes qw(time);
use WebgresTest;

# Opens a stream on HTTP/1.1 and reads its head; the subscriber is then
# listening (the head goes out after the LISTEN committed).  rcvbuf sets a
# small receive buffer for a client that will not read.
sub open_h1
{
	my ($port, $path, %opts) = @_;
	my $s = WebgresTest::connect_to($port);
	setsockopt($s, SOL_SOCKET, SO_RCVBUF, $opts{rcvbuf}) if $opts{rcvbuf};
	print $s "GET $path HTTP/1.1\r\nHost: x\r\n"
	  . join('', map { "$_: $opts{headers}{$_}\r\n" } sort keys %{ $opts{headers} || {} })
	  . "\r\n";
	my $c = { sock => $s, buf => '', body => '', head => undef, n => 0, next => undef,
		bad => 0, eof => 0, ended => 0, bytes => 0, ids => [], keep_ids => $opts{keep_ids} };
	read_until([$c], sub { defined $c->{head} }, 30) unless $opts{no_wait};
	return $c;
}

# Reads what the socket holds and parses it.  Returns false at end of file.
sub pump
{
	my ($c) = @_;
	my $got = sysread($c->{sock}, my $chunk, 262144);
	if (!$got)
	{
		$c->{eof} = 1;
		return 0;
	}
	$c->{bytes} += $got;
	$c->{buf} .= $chunk;
	if (!defined $c->{head})
	{
		return 1 unless $c->{buf} =~ s/^(.*?\r\n\r\n)//s;
		$c->{head} = $1;
	}
	# De-chunk whole chunks.
	my $pos = 0;
	while (1)
	{
		my $crlf = index($c->{buf}, "\r\n", $pos);
		last if $crlf < 0;
		my $len = hex(substr($c->{buf}, $pos, $crlf - $pos));
		last if length($c->{buf}) < $crlf + 2 + $len + 2;
		$c->{body} .= substr($c->{buf}, $crlf + 2, $len);
		$c->{ended} = 1 if $len == 0;
		$pos = $crlf + 4 + $len;
	}
	substr($c->{buf}, 0, $pos) = '';
	events($c);
	return 1;
}

# Counts the complete events in {body} and forgets them.
sub events
{
	my ($c) = @_;
	my $p = 0;
	while ((my $e = index($c->{body}, "\n\n", $p)) >= 0)
	{
		my $block = substr($c->{body}, $p, $e - $p);
		$p = $e + 2;
		if (substr($block, 0, 1) eq ':')        # a heartbeat, or a note
		{
			$c->{lost}++ if $block =~ /^: webgres lost notifications/;
			next;
		}
		my ($id) = $block =~ /^id: (.*)$/m;
		push @{ $c->{ids} }, $id if $c->{keep_ids} && defined $id;
		if ($block =~ /^data: (\d+)/m)
		{
			$c->{bad}++ if defined $c->{next} && $1 != $c->{next};
			$c->{first} //= $1;
			$c->{next} = $1 + 1;
			$c->{n}++;
		}
		else
		{
			$c->{other}++;
		}
	}
	substr($c->{body}, 0, $p) = '';
}

# Reads every subscriber until $done->() is true, all have ended, or
# $seconds pass; $each->() runs between reads (a sampler).  Returns $done->().
sub read_until
{
	my ($subs, $done, $seconds, $each) = @_;
	my $deadline = time + ($seconds // 60);
	my $sel = IO::Select->new(map { $_->{sock} } grep { !$_->{eof} } @$subs);
	my %by = map { fileno($_->{sock}) => $_ } @$subs;
	while (!$done->() && $sel->count && time < $deadline)
	{
		$each->() if $each;
		for my $fh ($sel->can_read(0.2))
		{
			$sel->remove($fh) unless pump($by{ fileno($fh) });
		}
	}
	return $done->();
}

1;
