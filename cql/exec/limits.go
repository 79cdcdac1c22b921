package exec

import (
	"google.golang.org/protobuf/proto"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
)

// checkMutationSize refuses a write request to one partition whose
// encoding exceeds MaxMutationBytes. Such a request would become one raft
// entry larger than followers can receive (an UPDATE of a 2 MiB value
// with IN over 140 clustering values is a 280 MiB entry), so it is refused
// here, before it is routed, with an error the client can act on.
func (e *Executor) checkMutationSize(w *kvpb.WriteRequest) error {
	if n := proto.Size(w); n > e.cfg.MaxMutationBytes {
		return Invalid("mutation of %d bytes exceeds the maximum of %d bytes (max_mutation_bytes)", n, e.cfg.MaxMutationBytes)
	}
	return nil
}
