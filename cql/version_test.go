package cql

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cosmosd/cosmosd/cql/frame"
)

// A driver that opens with another protocol version must learn, from the
// answer alone, that it should retry with v4: Cassandra answers on stream
// 0 with a v4 header and a Protocol error naming the version. gocql v2
// opens with v5 on a stream of its own and takes only an error on stream
// 0 as a version mismatch (its discovery then reads the version to use
// from the header); an error on its own stream, in another version than
// it sent, made session creation fail (issue 15). The Python driver opens
// with DSE_V2 (0x42), then 0x41, then 5, on stream 0, and downgrades on
// "unsupported protocol version" in the message.
func TestUnsupportedVersionAnswer(t *testing.T) {
	_, addr := startServer(t, Config{})
	for _, tc := range []struct {
		version byte
		stream  int16
		op      frame.Opcode
	}{
		{0x05, 1, frame.OpOptions}, // gocql v2 discovery
		{0x05, 0, frame.OpStartup},
		{0x42, 0, frame.OpOptions}, // Python driver
		{0x41, 0, frame.OpOptions},
		{0x03, 5, frame.OpStartup},
		{0x06, 300, frame.OpOptions},
	} {
		t.Run(fmt.Sprintf("v%#x/stream%d", tc.version, tc.stream), func(t *testing.T) {
			c := dial(t, addr)
			b := header(tc.stream, tc.op, 0)
			b[0] = tc.version
			if tc.version == 0x05 {
				b[1] = 0x10 // USE_BETA, as gocql sets for v5
			}
			if tc.op == frame.OpStartup {
				body := []byte{0, 1, 0, 11}
				body = append(body, "CQL_VERSION"...)
				body = append(body, 0, 5)
				body = append(body, "3.0.0"...)
				binary.BigEndian.PutUint32(b[5:], uint32(len(body)))
				b = append(b, body...)
			}
			c.write(b)
			h, r := c.recv()
			e := wantError(t, "unsupported version", r, frame.CodeProtocolError,
				fmt.Sprintf("Invalid or unsupported protocol version (%d)", tc.version))
			wantError(t, "unsupported version", e, frame.CodeProtocolError, "unsupported protocol version")
			if h.Stream != 0 || h.Version != frame.VersionResponse {
				t.Fatalf("answered on stream %d with version %#x, want stream 0 and %#x", h.Stream, h.Version, frame.VersionResponse)
			}
			c.expectClosed("after an unsupported version")
		})
	}
}
