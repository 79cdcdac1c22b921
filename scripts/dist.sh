#!/usr/bin/env bash
# Builds the release artefacts into dist/: a tarball with static binaries,
# the health check script, the systemd unit, the default configuration,
# README.md and LICENSE, and a Debian package with the same.
# Usage: scripts/dist.sh VERSION COMMIT DATE
#
# DIST_DIR (default dist) is where the artefacts go. DIST_BINARIES, when
# set, is a directory holding cosmosd and cosmosctl to package instead of
# building them: scripts/dist_test.go checks the packages' layout with it
# in a second, without two static builds.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?version}; commit=${2:?commit}; date=${3:?date}
dist=${DIST_DIR:-dist}
pkg=github.com/cosmosd/cosmosd
ldflags="-s -w -X $pkg/daemon.Version=$version -X $pkg/daemon.Commit=$commit -X $pkg/daemon.BuildDate=$date -X $pkg/ctl.Version=$version -X $pkg/ctl.Commit=$commit -X $pkg/ctl.BuildDate=$date"
# health is the script the Ansible role installs and its playbooks wait
# with between restarts; an operator without Ansible needs it as much.
health=deploy/ansible/roles/cosmosd/files/cosmosd-health
name=cosmosd-$version-linux-amd64
out=$dist/$name
rm -rf "$out" && mkdir -p "$out/bin" "$out/systemd" "$out/etc/cosmosd"
for cmd in cosmosd cosmosctl; do
	if [ -n "${DIST_BINARIES:-}" ]; then
		cp "$DIST_BINARIES/$cmd" "$out/bin/$cmd"
	else
		CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "$ldflags" -o "$out/bin/$cmd" "./cmd/$cmd"
	fi
done
install -m 0755 "$health" "$out/bin/cosmosd-health"
cp README.md LICENSE "$out/"
cp systemd/cosmosd.service "$out/systemd/"
cp systemd/cosmosd.yaml "$out/etc/cosmosd/"
tar -C "$dist" -czf "$dist/$name.tar.gz" "$name"

# Debian package: binaries and the health script in /usr/bin, unit in
# /lib/systemd/system, the configuration as a conffile, README and the
# license (as Debian's copyright file) in /usr/share/doc/cosmosd, a system
# user created on install.
deb=$dist/deb
doc=$deb/usr/share/doc/cosmosd
rm -rf "$deb" && mkdir -p "$deb/DEBIAN" "$deb/usr/bin" "$deb/lib/systemd/system" "$deb/etc/cosmosd" "$doc"
cp "$out/bin/cosmosd" "$out/bin/cosmosctl" "$out/bin/cosmosd-health" "$deb/usr/bin/"
cp systemd/cosmosd.service "$deb/lib/systemd/system/"
cp systemd/cosmosd.yaml "$deb/etc/cosmosd/"
cp README.md "$doc/"
cp LICENSE "$doc/copyright"
# A release tag (v1.2.3) is its own Debian version. A development build is
# versioned by its commit time, so later commits always sort higher for dpkg
# (a commit hash does not): 0.0.0~dev.20261121133534.gabc1234.
case "$version" in
v[0-9]*) debversion=$(echo "${version#v}" | sed 's/[^A-Za-z0-9.+~-]/./g') ;;
*)
	stamp=$(git log -1 --format=%cd --date=format:%Y%m%d%H%M%S 2>/dev/null || date -u +%Y%m%d%H%M%S)
	debversion="0.0.0~dev.$stamp.g$(echo "$commit" | sed 's/[^A-Za-z0-9]//g')"
	;;
esac
cat > "$deb/DEBIAN/control" <<CONTROL
Package: cosmosd
Version: $debversion
Section: database
Priority: optional
Architecture: amd64
Depends: adduser
Recommends: python3
Maintainer: cosmosd maintainers <maintainers@cosmosd.invalid>
Description: Cassandra-compatible database partitioned like Azure Cosmos DB
 cosmosd speaks the CQL native protocol and partitions, replicates and
 scales data the way Azure Cosmos DB's Cassandra API does.
CONTROL
echo /etc/cosmosd/cosmosd.yaml > "$deb/DEBIAN/conffiles"
cat > "$deb/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
	getent group cosmosd >/dev/null || addgroup --system cosmosd
	getent passwd cosmosd >/dev/null || adduser --system --ingroup cosmosd --home /var/lib/cosmosd --no-create-home cosmosd
	if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
fi
POSTINST
chmod 0755 "$deb/DEBIAN/postinst"
dpkg-deb --root-owner-group --build "$deb" "$dist/cosmosd_${debversion}_amd64.deb" >/dev/null
rm -rf "$deb"
echo "$dist/$name.tar.gz"
echo "$dist/cosmosd_${debversion}_amd64.deb"
