package cqltest

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/gocql/gocql"

	"github.com/cosmosd/cosmosd/test/testcluster"
)

// TestGroupBy drives aggregates with GROUP BY through gocql (issue 15,
// item 4) on a node of its own: groups on primary-key prefixes with WHERE,
// LIMIT and PER PARTITION LIMIT, and paging with small page sizes, where a
// page holds at most page-size groups and no group is split or repeated.
func TestGroupBy(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	s := c.Session(t, 0)
	keyspace(t, s, "gb")
	// 4 partitions of 5 × 3 rows; v = 100k + 10c1 + c2, s = k.
	exec(t, s, "CREATE TABLE gb.t (k int, c1 int, c2 int, v int, s int static, PRIMARY KEY (k, c1, c2))")
	for k := 0; k < 4; k++ {
		execArgs(t, s, "INSERT INTO gb.t (k, s) VALUES (?, ?)", k, k)
		for c1 := 0; c1 < 5; c1++ {
			for c2 := 0; c2 < 3; c2++ {
				execArgs(t, s, "INSERT INTO gb.t (k, c1, c2, v) VALUES (?, ?, ?, ?)", k, c1, c2, 100*k+10*c1+c2)
			}
		}
	}
	// A partition with only its static row is a group of its own.
	exec(t, s, "INSERT INTO gb.t (k, s) VALUES (9, 9)")

	// perC1 is the expected group of (k, c1): count, sum, min(c2), max(v),
	// and c2 of its first row.
	perC1 := func(k, c1 int) string {
		base := 100*k + 10*c1
		return fmt.Sprintf("k=%d c1=%d count=3 sum=%d min=0 max=%d c2=0", k, c1, 3*base+3, base+2)
	}
	const byC1 = "SELECT k, c1, count(*), sum(v), min(c2), max(v), c2 FROM gb.t"
	var all []string
	for k := 0; k < 4; k++ {
		for c1 := 0; c1 < 5; c1++ {
			all = append(all, perC1(k, c1))
		}
	}
	all = append(all, "k=9 c1=null count=1 sum=0 min=null max=null c2=null")

	t.Run("Partition", func(t *testing.T) {
		var want []string
		for c1 := 0; c1 < 5; c1++ {
			want = append(want, perC1(1, c1))
		}
		for _, size := range []int{0, 1, 2, 3, 100} {
			got, pages := groupPages(t, s, byC1+" WHERE k = 1 GROUP BY k, c1", size)
			eq(t, fmt.Sprintf("page size %d", size), got, want)
			if size > 0 && size < 5 && pages < 5/size {
				t.Fatalf("page size %d: %d pages for 5 groups", size, pages)
			}
		}
		// Bound values (a prepared statement) page the same way.
		got, _ := groupPages(t, s, byC1+" WHERE k = ? GROUP BY k, c1", 2, 1)
		eq(t, "prepared", got, want)
	})
	t.Run("Scan", func(t *testing.T) {
		for _, size := range []int{0, 1, 2, 7} {
			got, _ := groupPages(t, s, byC1+" GROUP BY k, c1", size)
			eq(t, fmt.Sprintf("page size %d", size), sortGroups(got), sortGroups(all))
		}
		// Whole partitions as groups, each larger than a page: one group
		// per page, never split.
		got, pages := groupPages(t, s, "SELECT k, count(*), sum(v), s FROM gb.t GROUP BY k", 1)
		eq(t, "groups by k", sorted(got), []string{
			"k=0 count=15 sum=315 s=0", "k=1 count=15 sum=1815 s=1", "k=2 count=15 sum=3315 s=2",
			"k=3 count=15 sum=4815 s=3", "k=9 count=1 sum=0 s=9"})
		if pages < 5 {
			t.Fatalf("page size 1: %d pages for 5 groups", pages)
		}
	})
	t.Run("Limits", func(t *testing.T) {
		for _, size := range []int{0, 2, 3} {
			got, _ := groupPages(t, s, byC1+" GROUP BY k, c1 LIMIT 7", size)
			if len(got) != 7 {
				t.Fatalf("LIMIT 7, page size %d: %d groups: %v", size, len(got), got)
			}
			got, _ = groupPages(t, s, byC1+" GROUP BY k, c1 PER PARTITION LIMIT 2", size)
			var want []string
			for k := 0; k < 4; k++ {
				want = append(want, perC1(k, 0), perC1(k, 1))
			}
			want = append(want, all[len(all)-1])
			eq(t, fmt.Sprintf("PER PARTITION LIMIT 2, page size %d", size), sortGroups(got), sortGroups(want))
			got, _ = groupPages(t, s, byC1+" WHERE k = 3 GROUP BY k, c1 PER PARTITION LIMIT 4 LIMIT 3", size)
			eq(t, fmt.Sprintf("both limits, page size %d", size), got, []string{perC1(3, 0), perC1(3, 1), perC1(3, 2)})
		}
	})
	t.Run("Where", func(t *testing.T) {
		got, _ := groupPages(t, s, byC1+" WHERE k = 2 AND c1 >= 3 GROUP BY k, c1", 1)
		eq(t, "clustering slice", got, []string{perC1(2, 3), perC1(2, 4)})
		// c1 restricted by = may be skipped: groups by c2.
		got, _ = groupPages(t, s, "SELECT c2, count(*), max(v) FROM gb.t WHERE k = 2 AND c1 = 3 GROUP BY k, c2", 2)
		eq(t, "skipped column", got, []string{"c2=0 count=1 max=230", "c2=1 count=1 max=231", "c2=2 count=1 max=232"})
		got, _ = groupPages(t, s, "SELECT k, count(*), min(v) FROM gb.t WHERE v > 230 GROUP BY k ALLOW FILTERING", 1)
		eq(t, "filtering", sorted(got), []string{"k=2 count=5 min=231", "k=3 count=15 min=300"})
		got, _ = groupPages(t, s, "SELECT k, c1, count(*) FROM gb.t WHERE k IN (1, 2) GROUP BY k, c1 ORDER BY c1 DESC", 0)
		var c1s []string
		for _, g := range got {
			c1s = append(c1s, strings.Fields(g)[1])
		}
		eq(t, "IN with ORDER BY", c1s, []string{"c1=4", "c1=4", "c1=3", "c1=3", "c1=2", "c1=2", "c1=1", "c1=1", "c1=0", "c1=0"})
		// Aggregates without GROUP BY still give one row.
		eq(t, "count without groups", count(t, s, "SELECT count(*) FROM gb.t WHERE k = 1"), int64(15))
	})
	t.Run("Errors", func(t *testing.T) {
		queryErr(t, s, "SELECT k, count(*) FROM gb.t GROUP BY v", codeInvalid,
			"Group by is currently only supported on the columns of the PRIMARY KEY, got v")
		queryErr(t, s, "SELECT k, count(*) FROM gb.t GROUP BY c1", codeInvalid,
			"Group by currently only support groups of columns following their declared order in the PRIMARY KEY")
		queryErr(t, s, "SELECT k, count(*) FROM gb.t GROUP BY k, c2", codeInvalid,
			"Group by currently only support groups of columns following their declared order in the PRIMARY KEY")
	})
}

// groupPages runs q page by page with the given page size (0: unpaged)
// and returns its rows as "column=value" lines and the number of pages,
// checking that no page holds more than size rows.
func groupPages(t *testing.T, s *gocql.Session, q string, size int, args ...any) ([]string, int) {
	t.Helper()
	var out []string
	var state []byte
	for pages := 1; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: more than 100 pages", q)
		}
		// PageState turns gocql's automatic paging off: one page per Iter.
		iter := s.Query(q, args...).PageSize(size).PageState(state).Iter()
		n := iter.NumRows()
		if size > 0 && n > size {
			t.Fatalf("%s: page %d holds %d rows, page size %d", q, pages, n, size)
		}
		cols := iter.Columns()
		for i := 0; i < n; i++ {
			// Scanning into **T tells null from zero.
			dest := make([]any, len(cols))
			for j, c := range cols {
				zero, err := c.TypeInfo.NewWithError()
				if err != nil {
					t.Fatalf("%s: column %s: %v", q, c.Name, err)
				}
				dest[j] = reflect.New(reflect.PointerTo(reflect.TypeOf(zero).Elem())).Interface()
			}
			if !iter.Scan(dest...) {
				t.Fatalf("%s: page %d: row %d of %d missing: %v", q, pages, i, n, iter.Close())
			}
			var fields []string
			for j, c := range cols {
				v := "null"
				if p := reflect.ValueOf(dest[j]).Elem(); !p.IsNil() {
					v = fmt.Sprint(p.Elem().Interface())
				}
				fields = append(fields, fmt.Sprintf("%s=%s", shortName(c.Name), v))
			}
			out = append(out, strings.Join(fields, " "))
		}
		state = iter.PageState()
		if err := iter.Close(); err != nil {
			t.Fatalf("%s: page %d: %v", q, pages, err)
		}
		if len(state) == 0 {
			return out, pages
		}
	}
}

// shortName drops the function wrapper of a result column name:
// system.sum(v) is "sum".
func shortName(name string) string {
	name = strings.TrimPrefix(name, "system.")
	if i := strings.IndexByte(name, '('); i > 0 {
		return name[:i]
	}
	return name
}

// sortGroups orders group lines for results whose partition order is the
// token order.
func sortGroups(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}
