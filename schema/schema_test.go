package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cosmosd/cosmosd/cqltype"
)

func seedTable() *Table {
	text := cqltype.Scalar(cqltype.Varchar)
	t := &Table{Keyspace: "uprofile", Name: "user", NextColumnID: 4, Columns: []Column{
		{ID: 0, Name: "message", Type: text, Kind: Regular, Position: 7},
		{ID: 1, Name: "id", Type: cqltype.Scalar(cqltype.Int), Kind: Clustering, Position: 0, Desc: true},
		{ID: 2, Name: "user", Type: text, Kind: PartitionKey, Position: 0},
		{ID: 3, Name: "tags", Type: cqltype.SetOf(text), Kind: Static, Position: 3},
	}}
	t.Canonicalize()
	return t
}

func TestCanonicalOrder(t *testing.T) {
	tb := seedTable()
	var names []string
	for _, c := range tb.Columns {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "user,id,message,tags" {
		t.Fatalf("canonical order %s, want partition key, clustering, then by name", got)
	}
	if tb.Column("message").Position != -1 || tb.Column("tags").Position != -1 {
		t.Fatal("regular and static columns must have position -1")
	}
	if !tb.HasStatic() || tb.IsCounter() || len(tb.PartitionKey()) != 1 || len(tb.ClusteringColumns()) != 1 {
		t.Fatal("column accessors wrong")
	}
	if err := tb.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	tb := &Table{Keyspace: "k", Name: "t", NextColumnID: 1, Columns: []Column{
		{ID: 0, Name: "a", Kind: Static, Type: cqltype.Scalar(cqltype.Int)},
		{ID: 0, Name: "a", Kind: Regular, Type: cqltype.Scalar(cqltype.Int)},
	}}
	err := tb.Validate()
	for _, want := range []string{"duplicate column id", "multiple definition", "PRIMARY KEY", "static columns"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate misses %q: %v", want, err)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	tb := seedTable()
	tb.Options = Options{Throughput: 400, GCGraceSeconds: 10, Other: map[string]string{"comment": "x"}}
	raw, err := json.Marshal(tb)
	if err != nil {
		t.Fatal(err)
	}
	var back Table
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, tb) {
		t.Fatalf("round trip:\n%+v\n%+v", back, *tb)
	}
	clone := tb.Clone()
	clone.Columns[0].Name = "changed"
	clone.Options.Other["comment"] = "y"
	if tb.Columns[0].Name == "changed" || tb.Options.Other["comment"] == "y" {
		t.Fatal("Clone shares memory with the original")
	}
}
