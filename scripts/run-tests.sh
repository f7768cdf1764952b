#!/bin/sh
# Runs each test program given, in order, and ends with one summary line.
# A test program is a cmocka runner, a .mjs file for node's test runner, or
# a directory of pytest tests (python/tests, or tests/NAME/ with its slash; run with $PYTHON, Debian's python3 by
# default); this only adds the totals and makes a crashed program count as
# a failure.
set -u
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
failed=0
passed=0
# The names of what failed, repeated after the totals: CI keeps only the
# end of a long log, and the totals alone do not say where to look.
names=""
for t in "$@"; do
	echo "== $t"
	bad=""
	why=""
	case "$t" in
	*.mjs)
		# node's own test runner: its summary says "# pass N" / "# fail N".
		out=$(node --test --test-timeout=300000 "$t" 2>&1)
		rc=$?
		printf '%s\n' "$out"
		n=$(printf '%s\n' "$out" | sed -n 's/^# pass \([0-9]*\)$/\1/p' | tail -n 1)
		f=$(printf '%s\n' "$out" | sed -n 's/^# fail \([0-9]*\)$/\1/p' | tail -n 1)
		bad=$(printf '%s\n' "$out" | sed -n 's/^ *not ok [0-9]* - \(.*\)$/\1/p')
		;;
	*/tests|tests/*/)
		# pytest's summary: "== 3 failed, 97 passed in 60.1s ==".
		out=$("${PYTHON:-/usr/bin/python3}" -m pytest -q -p no:cacheprovider "$t" 2>&1)
		rc=$?
		printf '%s\n' "$out"
		summary=$(printf '%s\n' "$out" | tail -n 1)
		n=$(printf '%s\n' "$summary" | grep -o '[0-9]* passed' | cut -d' ' -f1)
		f=$(printf '%s\n' "$summary" | grep -o '[0-9]* failed' | cut -d' ' -f1)
		e=$(printf '%s\n' "$summary" | grep -o '[0-9]* error' | cut -d' ' -f1)
		f=$(( ${f:-0} + ${e:-0} ))
		bad=$(printf '%s\n' "$out" | sed -n 's/^\(FAILED\|ERROR\) \(.*\)$/\2/p')
		[ "$f" -eq 0 ] && f=""
		;;
	*)
		out=$("$t" 2>&1)
		rc=$?
		printf '%s\n' "$out"
		n=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | tail -n 1)
		f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:/\1/p' | tail -n 1)
		bad=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([^ ]*\)$/\1/p' | sort -u)
		# What each failed case said (cmocka's lines from its RUN to its
		# FAILED, the last 12, each cut to 300 bytes): the summary is all
		# of a long log that CI keeps.
		for b in $bad; do
			why="$why$(printf '%s\n' "$out" | awk -v n="$b" '
				$0 == "[ RUN      ] " n { keep = 1; k = 0; next }
				keep && $0 == "[  FAILED  ] " n { exit }
				keep { l[k++ % 12] = substr($0, 1, 300) }
				END { s = k > 12 ? k - 12 : 0; for (i = s; i < k; i++) print "    " n ": " l[i % 12] }')
"
		done
		;;
	esac
	passed=$((passed + ${n:-0}))
	if [ "$rc" -ne 0 ]; then
		failed=$((failed + ${f:-1}))
		[ -n "$bad" ] || bad="(exit $rc, no test named)"
		names="$names$(printf '%s\n' "$bad" | sed "s|^|  $t: |")
$why"
	fi
done
echo "$passed passed, $failed failed"
[ -z "$names" ] || printf 'failed:\n%s' "$names"
[ "$failed" -eq 0 ]
