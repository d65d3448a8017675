# Event-stream routes: LISTEN/NOTIFY delivered as server-sent events, read
# as raw bytes off real sockets.  Covers the exact bytes of an event, that
# only the channels a handler returned are delivered, refusals answered
# normally, Last-Event-ID catch-up racing a writer with no gap and no
# duplicate, heartbeats, UNLISTEN after a client leaves, many subscribers,
# a client that does not read, and a clean end when the server stops.
use strict;
use warnings;
use IO::Select;
use IPC::Run;
use Time::HiRes qw(time sleep);
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('events', workers => 1,
	conf => "webgres.sse_heartbeat = 300\nwebgres.http2 = on\nwebgres.sse_buffer_limit = 262144\n"
	  . "log_min_messages = debug1\n");
my $port = $node->{webgres_port};

$node->safe_psql('postgres', q{
	CREATE TABLE rooms (id int PRIMARY KEY, name text UNIQUE, private bool DEFAULT false);
	INSERT INTO rooms VALUES (1, 'lobby', false), (2, 'secret', true);
	CREATE TABLE room_events (id bigserial PRIMARY KEY, room int, data text);
});
WebgresTest::add_route($node, 'GET', '/events/:room', q{
	SELECT ARRAY['room_' || r.id] AS channels,
	       CASE WHEN r.private THEN 403 END AS status,
	       CASE WHEN r.private THEN 'members only' END AS body,
	       e.id, e.data
	FROM request JOIN rooms r ON r.name = request.params->>'room'
	LEFT JOIN room_events e ON e.room = r.id
	     AND e.id > coalesce((request.headers->>'last-event-id')::bigint, 0)
	-- 5 ms per run: a writer commits during each phase, so that a
	-- notification the catch-up also holds is read live (and must be dropped).
	CROSS JOIN LATERAL (SELECT pg_sleep(0.005)) AS pause
	ORDER BY e.id});
WebgresTest::add_route($node, 'GET', '/plain/:ch', q{
	SELECT ARRAY[request.params->>'ch'] AS channels FROM request});
WebgresTest::wait_for_status($port, '/events/nosuch', 404);

# Opens a stream: sends the request and reads the response head.
sub sse_open
{
	my ($path, %hdr) = @_;
	my $s = WebgresTest::connect_to($port);
	my $h = join '', map { "$_: $hdr{$_}\r\n" } sort keys %hdr;
	print $s "GET $path HTTP/1.1\r\nHost: x\r\n$h\r\n";
	my $c = { sock => $s, raw => '', body => '', head => undef, eof => 0 };
	fill($c, sub { defined $c->{head} });
	return $c;
}

# Reads until $done->() is true, the peer closes, or 20 s pass.  Splits the
# head off and de-chunks the body into {body}; {raw} keeps the wire bytes.
sub fill
{
	my ($c, $done) = @_;
	my $deadline = time + 20;
	my $sel = IO::Select->new($c->{sock});
	while (!$done->() && !$c->{eof} && time < $deadline)
	{
		next unless $sel->can_read(0.2);
		my $n = sysread($c->{sock}, my $buf, 65536);
		if (!$n) { $c->{eof} = 1; last; }
		$c->{raw} .= $buf;
		$c->{pending} .= $buf;
		if (!defined $c->{head} && $c->{pending} =~ s/^(.*?\r\n\r\n)//s) { $c->{head} = $1; }
		while (defined $c->{head} && $c->{pending} =~ /^([0-9a-f]+)\r\n/)
		{
			my $len = hex $1;
			my $hl = length($1) + 2;
			last if length($c->{pending}) < $hl + $len + 2;
			$c->{body} .= substr($c->{pending}, $hl, $len);
			$c->{pending} = substr($c->{pending}, $hl + $len + 2);
			$c->{ended} = 1 if $len == 0;
		}
	}
	return $done->();
}

# The events in a body, heartbeats left out: list of {id, event, data}.
sub events_of
{
	my ($body) = @_;
	my @ev;
	for my $block (split /\n\n/, $body)
	{
		next if $block =~ /^:/ || $block eq '';
		my %e;
		my @data;
		for my $line (split /\n/, $block)
		{
			if ($line =~ /^data: ?(.*)$/) { push @data, $1; }
			elsif ($line =~ /^(id|event): ?(.*)$/) { $e{$1} = $2; }
		}
		$e{data} = join "\n", @data;
		push @ev, \%e;
	}
	return @ev;
}

sub wait_events
{
	my ($c, $n) = @_;
	fill($c, sub { my @e = events_of($c->{body}); @e >= $n && $c->{body} =~ /\n\n\z/ });
	return events_of($c->{body});
}

sub log_has
{
	my ($re, $timeout) = @_;
	my $deadline = time + ($timeout // 20);
	while (time < $deadline)
	{
		return 1 if slurp_file($node->logfile) =~ $re;
		sleep 0.1;
	}
	return 0;
}

# ---- headers and the exact bytes of an event ----
my $a = sse_open('/plain/alpha');
like($a->{head}, qr{^HTTP/1\.1 200 OK\r\n}, 'stream answers 200');
like($a->{head}, qr{\r\ncontent-type: text/event-stream\r\n}i, 'content type text/event-stream');
like($a->{head}, qr{\r\ncache-control: no-cache\r\n}i, 'cache-control no-cache');
like($a->{head}, qr{\r\ntransfer-encoding: chunked\r\n}i, 'chunked on HTTP/1.1');

# A handler with a body column (for its refusals) still streams with one content type.
my $lobby = sse_open('/events/lobby');
my @ct = $lobby->{head} =~ /^content-type: (.*?)\r$/mgi;
is_deeply(\@ct, ['text/event-stream'], 'exactly one content type, text/event-stream');
close $lobby->{sock};

$node->safe_psql('postgres', q{NOTIFY alpha, 'hello'});
fill($a, sub { $a->{raw} =~ /data: hello/ });
my ($wire) = $a->{raw} =~ /\r\n\r\n(?:3\r\n:\n\n\r\n)*(.*)\z/s;
is($wire, "d\r\ndata: hello\n\n\r\n", 'a NOTIFY arrives as exactly one chunk of SSE bytes');

# An envelope gives id and event; multi-line data becomes several data: lines.
$a->{body} = '';
$node->safe_psql('postgres',
	q{SELECT pg_notify('alpha', '{"id": 7, "event": "note", "data": "one\ntwo"}')});
fill($a, sub { $a->{body} =~ /two\n\n/ });
$a->{body} =~ s/^(:\n\n)+//;
is($a->{body}, "id: 7\nevent: note\ndata: one\ndata: two\n\n", 'envelope: id, event and two data lines');

# A payload that is not an envelope is the data, line breaks and all.
$a->{body} = '';
$node->safe_psql('postgres', q{SELECT pg_notify('alpha', E'x\r\ny\rz')});
fill($a, sub { $a->{body} =~ /z\n\n/ });
$a->{body} =~ s/^(:\n\n)+//;
is($a->{body}, "data: x\ndata: y\ndata: z\n\n", 'CR LF and CR split data lines');

# An envelope whose id holds a line break is sent as plain data.
$a->{body} = '';
$node->safe_psql('postgres', q{SELECT pg_notify('alpha', '{"id": "1\nid: 9", "data": "d"}')});
ok(fill($a, sub { $a->{body} =~ /\n\n\z/ && $a->{body} =~ /data/ }), 'the notification arrives');
unlike($a->{body}, qr/^id:/m, 'an id with a line break is never sent as an id');
like($a->{body}, qr/^data: \{"id": "1\\nid: 9", "data": "d"\}$/m, '... but as the payload, whole, as data');

# ---- only the channels the handler returned ----
# Another client follows beta, so the worker LISTENs on it too.
my $b = sse_open('/plain/beta');
$a->{body} = '';
$node->safe_psql('postgres', q{NOTIFY beta, 'not yours'; NOTIFY room_1, 'not yours either'});
$node->safe_psql('postgres', q{NOTIFY alpha, 'yours'});
my @ev = wait_events($a, 1);
is_deeply([ map { $_->{data} } @ev ], ['yours'], 'notifications on other channels are never delivered');
@ev = wait_events($b, 1);
is_deeply([ map { $_->{data} } @ev ], ['not yours'], '... though the worker listens on them for others');
close $b->{sock};

# ---- refusals are normal responses ----
my $r = WebgresTest::http_get($port, '/events/secret');
is($r->{status}, 403, 'handler status 403 answers a normal response');
is($r->{body}, 'members only', '... with the handler body');
$r = WebgresTest::http_get($port, '/events/nosuch');
is($r->{status}, 404, 'zero rows: 404');
my $ok = $node->psql('postgres', q{INSERT INTO webgres.routes (method, path, handler) VALUES
	('GET', '/w', 'INSERT INTO rooms VALUES (9, ''w'') RETURNING ARRAY[''x''] AS channels')});
isnt($ok, 0, 'a handler that writes cannot be an event stream');

# ---- heartbeats ----
$a->{body} = '';
ok(fill($a, sub { $a->{body} =~ /^:\n\n/ }), 'a heartbeat comment arrives on a silent stream');

# ---- the head goes out at once, heartbeats or not ----
# The worker is seen to have taken a reload when webgres.max_body_size,
# changed along with the setting under test, answers a body 413 (or no
# longer does).
sub reload_taken
{
	my ($small) = @_;
	my $r = WebgresTest::poll_until(sub {
		my $r = eval { WebgresTest::request($port, 'POST', '/plain/x', body => 'x' x 2000, timeout => 10) };
		$r && (($r->{status} == 413) == $small) ? $r : undef;
	}, 60);
	ok($r, $small ? 'the worker took the reload' : 'the worker took the reset');
}
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.sse_heartbeat = 0;
	ALTER SYSTEM SET webgres.max_body_size = 1000; SELECT pg_reload_conf()});
reload_taken(1);
my $quiet = sse_open('/plain/quiet');
ok(defined $quiet->{head}, 'with no catch-up and no heartbeats, the response head still arrives');
close $quiet->{sock};
$node->safe_psql('postgres', q{ALTER SYSTEM RESET webgres.sse_heartbeat;
	ALTER SYSTEM RESET webgres.max_body_size; SELECT pg_reload_conf()});
reload_taken(0);

# ---- Last-Event-ID: catch-up then live, no gap, no duplicate ----
$node->safe_psql('postgres', q{
	CREATE PROCEDURE write_events(n int) LANGUAGE plpgsql AS $$
	DECLARE v bigint;
	BEGIN
		FOR i IN 1..n LOOP
			INSERT INTO room_events (room, data) VALUES (1, 'e' || i) RETURNING id INTO v;
			PERFORM pg_notify('room_1', json_build_object('id', v, 'data', 'e' || i)::text);
			COMMIT;
			PERFORM pg_sleep(0.002);
		END LOOP;
	END $$});
my $total = 600;
my ($wout, $werr) = ('', '');
my $writer = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c', "CALL write_events($total)" ],
	'>', \$wout, '2>', \$werr);
my @ids;
my $last;
my $rounds = 0;
while ($rounds < 200)
{
	$rounds++;
	my $c = sse_open('/events/lobby', defined $last ? ('Last-Event-ID' => $last) : ());
	# Take a few events, then hang up and come back, as a browser would.
	my $left = $total - ($last // 0);
	my $want = 1 + int(rand(15));
	$want = $left if $want > $left;
	fill($c, sub { scalar(events_of($c->{body})) >= $want && $c->{body} =~ /\n\n\z/ });
	for my $e (events_of($c->{body}))
	{
		push @ids, $e->{id};
		$last = $e->{id};
	}
	close $c->{sock};
	last if defined $last && $last >= $total;
}
$writer->finish;
my (%seen, $dups, $holes, $backwards);
$dups = grep { $seen{$_}++ } @ids;
$holes = grep { !$seen{$_} } 1 .. $total;
$backwards = grep { $ids[$_] <= $ids[ $_ - 1 ] } 1 .. $#ids;
is($dups, 0, "reconnecting $rounds times: no event twice");
is($holes, 0, 'no event missed');
is($backwards, 0, 'ids strictly increasing');
is_deeply(\@ids, [ 1 .. $total ], "exactly 1 .. $total, in order");

# ---- disconnect: the worker stops listening ----
my $g = sse_open('/plain/gamma');
ok(log_has(qr/listens on channel "gamma"/), 'worker listens on gamma');
close $g->{sock};
ok(log_has(qr/stops listening on channel "gamma"/), 'after the client leaves, the worker UNLISTENs');

# ---- many subscribers ----
my @many = map { sse_open('/plain/many') } 1 .. 200;
$node->safe_psql('postgres', q{NOTIFY many, 'to all'});
my $got = 0;
for my $c (@many)
{
	fill($c, sub { $c->{body} =~ /data: to all\n\n/ });
	$got++ if $c->{body} =~ /data: to all\n\n/;
	close $c->{sock};
}
is($got, 200, 'one NOTIFY reaches 200 subscribers');

# ---- HTTP/2: the same stream as DATA frames ----
my ($h2out, $h2err) = ('', '');
my $curl = IPC::Run::start(
	[ 'curl', '-s', '-i', '-N', '--http2-prior-knowledge', '--max-time', '120',
	  "http://127.0.0.1:$port/plain/h2chan" ],
	'>', \$h2out, '2>', \$h2err);
# The head goes out once phase 2 subscribed the stream: a NOTIFY before it
# (after phase 1's LISTEN) would be the catch-up's, which /plain has none of.
my $h2deadline = time + 60;
$curl->pump_nb while $h2out !~ /\r?\n\r?\n/ && time < $h2deadline && sleep 0.05;
like($h2out, qr{^HTTP/2 200}, 'an HTTP/2 stream subscribed');
$node->safe_psql('postgres', q{NOTIFY h2chan, 'over h2'});
$h2deadline = time + 60;
$curl->pump_nb while $h2out !~ /data: over h2\n\n/ && time < $h2deadline && sleep 0.05;
$curl->kill_kill;
like($h2out, qr{^HTTP/2 200}, 'HTTP/2 stream answers 200');
like($h2out, qr{data: over h2\n\n}, 'a NOTIFY arrives on an HTTP/2 stream');

# ---- a client that does not read is dropped; the others keep receiving ----
my $slow = do
{
	my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $port, Proto => 'tcp') or die;
	setsockopt($s, Socket::SOL_SOCKET(), Socket::SO_RCVBUF(), 4096);
	print $s "GET /plain/burst HTTP/1.1\r\nHost: x\r\n\r\n";
	$s;
};
my $fast = sse_open('/plain/burst');
ok(log_has(qr/listens on channel "burst"/), 'burst channel listened');
my $burst = 1200;
my $bw = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
	  "DO \$\$ BEGIN FOR i IN 1..$burst LOOP PERFORM pg_notify('burst', i || ' ' || repeat('x', 7000)); "
	  . "IF i % 20 = 0 THEN COMMIT; PERFORM pg_sleep(0.01); END IF; END LOOP; END \$\$" ],
	'>', \my $bout, '2>', \my $berr);
fill($fast, sub { my $n = () = $fast->{body} =~ /^data: \d+ x/mg; $n >= $burst });
$bw->finish;
my @nums = $fast->{body} =~ /^data: (\d+) x/mg;
is_deeply(\@nums, [ 1 .. $burst ], 'the reading client got every event in order');
ok(log_has(qr/disconnects an event-stream client that is not reading/), 'the client that does not read was dropped');
close $slow;

# ---- the order of the phases: LISTEN commits before the catch-up reads ----
# A NOTIFY that commits after the catch-up query took its snapshot is in
# neither the catch-up nor, had LISTEN come after the catch-up, the live
# events: Postgres starts a new listener at the furthest point any other
# listener in the database has read to, past that NOTIFY.  So with no
# stream left on the worker (it is then no listener at all) and a psql
# session listening, the handler's second run, the catch-up, is held on a
# lock after taking its snapshot while an event commits and psql reads it.
# A restart leaves the worker with no stream and no channel.
close $fast->{sock};
$node->restart;
WebgresTest::wait_for_status($port, '/events/nosuch', 404);
$node->safe_psql('postgres', q{
	CREATE TABLE gate (g int);
	CREATE SEQUENCE gate_runs;
	CREATE FUNCTION gate_wait() RETURNS bool LANGUAGE plpgsql AS
		$$BEGIN PERFORM count(*) FROM gate; RETURN true; END$$;
	CREATE TABLE gate_events (id bigint PRIMARY KEY, data text);
	INSERT INTO gate_events VALUES (1, 'before');
});
# Every second run waits for the lock on gate: the catch-up of one request.
WebgresTest::add_route($node, 'GET', '/gated', q{
	SELECT ARRAY['gate_room'] AS channels, e.id, e.data
	FROM request
	CROSS JOIN LATERAL (SELECT CASE WHEN nextval('gate_runs') % 2 = 0 THEN gate_wait() END) AS w
	LEFT JOIN gate_events e ON e.id > coalesce((request.headers->>'last-event-id')::bigint, 0)
	ORDER BY e.id});
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN gate_room');
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE gate IN ACCESS EXCLUSIVE MODE');
my $gs = WebgresTest::connect_to($port);
print $gs "GET /gated HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 0\r\n\r\n";
ok($node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_locks WHERE NOT granted AND relation = 'gate'::regclass}),
	'the catch-up holds its snapshot, waiting for the gate');
$node->safe_psql('postgres', q{
	INSERT INTO gate_events VALUES (2, 'between');
	SELECT pg_notify('gate_room', '{"id": 2, "data": "between"}')});
my $heard = 0;
my $heard_by = time + 60;
while (time < $heard_by)
{
	my $out = $listener->query_safe('SELECT 1') // '';
	if ($out =~ /between/) { $heard = 1; last; }
	sleep 0.1;
}
ok($heard, 'another listener has read past the event');
$locker->query_safe('COMMIT');
my $gc = { sock => $gs, raw => '', body => '', head => undef, eof => 0 };
fill($gc, sub { grep { $_->{id} eq '2' } events_of($gc->{body}) });
$node->safe_psql('postgres', q{
	INSERT INTO gate_events VALUES (3, 'after');
	SELECT pg_notify('gate_room', '{"id": 3, "data": "after"}')});
fill($gc, sub { grep { $_->{id} eq '3' } events_of($gc->{body}) });
is(join(',', map { $_->{id} } events_of($gc->{body})), '1,2,3',
	'the event that committed during the catch-up arrives, once, in order');
close $gs;
$listener->quit;
$locker->quit;

# ---- HEAD: the stream's headers, no body, no subscription ----
{
	my $res = WebgresTest::request($port, 'HEAD', '/plain/headch');
	is($res->{status}, 200, 'HEAD on an event stream: 200');
	like($res->{headers}{'content-type'} // '', qr{^text/event-stream}, '... with its content type');
	is($res->{body} // '', '', '... and no body');
	my $after = sse_open('/plain/afterhead');
	ok(log_has(qr/listens on channel "afterhead"/), 'a stream opened after the HEAD listens');
	unlike(slurp_file($node->logfile), qr/listens on channel "headch"/, 'the HEAD listened to nothing');
	close $after->{sock};
}

# ---- channel names a handler may not return ----
WebgresTest::add_route($node, 'GET', '/badch/:kind', q{
	SELECT ARRAY[CASE request.params->>'kind' WHEN 'empty' THEN '' WHEN 'long' THEN repeat('c', 64)
	             WHEN 'max' THEN repeat('m', 63) END] AS channels FROM request});
WebgresTest::wait_for_status($port, '/badch/empty', 500);
for my $kind ('empty', 'null', 'long')
{
	my $res = WebgresTest::http_get($port, "/badch/$kind");
	is($res->{status}, 500, "a handler returning a bad channel name ($kind): 500");
	unlike($res->{headers}{'content-type'} // '', qr{event-stream}, '... not a stream');
}
like(slurp_file($node->logfile), qr/handler returned an invalid channel name ""/, 'an empty name is logged as invalid');
like(slurp_file($node->logfile), qr/handler returned a NULL channel name/, 'a NULL name is logged');
like(slurp_file($node->logfile), qr/handler returned an invalid channel name "c{63}/, 'a name of 64 bytes is logged as invalid');
my $maxch = sse_open('/badch/max');
like($maxch->{head} // '', qr{^HTTP/1.1 200}, 'a name of 63 bytes, the most LISTEN takes, opens a stream');
close $maxch->{sock};

# ---- senders: a stream that takes only notifications its roles signed ----
$node->safe_psql('postgres', q{
	CREATE ROLE publisher LOGIN;
	CREATE ROLE intruder LOGIN;
});
WebgresTest::add_route($node, 'GET', '/signed/:ch', q{
	SELECT ARRAY[request.params->>'ch'] AS channels, ARRAY['publisher'] AS senders FROM request});
WebgresTest::add_route($node, 'GET', '/nobody/:ch', q{
	SELECT ARRAY[request.params->>'ch'] AS channels, ARRAY['no_such_role'] AS senders FROM request});
WebgresTest::wait_for_status($port, '/nobody/x', 500);
is(WebgresTest::http_get($port, '/nobody/x')->{status}, 500, 'senders naming a role that does not exist: 500');
{
	my $strict = sse_open('/signed/signed_room');
	my $open = sse_open('/plain/signed_room');
	like($strict->{head} // '', qr{^HTTP/1.1 200}, 'a stream with senders is open');
	my $pub = $node->safe_psql('postgres', q{SELECT oid FROM pg_roles WHERE rolname = 'publisher'});
	my @as_intruder = (extra_params => [ '-U', 'intruder' ]);
	$node->safe_psql('postgres', q{NOTIFY signed_room, '1 plain NOTIFY'}, @as_intruder);
	$node->safe_psql('postgres', q{SELECT webgres.notify('signed_room', '2 signed by the intruder')}, @as_intruder);
	$node->safe_psql('postgres',
		"SELECT pg_notify('signed_room', 'webgres-signed:v1:$pub:" . ('0' x 32) . ":3 forged signature')", @as_intruder);
	# A signature is for its channel: one made for another channel does not verify here.
	my $other = $node->safe_psql('postgres', q{
		LISTEN elsewhere; SELECT webgres.notify('elsewhere', '4 replayed'); SELECT 1;},
		extra_params => [ '-U', 'publisher' ]);
	my ($captured) = $other =~ /with payload "(webgres-signed:[^"]*)" received/;
	ok(defined $captured, 'a listener sees a signed payload');
	$captured =~ s/'/''/g;
	$node->safe_psql('postgres', "SELECT pg_notify('signed_room', '$captured')", @as_intruder);
	$node->safe_psql('postgres', q{SELECT webgres.notify('signed_room', '5 genuine')}, extra_params => [ '-U', 'publisher' ]);
	fill($open, sub { $open->{body} =~ /data: 5 genuine\n\n/ });
	fill($strict, sub { $strict->{body} =~ /data: 5 genuine\n\n/ });
	is(join('|', map { $_->{data} } events_of($strict->{body})), '5 genuine',
		'the stream with senders got only what its sender signed');
	my @all = map { $_->{data} } events_of($open->{body});
	is(scalar(@all), 5, 'a stream without senders got all five');
	is($all[0], '1 plain NOTIFY', '... a plain NOTIFY as sent');
	is($all[1], '2 signed by the intruder', '... a signed payload without its signature');
	like($all[2], qr/^webgres-signed:v1:\d+:0{32}:3 forged signature$/, '... a forged one as sent');
	like($all[3], qr/^webgres-signed:v1:$pub:[0-9a-f]{32}:4 replayed$/, '... one signed for another channel as sent');
	is($all[4], '5 genuine', '... and the genuine one');
	close $_->{sock} for $strict, $open;
}

# ---- a stream's first run may take longer than the inline budget ----
# Until a handler is prepared, the worker cannot tell that it answers an
# event stream, which stays on the loop whatever it takes: its first run,
# planning included, must not be cancelled by webgres.inline_budget (10 ms)
# and answered 503.  The marker route shows the worker has the new table,
# so that the stream's request is the first run of its handler there.
$node->safe_psql('postgres', q{
	INSERT INTO webgres.routes (method, path, handler) VALUES
	  ('GET', '/slow-first/:ch', $$SELECT ARRAY[request.params->>'ch'] AS channels, 'slow' AS data
	                              FROM request CROSS JOIN LATERAL (SELECT pg_sleep(0.05)) AS pause$$),
	  ('GET', '/slow-first-marker', $$SELECT 'here' AS body$$)});
WebgresTest::wait_for_status($port, '/slow-first-marker', 200);
{
	my $slow = sse_open('/slow-first/eta');
	like($slow->{head} // '', qr{^HTTP/1\.1 200}, 'an event stream whose first run is past the inline budget opens (200)');
	fill($slow, sub { $slow->{body} =~ /data: slow/ });
	like($slow->{body}, qr/data: slow/, '... with its first event');
	close $slow->{sock};
}

# ---- shutdown ends streams cleanly ----
my $z = sse_open('/plain/zeta');
$node->stop('fast');
fill($z, sub { $z->{ended} });
ok($z->{ended}, 'stopping the server ends the stream with the last chunk');

done_testing();
