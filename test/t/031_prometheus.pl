# The Prometheus endpoint: its text parsed by prometheus_client's own parser
# and checked against a known set of requests; routes labelled by pattern,
# never by the path requested; webgres.metrics_listen keeps metrics off the
# routes' addresses; webgres.metrics_allow limits who reads them there.
use strict;
use warnings;
use File::Temp qw(tempfile);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);
use WebgresTest;

my $python = $ENV{WEBGRES_PYTHON} or die 'WEBGRES_PYTHON is not set (scripts/test.sh sets it)';

# webgres.handler_timeout stays at its default until /late, the last
# request, so that no other request can time out on a loaded machine;
# at DEBUG1 each worker logs that it took a reload.
my $node = WebgresTest->new_node('prometheus', workers => 2,
	conf => "webgres.metrics_path = '/metrics'\nwebgres.executors = 1\n"
	  . "webgres.max_queue = 0\nlog_min_messages = debug1\n");
my $port = $node->{webgres_port};

# Adds a route that runs on the loop, always (mode inline): in mode auto a
# run past webgres.inline_budget on a loaded machine would move it to the
# executor, where /e's error is not counted among the worker's.
sub loop_route
{
	my ($method, $path, $handler) = @_;
	return $node->safe_psql('postgres', "INSERT INTO webgres.routes (method, path, handler, mode) "
		  . "VALUES ('$method', '$path', \$h\$$handler\$h\$, 'inline') RETURNING id");
}

my %id;
$id{a} = loop_route('GET', '/a', q{SELECT 'aaa' AS body});
$id{b} = loop_route('GET', '/b/:id', q{SELECT 201 AS status, request.params->>'id' AS body FROM request});
$id{c} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('POST', '/c', $$SELECT 'posted' AS body FROM request$$, 'executor') RETURNING id});
# /d finds no row (its handler answers 404), /e fails, /late outlives
# webgres.handler_timeout (lowered to 1 s for it), /q runs one at a time
# with no queue.
$id{d} = loop_route('GET', '/d/:id', q{SELECT 'd' AS body FROM request WHERE (params->>'id')::int < 3});
$id{e} = loop_route('GET', '/e', q{SELECT (1 / 0)::text AS body FROM request});
$id{late} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode)
	VALUES ('GET', '/late', $$SELECT pg_sleep(30)::text AS body FROM request$$, 'executor') RETURNING id});
$id{q} = $node->safe_psql('postgres', q{INSERT INTO webgres.routes (method, path, handler, mode, max_concurrency)
	VALUES ('GET', '/q', $$SELECT pg_advisory_xact_lock_shared(77)::text || 'q' AS body FROM request$$,
	        'executor', 1) RETURNING id});
WebgresTest::wait_for_status($port, '/a', 200);
$node->safe_psql('postgres', 'SELECT webgres.route_stats_reset()');

is(WebgresTest::http_get($port, '/a')->{status}, 200, 'GET /a') for 1 .. 3;
for my $p ('/b/1', '/b/1', '/b/22', '/b/333')
{
	is(WebgresTest::http_get($port, $p)->{status}, 201, "GET $p");
}
is(WebgresTest::request($port, 'POST', '/c', body => 'x')->{status}, 200, 'POST /c (executor)');
is(WebgresTest::http_get($port, "/d/$_")->{status}, $_ < 3 ? 200 : 404, "GET /d/$_") for 1 .. 5;
is(WebgresTest::http_get($port, '/e')->{status}, 400, 'GET /e: the handler fails');
# /q: the first waits for a lock the test holds; the second finds no room.
my $gate = $node->background_psql('postgres');
$gate->query_safe('BEGIN; SELECT pg_advisory_xact_lock(77)');
my $q1 = WebgresTest::connect_to($port);
print $q1 "GET /q HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted}),
	'the first /q runs, waiting for the lock');
is(WebgresTest::http_get($port, '/q')->{status}, 503, 'the second /q is refused: no queue');
$gate->query_safe('COMMIT');
$gate->quit;
my ($q1r) = WebgresTest::read_responses($q1, 1, 30);
is($q1r->[0]{status}, 200, 'the first /q is answered once the lock is free');
close $q1;

# /late needs webgres.handler_timeout = 1s on both workers (one still at
# 30 s would let it sleep its 30 s): each logs when it has taken the reload.
{
	my @workers = WebgresTest::worker_pids($node);
	my $offset = -s $node->logfile;
	$node->append_conf('postgresql.conf', "webgres.handler_timeout = '1s'\n");
	$node->reload;
	ok(WebgresTest::poll_until(sub {
		my $log = slurp_file($node->logfile, $offset);
		return !grep { $log !~ /webgres access log configured in process $_\b/ } @workers;
	}), 'both workers took webgres.handler_timeout = 1s');
}
is(WebgresTest::http_get($port, '/late', timeout => 60)->{status}, 504, 'GET /late: timed out');

# Parses an exposition with prometheus_client; returns {"name{labels}" => value}.
sub parse
{
	my ($text) = @_;
	my ($fh, $file) = tempfile(UNLINK => 1);
	print $fh $text;
	close $fh;
	my $out = `$python - '$file' <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        labels = ",".join(f'{k}={v}' for k, v in sorted(s.labels.items()))
        print(f"{fam.type}\\t{s.name}{{{labels}}}\\t{s.value!r}")
PY`;
	is($?, 0, 'prometheus_client parses the exposition');
	my %m;
	for (split /\n/, $out)
	{
		my ($type, $key, $value) = split /\t/;
		$m{$key} = $value + 0;
		$m{"TYPE $key"} = $type;
	}
	return \%m;
}

# The one worker's counters as webgres.workers has them:
# {requests, 2xx, 4xx}.
sub worker_row
{
	my ($n) = @_;
	my @f = split /\|/, $n->safe_psql('postgres',
		'SELECT requests, responses_2xx, responses_4xx FROM webgres.workers');
	return { requests => $f[0], '2xx' => $f[1], '4xx' => $f[2] };
}

# The same counters as a parsed scrape has them, summed over the workers.
sub scraped_row
{
	my ($mm) = @_;
	my %t = (requests => 0, '2xx' => 0, '4xx' => 0);
	for my $k (keys %$mm)
	{
		$t{requests} += $mm->{$k} if $k =~ /^webgres_worker_requests_total\{/;
		$t{$1} += $mm->{$k} if $k =~ /^webgres_worker_responses_total\{code=([24]xx),/;
	}
	return \%t;
}

# Scrapes until every route count is in: a route's request is counted
# just after its response is handed to the socket, so the client may have
# it a moment before the count.
my ($res, $m);
my $deadline = time + 30;
while (time < $deadline)
{
	$res = WebgresTest::http_get($port, '/metrics');
	$m = parse($res->{body}) if $res->{status} == 200;
	last if $m && ($m->{"webgres_route_request_duration_seconds_count{method=GET,route=/a,route_id=$id{a}}"} // 0) == 3
	  && ($m->{"webgres_route_request_duration_seconds_count{method=GET,route=/b/:id,route_id=$id{b}}"} // 0) == 4
	  && ($m->{"webgres_route_request_duration_seconds_count{method=POST,route=/c,route_id=$id{c}}"} // 0) == 1
	  && ($m->{"webgres_route_request_duration_seconds_count{method=GET,route=/d/:id,route_id=$id{d}}"} // 0) == 5
	  && ($m->{"webgres_route_request_duration_seconds_count{method=GET,route=/q,route_id=$id{q}}"} // 0) == 2
	  && ($m->{"webgres_route_request_duration_seconds_count{method=GET,route=/late,route_id=$id{late}}"} // 0) == 1
	  && ($m->{"webgres_route_request_duration_seconds_count{method=GET,route=/e,route_id=$id{e}}"} // 0) == 1
	  # the executor marks /late slow as it ends its run, which may be after the worker's own 504
	  && ($m->{"webgres_route_slow{method=GET,route=/late,route_id=$id{late}}"} // 0) == 1;
	sleep 0.1;
}
is($res->{status}, 200, 'GET /metrics answers 200');
like($res->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4}, 'in the text format');

my $la = "method=GET,route=/a,route_id=$id{a}";
my $lb = "method=GET,route=/b/:id,route_id=$id{b}";
my $lc = "method=POST,route=/c,route_id=$id{c}";
is($m->{"webgres_route_request_duration_seconds_count{$la}"}, 3, '/a: 3 requests');
is($m->{"webgres_route_request_duration_seconds_count{$lb}"}, 4, '/b/:id: 4 requests, one series for every path it matched');
is($m->{"webgres_route_request_duration_seconds_count{$lc}"}, 1, '/c: 1 request on an executor');
is($m->{"TYPE webgres_route_request_duration_seconds_count{$la}"}, 'histogram', 'latency is a histogram');
is($m->{"webgres_route_request_duration_seconds_bucket{le=+Inf,$lb}"}, 4, '+Inf bucket holds every request');
is(scalar(grep { /route=\/b\/\d/ } keys %$m), 0, 'no series is labelled by a path requested');
is($m->{"webgres_route_responses_total{code=2xx,$lb}"}, 4, '/b/:id: four 2xx');
is($m->{"webgres_route_responses_total{code=5xx,$lb}"}, 0, '/b/:id: no 5xx');
is($m->{"webgres_route_response_bytes_total{$la}"}, 9, '/a: 9 body bytes');
is($m->{"webgres_route_response_bytes_total{$lb}"}, 7, '/b/:id: 1+1+2+3 body bytes');
is($m->{"webgres_route_handler_errors_total{$la}"}, 0, 'no handler errors');

# A handler's own 404s are its route's responses.
my $ld = "method=GET,route=/d/:id,route_id=$id{d}";
is($m->{"webgres_route_responses_total{code=2xx,$ld}"}, 2, '/d/:id: two 2xx');
is($m->{"webgres_route_responses_total{code=4xx,$ld}"}, 3, '/d/:id: three 404s for the missing rows');
my $le = "method=GET,route=/e,route_id=$id{e}";
my $llate = "method=GET,route=/late,route_id=$id{late}";
my $lq = "method=GET,route=/q,route_id=$id{q}";
is($m->{"webgres_route_handler_errors_total{$le}"}, 1, '/e: one handler error');
is($m->{"webgres_route_timeouts_total{$llate}"}, 1, '/late: one timeout');
is($m->{"webgres_route_timeouts_total{$la}"}, 0, '/a: no timeout');
is($m->{"webgres_route_responses_total{code=5xx,$llate}"}, 1, '/late: its 504');
is($m->{"webgres_route_queue_full_total{$lq}"}, 1, '/q: one refused, its queue full');
is($m->{"webgres_route_queue_full_total{$lc}"}, 0, '/c: none refused');
# A run on an executor longer than webgres.inline_budget marks its route
# slow: /late's 1 s always is; /q's wait for the lock may be shorter, so
# its gauge is held against the SQL function's reading instead.
is($m->{"webgres_route_slow{$llate}"}, 1, '/late ran past webgres.inline_budget on its executor (webgres_route_slow)');
is($m->{"webgres_route_slow{$lq}"},
	$node->safe_psql('postgres', "SELECT slow::int FROM webgres.route_execution() WHERE route_id = $id{q}"),
	'/q: webgres_route_slow is what webgres.route_execution() says');
is($m->{"webgres_route_executor_queued{$lq}"}, 0, '/q: nothing waiting now');
is($m->{"webgres_route_executor_running{$lq}"}, 0, '/q: nothing running now');
is($m->{"TYPE webgres_route_slow{$lq}"}, 'gauge', 'executor state is a gauge');

# Buckets are cumulative and agree with the SQL view.
my %bucket = map { /le=([^,}]+)/; (($1 eq '+Inf' ? 9**9**9 : $1) => $m->{$_}) }
  grep { /^webgres_route_request_duration_seconds_bucket\{le=[^,]+,\Q$la\E\}$/ } keys %$m;
is(scalar(keys %bucket), 18, '17 finite buckets and +Inf');
my $prev = 0;
my $monotonic = 1;
for my $le (sort { $a <=> $b } keys %bucket)
{
	$monotonic = 0 if $bucket{$le} < $prev;
	$prev = $bucket{$le};
}
ok($monotonic, 'bucket counts never decrease');
is($node->safe_psql('postgres', "SELECT array_to_string(latency_buckets, ',') FROM webgres.route_stats WHERE route_id = $id{b}") =~ tr/,//, 17,
	'the view has the same 18 buckets');
ok($m->{"webgres_route_request_duration_seconds_sum{$lc}"} > 0, '/c: a latency sum');

# Worker and executor figures.
is($m->{'webgres_workers{}'}, 2, 'two workers');
is($m->{'webgres_executors{}'}, 1, 'one executor configured');
ok(defined $m->{'webgres_connections{}'}, 'open connections, all workers');
my ($wsum) = $node->safe_psql('postgres', 'SELECT sum(requests) FROM webgres.workers');
my $scraped = 0;
$scraped += $m->{$_} for grep { /^webgres_worker_requests_total\{/ } keys %$m;
cmp_ok($scraped, '>=', 8 + 1, 'worker request counters count every request');
cmp_ok($scraped, '<=', $wsum, '... as webgres.workers does');

# Each worker family against webgres.workers, read after the scrape: a
# counter can only have grown since.
my %wsql = map { my @f = split /\|/; ($f[0] => \@f) } split /\n/, $node->safe_psql('postgres', q{
	SELECT worker, responses_2xx, responses_4xx, responses_5xx, from_memory, handler_errors, route_loads
	FROM webgres.workers});
is(scalar(keys %wsql), 2, 'webgres.workers: two workers');
my %sum;
for my $w (sort keys %wsql)
{
	my $lw = "worker=$w";
	my @fam = (
		[ "webgres_worker_responses_total{code=2xx,$lw}", 1 ],
		[ "webgres_worker_responses_total{code=4xx,$lw}", 2 ],
		[ "webgres_worker_responses_total{code=5xx,$lw}", 3 ],
		[ "webgres_worker_from_memory_total{$lw}", 4 ],
		[ "webgres_worker_handler_errors_total{$lw}", 5 ],
		[ "webgres_worker_route_loads_total{$lw}", 6 ]);
	for my $f (@fam)
	{
		ok(defined $m->{ $f->[0] } && $m->{ $f->[0] } <= $wsql{$w}[ $f->[1] ], "$f->[0] is at most webgres.workers'");
		$sum{ $f->[0] =~ s/\{.*//r . ($f->[0] =~ /code=(\dxx)/ ? $1 : '') } += $m->{ $f->[0] } // 0;
	}
	ok(defined $m->{"webgres_worker_connections{$lw}"}, "webgres_worker_connections for worker $w");
	$sum{connections} += $m->{"webgres_worker_connections{$lw}"} // 0;
}
cmp_ok($sum{webgres_worker_responses_total2xx}, '>=', 3 + 4 + 1 + 2 + 1, 'worker 2xx: every 2xx sent');
cmp_ok($sum{webgres_worker_responses_total4xx}, '>=', 3 + 1, 'worker 4xx: the 404s and the 400');
cmp_ok($sum{webgres_worker_responses_total5xx}, '>=', 2, 'worker 5xx: the 504 and the 503');
cmp_ok($sum{webgres_worker_handler_errors_total}, '>=', 1, 'worker handler errors: /e');
cmp_ok($sum{webgres_worker_route_loads_total}, '>=', 1, 'worker route loads: the table was loaded');
cmp_ok($sum{webgres_worker_from_memory_total}, '>=', 0, 'worker from-memory answers are counted');
is($sum{connections}, $m->{'webgres_connections{}'}, 'the workers\' connections add up to webgres_connections');
ok(defined $m->{"webgres_route_executor_running{$lc}"}, 'executor state of a route that ran there');

is(WebgresTest::request($port, 'POST', '/metrics', body => 'x')->{status}, 405, 'POST /metrics: 405');
is(WebgresTest::http_get($port, '/metrics?x=1')->{status}, 200, 'a query string is ignored');

# Off by default: the path is a route like any other.
$node->safe_psql('postgres', q{ALTER SYSTEM SET webgres.metrics_path = ''; SELECT pg_reload_conf()});
my $off = WebgresTest::wait_for_status($port, '/metrics', 404);
is($off->{status}, 404, 'with webgres.metrics_path empty, /metrics is not answered');
$node->stop;

# A separate address: metrics there only, routes only on webgres.listen.
my $mport = PostgreSQL::Test::Cluster::get_free_port();
my $node2 = WebgresTest->new_node('prometheus_listen', workers => 1,
	conf => "webgres.metrics_path = '/metrics'\nwebgres.metrics_listen = '127.0.0.1:$mport'\n");
my $port2 = $node2->{webgres_port};
WebgresTest::add_route($node2, 'GET', '/a', q{SELECT 'aaa' AS body});
WebgresTest::wait_for_status($port2, '/a', 200);
ok(WebgresTest::wait_for_listen($mport), 'the metrics address listens');
my $r = WebgresTest::http_get($mport, '/metrics');
is($r->{status}, 200, 'metrics on the metrics address');
my $m2 = parse($r->{body});
is($m2->{"webgres_route_request_duration_seconds_count{method=GET,route=/a,route_id=1}"}, 1,
	'... with the routes counted');
is(WebgresTest::http_get($mport, '/a')->{status}, 404, 'no routes on the metrics address');
is(WebgresTest::http_get($port2, '/metrics')->{status}, 404, 'no metrics on the routes\' address');
# webgres.metrics_allow filters the main listeners only: the metrics
# address is its own control.
ok(WebgresTest::reload_and_wait($node2, "webgres.metrics_allow = '10.0.0.0/8'\n"),
	'the worker took webgres.metrics_allow without loopback');
is(WebgresTest::http_get($mport, '/metrics')->{status}, 200,
	'metrics on the metrics address whatever webgres.metrics_allow says');

# Every answer on the metrics address leaves by the exit (http/respond.h):
# framed with a Content-Length, HEAD without body bytes, and counted among
# the worker's responses, as the routes' answers are.  A scrape is
# rendered before its own answer is counted: it shows the answers before
# it, earlier scrapes included, not itself.
{
	my $w0 = worker_row($node2);
	$r = WebgresTest::http_get($mport, '/nothing');
	is($r->{status}, 404, 'metrics address: another path is 404');
	is($r->{headers}{'content-length'}, 10, '... framed by its Content-Length');
	ok(!defined $r->{headers}{'transfer-encoding'}, '... not chunked');
	is($r->{body}, "Not Found\n", '... its body');
	$r = WebgresTest::request($mport, 'HEAD', '/nothing');
	is($r->{status}, 404, 'metrics address: HEAD of another path is 404');
	is($r->{headers}{'content-length'}, 10, '... with the GET\'s Content-Length');
	is($r->{after}, '', '... and not a byte of body on the wire');
	$r = WebgresTest::request($mport, 'POST', '/metrics', body => 'x');
	is($r->{status}, 405, 'metrics address: POST /metrics is 405');
	is($r->{headers}{allow}, 'GET, HEAD', '... saying which methods');
	$r = WebgresTest::request($mport, 'HEAD', '/metrics');
	is($r->{status}, 200, 'metrics address: HEAD /metrics is 200');
	like($r->{headers}{'content-type'}, qr{^text/plain; version=0\.0\.4}, '... of the exposition');
	cmp_ok($r->{headers}{'content-length'} // 0, '>', 0, '... with its Content-Length');
	is($r->{after}, '', '... and not a byte of body on the wire');
	$r = WebgresTest::http_get($mport, '/metrics');
	is($r->{status}, 200, 'metrics address: a scrape after them');
	is(length($r->{body}), $r->{headers}{'content-length'}, '... framed by its Content-Length');
	my $seen = scraped_row(parse($r->{body}));
	is($seen->{requests}, $w0->{requests} + 4, '... counts the four answers before it, not itself');
	is($seen->{'2xx'}, $w0->{'2xx'} + 1, '... the HEAD among the 2xx');
	is($seen->{'4xx'}, $w0->{'4xx'} + 3, '... the two 404s and the 405 among the 4xx');
	my $w1 = worker_row($node2);
	is($w1->{requests}, $w0->{requests} + 5, 'webgres.workers counts all five, the scrape too');
	is($w1->{'2xx'}, $w0->{'2xx'} + 2, '... two 2xx');
	is($w1->{'4xx'}, $w0->{'4xx'} + 3, '... three 4xx');
}
$node2->stop;

# webgres.metrics_allow on the main listeners: loopback by default, so the
# scrapes above (from 127.0.0.1) were answered; a list without loopback
# answers this client 404, without handing the path to a route either; a
# list that names its network allows it again.  One worker, so that a
# reload is seen by every request after reload_and_wait.
my $node3 = WebgresTest->new_node('prometheus_allow', workers => 1,
	conf => "webgres.metrics_path = '/metrics'\n");
my $port3 = $node3->{webgres_port};
WebgresTest::add_route($node3, 'GET', '/metrics', q{SELECT 'the route' AS body});
WebgresTest::add_route($node3, 'GET', '/a', q{SELECT 'aaa' AS body});
WebgresTest::wait_for_status($port3, '/a', 200);
is($node3->safe_psql('postgres', 'SHOW webgres.metrics_allow'), '127.0.0.0/8, ::1/128',
	'webgres.metrics_allow: loopback by default');
$r = WebgresTest::http_get($port3, '/metrics');
is($r->{status}, 200, 'from 127.0.0.1 by default: the metrics');
like($r->{body}, qr/^# HELP webgres_/m, '... the exposition');
ok(WebgresTest::reload_and_wait($node3, "webgres.metrics_allow = '10.0.0.0/8, fd00::/8'\n"),
	'the worker took webgres.metrics_allow = 10.0.0.0/8, fd00::/8');
my $w0 = worker_row($node3);
$r = WebgresTest::http_get($port3, '/metrics');
is($r->{status}, 404, 'a client outside webgres.metrics_allow: 404');
is($r->{body}, "Not Found\n", '... no metrics, and not the route of the same path');
$r = WebgresTest::request($port3, 'HEAD', '/metrics');
is($r->{status}, 404, '... HEAD too');
is($r->{after}, '', '... without a byte of body');
my $w1 = worker_row($node3);
is($w1->{requests}, $w0->{requests} + 2, 'the refusals are counted by webgres.workers');
is($w1->{'4xx'}, $w0->{'4xx'} + 2, '... as 4xx');
is(WebgresTest::http_get($port3, '/a')->{status}, 200, '... while the routes answer it');
ok(WebgresTest::reload_and_wait($node3, "webgres.metrics_allow = '10.0.0.0/8, 127.0.0.1/32'\n"),
	'the worker took webgres.metrics_allow = 10.0.0.0/8, 127.0.0.1/32');
$r = WebgresTest::http_get($port3, '/metrics');
is($r->{status}, 200, 'a client in a network the list names: the metrics');
like($r->{body}, qr/^# HELP webgres_/m, '... the exposition');
# On the main listeners too each answer of the metrics path is counted by
# the exit: the next scrape shows the one before it, the 405 and the HEAD.
{
	my $first = scraped_row(parse($r->{body}));
	is(WebgresTest::request($port3, 'POST', '/metrics', body => 'x')->{status}, 405, 'POST /metrics: 405');
	$r = WebgresTest::request($port3, 'HEAD', '/metrics');
	is($r->{status}, 200, 'HEAD /metrics: 200');
	cmp_ok($r->{headers}{'content-length'} // 0, '>', 0, '... with its Content-Length');
	is($r->{after}, '', '... and not a byte of body on the wire');
	$r = WebgresTest::http_get($port3, '/metrics');
	my $next = scraped_row(parse($r->{body}));
	is($next->{requests}, $first->{requests} + 3, 'the next scrape counts the scrape, the 405 and the HEAD');
	is($next->{'2xx'}, $first->{'2xx'} + 2, '... the scrape and the HEAD as 2xx');
	is($next->{'4xx'}, $first->{'4xx'} + 1, '... the 405 as 4xx');
}
ok(WebgresTest::reload_and_wait($node3, "webgres.metrics_allow = ''\n"),
	'the worker took an empty webgres.metrics_allow');
is(WebgresTest::http_get($port3, '/metrics')->{status}, 404, 'an empty list allows nobody');
for my $bad ([ '127.0.0.1/8', 'bits set past its prefix' ], [ 'localhost', 'not an IP address' ],
	[ '10.0.0.0/33', 'longer than its address' ], [ '10.0.0.0/8,,::1', 'not an IP address' ])
{
	my ($rc, $out, $err) = $node3->psql('postgres', "ALTER SYSTEM SET webgres.metrics_allow = '$bad->[0]'");
	like($err, qr/invalid value for parameter "webgres.metrics_allow".*\n.*\Q$bad->[1]\E/,
		"webgres.metrics_allow = '$bad->[0]' is refused: $bad->[1]");
}
$node3->stop;

done_testing();
