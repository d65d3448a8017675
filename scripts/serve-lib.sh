# Sourced by the scripts that serve until stopped (run.sh, demo.sh,
# topology.sh): stopping cleanly on Ctrl-C, SIGTERM or exit, and waiting
# while the clusters run.  Functions, not a program: a trapped signal must
# interrupt the parent shell's wait, which it cannot while the shell waits
# for a child in the foreground.

# Runs the function named $1 once when the script exits, is interrupted
# (Ctrl-C) or is sent SIGTERM.
stop_on_exit() {
	_serve_stop_fn=$1
	_serve_stopped=0
	trap '_serve_stop_once' EXIT
	trap 'exit 0' INT TERM
}

_serve_stop_once() {
	[ "$_serve_stopped" -eq 1 ] && return
	_serve_stopped=1
	echo
	"$_serve_stop_fn"
}

# Returns once no cluster in the data directories given runs any more,
# looking once a second.  $cluster is scripts/cluster.sh.
serve_until_stopped() {
	local dir alive
	while :; do
		alive=0
		for dir in "$@"; do
			"$cluster" as-owner pg_ctl -D "$dir" status >/dev/null 2>&1 && alive=1
		done
		[ $alive -eq 1 ] || return 0
		sleep 1 &
		wait $! || true
	done
}
