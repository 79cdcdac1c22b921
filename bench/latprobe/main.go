// Command latprobe measures sequential CQL latencies against one node:
// reads and updates of one key, one at a time, with a token-aware or a
// round-robin driver, to see what each hop of a request costs.
package main

import (
	"flag"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/gocql/gocql"
)

func main() {
	hosts := flag.String("hosts", "127.0.0.1:9042", "comma-separated")
	n := flag.Int("n", 2000, "operations of each kind")
	tokenAware := flag.Bool("token-aware", false, "route to the key's replicas")
	pin := flag.Bool("pin", false, "use only the hosts given")
	coalesce := flag.Duration("coalesce", 200*time.Microsecond, "gocql's WriteCoalesceWaitTime")
	flag.Parse()
	c := gocql.NewCluster(strings.Split(*hosts, ",")...)
	c.WriteCoalesceWaitTime = *coalesce
	if *pin {
		var ips []string
		for _, h := range strings.Split(*hosts, ",") {
			ips = append(ips, strings.Split(h, ":")[0])
		}
		c.HostFilter = gocql.WhiteListHostFilter(ips...)
	}
	c.Consistency = gocql.Quorum
	c.Timeout = 10 * time.Second
	if *tokenAware {
		c.PoolConfig.HostSelectionPolicy = gocql.TokenAwareHostPolicy(gocql.RoundRobinHostPolicy())
	} else {
		c.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	}
	s, err := c.CreateSession()
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		"CREATE KEYSPACE IF NOT EXISTS probe WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE IF NOT EXISTS probe.t (k text PRIMARY KEY, v text)",
	} {
		if err := s.Query(q).Exec(); err != nil {
			log.Fatal(err)
		}
	}
	val := strings.Repeat("x", 1000)
	run := func(name string, f func(i int) error) {
		lat := make([]time.Duration, 0, *n)
		for i := range *n {
			t0 := time.Now()
			if err := f(i); err != nil {
				log.Fatalf("%s: %v", name, err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
		fmt.Printf("%-7s p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms\n", name, ms(p(0.5)), ms(p(0.9)), ms(p(0.99)))
	}
	keys := 16
	run("update", func(i int) error {
		return s.Query("UPDATE probe.t SET v = ? WHERE k = ?", val, fmt.Sprint(i%keys)).Exec()
	})
	run("local", func(i int) error {
		var v string
		return s.Query("SELECT release_version FROM system.local").Scan(&v)
	})
	run("one", func(i int) error {
		var v string
		return s.Query("SELECT v FROM probe.t WHERE k = ?", fmt.Sprint(i%16)).Consistency(gocql.One).Scan(&v)
	})
	run("read", func(i int) error {
		var v string
		return s.Query("SELECT v FROM probe.t WHERE k = ?", fmt.Sprint(i%keys)).Scan(&v)
	})
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
