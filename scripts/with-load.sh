#!/bin/sh
# Runs a command while busy loops keep every core busy beside it, then stops
# them, whatever the command's result: `make test-loaded` runs `make test`
# this way, so that a test that passes only on a quiet machine fails here
# instead of on a user's.
#
#   scripts/with-load.sh [-n LOOPS_PER_CORE] COMMAND [ARG...]
#
# LOOPS_PER_CORE is 2 unless given (LOAD_PER_CORE in the environment also
# sets it). The loops run at nice 0, as the command's neighbours would, and
# each is started under `timeout` as a backstop: a loop outlives this
# script by at most LOAD_MAX_SEC (4 hours) even if the script is SIGKILLed.
# The exit status is the command's.
set -u
per_core=${LOAD_PER_CORE:-2}
if [ "${1:-}" = "-n" ]; then
	per_core=${2:?"-n: expected a number of loops per core"}
	shift 2
fi
case "$per_core" in
'' | *[!0-9]*) echo "with-load.sh: loops per core: expected a number, got '$per_core'" >&2; exit 2 ;;
esac
if [ $# -eq 0 ]; then
	echo "usage: scripts/with-load.sh [-n LOOPS_PER_CORE] COMMAND [ARG...]" >&2
	exit 2
fi
cores=$(nproc)
n=$((cores * per_core))
pids=""
stop() {
	# Only the loops this script started, by pid (timeout passes the
	# signal on to its shell).
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	for p in $pids; do
		wait "$p" 2>/dev/null
	done
	pids=""
}
trap 'stop' EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap 'stop; exit 129' HUP
trap 'stop; exit 141' PIPE
i=0
while [ "$i" -lt "$n" ]; do
	# Nice 0 whatever this script's own niceness (root may lower it): the
	# load competes with the tests as other work on the machine would.
	# exec keeps the pid, so $! is the timeout that is stopped below.
	sh -c 'renice -n 0 -p $$ >/dev/null 2>&1; exec timeout "$1" sh -c "while :; do :; done"' \
		with-load "${LOAD_MAX_SEC:-14400}" &
	pids="$pids $!"
	i=$((i + 1))
done
echo "== with-load: $n busy loops ($per_core per core on $cores cores): pids$pids"
"$@"
rc=$?
stop
echo "== with-load: the busy loops are stopped; the command exited $rc"
exit $rc
