# Which route answers a request, with many overlapping routes: the server's
# answer for each path is compared with the order the documented rules give,
# computed here from scratch.  The rules: a route matches when its pattern
# does (literal segments against the percent-decoded path, ":name" one
# non-empty segment, a trailing "*" or "*name" the rest, possibly nothing);
# matching routes are tried by priority (higher first), then the more
# specific pattern (segment by segment literal > parameter > rest, then the
# longer), then a route for one method before a route for any method, then
# the lower id; HEAD takes GET routes; the first route whose handler returns
# a row answers.  A path that some route matches, but none with the
# request's method, is answered 405 with the methods in route order.
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use WebgresTest;

my $node = WebgresTest->new_node('route_order', workers => 1);
my $port = $node->{webgres_port};

# ---- generated routes --------------------------------------------------

srand(20261123);
my @literals = ('a', 'b', 'c', "caf\xc3\xa9");    # UTF-8 bytes of "café"
my @methods = ('GET', 'GET', 'GET', 'POST', 'POST', undef);

sub pick { return $_[ int(rand(@_)) ]; }

# A pattern of one to four segments; parameters are named by position.
sub random_pattern
{
	my $n = 1 + int(rand(4));
	my @segs;
	for my $i (1 .. $n)
	{
		my $r = rand();
		if ($i == $n && $i > 1 && $r < 0.15) { push @segs, pick('*', '*rest'); }
		elsif ($r < 0.45) { push @segs, ":p$i"; }
		elsif ($r < 0.48) { push @segs, ''; }    # an empty literal segment
		else { push @segs, pick(@literals); }
	}
	return '/' . join('/', @segs);
}

my @routes;
for my $tag (1 .. 200)
{
	my $r = {
		tag => "r$tag",
		method => pick(@methods),
		path => ($tag <= 3 ? pick('/', '/c/*') : random_pattern()),
		priority => pick(0, 0, 0, 0, 1, -1),
		rows => (rand() < 0.2 ? 0 : 1),
	};
	# Some exact duplicates, which only the id tells apart.
	%$r = (%{ $routes[-1] }, tag => "r$tag", rows => 1) if $tag % 25 == 0;
	push @routes, $r;
}

my @values;
for my $r (@routes)
{
	my $m = defined $r->{method} ? "'$r->{method}'" : 'NULL';
	my $where = $r->{rows} ? '' : ' WHERE false';
	push @values,
	  "($m, '$r->{path}', $r->{priority}, \$h\$SELECT '$r->{tag}' AS body, "
	  . "jsonb_build_object('X-Route', '$r->{tag}') AS headers$where\$h\$)";
}
$node->safe_psql('postgres',
	"SET client_min_messages = warning;\n"
	  . "INSERT INTO webgres.routes (method, path, priority, handler) VALUES\n"
	  . join(",\n", @values));
# Ids as the table assigned them, by tag.
my %id_of = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	q{SELECT substring(handler from $$'(r[0-9]+)'$$), id FROM webgres.routes});
$_->{id} = $id_of{ $_->{tag} } for @routes;
is(scalar(grep { defined $_->{id} } @routes), 200, '200 routes installed');

WebgresTest::add_route($node, 'GET', '/ready', q{SELECT 'ready' AS body}, priority => 1000);
is(WebgresTest::wait_for_status($port, '/ready', 200)->{status}, 200, 'route table loaded');

# ---- the rules, from scratch ---------------------------------------------

sub compile_pattern
{
	my ($path) = @_;
	return [] if $path eq '/';
	return [ map {
			/^:(.+)$/ ? { kind => 3, name => $1 }
			  : /^\*(.*)$/ ? { kind => 1, name => ($1 eq '' ? '*' : $1) }
			  : { kind => 5, text => $_ }
	} split(m{/}, substr($path, 1), -1) ];
}
$_->{segs} = compile_pattern($_->{path}) for @routes;

# Percent-decoded bytes of a segment, or undef when an escape is malformed.
sub decode
{
	my ($s) = @_;
	return undef if $s =~ /%(?![0-9A-Fa-f]{2})/;
	$s =~ s/%([0-9A-Fa-f]{2})/chr(hex($1))/ge;
	return $s;
}

sub pattern_matches
{
	my ($segs, $path) = @_;
	my @p = $path eq '/' ? () : split(m{/}, substr($path, 1), -1);
	for my $i (0 .. $#$segs)
	{
		my $s = $segs->[$i];
		return 1 if $s->{kind} == 1;
		return 0 if $i > $#p;
		if ($s->{kind} == 5)
		{
			my $d = decode($p[$i]);
			my $lit = $s->{text};
			return 0 unless defined $d && $d eq $lit;
		}
		else { return 0 if $p[$i] eq ''; }
	}
	return scalar(@$segs) == scalar(@p);
}

sub pattern_cmp
{
	my ($a, $b) = @_;
	my $n = @$a < @$b ? scalar(@$a) : scalar(@$b);
	for my $i (0 .. $n - 1)
	{
		return $b->[$i]{kind} <=> $a->[$i]{kind} if $a->[$i]{kind} != $b->[$i]{kind};
	}
	return scalar(@$b) <=> scalar(@$a);
}

sub route_cmp
{
	my ($x, $y) = @_;
	return $y->{priority} <=> $x->{priority}
	  || pattern_cmp($x->{segs}, $y->{segs})
	  || (defined $y->{method} ? 1 : 0) <=> (defined $x->{method} ? 1 : 0)
	  || $x->{id} <=> $y->{id};
}

# What the server should answer: [status, route tag or Allow header].
sub expected
{
	my ($method, $path) = @_;
	my @matching = sort { route_cmp($a, $b) } grep { pattern_matches($_->{segs}, $path) } @routes;
	my $want = $method eq 'HEAD' ? 'GET' : $method;
	my $method_matched = 0;
	for my $r (@matching)
	{
		next if defined $r->{method} && $r->{method} ne $want;
		$method_matched = 1;
		return [ 200, $r->{tag} ] if $r->{rows};
	}
	return [ 404, '' ] if !@matching || $method_matched;
	my @allow;
	for my $r (@matching)
	{
		push @allow, $r->{method} unless grep { $_ eq $r->{method} } @allow;
	}
	push @allow, 'HEAD' if (grep { $_ eq 'GET' } @allow) && !(grep { $_ eq 'HEAD' } @allow);
	return [ 405, join(', ', @allow) ];
}

# ---- requests ----------------------------------------------------------

my @seg_choices = ('a', 'b', 'c', 'z', 'caf%C3%A9', '%61', 'caf%c3%a9', '', 'a%2Fb');
my @paths = ('/', '/a', '/a/', '/a/b/c/a/b', '/caf%C3%A9/a');
while (@paths < 100)
{
	my $n = 1 + int(rand(5));
	push @paths, '/' . join('/', map { pick(@seg_choices) } 1 .. $n);
}

my %seen_status;
my $checked = 0;
for my $method ('GET', 'POST', 'HEAD', 'DELETE')
{
	# Twice each on one connection: the second may be answered from memory.
	my @reqs = map { ($_, $_) } @paths;
	my $res;
	if ($method eq 'HEAD')
	{
		# One connection each: a response to HEAD is not pipelined safely
		# by a client that cannot tell where it ends.
		$res = [ map { scalar(WebgresTest::request($port, 'HEAD', $_)) } @reqs ];
	}
	else
	{
		my $bytes = join '', map { "$method $_ HTTP/1.1\r\nHost: h\r\n\r\n" } @reqs;
		($res) = WebgresTest::raw($port, $bytes, n => scalar(@reqs));
	}
	is(scalar(@$res), scalar(@reqs), "$method: every request answered");
	for my $i (0 .. $#reqs)
	{
		my $got = $res->[$i] or last;
		my $exp = expected($method, $reqs[$i]);
		my $what = $exp->[0] == 405 ? ($got->{headers}{allow} // '') : ($got->{headers}{'x-route'} // '');
		$seen_status{ $exp->[0] }++;
		$checked++;
		is("$got->{status} $what", "$exp->[0] $exp->[1]", "$method $reqs[$i]" . ($i % 2 ? ' (again)' : ''));
		is($got->{body}, $exp->[1], "$method $reqs[$i]: body names the route")
		  if $exp->[0] == 200 && $method ne 'HEAD';
	}
}

# The generated routes must exercise each outcome, or this test proves little.
cmp_ok($seen_status{$_} // 0, '>=', 10, "at least 10 requests expect $_") for 200, 404, 405;

done_testing();
