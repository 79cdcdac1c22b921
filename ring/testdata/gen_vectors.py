#!/usr/bin/python3
"""Generate murmur3_vectors.json: Murmur3Partitioner tokens computed by the
DataStax Python driver (cassandra-driver), for ring's Go tests.

Regenerate from the module root with Debian's python3-cassandra, which is
installed for /usr/bin/python3 (not necessarily the python3 first on PATH):

    /usr/bin/python3 ring/testdata/gen_vectors.py > ring/testdata/murmur3_vectors.json

The output is deterministic (fixed seed), so regenerating must give no diff.

What each case holds:
  components  CQL-serialized partition key components, hex. Serialized with the
              driver's own cassandra.cqltypes serializers (protocol v4).
  key         composite keys only: the routing key, hex, built by the driver
              itself (Statement.routing_key = components: several components
              -> struct.pack(">H%dsB", len, bytes, 0) each). A single component
              is the routing key as is, so the field is omitted to halve the
              file.
  h1          raw MurmurHash3 h1 as computed by the murmur3 function that
              cassandra.metadata.Murmur3Token uses (decimal int64).
  token       Cassandra's Murmur3Partitioner token (decimal int64):
              Murmur3Token.from_key(key).value, except for the empty key, which
              Cassandra maps to Long.MIN_VALUE (Murmur3Partitioner.getToken)
              while the driver hashes it to 0 like any other input.

When both the C extension (cassandra.cmurmur3) and the pure-Python fallback
(cassandra.murmur3._murmur3) are importable, every case is hashed by both and
the script aborts if they disagree.
"""

import datetime
import decimal
import json
import random
import struct
import sys
import uuid

import cassandra
from cassandra import cqltypes
from cassandra import metadata
from cassandra import murmur3 as pymurmur3
from cassandra.query import SimpleStatement

SEED = 20250601
PROTO = 4
MIN_LONG = -(2 ** 63)
MAX_LONG = 2 ** 63 - 1
M64 = 2 ** 64 - 1

# ---------------------------------------------------------------------------
# Which murmur3 implementations exist, and which one Murmur3Token uses.

if metadata.murmur3 is None:
    sys.exit("cassandra.metadata.murmur3 is None: no Murmur3 support in this driver")

IMPLS = {"cassandra.murmur3._murmur3": pymurmur3._murmur3}
try:
    from cassandra import cmurmur3

    IMPLS["cassandra.cmurmur3.murmur3"] = cmurmur3.murmur3
except ImportError:
    cmurmur3 = None

USED = None
for name, fn in IMPLS.items():
    if metadata.murmur3 is fn:
        USED = name
if USED is None:
    sys.exit("cassandra.metadata.murmur3 is neither cmurmur3 nor the pure-Python murmur3")


def s64(x):
    x &= M64
    return x - 2 ** 64 if x >= 2 ** 63 else x


def routing_key(parts):
    """The routing key exactly as the driver builds it."""
    st = SimpleStatement("SELECT 1")
    st.routing_key = list(parts)
    key = st.routing_key
    # Cross-check against the documented construction (query.py
    # Statement._key_parts_packed).
    if len(parts) == 1:
        want = parts[0]
    else:
        want = b"".join(struct.pack(">H%dsB" % len(p), len(p), p, 0) for p in parts)
    assert key == want, (parts, key, want)
    return key


def hash_case(key):
    h1 = int(metadata.murmur3(key))
    for name, fn in IMPLS.items():
        other = int(fn(key))
        if other != h1:
            sys.exit("implementations disagree on %s: %s=%d %s=%d" % (key.hex(), USED, h1, name, other))
    drv = metadata.Murmur3Token.from_key(key).value
    assert drv == metadata.Murmur3Token.hash_fn(key)
    assert drv == (MAX_LONG if h1 == MIN_LONG else h1), (key.hex(), h1, drv)
    # Cassandra's Murmur3Partitioner.getToken: empty key -> MINIMUM.
    token = MIN_LONG if len(key) == 0 else drv
    return h1, token


CASES = []
NAMES = set()


def add(name, parts):
    assert name not in NAMES, name
    NAMES.add(name)
    parts = [bytes(p) for p in parts]
    key = routing_key(parts)
    h1, token = hash_case(key)
    case = {"name": name, "components": [p.hex() for p in parts]}
    if len(parts) > 1:
        case["key"] = key.hex()
    case["h1"] = str(h1)
    case["token"] = str(token)
    CASES.append(case)
    return h1, token


# ---------------------------------------------------------------------------
# Serializers (the driver's own).

def ser_int(v):
    return cqltypes.Int32Type.serialize(v, PROTO)


def ser_bigint(v):
    return cqltypes.LongType.serialize(v, PROTO)


def ser_text(s):
    return cqltypes.UTF8Type.serialize(s, PROTO)


def ser_uuid(u):
    return cqltypes.UUIDType.serialize(u, PROTO)


def rand_uuid4(rng):
    return uuid.UUID(bytes=bytes(rng.getrandbits(8) for _ in range(16)), version=4)


def rand_uuid1(rng):
    return uuid.UUID(
        fields=(
            rng.getrandbits(32),
            rng.getrandbits(16),
            (rng.getrandbits(12) | 0x1000),
            (rng.getrandbits(6) | 0x80),
            rng.getrandbits(8),
            rng.getrandbits(48),
        )
    )


def rand_bytes(rng, n, lo=0, hi=255):
    return bytes(rng.randint(lo, hi) for _ in range(n))


# Code point ranges for random non-ASCII text (all valid scalar values).
UNICODE_RANGES = [
    (0x00C0, 0x00FF),  # Latin-1 letters (2-byte UTF-8)
    (0x0400, 0x04FF),  # Cyrillic
    (0x0370, 0x03FF),  # Greek
    (0x05D0, 0x05EA),  # Hebrew
    (0x0600, 0x06FF),  # Arabic
    (0x3040, 0x30FF),  # Hiragana/Katakana (3-byte)
    (0x4E00, 0x9FFF),  # CJK
    (0xAC00, 0xD7A3),  # Hangul syllables
    (0x1F300, 0x1F64F),  # emoji (4-byte)
    (0x1F900, 0x1F9FF),  # supplemental symbols (4-byte)
]


def rand_unicode(rng, n):
    out = []
    for _ in range(n):
        if rng.random() < 0.25:
            out.append(chr(rng.randint(0x20, 0x7E)))
        else:
            lo, hi = rng.choice(UNICODE_RANGES)
            out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def rand_ascii(rng, n):
    return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(n))


def rand_value(rng):
    """A random (type name, serialized value) for composite components."""
    kind = rng.choice(
        ["int", "bigint", "uuid", "timeuuid", "text", "text-empty", "blob",
         "blob-empty", "smallint", "tinyint", "boolean", "double", "timestamp",
         "date", "varint", "inet", "ascii", "unicode"]
    )
    if kind == "int":
        return kind, ser_int(rng.randint(-(2 ** 31), 2 ** 31 - 1))
    if kind == "bigint":
        return kind, ser_bigint(rng.randint(MIN_LONG, MAX_LONG))
    if kind == "uuid":
        return kind, ser_uuid(rand_uuid4(rng))
    if kind == "timeuuid":
        return kind, cqltypes.TimeUUIDType.serialize(rand_uuid1(rng), PROTO)
    if kind == "text":
        return kind, ser_text(rand_ascii(rng, rng.randint(1, 24)))
    if kind == "unicode":
        return kind, ser_text(rand_unicode(rng, rng.randint(1, 12)))
    if kind == "ascii":
        return kind, cqltypes.AsciiType.serialize(rand_ascii(rng, rng.randint(1, 16)), PROTO)
    if kind in ("text-empty", "blob-empty"):
        return kind, b""
    if kind == "blob":
        return kind, rand_bytes(rng, rng.randint(1, 40))
    if kind == "smallint":
        return kind, cqltypes.ShortType.serialize(rng.randint(-(2 ** 15), 2 ** 15 - 1), PROTO)
    if kind == "tinyint":
        return kind, cqltypes.ByteType.serialize(rng.randint(-128, 127), PROTO)
    if kind == "boolean":
        return kind, cqltypes.BooleanType.serialize(rng.random() < 0.5, PROTO)
    if kind == "double":
        return kind, cqltypes.DoubleType.serialize(rng.uniform(-1e12, 1e12), PROTO)
    if kind == "timestamp":
        ms = rng.randint(0, 4102444800000)
        dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
        return kind, cqltypes.TimestampType.serialize(dt, PROTO)
    if kind == "date":
        d = datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-20000, 40000))
        return kind, cqltypes.SimpleDateType.serialize(d, PROTO)
    if kind == "varint":
        return kind, cqltypes.IntegerType.serialize(rng.randint(-(2 ** 100), 2 ** 100), PROTO)
    if kind == "inet":
        if rng.random() < 0.5:
            addr = ".".join(str(rng.randint(0, 255)) for _ in range(4))
        else:
            addr = ":".join("%x" % rng.getrandbits(16) for _ in range(8))
        return kind, cqltypes.InetAddressType.serialize(addr, PROTO)
    raise AssertionError(kind)


# ---------------------------------------------------------------------------
# Keys whose raw h1 is a chosen value (to reach the MIN/MAX token edge).
#
# For inputs whose length is a multiple of 16 (no tail), MurmurHash3_x64_128
# maps the last block bijectively to the final (h1, h2), given the state left
# by the earlier blocks: every step is an XOR, an addition, a rotation, a
# multiplication by an odd constant or fmix (itself invertible). So we choose
# the final h1 (and a free h2 value), run the steps backwards and get the last
# block. The driver then independently confirms the hash.

C1 = 0x87C37B91114253D5
C2 = 0x4CF5AD432745937F
F1 = 0xFF51AFD7ED558CCD
F2 = 0xC4CEB9FE1A85EC53


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def rotr(x, r):
    return rotl(x, 64 - r)


def inv(a):
    return pow(a, -1, 2 ** 64)


def unfmix(k):
    k ^= k >> 33
    k = (k * inv(F2)) & M64
    k ^= k >> 33
    k = (k * inv(F1)) & M64
    k ^= k >> 33
    return k


def body_state(prefix):
    h1 = h2 = 0
    for i in range(0, len(prefix), 16):
        k1, k2 = struct.unpack_from("<QQ", prefix, i)
        k1 = (rotl((k1 * C1) & M64, 31) * C2) & M64
        h1 ^= k1
        h1 = (rotl(h1, 27) + h2) & M64
        h1 = (h1 * 5 + 0x52DCE729) & M64
        k2 = (rotl((k2 * C2) & M64, 33) * C1) & M64
        h2 ^= k2
        h2 = (rotl(h2, 31) + h1) & M64
        h2 = (h2 * 5 + 0x38495AB5) & M64
    return h1, h2


def preimage(target_h1, prefix, free):
    """A key = prefix + one 16-byte block whose raw h1 is target_h1."""
    assert len(prefix) % 16 == 0
    n = len(prefix) + 16
    B = free & M64
    A = (target_h1 - B) & M64  # final h1 = fmix(a) + fmix(b)
    a, b = unfmix(A), unfmix(B)
    x2 = (b - a) & M64  # b = x2 + a
    x1 = (a - x2) & M64  # a = x1 + x2
    H1, H2 = x1 ^ n, x2 ^ n  # state after the last block
    p1, p2 = body_state(prefix)
    k1m = rotr((((H1 - 0x52DCE729) * inv(5)) - p2) & M64, 27) ^ p1
    k2m = rotr((((H2 - 0x38495AB5) * inv(5)) - H1) & M64, 31) ^ p2
    k1 = (rotr((k1m * inv(C2)) & M64, 31) * inv(C1)) & M64
    k2 = (rotr((k2m * inv(C1)) & M64, 33) * inv(C2)) & M64
    key = prefix + struct.pack("<QQ", k1, k2)
    assert int(metadata.murmur3(key)) == s64(target_h1), key.hex()
    return key


# ---------------------------------------------------------------------------


def main():
    rng = random.Random(SEED)

    # Known vectors (gocql internal/murmur/murmur_test.go, python-driver
    # tests/unit/test_metadata.py) so the file is anchored to published values.
    s = b"0123456789012345678"
    for n in range(len(s) + 1):
        add("known/gocql-prefix/%d" % n, [s[:n]])
    for i, t in enumerate([b"hello", b"hello, world", b"19 Jan 2038 at 3:14:07 AM",
                           b"The quick brown fox jumps over the lazy dog."]):
        add("known/gocql-other/%d" % i, [t])
    for i, t in enumerate([b"123", b"\x00\xff\x10\xfa\x99" * 10, b"\xfe" * 8, b"\x10" * 8,
                           str(2 ** 63 - 1).encode()]):
        add("known/python-driver/%d" % i, [t])
    sign = bytes.fromhex("00104327529fb645dd00b883ec39ae448bb800000400066a6b00")
    add("known/gocql-cassandra-sign/raw", [sign])
    h1, _ = add("known/gocql-cassandra-sign/composite", [sign[2:18], sign[21:25]])
    assert h1 == -9223371632693506265

    # Single raw components of every length 0..64: random bytes, only high
    # bytes (every tail byte sign-extended), and constant fills.
    for n in range(65):
        for i in range(12):
            add("bytes/len%d/rand%d" % (n, i), [rand_bytes(rng, n)])
        add("bytes/len%d/high" % n, [rand_bytes(rng, n, 0x80, 0xFF)])
        add("bytes/len%d/ff" % n, [b"\xff" * n])
        add("bytes/len%d/80" % n, [b"\x80" * n])
        add("bytes/len%d/7f" % n, [b"\x7f" * n])
    for i in range(60):
        n = rng.randint(65, 512)
        add("bytes/long%d/len%d" % (i, n), [rand_bytes(rng, n)])
    for n in (1000, 1023, 1024, 1025, 4095, 4096, 4097):
        add("bytes/big/len%d" % n, [rand_bytes(rng, n)])

    # Text.
    words = ["a", "b", "key", "user1", "Hello, World!", "partition-key", " ",
             "The quick brown fox jumps over the lazy dog",
             "0", "-1", "null", "NULL", "\t\n", "x" * 100]
    for i, w in enumerate(words):
        add("text/ascii-word/%d" % i, [ser_text(w)])
    for i in range(150):
        add("text/ascii-rand/%d" % i, [ser_text(rand_ascii(rng, rng.randint(0, 48)))])
    intl = [
        "Привет, мир", "Москва", "ёжик", "Щука",  # Cyrillic
        "안녕하세요", "서울특별시", "한국어",  # Korean
        "こんにちは", "東京", "カタカナ",  # Japanese
        "中文", "北京市朝阳区",  # Chinese
        "😀", "🎉🎊", "👩‍💻", "🇳🇱", "a😀b", "🏳️‍🌈",  # emoji (ZWJ, flags)
        "Straße", "Grüße aus München", "Ärger", "Öl", "Übermut",  # German
        "ijsje", "één", "coördinatie", "ruïne", "Curaçao",  # Dutch
        "café", "naïve", "crème brûlée", "Ελληνικά", "עברית", "العربية",
        "e\u0301", "\u00e9",  # decomposed vs precomposed: different bytes
        "\u0000", "\ufeffbom", "\U0010fffd",
    ]
    for i, w in enumerate(intl):
        add("text/intl/%d" % i, [ser_text(w)])
    for i in range(250):
        add("text/unicode-rand/%d" % i, [ser_text(rand_unicode(rng, rng.randint(1, 30)))])

    # Integers.
    int_edges = [0, 1, -1, 2, 127, 128, -128, -129, 255, 256, 65535, 65536,
                 2 ** 31 - 1, -(2 ** 31), 42, 123456789, -123456789]
    for i, v in enumerate(int_edges):
        add("int/edge/%d" % i, [ser_int(v)])
    for i in range(150):
        add("int/rand/%d" % i, [ser_int(rng.randint(-(2 ** 31), 2 ** 31 - 1))])
    bigint_edges = [0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, MAX_LONG, MIN_LONG,
                    1_700_000_000_000, 9007199254740993]
    for i, v in enumerate(bigint_edges):
        add("bigint/edge/%d" % i, [ser_bigint(v)])
    for i in range(150):
        add("bigint/rand/%d" % i, [ser_bigint(rng.randint(MIN_LONG, MAX_LONG))])
    for i in range(40):
        add("smallint/rand/%d" % i, [cqltypes.ShortType.serialize(rng.randint(-(2 ** 15), 2 ** 15 - 1), PROTO)])
    for i in range(40):
        add("tinyint/rand/%d" % i, [cqltypes.ByteType.serialize(rng.randint(-128, 127), PROTO)])
    for i in range(40):
        add("varint/rand/%d" % i, [cqltypes.IntegerType.serialize(rng.randint(-(2 ** 130), 2 ** 130), PROTO)])
    for i, d in enumerate(["0", "1.25", "-3.14159", "1E+10", "123456789.987654321"]):
        add("decimal/%d" % i, [cqltypes.DecimalType.serialize(decimal.Decimal(d), PROTO)])

    # UUIDs.
    for i, u in enumerate([uuid.UUID(int=0), uuid.UUID(int=2 ** 128 - 1),
                           uuid.UUID("4327529f-b645-dd00-b883-ec39ae448bb8")]):
        add("uuid/edge/%d" % i, [ser_uuid(u)])
    for i in range(120):
        add("uuid/rand/%d" % i, [ser_uuid(rand_uuid4(rng))])
    for i in range(60):
        add("timeuuid/rand/%d" % i, [cqltypes.TimeUUIDType.serialize(rand_uuid1(rng), PROTO)])

    # Other fixed-size types.
    for i, v in enumerate([True, False]):
        add("boolean/%d" % i, [cqltypes.BooleanType.serialize(v, PROTO)])
    for i in range(20):
        add("double/rand/%d" % i, [cqltypes.DoubleType.serialize(rng.uniform(-1e9, 1e9), PROTO)])
    for i in range(10):
        add("float/rand/%d" % i, [cqltypes.FloatType.serialize(rng.uniform(-1e3, 1e3), PROTO)])
    for i in range(20):
        ms = rng.randint(0, 4102444800000)
        dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
        add("timestamp/rand/%d" % i, [cqltypes.TimestampType.serialize(dt, PROTO)])
    for i, a in enumerate(["127.0.0.1", "10.0.0.255", "::1", "2001:db8::ff00:42:8329"]):
        add("inet/%d" % i, [cqltypes.InetAddressType.serialize(a, PROTO)])

    # Composite keys.
    for arity, count in ((2, 450), (3, 350), (4, 40)):
        for i in range(count):
            kinds, parts = zip(*[rand_value(rng) for _ in range(arity)])
            add("composite%d/%s/%d" % (arity, "+".join(kinds), i), list(parts))
    for arity in (2, 3, 4):
        add("composite%d/all-empty" % arity, [b""] * arity)
    add("composite2/int1+text-a", [ser_int(1), ser_text("a")])
    add("composite2/uuid+int", [ser_uuid(rand_uuid4(rng)), ser_int(421483)])
    add("composite2/text-empty+int", [b"", ser_int(7)])
    add("composite3/int+empty+text", [ser_int(7), b"", ser_text("z")])
    add("composite2/unicode", [ser_text("서울"), ser_text("Straße")])
    add("composite2/long-component", [rand_bytes(rng, 300), rand_bytes(rng, 1)])

    # Token edges. Empty key: Cassandra's MINIMUM, whatever the hash.
    add("edge/empty-key", [b""])
    for j, plen in enumerate((0, 16, 32)):
        prefix = rand_bytes(rng, plen)
        for name, target in (("h1-min", MIN_LONG), ("h1-max", MAX_LONG),
                             ("h1-min+1", MIN_LONG + 1), ("h1-zero", 0), ("h1-minus1", -1)):
            key = preimage(target & M64, prefix, rng.getrandbits(64))
            h1, token = add("edge/%s/len%d" % (name, len(key)), [key])
            assert h1 == target
            if target == MIN_LONG:
                assert token == MAX_LONG

    out = sys.stdout
    out.write("{\n")
    out.write('"generator": "ring/testdata/gen_vectors.py",\n')
    out.write('"regenerate": "/usr/bin/python3 ring/testdata/gen_vectors.py > ring/testdata/murmur3_vectors.json",\n')
    out.write('"driver": %s,\n' % json.dumps("cassandra-driver " + cassandra.__version__))
    out.write('"murmur3_used_by_Murmur3Token": %s,\n' % json.dumps(USED))
    out.write('"murmur3_cross_checked": %s,\n' % json.dumps(sorted(IMPLS)))
    out.write('"seed": %d,\n' % SEED)
    out.write('"cases": [\n')
    for i, c in enumerate(CASES):
        out.write(json.dumps(c, separators=(",", ":")))
        out.write(",\n" if i + 1 < len(CASES) else "\n")
    out.write("]\n}\n")
    print("wrote %d cases (murmur3: %s; cross-checked: %s)" % (len(CASES), USED, ", ".join(sorted(IMPLS))),
          file=sys.stderr)


if __name__ == "__main__":
    main()
