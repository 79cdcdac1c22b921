package embedded

import (
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// testingTB is the part of testing.TB that StartForTest uses, declared
// here so that the daemon, which links this package, does not link
// package testing.
type testingTB interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// StartForTest starts a single-member etcd for a test of what only a real
// etcd does (its limits, compaction, its client's quirks): in t.TempDir(),
// on a free loopback port, without fsync. It returns a client of it;
// t's Cleanup closes the client, then the server. It fails t when etcd
// does not start, as under ForbidEnv: a test that needs etcd skips under
// -short before calling it.
func StartForTest(t testingTB) *clientv3.Client {
	t.Helper()
	e, err := Start(Config{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("embedded etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
