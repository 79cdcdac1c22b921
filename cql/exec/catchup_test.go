package exec_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cosmosd/cosmosd/cluster"
	"github.com/cosmosd/cosmosd/cql/exec"
	"github.com/cosmosd/cosmosd/cql/exec/exectest"
)

// DDL reads its own writes across nodes: a keyspace or table that one
// node's executor just created is usable at once on another node, whose
// metadata follows the store by its own watch and may not have seen the
// change yet (the executor catches up before it says "does not exist").
// Two Metas over one metakv.Mem are two nodes' views of one cluster.
func TestSchemaVisibleOnOtherNode(t *testing.T) {
	ctx := context.Background()
	c := exectest.New(t, exectest.Config{Partitions: 2})
	a := exec.New(exec.Config{NodeID: 1, Meta: c.Meta, Catalog: c.Catalog, Router: c.KV, Placer: c.Placer, Now: c.Clock.Now})
	metaB, err := cluster.OpenMeta(ctx, c.Store, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(metaB.Close)
	b := exec.New(exec.Config{NodeID: 2, Meta: metaB, Catalog: cluster.NewCatalog(metaB), Router: c.KV, Placer: c.Placer, Now: c.Clock.Now})

	for i := range 20 {
		ks := fmt.Sprintf("ks%d", i)
		run := func(e *exec.Executor, sess *exec.Session, q string) *exec.Result {
			t.Helper()
			res, err := e.Query(ctx, sess, q, exec.Request{Consistency: exec.One})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return res
		}
		run(a, &exec.Session{}, "CREATE KEYSPACE "+ks+" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
		sessB := &exec.Session{}
		run(b, sessB, "USE "+ks)
		run(a, &exec.Session{}, "CREATE TABLE "+ks+".t (k int PRIMARY KEY, v int)")
		run(b, sessB, "INSERT INTO t (k, v) VALUES (1, 2)")
		res := run(a, &exec.Session{}, "SELECT v FROM "+ks+".t WHERE k = 1")
		if len(res.Rows.Rows) != 1 || string(res.Rows.Rows[0][0]) != "\x00\x00\x00\x02" {
			t.Fatalf("%s.t read back %v, want v = 2", ks, res.Rows.Rows)
		}
		// A column added on a is written on b at once.
		run(a, &exec.Session{}, "ALTER TABLE "+ks+".t ADD w int")
		run(b, sessB, "UPDATE t SET w = 3 WHERE k = 1")
	}
}
