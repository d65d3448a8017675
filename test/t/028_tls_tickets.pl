# TLS session tickets shared by the workers: a session made on one worker
# resumes on every other (SO_REUSEPORT spreads a client's connections), on
# TLS 1.2 and 1.3; a resumed TLS 1.3 connection brings a new ticket; the
# key rotates on webgres.tls_ticket_rotation, and a ticket of the previous
# key still resumes.  openssl s_client saves and
# offers the sessions (-sess_out, -sess_in) and says "Reused" when the
# server took one; each request asks the worker's PID, to see which
# worker answered.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use WebgresTest;
use TlsTest;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $certs = TlsTest::make_ca($dir);
my ($cert, $key) = TlsTest::make_leaf($certs, 'first');

my $tport = PostgreSQL::Test::Cluster::get_free_port();
my $node = WebgresTest->new_node('tls_tickets', workers => 4, conf => <<"EOC");
webgres.tls_listen = '127.0.0.1:$tport'
webgres.tls_cert_file = '$dir/first.chain.pem'
webgres.tls_key_file = '$dir/first.key'
EOC
my $port = $node->{webgres_port};
# Inline: the pid must be a worker's (in mode auto a run past the budget under load moves it to executors).
$node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/pid', $$SELECT 'pid ' || pg_backend_pid() AS body$$, 'inline')});
WebgresTest::wait_for_status($port, '/pid', 200);
ok(WebgresTest::wait_for_listen($tport), 'the TLS listener accepts connections');

# One connection: a request for /pid, then the server's close; saves the
# session to $out, offers the one in $in.  Returns (reused, pid, text).
sub connect_once
{
	my ($version, %o) = @_;
	my ($stdout, $stderr) = ('', '');
	my @args = ('openssl', 's_client', '-connect', "127.0.0.1:$tport", "-$version", '-ign_eof',
		'-servername', 'localhost', '-CAfile', $certs->{ca});
	push @args, '-sess_out', $o{out} if $o{out};
	push @args, '-sess_in', $o{in} if $o{in};
	IPC::Run::run(\@args, '<', \"GET /pid HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		'>', \$stdout, '2>', \$stderr, IPC::Run::timeout(30));
	my $text = $stdout . $stderr;
	my ($pid) = $text =~ /pid (\d+)/;
	return ($text =~ /^Reused, TLSv1\.[23]/m ? 1 : 0, $pid // 0, $text);
}

# The ticket's key name (its first 16 bytes, in hex) and lifetime hint in a saved session.
sub ticket_of
{
	my ($file) = @_;
	return ('', 0) unless -s $file;
	my $text = TlsTest::openssl('sess_id', '-in', $file, '-noout', '-text');
	my ($hint) = $text =~ /lifetime hint: (\d+)/;
	my ($line) = $text =~ /TLS session ticket:\s*\n\s*0000 - ([0-9a-f -]+)/;
	my $name = join '', grep { /^[0-9a-f]{2}$/ } split /[\s-]+/, ($line // '');
	return (substr($name, 0, 32), $hint // 0);
}

for my $v ([ 'tls1_2', 'TLS 1.2', 30 ], [ 'tls1_3', 'TLS 1.3', 20 ])
{
	my ($version, $name, $n) = @$v;
	my $file = "$dir/$version.sess";
	my ($reused, $pid, $text) = connect_once($version, out => $file);
	ok($pid && !$reused, "$name: a first, full handshake answered") or diag($text);
	my ($ticket, $hint) = ticket_of($file);
	is(length($ticket), 32, "$name: the server issued a ticket");
	is($hint, 3600, "$name: valid for webgres.tls_ticket_rotation (1h by default)");
	my %pids = ($pid => 1);
	my $count = 0;
	for (1 .. $n)
	{
		my ($r, $p, $t) = connect_once($version, in => $file);
		$count += $r;
		$pids{$p}++ if $r;
		diag($t) if !$r && $count == $_ - 1;
	}
	is($count, $n, "$name: each of $n later connections resumed the session");
	cmp_ok(scalar(keys %pids), '>=', 3, "$name: on " . scalar(keys %pids) . ' of the 4 workers');
}

# ---- TLS 1.3: each resumed connection brings a new ticket ----
# A client uses a ticket once; one that reconnects on the ticket its last
# connection brought must resume every time, not every other time.
{
	my $in = "$dir/chain0.sess";
	connect_once('tls1_3', out => $in);
	my $chained = 0;
	for my $hop (1 .. 5)
	{
		my $out = "$dir/chain$hop.sess";
		my ($r, $p, $t) = connect_once('tls1_3', in => $in, out => $out);
		my ($ticket) = ticket_of($out);
		if (!$r || length($ticket) != 32)
		{
			diag("hop $hop: " . ($r ? 'resumed, but no new ticket' : 'not resumed') . "\n$t");
			last;
		}
		$chained++;
		$in = $out;
	}
	is($chained, 5, 'TLS 1.3: five connections in a row each resumed on the ticket the one before brought');
}

# ---- rotation: a new key, and the previous one still decrypts ----
ok(WebgresTest::reload_and_wait($node, "webgres.tls_ticket_rotation = '3s'"),
	'webgres.tls_ticket_rotation = 3s taken');
{
	# New sessions until their ticket names another key: the one before
	# the change is a ticket of the previous key, at most a moment old.
	my $last = "$dir/last.sess";
	my $next = "$dir/next.sess";
	connect_once('tls1_2', out => $last);
	my ($first_key, $h) = ticket_of($last);
	is($h, 3, 'a new context issues tickets valid for 3 s');
	my $rotated = 0;
	my $deadline = time + 30;
	while (time < $deadline)
	{
		connect_once('tls1_2', out => $next);
		my ($k) = ticket_of($next);
		if ($k ne (ticket_of($last))[0]) { $rotated = 1; last; }
		rename($next, $last);
	}
	ok($rotated, 'the ticket key changed');
	my ($r, $p, $t) = connect_once('tls1_2', in => $last);
	ok($r, 'a ticket of the previous key resumes after the rotation') or diag($t);
	isnt($first_key, (ticket_of($next))[0], 'keys differ across a rotation');
}

$node->stop;
done_testing();
