#!/usr/bin/env bash
# demo: runs the programs in examples/programs/ — one benign, six hostile —
# through every tier `agentjail check` reports available, and prints what each
# tier let them do. Run by `make demo` after `make all`.
#
# The hostile programs are only ever run through `agentjail run`, never by
# python3 directly: that is the point of the demo, and 04_fork_bomb.py is
# bounded but still a fork bomb.
#
# Two programs need something to attack:
#   06_read_secrets.py  a secret the host holds: a random token in a 0600 file
#                       in a 0700 directory, and in the environment agentjail is
#                       started with.
#   07_network.py       a TCP listener on the host's 127.0.0.1 that records
#                       whether anything reached it.
# The sandbox's environment is built from nothing, so AJ_DEMO_SECRET_FILE and
# AJ_DEMO_PORT never reach the program. The demo therefore runs a copy of each
# of the two programs with the value written into its placeholder line
# (`SECRET_FILE = '...'  # replaced by the demo`, `PORT = 22  # replaced by the
# demo`), so the program knows exactly where to look, as an attacker who had
# read the host's configuration would.
#
# Exit status: 0 whenever the demo ran, whatever the programs did; 1 only when
# the demo itself could not run (agentjail or python3 missing, no tier works).
set -u

cd "$(dirname "$0")/.." || exit 1
AJ=build/agentjail
PROGRAMS=examples/programs
TIMEOUT=5
LISTEN_SEC=15

fail() {
	echo "demo: $*" >&2
	exit 1
}

[ -x "$AJ" ] || fail "$AJ is missing: run 'make all' first"
command -v python3 >/dev/null || fail "python3 is missing: the demo parses results with it"
[ -d "$PROGRAMS" ] || fail "$PROGRAMS is missing"

# ---- the demo's own state, all of it under DEMO_DIR, all of it removed on exit

# Under build/, not /tmp: every tier hides the host's /tmp, so a secret there
# would prove nothing. Here the program can name the path; only the
# sandbox's uid and mounts stand between it and the token.
mkdir -p build
DEMO_DIR=$(mktemp -d "$PWD/build/demo.XXXXXX") || fail "mktemp -d failed"
chmod 700 "$DEMO_DIR"
LISTENER_PID=""

stop_listener() {
	if [ -n "$LISTENER_PID" ]; then
		kill "$LISTENER_PID" 2>/dev/null
		wait "$LISTENER_PID" 2>/dev/null
		LISTENER_PID=""
	fi
}
# shellcheck disable=SC2317  # invoked by the trap
cleanup() {
	stop_listener
	rm -rf "$DEMO_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the secret 06_read_secrets.py tries to steal

# A token that appears nowhere else, so finding it in a program's output can
# only mean the program read it.
TOKEN="ajdemo-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
SECRET_FILE="$DEMO_DIR/secret.txt"
(umask 077 && printf '%s\n' "$TOKEN" >"$SECRET_FILE") || fail "cannot write $SECRET_FILE"
chmod 600 "$SECRET_FILE"
export AJ_DEMO_SECRET="$TOKEN"
export AJ_DEMO_SECRET_FILE="$SECRET_FILE"

# ---- the listener 07_network.py tries to reach

# Listens on an ephemeral port of the host's loopback for one connection, for
# at most LISTEN_SEC seconds so a demo that dies cannot leave it behind for
# long. It publishes the port by renaming a finished file (never a half-written
# one) and writes "accepted" if anything connected.
LISTENER_PY='
import os, socket, sys
port_file, accepted_file, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.bind(("127.0.0.1", 0))
s.listen(8)
s.settimeout(seconds)
with open(port_file + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
try:
    conn, peer = s.accept()
except socket.timeout:
    sys.exit(0)
with open(accepted_file, "w") as f:
    f.write("accepted %s:%d\n" % peer)
conn.close()
'

# Starts a fresh listener; sets LISTENER_PID and PORT, or returns 1.
start_listener() {
	rm -f "$DEMO_DIR/port" "$DEMO_DIR/accepted"
	python3 -c "$LISTENER_PY" "$DEMO_DIR/port" "$DEMO_DIR/accepted" "$LISTEN_SEC" &
	LISTENER_PID=$!
	for _ in $(seq 50); do
		[ -s "$DEMO_DIR/port" ] && break
		sleep 0.1
	done
	PORT=$(cat "$DEMO_DIR/port" 2>/dev/null) || PORT=""
	[ -n "$PORT" ]
}

# ---- one run

# Reads agentjail's JSON on stdin; prints status, exit, wall ms and what the
# program printed (its first stdout line, else its last stderr line, else the
# message), tab-separated. No field is ever empty and none holds a tab, so
# `read` splits them back exactly.
PARSE_PY='
import json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    print("no-json\t-\t-\t(agentjail printed no JSON)")
    sys.exit(0)
def clean(s, n=50):
    s = " ".join(s.replace("\t", " ").split())
    return (s[: n - 3] + "...") if len(s) > n else s
out = [l for l in (r.get("stdout") or "").splitlines() if l.strip()]
err = [l for l in (r.get("stderr") or "").splitlines() if l.strip()]
if out:
    what = out[0]
elif err:
    what = "stderr: " + err[-1]
elif r.get("message"):
    what = "agentjail: " + r["message"]
else:
    what = ""
if r.get("exit_code") is not None:
    code = str(r["exit_code"])
elif r.get("signal"):
    code = "sig%d" % r["signal"]
else:
    code = "-"
print("\t".join([r.get("status") or "-", code, "%.0f" % (r.get("wall_ms") or 0),
                 clean(what) or "(nothing)"]))
'

ROW_FORMAT="%-20s %-9s %-13s %5s %8s  %-50s  %s\n"
RUNS=0
SANDBOX_ERRORS=0
SECRET_RUNS=0
SECRET_LEAKS=0
NET_RUNS=0
NET_REACHED=0

# run_one PROGRAM TIER: runs it, prints its row of the table.
run_one() {
	local prog=$1 tier=$2 name file verdict="" json status code wall what
	name=$(basename "$prog")
	file=$prog
	case $name in
	06_*)
		file="$DEMO_DIR/$name"
		sed "s|^SECRET_FILE = .*# replaced by the demo\$|SECRET_FILE = '$SECRET_FILE'  # replaced by the demo|" \
			"$prog" >"$file"
		grep -q "^SECRET_FILE = '$SECRET_FILE'" "$file" ||
			echo "demo: warning: no SECRET_FILE placeholder in $prog" >&2
		;;
	07_*)
		file="$DEMO_DIR/$name"
		if ! start_listener; then
			echo "demo: warning: the listener did not start; $name runs without one" >&2
			PORT=22
		fi
		sed "s|^PORT = .*# replaced by the demo\$|PORT = $PORT  # replaced by the demo|" \
			"$prog" >"$file"
		grep -q "^PORT = $PORT " "$file" ||
			echo "demo: warning: no PORT placeholder in $prog" >&2
		export AJ_DEMO_PORT="$PORT"
		;;
	esac

	# A non-zero exit is the program's (124 timeout, 137 killed, ...), not
	# the demo's: the JSON says what happened.
	json=$("$AJ" run --json --tier "$tier" --timeout "$TIMEOUT" "$file" 2>"$DEMO_DIR/agentjail.err")
	IFS=$'\t' read -r status code wall what < <(printf '%s' "$json" | python3 -c "$PARSE_PY")
	if [ "$status" = no-json ]; then
		what="agentjail: $(tail -n 1 "$DEMO_DIR/agentjail.err" | cut -c 1-40)"
	fi

	case $name in
	06_*)
		SECRET_RUNS=$((SECRET_RUNS + 1))
		# The whole JSON, not just stdout: a leak through stderr or the
		# message is a leak too.
		case $json in
		*"$TOKEN"*) verdict="secret LEAKED"; SECRET_LEAKS=$((SECRET_LEAKS + 1)) ;;
		*) verdict="secret held" ;;
		esac
		;;
	07_*)
		NET_RUNS=$((NET_RUNS + 1))
		stop_listener
		if [ -s "$DEMO_DIR/accepted" ]; then
			verdict="host listener REACHED"
			NET_REACHED=$((NET_REACHED + 1))
		else
			verdict="host listener not reached"
		fi
		unset AJ_DEMO_PORT
		;;
	esac
	RUNS=$((RUNS + 1))
	[ "$status" = sandbox_error ] && SANDBOX_ERRORS=$((SANDBOX_ERRORS + 1))
	# shellcheck disable=SC2059
	printf "$ROW_FORMAT" "$name" "$tier" "$status" "$code" "$wall" "$what" "$verdict"
}

# ---- main

echo "agentjail check:"
CHECK=$("$AJ" check 2>&1)
printf '%s\n' "$CHECK" | sed 's/^/  /'
TIERS=$(printf '%s\n' "$CHECK" | awk '$2 == "available" { print $1 }')
[ -n "$TIERS" ] || fail "no tier is available on this machine (see above)"
echo

PROGS=$(find "$PROGRAMS" -maxdepth 1 -name '*.py' | sort)
[ -n "$PROGS" ] || fail "no programs in $PROGRAMS"

echo "Each program runs with --timeout $TIMEOUT and the default limits."
echo "The host's secret is in $SECRET_FILE (0600) and in agentjail's environment."
echo
# shellcheck disable=SC2059
printf "$ROW_FORMAT" program tier status exit "wall ms" "what it printed" verdict
# shellcheck disable=SC2059
printf "$ROW_FORMAT" "-------" "----" "------" "----" "-------" "---------------" "-------"
for tier in $TIERS; do
	for prog in $PROGS; do
		run_one "$prog" "$tier"
	done
done

echo
echo "demo: $RUNS runs on tier(s) $(printf '%s\n' "$TIERS" | paste -sd, -):" \
	"secret leaked in $SECRET_LEAKS of $SECRET_RUNS," \
	"host listener reached in $NET_REACHED of $NET_RUNS," \
	"$SANDBOX_ERRORS sandbox error(s)."
exit 0
