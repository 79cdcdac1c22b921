package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// ringPartition is the part of cosmosctl ring show -o json that ringcheck
// reads (proto/admin's Partition, under its proto field names).
type ringPartition struct {
	ID         uint64  `json:"id"`
	Table      string  `json:"table"`
	LeaderNode uint64  `json:"leader_node"`
	RUShare    float64 `json:"ru_share"`
	Throttled  int64   `json:"throttled"`
	Replicas   []struct {
		NodeID    uint64 `json:"node_id"`
		Learner   bool   `json:"learner"`
		Reachable bool   `json:"reachable"`
	} `json:"replicas"`
}

// ringCheckCmd reads cosmosctl ring show -o json on stdin and checks that
// a table has the expected number of physical partitions, each with a
// leader and its voters reachable. It prints one line either way and
// exits 1 when the table is not there yet, so the script can poll it.
func ringCheckCmd(args []string) error {
	fs := flag.NewFlagSet("ringcheck", flag.ContinueOnError)
	table := fs.String("table", "ycsb.usertable", "keyspace.table")
	want := fs.Int("partitions", 16, "physical partitions the table must have")
	voters := fs.Int("voters", 4, "reachable voting replicas each partition must have")
	if err := fs.Parse(args); err != nil {
		return err
	}
	summary, err := ringCheck(os.Stdin, *table, *want, *voters)
	if err != nil {
		return err
	}
	fmt.Println(summary)
	return nil
}

func ringCheck(r io.Reader, table string, want, voters int) (string, error) {
	var ring struct {
		Partitions []ringPartition `json:"partitions"`
	}
	if err := json.NewDecoder(r).Decode(&ring); err != nil {
		return "", fmt.Errorf("ring show output: %w", err)
	}
	var (
		n, ready  int
		throttled int64
		share     float64
	)
	for _, p := range ring.Partitions {
		if p.Table != table {
			continue
		}
		n++
		throttled += p.Throttled
		share += p.RUShare
		reachable := 0
		for _, rep := range p.Replicas {
			if !rep.Learner && rep.Reachable {
				reachable++
			}
		}
		if p.LeaderNode != 0 && reachable >= voters {
			ready++
		}
	}
	summary := fmt.Sprintf("%s: %d physical partitions (%d with a leader and %d reachable voters), %.0f RU/s provisioned in all, %d requests throttled",
		table, n, ready, voters, share, throttled)
	if n != want || ready != n {
		return "", errors.New(summary + fmt.Sprintf("; want %d partitions, all ready", want))
	}
	return summary, nil
}
