package exec

// Aggregate selectors: count, min, max, sum and avg, computed over the rows
// of a result or of each GROUP BY group.

import (
	"encoding/binary"
	"math"
	"math/big"

	"github.com/cosmosd/cosmosd/cqltype"
)

type countSel struct {
	arg selector
	sp  ColumnSpec
	n   int64
}

func (s *countSel) spec() ColumnSpec { return s.sp }
func (s *countSel) add(r *qrow) error {
	if s.arg == nil {
		s.n++
		return nil
	}
	s.arg.reset()
	if err := s.arg.add(r); err != nil {
		return err
	}
	if s.arg.result() != nil {
		s.n++
	}
	return nil
}
func (s *countSel) result() []byte  { return binary.BigEndian.AppendUint64(nil, uint64(s.n)) }
func (s *countSel) reset()          { s.n = 0 }
func (s *countSel) aggregate() bool { return true }

// aggSel implements min, max, sum and avg.
type aggSel struct {
	fn  string
	arg selector
	typ cqltype.Type
	sp  ColumnSpec
	cur []byte
	sum *big.Rat
	flt float64
	n   int64
	// scale is the largest scale of the decimals summed: the sum is exact
	// at it, as Java's BigDecimal.add is.
	scale int32
}

func (s *aggSel) spec() ColumnSpec { return s.sp }
func (s *aggSel) aggregate() bool  { return true }
func (s *aggSel) reset()           { s.cur, s.sum, s.flt, s.n, s.scale = nil, nil, 0, 0, 0 }
func (s *aggSel) add(r *qrow) error {
	s.arg.reset()
	if err := s.arg.add(r); err != nil {
		return err
	}
	v := s.arg.result()
	if v == nil || (len(v) == 0 && s.fn != "min" && s.fn != "max") {
		return nil // an empty numeric value has no number: skipped like null
	}
	switch s.fn {
	case "min":
		if s.cur == nil || cqltype.Compare(s.typ, v, s.cur) < 0 {
			s.cur = v
		}
	case "max":
		if s.cur == nil || cqltype.Compare(s.typ, v, s.cur) > 0 {
			s.cur = v
		}
	default:
		s.n++
		switch s.typ.Kind {
		case cqltype.Float, cqltype.Double:
			x, err := cqltype.Unmarshal(s.typ, v)
			if err != nil {
				return Invalid("%v", err)
			}
			switch f := x.(type) {
			case float32:
				s.flt += float64(f)
			case float64:
				s.flt += f
			}
		default:
			rat, err := numericRat(s.typ, v)
			if err != nil {
				return err
			}
			if s.typ.Kind == cqltype.Decimal && len(v) >= 4 {
				s.scale = max(s.scale, int32(binary.BigEndian.Uint32(v)))
			}
			if s.sum == nil {
				s.sum = new(big.Rat)
			}
			s.sum.Add(s.sum, rat)
		}
	}
	return nil
}

// maxUint64 masks a big integer to its low 64 bits (two's complement).
var maxUint64 = new(big.Int).SetUint64(math.MaxUint64)

func numericRat(t cqltype.Type, v []byte) (*big.Rat, error) {
	x, err := cqltype.Unmarshal(t, v)
	if err != nil {
		return nil, Invalid("%v", err)
	}
	switch n := x.(type) {
	case int8:
		return new(big.Rat).SetInt64(int64(n)), nil
	case int16:
		return new(big.Rat).SetInt64(int64(n)), nil
	case int32:
		return new(big.Rat).SetInt64(int64(n)), nil
	case int64:
		return new(big.Rat).SetInt64(n), nil
	case int:
		return new(big.Rat).SetInt64(int64(n)), nil
	case *big.Int:
		return new(big.Rat).SetInt(n), nil
	case cqltype.DecimalValue:
		r := new(big.Rat).SetInt(n.Unscaled)
		scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs32(n.Scale))), nil)
		if n.Scale >= 0 {
			return r.Quo(r, new(big.Rat).SetInt(scale)), nil
		}
		return r.Mul(r, new(big.Rat).SetInt(scale)), nil
	}
	return nil, Invalid("cannot aggregate values of type %s", t)
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

func (s *aggSel) result() []byte {
	switch s.fn {
	case "min", "max":
		return s.cur
	}
	var out any
	switch s.typ.Kind {
	case cqltype.Float, cqltype.Double:
		f := s.flt
		if s.fn == "avg" && s.n > 0 {
			f /= float64(s.n)
		}
		if s.typ.Kind == cqltype.Float {
			out = float32(f)
		} else {
			out = f
		}
	default:
		sum := s.sum
		if sum == nil {
			sum = new(big.Rat)
		}
		if s.fn == "avg" && s.n > 0 {
			sum = new(big.Rat).Quo(sum, new(big.Rat).SetInt64(s.n))
		}
		switch s.typ.Kind {
		case cqltype.Decimal:
			out = ratToDecimal(sum, decimalScale(sum, s.scale))
		case cqltype.Varint:
			out = new(big.Int).Quo(sum.Num(), sum.Denom())
		default:
			// sum keeps Java's fixed-width arithmetic: the exact sum
			// wrapped to 64 bits, then to the column's width by the
			// conversions below, is what Cassandra's int, long, short
			// and byte accumulators hold after overflowing. avg divides
			// the exact sum, truncating toward zero as Java does.
			q := new(big.Int).Quo(sum.Num(), sum.Denom())
			n := int64(new(big.Int).And(q, maxUint64).Uint64())
			switch s.typ.Kind {
			case cqltype.Int:
				out = int32(n)
			case cqltype.Smallint:
				out = int16(n)
			case cqltype.Tinyint:
				out = int8(n)
			default:
				out = n
			}
		}
	}
	b, err := cqltype.Marshal(s.typ, out)
	if err != nil {
		return nil
	}
	return b
}

// decimalScale is the scale of a decimal sum or average as Java's
// BigDecimal gives it: the exact quotient at the terms' scale or more
// digits when it terminates (BigDecimal.divide), else 34 significant
// digits (MathContext.DECIMAL128).
func decimalScale(r *big.Rat, scale int32) int32 {
	scale = max(scale, 0)
	d := new(big.Int).Set(r.Denom())
	for _, p := range []int64{2, 5} {
		bp := big.NewInt(p)
		for new(big.Int).Rem(d, bp).Sign() == 0 {
			d.Quo(d, bp)
		}
	}
	if d.Cmp(big.NewInt(1)) == 0 {
		// Terminating: the smallest scale >= scale that is exact.
		for s := scale; s < scale+1100; s++ {
			pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)
			if new(big.Int).Rem(new(big.Int).Mul(r.Num(), pow), r.Denom()).Sign() == 0 {
				return s
			}
		}
		return scale
	}
	// 34 significant digits: find the exponent e of the leading digit.
	abs := new(big.Rat).Abs(r)
	e := len(new(big.Int).Quo(abs.Num(), abs.Denom()).String()) - 1
	if abs.Cmp(big.NewRat(1, 1)) < 0 {
		e = -1
		ten := big.NewRat(10, 1)
		for x := new(big.Rat).Mul(abs, ten); x.Cmp(big.NewRat(1, 1)) < 0; x.Mul(x, ten) {
			e--
		}
	}
	return int32(33 - e)
}

// ratToDecimal rounds r to a decimal of the given scale, half to even, as
// Cassandra's decimal sum and avg do (the sum of decimals is exact at the
// largest scale of its terms; the average keeps that scale).
func ratToDecimal(r *big.Rat, scale int32) cqltype.DecimalValue {
	if scale < 0 {
		scale = 0
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	num := new(big.Int).Mul(r.Num(), pow)
	q, m := new(big.Int).QuoRem(num, r.Denom(), new(big.Int))
	// Round half to even on the remainder.
	twice := new(big.Int).Mul(new(big.Int).Abs(m), big.NewInt(2))
	if c := twice.Cmp(r.Denom()); c > 0 || (c == 0 && q.Bit(0) == 1) {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return cqltype.DecimalValue{Unscaled: q, Scale: scale}
}
