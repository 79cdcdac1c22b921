#!/usr/bin/env bash
# Builds the Docker image that plays a Debian host in the Ansible end-to-end
# test, without any registry: debootstrap a minimal Debian 12 root
# filesystem with systemd (PID 1 of the container), python3 (for Ansible),
# sudo and Debian's etcd-server package, then `docker import` it.
#
# The image is tagged cosmosd-e2e-ansible-host:<hash of this script>, so an
# unchanged script reuses the image built before (debootstrap takes a few
# minutes); other tags of the repository are removed. Prints the tag.
#
# Needs root (debootstrap), debootstrap and a reachable Debian mirror
# ($DEBIAN_MIRROR, default http://deb.debian.org/debian).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=cosmosd-e2e-ansible-host
suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# etcd-server is installed but left disabled, as on a host that has the
# package but never started it; the etcd role configures and starts it.
packages=systemd,systemd-sysv,dbus,python3,python3-apt,sudo,etcd-server,adduser,iproute2,procps,ca-certificates
tag="$repo:$(cat "$0" | sha256sum | cut -c1-16)"

if docker image inspect "$tag" >/dev/null 2>&1; then
	echo "$tag"
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo -n true 2>/dev/null || { echo "build.sh: debootstrap needs root (or password-less sudo)" >&2; exit 1; }
	sudo="sudo -n"
fi
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || { echo "build.sh: debootstrap is not installed (scripts/deps.sh installs it)" >&2; exit 1; }

root=$(mktemp -d /var/tmp/cosmosd-e2e-rootfs.XXXXXX)
trap '$sudo rm -rf "$root"' EXIT
echo "build.sh: debootstrap $suite ($packages) from $mirror into $root" >&2
start=$(date +%s)
if ! $sudo debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$root.log" 2>&1; then
	tail -20 "$root.log" >&2
	rm -f "$root.log"
	exit 1
fi
rm -f "$root.log"

# A container is a host without consoles, udev or disks: mask the units
# that expect them, and the timers that would run apt behind Ansible's back.
in_root() { $sudo chroot "$root" "$@"; }
in_root systemctl disable etcd.service >/dev/null 2>&1
for unit in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer \
	e2scrub_reap.service getty@.service console-getty.service systemd-pstore.service \
	systemd-remount-fs.service sys-kernel-debug.mount sys-kernel-tracing.mount; do
	in_root systemctl mask "$unit" >/dev/null 2>&1
done
# Each container gets its own machine id at boot.
$sudo truncate -s 0 "$root/etc/machine-id"
in_root apt-get clean
echo "build.sh: root filesystem ready in $(($(date +%s) - start))s" >&2

$sudo tar -C "$root" -c . | docker import \
	--change 'ENV container=docker' \
	--change 'CMD ["/sbin/init"]' \
	--change "LABEL cosmosd-e2e-ansible.image=$tag" \
	- "$tag" >/dev/null
for old in $(docker images "$repo" --format '{{.Repository}}:{{.Tag}}'); do
	[ "$old" = "$tag" ] || docker rmi "$old" >/dev/null 2>&1 || true
done
echo "$tag"
