// Package ru is cosmosd's request-unit cost model: what every operation
// costs, in Cosmos DB's currency. It is pure arithmetic so the replica that
// enforces a partition's throughput, the executor that reports the charge to
// the client and the documentation (docs/request-units.md) agree.
//
// The model follows Cosmos DB's published costs: a 1 KB point read is 1 RU
// and a 1 KB write about 5 RU; a 100 KB read about 10 RU and a 100 KB write
// about 50 RU, so cost grows linearly between those points (0.0909 RU and
// 0.4545 RU per additional KB). Linearizable reads (QUORUM and stronger)
// cost twice an eventual (ONE) read, and a lightweight transaction twice a
// plain write, as strong reads and conditional writes do in Cosmos DB.
package ru

import "math"

const (
	kb = 1024.0
	// ReadBase is the cost of reading up to 1 KB at ONE.
	ReadBase = 1.0
	// ReadPerKB is the cost of every further KB read.
	ReadPerKB = 9.0 / 99.0
	// WriteBase is the cost of writing up to 1 KB.
	WriteBase = 5.0
	// WritePerKB is the cost of every further KB written.
	WritePerKB = 45.0 / 99.0
	// RowScan is the cost of examining one stored row beyond the bytes it
	// holds (filtering, tombstones, counting).
	RowScan = 0.01
	// StrongFactor multiplies reads at QUORUM and stronger.
	StrongFactor = 2.0
	// ConditionalFactor multiplies lightweight transactions.
	ConditionalFactor = 2.0
)

func round(v float64) float64 { return math.Round(v*100) / 100 }

// Read is the cost of a read that examined rowsScanned stored rows holding
// bytes bytes, linearizable or not. Every read costs at least ReadBase.
func Read(bytes, rowsScanned int64, linearizable bool) float64 {
	k := math.Max(float64(bytes)/kb, 1)
	c := ReadBase + (k-1)*ReadPerKB + float64(max(rowsScanned-1, 0))*RowScan
	if linearizable {
		c *= StrongFactor
	}
	return round(c)
}

// Write is the cost of a write of bytes bytes (the encoded mutations),
// conditional or not. Every write costs at least WriteBase.
func Write(bytes int64, conditional bool) float64 {
	k := math.Max(float64(bytes)/kb, 1)
	c := WriteBase + (k-1)*WritePerKB
	if conditional {
		c *= ConditionalFactor
	}
	return round(c)
}
