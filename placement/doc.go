// Package placement decides where replicas go and runs the operations that
// put them there.
//
// # Decisions
//
// Decisions are pure functions of a snapshot and return plans (decide.go,
// plan.go, place.go): PlanRound takes the cluster state (nodes with their
// zone and rack labels, members up, suspect, dead, draining or
// decommissioned, tables with their provisioned throughput, the routing
// copies of the rings), what the nodes reported about each partition
// (descriptor, leader, sizes, failed replicas) and the stored operations,
// and returns what one round does: repairs, splits by size and by
// throughput within max_partitions_per_table, rebalance moves, orphan
// learners to remove and leadership transfers. PlanRingSyncs, GoneMembers,
// PlanDrain, CheckDrain and Place decide the rest. They are tested on plain
// data by the scripts of testdata/ (TestDecisions): a change of a decision
// is a change of a script's expected output.
//
// # Controller
//
// The Controller carries the plans out. Every node runs one and one at a
// time leads (cluster.Operations.Campaign). The leader's rounds gather a
// snapshot, plan, submit operations and start those that can run; an
// Operation is persisted before it runs and after every step, so a new
// controller resumes it where the old one stopped, and each step observes
// the group first, so running one twice is safe. Every write of an
// operation is fenced by the election: a deposed controller's write fails
// with ErrNotController.
//
// Its dependencies are the small interfaces of deps.go: MetaView
// (*cluster.Meta), CatalogWriter (*cluster.Catalog) and NodeClient
// (*router.Router). Tests run the controller on a real Meta and Catalog
// over metakv.Mem with simulated nodes, in process.
package placement
