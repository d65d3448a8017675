#!/usr/bin/env bash
# Builds the libFuzzer harnesses in fuzz/ (with ASan and UBSan) and runs
# each for FUZZ_SECONDS (default 60) from its committed seed corpus.
# New inputs go to a scratch corpus, so the committed one changes only on
# purpose.  A crash leaves its input in fuzz/findings/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-${FUZZ_SECONDS:-60}}
shift || true
# libFuzzer reads -max_total_time=0 as "no limit": refuse it rather than hang.
case $seconds in
	''|*[!0-9]*|0) echo "fuzz: SECONDS must be a whole number above 0, not '$seconds'" >&2; exit 2 ;;
esac
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(screen pattern form h2_screen accept_encoding static_path jwt handoff_frame accept_media listen cors sse_format auth_headers jwk byte_ranges networks multipart csv ws_call html)

# Without a working clang nothing was fuzzed: that is a failure, never a
# pass (make test and make fuzz install it through WEBGRES_DEPS_EXTRA).
cc=${FUZZ_CC:-$(command -v clang || command -v clang-14 || true)}
if [ -z "$cc" ]; then
	echo "fuzz: FAILED: clang is not installed (apt-get install clang-14 libclang-rt-14-dev)" >&2
	exit 1
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
	echo "fuzz: FAILED: $cc cannot link libFuzzer with ASan/UBSan (apt-get install libclang-rt-14-dev)" >&2
	exit 1
fi

bin=$src/fuzz/bin
mkdir -p "$bin" "$src/fuzz/findings"
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-fno-omit-frame-pointer -I"$src/fuzz/shim" -I"$src/src")
"$cc" "${flags[@]}" "$src/fuzz/fuzz_screen.c" "$src/src/parse/screen.c" "$src/src/parse/percent.c" -o "$bin/fuzz_screen"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_pattern.c" "$src/src/parse/pattern.c" "$src/src/parse/percent.c" "$src/fuzz/shim/shim.c" -o "$bin/fuzz_pattern"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_form.c" "$src/src/parse/formscan.c" "$src/src/parse/percent.c" \
	"$src/fuzz/shim/shim.c" -o "$bin/fuzz_form"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_h2_screen.c" "$src/src/parse/h2_screen.c" "$src/src/parse/screen.c" \
	"$src/src/parse/percent.c" -o "$bin/fuzz_h2_screen"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_accept_encoding.c" "$src/src/parse/accept_encoding.c" -o "$bin/fuzz_accept_encoding"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_static_path.c" "$src/src/parse/static_path.c" "$src/src/parse/percent.c" \
	-o "$bin/fuzz_static_path"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_byte_ranges.c" "$src/src/parse/byte_ranges.c" -o "$bin/fuzz_byte_ranges"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_multipart.c" "$src/src/parse/multipart.c" "$src/fuzz/shim/shim.c" \
	-o "$bin/fuzz_multipart"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_csv.c" "$src/src/parse/csv.c" "$src/fuzz/shim/shim.c" -o "$bin/fuzz_csv"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_networks.c" "$src/src/parse/networks.c" -o "$bin/fuzz_networks"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_jwt.c" "$src/src/parse/jwt.c" "$src/fuzz/shim/shim.c" -lm -o "$bin/fuzz_jwt"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_sse_format.c" "$src/src/parse/sse_format.c" -o "$bin/fuzz_sse_format"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_handoff_frame.c" "$src/src/parse/frame_decode.c" -o "$bin/fuzz_handoff_frame"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_ws_call.c" "$src/src/parse/ws_call_decode.c" -o "$bin/fuzz_ws_call"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_accept_media.c" "$src/src/parse/accept_media.c" -o "$bin/fuzz_accept_media"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_listen.c" "$src/src/parse/listen_syntax.c" "$src/fuzz/shim/shim.c" \
	-o "$bin/fuzz_listen"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_cors.c" "$src/src/parse/cors_syntax.c" -o "$bin/fuzz_cors"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_html.c" "$src/src/sql/html.c" "$src/fuzz/shim/shim.c" -o "$bin/fuzz_html"
"$cc" "${flags[@]}" "$src/fuzz/fuzz_auth_headers.c" "$src/src/parse/auth_headers.c" -o "$bin/fuzz_auth_headers"
# OpenSSL's own ECDSA encoder is the reference the conversion is checked against.
"$cc" "${flags[@]}" "$src/fuzz/fuzz_jwk.c" "$src/src/parse/jwk.c" "$src/src/parse/jwt.c" "$src/fuzz/shim/shim.c" \
	-lcrypto -lm -o "$bin/fuzz_jwk"

status=0
for t in "${targets[@]}"; do
	work=$(mktemp -d)
	log="$work/log"
	if "$bin/fuzz_$t" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix="$src/fuzz/findings/$t-" -print_final_stats=1 \
		"$work" "$src/fuzz/corpus/$t" >"$log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
		echo "fuzz: $t: ok, $execs runs in ${seconds}s, $cov"
	else
		echo "fuzz: $t: FAILED; the input is in fuzz/findings/" >&2
		grep -E 'ERROR|SUMMARY|assert|runtime error' "$log" | head -n 20 >&2
		status=1
	fi
	rm -rf "$work"
done
exit $status
