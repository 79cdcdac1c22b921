package ru

import "testing"

func TestPublishedCosts(t *testing.T) {
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"1 KB point read", Read(1024, 1, false), 1},
		{"tiny read", Read(10, 1, false), 1},
		{"100 KB read", Read(100*1024, 1, false), 10},
		{"1 KB strong read", Read(1024, 1, true), 2},
		{"1 KB write", Write(1024, false), 5},
		{"tiny write", Write(1, false), 5},
		{"100 KB write", Write(100*1024, false), 50},
		{"1 KB LWT", Write(1024, true), 10},
		{"scan of 101 rows", Read(1024, 101, false), 2},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %v RU, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestMonotonic(t *testing.T) {
	prevR, prevW := 0.0, 0.0
	for b := int64(0); b < 1<<20; b += 777 {
		r, w := Read(b, 1, false), Write(b, false)
		if r < prevR || w < prevW {
			t.Fatalf("cost decreased at %d bytes", b)
		}
		prevR, prevW = r, w
	}
}
