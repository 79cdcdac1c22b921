package testcluster

import (
	"testing"
)

// TestSeedScenario is the partitioning article's scenario on one node.
func TestSeedScenario(t *testing.T) {
	c := Start(t, Options{})
	s := c.Session(t, 0)
	for _, q := range []string{
		"CREATE KEYSPACE uprofile WITH REPLICATION = {'class' : 'SimpleStrategy', 'replication_factor' : 1}",
		"CREATE TABLE uprofile.user (user text, id int, message text, PRIMARY KEY (user, id))",
		"insert into uprofile.user (user, id, message) values ('theo', 1, 'hello')",
		"insert into uprofile.user (user, id, message) values ('theo', 2, 'hello again')",
	} {
		if err := s.Query(q).Exec(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	iter := s.Query("select id, message from uprofile.user where user = ?", "theo").Iter()
	var id int
	var msg string
	var got []string
	for iter.Scan(&id, &msg) {
		got = append(got, msg)
	}
	if err := iter.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "hello" || got[1] != "hello again" {
		t.Fatalf("rows = %q, want [hello, hello again] in clustering order", got)
	}
}
