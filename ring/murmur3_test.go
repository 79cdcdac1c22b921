package ring

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/cosmosd/cosmosd/test/fuzzcheck"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// TestMurmur3H1Known checks published vectors: gocql internal/murmur
// murmur_test.go (TestMurmur3H1, TestMurmur3H1_CassandraSign) and
// python-driver tests/unit/test_metadata.py (Murmur3TokensTest._verify_hash).
func TestMurmur3H1Known(t *testing.T) {
	const prefix = "0123456789012345678"
	gocqlPrefix := []uint64{ // raw h1 of prefix[:i]; every tail length 0..15 and one block + tail
		0x0000000000000000, 0x2ac9debed546a380, 0x649e4eaa7fc1708e, 0xce68f60d7c353bdb,
		0x0f95757ce7f38254, 0x0f04e459497f3fc1, 0x88c0a92586be0a27, 0x13eb9fb82606f7a6,
		0x8236039b7387354d, 0x4c1e87519fe738ba, 0x3f9652ac3effeb24, 0x3f33760ded9006c6,
		0xaed70a6631854cb1, 0x8a299a8f8e0e2da7, 0x624b675c779249a6, 0xa4b203bb1d90b9a3,
		0xa3293ad698ecb99a, 0xbc740023dbd50048, 0x3fe5ab9837d25cdd, 0x2d0338c1ca87d132,
	}
	type tc struct {
		name string
		in   []byte
		want int64
	}
	var tests []tc
	for i, h := range gocqlPrefix {
		tests = append(tests, tc{fmt.Sprintf("gocql/prefix%d", i), []byte(prefix[:i]), int64(h)})
	}
	tests = append(tests,
		tc{"gocql/hello", []byte("hello"), u64(0xcbd8a7b341bd9b02)},
		tc{"gocql/hello-world", []byte("hello, world"), 0x342fac623a5ebc8e},
		tc{"gocql/2038", []byte("19 Jan 2038 at 3:14:07 AM"), u64(0xb89e5988b737affc)},
		tc{"gocql/fox", []byte("The quick brown fox jumps over the lazy dog."), u64(0xcd99481f9ee902c9)},
		tc{"gocql/cassandra-sign", mustHex(t, "00104327529fb645dd00b883ec39ae448bb800000400066a6b00"), -9223371632693506265},
		tc{"python/123", []byte("123"), -7468325962851647638},
		tc{"python/mixed", bytes.Repeat([]byte{0x00, 0xff, 0x10, 0xfa, 0x99}, 10), 5837342703291459765},
		tc{"python/fe", bytes.Repeat([]byte{0xfe}, 8), -8927430733708461935},
		tc{"python/10", bytes.Repeat([]byte{0x10}, 8), 1446172840243228796},
		tc{"python/maxlong", []byte(strconv.FormatInt(math.MaxInt64, 10)), 7162290910810015547},
		tc{"local/int1", mustHex(t, "00000001"), -4069959284402364209},
		tc{"local/bigint1", mustHex(t, "0000000000000001"), 6292367497774912474},
		tc{"local/text-a", []byte("a"), -8839064797231613815},
		tc{"local/int1+text-a", mustHex(t, "0004000000010000016100"), 6516349416904725244},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Murmur3H1(tt.in); got != tt.want {
				t.Errorf("Murmur3H1(%x) = %d (%#x), want %d (%#x)", tt.in, got, uint64(got), tt.want, uint64(tt.want))
			}
		})
	}
}

// u64 reinterprets an unsigned constant as the int64 with the same bits.
func u64(v uint64) int64 { return int64(v) }

func TestFmix(t *testing.T) {
	// gocql internal/murmur TestFmix.
	if got, want := int64(fmix64(123456789)), int64(-8107560010088384378); got != want {
		t.Fatalf("fmix64(123456789) = %d, want %d", got, want)
	}
}

func TestToken(t *testing.T) {
	tests := []struct {
		name string
		key  []byte
		want int64
	}{
		// Murmur3Partitioner.getToken: the empty key is MINIMUM, although
		// MurmurHash3 of no bytes is 0.
		{"empty", []byte{}, math.MinInt64},
		{"nil", nil, math.MinInt64},
		{"text-a", []byte("a"), -8839064797231613815},
		// A 16-byte key whose raw h1 is MinInt64 (constructed by inverting
		// the hash in gen_vectors.py, confirmed by the Python driver):
		// normalize() moves it to MaxInt64.
		{"h1-min", mustHex(t, "82bd5a95a06a04650d99d67502935b40"), math.MaxInt64},
		{"h1-max", mustHex(t, "3f59218a704514648b1507a390b94067"), math.MaxInt64},
		{"h1-min+1", mustHex(t, "5be9113f468f1dd06c39ef91032841ed"), math.MinInt64 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Token(tt.key); got != tt.want {
				t.Errorf("Token(%x) = %d, want %d", tt.key, got, tt.want)
			}
		})
	}
	if h := Murmur3H1(mustHex(t, "82bd5a95a06a04650d99d67502935b40")); h != math.MinInt64 {
		t.Errorf("Murmur3H1(h1-min key) = %d, want raw MinInt64", h)
	}
}

type vectorFile struct {
	Driver string       `json:"driver"`
	Used   string       `json:"murmur3_used_by_Murmur3Token"`
	Cases  []vectorCase `json:"cases"`
}

type vectorCase struct {
	Name       string   `json:"name"`
	Components []string `json:"components"`
	Key        string   `json:"key"` // composite keys only
	H1         string   `json:"h1"`
	Token      string   `json:"token"`
}

// TestVectors checks RoutingKey, Murmur3H1, Token and SplitRoutingKey against
// testdata/murmur3_vectors.json, generated with the DataStax Python driver.
// Regenerate (from the module root) with:
//
//	/usr/bin/python3 ring/testdata/gen_vectors.py > ring/testdata/murmur3_vectors.json
func TestVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/murmur3_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("decode vectors: %v", err)
	}
	if len(f.Cases) < 2000 {
		t.Fatalf("only %d vectors, want at least 2000", len(f.Cases))
	}
	t.Logf("%d vectors from %s (%s)", len(f.Cases), f.Driver, f.Used)
	families := map[string]int{}
	for _, c := range f.Cases {
		families[strings.SplitN(c.Name, "/", 2)[0]]++
		comps := make([][]byte, len(c.Components))
		for i, h := range c.Components {
			comps[i] = mustHex(t, h)
		}
		wantH1, err1 := strconv.ParseInt(c.H1, 10, 64)
		wantTok, err2 := strconv.ParseInt(c.Token, 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		key, err := RoutingKey(comps)
		if err != nil {
			t.Errorf("%s: RoutingKey: %v", c.Name, err)
			continue
		}
		if len(comps) > 1 {
			if want := mustHex(t, c.Key); !bytes.Equal(key, want) {
				t.Errorf("%s: RoutingKey = %x, driver built %x", c.Name, key, want)
			}
		}
		if got := Murmur3H1(key); got != wantH1 {
			t.Errorf("%s: Murmur3H1(%x) = %d, want %d", c.Name, key, got, wantH1)
		}
		if got := Token(key); got != wantTok {
			t.Errorf("%s: Token(%x) = %d, want %d", c.Name, key, got, wantTok)
		}
		parts, err := SplitRoutingKey(key, len(comps))
		if err != nil {
			t.Errorf("%s: SplitRoutingKey: %v", c.Name, err)
			continue
		}
		if len(parts) != len(comps) {
			t.Errorf("%s: SplitRoutingKey gave %d parts, want %d", c.Name, len(parts), len(comps))
			continue
		}
		for i := range parts {
			if !bytes.Equal(parts[i], comps[i]) {
				t.Errorf("%s: SplitRoutingKey part %d = %x, want %x", c.Name, i, parts[i], comps[i])
			}
		}
	}
	// Guard against a regenerated file silently losing a family.
	for _, fam := range []string{"known", "bytes", "text", "int", "bigint", "uuid", "composite2", "composite3", "edge"} {
		if families[fam] == 0 {
			t.Errorf("no %q vectors in the file", fam)
		}
	}
}

func TestRoutingKey(t *testing.T) {
	big := func(n int) []byte { return bytes.Repeat([]byte{0xab}, n) }
	tests := []struct {
		name    string
		comps   [][]byte
		want    []byte // nil with wantErr
		wantErr error
	}{
		{"none", nil, nil, ErrMalformedKey},
		{"single", [][]byte{{1, 2, 3}}, []byte{1, 2, 3}, nil},
		{"single-empty", [][]byte{{}}, []byte{}, nil},
		{"two", [][]byte{{0, 0, 0, 1}, []byte("a")}, mustHex(t, "0004000000010000016100"), nil},
		{"two-empty", [][]byte{nil, {}}, mustHex(t, "000000000000"), nil},
		{"three", [][]byte{{7}, nil, {8, 9}}, mustHex(t, "00010700"+"000000"+"0002080900"), nil},
		{"single-max", [][]byte{big(MaxKeyLength)}, big(MaxKeyLength), nil},
		{"single-too-long", [][]byte{big(MaxKeyLength + 1)}, nil, ErrKeyTooLong},
		// 3 bytes of framing per component: the whole key counts.
		{"two-max", [][]byte{big(MaxKeyLength - 6 - 1), big(1)}, nil, nil},
		{"two-too-long", [][]byte{big(MaxKeyLength - 6), big(1)}, nil, ErrKeyTooLong},
		{"component-too-long", [][]byte{big(1 << 16), {}}, nil, ErrKeyTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := RoutingKey(tt.comps)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("RoutingKey error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("RoutingKey: %v", err)
			}
			if tt.want != nil && !bytes.Equal(got, tt.want) {
				t.Fatalf("RoutingKey = %x, want %x", got, tt.want)
			}
			if len(got) > MaxKeyLength {
				t.Fatalf("RoutingKey returned %d bytes", len(got))
			}
			parts, err := SplitRoutingKey(got, len(tt.comps))
			if err != nil {
				t.Fatalf("SplitRoutingKey: %v", err)
			}
			for i := range parts {
				if !bytes.Equal(parts[i], tt.comps[i]) {
					t.Fatalf("part %d = %x, want %x", i, parts[i], tt.comps[i])
				}
			}
		})
	}
}

func TestRoutingKeyTooLongMessage(t *testing.T) {
	_, err := RoutingKey([][]byte{make([]byte, 70000), {1}})
	const want = "Key length of 70007 is longer than maximum of 65535"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("error %q does not end with Cassandra's %q", err, want)
	}
}

func TestSplitRoutingKeyErrors(t *testing.T) {
	tests := []struct {
		name    string
		key     string // hex
		n       int
		wantErr error
	}{
		{"n-zero", "00", 0, ErrMalformedKey},
		{"n-negative", "00", -1, ErrMalformedKey},
		{"n-huge", "000000", math.MaxInt, ErrMalformedKey},
		{"empty-two", "", 2, ErrMalformedKey},
		{"one-component-for-two", "0001aa00", 2, ErrMalformedKey},
		{"truncated-length", "0001aa0000", 2, ErrMalformedKey},
		{"truncated-value", "0001aa000005aabb00", 2, ErrMalformedKey},
		{"missing-eoc", "0001aa000001bb", 2, ErrMalformedKey},
		{"eoc-ff", "0001aaff0001bb00", 2, ErrMalformedKey},
		{"eoc-01", "0001aa000001bb01", 2, ErrMalformedKey},
		{"trailing", "0001aa000001bb0000", 2, ErrMalformedKey},
		{"three-for-two", "000000000000000000", 2, ErrMalformedKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts, err := SplitRoutingKey(mustHex(t, tt.key), tt.n)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("SplitRoutingKey(%s, %d) = %x, %v; want %v", tt.key, tt.n, parts, err, tt.wantErr)
			}
		})
	}
	if _, err := SplitRoutingKey(make([]byte, MaxKeyLength+1), 1); !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("oversized single key: err = %v, want ErrKeyTooLong", err)
	}
}

func TestSplitRoutingKeyAliasing(t *testing.T) {
	key := mustHex(t, "0001aa000001bb00")
	parts, err := SplitRoutingKey(key, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Appending to a part must not overwrite the EOC byte or the next part.
	_ = append(parts[0], 0xff, 0xff, 0xff)
	if !bytes.Equal(key, mustHex(t, "0001aa000001bb00")) {
		t.Fatalf("append to a part modified the key: %x", key)
	}
	single, err := SplitRoutingKey(key, 1)
	if err != nil || len(single) != 1 || &single[0][0] != &key[0] || len(single[0]) != len(key) {
		t.Fatalf("n=1 must return the key itself: %x, %v", single, err)
	}
}

func TestNoAllocs(t *testing.T) {
	key := bytes.Repeat([]byte{0x9c}, 100)
	comps := [][]byte{key}
	var sink int64
	for name, f := range map[string]func(){
		"Murmur3H1":         func() { sink += Murmur3H1(key) },
		"Token":             func() { sink += Token(key) },
		"RoutingKey/single": func() { k, _ := RoutingKey(comps); sink += int64(len(k)) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s allocates %v times per call", name, n)
		}
	}
	_ = sink
}

// FuzzSplitRoutingKey feeds arbitrary bytes and component counts to the
// decoder: it must not panic, must classify every failure with a sentinel,
// and whatever it accepts must re-encode to the same bytes.
func FuzzSplitRoutingKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key []byte, n int) {
		var parts [][]byte
		var err error
		// A claimed component count beyond what the key can hold must not
		// be allocated for.
		fuzzcheck.Allocs(t, fuzzcheck.Bound(len(key), 16), "SplitRoutingKey", func() { parts, err = SplitRoutingKey(key, n) })
		if err != nil {
			if !errors.Is(err, ErrMalformedKey) && !errors.Is(err, ErrKeyTooLong) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if len(parts) != n {
			t.Fatalf("got %d parts, want %d", len(parts), n)
		}
		for i, p := range parts {
			if len(p) != cap(p) && n > 1 {
				t.Fatalf("part %d capacity %d not clipped to length %d", i, cap(p), len(p))
			}
		}
		re, err := RoutingKey(parts)
		if err != nil {
			t.Fatalf("RoutingKey of accepted parts: %v", err)
		}
		if !bytes.Equal(re, key) {
			t.Fatalf("round trip: %x -> %x", key, re)
		}
		_ = Token(key)
	})
}

var benchSink int64

func BenchmarkToken(b *testing.B) {
	for _, size := range []int{16, 64, 1024} {
		key := make([]byte, size)
		for i := range key {
			key[i] = byte(i*131 + 7)
		}
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				benchSink += Token(key)
			}
		})
	}
}

func BenchmarkRoutingKeyComposite(b *testing.B) {
	comps := [][]byte{make([]byte, 16), make([]byte, 4), make([]byte, 8)}
	b.ReportAllocs()
	for b.Loop() {
		k, _ := RoutingKey(comps)
		benchSink += Token(k)
	}
}
