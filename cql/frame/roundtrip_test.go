package frame

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func compressors() []Compressor { return []Compressor{nil, LZ4{}, Snappy{}} }

func compName(c Compressor) string {
	if c == nil {
		return "plain"
	}
	return c.Name()
}

// TestRequestRoundTrip encodes every request as a client would, reads it
// back as the server does, and compares.
func TestRequestRoundTrip(t *testing.T) {
	for _, c := range compressors() {
		for _, tc := range sampleRequests() {
			t.Run(compName(c)+"/"+tc.name, func(t *testing.T) {
				buf, err := AppendRequest(nil, Header{Stream: 7, Flags: FlagTracing}, c, tc.req)
				if err != nil {
					t.Fatalf("AppendRequest: %v", err)
				}
				rd := NewReader(bytes.NewReader(buf), 0)
				rd.SetCompressor(c)
				f, err := rd.ReadFrame()
				if err != nil {
					t.Fatalf("ReadFrame: %v", err)
				}
				if f.Header.Stream != 7 || f.Header.Opcode != tc.req.Opcode() || !f.Header.Tracing() || f.Header.Compressed() {
					t.Fatalf("header %v", f.Header)
				}
				got, err := DecodeRequest(f)
				if err != nil {
					t.Fatalf("DecodeRequest: %v", err)
				}
				if diff := cmp.Diff(tc.req, got, cmpOpts...); diff != "" {
					t.Fatalf("round trip (-sent +decoded):\n%s", diff)
				}
				if _, err := rd.ReadFrame(); err != io.EOF {
					t.Fatalf("after the only frame: %v, want io.EOF", err)
				}
			})
		}
	}
}

// TestResponseRoundTrip encodes every response as the server does and
// decodes it as a client would, with and without an envelope.
func TestResponseRoundTrip(t *testing.T) {
	tid := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	envs := map[string]*Envelope{
		"none": nil,
		"all":  {TracingID: &tid, Warnings: []string{"w1", "w2"}, CustomPayload: map[string][]byte{"p": {1}}},
	}
	for _, c := range compressors() {
		for envName, env := range envs {
			for _, tc := range sampleResponses() {
				t.Run(compName(c)+"/"+envName+"/"+tc.name, func(t *testing.T) {
					buf, err := AppendResponse([]byte("junk"), Header{Stream: -1}, env, c, tc.resp)
					if err != nil {
						t.Fatalf("AppendResponse: %v", err)
					}
					if string(buf[:4]) != "junk" {
						t.Fatalf("AppendResponse clobbered dst")
					}
					rd := NewResponseReader(bytes.NewReader(buf[4:]), 0)
					rd.SetCompressor(c)
					f, err := rd.ReadFrame()
					if err != nil {
						t.Fatalf("ReadFrame: %v", err)
					}
					if f.Header.Stream != -1 || f.Header.Opcode != tc.resp.Opcode() || f.Header.Version != VersionResponse {
						t.Fatalf("header %v", f.Header)
					}
					got, gotEnv, err := DecodeResponse(f)
					if err != nil {
						t.Fatalf("DecodeResponse: %v", err)
					}
					if diff := cmp.Diff(tc.resp, got, cmpOpts...); diff != "" {
						t.Fatalf("round trip (-sent +decoded):\n%s", diff)
					}
					wantEnv := Envelope{}
					if env != nil {
						wantEnv = *env
					}
					if diff := cmp.Diff(wantEnv, gotEnv, cmpOpts...); diff != "" {
						t.Fatalf("envelope (-sent +decoded):\n%s", diff)
					}
				})
			}
		}
	}
}

// TestCompressionFlag checks when FinishFrame compresses: never below
// MinCompressBytes or without a compressor, and only when it helps.
func TestCompressionFlag(t *testing.T) {
	long := &Error{Code: CodeInvalid, Message: strings.Repeat("compressible ", 40)}
	short := &Error{Code: CodeInvalid, Message: "x"}
	tests := []struct {
		name string
		c    Compressor
		resp Response
		want bool
	}{
		{"nil-compressor", nil, long, false},
		{"lz4-long", LZ4{}, long, true},
		{"snappy-long", Snappy{}, long, true},
		{"lz4-short", LZ4{}, short, false},
		{"lz4-incompressible", LZ4{}, &AuthChallenge{Token: pseudoRandom(500)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf, err := AppendResponse(nil, Header{}, nil, tc.c, tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := ParseHeader(buf)
			if h.Compressed() != tc.want {
				t.Fatalf("compressed = %v, want %v", h.Compressed(), tc.want)
			}
			if int(h.Length) != len(buf)-HeaderSize {
				t.Fatalf("length %d, body %d", h.Length, len(buf)-HeaderSize)
			}
		})
	}
}

func pseudoRandom(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// TestStreamingRows builds a Rows result cell by cell and checks it equals
// the one-shot encoding.
func TestStreamingRows(t *testing.T) {
	meta := RowsMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "t", Columns: []ColumnSpec{
		{Name: "a", Type: intT}, {Name: "b", Type: textT}}}
	rows := [][][]byte{{int32Bytes(1), []byte("one")}, {int32Bytes(2), nil}}
	want := (&RowsResult{Metadata: meta, Rows: rows}).AppendMessage(nil)

	buf, mark := BeginFrame(nil, Header{Stream: 3}, nil)
	buf, at := AppendRowsHeader(buf, &meta)
	for _, row := range rows {
		for _, cell := range row {
			buf = AppendCell(buf, cell)
		}
	}
	SetRowCount(buf, at, len(rows))
	buf, err := FinishFrame(buf, mark, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf[HeaderSize:], want) {
		t.Fatalf("streamed body\n%x\nwant\n%x", buf[HeaderSize:], want)
	}
}

// TestRowsPadding checks that ragged rows still produce a well-formed frame.
func TestRowsPadding(t *testing.T) {
	meta := RowsMetadata{Columns: []ColumnSpec{{Name: "a", Type: intT}, {Name: "b", Type: intT}}}
	body := (&RowsResult{Metadata: meta, Rows: [][][]byte{{{1}}, {{1}, {2}, {3}}}}).AppendMessage(nil)
	got, err := DecodeResult(body)
	if err != nil {
		t.Fatal(err)
	}
	want := [][][]byte{{{1}, nil}, {{1}, {2}}}
	if diff := cmp.Diff(want, got.(*RowsResult).Rows); diff != "" {
		t.Fatal(diff)
	}
}

// TestUnknownErrorCode checks that codes gocql does not know are sent as
// Server error.
func TestUnknownErrorCode(t *testing.T) {
	body := (&Error{Code: 0x1700, Message: "cas unknown"}).AppendMessage(nil)
	e, err := DecodeError(body)
	if err != nil {
		t.Fatal(err)
	}
	if e.Code != CodeServerError || !strings.Contains(e.Message, "0x1700") || !strings.Contains(e.Message, "cas unknown") {
		t.Fatalf("got %+v", e)
	}
	var asErr error = e
	var target *Error
	if !errors.As(asErr, &target) {
		t.Fatal("*Error is not an error")
	}
}

// TestClientEncodeErrors checks that client encoders refuse what does not fit.
func TestClientEncodeErrors(t *testing.T) {
	tests := []struct {
		name string
		req  Request
	}{
		{"too-many-values", &Query{Params: QueryParams{Values: make([]Value, 70000)}}},
		{"names-mismatch", &Query{Params: QueryParams{Values: make([]Value, 2), Names: []string{"a"}}}},
		{"long-id", &Execute{ID: make([]byte, 70000)}},
		{"long-option", &Startup{Options: map[string]string{"k": strings.Repeat("x", 70000)}}},
		{"long-event", &Register{Events: []string{strings.Repeat("x", 70000)}}},
		{"too-many-statements", &Batch{Statements: make([]BatchStatement, 70000)}},
		{"long-payload-key", &Query{CustomPayload: map[string][]byte{strings.Repeat("k", 70000): nil}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			buf, err := AppendRequest([]byte("keep"), Header{}, nil, tc.req)
			if err == nil {
				t.Fatal("no error")
			}
			if string(buf) != "keep" {
				t.Fatalf("buffer after error = %q, want it unchanged", buf)
			}
		})
	}
}

// TestServerTruncation checks that an overlong [string] is truncated, not
// corrupted.
func TestServerTruncation(t *testing.T) {
	msg := strings.Repeat("é", 40000) // 80000 bytes
	body := (&Error{Code: CodeInvalid, Message: msg}).AppendMessage(nil)
	e, err := DecodeError(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Message) != 65535 || !strings.HasPrefix(msg, e.Message) {
		t.Fatalf("message of %d bytes", len(e.Message))
	}
}

// TestFinishFrameTooLarge checks that an oversized body is taken back out.
func TestFinishFrameTooLarge(t *testing.T) {
	defer func(old int) { maxSendBodyBytes = old }(maxSendBodyBytes)
	maxSendBodyBytes = 1000
	for _, c := range compressors() {
		buf, m := BeginFrame([]byte("prev"), Header{Stream: 1, Opcode: OpResult}, nil)
		buf = append(buf, make([]byte, 1001)...)
		buf, err := FinishFrame(buf, m, c)
		if !errors.Is(err, ErrBodyTooLarge) {
			t.Fatalf("%s: err = %v, want ErrBodyTooLarge", compName(c), err)
		}
		if string(buf) != "prev" {
			t.Fatalf("%s: buffer not restored: %d bytes", compName(c), len(buf))
		}
	}
}
