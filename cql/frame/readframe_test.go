package frame

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// optionsFrame is a valid v4 OPTIONS request on stream 9.
var optionsFrame = []byte{0x04, 0, 0, 9, byte(OpOptions), 0, 0, 0, 0}

// TestUnsupportedVersion checks version negotiation: a frame of another
// version yields *UnsupportedVersionError with its stream id, its body is
// skipped, and the next frame is readable.
func TestUnsupportedVersion(t *testing.T) {
	body := []byte("0123456789")
	v3Header := func(version byte) []byte {
		return append([]byte{version, 0, 0x01, 0x02, byte(OpOptions), 0, 0, 0, byte(len(body))}, body...)
	}
	tests := []struct {
		name       string
		in         []byte
		wantVer    byte
		wantStream int16
		message    string
	}{
		{"v5", v3Header(0x05), 0x05, 0x0102, "Invalid or unsupported protocol version (5); supported versions are (4/v4)"},
		{"dse-v2", v3Header(0x42), 0x42, 0x0102, "Invalid or unsupported protocol version (66); supported versions are (4/v4)"},
		{"dse-v1", v3Header(0x41), 0x41, 0x0102, "Invalid or unsupported protocol version (65); supported versions are (4/v4)"},
		{"v3", v3Header(0x03), 0x03, 0x0102, "Invalid or unsupported protocol version (3); supported versions are (4/v4)"},
		{"response-direction", v3Header(0x84), 0x84, 0x0102, ""},
		// v1/v2 headers are 8 bytes with a one-byte stream.
		{"v2", append([]byte{0x02, 0, 0x7f, byte(OpStartup), 0, 0, 0, 3}, 'a', 'b', 'c'), 0x02, 0x7f, ""},
		{"v1-negative-stream", append([]byte{0x01, 0, 0xff, byte(OpStartup), 0, 0, 0, 3}, 'a', 'b', 'c'), 0x01, -1, ""},
	}
	for _, tc := range tests {
		for _, viaReader := range []bool{false, true} {
			name := tc.name + "/func"
			if viaReader {
				name = tc.name + "/reader"
			}
			t.Run(name, func(t *testing.T) {
				src := bytes.NewReader(append(append([]byte{}, tc.in...), optionsFrame...))
				read := func() (Frame, error) { return ReadFrame(src, 1024, nil) }
				if viaReader {
					rd := NewReader(src, 1024)
					read = rd.ReadFrame
				}
				_, err := read()
				var uv *UnsupportedVersionError
				if !errors.As(err, &uv) {
					t.Fatalf("err = %v, want *UnsupportedVersionError", err)
				}
				if uv.Version != tc.wantVer || uv.Stream != tc.wantStream {
					t.Fatalf("got version 0x%02x stream %d, want 0x%02x %d", uv.Version, uv.Stream, tc.wantVer, tc.wantStream)
				}
				if !strings.Contains(uv.Error(), "unsupported protocol version") {
					t.Fatalf("message %q lacks the phrase the Python driver looks for", uv.Error())
				}
				if tc.message != "" && uv.Error() != tc.message {
					t.Fatalf("message %q, want %q", uv.Error(), tc.message)
				}
				f, err := read()
				if err != nil || f.Header.Opcode != OpOptions || f.Header.Stream != 9 {
					t.Fatalf("next frame: %v %v; the body was not skipped", f.Header, err)
				}
			})
		}
	}
}

// TestUnsupportedVersionHugeLength checks that an insane length is not
// skipped (that would block or read forever).
func TestUnsupportedVersionHugeLength(t *testing.T) {
	in := []byte{0x05, 0, 0, 3, byte(OpOptions), 0x7f, 0xff, 0xff, 0xff}
	_, err := ReadFrame(bytes.NewReader(in), 1024, nil)
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) || uv.Stream != 3 {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFrameErrors(t *testing.T) {
	lz4Bomb, _ := LZ4{}.Encode(nil, make([]byte, 4096))
	tests := []struct {
		name       string
		in         []byte
		comp       Compressor
		check      func(error) bool
		wantStream int16
		inSync     bool // the next frame is readable
	}{
		{"empty", nil, nil, func(err error) bool { return err == io.EOF }, 0, false},
		{"partial-header", []byte{4, 0, 0}, nil, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, 0, false},
		{"partial-body", []byte{4, 0, 0, 1, 7, 0, 0, 0, 5, 'a'}, nil, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }, 1, false},
		{"too-large", []byte{4, 0, 0, 2, 7, 0, 0, 4, 1}, nil, func(err error) bool {
			var e *FrameTooLargeError
			return errors.As(err, &e) && e.Length == 1025 && e.Max == 1024
		}, 2, false},
		// Not ErrMalformed: that would tell the server the connection is
		// still in sync and it may carry on reading.
		{"negative-length", []byte{4, 0, 0, 3, 7, 0xff, 0xff, 0xff, 0xff}, nil, func(err error) bool {
			var e *NegativeLengthError
			return errors.As(err, &e) && e.Length == -1 && !errors.Is(err, ErrMalformed)
		}, 3, false},
		{"compressed-without-compressor", []byte{4, FlagCompression, 0, 4, 7, 0, 0, 0, 2, 1, 2}, nil,
			func(err error) bool { return errors.Is(err, ErrMalformed) }, 4, true},
		{"corrupt-lz4", []byte{4, FlagCompression, 0, 5, 7, 0, 0, 0, 6, 0, 0, 0, 9, 0xff, 0xff}, LZ4{},
			func(err error) bool { return errors.Is(err, ErrMalformed) }, 5, true},
		{"corrupt-snappy", []byte{4, FlagCompression, 0, 6, 7, 0, 0, 0, 2, 0x09, 0xff}, Snappy{},
			func(err error) bool { return errors.Is(err, ErrMalformed) }, 6, true},
		{"decompresses-beyond-limit", append([]byte{4, FlagCompression, 0, 7, 7, 0, 0, 0, byte(len(lz4Bomb))}, lz4Bomb...), LZ4{},
			func(err error) bool {
				return errors.Is(err, ErrMalformed) && strings.Contains(err.Error(), "limit 1024")
			}, 7, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.inSync {
				in = append(append([]byte{}, tc.in...), optionsFrame...)
			}
			rd := NewReader(bytes.NewReader(in), 1024)
			rd.SetCompressor(tc.comp)
			f, err := rd.ReadFrame()
			if !tc.check(err) {
				t.Fatalf("unexpected error %v", err)
			}
			if f.Header.Stream != tc.wantStream {
				t.Fatalf("stream %d, want %d", f.Header.Stream, tc.wantStream)
			}
			if tc.inSync {
				if f, err := rd.ReadFrame(); err != nil || f.Header.Stream != 9 {
					t.Fatalf("next frame: %v %v", f.Header, err)
				}
			}
		})
	}
}

// TestCompressedEmptyBody checks that an empty body with the compression
// flag reads as an empty body.
func TestCompressedEmptyBody(t *testing.T) {
	for _, c := range []Compressor{LZ4{}, Snappy{}} {
		rd := NewReader(bytes.NewReader([]byte{4, FlagCompression, 0, 1, byte(OpOptions), 0, 0, 0, 0}), 0)
		rd.SetCompressor(c)
		f, err := rd.ReadFrame()
		if err != nil || len(f.Body) != 0 || f.Header.Compressed() {
			t.Fatalf("%s: %v %v", c.Name(), f.Header, err)
		}
		if _, err := DecodeRequest(f); err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
	}
}

// TestReaderBodiesAreIndependent checks that a frame's body survives the
// next ReadFrame, so decoded requests can be handed to other goroutines.
func TestReaderBodiesAreIndependent(t *testing.T) {
	for _, c := range compressors() {
		var in []byte
		for i := range 3 {
			q := &Query{Query: strings.Repeat(string(rune('a'+i)), 100), Params: QueryParams{PageSize: -1,
				Values: []Value{BytesValue(bytes.Repeat([]byte{byte(i)}, 100))}}}
			var err error
			if in, err = AppendRequest(in, Header{Stream: int16(i)}, c, q); err != nil {
				t.Fatal(err)
			}
		}
		rd := NewReader(bytes.NewReader(in), 0)
		rd.SetCompressor(c)
		var got []*Query
		for range 3 {
			f, err := rd.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			req, err := DecodeRequest(f)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, req.(*Query))
		}
		for i, q := range got {
			if q.Query[0] != byte('a'+i) || q.Params.Values[0].Bytes[99] != byte(i) {
				t.Fatalf("%s: query %d was overwritten by a later frame", compName(c), i)
			}
		}
	}
}

// TestReadFrameReusesBuffer checks the allocation-free path of ReadFrame.
func TestReadFrameReusesBuffer(t *testing.T) {
	in, _ := AppendRequest(nil, Header{}, nil, &Prepare{Query: "SELECT 1"})
	buf := make([]byte, 0, 64)
	src := bytes.NewReader(in)
	allocs := testing.AllocsPerRun(100, func() {
		src.Reset(in)
		f, err := ReadFrame(src, 1024, buf)
		if err != nil || &f.Body[0] != &buf[:1][0] {
			t.Fatalf("body not in buf: %v", err)
		}
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per ReadFrame, want 0", allocs)
	}
}

func TestDecodeRequestRejectsResponses(t *testing.T) {
	for _, op := range []Opcode{OpError, OpReady, OpResult, OpEvent, OpSupported, 0x04, 0x11, 0xff} {
		_, err := DecodeRequest(Frame{Header: Header{Version: VersionRequest, Opcode: op}})
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s: err = %v", op, err)
		}
	}
}

// TestTrickleDoesNotPreallocate checks that a header claiming a huge body
// costs memory only for the bytes that actually arrive.
func TestTrickleDoesNotPreallocate(t *testing.T) {
	in := append([]byte{4, 0, 0, 1, byte(OpQuery), 0x0c, 0, 0, 0}, make([]byte, 100)...) // claims 192 MiB
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := NewReader(bytes.NewReader(in), 0).ReadFrame()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("allocated %d bytes for a 100-byte body", alloc)
	}
}
