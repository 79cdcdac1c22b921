package partition

// DefaultMaxMutationBytes is the default bound of one encoded write request
// (kvpb.WriteRequest) to a partition: 16 MiB, Cassandra's default maximum
// mutation size (half its 32 MiB commit log segment). A write request is
// one raft entry that every follower must receive in one internode gRPC
// message, so the bound must stay below the peer server's message limit
// (max_frame_bytes + 1 MiB). The CQL executor refuses larger writes before
// routing them; replicas refuse forwarded ones that slip through.
const DefaultMaxMutationBytes = 16 << 20

// MaxReadBytesLimit bounds ReadRequest.max_bytes: a request asking for a
// larger response is served at most this much per round trip, so that no
// single read can make a replica build an unbounded response. 16 MiB is
// far above a CQL page's needs (a page ends at 8 MiB by default) and
// below the internode message limit.
const MaxReadBytesLimit = 16 << 20
