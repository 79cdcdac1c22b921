// Package nemesis is cosmosd's fault-injection suite at the CQL level:
// clients on the host run a workload whose every operation is recorded
// while a nemesis kills, pauses, disconnects, partitions, skews the clock
// of, fills the disk of and wipes the hosts of a containerised cluster,
// and an operator splits partitions, moves replicas and transfers
// leaderships. The history is then checked: linearizable (porcupine),
// nothing applied twice, nothing acknowledged lost, counters exact.
//
// # Running
//
//	make nemesis                      # long mode: 10 minutes of faults
//	go test -v -timeout 30m ./test/nemesis/   # short mode: 3 minutes (make test runs it)
//	COSMOSD_NEMESIS_SEED=42 COSMOSD_NEMESIS_FAULTS=pause,kill go test -v ./test/nemesis/
//	COSMOSD_NEMESIS=0 go test ./...   # skip it although Docker is present
//
// Environment: COSMOSD_NEMESIS_SEED replays a run's schedule (the seed is
// printed first); COSMOSD_NEMESIS_DURATION sets the fault phase (default
// 3m); COSMOSD_NEMESIS_FAULTS restricts the fault kinds (comma-separated:
// kill, pause, disconnect, partition, clock-skew, disk-full, wipe,
// two-down); COSMOSD_NEMESIS_LOGS=1 prints the containers' log tails even
// when the run passes; COSMOSD_NEMESIS_REPORT=FILE also writes the
// markdown report there. Without Docker, or with -short, the run skips
// with the reason; the checkers' own tests (hand-written histories that
// must be flagged) always run.
//
// Each run keeps a directory (its path is logged) with the report, the
// history (one operation a line), porcupine's visualisation of any key
// that is not linearizable, and every container's log.
//
// # The cluster
//
// As test/e2e (reusing test/dockertest and test/blackbox): static
// binaries in an image FROM scratch, 3 etcd members (`cosmosd etcd`) and
// 5 cosmosd nodes (raft, 4 replicas per partition, dead_after 5s) on a
// private bridge network, every resource labelled cosmosd-nemesis=<run>
// and removed at the end (or swept by the next run). When the test may
// mount (root), each node's /data is a 2 GiB ext4 file system of its own
// (a sparse image in /dev/shm, loop-mounted), so the disk-full fault can
// fill it from outside; each node reads its clock offset from
// /clock-offset (the test hook testing_clock_offset_file: Go does not read
// the time through libc, so libfaketime cannot skew it).
//
// # Workload
//
// Six client goroutines, gocql token-aware from the host, coordinator
// timestamps (so a skewed node stamps what it coordinates), a 10s timeout
// per operation, no driver retries for writes (they are not idempotent,
// and gocql 1.7 retries whatever its retry policy allows, idempotent or
// not, so writes run with no retry policy at all):
//
//   - LWT registers (k int PRIMARY KEY, v int), 24 keys: reads at SERIAL
//     or QUORUM, INSERT IF NOT EXISTS, UPDATE SET v = new IF v = old with
//     old a value the client saw; every written value is unique.
//   - list appends (k int PRIMARY KEY, l list<int>), 24 keys: UPDATE SET
//     l = l + [x] with x unique, reads at QUORUM.
//   - counters (k int PRIMARY KEY, n counter), 4 keys: n = n + 1, reads.
//
// Every operation is recorded with its invocation and return times and
// its outcome: ok; failed for sure (Unavailable, Overloaded, request
// errors, no connection: nothing was written); or unknown (timeouts,
// WriteTimeout, ServerError, lost connections: maybe applied). Porcupine
// gives an unknown write an open-ended return, so it may take effect at
// any time after its call, or never.
//
// # Faults
//
// One at a time, healed before the next, with a random hold (3-20s, some
// shorter and some longer than dead_after); after each heal the nemesis
// waits (up to 2 minutes) for every node up and the ring healthy, and
// notes when that does not come. The first faults run each kind once in a
// seeded order, then kinds come at random:
//
//   - kill: docker kill (SIGKILL), then start.
//   - pause: docker pause, then unpause.
//   - disconnect: docker network disconnect, then connect.
//   - partition: iptables rules in the node's network namespace (nsenter
//     from the host; the images have no shell) cut it from two or all
//     four other nodes, but not from etcd or the clients.
//   - clock-skew: the node's clock +1h or -1h; a probe row written
//     through that node alone checks the skew took (writetime).
//   - disk-full: a file fills the node's data directory and a replica is
//     moved onto the node (Pebble's preallocated WAL may absorb the
//     node's own writes for a while); the report notes whether cosmosd
//     exited; the file is removed to heal (and the node restarted if it
//     died).
//   - wipe: the node is killed, its data directory emptied, and it starts
//     again: it must join as a new node and the cluster must repair.
//   - two-down: two nodes killed at once; partitions with replicas on
//     both have 2 of 4 replicas and no quorum.
//
// Meanwhile the operator, every 4-10s, splits a partition of a workload
// table (up to 6 per table), moves a replica to a node without one, or
// transfers a partition's leadership to another voter.
//
// # Checks
//
// After the fault phase the clients go on until the cluster is calm (as
// test/e2e's check: every node up, the ring healthy on them, no stale
// replica, no operation in flight); then every key is read once more and
// the history is checked:
//
//   - registers: linearizable per key (porcupine, a compare-and-set
//     register; a refused LWT must return the current value). Writes that
//     failed for sure and unknown writes whose value nobody ever read are
//     left out (clients never expect a value they did not see, so such a
//     write cannot explain anything); a value read whose write failed for
//     sure, or that nobody wrote, is a violation.
//   - lists: linearizable per key (porcupine, a list register); no element
//     twice in any read (an append applied twice, whatever its outcome);
//     every acknowledged append in the final read; no element of a failed
//     append ever read.
//   - counters: every read between the increments acknowledged before it
//     began and those (acknowledged or unknown) begun before it ended, so
//     the final read satisfies acked <= n <= acked + unknown.
//
// The report gives, per fault kind, the number of faults, the operations
// they overlapped, the slowest client operation during them (and the
// slowest one whose coordinator was not a victim), the error codes the
// clients saw and the longest recovery; for two-down, the answers to the
// operations on partitions without quorum. The test fails on any
// violation, on a key porcupine could not decide, and on a cluster that
// does not calm down; latencies are reported, not asserted.
package nemesis
