#!/usr/bin/env bash
# Checks the systemd unit with systemd-analyze verify. The unit's
# ExecStart points at /usr/bin/cosmosd, which need not exist on the build
# machine, so a copy pointing at the freshly built binary is verified.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not found: skipping unit verification" >&2; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s#/usr/bin/cosmosd#$PWD/bin/cosmosd#" systemd/cosmosd.service > "$tmp/cosmosd.service"
out=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify "$tmp/cosmosd.service" 2>&1 || true)
# The system user is created on install; an unknown user is not a unit
# error on the build machine.
out=$(echo "$out" | grep -v "^$" | grep -vi "user cosmosd\|group cosmosd\|Failed to resolve user\|Failed to resolve group" || true)
if [ -n "$out" ]; then
	echo "systemd-analyze verify:" >&2
	echo "$out" >&2
	exit 1
fi
echo "systemd unit verified"
