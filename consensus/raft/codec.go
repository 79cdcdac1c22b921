package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	etcdraft "go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
)

// ErrCorrupt reports bytes from the network or the disk that do not decode.
var ErrCorrupt = errors.New("raft: malformed data")

// Entry data envelope. A normal raft entry is either empty (the no-op a new
// leader appends, delivered as consensus.EntryEmpty) or
//
//	version(1) = 1 | proposal id (uvarint) | command
//
// The proposal id lets the proposing replica match the applied entry to the
// waiting Propose call; other replicas ignore it. It is stripped before the
// state machine sees the command.
const entryVersion byte = 1

// encodeEntryData returns the envelope of cmd proposed as proposal id.
func encodeEntryData(id uint64, cmd []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(cmd))
	b = append(b, entryVersion)
	b = binary.AppendUvarint(b, id)
	return append(b, cmd...)
}

// decodeEntryData splits a non-empty envelope. cmd aliases data.
func decodeEntryData(data []byte) (id uint64, cmd []byte, err error) {
	if len(data) == 0 || data[0] != entryVersion {
		return 0, nil, fmt.Errorf("%w: entry data version", ErrCorrupt)
	}
	id, n := binary.Uvarint(data[1:])
	if n <= 0 {
		return 0, nil, fmt.Errorf("%w: entry proposal id", ErrCorrupt)
	}
	return id, data[1+n:], nil
}

// decodeMessage decodes and validates one inbound raft message addressed to
// replica to of a group. It rejects everything a well-behaved peer never
// sends, so that malformed input cannot reach raft code paths that assume
// well-formed messages (and may panic on others).
func decodeMessage(rm *transportpb.RaftMessage) (*pb.Message, error) {
	m := &pb.Message{}
	if err := proto.Unmarshal(rm.GetMessage(), m); err != nil {
		return nil, fmt.Errorf("%w: raft message: %v", ErrCorrupt, err)
	}
	if err := validateMessage(m, rm.GetFromReplica(), rm.GetToReplica()); err != nil {
		return nil, err
	}
	return m, nil
}

func validateMessage(m *pb.Message, from, to uint64) error {
	switch m.GetType() {
	case pb.MsgApp, pb.MsgAppResp, pb.MsgVote, pb.MsgVoteResp, pb.MsgPreVote, pb.MsgPreVoteResp,
		pb.MsgHeartbeat, pb.MsgHeartbeatResp, pb.MsgTransferLeader, pb.MsgTimeoutNow,
		pb.MsgReadIndex, pb.MsgReadIndexResp:
	case pb.MsgSnap:
		// Snapshots arrive on their own stream (see snapshot.go); a MsgSnap is
		// validated there.
	default:
		return fmt.Errorf("%w: message type %v not accepted from the network", ErrCorrupt, m.GetType())
	}
	if from == 0 || to == 0 || from == to || etcdraft.IsLocalMsgTarget(from) || etcdraft.IsLocalMsgTarget(to) {
		return fmt.Errorf("%w: message from %d to %d", ErrCorrupt, from, to)
	}
	if m.GetFrom() != from || m.GetTo() != to {
		return fmt.Errorf("%w: message header %d->%d does not match envelope %d->%d", ErrCorrupt, m.GetFrom(), m.GetTo(), from, to)
	}
	if m.GetType() == pb.MsgReadIndex || m.GetType() == pb.MsgReadIndexResp {
		if len(m.GetEntries()) != 1 {
			return fmt.Errorf("%w: %v with %d entries", ErrCorrupt, m.GetType(), len(m.GetEntries()))
		}
		return nil
	}
	if m.GetType() != pb.MsgApp {
		if len(m.GetEntries()) != 0 {
			return fmt.Errorf("%w: %v with entries", ErrCorrupt, m.GetType())
		}
		return nil
	}
	// An append must carry consecutive entries after m.Index whose terms do
	// not decrease, start at or after m.LogTerm, and do not exceed m.Term.
	prevTerm := m.GetLogTerm()
	if prevTerm > m.GetTerm() {
		return fmt.Errorf("%w: append log term %d above message term %d", ErrCorrupt, prevTerm, m.GetTerm())
	}
	for i, e := range m.GetEntries() {
		if e.GetIndex() != m.GetIndex()+uint64(i)+1 {
			return fmt.Errorf("%w: append entry %d has index %d after %d", ErrCorrupt, i, e.GetIndex(), m.GetIndex())
		}
		if e.GetTerm() < prevTerm || e.GetTerm() > m.GetTerm() {
			return fmt.Errorf("%w: append entry %d has term %d", ErrCorrupt, e.GetIndex(), e.GetTerm())
		}
		prevTerm = e.GetTerm()
		if _, ok := pb.EntryType_name[int32(e.GetType())]; !ok {
			return fmt.Errorf("%w: entry type %d", ErrCorrupt, e.GetType())
		}
	}
	return nil
}

// encodeMessage wraps a raft message for the transport.
func encodeMessage(group consensus.GroupID, m *pb.Message) (*transportpb.RaftMessage, error) {
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("raft: encode message: %w", err)
	}
	return &transportpb.RaftMessage{Group: uint64(group), FromReplica: m.GetFrom(), ToReplica: m.GetTo(), Message: b}, nil
}

// membersToProto converts a membership list.
func membersToProto(ms []consensus.Replica) []*transportpb.Member {
	out := make([]*transportpb.Member, len(ms))
	for i, m := range ms {
		out[i] = &transportpb.Member{ReplicaId: uint64(m.ReplicaID), NodeId: uint64(m.NodeID), Learner: m.Learner}
	}
	return out
}

func membersFromProto(ms []*transportpb.Member) ([]consensus.Replica, error) {
	out := make([]consensus.Replica, 0, len(ms))
	for _, m := range ms {
		if m.GetReplicaId() == 0 || m.GetNodeId() == 0 || etcdraft.IsLocalMsgTarget(m.GetReplicaId()) {
			return nil, fmt.Errorf("%w: member r%d@n%d", ErrCorrupt, m.GetReplicaId(), m.GetNodeId())
		}
		out = append(out, consensus.Replica{ReplicaID: consensus.ReplicaID(m.GetReplicaId()), NodeID: consensus.NodeID(m.GetNodeId()), Learner: m.GetLearner()})
	}
	return out, nil
}

// membersFromConfState lists every replica of cs (both halves of a joint
// configuration) with the node that hosts it, sorted by replica id.
// Replicas whose node is unknown are reported with node 0.
func membersFromConfState(cs *pb.ConfState, nodes map[consensus.ReplicaID]consensus.NodeID) []consensus.Replica {
	seen := map[uint64]bool{}
	var out []consensus.Replica
	add := func(ids []uint64, learner bool) {
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, consensus.Replica{ReplicaID: consensus.ReplicaID(id), NodeID: nodes[consensus.ReplicaID(id)], Learner: learner})
		}
	}
	add(cs.GetVoters(), false)
	add(cs.GetVotersOutgoing(), false)
	add(cs.GetLearners(), true)
	add(cs.GetLearnersNext(), true)
	slices.SortFunc(out, func(a, b consensus.Replica) int {
		switch {
		case a.ReplicaID < b.ReplicaID:
			return -1
		case a.ReplicaID > b.ReplicaID:
			return 1
		}
		return 0
	})
	return out
}

// confStateFromMembers is the bootstrap configuration of members.
func confStateFromMembers(ms []consensus.Replica) *pb.ConfState {
	cs := &pb.ConfState{}
	for _, m := range ms {
		if m.Learner {
			cs.Learners = append(cs.Learners, uint64(m.ReplicaID))
		} else {
			cs.Voters = append(cs.Voters, uint64(m.ReplicaID))
		}
	}
	return cs
}

// validateMembers checks a bootstrap configuration.
func validateMembers(ms []consensus.Replica, self consensus.ReplicaID) error {
	seen := map[consensus.ReplicaID]bool{}
	voters := 0
	found := false
	for _, m := range ms {
		if m.ReplicaID == 0 || m.NodeID == 0 || etcdraft.IsLocalMsgTarget(uint64(m.ReplicaID)) {
			return fmt.Errorf("invalid member %v", m)
		}
		if seen[m.ReplicaID] {
			return fmt.Errorf("duplicate replica %d", m.ReplicaID)
		}
		seen[m.ReplicaID] = true
		if !m.Learner {
			voters++
		}
		found = found || m.ReplicaID == self
	}
	if voters == 0 {
		return errors.New("no voter")
	}
	if !found {
		return fmt.Errorf("replica %d is not a member", self)
	}
	return nil
}

// applyState is the decoded transportpb.ApplyState.
type applyState struct {
	replicaID      consensus.ReplicaID
	appliedIndex   uint64
	appliedTerm    uint64
	truncatedIndex uint64
	truncatedTerm  uint64
	confState      *pb.ConfState
	members        []consensus.Replica
}

func encodeApplyState(s *applyState) ([]byte, error) {
	cs, err := proto.Marshal(s.confState)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(&transportpb.ApplyState{
		ReplicaId:      uint64(s.replicaID),
		AppliedIndex:   s.appliedIndex,
		AppliedTerm:    s.appliedTerm,
		TruncatedIndex: s.truncatedIndex,
		TruncatedTerm:  s.truncatedTerm,
		ConfState:      cs,
		Members:        membersToProto(s.members),
	})
}

func decodeApplyState(b []byte) (*applyState, error) {
	var p transportpb.ApplyState
	if err := proto.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: apply state: %v", ErrCorrupt, err)
	}
	cs := &pb.ConfState{}
	if err := proto.Unmarshal(p.GetConfState(), cs); err != nil {
		return nil, fmt.Errorf("%w: apply state conf state: %v", ErrCorrupt, err)
	}
	ms, err := membersFromProto(p.GetMembers())
	if err != nil {
		return nil, err
	}
	if p.GetTruncatedIndex() > p.GetAppliedIndex() || p.GetReplicaId() == 0 {
		return nil, fmt.Errorf("%w: apply state replica %d applied %d truncated %d", ErrCorrupt, p.GetReplicaId(), p.GetAppliedIndex(), p.GetTruncatedIndex())
	}
	return &applyState{
		replicaID:      consensus.ReplicaID(p.GetReplicaId()),
		appliedIndex:   p.GetAppliedIndex(),
		appliedTerm:    p.GetAppliedTerm(),
		truncatedIndex: p.GetTruncatedIndex(),
		truncatedTerm:  p.GetTruncatedTerm(),
		confState:      cs,
		members:        ms,
	}, nil
}

// decodeConfChange decodes the conf change of a committed entry.
func decodeConfChange(e *pb.Entry) (pb.ConfChangeI, error) {
	switch e.GetType() {
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return nil, fmt.Errorf("%w: conf change at %d: %v", ErrCorrupt, e.GetIndex(), err)
		}
		return &cc, nil
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return nil, fmt.Errorf("%w: conf change at %d: %v", ErrCorrupt, e.GetIndex(), err)
		}
		return &cc, nil
	}
	return nil, fmt.Errorf("%w: entry type %v is not a conf change", ErrCorrupt, e.GetType())
}

// decodeConfChangeContext decodes the context the engine attaches to its
// conf changes; an empty context (raft's automatic leave-joint entry) gives
// an empty result.
func decodeConfChangeContext(b []byte) (*transportpb.ConfChangeContext, []consensus.Replica, error) {
	var c transportpb.ConfChangeContext
	if len(b) == 0 {
		return &c, nil, nil
	}
	if err := proto.Unmarshal(b, &c); err != nil {
		return nil, nil, fmt.Errorf("%w: conf change context: %v", ErrCorrupt, err)
	}
	ms, err := membersFromProto(c.GetMembers())
	if err != nil {
		return nil, nil, err
	}
	return &c, ms, nil
}
