// Package e2eansible provisions cosmosd on Debian hosts with the Ansible
// playbooks of deploy/ansible and runs a live workload through their
// operations: the whole path an operator takes, from `make dist` to
// a rolling upgrade, a rollback, a decommission and a node added.
//
// # Running
//
//	make e2e-ansible              # or: go test -v -timeout 30m ./test/e2e-ansible/
//	COSMOSD_E2E_ANSIBLE=0 go test ./...   # skip it although Docker is present
//
// It needs a Docker engine (`docker info` succeeds), ansible-playbook with
// the community.docker collection (Debian's `ansible` package), and, the
// first time, root (or password-less sudo) and debootstrap to build the host
// image; scripts/deps.sh installs the packages. Without them, or with
// -short, it skips and says why.
//
// # The hosts
//
// Each host is a container running systemd as PID 1, made from an image
// that test/e2e-ansible/image/build.sh builds without any registry:
// debootstrap of a minimal Debian 12 with systemd, python3, sudo and
// Debian's etcd-server package (installed, not started), imported with
// `docker import` and cached under a tag that hashes the script. The
// containers get CAP_SYS_ADMIN (so the unit's sandboxing — ProtectSystem,
// PrivateTmp, ... — is really applied), tmpfs on /run and /tmp, and the
// host's cgroup tree: read-only under cgroup v1 (systemd then manages its
// own name=systemd subtree), read-write with the host's cgroup namespace
// under cgroup v2. COSMOSD_E2E_ANSIBLE_PRIVILEGED=1 runs them --privileged
// instead, for engines where that is not enough.
//
// Ansible reaches the containers with the community.docker.docker
// connection plugin (docker exec): the inventory is the only thing that
// differs from real hosts reached over SSH; the playbooks and roles run
// unmodified. The test talks to the nodes from the host by their addresses
// on a private bridge network: gocql on 9042, cosmosctl on 7070.
//
// # What it proves
//
//   - site.yml forms a cluster on five fresh hosts: three etcd members from
//     Debian's package (on hosts where the package's default single-member
//     etcd already runs, as `apt install etcd-server` leaves it) and five
//     cosmosd nodes from the .deb, each with its zone and rack; cosmosctl
//     lists five nodes up and the ring shows 4 healthy replicas for every
//     partition of a table provisioned for 3 partitions; the partitioning
//     article's seed scenario passes through gocql on every node.
//   - the cluster is secure with the roles' defaults: the CA and the
//     generated superuser password stay on the controller next to the
//     inventory (0600) and appear in no playbook output; keys on the hosts
//     are 0600 and owned by their service; CQL refuses a plaintext client
//     and a TLS client without the password; the HTTP port serves HTTPS
//     only; the host's cosmosctl needs the client certificate, and
//     cosmosctl in a login shell on a host works through the role's
//     /etc/profile.d/cosmosctl.sh. The test's clients use TLS and the
//     generated password, as an application would.
//   - rolling-restart.yml upgrades the package (a repacked .deb of a higher
//     version) and restarts the nodes one at a time while a writer inserts
//     idempotent rows at QUORUM: zero failed writes, every acknowledged row
//     is read back at QUORUM, and every node logged its leadership hand-off
//     on SIGTERM.
//   - site.yml with an older package rolls every host back but restarts
//     the nodes one at a time (the role's handler waits for a healthy
//     cluster before and after each restart; the journals show no two nodes
//     down at once), again under a writer with zero failed operations.
//   - a second site.yml run changes nothing (changed=0 on every host in the
//     PLAY RECAP).
//   - site.yml with cosmosd_cert_rotate=true re-issues every host's
//     certificate (cosmosd's and etcd's); each node reloads it (SIGHUP,
//     logged) without a restart, and new TLS sessions on every node and
//     cosmosctl with the new client certificate work.
//   - decommission.yml moves a node's replicas away (under a writer),
//     stops its service, and changes nothing when run again.
//   - add-node.yml adds a sixth host, which receives replicas (under a
//     writer); at the end every row any writer had acknowledged is read
//     back at QUORUM.
//
// Every container and the network carry the label cosmosd-e2e-ansible=<run
// id> and are removed when the test ends; a run killed by go test's
// -timeout is swept by the next run. On failure the journal of every host
// is saved and its tail printed, with the playbook logs.
package e2eansible
