// Package e2e runs cosmosd on real hosts: every node and every etcd member
// is a Docker container on a private bridge network, and the tests fail
// them the way machines fail while clients keep writing.
//
// # Running
//
//	make e2e                      # or: go test -v -timeout 20m ./test/e2e/
//	go test -v -run 'TestFailures/pause' ./test/e2e/   # one scenario
//	COSMOSD_E2E=0 go test ./...   # skip them although Docker is present
//
// The tests need a Docker engine the user can reach (`docker info`
// succeeds) and nothing else: no registry, no base image. They build the
// static binaries (CGO_ENABLED=0) once per run, put them in an image
// `cosmosd-e2e:<content hash>` FROM scratch (kept as a cache; older tags
// are removed), and talk to the containers from the host by their IP
// addresses: gocql on 9042, the host-built cosmosctl on 7070, an etcd client
// on 2379. Without Docker, or with -short, they skip with the reason.
//
// # The cluster
//
// One random 10.x.y.0/24 bridge network per test; a 3-member etcd cluster
// (`cosmosd etcd`, .11-.13) and 5 cosmosd nodes (.21-.25, zone zN, rack rN,
// raft, 4 replicas per partition) with fast repair: dead_after 5s, and a
// registration TTL of 15s (a YAML file copied into each container, as it
// has no flag). The TTL is longer than the default 10s on purpose: a lease
// kept alive through an etcd member that went silent survives only if the
// etcd client notices the dead connection (gRPC keepalive, 5s + 3s) and
// moves the keepalive stream elsewhere before the client's own lease
// deadline, which can be as close as 2/3 of the TTL; with 10s the
// pause-etcd scenario makes nodes flap.
//
// The cluster is secure, as production clusters are (docs/security.md):
// the test makes a CA and a node certificate per container with the
// security package (copied to /certs before the container starts); the
// etcd members serve TLS to clients and peers (`cosmosd etcd --certs-dir`,
// https peer URLs), the nodes run with --certs-dir, reach etcd with
// --etcd-ca-file/--etcd-cert-file/--etcd-key-file and authenticate CQL
// clients by password (superuser cassandra, created on the first start).
// The test's gocql sessions use TLS verified against the CA and the
// password, its etcd client and cosmosctl (COSMOSCTL_CERTS_DIR) the client
// certificate root.
//
// Every container, volume and network is labelled cosmosd-e2e=<run id> and
// removed when the test ends, also on failure; a run that was killed (go
// test's -timeout panics skip cleanups) is swept by the next one, or by
// scripts/e2e-clean.sh. On failure (or with COSMOSD_E2E_LOGS=1) the tail
// of every container's log is printed and the full logs are saved.
//
// # What each scenario proves
//
// Each scenario runs a writer that inserts idempotent rows at QUORUM from
// the host through all five nodes with gocql's retry policy. After the
// scenario every acknowledged row is read back at QUORUM (nothing
// acknowledged is lost) and the writer must have seen no error beyond the
// driver's retries (clients recover). Before the next scenario the cluster
// must be calm again: 5 nodes up, every partition of every table has 4
// voting replicas on live nodes covering the whole token ring, each node
// holds exactly the replicas the ring gives it (stale ones were garbage
// collected), and no placement operation is in flight.
//
//   - forms: 5 nodes register and show up in `cosmosctl nodes list`; a
//     table provisioned with 30000 RU/s gets 3 physical partitions; the
//     partitioning article's seed scenario (uprofile.user, theo's rows in
//     clustering order) works through every node.
//   - refuses-insecure: a plaintext CQL client, a TLS client without a
//     password or with a wrong one, cosmosctl without certificates and a
//     plaintext etcd client are all refused.
//   - stop: `docker stop` (SIGTERM, graceful shutdown). Writes continue;
//     after dead_after the controller replaces the node's replicas; when
//     the node starts again its stale replicas are garbage-collected.
//   - pause: `docker pause` (the process freezes, its sockets stay open) for
//     longer than dead_after, then unpause: same checks, and the node that
//     comes back from the dead rejoins.
//   - disconnect: `docker network disconnect` (the host vanishes from the
//     network), reconnect later: same checks. In this and the pause
//     scenario no operation of the writer may take longer than 2s: the
//     nodes notice the victim's silence (it leads partitions) within half
//     a second and route around it, and the writer's driver leaves a
//     silent coordinator by speculative execution after 500ms.
//   - kill-controller: `docker kill` (SIGKILL) of the elected controller
//     (etcd election <prefix>controller): another node takes over within
//     seconds and performs the repair the dead controller's replicas need.
//   - kill-etcd: `docker kill` of the etcd leader: the two others keep
//     quorum; writes, DDL and node registrations keep working (no node is
//     seen down, no repair is planned); the member restarts and rejoins.
//   - pause-etcd: the same with `docker pause`: the frozen member's client
//     connections stay open and silent, which only the etcd client's
//     keepalives detect.
package e2e
