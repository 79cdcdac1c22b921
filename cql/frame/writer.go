package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBodyTooLarge is returned by FinishFrame for a body above the protocol's
// 256 MB limit, which clients refuse. The frame has been removed from the
// buffer, so the caller can send an error in its place.
var ErrBodyTooLarge = errors.New("frame: body exceeds the 256 MB frame limit")

// maxSendBodyBytes is the limit FinishFrame enforces; a variable only so that
// tests need not build a 256 MB body.
var maxSendBodyBytes = DefaultMaxBodyBytes

// Envelope holds the optional prefixes of a frame body [V4 §4]:
// [tracing id][warnings][custom payload]. Tracing ids and warnings exist only
// in responses; a custom payload only on QUERY, PREPARE, EXECUTE, BATCH and
// their responses.
type Envelope struct {
	// TracingID, when non-nil, sets FlagTracing and is sent first.
	TracingID *[16]byte
	// Warnings, when non-empty, set FlagWarning.
	Warnings []string
	// CustomPayload, when non-nil, sets FlagCustomPayload.
	CustomPayload map[string][]byte
}

// FrameMark remembers where BeginFrame put a frame in a buffer.
type FrameMark struct {
	start int
}

// BeginFrame appends h with a zero length and the prefixes of env (nil for
// none), setting their flags. The compression, custom-payload and warning
// flags of h (and, in a response, the tracing flag) are ignored: they are
// derived from env and from FinishFrame. A zero h.Version means
// VersionResponse. Append the message, then call FinishFrame.
func BeginFrame(dst []byte, h Header, env *Envelope) ([]byte, FrameMark) {
	m := FrameMark{start: len(dst)}
	if h.Version == 0 {
		h.Version = VersionResponse
	}
	h.Flags &^= FlagCompression | FlagCustomPayload | FlagWarning
	if h.Version&directionBit != 0 {
		// In a response the tracing flag announces a tracing id in the
		// body; in a request it only asks for tracing, and is kept.
		h.Flags &^= FlagTracing
	}
	h.Length = 0
	if env != nil {
		if env.TracingID != nil {
			h.Flags |= FlagTracing
		}
		if len(env.Warnings) > 0 {
			h.Flags |= FlagWarning
		}
		if env.CustomPayload != nil {
			h.Flags |= FlagCustomPayload
		}
	}
	dst = AppendHeader(dst, h)
	if env != nil {
		if env.TracingID != nil {
			dst = append(dst, env.TracingID[:]...)
		}
		if len(env.Warnings) > 0 {
			dst = appendStringList(dst, env.Warnings)
		}
		if env.CustomPayload != nil {
			dst = appendBytesMap(dst, env.CustomPayload)
		}
	}
	return dst, m
}

// FinishFrame completes the frame begun at m: it compresses the body with c
// if c is non-nil, the body is at least MinCompressBytes long and compression
// makes it shorter (setting FlagCompression), then writes the body length.
// Pass a nil c for frames that must not be compressed (the replies to
// OPTIONS and STARTUP, which precede compression). On error the frame is
// removed: the result is dst[:start of frame].
func FinishFrame(dst []byte, m FrameMark, c Compressor) ([]byte, error) {
	bodyStart := m.start + HeaderSize
	if m.start < 0 || bodyStart > len(dst) {
		return dst, fmt.Errorf("frame: FinishFrame: mark %d outside a buffer of %d bytes", m.start, len(dst))
	}
	n := len(dst) - bodyStart
	if n > maxSendBodyBytes {
		return dst[:m.start], fmt.Errorf("%w: %d bytes", ErrBodyTooLarge, n)
	}
	if c != nil && n >= MinCompressBytes {
		end := len(dst)
		// Compress into the space after the body, then move the result over
		// the body: no scratch buffer needed.
		out, err := c.Encode(dst, dst[bodyStart:end])
		if err != nil {
			return dst[:m.start], fmt.Errorf("frame: compress body with %s: %w", c.Name(), err)
		}
		if clen := len(out) - end; clen < n {
			copy(out[bodyStart:], out[end:])
			dst = out[:bodyStart+clen]
			dst[m.start+1] |= FlagCompression
			n = clen
		} else {
			dst = out[:end]
		}
	}
	binary.BigEndian.PutUint32(dst[m.start+5:m.start+HeaderSize], uint32(n))
	return dst, nil
}

// AppendResponse appends a whole response frame: header (opcode from resp,
// version VersionResponse if h.Version is 0, stream and other flags from h),
// env's prefixes and resp's message, compressed as FinishFrame decides.
func AppendResponse(dst []byte, h Header, env *Envelope, c Compressor, resp Response) ([]byte, error) {
	h.Opcode = resp.Opcode()
	if h.Version == 0 {
		h.Version = VersionResponse
	}
	dst, m := BeginFrame(dst, h, env)
	dst = resp.AppendMessage(dst)
	return FinishFrame(dst, m, c)
}

// AppendRequest appends a whole request frame (the client side): header
// (opcode from req, version VersionRequest if h.Version is 0), the custom
// payload of Query, Prepare, Execute or Batch, and req's message, compressed
// as FinishFrame decides. Clients must not compress STARTUP or OPTIONS. On
// error nothing is appended.
func AppendRequest(dst []byte, h Header, c Compressor, req Request) ([]byte, error) {
	h.Opcode = req.Opcode()
	if h.Version == 0 {
		h.Version = VersionRequest
	}
	var env *Envelope
	if p := requestPayload(req); p != nil {
		var chk checker
		chk.shortCount("custom payload entries", len(p))
		for k, v := range p {
			chk.str("custom payload key", k)
			chk.long("custom payload value", len(v))
		}
		if chk.err != nil {
			return dst, chk.err
		}
		env = &Envelope{CustomPayload: p}
	}
	start := len(dst)
	dst, m := BeginFrame(dst, h, env)
	out, err := req.AppendMessage(dst)
	if err != nil {
		return dst[:start], fmt.Errorf("%s: %w", h.Opcode, err)
	}
	return FinishFrame(out, m, c)
}

func requestPayload(req Request) map[string][]byte {
	switch r := req.(type) {
	case *Query:
		return r.CustomPayload
	case *Prepare:
		return r.CustomPayload
	case *Execute:
		return r.CustomPayload
	case *Batch:
		return r.CustomPayload
	}
	return nil
}
