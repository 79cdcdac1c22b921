#!/usr/bin/env bash
# Runs every fuzz target (each func FuzzXxx in a _test.go file) for a fixed
# number of executions, one target at a time, and stops at the first
# failure, naming it; the failing input is then in the package's
# testdata/fuzz/FuzzXxx/ (rerun it with the go test -run line printed).
# At the end it prints executions and time per target.
#
#   scripts/fuzz.sh                  every target, 1,000,000 executions each
#   scripts/fuzz.sh FuzzPlan         targets whose name matches a regexp
#
# Environment:
#   FUZZ_EXECS       executions per target (default 1000000)
#   FUZZ_LIVE_EXECS  executions of FuzzLiveGroup (default 20000): each one
#                    drives a live 4-replica raft group and waits until it
#                    has committed and converged again, 5-100 ms and up to
#                    seconds when an input forces elections, so 10^6 would
#                    take about a day
#   FUZZ_PARALLEL    fuzzing workers per target (go test -parallel; default
#                    GOMAXPROCS); 1 leaves a core to others on a shared host
#   FUZZ_FROM        start at this target (resume after a fixed failure)
#   FUZZ_TIMEOUT     bound on one target's run (default 3h)
set -euo pipefail
cd "$(dirname "$0")/.."
only=${1:-.}
if [ -z "$only" ]; then only=.; fi
execs=${FUZZ_EXECS:-1000000}
declare -A count=(
	[FuzzLiveGroup]=${FUZZ_LIVE_EXECS:-20000}
)
par=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
	par=(-parallel "$FUZZ_PARALLEL")
fi
from=${FUZZ_FROM:-}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
summary=()
total_start=$(date +%s)
while IFS= read -r file; do
	dir=$(dirname "$file")
	for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		if [ -n "$from" ]; then
			if [ "$name" != "$from" ]; then
				continue
			fi
			from=""
		fi
		if ! [[ $name =~ $only ]]; then
			continue
		fi
		n=${count[$name]:-$execs}
		echo "fuzz $dir $name (${n} executions)"
		start=$(date +%s)
		if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${n}x" -timeout "${FUZZ_TIMEOUT:-3h}" "${par[@]}" "./$dir" >"$log" 2>&1; then
			cat "$log"
			echo "FAIL: fuzz target $name in ./$dir failed after $(($(date +%s) - start))s"
			exit 1
		fi
		secs=$(($(date +%s) - start))
		summary+=("$(printf '%-28s %-22s %9s %6ss' "$name" "$dir" "$n" "$secs")")
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | sed 's|^\./||' | sort)
printf '%-28s %-22s %9s %7s\n' target package executions time
printf '%s\n' "${summary[@]}"
echo "all fuzz targets passed in $(($(date +%s) - total_start))s"
