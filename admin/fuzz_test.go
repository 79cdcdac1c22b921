package admin

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cqltype"
	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/ring"
	"github.com/cosmosd/cosmosd/schema"
	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// fuzzState is cluster metadata with tables whose partition keys have the
// types operators type on cosmosctl's command line (text, int, a composite
// of uuid and timestamp, blob, boolean, inet, double) and a few nodes,
// live and gone.
func fuzzState(t testing.TB) *cluster.State {
	s := schema.Empty()
	s.Keyspaces["ks"] = &schema.Keyspace{Name: "ks"}
	s.Tables["ks"] = map[string]*schema.Table{}
	mk := func(id uint64, name string, pk ...string) {
		tab := testTable(t, "ks", name, id, pk...)
		s.Tables["ks"][name] = tab
		s.ByID[id] = tab
	}
	mk(1, "users", "text")
	mk(2, "events", "int")
	mk(3, "composite", "uuid", "timestamp")
	mk(4, "blobs", "blob")
	mk(5, "flags", "boolean", "inet", "double")
	rings := map[uint64]*ring.Ring{}
	for id := range s.ByID {
		rings[id] = ring.New(id, []*kvpb.Descriptor{
			{Id: id * 10, TableId: id, Start: math.MinInt64, End: -1},
			{Id: id*10 + 1, TableId: id, Start: 0, End: math.MaxInt64},
		})
	}
	nodes := map[uint64]*cluster.NodeInfo{1: {ID: 1, Name: "alpha"}, 2: {ID: 2, Name: "n7"}}
	members := map[uint64]*cluster.Member{
		1: {Info: *nodes[1]}, 2: {Info: *nodes[2]},
		3: {Info: cluster.NodeInfo{ID: 3, Name: "gone"}, DownSince: time.Unix(1, 0)},
	}
	return &cluster.State{Revision: 1, Schema: s, Rings: rings, Nodes: nodes, Members: members}
}

// grpcErr fails t unless err is a gRPC status with one of codes: the admin
// API answers every bad argument with a status cosmosctl shows as is.
func grpcErr(t *testing.T, what string, err error, want ...codes.Code) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("%s: %T %v is not a gRPC status", what, err, err)
	}
	for _, c := range want {
		if st.Code() == c {
			return
		}
	}
	t.Fatalf("%s: code %v (%v), want one of %v", what, st.Code(), err, want)
}

// FuzzAdminInputs feeds operator input of the admin API (table names, node
// names or ids, partition-key values for token/split/move-key, and the
// partition keys a replica reports in partition details) to the functions
// that interpret it: they must never panic, must answer bad input with
// InvalidArgument or NotFound, and what they accept must be what was
// asked for: the named table, a known node, a token that is the Murmur3
// token of the key's values, each a valid value of its column's type.
// args holds the key values separated by NUL bytes.
func FuzzAdminInputs(f *testing.F) {
	st := fuzzState(f)
	tables := []*schema.Table{st.Schema.ByID[1], st.Schema.ByID[2], st.Schema.ByID[3], st.Schema.ByID[4], st.Schema.ByID[5]}
	f.Fuzz(func(t *testing.T, name, args string, sel byte, pk []byte) {
		if !utf8.ValidString(name) || !utf8.ValidString(args) {
			return // protobuf refuses such string fields before the server sees them
		}
		if tab, err := findTable(st, name); err != nil {
			grpcErr(t, "findTable", err, codes.InvalidArgument, codes.NotFound)
		} else if tab.QualifiedName() != name {
			t.Fatalf("findTable(%q) = %s", name, tab.QualifiedName())
		}
		if id, err := resolveNode(st, name); err != nil {
			grpcErr(t, "resolveNode", err, codes.NotFound)
		} else if st.Nodes[id] == nil && st.Members[id] == nil {
			t.Fatalf("resolveNode(%q) = %d, no such node", name, id)
		}
		tab := tables[int(sel)%len(tables)]
		key := strings.Split(args, "\x00")
		var tok int64
		var err error
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(args), 64), "keyToken", func() { tok, err = keyToken(tab, key) })
		if err != nil {
			grpcErr(t, "keyToken", err, codes.InvalidArgument)
		} else {
			var vals [][]byte
			for i, c := range tab.PartitionKey() {
				v, err := literal(c.Type, key[i])
				if err != nil {
					t.Fatalf("keyToken accepted %q but literal(%s, %q): %v", key, c.Type, key[i], err)
				}
				if err := cqltype.Validate(c.Type, v); err != nil {
					t.Fatalf("literal(%s, %q) = %x, an invalid value: %v", c.Type, key[i], v, err)
				}
				vals = append(vals, v)
			}
			rk, err := ring.RoutingKey(vals)
			if err != nil || ring.Token(rk) != tok {
				t.Fatalf("keyToken(%s, %q) = %d, the key's token is %d (%v)", tab.QualifiedName(), key, tok, ring.Token(rk), err)
			}
		}
		// A replica's partition details name logical partitions by their
		// serialized key: shown as values, or as hex when it does not split.
		lp := logicalPB(tab, pk, 7, 1, 1, 0)
		if n := len(tab.PartitionKey()); len(lp.GetKey()) != n && (len(lp.GetKey()) != 1 || !strings.HasPrefix(lp.GetKey()[0], "0x")) {
			t.Fatalf("logicalPB(%x) shows key %q for %d columns", pk, lp.GetKey(), n)
		}
		if parts, err := ring.SplitRoutingKey(pk, len(tab.PartitionKey())); err == nil {
			if re, err := ring.RoutingKey(parts); err != nil || !bytes.Equal(re, pk) {
				t.Fatalf("partition key %x does not round trip: %x %v", pk, re, err)
			}
		}
	})
}

// TestWriteFuzzSeeds writes FuzzAdminInputs' corpus: names and keys as
// operators type them (cosmosctl token, split --key, move-key).
func TestWriteFuzzSeeds(t *testing.T) {
	c := fuzzcheck.NewCorpus(t, "testdata/fuzz")
	rk := func(vals ...[]byte) []byte {
		k, err := ring.RoutingKey(vals)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	c.Add("FuzzAdminInputs", "text", "ks.users", "theo", byte(0), []byte("theo"))
	c.Add("FuzzAdminInputs", "int", "ks.events", "-42", byte(1), []byte{0xff, 0xff, 0xff, 0xd6})
	c.Add("FuzzAdminInputs", "composite", "ks.composite", "123e4567-e89b-12d3-a456-426614174000\x002024-01-02 03:04:05+0000", byte(2),
		rk(make([]byte, 16), []byte{0, 0, 1, 0x8c, 0, 0, 0, 0}))
	c.Add("FuzzAdminInputs", "blob", "ks.blobs", "0xcafe", byte(3), []byte{0xca, 0xfe})
	c.Add("FuzzAdminInputs", "flags", "ks.flags", "TRUE\x00::1\x00-1.5e3", byte(4), rk([]byte{1}, make([]byte, 16), make([]byte, 8)))
	c.Add("FuzzAdminInputs", "node-name", "alpha", "", byte(0), []byte{})
	c.Add("FuzzAdminInputs", "node-id", "n3", "1\x002", byte(1), []byte{0, 4, 'a', 'b', 'c', 'd', 0})
	c.Add("FuzzAdminInputs", "no-keyspace", "users", "1699999999999", byte(2), []byte{0, 1})
}
