package exec

import (
	"bytes"
	"context"
	"encoding/binary"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/router"
	"github.com/cosmosd/cosmosd/storage"
)

// pagingState is where a paged query resumes. It is opaque to clients.
type pagingState struct {
	keyIndex int    // key mode: index of the key being read
	from     int64  // scan mode: first token not yet finished
	resume   []byte // last row key returned (exclusive resume point)
	partRows int    // rows returned in resume's partition
	emitted  int    // rows returned so far (LIMIT)
	offset   int    // virtual tables: rows already returned
}

func (s *pagingState) encode() []byte {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(s.keyIndex))
	b = binary.AppendVarint(b, s.from)
	b = binary.AppendUvarint(b, uint64(len(s.resume)))
	b = append(b, s.resume...)
	b = binary.AppendUvarint(b, uint64(s.partRows))
	b = binary.AppendUvarint(b, uint64(s.emitted))
	b = binary.AppendUvarint(b, uint64(s.offset))
	return b
}

func decodePagingState(b []byte) (*pagingState, error) {
	bad := Invalid("Invalid value for the paging state")
	if len(b) == 0 || b[0] != 1 {
		return nil, bad
	}
	b = b[1:]
	s := &pagingState{}
	u := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 0
		}
		b = b[n:]
		return v
	}
	// Counts are bounded before they become ints: a forged state must
	// not turn into a negative index.
	keyIndex := u()
	from, n := binary.Varint(b)
	if n <= 0 {
		return nil, bad
	}
	b = b[n:]
	s.from = from
	l := u()
	if uint64(len(b)) < l {
		return nil, bad
	}
	s.resume = append([]byte(nil), b[:l]...)
	b = b[l:]
	partRows, emitted, offset := u(), u(), u()
	if b == nil || keyIndex > 1<<24 || partRows > 1<<32 || emitted > 1<<40 || offset > 1<<32 {
		return nil, bad
	}
	s.keyIndex, s.partRows, s.emitted, s.offset = int(keyIndex), int(partRows), int(emitted), int(offset)
	return s, nil
}

// rowSource produces the rows of a plan in order, reading from partitions
// page by page and maintaining the paging state.
type rowSource struct {
	e   *Executor
	p   *selectPlan
	ps  *pagingState
	ctx context.Context
	req Request

	cur cursor
	// lastEmitted is the key of the last row returned to the client and
	// lastEmittedHits the rows returned in its partition.
	lastEmitted     []byte
	lastEmittedHits int

	buf      []*kvpb.Row
	done     bool
	bytes    int64
	ru       float64 // request units charged by the replicas
	curPart  []byte  // prefix of the partition being read
	static   *storage.Row
	partHits int    // rows emitted in curPart
	lastKey  []byte // key of the last row handed out
	// pending is a partition that so far has only a static row: it becomes
	// a row of its own unless a clustering row of it follows.
	pending *qrow
	virtual []*qrow
	vloaded bool
}

// emitted records that a row was returned to the client.
func (s *rowSource) emitted(r *qrow) {
	s.ps.emitted++
	s.partHits++
	s.lastEmitted, s.lastEmittedHits = s.lastKey, s.partHits
}

func (s *rowSource) charge() float64 { return s.ru }

// exhausted reports that no row is left.
func (s *rowSource) exhausted() bool { return s.done && len(s.buf) == 0 && s.pending == nil }

// next returns the next row, or nil when there are no more.
func (s *rowSource) next(want int) (*qrow, error) {
	if s.p.vt != nil {
		return s.nextVirtual()
	}
	for {
		if len(s.buf) > 0 {
			kv := s.buf[0]
			prefix := partitionPrefixOf(kv.GetKey())
			if s.pending != nil && !bytes.Equal(prefix, s.curPart) {
				return s.takePending(), nil
			}
			s.buf = s.buf[1:]
			if s.p.ppl > 0 && bytes.Equal(prefix, s.curPart) && s.partHits >= s.p.ppl {
				continue
			}
			r, err := s.decode(kv, prefix)
			if err != nil {
				return nil, err
			}
			if r != nil {
				return r, nil
			}
			continue
		}
		if s.done {
			if s.pending != nil {
				return s.takePending(), nil
			}
			return nil, nil
		}
		if err := s.fetch(want); err != nil {
			return nil, err
		}
	}
}

func (s *rowSource) takePending() *qrow {
	r := s.pending
	s.pending = nil
	s.lastKey = append([]byte(nil), s.curPart...)
	return r
}

// decode turns a stored row into a qrow, tracking partitions and statics;
// it returns nil for a static row.
func (s *rowSource) decode(kv *kvpb.Row, prefix []byte) (*qrow, error) {
	k, err := storage.DecodeRowKey(kv.GetKey())
	if err != nil {
		return nil, ServerError("decode row key: %v", err)
	}
	samePart := bytes.Equal(prefix, s.curPart)
	if !samePart {
		s.curPart = append([]byte(nil), prefix...)
		s.static = nil
		s.partHits = 0
		if len(s.ps.resume) > 0 && bytes.Equal(partitionPrefixOf(s.ps.resume), prefix) {
			s.partHits = s.ps.partRows
		}
	}
	row, err := storage.DecodeRow(kv.GetValue())
	if err != nil {
		return nil, ServerError("decode row: %v", err)
	}
	pk, err := decodePartitionKey(s.p.t, k.PK)
	if err != nil {
		return nil, ServerError("decode partition key: %v", err)
	}
	at := s.e.cfg.Now()
	now := at.Unix()
	hasCK := len(s.p.t.ClusteringColumns()) > 0
	if hasCK && len(k.CK) == 0 {
		s.static = &row
		// A partition resumed after one of its clustering rows (by this
		// page's reads or by the paging state) already produced rows:
		// the static row the read sends again only decorates what
		// follows.
		resumedInside := samePart || (len(s.ps.resume) > len(prefix) && bytes.Equal(partitionPrefixOf(s.ps.resume), prefix))
		if s.p.staticRows && !resumedInside && s.partHits == 0 {
			s.pending = &qrow{token: k.Token, pk: pk, static: &row, now: now, at: at, size: len(kv.GetKey()) + len(kv.GetValue())}
		}
		return nil, nil
	}
	s.pending = nil
	q := &qrow{token: k.Token, pk: pk, row: &row, static: s.static, now: now, at: at, size: len(kv.GetKey()) + len(kv.GetValue())}
	if hasCK {
		if q.ck, err = decodeClustering(s.p.t, k.CK); err != nil {
			return nil, ServerError("%v", err)
		}
	}
	s.lastKey = append([]byte(nil), kv.GetKey()...)
	return q, nil
}

func partitionPrefixOf(key []byte) []byte {
	if len(key) < 21 {
		return key
	}
	n := binary.BigEndian.Uint32(key[17:21])
	if uint64(len(key)-21) < uint64(n) {
		return key
	}
	return key[:21+n]
}

// cursor is where the next read of a rowSource starts.
type cursor struct {
	keyIndex int
	from     int64
	key      []byte
	partRows int
}

// fetch reads the next chunk from the cluster and advances the cursor.
func (s *rowSource) fetch(want int) error {
	p, c := s.p, &s.cur
	limit := want
	if limit <= 0 || len(p.filter) > 0 || len(p.tuples) > 0 {
		limit = internalChunk
	}
	ppl := p.ppl
	if len(p.filter) > 0 || len(p.tuples) > 0 {
		ppl = 0 // applied after filtering
	}
	if p.distinct {
		ppl = 1
	}
	req := &kvpb.ReadRequest{
		Linearizable: p.linearizable, Slices: p.slices, Reverse: p.reverse, Limit: uint32(limit),
		PerPartitionLimit: uint32(ppl), Clustering: len(p.t.ClusteringColumns()) > 0, Static: p.t.HasStatic(),
		NowMicros: s.e.cfg.Now().UnixMicro(), ResumeAfter: c.key, ResumePartitionRows: uint32(c.partRows),
	}
	if !p.scan {
		if c.keyIndex >= len(p.keys) {
			s.done = true
			return nil
		}
		first := p.keys[c.keyIndex]
		d := s.e.cfg.Meta.State().Ring(p.t.ID).Lookup(first.token)
		if d == nil {
			return ServerError("table %s has no partition for token %d", p.t.QualifiedName(), first.token)
		}
		end := c.keyIndex
		for end < len(p.keys) && p.keys[end].token <= d.GetEnd() {
			req.Keys = append(req.Keys, &kvpb.PartitionKey{Token: p.keys[end].token, Pk: p.keys[end].key})
			end++
		}
		resp, err := s.e.cfg.Router.Read(s.ctx, router.Target{Table: p.t.ID, Token: first.token}, req)
		if err != nil {
			return kvError(err, s.req.Consistency, false)
		}
		s.accept(resp)
		if !resp.GetMore() {
			c.keyIndex, c.key, c.partRows = end, nil, 0
			s.done = end >= len(p.keys)
			return nil
		}
		last := resp.GetRows()[len(resp.GetRows())-1].GetKey()
		c.key, c.partRows = last, int(resp.GetLastPartitionRows())
		c.keyIndex = s.keyIndexOf(last, c.keyIndex)
		return nil
	}
	if p.lo > p.hi || c.from > p.hi {
		s.done = true
		return nil
	}
	d := s.e.cfg.Meta.State().Ring(p.t.ID).Lookup(c.from)
	if d == nil {
		return ServerError("table %s has no partition for token %d", p.t.QualifiedName(), c.from)
	}
	req.Scan, req.ScanStart, req.ScanEnd = true, max(c.from, d.GetStart()), min(p.hi, d.GetEnd())
	resp, err := s.e.cfg.Router.Read(s.ctx, router.Target{Table: p.t.ID, Token: req.ScanStart}, req)
	if err != nil {
		return kvError(err, s.req.Consistency, false)
	}
	s.accept(resp)
	if resp.GetMore() {
		last := resp.GetRows()[len(resp.GetRows())-1].GetKey()
		k, err := storage.DecodeRowKey(last)
		if err != nil {
			return ServerError("decode row key: %v", err)
		}
		c.from, c.key, c.partRows = k.Token, last, int(resp.GetLastPartitionRows())
		return nil
	}
	c.key, c.partRows = nil, 0
	if req.ScanEnd >= p.hi {
		s.done = true
	} else {
		c.from = req.ScanEnd + 1
	}
	return nil
}

// keyIndexOf finds the index of the key whose partition holds row key k.
func (s *rowSource) keyIndexOf(k []byte, from int) int {
	prefix := partitionPrefixOf(k)
	for i := from; i < len(s.p.keys); i++ {
		if bytes.Equal(storage.PartitionRowsSpan(s.p.t.ID, s.p.keys[i].token, s.p.keys[i].key).Start, prefix) {
			return i
		}
	}
	return from
}

// pagingState returns where the next page starts: right after the last row
// handed to the client.
func (s *rowSource) pagingState() *pagingState {
	ps := *s.ps
	ps.resume = s.lastEmitted
	ps.partRows = s.lastEmittedHits
	if s.p.vt != nil || len(s.lastEmitted) == 0 {
		return &ps
	}
	if s.p.scan {
		if k, err := storage.DecodeRowKey(s.lastEmitted); err == nil {
			ps.from = k.Token
		}
	} else {
		ps.keyIndex = s.keyIndexOf(s.lastEmitted, s.ps.keyIndex)
	}
	return &ps
}

// accept takes a response's rows into the buffer.
func (s *rowSource) accept(resp *kvpb.ReadResponse) {
	s.buf = append(s.buf, resp.GetRows()...)
	s.bytes += resp.GetBytesRead()
	s.ru += resp.GetRequestUnits()
}

// nextVirtual serves rows of a virtual table.
func (s *rowSource) nextVirtual() (*qrow, error) {
	if !s.vloaded {
		rows, err := s.p.vt.rows(s.e, s.p)
		if err != nil {
			return nil, err
		}
		s.virtual = rows
		if s.ps.offset < len(rows) {
			s.virtual = rows[s.ps.offset:]
		} else {
			s.virtual = nil
		}
		s.vloaded = true
	}
	if len(s.virtual) == 0 {
		s.done = true
		return nil, nil
	}
	r := s.virtual[0]
	r.at = s.e.cfg.Now()
	s.virtual = s.virtual[1:]
	s.ps.offset++
	if len(s.virtual) == 0 {
		s.done = true
	}
	return r, nil
}
