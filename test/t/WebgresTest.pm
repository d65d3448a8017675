# WebgresTest: helpers for TAP tests of webgres over real sockets.
#
#   my $node = WebgresTest->new_node('main', workers => 2);
#   my $res = WebgresTest::http_get($node->{webgres_port}, '/path');
#   is($res->{status}, 200);
#
# Every wait is bounded; nothing here loops forever.
package WebgresTest;

use strict;
use warnings;

use Fcntl ();
use IO::Socket::INET;
use IO::Select;
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our $TIMEOUT = 30;

# ---- initdb once per run ----
# PostgreSQL::Test::Cluster of Postgres 17 on copies a data directory that
# initdb made once ($INITDB_TEMPLATE) instead of running initdb for each
# node; 15's, which the tests use on every version, does not.  With
# $WEBGRES_INITDB_TEMPLATE set (scripts/test.sh: a path per version
# tested), init() does the same here: the first node made anywhere in the
# run creates the template with the very initdb command init() runs (under
# a lock, so that files running at once make it once), and each node
# without initdb options (extra) or an installation (install_path) of its
# own starts from a copy of it.  The rest of init() (pg_regress
# --config-auth, the settings it appends) is unchanged.
if (my $template = $ENV{WEBGRES_INITDB_TEMPLATE})
{
	no warnings 'redefine';
	my $init = \&PostgreSQL::Test::Cluster::init;
	*PostgreSQL::Test::Cluster::init = sub {
		my ($self, %params) = @_;
		return $init->(@_)
		  if $params{force_initdb} || defined $params{extra} || $self->{_install_path};
		my $run = \&PostgreSQL::Test::Utils::system_or_bail;
		no warnings 'redefine';
		local *PostgreSQL::Test::Utils::system_or_bail = sub {
			return $run->(@_) unless $_[0] eq 'initdb' && $_[1] eq '-D';
			my (undef, undef, $pgdata, @args) = @_;
			make_initdb_template($template, $run, @args);
			PostgreSQL::Test::Utils::system_log('cp', '-RPp', $template, $pgdata) == 0
			  or die "could not copy the initdb template $template to $pgdata";
			return;
		};
		return $init->(@_);
	};
}

# Runs initdb into $template unless it is there: $run is init()'s own
# system_or_bail, @args the options init() gives initdb.
sub make_initdb_template
{
	my ($template, $run, @args) = @_;
	return if -d $template;
	open my $lock, '>>', "$template.lock" or die "could not open $template.lock: $!";
	flock($lock, Fcntl::LOCK_EX()) or die "could not lock $template.lock: $!";
	# Another file may have made it while this one waited.
	unless (-d $template)
	{
		my $tmp = "$template.tmp$$";
		$run->('initdb', '-D', $tmp, @args);
		rename($tmp, $template) or die "could not rename $tmp to $template: $!";
	}
	close $lock;
	return;
}

# A started node with webgres preloaded and the extension created in
# database "postgres"; returns the node with {webgres_port} set.
sub new_node
{
	my ($class, $name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	$node->init(%{ $opts{init} || {} });
	my $workers = $opts{workers} // 1;
	my $conf = "shared_preload_libraries = 'webgres'\n"
	  . "webgres.listen = '127.0.0.1:$port'\n"
	  . "webgres.workers = $workers\n"
	  . "max_worker_processes = 32\n"
	  . ($opts{conf} // '');
	$node->append_conf('postgresql.conf', $conf);
	$node->{webgres_port} = $port;
	unless ($opts{no_start})
	{
		$node->start;
		$node->safe_psql('postgres', 'CREATE EXTENSION webgres')
		  unless $opts{no_extension};
		wait_for_listen($port) or die "webgres did not start listening on $port";
	}
	return $node;
}

# Waits until something accepts connections on the port.
sub wait_for_listen
{
	my ($port, $timeout) = @_;
	my $deadline = time + ($timeout // $TIMEOUT);
	while (time < $deadline)
	{
		my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Timeout => 1);
		if ($s) { close $s; return 1; }
		sleep 0.05;
	}
	return 0;
}

sub connect_to
{
	my ($port) = @_;
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp',
		Timeout => 5)
	  or die "connect to 127.0.0.1:$port: $!";
	$s->autoflush(1);
	binmode $s;
	return $s;
}

# The number of the server's TCP connections on $port whose received bytes
# wait in the kernel, not yet read by the server (accepted or not).  A
# client's write on loopback can reach the server's socket later than the
# write returns (the kernel may hand it to ksoftirqd on a busy machine):
# a test that needs requests read together waits for this count.
sub unread_connections
{
	my ($port) = @_;
	my $hex = sprintf '%04X', $port;
	my $n = 0;
	for my $table ('/proc/net/tcp', '/proc/net/tcp6')
	{
		open my $fh, '<', $table or next;
		<$fh>;
		while (my $line = <$fh>)
		{
			my @f = split ' ', $line;
			# local address, remote, state (01: established), tx:rx queues
			my ($rx) = $f[4] =~ /:([0-9A-F]+)$/;
			$n++ if $f[1] =~ /:$hex$/ && $f[3] eq '01' && hex($rx) > 0;
		}
	}
	return $n;
}

# Sends one GET per path, each on its own connection, while the only
# worker is busy with /hold, so that it takes them all in its next pass of
# the loop; returns the responses in the order of @paths.  The node needs a
# table gate and a route GET /hold that reads it (and runs on the loop):
# /hold waits for a lock on gate that a session holds until every other
# request has reached the server's socket buffers, so no timing is
# involved.
sub in_one_pass
{
	my ($node, $port, @paths) = @_;
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
	my $hold = connect_to($port);
	print $hold "GET /hold HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	$node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND relation = 'gate'::regclass})
	  or die "/hold never waited for the gate";
	my @socks;
	for my $p (@paths)
	{
		my $s = connect_to($port);
		print $s "GET $p HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
		push @socks, $s;
	}
	# A late request would be read in a pass of its own.
	poll_until(sub { unread_connections($port) >= @paths })
	  or die "the requests did not all reach the server";
	$gate->query_safe('COMMIT');
	$gate->quit;
	my ($held) = read_responses($hold, 1, 10);
	die "/hold did not answer" unless @$held && $held->[0]{status} == 200;
	my @res;
	for my $s (@socks)
	{
		my ($r) = read_responses($s, 1, 10);
		push @res, $r->[0] // { status => 0, body => '' };
		close $s;
	}
	close $hold;
	return @res;
}

# Reads from the socket until $n complete responses are parsed, the peer
# closes, or the timeout passes.  Returns (list of responses, closed flag,
# the bytes left over).  With $until_close, reading goes on after the last
# response until the peer closes (or the timeout): whatever arrived after
# it is what is left over, so a test sees every byte the server sent.
sub read_responses
{
	my ($sock, $n, $timeout, $head_only, $until_close) = @_;
	my $buf = '';
	my @res;
	my $closed = 0;
	my $deadline = time + ($timeout // $TIMEOUT);
	my $sel = IO::Select->new($sock);
	while (@res < $n || ($until_close && !$closed))
	{
		while (@res < $n)
		{
			my $r = parse_response(\$buf, $head_only);
			last unless $r;
			push @res, $r;
		}
		last if @res >= $n && !$until_close;
		my $left = $deadline - time;
		last if $left <= 0;
		next unless $sel->can_read($left > 0.5 ? 0.5 : $left);
		my $got = sysread($sock, my $chunk, 65536);
		if (!$got) { $closed = 1; last; }
		$buf .= $chunk;
	}
	if ($closed)
	{
		my $r;
		push @res, $r while @res < $n && ($r = parse_response(\$buf, $head_only, 1));
	}
	return (\@res, $closed, $buf);
}

# Parses one response off the front of $$bufref; undef if incomplete.  A
# body is delimited as RFC 9112 section 6.3 says: none after a 1xx, 204 or
# 304 head (or a HEAD request's), else Transfer-Encoding: chunked, else
# Content-Length, else everything up to the close ($closed says the peer
# has closed, so what is buffered is all there is).  {wire} holds the
# response's bytes as they came, head and body.
sub parse_response
{
	my ($bufref, $head_only, $closed) = @_;
	my $end = index($$bufref, "\r\n\r\n");
	return undef if $end < 0;
	my $head = substr($$bufref, 0, $end);
	my @lines = split /\r\n/, $head;
	my $status_line = shift @lines;
	my ($status) = $status_line =~ m{^HTTP/1\.[01] (\d{3})} or die "bad status line: $status_line";
	my %h;
	my @raw;
	for my $l (@lines)
	{
		my ($k, $v) = $l =~ /^([^:]+):\s*(.*)$/ or next;
		push @raw, [ $k, $v ];
		$h{ lc $k } = exists $h{ lc $k } ? "$h{lc $k}, $v" : $v;
	}
	my $len = $h{'content-length'};
	my $body = '';
	my $consumed = $end + 4;
	if ($head_only || $status == 204 || $status == 304 || $status < 200) { }
	elsif (($h{'transfer-encoding'} // '') =~ /chunked/i)
	{
		my $pos = $consumed;
		while (1)
		{
			my $nl = index($$bufref, "\r\n", $pos);
			return undef if $nl < 0;
			my $size = hex(substr($$bufref, $pos, $nl - $pos));
			return undef if length($$bufref) < $nl + 2 + $size + 2;
			$body .= substr($$bufref, $nl + 2, $size);
			$pos = $nl + 2 + $size + 2;
			last if $size == 0;
		}
		$consumed = $pos;
	}
	elsif (defined $len)
	{
		return undef if length($$bufref) < $consumed + $len;
		$body = substr($$bufref, $consumed, $len);
		$consumed += $len;
	}
	else
	{
		return undef unless $closed;
		$body = substr($$bufref, $consumed);
		$consumed = length($$bufref);
	}
	my $wire = substr($$bufref, 0, $consumed, '');
	return { status => $status + 0, status_line => $status_line, headers => \%h,
		raw_headers => \@raw, body => $body, wire => $wire };
}

# Sends raw bytes on a new connection and reads up to $n responses.  With
# until_close (for requests that ask the server to close), reads on until
# the server closes: {after} of the last response holds any bytes sent
# after it, and {closed} says whether the server closed.
sub raw
{
	my ($port, $bytes, %opts) = @_;
	my $s = connect_to($port);
	print $s $bytes;
	my ($res, $closed, $rest) = read_responses($s, $opts{n} // 1, $opts{timeout}, $opts{head_only},
		$opts{until_close});
	close $s;
	if ($opts{until_close} && @$res)
	{
		$res->[-1]{after} = $rest;
		$res->[-1]{closed} = $closed;
	}
	return wantarray ? ($res, $closed, $rest) : $res->[0];
}

# One request on a new connection with Connection: close; the response,
# with {after}: the bytes the server sent after it before closing (none,
# if its framing is right).
sub request
{
	my ($port, $method, $path, %opts) = @_;
	my $body = $opts{body} // '';
	my $hdrs = "Host: 127.0.0.1:$port\r\nConnection: close\r\n";
	for my $k (sort keys %{ $opts{headers} || {} }) { $hdrs .= "$k: $opts{headers}{$k}\r\n"; }
	$hdrs .= "Content-Length: " . length($body) . "\r\n" if length($body) || $method eq 'POST' || $method eq 'PUT';
	return raw($port, "$method $path HTTP/1.1\r\n$hdrs\r\n$body", head_only => $method eq 'HEAD',
		timeout => $opts{timeout}, until_close => 1);
}

sub http_get { my ($port, $path, %o) = @_; return request($port, 'GET', $path, %o); }

# Polls GET $path until it answers $status (or the timeout); returns the last response.
sub wait_for_status
{
	my ($port, $path, $status, $timeout) = @_;
	my $deadline = time + ($timeout // $TIMEOUT);
	my $res;
	while (time < $deadline)
	{
		$res = eval { http_get($port, $path, timeout => 2) };
		return $res if $res && $res->{status} == $status;
		sleep 0.05;
	}
	return $res;
}

# Polls GET $path until its body is $body (or the timeout); returns the last response.
sub wait_for_body
{
	my ($port, $path, $body, $timeout) = @_;
	my $deadline = time + ($timeout // $TIMEOUT);
	my $res;
	while (time < $deadline)
	{
		$res = eval { http_get($port, $path, timeout => 2) };
		return $res if $res && $res->{body} eq $body;
		sleep 0.05;
	}
	return $res;
}

# Polls $check->() until it returns true (or the timeout); returns its last value.
sub poll_until
{
	my ($check, $timeout) = @_;
	my $deadline = time + ($timeout // $TIMEOUT);
	my $v;
	while (1)
	{
		$v = $check->();
		return $v if $v || time >= $deadline;
		sleep 0.05;
	}
}

# Appends $conf to postgresql.conf, reloads, and returns once the HTTP
# workers have taken the reload (1 if seen, 0 at the timeout).  A reload
# is seen through webgres.max_body_size, lowered by one byte with it: a
# body of the old limit is then answered 413.
sub reload_and_wait
{
	my ($node, $conf, $timeout) = @_;
	my $port = $node->{webgres_port};
	my $limit = $node->safe_psql('postgres',
		q{SELECT setting::bigint * CASE unit WHEN 'kB' THEN 1024 WHEN 'MB' THEN 1048576 ELSE 1 END
		  FROM pg_settings WHERE name = 'webgres.max_body_size'});
	$node->append_conf('postgresql.conf', ($conf // '') . "\nwebgres.max_body_size = " . ($limit - 1) . "\n");
	$node->reload;
	my $body = 'x' x $limit;
	return poll_until(sub {
		my $r = eval { request($port, 'POST', '/', body => $body, timeout => 10) };
		$r && $r->{status} == 413;
	}, $timeout) ? 1 : 0;
}

# Appends $conf to postgresql.conf, reloads, and waits until EVERY HTTP
# worker has applied it (reload_and_wait sees only the worker its probe
# reached; the others may still serve with the old settings): each worker
# logs "webgres access log configured in process PID" at DEBUG1, which this
# turns on, as it applies a reload.  True if all did within the timeout.
sub reload_all_workers
{
	my ($node, $conf, $timeout) = @_;
	my @pids = worker_pids($node);
	my $offset = -s $node->logfile;
	$node->append_conf('postgresql.conf', ($conf // '') . "\nlog_min_messages = debug1\n");
	$node->reload;
	return poll_until(sub {
		my $log = PostgreSQL::Test::Utils::slurp_file($node->logfile, $offset);
		return !grep { $log !~ /webgres access log configured in process $_\b/ } @pids;
	}, $timeout) ? 1 : 0;
}

sub add_route
{
	my ($node, $method, $path, $handler, %opts) = @_;
	my $m = defined $method ? "'$method'" : 'NULL';
	my $prio = $opts{priority} // 0;
	my $db = $opts{dbname} // 'postgres';
	$handler =~ s/\$wg\$//g;
	return $node->safe_psql($db,
		"INSERT INTO webgres.routes (method, path, priority, handler) VALUES ($m, '$path', $prio, \$wg\$$handler\$wg\$) RETURNING id",
		%{ $opts{psql} || {} });
}

# TechEmpower's Postgres settings as scripts/tfb-postgres.conf (under the
# source tree $top) gives them, as [name, value] pairs written as SHOW
# prints them; max_connections is left out (each script sets its own), and
# so are pg_stat_statements' when this installation lacks the module.
sub tfb_settings
{
	my ($top) = @_;
	my @s;
	for (split /\n/, PostgreSQL::Test::Utils::slurp_file("$top/scripts/tfb-postgres.conf"))
	{
		my ($name, $value) = /^([a-z_.]+)\s*=\s*(\S+)\s*$/ or next;
		next if $name eq 'max_connections';
		next if $name =~ /^pg_stat_statements\./ && !have_module('pg_stat_statements');
		push @s, [ $name, $value ];
	}
	return @s;
}

# Whether the Postgres under test (the pg_config first in PATH) has the
# loadable module $name: the installations from wheels lack some contrib
# modules (docs/versions.md), and a test that needs one skips what it must.
sub have_module
{
	my ($name) = @_;
	chomp(my $dir = `pg_config --pkglibdir`);
	return -f "$dir/$name.so" ? 1 : 0;
}

# PIDs of the running HTTP workers.
sub worker_pids
{
	my ($node) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'webgres worker' ORDER BY pid");
	return grep { length } split /\n/, $out;
}

1;
