package raft

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/cosmosd/cosmosd/consensus"
	transportpb "github.com/cosmosd/cosmosd/proto/transport"
	"github.com/cosmosd/cosmosd/storage"
	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

func entry(index, term uint64) *pb.Entry {
	return &pb.Entry{Index: proto.Uint64(index), Term: proto.Uint64(term), Type: pb.EntryNormal.Enum()}
}

func msg(t pb.MessageType, from, to uint64, mutate func(*pb.Message)) *pb.Message {
	m := &pb.Message{Type: t.Enum(), From: proto.Uint64(from), To: proto.Uint64(to), Term: proto.Uint64(5)}
	if mutate != nil {
		mutate(m)
	}
	return m
}

func TestValidateMessage(t *testing.T) {
	tests := []struct {
		name    string
		m       *pb.Message
		from    uint64
		to      uint64
		wantErr bool
	}{
		{"heartbeat", msg(pb.MsgHeartbeat, 1, 2, nil), 1, 2, false},
		{"append", msg(pb.MsgApp, 1, 2, func(m *pb.Message) {
			m.Index, m.LogTerm = proto.Uint64(10), proto.Uint64(4)
			m.Entries = []*pb.Entry{entry(11, 4), entry(12, 5)}
		}), 1, 2, false},
		{"append gap", msg(pb.MsgApp, 1, 2, func(m *pb.Message) {
			m.Index, m.LogTerm = proto.Uint64(10), proto.Uint64(4)
			m.Entries = []*pb.Entry{entry(11, 4), entry(13, 5)}
		}), 1, 2, true},
		{"append term above message", msg(pb.MsgApp, 1, 2, func(m *pb.Message) {
			m.Index, m.LogTerm = proto.Uint64(10), proto.Uint64(4)
			m.Entries = []*pb.Entry{entry(11, 6)}
		}), 1, 2, true},
		{"append term decreasing", msg(pb.MsgApp, 1, 2, func(m *pb.Message) {
			m.Index, m.LogTerm = proto.Uint64(10), proto.Uint64(4)
			m.Entries = []*pb.Entry{entry(11, 5), entry(12, 4)}
		}), 1, 2, true},
		{"append bad entry type", msg(pb.MsgApp, 1, 2, func(m *pb.Message) {
			m.Index, m.LogTerm = proto.Uint64(10), proto.Uint64(4)
			e := entry(11, 4)
			e.Type = pb.EntryType(7).Enum()
			m.Entries = []*pb.Entry{e}
		}), 1, 2, true},
		{"local message", msg(pb.MsgHup, 1, 2, nil), 1, 2, true},
		{"proposal", msg(pb.MsgProp, 1, 2, nil), 1, 2, true},
		{"storage message", msg(pb.MsgStorageAppend, 1, 2, nil), 1, 2, true},
		{"header mismatch", msg(pb.MsgHeartbeat, 3, 2, nil), 1, 2, true},
		{"self addressed", msg(pb.MsgHeartbeat, 2, 2, nil), 2, 2, true},
		{"zero sender", msg(pb.MsgHeartbeat, 0, 2, nil), 0, 2, true},
		{"local target", msg(pb.MsgHeartbeat, 1, raftLocalTarget, nil), 1, raftLocalTarget, true},
		{"read index without entry", msg(pb.MsgReadIndex, 1, 2, nil), 1, 2, true},
		{"read index", msg(pb.MsgReadIndex, 1, 2, func(m *pb.Message) { m.Entries = []*pb.Entry{{Data: []byte("x")}} }), 1, 2, false},
		{"vote with entries", msg(pb.MsgVote, 1, 2, func(m *pb.Message) { m.Entries = []*pb.Entry{entry(1, 1)} }), 1, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateMessage(tc.m, tc.from, tc.to)
			if (err != nil) != tc.wantErr {
				t.Fatalf("validateMessage: %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

const raftLocalTarget = ^uint64(0)

func TestEntryData(t *testing.T) {
	for _, cmd := range [][]byte{nil, {}, []byte("put k v"), bytes.Repeat([]byte{0xff}, 300)} {
		id, got, err := decodeEntryData(encodeEntryData(12345, cmd))
		if err != nil || id != 12345 || !bytes.Equal(got, cmd) {
			t.Fatalf("round trip of %q: id %d cmd %q err %v", cmd, id, got, err)
		}
	}
	for _, bad := range [][]byte{nil, {0}, {2, 1}, {1}, {1, 0x80}} {
		if _, _, err := decodeEntryData(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decode %x: %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestApplyStateRoundTrip(t *testing.T) {
	st := &applyState{
		replicaID: 3, appliedIndex: 10, appliedTerm: 2, truncatedIndex: 5, truncatedTerm: 2,
		confState: &pb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}},
		members:   []consensus.Replica{{ReplicaID: 1, NodeID: 1}, {ReplicaID: 2, NodeID: 2}, {ReplicaID: 3, NodeID: 3}, {ReplicaID: 4, NodeID: 9, Learner: true}},
	}
	b, err := encodeApplyState(st)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeApplyState(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.replicaID != 3 || got.appliedIndex != 10 || got.truncatedIndex != 5 || !proto.Equal(got.confState, st.confState) || len(got.members) != 4 || got.members[3] != st.members[3] {
		t.Fatalf("round trip: %+v", got)
	}
	st.truncatedIndex = 11
	b, _ = encodeApplyState(st)
	if _, err := decodeApplyState(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated past applied: %v, want ErrCorrupt", err)
	}
}

func TestMembersFromConfState(t *testing.T) {
	cs := &pb.ConfState{Voters: []uint64{3, 1}, VotersOutgoing: []uint64{1, 2}, Learners: []uint64{5}, LearnersNext: []uint64{2}}
	got := membersFromConfState(cs, map[consensus.ReplicaID]consensus.NodeID{1: 10, 2: 20, 3: 30, 5: 50})
	want := []consensus.Replica{{ReplicaID: 1, NodeID: 10}, {ReplicaID: 2, NodeID: 20}, {ReplicaID: 3, NodeID: 30}, {ReplicaID: 5, NodeID: 50, Learner: true}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestValidateMembers(t *testing.T) {
	tests := []struct {
		name    string
		members []consensus.Replica
		wantErr string
	}{
		{"ok", []consensus.Replica{{ReplicaID: 1, NodeID: 1}, {ReplicaID: 2, NodeID: 2}}, ""},
		{"duplicate", []consensus.Replica{{ReplicaID: 1, NodeID: 1}, {ReplicaID: 1, NodeID: 2}}, "duplicate"},
		{"no voter", []consensus.Replica{{ReplicaID: 1, NodeID: 1, Learner: true}}, "no voter"},
		{"self missing", []consensus.Replica{{ReplicaID: 2, NodeID: 2}}, "not a member"},
		{"zero node", []consensus.Replica{{ReplicaID: 1}}, "invalid member"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validateMembers(tc.members, 1)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		tweak func(*Config)
		want  []string
	}{
		{"defaults", func(*Config) {}, nil},
		{"missing", func(c *Config) { c.NodeID, c.Storage, c.Resolver = 0, nil, nil }, []string{"node id", "storage", "resolver"}},
		{"election", func(c *Config) { c.ElectionTicks, c.HeartbeatTicks = 2, 2 }, []string{"election ticks"}},
		{"backoff", func(c *Config) { c.ReconnectBackoff, c.MaxReconnectBackoff = time.Second, time.Millisecond }, []string{"backoff"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{NodeID: 1, Storage: &storage.Engine{}, SnapshotDir: "snaps", Resolver: func(consensus.NodeID) (string, error) { return "", nil }}
			tc.tweak(&c)
			c.SetDefaults()
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("Validate() = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

func FuzzDecodeMessage(f *testing.F) {
	for _, m := range []*pb.Message{
		msg(pb.MsgHeartbeat, 1, 2, nil),
		msg(pb.MsgApp, 1, 2, func(m *pb.Message) {
			m.Index, m.LogTerm = proto.Uint64(10), proto.Uint64(4)
			m.Entries = []*pb.Entry{entry(11, 4), entry(12, 5)}
		}),
		msg(pb.MsgReadIndex, 1, 2, func(m *pb.Message) { m.Entries = []*pb.Entry{{Data: []byte("x")}} }),
	} {
		b, _ := proto.Marshal(m)
		f.Add(b, uint64(1), uint64(2))
	}
	f.Fuzz(func(t *testing.T, b []byte, from, to uint64) {
		var m *pb.Message
		var err error
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(b), 128), "decodeMessage", func() {
			m, err = decodeMessage(&transportpb.RaftMessage{Group: 1, FromReplica: from, ToReplica: to, Message: b})
		})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// A message that passed validation passes it again after a round
		// trip through the wire format.
		rm, err := encodeMessage(1, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := decodeMessage(rm); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func FuzzDecodeEntryData(f *testing.F) {
	f.Add(encodeEntryData(1, []byte("put k v")))
	f.Add([]byte{})
	f.Add([]byte{1, 0x80, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, cmd, err := decodeEntryData(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		id2, cmd2, err := decodeEntryData(encodeEntryData(id, cmd))
		if err != nil || id2 != id || !bytes.Equal(cmd2, cmd) {
			t.Fatalf("round trip: %d %q %v", id2, cmd2, err)
		}
	})
}

func FuzzDecodeApplyState(f *testing.F) {
	b, _ := encodeApplyState(&applyState{replicaID: 1, appliedIndex: 3, appliedTerm: 1, truncatedIndex: 1, truncatedTerm: 1,
		confState: &pb.ConfState{Voters: []uint64{1, 2}}, members: []consensus.Replica{{ReplicaID: 1, NodeID: 1}, {ReplicaID: 2, NodeID: 2}}})
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeApplyState(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if st.truncatedIndex > st.appliedIndex || st.replicaID == 0 || st.confState == nil {
			t.Fatalf("decoded an invalid state %+v", st)
		}
		if _, err := encodeApplyState(st); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzSnapshotMessage(f *testing.F) {
	m := msg(pb.MsgSnap, 1, 2, func(m *pb.Message) {
		m.Snapshot = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: proto.Uint64(10), Term: proto.Uint64(3), ConfState: &pb.ConfState{Voters: []uint64{1, 2}}}}
	})
	b, _ := proto.Marshal(m)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m pb.Message
		if err := proto.Unmarshal(b, &m); err != nil {
			return
		}
		if err := validateSnapMessage(&m, 1, 2); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if m.GetType() != pb.MsgSnap || m.GetSnapshot().GetMetadata().GetIndex() == 0 {
			t.Fatalf("accepted %v", &m)
		}
	})
}

func FuzzDecodeConfChangeContext(f *testing.F) {
	b, _ := proto.Marshal(&transportpb.ConfChangeContext{ProposalId: 7, Members: []*transportpb.Member{{ReplicaId: 5, NodeId: 3, Learner: true}}})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, ms, err := decodeConfChangeContext(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		for _, m := range ms {
			if m.ReplicaID == 0 || m.NodeID == 0 {
				t.Fatalf("decoded invalid member %v", m)
			}
		}
	})
}
