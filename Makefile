# webgres: PGXS build plus the project's own targets.
#
#   make            build the extension
#   make install    install it into the Postgres that pg_config names
#   make test       install missing packages, build, run every test on 15, 16 and 18
#   make test PG=18 the same on one Postgres (15, 16, 17 or 18; docs/versions.md);
#                   PG=N also picks the Postgres of make, install, run, demo, bench
#   make run        build, install and serve the example and TechEmpower routes
#   make bench      the benchmark harness (bench/README.md)
#   make bench-guard BASE=main   this tree against an older build: fails on a 5 % loss
#                   (make bench GUARD=main: the bench, then the guard)
#   make cluster    a primary, two standbys and HAProxy on this machine (docs/scale-out.md)
#   make demo       the board, a whole application, over HTTPS (examples/board)
#   make fuzz       run each libFuzzer harness in fuzz/ for FUZZ_SECONDS (60)

# PROFILE is the bench's setting (bench/README.md: a perf profile of the
# workers), but PGXS adds PROFILE to CFLAGS and LDFLAGS as profiling flags:
# `make bench PROFILE=1` would compile with "1".  Keep the bench's value and
# hide it from PGXS, here and in every make this one starts.
BENCH_PROFILE := $(PROFILE)
override PROFILE :=

MODULE_big = webgres
# Every C file under src/, one folder a floor (docs/internals-modules.md):
# a new module is its file, with no line here.  Named relative to the
# source folder, as DATA below, so a VPATH build finds them.
OBJS = $(patsubst $(srcdir)/%.c,%.o,$(sort $(wildcard $(srcdir)/src/*/*.c)))

MODULEDIR = extension
# (named relative to the source folder, which PGXS puts before them: a VPATH
# build finds them there)
DATA = extension/webgres.control $(addprefix extension/,$(notdir $(wildcard $(srcdir)/extension/webgres--*.sql)))
PGFILEDESC = "webgres - HTTP server inside PostgreSQL"

REGRESS = $(patsubst test/regress/sql/%.sql,%,$(sort $(wildcard test/regress/sql/*.sql)))
REGRESS_OPTS = --inputdir=test/regress --outputdir=test/regress

# make PG=18 (or 16, 17, 15): build, install, test, run and bench against
# that Postgres; scripts/postgres.sh says where its pg_config is (Debian's
# for 15, an unpacked wheel for the others, docs/versions.md).  PG_CONFIG
# given directly works too, PGXS' own way.
ifneq ($(PG),)
PG_CONFIG := $(shell $(dir $(firstword $(MAKEFILE_LIST)))scripts/postgres.sh pg_config $(PG))
# The scripts (test.sh, run.sh, cluster.sh, bench/run.sh) follow them too.
export PG PG_CONFIG
endif
PG_CONFIG ?= pg_config
# -MMD -MP: each object also depends on the headers it includes (PGXS
# tracks them only in server builds configured with --enable-depend), so
# changing a struct in a header rebuilds every file that uses it.
PG_CPPFLAGS = -DH2O_USE_LIBUV=0 -I$(srcdir)/src -I$(srcdir)/src/h2o_compat -MMD -MP
# -Wextra minus unused parameters: callbacks have fixed signatures, and
# Postgres' own headers trip it.
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter
SHLIB_LINK = -lh2o-evloop -lwslay -lssl -lcrypto

# make test SANITIZE=address: the extension with ASan and UBSan; test.sh
# preloads the runtimes into the (uninstrumented) Postgres server.
ifeq ($(SANITIZE),address)
PG_CFLAGS += -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SHLIB_LINK += -fsanitize=address,undefined
export SANITIZE
endif

# The objects depend on a stamp naming the SANITIZE mode and the Postgres
# (its pg_config) they were built for, rewritten only when either changes:
# switching to or from SANITIZE=address, or to another Postgres, rebuilds
# everything, so a plain 'make install' after a sanitized run or a
# 'make PG=18' installs the normal library for the default Postgres again.
BUILD_MODE = .build-mode
BUILD_MODE_LINE = SANITIZE=$(SANITIZE) PG_CONFIG=$(shell command -v $(PG_CONFIG))
$(shell echo '$(BUILD_MODE_LINE)' | cmp -s - $(BUILD_MODE) 2>/dev/null || echo '$(BUILD_MODE_LINE)' > $(BUILD_MODE))
EXTRA_CLEAN = $(BUILD_MODE) $(OBJS:.o=.d) build

# No JIT bitcode: handlers are SQL, and the build stays quick.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs 2>/dev/null)
ifeq ($(PGXS),)
# pg_config is not there yet: only the targets that install it can run.
all install:
	@echo "$(PG_CONFIG) not found: run 'make test' or 'make run' (they install what is missing), or 'make deps$(if $(PG), PG=$(PG))'" >&2; exit 1
else
include $(PGXS)
$(OBJS): $(BUILD_MODE)
# A Postgres built by a newer gcc passes warning options this one does not
# know (18's -Wmissing-variable-declarations, new in gcc 14), and gcc stops
# on an unknown -W option: drop exactly those, asking the compiler once.
CC_UNKNOWN_FLAGS := $(shell LC_ALL=C $(CC) $(filter -W%,$(CFLAGS)) -E -x c /dev/null -o /dev/null 2>&1 | \
	sed -n "s/.*unrecognized command-line option '\(-W[^']*\)'.*/\1/p")
override CFLAGS := $(filter-out $(CC_UNKNOWN_FLAGS),$(CFLAGS))
# A relocated Postgres (the wheels of scripts/postgres.sh) names its build
# machine's lib directory as an rpath; the extension needs none.
comma := ,
override LDFLAGS := $(filter-out -Wl$(comma)-rpath$(comma)%,$(LDFLAGS))
# A VPATH build (make -f ../Makefile from a build directory, as
# scripts/test.sh does for each Postgres): gcc writes src/x/y.o into
# folders that must exist there, and only sources are looked for in the
# checkout (its own objects, built by a plain 'make' for another Postgres,
# must not pass for this build's).
ifneq ($(srcdir),.)
$(shell mkdir -p $(sort $(dir $(OBJS))))
VPATH =
vpath %.c $(srcdir)
vpath %.h $(srcdir)
endif
-include $(OBJS:.o=.d)
endif

.PHONY: deps test test-stress run bench bench-guard fuzz cluster demo

deps:
	@scripts/deps.sh
ifneq ($(PG),)
	@scripts/postgres.sh install $(PG) >/dev/null
endif

# scripts/test.sh builds webgres for each version it tests in build/pgN;
# SANITIZE=address tests the installed build instead.
test: deps
ifeq ($(SANITIZE),address)
	$(MAKE) all
	$(MAKE) install
endif
	scripts/test.sh

# make test, ten times in a row, beside a CPU-bound load (scripts/stress-test.sh).
test-stress: deps
	scripts/stress-test.sh

run: deps
	$(MAKE) all
	$(MAKE) install
	scripts/run.sh

bench: deps
	$(MAKE) all
	$(MAKE) install
	PROFILE=$(BENCH_PROFILE) bench/run.sh
	@if [ -n "$(GUARD)" ]; then WEBGRES_DEPS_EXTRA=valgrind scripts/deps.sh && bench/guard.sh $(GUARD); fi

# bench/guard.sh builds and installs both builds itself; make bench
# GUARD=main runs it after the bench.
BASE ?= main
bench-guard: deps
	@WEBGRES_DEPS_EXTRA=valgrind scripts/deps.sh
	bench/guard.sh $(BASE)

cluster: deps
	$(MAKE) all
	$(MAKE) install
	scripts/topology.sh

demo: deps
	$(MAKE) all
	$(MAKE) install
	scripts/demo.sh

FUZZ_SECONDS ?= 60

# The fuzzers need clang with its libFuzzer and sanitizer runtimes.
test fuzz: export WEBGRES_DEPS_EXTRA += clang-14 libclang-rt-14-dev
# The tests' own packages too: Chromium and selenium for test/browser.
test: export WEBGRES_DEPS_TESTS = 1
# With every tool installed, a TAP file that skips tested nothing: fail.
test: export WEBGRES_REQUIRE_ALL = 1

fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)
