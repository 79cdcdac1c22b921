// Package crashtest crashes whole nodes of partitions (the partition state
// machine on the raft engine, in one process) on Pebble's crashable
// in-memory filesystems, at random instants and at chosen points of a
// split, and checks what they recover: no acknowledged write lost, nothing
// applied twice, every half of a split able to elect a leader, and
// replicas whose states hash the same.
//
// A crash is modelled as etcd raft's persistence contract assumes: at the
// crash instant the node stops sending (it is cut off the in-memory
// network first), its disk keeps everything synced and an arbitrary part
// of what was not (vfs.MemFS.CrashClone), and answers it gave after that
// instant do not count as acknowledgements.
//
//	go test ./test/crashtest/                           # short
//	COSMOSD_CRASH_ROUNDS=200 go test ./test/crashtest/  # long
//	COSMOSD_CRASH_SEED=<seed> ...                      # repeat a run
package crashtest
