package parser

import "testing"

func BenchmarkParseInsert(b *testing.B) {
	benchParse(b, "INSERT INTO ks.tweet (timeline, id, text, tags, ts) VALUES (?, ?, ?, {'a', 'b'}, toTimestamp(now())) USING TTL 86400")
}

func BenchmarkParseSelect(b *testing.B) {
	benchParse(b, "SELECT id, text, writetime(text) FROM ks.tweet WHERE timeline = ? AND id > ? AND id <= ? ORDER BY id DESC LIMIT 100")
}

func benchParse(b *testing.B, q string) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(q); err != nil {
			b.Fatal(err)
		}
	}
}
