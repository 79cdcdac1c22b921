#!/usr/bin/env bash
# Installs the Debian packages the tests and tools need, when missing.
set -euo pipefail
need=()
/usr/bin/python3 -c 'import cassandra' 2>/dev/null || need+=(python3-cassandra)
command -v protoc >/dev/null || need+=(protobuf-compiler)
# make e2e-ansible: Ansible (with the community.docker collection) and
# debootstrap for the test's Debian host image.
command -v ansible-playbook >/dev/null || need+=(ansible)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
# daemon's TestPrometheusRules: promtool checks deploy/prometheus's rules.
command -v promtool >/dev/null || need+=(prometheus)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
