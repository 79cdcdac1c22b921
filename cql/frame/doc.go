// Package frame is the CQL native protocol v4 wire codec: frame headers,
// compression, request decoding and response encoding for the server, and the
// mirror image (request encoding, response decoding) for tests and tooling.
// It does no networking; everything works on io.Reader and []byte.
//
// # Model
//
// A frame is a 9-byte Header followed by Header.Length body bytes
// (native_protocol_v4.spec §1–2). The body of a frame is, in order,
// [tracing id][warnings][custom payload]<message>, each prefix present only
// when its header flag is set; the whole body may be compressed (flag 0x01).
//
//   - Reading: ReadFrame / Reader.ReadFrame read one frame. A Reader also
//     decompresses with the connection's negotiated Compressor, so its frames
//     always carry plain bodies. DecodeRequest (server) and DecodeResponse
//     (client) then split off the prefixes and decode the message into the
//     structs of this package (Query, Execute, RowsResult, Error, ...).
//   - Writing: BeginFrame reserves a header, body appenders (the
//     AppendMessage methods, AppendRowsHeader/AppendCell for streaming rows)
//     append the message, and FinishFrame patches the length and optionally
//     compresses. AppendResponse and AppendRequest do all three for a whole
//     message.
//
// # Invariants and contracts
//
//   - Decoding outside bytes never panics. Every decode failure wraps
//     ErrMalformed and names what was malformed, e.g.
//     "frame: malformed: QUERY: read [long string]: need 12 bytes, have 3".
//     After an ErrMalformed from Reader.ReadFrame or a decoder, the connection
//     is still in sync (the whole body was consumed), so the server can answer
//     ERROR 0x000A with the request's stream id and carry on.
//   - *FrameTooLargeError, *NegativeLengthError and *UnsupportedVersionError
//     are returned together with the frame header (so the stream id is
//     known). After any of them, the server should answer and close the
//     connection: an oversized or negative-length body cannot be consumed
//     (the connection is out of sync), and Cassandra closes after a version
//     mismatch.
//   - Decoded []byte fields (values, ids, paging states, tokens, custom payload
//     values) alias the frame body; decoded strings are copies. Reader gives
//     every frame a freshly allocated body, so a decoded request may be handed
//     to another goroutine while the reader reads the next frame. The
//     free function ReadFrame reuses the caller's buffer instead, for callers
//     that consume each frame before reading the next.
//   - Encoders append to a caller-owned []byte and never retain it. Server-side
//     appenders do not fail: text longer than a [string] can hold (65535
//     bytes) is truncated so that the frame stays well formed. Client-side
//     encoders return an error instead, since a client must not send a
//     truncated query.
//   - Error codes: gocql panics on an error code it does not know, so
//     Error.AppendMessage sends any code outside the v4 table as Server error
//     (0x0000), keeping the original code in the message text.
//   - Compression: only the body is compressed. FinishFrame leaves bodies
//     shorter than MinCompressBytes, and bodies that do not shrink,
//     uncompressed; both drivers decide per frame by the flag. The server must
//     not compress the reply to STARTUP (the Python driver enables its
//     compressor only after READY) and passes a nil Compressor for it.
//     Decompressors refuse a claimed uncompressed length above their limit and
//     above what the compressed size can possibly expand to, so a tiny frame
//     cannot make the server allocate 256 MiB.
//   - Protocol v4 only. A request whose version byte is not 0x04 yields
//     *UnsupportedVersionError whose Error() is the exact message Cassandra
//     sends ("Invalid or unsupported protocol version (66); supported versions
//     are (4/v4)"); the Python driver downgrades only when it sees
//     "unsupported protocol version" in a Protocol error. The server answers
//     it on stream 0 with a v4 header, as Cassandra does: gocql takes only
//     an error on stream 0 as a version mismatch, and retries with the
//     version in its header.
//   - Duration columns are sent as the Custom type
//     "org.apache.cassandra.db.marshal.DurationType", as Cassandra does in v4
//     (id 0x0015 is a v5 addition); both drivers map the class back to
//     duration.
//
// Nothing here keeps state across calls except Reader (one per connection,
// used by one goroutine) and the package's pool of LZ4 compressor tables.
package frame
