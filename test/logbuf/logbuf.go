// Package logbuf is the log destination tests read while the code under
// test writes to it: the nodes of a test cluster, an authenticator, the
// process whose lines must never hold a password or a key.
package logbuf

import (
	"bytes"
	"sync"
)

// Buffer keeps everything written to it; safe for concurrent writers and
// readers. The zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
