package frame

import (
	"fmt"
)

// This file is the client side of requests: encoders, used by tests, fuzz
// seeds and our own tooling. They check every length prefix and fail with
// ErrTooLong rather than send a truncated request.

// AppendMessage appends the STARTUP body; options are written in key order.
func (s *Startup) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.shortCount("STARTUP options", len(s.Options))
	for k, v := range s.Options {
		chk.str("option name", k)
		chk.str("option value", v)
	}
	if chk.err != nil {
		return dst, chk.err
	}
	return appendStringMap(dst, s.Options), nil
}

// AppendMessage appends the (empty) OPTIONS body.
func (*Options) AppendMessage(dst []byte) ([]byte, error) { return dst, nil }

func (q *Query) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.long("query", len(q.Query))
	if chk.err != nil {
		return dst, chk.err
	}
	return appendQueryParams(appendLongString(dst, q.Query), &q.Params)
}

func (p *Prepare) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.long("query", len(p.Query))
	if chk.err != nil {
		return dst, chk.err
	}
	return appendLongString(dst, p.Query), nil
}

func (e *Execute) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.shortBytes("prepared id", len(e.ID))
	if chk.err != nil {
		return dst, chk.err
	}
	return appendQueryParams(appendShortBytes(dst, e.ID), &e.Params)
}

// EncodeFlags returns the flags appendQueryParams writes: p.Flags plus those
// the fields call for.
func (p *QueryParams) EncodeFlags() byte {
	f := p.Flags
	if len(p.Values) > 0 {
		f |= QueryFlagValues
	}
	if p.Names != nil {
		f |= QueryFlagNamesForValues
	}
	if p.SkipMetadata {
		f |= QueryFlagSkipMetadata
	}
	if p.PageSize > 0 {
		f |= QueryFlagPageSize
	}
	if p.PagingState != nil {
		f |= QueryFlagPagingState
	}
	if p.HasSerialConsistency {
		f |= QueryFlagSerialConsistency
	}
	if p.HasTimestamp {
		f |= QueryFlagDefaultTimestamp
	}
	return f
}

func appendQueryParams(dst []byte, p *QueryParams) ([]byte, error) {
	flags := p.EncodeFlags()
	named := flags&QueryFlagNamesForValues != 0 && flags&QueryFlagValues != 0
	var chk checker
	if flags&QueryFlagValues != 0 {
		chk.shortCount("values", len(p.Values))
		if named && len(p.Names) != len(p.Values) {
			return dst, fmt.Errorf("query parameters: %d names for %d values", len(p.Names), len(p.Values))
		}
		if named {
			chk.strings("value name", p.Names)
		}
		for _, v := range p.Values {
			chk.long("value", len(v.Bytes))
		}
	}
	chk.long("paging state", len(p.PagingState))
	if chk.err != nil {
		return dst, chk.err
	}
	dst = appendShort(dst, uint16(p.Consistency))
	dst = append(dst, flags)
	if flags&QueryFlagValues != 0 {
		dst = appendShort(dst, uint16(len(p.Values)))
		for i, v := range p.Values {
			if named {
				dst = appendString(dst, p.Names[i])
			}
			dst = appendValue(dst, v)
		}
	}
	if flags&QueryFlagPageSize != 0 {
		dst = appendInt(dst, p.PageSize)
	}
	if flags&QueryFlagPagingState != 0 {
		dst = appendBytes(dst, p.PagingState)
	}
	return appendSerialAndTimestamp(dst, flags, p.SerialConsistency, p.Timestamp), nil
}

// appendSerialAndTimestamp appends the serial consistency and the default
// timestamp that end the parameters of QUERY and EXECUTE and a BATCH, each
// only when flags announce it.
func appendSerialAndTimestamp(dst []byte, flags byte, serial Consistency, ts int64) []byte {
	if flags&QueryFlagSerialConsistency != 0 {
		dst = appendShort(dst, uint16(serial))
	}
	if flags&QueryFlagDefaultTimestamp != 0 {
		dst = appendLong(dst, ts)
	}
	return dst
}

// AppendMessage appends the BATCH body. Its flags are b.Flags plus those
// the serial consistency and timestamp fields call for.
func (b *Batch) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.shortCount("batch statements", len(b.Statements))
	for i := range b.Statements {
		s := &b.Statements[i]
		if s.Prepared {
			chk.shortBytes("prepared id", len(s.ID))
		} else {
			chk.long("query", len(s.Query))
		}
		chk.shortCount("values", len(s.Values))
		for _, v := range s.Values {
			chk.long("value", len(v.Bytes))
		}
	}
	if chk.err != nil {
		return dst, chk.err
	}
	flags := b.Flags
	if b.HasSerialConsistency {
		flags |= QueryFlagSerialConsistency
	}
	if b.HasTimestamp {
		flags |= QueryFlagDefaultTimestamp
	}
	dst = append(dst, byte(b.Type))
	dst = appendShort(dst, uint16(len(b.Statements)))
	for i := range b.Statements {
		s := &b.Statements[i]
		if s.Prepared {
			dst = append(dst, 1)
			dst = appendShortBytes(dst, s.ID)
		} else {
			dst = append(dst, 0)
			dst = appendLongString(dst, s.Query)
		}
		dst = appendShort(dst, uint16(len(s.Values)))
		for _, v := range s.Values {
			dst = appendValue(dst, v)
		}
	}
	dst = appendShort(dst, uint16(b.Consistency))
	dst = append(dst, flags)
	return appendSerialAndTimestamp(dst, flags, b.SerialConsistency, b.Timestamp), nil
}

func (r *Register) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.strings("event type", r.Events)
	if chk.err != nil {
		return dst, chk.err
	}
	return appendStringList(dst, r.Events), nil
}

func (a *AuthResponse) AppendMessage(dst []byte) ([]byte, error) {
	var chk checker
	chk.long("token", len(a.Token))
	if chk.err != nil {
		return dst, chk.err
	}
	return appendBytes(dst, a.Token), nil
}
