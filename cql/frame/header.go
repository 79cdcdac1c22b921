package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Header is a frame header [V4 §2].
type Header struct {
	// Version is the whole version byte, direction bit included: 0x04 for
	// requests, 0x84 for responses.
	Version byte
	Flags   byte
	// Stream is the request's stream id, echoed by its response; EVENTs use -1.
	Stream int16
	Opcode Opcode
	// Length is the body length as on the wire (before decompression).
	Length int32
}

// Compressed, Tracing, HasCustomPayload and HasWarnings report header flags.
func (h Header) Compressed() bool       { return h.Flags&FlagCompression != 0 }
func (h Header) Tracing() bool          { return h.Flags&FlagTracing != 0 }
func (h Header) HasCustomPayload() bool { return h.Flags&FlagCustomPayload != 0 }
func (h Header) HasWarnings() bool      { return h.Flags&FlagWarning != 0 }

func (h Header) String() string {
	return fmt.Sprintf("[version=0x%02x flags=0x%02x stream=%d op=%s length=%d]",
		h.Version, h.Flags, h.Stream, h.Opcode, h.Length)
}

// AppendHeader appends the 9 header bytes of h.
func AppendHeader(dst []byte, h Header) []byte {
	dst = append(dst, h.Version, h.Flags)
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Stream))
	dst = append(dst, byte(h.Opcode))
	return binary.BigEndian.AppendUint32(dst, uint32(h.Length))
}

// ParseHeader parses a 9-byte v3+ header from b, without checking the version.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: header: need %d bytes, have %d", ErrMalformed, HeaderSize, len(b))
	}
	return Header{
		Version: b[0],
		Flags:   b[1],
		Stream:  int16(binary.BigEndian.Uint16(b[2:4])),
		Opcode:  Opcode(b[4]),
		Length:  int32(binary.BigEndian.Uint32(b[5:9])),
	}, nil
}

// UnsupportedVersionError reports a frame whose version byte is not the one
// this codec speaks. Error() is the message Cassandra sends in the Protocol
// error (0x000A) it answers with; the Python driver looks for "unsupported
// protocol version" in it before downgrading. Reply on stream 0 (not
// Stream: drivers take only an error on stream 0 as a version mismatch) with
// a v4 header, then close.
type UnsupportedVersionError struct {
	// Version is the version byte as received, direction bit included.
	Version byte
	Stream  int16
	Opcode  Opcode
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("Invalid or unsupported protocol version (%d); supported versions are (4/v4)", e.Version)
}

// FrameTooLargeError reports a frame whose body length is above the limit.
// The body was not consumed: answer a Protocol error on Stream and close.
type FrameTooLargeError struct {
	Stream int16
	Opcode Opcode
	Length int32
	Max    int
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("frame body of %d bytes exceeds the limit of %d bytes", e.Length, e.Max)
}

// NegativeLengthError reports a frame header whose body length (a signed
// [int]) is negative. Like FrameTooLargeError it is not ErrMalformed: where
// the body ends is unknown, so the connection is out of sync. Answer a
// Protocol error on Stream and close.
type NegativeLengthError struct {
	Stream int16
	Opcode Opcode
	Length int32
}

func (e *NegativeLengthError) Error() string {
	return fmt.Sprintf("Invalid frame: negative body length %d", e.Length)
}

// Frame is a header and its body.
type Frame struct {
	Header Header
	// Body is the frame body. For frames from ReadFrame it is as on the wire
	// (compressed if Header.Compressed()); Reader decompresses it and clears
	// the compression flag.
	Body []byte
}

// ReadFrame reads one request frame (version byte 0x04) from r into buf,
// which it grows as needed; the returned body aliases buf's storage when it
// fits, so the caller must be done with it before reusing buf. The body is
// returned as on the wire; see DecompressBody.
//
// Errors:
//   - io.EOF if r ended cleanly before the header; io.ErrUnexpectedEOF (wrapped)
//     if it ended inside a frame; other I/O errors as they come.
//   - *UnsupportedVersionError if the version byte is not 0x04. When the body
//     length is within [0, maxBodyBytes] the body has been skipped.
//   - *FrameTooLargeError if the body is longer than maxBodyBytes.
//   - *NegativeLengthError for a negative body length.
//
// With every error after the header was read, the returned Frame carries
// the header, so the caller knows the stream to answer on.
func ReadFrame(r io.Reader, maxBodyBytes int, buf []byte) (Frame, error) {
	return readFrameInto(r, maxBodyBytes, buf, VersionRequest)
}

// ReadResponseFrame is ReadFrame for the client side: it expects version
// byte 0x84.
func ReadResponseFrame(r io.Reader, maxBodyBytes int, buf []byte) (Frame, error) {
	return readFrameInto(r, maxBodyBytes, buf, VersionResponse)
}

func readFrameInto(r io.Reader, maxBodyBytes int, buf []byte, want byte) (Frame, error) {
	// The header is read into buf too (then overwritten by the body): a
	// local array would escape through io.Reader and cost an allocation.
	buf = slices.Grow(buf[:0], HeaderSize)
	h, err := readHeader(r, (*[HeaderSize]byte)(buf[:HeaderSize]), want, maxBodyBytes)
	if err != nil {
		return Frame{Header: h}, err
	}
	buf, err = readFrameBody(r, buf[:0], h)
	if err != nil {
		return Frame{Header: h}, err
	}
	return Frame{Header: h, Body: buf}, nil
}

// readFrameBody reads the body h announces, appending it to buf. Its error
// names the frame; an EOF inside the body is io.ErrUnexpectedEOF.
func readFrameBody(r io.Reader, buf []byte, h Header) ([]byte, error) {
	buf, err := readBody(r, buf, int(h.Length))
	if err != nil {
		return buf, fmt.Errorf("frame: read body of %s: %w", h, noEOF(err))
	}
	return buf, nil
}

// eagerBodyBytes is how much of a body is allocated before its bytes arrive.
// Beyond it the buffer grows as the bytes come in, so that a header claiming
// 256 MB followed by a trickle does not cost 256 MB of memory up front.
const eagerBodyBytes = 1 << 20

// readBody reads n bytes from r, appending them to buf.
func readBody(r io.Reader, buf []byte, n int) ([]byte, error) {
	for n > 0 {
		chunk := min(n, max(len(buf), eagerBodyBytes))
		start := len(buf)
		buf = slices.Grow(buf, chunk)[:start+chunk]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			return buf[:start], err
		}
		n -= chunk
	}
	return buf, nil
}

// noEOF turns an EOF inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readHeader reads and checks a header. On success h.Length is in
// [0, maxBodyBytes] and the body is next on r.
func readHeader(r io.Reader, hdr *[HeaderSize]byte, want byte, maxBodyBytes int) (Header, error) {
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return Header{}, io.EOF
		}
		return Header{}, fmt.Errorf("frame: read header: %w", noEOF(err))
	}
	h, _ := ParseHeader(hdr[:])
	if h.Version != want {
		return h, skipUnsupported(r, hdr, h, maxBodyBytes)
	}
	if h.Length < 0 {
		return h, &NegativeLengthError{Stream: h.Stream, Opcode: h.Opcode, Length: h.Length}
	}
	if int64(h.Length) > int64(maxBodyBytes) {
		return h, &FrameTooLargeError{Stream: h.Stream, Opcode: h.Opcode, Length: h.Length, Max: maxBodyBytes}
	}
	return h, nil
}

// skipUnsupported consumes the body of a frame of another protocol version
// when its length is sane, and returns the UnsupportedVersionError. Versions 1
// and 2 have an 8-byte header (one-byte stream), so their last header byte
// read was already the first body byte.
func skipUnsupported(r io.Reader, hdr *[HeaderSize]byte, h Header, maxBodyBytes int) error {
	length := int64(h.Length)
	if v := h.Version &^ directionBit; v == 1 || v == 2 {
		h.Stream = int16(int8(hdr[2]))
		h.Opcode = Opcode(hdr[3])
		length = int64(int32(binary.BigEndian.Uint32(hdr[4:8]))) - 1
	}
	if length > 0 && length <= int64(maxBodyBytes) {
		// An error here means the peer is gone; the version error is still
		// the thing to report, and the reply will simply fail to send.
		_, _ = io.CopyN(io.Discard, r, length)
	}
	return &UnsupportedVersionError{Version: h.Version, Stream: h.Stream, Opcode: h.Opcode}
}

// DecompressBody returns f with its body decompressed by c (appending to dst)
// and the compression flag cleared. A frame without the flag is returned as
// is. A compressed frame with a nil c, or a body c cannot decode, is
// ErrMalformed. An empty body with the flag set is taken as an empty body.
func DecompressBody(f Frame, c Compressor, dst []byte) (Frame, error) {
	if !f.Header.Compressed() {
		return f, nil
	}
	if c == nil {
		return f, fmt.Errorf("%w: %s: compressed frame, but no compression was negotiated", ErrMalformed, f.Header)
	}
	if len(f.Body) == 0 {
		f.Body = dst[:0]
	} else {
		body, err := c.Decode(dst[:0], f.Body)
		if err != nil {
			return f, fmt.Errorf("%s: %w", f.Header, err)
		}
		f.Body = body
	}
	f.Header.Flags &^= FlagCompression
	return f, nil
}

// Reader reads frames from one connection. It is owned by the connection's
// reading goroutine.
//
// Every frame it returns has a body of its own (allocated per frame; the
// buffer for compressed input is reused), so requests decoded from it may
// outlive the next ReadFrame call.
type Reader struct {
	r    io.Reader
	max  int
	want byte
	comp Compressor
	hdr  [HeaderSize]byte
	raw  []byte // compressed bodies, reused
}

// NewReader returns a Reader of request frames (the server side). Bodies,
// compressed or not, are limited to maxBodyBytes (<= 0 means
// DefaultMaxBodyBytes).
func NewReader(r io.Reader, maxBodyBytes int) *Reader {
	if maxBodyBytes <= 0 {
		maxBodyBytes = DefaultMaxBodyBytes
	}
	return &Reader{r: r, max: maxBodyBytes, want: VersionRequest}
}

// NewResponseReader returns a Reader of response frames (the client side).
func NewResponseReader(r io.Reader, maxBodyBytes int) *Reader {
	rd := NewReader(r, maxBodyBytes)
	rd.want = VersionResponse
	return rd
}

// SetCompressor sets the compressor negotiated by STARTUP; nil means none, and
// a compressed frame is then ErrMalformed.
func (r *Reader) SetCompressor(c Compressor) { r.comp = c }

// ReadFrame reads the next frame and decompresses its body. Errors are those
// of the ReadFrame function, plus ErrMalformed for a body that does not
// decompress or decompresses beyond the limit; the frame is then consumed.
func (r *Reader) ReadFrame() (Frame, error) {
	h, err := readHeader(r.r, &r.hdr, r.want, r.max)
	if err != nil {
		return Frame{Header: h}, err
	}
	if !h.Compressed() {
		var body []byte
		if h.Length <= eagerBodyBytes {
			body = make([]byte, 0, h.Length)
		}
		body, err := readFrameBody(r.r, body, h)
		if err != nil {
			return Frame{Header: h}, err
		}
		return Frame{Header: h, Body: body}, nil
	}
	r.raw, err = readFrameBody(r.r, r.raw[:0], h)
	if err != nil {
		return Frame{Header: h}, err
	}
	// Check the claimed size before decompressing, so that the limit bounds
	// the allocation and not just the result.
	if dl, ok := r.comp.(interface{ DecodedLen([]byte) (int, error) }); ok && len(r.raw) > 0 {
		if n, err := dl.DecodedLen(r.raw); err == nil && n > r.max {
			return Frame{Header: h}, r.tooLarge(h, n)
		}
	}
	f, err := DecompressBody(Frame{Header: h, Body: r.raw}, r.comp, nil)
	if err != nil {
		return Frame{Header: h}, err
	}
	if len(f.Body) > r.max {
		return Frame{Header: h}, r.tooLarge(h, len(f.Body))
	}
	return f, nil
}

// tooLarge is the error for the frame h whose body decompresses to n
// bytes, more than the limit.
func (r *Reader) tooLarge(h Header, n int) error {
	return fmt.Errorf("%w: %s: body decompresses to %d bytes, limit %d", ErrMalformed, h, n, r.max)
}
