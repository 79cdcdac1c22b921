// Package placement decides where replicas go. Decisions are pure functions
// of the cluster's state (nodes with their labels and load, the rings) and
// return plans; executing them is the controller's job. Keeping the
// decisions pure is what lets them be tested with plain tables.
package placement
