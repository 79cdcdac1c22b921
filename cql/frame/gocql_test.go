package frame

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosmosd/cosmosd/cqltype"
	"github.com/gocql/gocql"
)

// fakeServer is a minimal CQL server built on this package, just enough for
// gocql to connect and run queries. It checks the codec against a real
// driver's parser and serializer.
type fakeServer struct {
	t  *testing.T
	ln net.Listener
	wg sync.WaitGroup

	mu       sync.Mutex
	conns    []net.Conn
	prepared map[string]string // id → query
	batches  []*Batch
	// unprepareOnce makes the first EXECUTE of each id fail with Unprepared.
	unprepared map[string]bool

	// wire holds every byte each connection received, to count the
	// compressed frames (Reader clears the flag once it decompressed).
	wire          []*lockedBuffer
	compressedOut atomic.Int64
}

type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

// compressedIn counts the compressed request frames received so far.
func (s *fakeServer) compressedIn() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.wire {
		w.mu.Lock()
		r := bytes.NewReader(append([]byte(nil), w.b...))
		w.mu.Unlock()
		for {
			f, err := ReadFrame(r, DefaultMaxBodyBytes, nil)
			if err != nil {
				break
			}
			if f.Header.Compressed() {
				n++
			}
		}
	}
	return n
}

func startFakeServer(t *testing.T) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, prepared: map[string]string{}, unprepared: map[string]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.serve(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) serve(c net.Conn) {
	tap := &lockedBuffer{}
	s.mu.Lock()
	s.wire = append(s.wire, tap)
	s.mu.Unlock()
	rd := NewReader(bufio.NewReader(io.TeeReader(c, tap)), 0)
	var comp Compressor // set once READY is sent
	var out []byte
	for {
		f, err := rd.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "reset") {
				s.t.Errorf("server read: %v", err)
			}
			return
		}
		if f.Header.Compressed() {
			s.t.Errorf("Reader returned a compressed frame")
		}
		req, err := DecodeRequest(f)
		var resp Response
		replyComp := comp
		if err != nil {
			s.t.Errorf("decode %s: %v", f.Header, err)
			resp = &Error{Code: CodeProtocolError, Message: err.Error()}
		} else {
			switch r := req.(type) {
			case *Startup:
				if name, ok := r.Options[StartupCompression]; ok {
					c, ok := CompressorFor(name, 0)
					if !ok {
						s.t.Errorf("unknown compression %q", name)
					}
					rd.SetCompressor(c)
					comp = c
				}
				replyComp = nil // never compress the reply to STARTUP
				resp = &Ready{}
			default:
				resp = s.handle(req)
			}
		}
		if _, isOpts := req.(*Options); isOpts {
			replyComp = nil
		}
		out, err = AppendResponse(out[:0], Header{Stream: f.Header.Stream}, nil, replyComp, resp)
		if err != nil {
			s.t.Errorf("encode: %v", err)
			return
		}
		if out[1]&FlagCompression != 0 {
			s.compressedOut.Add(1)
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func cqlInt(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }

func cqlList(elems ...[]byte) []byte {
	b := cqlInt(int32(len(elems)))
	for _, e := range elems {
		b = appendBytes(b, e)
	}
	return b
}

var (
	uuidT     = cqltype.Scalar(cqltype.UUID)
	localCols = []ColumnSpec{
		{Name: "key", Type: textT}, {Name: "data_center", Type: textT}, {Name: "rack", Type: textT},
		{Name: "host_id", Type: uuidT}, {Name: "release_version", Type: textT}, {Name: "cluster_name", Type: textT},
		{Name: "partitioner", Type: textT}, {Name: "tokens", Type: cqltype.SetOf(textT)},
	}
	tabCols = []ColumnSpec{
		{Name: "v", Type: intT}, {Name: "t", Type: textT}, {Name: "l", Type: cqltype.ListOf(intT)},
		{Name: "m", Type: cqltype.MapOf(textT, intT)}, {Name: "n", Type: intT},
	}
)

func withTable(ks, table string, cols []ColumnSpec) RowsMetadata {
	return RowsMetadata{GlobalTableSpec: true, Keyspace: ks, Table: table, Columns: cols}
}

// rows answers a SELECT; paging splits "paged" results into pages of 10
// rows of 25, the paging state being the next row index.
func (s *fakeServer) rows(query string, p QueryParams) Response {
	switch {
	case strings.Contains(query, "system.local"):
		hostID := sha256.Sum256([]byte("host"))
		row := [][]byte{[]byte("local"), []byte("dc1"), []byte("rack1"), hostID[:16], []byte("4.0.0"),
			[]byte("test"), []byte("org.apache.cassandra.dht.Murmur3Partitioner"), cqlList([]byte("0"))}
		return &RowsResult{Metadata: withTable("system", "local", localCols), Rows: [][][]byte{row}}
	case strings.Contains(query, "system_schema"):
		return &RowsResult{Metadata: withTable("system_schema", "keyspaces", []ColumnSpec{{Name: "keyspace_name", Type: textT}})}
	case strings.Contains(query, "unavailable"):
		return &Error{Code: CodeUnavailable, Message: "not enough replicas", Consistency: p.Consistency, Required: 3, Alive: 1}
	case strings.Contains(query, "paged"):
		start := 0
		if p.PagingState != nil {
			start = int(binary.BigEndian.Uint32(p.PagingState))
		}
		meta := withTable("ks", "tab", tabCols[:1])
		var rows [][][]byte
		for i := start; i < 25 && i < start+int(p.PageSize); i++ {
			rows = append(rows, [][]byte{cqlInt(int32(i))})
		}
		if next := start + len(rows); next < 25 {
			meta.PagingState = cqlInt(int32(next))
		}
		return &RowsResult{Metadata: meta, Rows: rows}
	}
	m := []byte{0, 0, 0, 1}
	m = appendBytes(m, []byte("k"))
	m = appendBytes(m, cqlInt(7))
	var rows [][][]byte
	for i := range 200 { // big enough to be compressed
		rows = append(rows, [][]byte{cqlInt(int32(i)), []byte(strings.Repeat("x", i%50)), cqlList(cqlInt(1), cqlInt(2)), m, nil})
	}
	return &RowsResult{Metadata: withTable("ks", "tab", tabCols), Rows: rows}
}

func (s *fakeServer) handle(req Request) Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r := req.(type) {
	case *Options:
		return &Supported{Options: map[string][]string{
			"CQL_VERSION": {"3.4.5"}, "COMPRESSION": SupportedCompressions(), "PROTOCOL_VERSIONS": {"4/v4"}}}
	case *Register:
		return &Ready{}
	case *Query:
		return s.rows(r.Query, r.Params)
	case *Prepare:
		id := sha256.Sum256([]byte(r.Query))
		s.prepared[string(id[:16])] = r.Query
		var binds []ColumnSpec
		for i := range strings.Count(r.Query, "?") {
			binds = append(binds, ColumnSpec{Keyspace: "ks", Table: "tab", Name: fmt.Sprintf("b%d", i), Type: intT})
		}
		res := RowsMetadata{NoMetadata: true}
		if rr, ok := s.rows(r.Query, QueryParams{PageSize: 10}).(*RowsResult); ok && strings.HasPrefix(r.Query, "SELECT") {
			res = rr.Metadata
			res.PagingState = nil
		}
		return &PreparedResult{ID: id[:16], Metadata: PreparedMetadata{GlobalTableSpec: true, Keyspace: "ks", Table: "tab",
			Columns: binds, PKIndices: []uint16{0}}, ResultMetadata: res}
	case *Execute:
		q, ok := s.prepared[string(r.ID)]
		if !ok {
			return &Error{Code: CodeUnprepared, Message: "unknown id", UnpreparedID: r.ID}
		}
		if strings.Contains(q, "reprepare") && !s.unprepared[string(r.ID)] {
			s.unprepared[string(r.ID)] = true
			delete(s.prepared, string(r.ID))
			return &Error{Code: CodeUnprepared, Message: "evicted", UnpreparedID: r.ID}
		}
		if strings.HasPrefix(q, "INSERT") {
			if len(r.Params.Values) != 2 || string(r.Params.Values[0].Bytes) != string(cqlInt(5)) {
				return &Error{Code: CodeInvalid, Message: fmt.Sprintf("bad values %v", r.Params.Values)}
			}
			return &VoidResult{}
		}
		return s.rows(q, r.Params)
	case *Batch:
		s.batches = append(s.batches, r)
		return &VoidResult{}
	}
	return &Error{Code: CodeProtocolError, Message: fmt.Sprintf("unexpected %s", req.Opcode())}
}

// TestGocqlInterop runs gocql against the fake server, with snappy
// compression (gocql's lz4 lives in a module we do not depend on).
func TestGocqlInterop(t *testing.T) {
	srv := startFakeServer(t)
	addr := srv.ln.Addr().(*net.TCPAddr)
	cluster := gocql.NewCluster(addr.IP.String())
	cluster.Port = addr.Port
	cluster.ProtoVersion = 4
	cluster.DisableInitialHostLookup = true
	cluster.Compressor = gocql.SnappyCompressor{}
	cluster.Timeout = 10 * time.Second
	cluster.ConnectTimeout = 10 * time.Second
	cluster.NumConns = 1
	cluster.Logger = discardLogger{}
	session, err := cluster.CreateSession()
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	defer session.Close()

	t.Run("select", func(t *testing.T) {
		iter := session.Query("SELECT v, t, l, m, n FROM ks.tab WHERE k = ?", 1).Iter()
		var (
			v, n int
			s    string
			l    []int
			m    map[string]int
			rows int
		)
		for iter.Scan(&v, &s, &l, &m, &n) {
			if v != rows || s != strings.Repeat("x", rows%50) || len(l) != 2 || l[1] != 2 || m["k"] != 7 || n != 0 {
				t.Fatalf("row %d: %v %q %v %v %v", rows, v, s, l, m, n)
			}
			rows++
		}
		if err := iter.Close(); err != nil {
			t.Fatal(err)
		}
		if rows != 200 {
			t.Fatalf("%d rows", rows)
		}
	})
	t.Run("paging", func(t *testing.T) {
		iter := session.Query("SELECT v FROM ks.tab WHERE paged = ?", 1).PageSize(10).Iter()
		var v, count int
		for iter.Scan(&v) {
			if v != count {
				t.Fatalf("row %d has v=%d", count, v)
			}
			count++
		}
		if err := iter.Close(); err != nil || count != 25 {
			t.Fatalf("%d rows, err %v", count, err)
		}
	})
	t.Run("insert-values", func(t *testing.T) {
		if err := session.Query("INSERT INTO ks.tab (k, v) VALUES (?, ?)", 5, nil).Exec(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unavailable", func(t *testing.T) {
		err := session.Query("SELECT unavailable FROM ks.tab").Consistency(gocql.Quorum).Exec()
		var ue *gocql.RequestErrUnavailable
		if !errors.As(err, &ue) || ue.Required != 3 || ue.Alive != 1 || ue.Consistency != gocql.Quorum {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("reprepare", func(t *testing.T) {
		var v int
		if err := session.Query("SELECT v FROM ks.tab WHERE reprepare = ? AND paged = 1", 1).PageSize(5).Scan(&v); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("batch", func(t *testing.T) {
		b := session.NewBatch(gocql.UnloggedBatch)
		b.Query("UPDATE ks.tab SET v = 1 WHERE k = 1")
		b.Query("INSERT INTO ks.tab (k, v) VALUES (?, ?)", 5, 6)
		if err := session.ExecuteBatch(b); err != nil {
			t.Fatal(err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.batches) != 1 || srv.batches[0].Type != BatchUnlogged || len(srv.batches[0].Statements) != 2 {
			t.Fatalf("server saw %+v", srv.batches)
		}
		st := srv.batches[0].Statements
		if st[0].Prepared || !st[1].Prepared || len(st[1].Values) != 2 || string(st[1].Values[1].Bytes) != string(cqlInt(6)) {
			t.Fatalf("statements %+v", st)
		}
	})
	if srv.compressedOut.Load() == 0 {
		t.Fatal("no response was compressed")
	}
	t.Logf("compressed frames: %d in, %d out", srv.compressedIn(), srv.compressedOut.Load())
	if srv.compressedIn() == 0 {
		t.Fatal("gocql sent no compressed request")
	}
}

type discardLogger struct{}

func (discardLogger) Print(...any)          {}
func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}
