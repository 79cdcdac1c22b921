// Package securitytest makes certificates for tests, with the security
// package's own functions, so that every test of TLS uses the files an
// operator's `cosmosctl certs` would make.
package securitytest

import (
	"testing"

	"github.com/cosmosd/cosmosd/security"
)

// PKI makes in dir a CA, a node certificate valid for 127.0.0.1 and
// localhost, and a client certificate for each name in clients.
func PKI(t testing.TB, dir string, clients ...string) {
	t.Helper()
	o := security.CertOptions{Dir: dir}
	if _, err := security.CreateCA(o); err != nil {
		t.Fatal(err)
	}
	if _, err := security.CreateNode(o, []string{"127.0.0.1", "localhost"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		if _, err := security.CreateClient(o, c); err != nil {
			t.Fatal(err)
		}
	}
}
