#!/usr/bin/env bash
# Runs every fuzz target briefly (default 3s each) on top of its seed
# corpus, which `go test` already replays as unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-3s}
fail=0
while IFS= read -r file; do
	dir=$(dirname "$file")
	for name in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //'); do
		echo "fuzz $dir $name ($time)"
		if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$time" "./$dir" >/tmp/fuzz-$$.log 2>&1; then
			cat /tmp/fuzz-$$.log
			fail=1
		fi
	done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | sort)
rm -f /tmp/fuzz-$$.log
exit $fail
