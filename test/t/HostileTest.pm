# HostileTest: shared set-up and checks for the hostile-input suite
# (t/1xx_hostile_*.pl).
#
#   my $h = HostileTest->new('name');
#   $h->refused("GET / HTTP/1.1\r\n\r\n", 400, 'no Host');
#   $h->finish;
#
# Every case sends raw bytes on a fresh connection and checks the status,
# that the connection is closed when it must be, and that the server still
# answers a normal request afterwards.  finish() checks that no worker
# exited or restarted and that no counting route ran unless it was meant to.
package HostileTest;

use strict;
use warnings;

use IO::Select;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use H2Test;
use WebgresTest;

sub new
{
	my ($class, $name, %opts) = @_;
	my $node = WebgresTest->new_node($name, workers => $opts{workers} // 1,
		conf => $opts{conf} // '');
	$node->safe_psql('postgres', q{CREATE TABLE hits (at timestamptz DEFAULT now(), what text)});
	my %routes = (
		'GET /hello' => q{SELECT 'hi' AS body},
		'* /count' => q{INSERT INTO hits (what) SELECT request.method || ' ' || request.path FROM request RETURNING 'counted' AS body},
		'* /echo/*rest' => q{SELECT jsonb_build_object('method', method, 'path', path, 'params', params,
			'query', query, 'headers', headers, 'body', convert_from(coalesce(body, ''), 'UTF8'))::text AS body FROM request},
		'GET /q' => q{SELECT request.query::text AS body FROM request},
		'GET /p/:x' => q{SELECT request.params->>'x' AS body FROM request},
		'POST /len' => q{SELECT length(request.body)::text AS body FROM request},
	);
	for my $k (sort keys %routes)
	{
		my ($m, $p) = split / /, $k;
		WebgresTest::add_route($node, $m eq '*' ? undef : $m, $p, $routes{$k});
	}
	WebgresTest::wait_for_status($node->{webgres_port}, '/hello', 200)->{status} == 200
	  or die 'routes did not load';
	my $self = bless {
		node => $node,
		port => $node->{webgres_port},
		pids => [ WebgresTest::worker_pids($node) ],
		log_offset => -s $node->logfile,
	}, $class;
	return $self;
}

sub port { $_[0]{port} }
sub node { $_[0]{node} }

# Sends $bytes on a new connection; returns (responses, closed, socket).
sub send_raw
{
	my ($self, $bytes, %o) = @_;
	my $s = WebgresTest::connect_to($self->{port});
	print $s $bytes;
	my ($res, $closed) = WebgresTest::read_responses($s, $o{n} // 1, $o{timeout} // 10);
	return ($res, $closed, $s);
}

# True if the peer closes the socket within $timeout seconds.
sub closes
{
	my ($s, $timeout) = @_;
	my $sel = IO::Select->new($s);
	my $deadline = time + ($timeout // 5);
	while (time < $deadline)
	{
		next unless $sel->can_read(0.2);
		my $n = sysread($s, my $buf, 65536);
		return 1 if !$n;
	}
	return 0;
}

# The request must be answered $status and, unless keep => 1, the
# connection closed; a normal request must work afterwards.
sub refused
{
	my ($self, $bytes, $status, $desc, %o) = @_;
	my ($res, $closed, $s) = $self->send_raw($bytes, %o);
	my $got = @$res ? $res->[0]{status} : 'no response';
	my $ok = is($got, $status, "$desc: $status");
	if (!$ok && @$res) { diag("body: $res->[0]{body}"); }
	if ($o{keep})
	{
		ok(!$closed, "$desc: connection kept");
	}
	else
	{
		ok($closed || closes($s), "$desc: connection closed");
	}
	close $s;
	$self->still_serving($desc) unless $o{no_after};
	return $res;
}

# The request must be answered $status (keep-alive expected).
sub answered
{
	my ($self, $bytes, $status, $desc, %o) = @_;
	my ($res, $closed, $s) = $self->send_raw($bytes, %o);
	close $s;
	my $got = @$res ? $res->[0]{status} : 'no response';
	is($got, $status, "$desc: $status");
	return $res->[0];
}

# The same screening over HTTP/2 (h2c; webgres.http2 must be on): one
# request, %$req as H2Test::literal_block takes it, on a new connection.
# $expect is the status it must be answered, or 'error' for a request h2o
# itself ends as malformed: 400 from its HPACK decoder, RST_STREAM, or
# GOAWAY for the connection.
# A normal request must work afterwards.  Returns the body.
sub h2_refused
{
	my ($self, $req, $expect, $desc) = @_;
	my $s = WebgresTest::connect_to($self->{port});
	my ($status, $body, $types, $ended) = H2Test::exchange($s, %$req);
	close $s;
	if ($expect eq 'error')
	{
		ok($ended || ($status // 0) == 400, "HTTP/2: $desc: ended as malformed ("
			  . ($ended // 'status ' . ($status // 'none')) . ')');
	}
	else
	{
		is($status // 'no status', $expect, "HTTP/2: $desc: $expect");
	}
	$self->still_serving("HTTP/2: $desc");
	return $body;
}

# A request over HTTP/2 that must be answered $status; returns the body.
sub h2_answered
{
	my ($self, $req, $status, $desc) = @_;
	my $s = WebgresTest::connect_to($self->{port});
	my ($got, $body) = H2Test::exchange($s, %$req);
	close $s;
	is($got // 'no status', $status, "HTTP/2: $desc: $status");
	return $body;
}

sub still_serving
{
	my ($self, $desc) = @_;
	my $r = eval { WebgresTest::http_get($self->{port}, '/hello', timeout => 10) };
	ok($r && $r->{status} == 200, "$desc: a normal request is served afterwards");
}

sub hits
{
	my ($self) = @_;
	return $self->{node}->safe_psql('postgres', 'SELECT count(*) FROM hits');
}

sub hit_list
{
	my ($self) = @_;
	return $self->{node}->safe_psql('postgres', 'SELECT what FROM hits ORDER BY at, what');
}

sub reset_hits
{
	my ($self) = @_;
	$self->{node}->safe_psql('postgres', 'TRUNCATE hits');
}

# No worker exited, crashed or was restarted; nothing 5xx'd for a client's fault.
sub finish
{
	my ($self) = @_;
	my $node = $self->{node};
	is_deeply([ WebgresTest::worker_pids($node) ], $self->{pids}, 'the same workers are running');
	my $log = slurp_file($node->logfile, $self->{log_offset});
	unlike($log, qr/terminated by signal|exited with exit code|PANIC|FATAL|was terminated|AddressSanitizer|runtime error/,
		'no worker exited or crashed');
	$node->stop;
	done_testing();
}

1;
