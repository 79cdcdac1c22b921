package exec

import "github.com/cosmosd/cosmosd/cql/frame"

// Consistency levels (protocol values).
const (
	Any         uint16 = 0x0000
	One         uint16 = 0x0001
	Two         uint16 = 0x0002
	Three       uint16 = 0x0003
	Quorum      uint16 = 0x0004
	All         uint16 = 0x0005
	LocalQuorum uint16 = 0x0006
	EachQuorum  uint16 = 0x0007
	Serial      uint16 = 0x0008
	LocalSerial uint16 = 0x0009
	LocalOne    uint16 = 0x000A
)

// linearizable reports whether reads at cl must be linearizable: QUORUM and
// stronger are; ONE-like levels may read any replica's applied state.
func linearizable(cl uint16) bool {
	switch cl {
	case One, Two, Three, LocalOne, Any:
		return false
	}
	return true
}

// writeConsistency refuses the consistency levels Cassandra refuses for a
// write (its ConsistencyLevel.validateForWrite, validateForCas and
// validateForCasCommit): a serial level is only for conditional writes,
// and there only as the serial consistency (0, unset, means SERIAL).
func writeConsistency(req Request, conditional bool) error {
	cl, serial := frame.Consistency(req.Consistency), frame.Consistency(req.SerialConsistency)
	switch {
	case !conditional && cl.IsSerial():
		return Invalid("You must use conditional updates for serializable writes")
	case conditional && cl.IsSerial():
		return Invalid("%s is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\"", cl)
	case conditional && serial != 0 && !serial.IsSerial():
		return Invalid("Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL")
	}
	return nil
}
