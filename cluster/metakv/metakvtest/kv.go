package metakvtest

import (
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/cosmosd/cosmosd/cluster/metakv"
)

var kvCases = []testCase{
	{"Revision/WritingTxnAdvancesByOne", testRevisionWrite},
	{"Revision/NoWriteLeavesIt", testRevisionNoWrite},
	{"Records/CreateAndModRevision", testRecords},
	{"Records/EmptyValue", testEmptyValue},
	{"Records/ValuesAreCopies", testValueCopies},
	{"Keys/ListOrderAndPrefix", testListPrefix},
}

// Revisions: one per writing transaction, whatever its operations.
func testRevisionWrite(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := revision(t, s)
	r1 := do(t, s, metakv.Put("a", value("1")))
	if r1 != r0+1 {
		t.Fatalf("put: revision %d, want %d", r1, r0+1)
	}
	if r := revision(t, s); r != r1 {
		t.Fatalf("Revision = %d after a put at %d", r, r1)
	}
	r2 := do(t, s, metakv.Put("b", value("2")), metakv.Put("c", value("3")), metakv.Delete("a"), metakv.Delete("absent"))
	if r2 != r1+1 {
		t.Fatalf("txn of 4 ops: revision %d, want %d", r2, r1+1)
	}
	for _, k := range []string{"b", "c"} {
		if kv, _ := get(t, s, k); kv.ModRevision != r2 || kv.CreateRevision != r2 {
			t.Fatalf("%s written by the txn at %d: create %d mod %d", k, r2, kv.CreateRevision, kv.ModRevision)
		}
	}
	// An Else branch that writes advances it the same way.
	r3 := txn(t, s, metakv.Txn{If: []metakv.Cond{metakv.Exists("absent")}, Else: []metakv.Op{metakv.Put("d", nil), metakv.Put("e", nil)}})
	if r3.Succeeded || r3.Revision != r2+1 {
		t.Fatalf("else branch: %+v, want failed at %d", r3, r2+1)
	}
	// A put of the same value is still a write.
	if r := do(t, s, metakv.Put("d", nil)); r != r2+2 {
		t.Fatalf("rewriting a value: revision %d, want %d", r, r2+2)
	}
}

// Revisions: a transaction that changes nothing leaves the revision, and
// reports it.
func testRevisionNoWrite(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("a", value("1")))
	for name, tx := range map[string]metakv.Txn{
		"empty":                {},
		"reads":                {Then: []metakv.Op{metakv.Get("a"), metakv.GetUnder("")}},
		"failed without else":  {If: []metakv.Cond{metakv.Absent("a")}, Then: []metakv.Op{metakv.Put("b", nil)}},
		"delete of absent key": {Then: []metakv.Op{metakv.Delete("absent")}},
		"delete under nothing": {Then: []metakv.Op{metakv.DeleteUnder("none/")}},
	} {
		r := txn(t, s, tx)
		if r.Revision != r0 {
			t.Errorf("%s: txn reports revision %d, want %d", name, r.Revision, r0)
		}
	}
	if r := revision(t, s); r != r0 {
		t.Fatalf("revision %d after writing nothing, want %d", r, r0)
	}
	if _, r, err := s.List(t.Context(), ""); err != nil || r != r0 {
		t.Fatalf("List reports revision %d (%v), want %d", r, err, r0)
	}
	if exists(t, s, "b") {
		t.Fatal("the failed txn's Then ran")
	}
}

// Records: CreateRevision and ModRevision across put, overwrite, delete
// and recreate.
func testRecords(t *testing.T, h Harness) {
	s := h.Open(t)
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("a fresh store has k")
	}
	r1 := do(t, s, metakv.Put("k", value("1")))
	kv, ok := get(t, s, "k")
	if !ok {
		t.Fatal("k not found after put")
	}
	wantRecord(t, kv, "k", "1", r1, r1)
	if kv.Lease != 0 {
		t.Fatalf("unleased key has lease %x", kv.Lease)
	}
	r2 := do(t, s, metakv.Put("k", value("2")))
	kv, _ = get(t, s, "k")
	wantRecord(t, kv, "k", "2", r1, r2)
	r3 := do(t, s, metakv.Delete("k"))
	if r3 != r2+1 {
		t.Fatalf("delete at %d, want %d", r3, r2+1)
	}
	if _, ok := get(t, s, "k"); ok {
		t.Fatal("k found after delete")
	}
	r4 := do(t, s, metakv.Put("k", value("3")))
	kv, _ = get(t, s, "k")
	wantRecord(t, kv, "k", "3", r4, r4)
	// List reports the same records.
	kvs := list(t, s, "k")
	if len(kvs) != 1 {
		t.Fatalf("List(k) = %v", keys(kvs))
	}
	wantRecord(t, kvs[0], "k", "3", r4, r4)
}

func testEmptyValue(t *testing.T, h Harness) {
	s := h.Open(t)
	do(t, s, metakv.Put("e", nil), metakv.Put("f", []byte{}))
	for _, k := range []string{"e", "f"} {
		kv, ok := get(t, s, k)
		if !ok || len(kv.Value) != 0 {
			t.Fatalf("%s: ok %v value %q, want an existing empty value", k, ok, kv.Value)
		}
	}
}

// A caller may modify what it wrote or read without changing the store.
func testValueCopies(t *testing.T, h Harness) {
	s := h.Open(t)
	v := value("abc")
	do(t, s, metakv.Put("k", v))
	v[0] = 'X'
	kv, _ := get(t, s, "k")
	kv.Value[1] = 'Y'
	list(t, s, "k")[0].Value[2] = 'Z'
	txn(t, s, metakv.Txn{Then: []metakv.Op{metakv.Get("k")}}).Reads[0][0].Value[0] = 'W'
	w := s.Watch(t.Context(), "k", 0)
	evs, _ := collect(t, w, 1)
	evs[0].Kv.Value[0] = 'V'
	kv2, _ := get(t, s, "k")
	if string(kv2.Value) != "abc" {
		t.Fatalf("value %q after the caller changed its slices, want abc", kv2.Value)
	}
	evs, _ = collect(t, s.Watch(t.Context(), "k", 0), 1)
	if string(evs[0].Kv.Value) != "abc" {
		t.Fatalf("watched value %q after another watcher changed its slice, want abc", evs[0].Kv.Value)
	}
}

// Keys: bytewise order; a prefix covers exactly the keys starting with it.
func testListPrefix(t *testing.T, h Harness) {
	s := h.Open(t)
	all := []string{"a/2", "a/10", "ab", "a", "a/1", "b/x", "B", "a/\xff", "a/\x00"}
	var ops []metakv.Op
	for _, k := range all {
		ops = append(ops, metakv.Put(k, value(k)))
	}
	do(t, s, ops...)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"a/", []string{"a/\x00", "a/1", "a/10", "a/2", "a/\xff"}},
		{"a", []string{"a", "a/\x00", "a/1", "a/10", "a/2", "a/\xff", "ab"}},
		{"ab", []string{"ab"}},
		{"a/1", []string{"a/1", "a/10"}},
		{"", []string{"B", "a", "a/\x00", "a/1", "a/10", "a/2", "a/\xff", "ab", "b/x"}},
		{"c", nil},
		{"a/3", nil},
	} {
		kvs := list(t, s, tc.prefix)
		if got := keys(kvs); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
		for _, kv := range kvs {
			if string(kv.Value) != kv.Key {
				t.Errorf("List(%q): %s has value %q", tc.prefix, kv.Key, kv.Value)
			}
		}
	}
}

var txnCases = []testCase{
	{"Txn/Conditions", testConditions},
	{"Txn/ConditionsAllMustHold", testConditionsAll},
	{"Txn/Branches", testBranches},
	{"Txn/ReadsOfTheBranchThatRan", testReads},
	{"Txn/ReadsBeforeWritesSeePreBranchState", testReadsBeforeWrites},
	{"Txn/ReadAfterWriteInBranchSeesIt", testReadAfterWrite},
	{"Txn/DeleteUnder", testDeleteUnder},
	{"Txn/KeyWrittenTwiceInBranchIsRejected", testDuplicateKeys},
	{"Txn/InvalidConditionsAndOpsFail", testInvalid},
	{"Txn/AllOrNothing", testAtomic},
}

// Every condition helper, true and false, and raw prefix conditions.
func testConditions(t *testing.T, h Harness) {
	s := h.Open(t)
	rx := do(t, s, metakv.Put("x", value("v")))
	mx := do(t, s, metakv.Put("x", value("w")))
	do(t, s, metakv.Put("empty", nil))
	// p/3 is created first and deleted last: UnchangedUnderSince does not
	// see the deletion.
	do(t, s, metakv.Put("p/3", value("same")))
	rp1 := do(t, s, metakv.Put("p/1", value("same")))
	rp2 := do(t, s, metakv.Put("p/2", value("same")))
	do(t, s, metakv.Delete("p/3"))
	do(t, s, metakv.Put("q/1", value("same")), metakv.Put("q/2", value("other")))
	r0 := revision(t, s)

	prefixValue := func(prefix, v string) metakv.Cond {
		return metakv.Cond{Key: prefix, Prefix: true, Target: metakv.TargetValue, Compare: metakv.Equal, Value: value(v)}
	}
	for _, tc := range []struct {
		name string
		c    metakv.Cond
		want bool
	}{
		{"Absent(absent)", metakv.Absent("nope"), true},
		{"Absent(existing)", metakv.Absent("x"), false},
		{"Absent(deleted)", metakv.Absent("p/3"), true},
		{"Exists(existing)", metakv.Exists("x"), true},
		{"Exists(absent)", metakv.Exists("nope"), false},
		{"Exists(prefix of existing)", metakv.Exists("p/"), false},
		{"AnyUnder(with keys)", metakv.AnyUnder("p/"), true},
		{"AnyUnder(partial name)", metakv.AnyUnder("p"), true},
		{"AnyUnder(no keys)", metakv.AnyUnder("none/"), false},
		{"AnyUnder(only deleted keys)", metakv.AnyUnder("p/3"), false},
		{"CreatedAt(create rev)", metakv.CreatedAt("x", rx), true},
		{"CreatedAt(mod rev)", metakv.CreatedAt("x", mx), false},
		{"CreatedAt(absent, rev)", metakv.CreatedAt("nope", rx), false},
		{"ModifiedAt(mod rev)", metakv.ModifiedAt("x", mx), true},
		{"ModifiedAt(create rev)", metakv.ModifiedAt("x", rx), false},
		{"ModifiedAt(existing, 0)", metakv.ModifiedAt("x", 0), false},
		{"ModifiedAt(absent, 0)", metakv.ModifiedAt("nope", 0), true},
		{"ModifiedAt(absent, rev)", metakv.ModifiedAt("nope", mx), false},
		{"UnchangedUnderSince(last write)", metakv.UnchangedUnderSince("p/", rp2), true},
		{"UnchangedUnderSince(later)", metakv.UnchangedUnderSince("p/", r0), true},
		{"UnchangedUnderSince(before last write)", metakv.UnchangedUnderSince("p/", rp1), false},
		{"UnchangedUnderSince(no keys)", metakv.UnchangedUnderSince("none/", rx), true},
		{"ValueIs(equal)", metakv.ValueIs("x", value("w")), true},
		{"ValueIs(old value)", metakv.ValueIs("x", value("v")), false},
		{"ValueIs(absent, empty)", metakv.ValueIs("nope", nil), false},
		{"ValueIs(empty value, nil)", metakv.ValueIs("empty", nil), true},
		{"ValueIs(empty value, empty)", metakv.ValueIs("empty", []byte{}), true},
		{"prefix value(all equal)", prefixValue("p/", "same"), true},
		{"prefix value(one differs)", prefixValue("q/", "same"), false},
		{"prefix value(no keys)", prefixValue("none/", ""), false},
		{"prefix create rev(no keys) = 0", metakv.Cond{Key: "none/", Prefix: true, Target: metakv.TargetCreateRevision, Compare: metakv.Equal}, true},
		{"prefix mod rev(no keys) < 1", metakv.Cond{Key: "none/", Prefix: true, Target: metakv.TargetModRevision, Compare: metakv.Less, Rev: 1}, true},
		{"prefix mod rev(all) > rx", metakv.Cond{Key: "p/", Prefix: true, Target: metakv.TargetModRevision, Compare: metakv.Greater, Rev: rx}, true},
		{"prefix create rev(all) > rp1", metakv.Cond{Key: "p/", Prefix: true, Target: metakv.TargetCreateRevision, Compare: metakv.Greater, Rev: rp1}, false},
		{"value less", metakv.Cond{Key: "x", Target: metakv.TargetValue, Compare: metakv.Less, Value: value("x")}, true},
		{"value greater", metakv.Cond{Key: "x", Target: metakv.TargetValue, Compare: metakv.Greater, Value: value("x")}, false},
	} {
		if got := holds(t, s, tc.c); got != tc.want {
			t.Errorf("%s: holds = %v, want %v", tc.name, got, tc.want)
		}
	}
	if r := revision(t, s); r != r0 {
		t.Fatalf("evaluating conditions moved the revision from %d to %d", r0, r)
	}
}

func testConditionsAll(t *testing.T, h Harness) {
	s := h.Open(t)
	do(t, s, metakv.Put("a", nil))
	yes, no := metakv.Exists("a"), metakv.Exists("b")
	for _, tc := range []struct {
		cs   []metakv.Cond
		want bool
	}{
		{nil, true},
		{[]metakv.Cond{yes, yes}, true},
		{[]metakv.Cond{yes, no}, false},
		{[]metakv.Cond{no, yes}, false},
	} {
		if got := txn(t, s, metakv.Txn{If: tc.cs}).Succeeded; got != tc.want {
			t.Errorf("%d conditions: Succeeded = %v, want %v", len(tc.cs), got, tc.want)
		}
	}
}

// Then runs when the conditions hold, else Else; never both.
func testBranches(t *testing.T, h Harness) {
	s := h.Open(t)
	create := metakv.Txn{
		If:   []metakv.Cond{metakv.Absent("k")},
		Then: []metakv.Op{metakv.Put("k", value("then"))},
		Else: []metakv.Op{metakv.Put("conflict", value("else"))},
	}
	r1 := txn(t, s, create)
	if !r1.Succeeded || exists(t, s, "conflict") {
		t.Fatalf("first create: %+v; Else ran: %v", r1, exists(t, s, "conflict"))
	}
	r2 := txn(t, s, create)
	if r2.Succeeded || r2.Revision != r1.Revision+1 {
		t.Fatalf("second create: %+v, want failed at %d", r2, r1.Revision+1)
	}
	if kv, _ := get(t, s, "k"); string(kv.Value) != "then" || kv.ModRevision != r1.Revision {
		t.Fatalf("k = %q at %d: the Then branch ran twice", kv.Value, kv.ModRevision)
	}
	if kv, _ := get(t, s, "conflict"); string(kv.Value) != "else" {
		t.Fatalf("conflict = %q, want the Else branch's write", kv.Value)
	}
	// Compare-and-swap on ModRevision: the read-modify-write pattern.
	kv, _ := get(t, s, "k")
	cas := func(v string) bool {
		return txn(t, s, metakv.Txn{If: []metakv.Cond{metakv.ModifiedAt("k", kv.ModRevision)}, Then: []metakv.Op{metakv.Put("k", value(v))}}).Succeeded
	}
	if !cas("one") || cas("two") {
		t.Fatal("compare-and-swap: the first must win, the second (stale) must lose")
	}
}

// Reads holds one entry per Get/GetUnder of the branch that ran, in order.
func testReads(t *testing.T, h Harness) {
	s := h.Open(t)
	rb := do(t, s, metakv.Put("a", value("1")), metakv.Put("p/2", value("2")), metakv.Put("p/1", value("1")), metakv.Put("pz", nil))
	reads := []metakv.Op{metakv.Get("a"), metakv.Get("absent"), metakv.GetUnder("p/"), metakv.GetUnder("none/")}
	for _, succeed := range []bool{true, false} {
		cond := metakv.Exists("a")
		if !succeed {
			cond = metakv.Absent("a")
		}
		tx := metakv.Txn{If: []metakv.Cond{cond}, Then: reads, Else: reads[2:]}
		r := txn(t, s, tx)
		if r.Succeeded != succeed {
			t.Fatalf("Succeeded = %v, want %v", r.Succeeded, succeed)
		}
		want := [][]string{{"a"}, nil, {"p/1", "p/2"}, nil}
		if !succeed {
			want = want[2:]
		}
		if len(r.Reads) != len(want) {
			t.Fatalf("succeed %v: %d reads, want %d", succeed, len(r.Reads), len(want))
		}
		for i, w := range want {
			if got := keys(r.Reads[i]); !slices.Equal(got, w) {
				t.Errorf("succeed %v: read %d = %q, want %q", succeed, i, got, w)
			}
		}
		if succeed {
			wantRecord(t, r.Reads[0][0], "a", "1", rb, rb)
		}
	}
	if r := txn(t, s, metakv.Txn{Then: []metakv.Op{metakv.Put("b", nil)}}); len(r.Reads) != 0 {
		t.Fatalf("a branch without reads has Reads %v", r.Reads)
	}
}

// Reads placed before a branch's writes see the store as it was.
func testReadsBeforeWrites(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("a", value("old")), metakv.Put("p/1", value("old")))
	r := txn(t, s, metakv.Txn{Then: []metakv.Op{
		metakv.Get("a"), metakv.GetUnder("p/"), metakv.Get("new"),
		metakv.Put("a", value("new")), metakv.Put("new", value("new")), metakv.DeleteUnder("p/"),
	}})
	if len(r.Reads) != 3 || len(r.Reads[0]) != 1 || len(r.Reads[1]) != 1 || len(r.Reads[2]) != 0 {
		t.Fatalf("reads %+v, want a, p/1 and nothing", r.Reads)
	}
	wantRecord(t, r.Reads[0][0], "a", "old", r0, r0)
	wantRecord(t, r.Reads[1][0], "p/1", "old", r0, r0)
	if kv, _ := get(t, s, "a"); string(kv.Value) != "new" || kv.ModRevision != r0+1 {
		t.Fatalf("a = %q at %d after the txn at %d", kv.Value, kv.ModRevision, r0+1)
	}
}

// A read after a write of the same branch sees the write: etcd applies a
// branch's operations in order. (The package doc says reads see the store
// as of before the branch's writes; etcd does not, see the report.)
func testReadAfterWrite(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("a", value("old")), metakv.Put("gone", nil))
	r := txn(t, s, metakv.Txn{Then: []metakv.Op{
		metakv.Put("a", value("new")), metakv.Delete("gone"), metakv.Get("a"), metakv.Get("gone"),
	}})
	if len(r.Reads) != 2 || len(r.Reads[0]) != 1 || len(r.Reads[1]) != 0 {
		t.Fatalf("reads %+v, want the new a and no gone", r.Reads)
	}
	wantRecord(t, r.Reads[0][0], "a", "new", r0, r0+1)
}

// DeleteUnder deletes exactly the keys under its prefix, in one revision.
func testDeleteUnder(t *testing.T, h Harness) {
	s := h.Open(t)
	do(t, s, metakv.Put("p/1", nil), metakv.Put("p/2", nil), metakv.Put("p/3/x", nil), metakv.Put("pq", nil), metakv.Put("p", nil))
	r0 := revision(t, s)
	if r := do(t, s, metakv.DeleteUnder("p/")); r != r0+1 {
		t.Fatalf("DeleteUnder: revision %d, want %d", r, r0+1)
	}
	if got := keys(list(t, s, "")); !slices.Equal(got, []string{"p", "pq"}) {
		t.Fatalf("after DeleteUnder(p/): %q, want [p pq]", got)
	}
	if r := do(t, s, metakv.DeleteUnder("p/")); r != r0+1 {
		t.Fatalf("DeleteUnder of nothing: revision %d, want %d", r, r0+1)
	}
}

// A branch that puts a key twice, or puts a key it deletes, fails whole:
// etcd rejects it ("duplicate key given in txn request") whichever branch
// would run.
func testDuplicateKeys(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("p/1", value("orig")))
	for name, tx := range map[string]metakv.Txn{
		"put twice":             {Then: []metakv.Op{metakv.Put("a", nil), metakv.Put("a", value("2"))}},
		"put and delete":        {Then: []metakv.Op{metakv.Put("p/1", nil), metakv.Delete("p/1")}},
		"delete then put":       {Then: []metakv.Op{metakv.Delete("p/1"), metakv.Put("p/1", nil)}},
		"put under DeleteUnder": {Then: []metakv.Op{metakv.DeleteUnder("p/"), metakv.Put("p/2", nil)}},
		"in the other branch":   {If: []metakv.Cond{metakv.Exists("p/1")}, Then: []metakv.Op{metakv.Put("b", nil)}, Else: []metakv.Op{metakv.Put("a", nil), metakv.Put("a", nil)}},
	} {
		if _, err := s.Txn(t.Context(), tx); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if r := revision(t, s); r != r0 {
		t.Fatalf("rejected txns moved the revision from %d to %d", r0, r)
	}
	// Deleting a key twice, or reading a key written, is allowed.
	do(t, s, metakv.Delete("p/1"), metakv.DeleteUnder("p/"), metakv.Put("c", nil), metakv.Get("c"))
}

// Bad input fails with an error, writes nothing and does not panic.
func testInvalid(t *testing.T, h Harness) {
	s := h.Open(t)
	r0 := do(t, s, metakv.Put("a", nil))
	for name, tx := range map[string]metakv.Txn{
		"unknown comparison": {If: []metakv.Cond{{Key: "a", Target: metakv.TargetModRevision, Compare: 0}}, Then: []metakv.Op{metakv.Put("b", nil)}},
		"unknown target":     {If: []metakv.Cond{{Key: "a", Target: 9, Compare: metakv.Equal}}, Then: []metakv.Op{metakv.Put("b", nil)}},
		"unknown op":         {Then: []metakv.Op{metakv.Put("b", nil), {Kind: 9, Key: "a"}}},
		"put with prefix":    {Then: []metakv.Op{{Kind: metakv.OpPut, Key: "a", Prefix: true}}},
		"bad op in else":     {Then: []metakv.Op{metakv.Put("b", nil)}, Else: []metakv.Op{{Kind: 0, Key: "a"}}},
	} {
		if _, err := s.Txn(t.Context(), tx); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if r := revision(t, s); r != r0 || exists(t, s, "b") {
		t.Fatalf("failed txns wrote: revision %d (was %d), b exists %v", r, r0, exists(t, s, "b"))
	}
}

// Transactions: another reader sees all of a transaction's writes or none.
func testAtomic(t *testing.T, h Harness) {
	s := h.Open(t)
	const n = 50
	var wg sync.WaitGroup
	wg.Add(1)
	errc := make(chan error, 1)
	go func() {
		defer wg.Done()
		for i := range n {
			v := value(strconv.Itoa(i))
			if _, err := metakv.Do(t.Context(), s, metakv.Put("x/a", v), metakv.Put("x/b", v), metakv.Put("x/c", v)); err != nil {
				errc <- err
				return
			}
		}
	}()
	defer wg.Wait()
	for {
		kvs := list(t, s, "x/")
		if len(kvs) != 0 && len(kvs) != 3 {
			t.Fatalf("List saw %d of a transaction's 3 keys", len(kvs))
		}
		for _, kv := range kvs {
			if string(kv.Value) != string(kvs[0].Value) || kv.ModRevision != kvs[0].ModRevision {
				t.Fatalf("List saw two transactions at once: %q@%d and %q@%d", kvs[0].Value, kvs[0].ModRevision, kv.Value, kv.ModRevision)
			}
		}
		select {
		case err := <-errc:
			t.Fatal(err)
		default:
		}
		if len(kvs) == 3 && string(kvs[0].Value) == strconv.Itoa(n-1) {
			return
		}
	}
}
