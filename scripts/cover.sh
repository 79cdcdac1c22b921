#!/bin/sh
# cover.sh prints the unit-test coverage of the packages above the
# consensus layer, measured as a newcomer runs them: go test -short, with
# embedded etcd forbidden (embedded.ForbidEnv in cluster/embedded), so every statement
# counted runs without etcd, a cluster or Docker. It fails when a package
# is below COVER_MIN percent (default 75).
set -eu
GO=${GO:-go}
MIN=${COVER_MIN:-75}
PKGS=${COVER_PKGS:-"./cql/exec ./placement ./admin ./router ./cluster"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
for p in $PKGS; do
	name=$(echo "$p" | tr '/.' '__')
	if ! COSMOSD_FORBID_ETCD=1 $GO test -short -count=1 -coverprofile="$out/$name.cov" "$p" >"$out/$name.log" 2>&1; then
		cat "$out/$name.log"
		echo "cover: $p: tests failed"
		fail=1
		continue
	fi
	pct=$($GO tool cover -func="$out/$name.cov" | awk '/^total:/ {sub("%", "", $3); print $3}')
	verdict=ok
	if awk -v p="$pct" -v m="$MIN" 'BEGIN { exit !(p < m) }'; then
		verdict="below $MIN%"
		fail=1
	fi
	printf '%-14s %6s%%  %s\n' "$p" "$pct" "$verdict"
done
exit $fail
