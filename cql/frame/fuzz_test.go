package frame

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

// The seed corpora in testdata/fuzz/FuzzXxx are real encoded messages,
// written by TestWriteFuzzSeeds (run with FRAME_WRITE_SEEDS=1 to refresh).

const fuzzMaxBody = 1 << 20

// reencodeStable checks the decoder/encoder pair on a decoded value: encoding
// it, decoding that and encoding again must give the same bytes.
func reencodeStable[T any](t *testing.T, v T, enc func(T) ([]byte, error), dec func([]byte) (T, error)) {
	t.Helper()
	b1, err := enc(v)
	if err != nil {
		t.Fatalf("re-encode decoded value: %v", err)
	}
	v2, err := dec(b1)
	if err != nil {
		t.Fatalf("decode re-encoded value: %v\n%x", err, b1)
	}
	b2, err := enc(v2)
	if err != nil {
		t.Fatalf("re-encode again: %v", err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("unstable encoding:\n%x\n%x", b1, b2)
	}
}

func encReq[T Request](r T) ([]byte, error) { return r.AppendMessage(nil) }

// fuzzBody runs a request body decoder the way a server does on bytes from
// a client: it must not allocate much more than the body (a decoded
// element costs up to about 64 times the bytes that encode it: a 4-byte
// [bytes] value becomes a 40-byte Value header, plus slice growth), must
// classify every failure as ErrMalformed (the connection answers with a
// protocol error and stays usable), and what it accepts must encode back
// to bytes that decode to the same encoding.
func fuzzBody[T Request](t *testing.T, body []byte, dec func([]byte) (T, error)) {
	var v T
	var err error
	fuzzcheck.Allocs(t, fuzzcheck.Bound(len(body), 64), "decoding a request body", func() { v, err = dec(body) })
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error does not wrap ErrMalformed: %v", err)
		}
		return
	}
	reencodeStable(t, v, encReq[T], dec)
}

func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []Compressor{nil, LZ4{MaxDecodedBytes: fuzzMaxBody}, Snappy{MaxDecodedBytes: fuzzMaxBody}} {
			rd := NewReader(bytes.NewReader(data), fuzzMaxBody)
			rd.SetCompressor(c)
			for range 16 {
				fr, err := rd.ReadFrame()
				if errors.Is(err, ErrMalformed) {
					continue // the frame was consumed; the stream is in sync
				}
				if err != nil {
					break
				}
				if len(fr.Body) > fuzzMaxBody || fr.Header.Compressed() {
					t.Fatalf("frame %v with a body of %d bytes", fr.Header, len(fr.Body))
				}
				if req, err := DecodeRequest(fr); err == nil {
					_, req2 := readRequest(t, reencodeRequest(t, fr.Header, req))
					if diff := cmp.Diff(req, req2, cmpOpts...); diff != "" {
						t.Fatalf("request changed in a round trip:\n%s", diff)
					}
				}
				// Read as a response too: the client side must not panic either.
				fr.Header.Version = VersionResponse
				_, _, _ = DecodeResponse(fr)
			}
		}
	})
}

func FuzzDecodeQuery(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodeQuery) })
}

func FuzzDecodeExecute(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodeExecute) })
}

func FuzzDecodeBatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodeBatch) })
}

func FuzzDecodeStartup(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodeStartup) })
}

func FuzzDecodePrepare(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodePrepare) })
}

func FuzzDecodeRegister(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodeRegister) })
}

func FuzzDecodeAuthResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte) { fuzzBody(t, body, DecodeAuthResponse) })
}

// FuzzDecodeResponse covers the client side: data[0] is the header flags,
// data[1] the opcode, the rest the body.
func FuzzDecodeResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		h := Header{Version: VersionResponse, Flags: data[0] &^ FlagCompression, Opcode: Opcode(data[1])}
		resp, env, err := DecodeResponse(Frame{Header: h, Body: data[2:]})
		if err != nil {
			return
		}
		if e, ok := resp.(*Error); ok && !e.Code.Known() {
			return // deliberately re-encoded as Server error
		}
		out, err := AppendResponse(nil, h, &env, nil, resp)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := ReadResponseFrame(bytes.NewReader(out), DefaultMaxBodyBytes, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp2, env2, err := DecodeResponse(fr)
		if err != nil {
			t.Fatalf("decode re-encoded %T: %v", resp, err)
		}
		// An IPv4-mapped address is sent in its 4-byte form.
		opts := []cmp.Option{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b netip.AddrPort) bool {
			return a.Addr().Unmap() == b.Addr().Unmap() && a.Port() == b.Port()
		})}
		if diff := cmp.Diff(resp, resp2, opts...); diff != "" {
			t.Fatalf("response changed in a round trip:\n%s", diff)
		}
		if env.Warnings == nil {
			env.Warnings = env2.Warnings // an empty list is not sent
		}
		if diff := cmp.Diff(env, env2, opts...); diff != "" {
			t.Fatalf("envelope changed in a round trip:\n%s", diff)
		}
	})
}

// fuzzDecompress checks a decompressor on a body from the network: what it
// allocates stays within the compressor's own bound on expansion (a body
// claiming 256 MB from 10 bytes is refused before anything is reserved).
func fuzzDecompress(t *testing.T, c Compressor, ratio int, data []byte) {
	var out []byte
	var err error
	fuzzcheck.Allocs(t, fuzzcheck.Bound(len(data), ratio), "decompressing a body", func() { out, err = c.Decode(nil, data) })
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("error does not wrap ErrMalformed: %v", err)
		}
		return
	}
	if len(out) > fuzzMaxBody {
		t.Fatalf("decoded %d bytes, limit %d", len(out), fuzzMaxBody)
	}
	enc, err := c.Encode(nil, out)
	if err != nil {
		t.Fatal(err)
	}
	back, err := c.Decode(nil, enc)
	if err != nil || !bytes.Equal(back, out) {
		t.Fatalf("round trip: %v", err)
	}
}

func FuzzDecompressLZ4(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecompress(t, LZ4{MaxDecodedBytes: fuzzMaxBody}, lz4MaxRatio, data)
	})
}

func FuzzDecompressSnappy(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecompress(t, Snappy{MaxDecodedBytes: fuzzMaxBody}, snappyMaxRatio, data)
	})
}

// TestWriteFuzzSeeds writes the seed corpora from real encoded messages.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("FRAME_WRITE_SEEDS") == "" {
		t.Skip("set FRAME_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	write := func(target, name string, data []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range compressors() {
		for _, tc := range sampleRequests() {
			buf, err := AppendRequest(nil, Header{Stream: 1}, c, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			write("FuzzReadFrame", tc.name+"-"+compName(c), buf)
		}
	}
	for _, v := range []byte{0x05, 0x42, 0x02} {
		write("FuzzReadFrame", fmt.Sprintf("version-%02x", v), append([]byte{v, 0, 0, 1, byte(OpOptions), 0, 0, 0, 2, 0, 0}, optionsFrame...))
	}
	for _, tc := range sampleRequests() {
		body, err := tc.req.AppendMessage(nil)
		if err != nil {
			t.Fatal(err)
		}
		switch tc.req.(type) {
		case *Query:
			write("FuzzDecodeQuery", tc.name, body)
		case *Execute:
			write("FuzzDecodeExecute", tc.name, body)
		case *Batch:
			write("FuzzDecodeBatch", tc.name, body)
		case *Startup:
			write("FuzzDecodeStartup", tc.name, body)
		case *Prepare:
			write("FuzzDecodePrepare", tc.name, body)
		case *Register:
			write("FuzzDecodeRegister", tc.name, body)
		case *AuthResponse:
			write("FuzzDecodeAuthResponse", tc.name, body)
		}
	}
	tid := [16]byte{1}
	for _, tc := range sampleResponses() {
		for _, env := range []*Envelope{nil, {TracingID: &tid, Warnings: []string{"w"}, CustomPayload: map[string][]byte{"k": {1}}}} {
			buf, err := AppendResponse(nil, Header{}, env, nil, tc.resp)
			if err != nil {
				t.Fatal(err)
			}
			name := tc.name
			if env != nil {
				name += "-env"
			}
			write("FuzzDecodeResponse", name, append([]byte{buf[1], buf[4]}, buf[HeaderSize:]...))
		}
	}
	for name, p := range payloads() {
		if len(p) > 2000 {
			p = p[:2000]
		}
		l, _ := LZ4{}.Encode(nil, p)
		write("FuzzDecompressLZ4", name, l)
		s, _ := Snappy{}.Encode(nil, p)
		write("FuzzDecompressSnappy", name, s)
	}
}
