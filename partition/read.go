package partition

import (
	"bytes"
	"fmt"
	"math"

	kvpb "github.com/cosmosd/cosmosd/proto/kv"
	"github.com/cosmosd/cosmosd/storage"
)

// DefaultMaxReadBytes bounds one read response when the request sets no
// limit, so a page never holds more than a few megabytes.
const DefaultMaxReadBytes = 4 << 20

// peekBudget bounds how many entries a read inspects after reaching its
// limit to find out whether more live rows follow; past it, it reports more.
const peekBudget = 256

// Read serves req from r, which must reflect the state described by d.
// It returns only live rows, resolved at the request's time.
func Read(r storage.Reader, d *kvpb.Descriptor, req *kvpb.ReadRequest) (*kvpb.ReadResponse, error) {
	if req.GetTableId() != d.GetTableId() {
		return nil, rangeMismatch(d, 0)
	}
	for _, k := range req.GetKeys() {
		if !inRange(d, k.GetToken()) {
			return nil, rangeMismatch(d, k.GetToken())
		}
	}
	if req.GetScan() && (!HasRange(d) || req.GetScanStart() < d.GetStart() || req.GetScanEnd() > d.GetEnd() || req.GetScanStart() > req.GetScanEnd()) {
		e := Errorf(kvpb.Error_RANGE_MISMATCH, "partition %d holds tokens [%d, %d], scan asks [%d, %d]",
			d.GetId(), d.GetStart(), d.GetEnd(), req.GetScanStart(), req.GetScanEnd())
		e.PB.Current = d
		return nil, e
	}
	maxBytes := req.GetMaxBytes()
	if maxBytes == 0 {
		maxBytes = DefaultMaxReadBytes
	}
	// The response is built in memory and sent in one message: its size
	// is bounded whatever the request asks (a response may still exceed
	// the bound by the one row that crosses it).
	maxBytes = min(maxBytes, MaxReadBytesLimit)
	rd := &reader{
		r: r, req: req, table: d.GetTableId(), now: floorDiv(req.GetNowMicros(), 1_000_000),
		limit: req.GetLimit(), ppl: req.GetPerPartitionLimit(), maxBytes: maxBytes,
		resp: &kvpb.ReadResponse{},
	}
	var err error
	if req.GetScan() {
		err = rd.scan()
	} else {
		err = rd.keys()
	}
	if err != nil {
		return nil, err
	}
	rd.resp.LastPartitionRows = rd.partRows
	return rd.resp, nil
}

type reader struct {
	r        storage.Reader
	req      *kvpb.ReadRequest
	table    uint64
	now      int64
	limit    uint32
	ppl      uint32
	maxBytes uint64

	resp     *kvpb.ReadResponse
	rows     uint32 // counted rows returned
	bytes    uint64
	partRows uint32 // counted rows returned in the current partition
	// peeking: the limit was reached; the next live row only decides more.
	peeking bool
	peeked  int
}

// visit outcomes.
const (
	visitNext          = iota // continue
	visitSkipPartition        // per-partition limit reached
	visitStop                 // response complete
)

// visit considers one stored row. counted reports whether it counts toward
// limits (static rows do not).
func (rd *reader) visit(key, value []byte, counted bool) (int, error) {
	rd.resp.RowsScanned++
	rd.resp.BytesRead += int64(len(key) + len(value))
	if rd.peeking {
		rd.peeked++
		if rd.peeked > peekBudget {
			rd.resp.More = true
			return visitStop, nil
		}
	}
	row, err := storage.DecodeRow(value)
	if err != nil {
		return 0, err
	}
	live, ok := row.Resolve(rd.now, storage.NoTimestamp)
	if !ok {
		return visitNext, nil
	}
	if rd.peeking {
		rd.resp.More = true
		return visitStop, nil
	}
	v := storage.AppendRow(nil, &live)
	rd.resp.Rows = append(rd.resp.Rows, &kvpb.Row{Key: append([]byte(nil), key...), Value: v})
	rd.bytes += uint64(len(key) + len(v))
	if counted {
		rd.rows++
		rd.partRows++
	}
	if rd.bytes >= rd.maxBytes {
		rd.resp.More = true
		return visitStop, nil
	}
	if rd.limit > 0 && rd.rows >= rd.limit {
		rd.peeking = true
		if rd.ppl > 0 && rd.partRows >= rd.ppl {
			return visitSkipPartition, nil
		}
		return visitNext, nil
	}
	if counted && rd.ppl > 0 && rd.partRows >= rd.ppl {
		return visitSkipPartition, nil
	}
	return visitNext, nil
}

// resumeStatic sends again the static row of a partition a read resumes
// inside (after one of its clustering rows), so the coordinator has it for
// the rows that follow. It never ends the response: the resume point of
// the next read must stay a clustering row.
func (rd *reader) resumeStatic(prefix []byte) error {
	v, ok, err := rd.r.Get(prefix)
	if err != nil || !ok {
		return err
	}
	maxBytes := rd.maxBytes
	rd.maxBytes = math.MaxUint64
	_, err = rd.visit(prefix, v, false)
	rd.maxBytes = maxBytes
	return err
}

// badResume refuses a resume point that is not a row key of the request's
// rows. Its bytes come from the request (a coordinator echoes the last key
// of the previous page, and a client's paging state carries it), so they
// are outside input.
func badResume(resume []byte, why string) *Error {
	return Errorf(kvpb.Error_INVALID, "resume_after %x: %s", resume, why)
}

// keys serves single-partition reads.
func (rd *reader) keys() error {
	resume := rd.req.GetResumeAfter()
	var resumePrefix []byte
	if len(resume) > 0 {
		var err error
		if resumePrefix, err = storage.RowPartitionPrefix(resume); err != nil {
			return badResume(resume, "not a row key")
		}
	}
	skipping := len(resume) > 0
	for _, k := range rd.req.GetKeys() {
		prefix := storage.PartitionRowsSpan(rd.table, k.GetToken(), k.GetPk()).Start
		inResume := false
		if skipping {
			if !bytes.Equal(prefix, resumePrefix) {
				continue
			}
			skipping, inResume = false, true
		}
		rd.partRows = 0
		if inResume {
			rd.partRows = rd.req.GetResumePartitionRows()
			if rd.ppl > 0 && rd.partRows >= rd.ppl {
				continue
			}
		}
		out, err := rd.partition(prefix, inResume, resume)
		if err != nil || out == visitStop {
			return err
		}
	}
	return nil
}

// partition reads one logical partition, resuming after resume when
// inResume is set.
func (rd *reader) partition(prefix []byte, inResume bool, resume []byte) (int, error) {
	if !rd.req.GetClustering() {
		if inResume {
			return visitNext, nil // its only row was returned
		}
		v, ok, err := rd.r.Get(prefix)
		if err != nil || !ok {
			return visitNext, err
		}
		return rd.visit(prefix, v, true)
	}
	if rd.req.GetStatic() && !inResume {
		v, ok, err := rd.r.Get(prefix)
		if err != nil {
			return 0, err
		}
		if ok {
			out, err := rd.visit(prefix, v, false)
			if err != nil || out == visitStop {
				return out, err
			}
		}
	} else if rd.req.GetStatic() && len(resume) > len(prefix) {
		if err := rd.resumeStatic(prefix); err != nil {
			return 0, err
		}
	}
	slices := rd.req.GetSlices()
	if len(slices) == 0 {
		slices = []*kvpb.Slice{{}}
	}
	reverse := rd.req.GetReverse()
	for i := range slices {
		s := slices[i]
		if reverse {
			s = slices[len(slices)-1-i]
		}
		span := SliceSpan(prefix, s.GetStart(), s.GetEnd())
		if inResume && len(resume) > len(prefix) {
			if reverse {
				if bytes.Compare(resume, span.End) < 0 {
					span.End = resume
				}
			} else if after := append(append([]byte(nil), resume...), 0x00); bytes.Compare(after, span.Start) > 0 {
				span.Start = after
			}
		}
		if bytes.Compare(span.Start, span.End) >= 0 {
			continue
		}
		out, err := rd.iterate(span, reverse)
		if err != nil || out != visitNext {
			return out, err
		}
	}
	return visitNext, nil
}

// iterate visits the rows of span of one partition.
func (rd *reader) iterate(span storage.Span, reverse bool) (int, error) {
	it, err := rd.r.NewIter(span)
	if err != nil {
		return 0, err
	}
	defer it.Close()
	valid := it.First()
	if reverse {
		valid = it.Last()
	}
	for ; valid; valid = step(it, reverse) {
		out, err := rd.visit(it.Key(), it.Value(), true)
		if err != nil || out != visitNext {
			return out, err
		}
	}
	return visitNext, it.Error()
}

type stepper interface {
	Next() bool
	Prev() bool
}

func step(it stepper, reverse bool) bool {
	if reverse {
		return it.Prev()
	}
	return it.Next()
}

// scan serves a token-range scan in token order.
func (rd *reader) scan() error {
	span := storage.RowsSpan(rd.table, rd.req.GetScanStart(), rd.req.GetScanEnd())
	resume := rd.req.GetResumeAfter()
	var cur []byte // current partition prefix
	if len(resume) > 0 {
		// A resume point outside the scan's rows would make the read
		// send its partition's static row (resumeStatic): a row of
		// another range or table.
		if !span.Contains(resume) {
			return badResume(resume, fmt.Sprintf("outside the scan of tokens [%d, %d] of table %d", rd.req.GetScanStart(), rd.req.GetScanEnd(), rd.table))
		}
		prefix, err := storage.RowPartitionPrefix(resume)
		if err != nil {
			return badResume(resume, "not a row key")
		}
		if after := append(append([]byte(nil), resume...), 0x00); bytes.Compare(after, span.Start) > 0 {
			span.Start = after
		}
		cur = append([]byte(nil), prefix...)
		rd.partRows = rd.req.GetResumePartitionRows()
		if rd.ppl > 0 && rd.partRows >= rd.ppl {
			if end := storage.PrefixEnd(cur); bytes.Compare(end, span.Start) > 0 {
				span.Start = end
			}
		}
	}
	if bytes.Compare(span.Start, span.End) >= 0 {
		return nil
	}
	if len(resume) > len(cur) && rd.req.GetStatic() && rd.req.GetClustering() && !(rd.ppl > 0 && rd.partRows >= rd.ppl) {
		if err := rd.resumeStatic(cur); err != nil {
			return err
		}
	}
	it, err := rd.r.NewIter(span)
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; {
		key := it.Key()
		prefix, err := storage.RowPartitionPrefix(key)
		if err != nil {
			return fmt.Errorf("partition: scan of table %d: %w", rd.table, err)
		}
		if !bytes.Equal(prefix, cur) {
			cur = append(cur[:0], prefix...)
			rd.partRows = 0
		}
		static := len(key) == len(prefix)
		if static && rd.req.GetClustering() && !rd.req.GetStatic() {
			valid = it.Next()
			continue
		}
		out, err := rd.visit(key, it.Value(), !static || !rd.req.GetClustering())
		if err != nil {
			return err
		}
		switch out {
		case visitStop:
			return nil
		case visitSkipPartition:
			valid = it.SeekGE(storage.PrefixEnd(prefix))
		default:
			valid = it.Next()
		}
	}
	return it.Error()
}
