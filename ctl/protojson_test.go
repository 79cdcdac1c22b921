package ctl

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	adminpb "github.com/cosmosd/cosmosd/proto/admin"
)

func samplePartition() *adminpb.Partition {
	return &adminpb.Partition{Id: math.MaxUint64, Table: "ks.t<&>\"", TableId: 3, Start: math.MinInt64, End: math.MaxInt64,
		Generation: 9, LeaderNode: 2, LeaderName: "node-2", Bytes: 1 << 60, Rows: 12, LogicalPartitions: 2,
		RuPerSec: 0.5, RuShare: math.Inf(1),
		Replicas: []*adminpb.Replica{{NodeId: 2, NodeName: "node-2", ReplicaId: 5, Applied: 77, Reachable: true}, {NodeId: 3, Learner: true}}}
}

func TestProtoJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  proto.Message
		want string
	}{
		{
			name: "every field present, 64-bit integers as numbers, no HTML escaping",
			msg:  samplePartition(),
			want: `{"id":18446744073709551615,"table":"ks.t<&>\"","table_id":3,"start":-9223372036854775808,"end":9223372036854775807,` +
				`"generation":9,"replicas":[{"node_id":2,"node_name":"node-2","replica_id":5,"learner":false,"applied":77,"reachable":true},` +
				`{"node_id":3,"node_name":"","replica_id":0,"learner":true,"applied":0,"reachable":false}],"leader_node":2,"leader_name":"node-2",` +
				`"bytes":1152921504606846976,"rows":12,"logical_partitions":2,"ru_per_sec":0.5,"ru_share":"Infinity","throttled":0,"hot":false}`,
		},
		{
			name: "unset message is null, empty list is []",
			msg:  &adminpb.TokenResponse{Token: -1},
			want: `{"token":-1,"partition":null}`,
		},
		{
			name: "map keys sorted",
			msg:  &adminpb.Node{Labels: map[string]string{"zone": "z", "dc": "d", "rack": "r"}},
			want: `{"id":0,"name":"","cql_addr":"","peer_addr":"","admin_addr":"","labels":{"dc":"d","rack":"r","zone":"z"},"state":"",` +
				`"replicas":0,"leaders":0,"bytes":0,"version":"","started_at":"","failed_replicas":0}`,
		},
		{
			name: "empty repeated field",
			msg:  &adminpb.ShowRingResponse{},
			want: `{"partitions":[]}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := marshalProto(tc.msg.ProtoReflect())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			checkRoundTrip(t, got, tc.msg)
		})
	}
}

// checkRoundTrip checks that out is valid JSON that protojson reads back
// into a message equal to m.
func checkRoundTrip(t *testing.T, out []byte, m proto.Message) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	back := m.ProtoReflect().New().Interface()
	if err := protojson.Unmarshal(out, back); err != nil {
		t.Fatalf("protojson cannot read %s: %v", out, err)
	}
	if !proto.Equal(back, m) {
		t.Fatalf("round trip changed the message:\n%v\n%v", m, back)
	}
}

func TestWriteJSONList(t *testing.T) {
	var buf bytes.Buffer
	nodes := []*adminpb.Node{{Id: 1, Name: "a"}, {Id: 2, Name: "b"}}
	if err := writeJSON(&buf, messageList(nodes)); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	if len(got) != 2 || got[1]["name"] != "b" || !strings.HasSuffix(buf.String(), "}\n]\n") {
		t.Fatalf("got %s", buf.String())
	}
	buf.Reset()
	if err := writeJSON(&buf, messageList([]*adminpb.Node(nil))); err != nil || buf.String() != "[]\n" {
		t.Fatalf("empty list: %q, %v", buf.String(), err)
	}
}

// FuzzProtoJSON feeds arbitrary admin responses (as the server could send
// them) through the JSON writer and the table renderers: JSON must stay
// valid and read back equal, and rendering must not fail.
func FuzzProtoJSON(f *testing.F) {
	for _, m := range []proto.Message{
		&adminpb.ShowRingResponse{Partitions: []*adminpb.Partition{samplePartition()}},
		&adminpb.ListNodesResponse{Nodes: []*adminpb.Node{{Id: 1, Name: "n\n1", Labels: map[string]string{"zone": "z"}, Bytes: -3}}},
		&adminpb.TokenResponse{Token: 5, Partition: samplePartition()},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ring, nodes, tok := &adminpb.ShowRingResponse{}, &adminpb.ListNodesResponse{}, &adminpb.TokenResponse{}
		opts := proto.UnmarshalOptions{DiscardUnknown: true}
		for _, m := range []proto.Message{ring, nodes, tok} {
			if opts.Unmarshal(data, m) != nil {
				continue
			}
			out, err := marshalProto(m.ProtoReflect())
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, out, m)
		}
		var sb strings.Builder
		if err := renderRing(&sb, ring.GetPartitions()); err != nil {
			t.Fatal(err)
		}
		if err := renderNodes(&sb, nodes.GetNodes()); err != nil {
			t.Fatal(err)
		}
		if err := renderToken(&sb, "ks.t", []string{"k"}, tok); err != nil {
			t.Fatal(err)
		}
	})
}
