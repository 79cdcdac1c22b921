# cosmosd build, test and tooling. Every target works on a fresh Debian
# machine with Go installed: `make test` installs the Debian packages the
# tests need (scripts/deps.sh) and Go modules come from the module proxy.

GO       ?= go
PKG      := github.com/cosmosd/cosmosd
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w \
	-X $(PKG)/daemon.Version=$(VERSION) -X $(PKG)/daemon.Commit=$(COMMIT) -X $(PKG)/daemon.BuildDate=$(DATE) \
	-X $(PKG)/ctl.Version=$(VERSION) -X $(PKG)/ctl.Commit=$(COMMIT) -X $(PKG)/ctl.BuildDate=$(DATE)
NODES    ?= 4
DATA_DIR ?= ./cosmosd-data
# LOG_LEVEL is the log level of `make run`: debug, info, warn or error.
LOG_LEVEL ?= info
# TEST_TIMEOUT bounds the whole test run; CI allows 90 minutes, we aim for 30.
TEST_TIMEOUT ?= 30m
# E2E_TIMEOUT bounds the container failure tests (about 5 minutes on 2 cores).
E2E_TIMEOUT ?= 20m
# E2E_ANSIBLE_TIMEOUT bounds the Ansible suite (measured: 33 minutes on 2 cores
# under a load average of 15 from other runs; less on an idle machine).
E2E_ANSIBLE_TIMEOUT ?= 45m
# NEMESIS_DURATION is the fault phase of `make nemesis` (test/nemesis);
# make test runs it with NEMESIS_SHORT (about 5 minutes in all on 2 cores).
NEMESIS_DURATION ?= 10m
NEMESIS_SHORT    ?= 3m
NEMESIS_TIMEOUT  ?= 60m
FUZZTIME ?= 3s

.PHONY: all build test test-unit cover fuzz-smoke fuzz lint proto run bench bench-ycsb deps clean dist verify-unit e2e-ansible e2e e2e-clean nemesis

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cosmosd ./cmd/cosmosd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/cosmosctl ./cmd/cosmosctl

# deps installs the Debian packages tests use (python3-cassandra for the
# Python driver test, protobuf-compiler for `make proto`).
deps:
	./scripts/deps.sh

# test runs every test: unit, driver, cluster and fuzz smoke tests, with the
# race detector.
test: deps build
	./scripts/verify-unit.sh
	COSMOSD_E2E=0 COSMOSD_E2E_ANSIBLE=0 COSMOSD_NEMESIS=0 $(GO) test -race -timeout $(TEST_TIMEOUT) ./...
	./scripts/fuzz-smoke.sh $(FUZZTIME)
	$(MAKE) e2e
	$(MAKE) nemesis NEMESIS_DURATION=$(NEMESIS_SHORT)
	$(MAKE) e2e-ansible

# e2e runs the multi-host failure tests (test/e2e): 3 etcd members and 5
# cosmosd nodes in containers (FROM scratch, no registry) on a private
# network, stopped, paused, cut off and killed while clients write; about 5
# minutes. Like e2e-ansible it runs alone, and skips with the reason when
# Docker is missing.
e2e:
	$(GO) test -v -count=1 -timeout $(E2E_TIMEOUT) ./test/e2e/

# nemesis runs the fault-injection suite (test/nemesis, docs/reliability.md):
# the e2e cluster under kill -9, pause, partitions, clock skew, a full disk
# and a wiped node while partitions split and move and clients run LWT
# registers, list appends and counters whose history is checked for
# linearizability. NEMESIS_DURATION of faults (default 10m, the long mode);
# COSMOSD_NEMESIS_SEED replays a run. Skips with the reason without Docker.
nemesis:
	COSMOSD_NEMESIS_DURATION=$(NEMESIS_DURATION) $(GO) test -v -count=1 -timeout $(NEMESIS_TIMEOUT) ./test/nemesis/

# e2e-clean removes containers and networks left by a killed e2e run.
e2e-clean:
	./scripts/e2e-clean.sh

# e2e-ansible provisions 5 Debian hosts (systemd containers built with
# debootstrap, no registry) with deploy/ansible and runs a rolling upgrade
# and a rollback under load, an idempotence check, a decommission and an
# added node; about 7 minutes (plus 2 to build the host image once). It runs
# alone, after the other tests, and skips with the reason when Docker is
# missing.
e2e-ansible: deps
	$(GO) test -v -count=1 -timeout $(E2E_ANSIBLE_TIMEOUT) ./test/e2e-ansible/

test-unit:
	$(GO) test -short -timeout 10m ./...

# cover prints the unit-test coverage (go test -short, no etcd) of the
# packages above consensus, and fails below COVER_MIN (75) percent.
cover:
	GO=$(GO) ./scripts/cover.sh

fuzz-smoke:
	./scripts/fuzz-smoke.sh $(FUZZTIME)

# fuzz runs every fuzz target for 1,000,000 executions (FuzzLiveGroup, which
# drives a live raft group, for 20,000), one at a time, stopping at the first
# failure (docs/reliability.md, "Fuzzing"): hours on a 2-core machine
# with FUZZ_PARALLEL=1. FUZZ=<regexp> runs matching targets only; see
# scripts/fuzz.sh for FUZZ_EXECS, FUZZ_LIVE_EXECS, FUZZ_PARALLEL, FUZZ_FROM.
fuzz:
	./scripts/fuzz.sh '$(FUZZ)'

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	cd bench/ycsb && $(GO) vet ./...   # its own module: not in ./...
	$(GO) tool staticcheck ./...
	$(GO) mod tidy -diff
	./scripts/protogen.sh && git diff --exit-code -- proto/

proto:
	./scripts/protogen.sh

# run starts a local cluster in the foreground (CQL on 127.0.0.1:9042,
# admin on 127.0.0.1:7070; the banner lists every address); Ctrl-C stops
# it. LOG_LEVEL=debug shows per-partition raft chatter (leader changes),
# LOG_LEVEL=warn only problems.
run: build
	./bin/cosmosd demo --nodes $(NODES) --data-dir $(DATA_DIR) --log-level $(LOG_LEVEL)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

# bench-ycsb runs YCSB workload A (go-ycsb, built from the module proxy into
# bin/bench/ by bench/ycsb, its own module) against a 4-member etcd
# (Debian's etcd-server, installed when missing) and a 4-node cosmosd, one
# after the other on loopback, and prints both, the ratios and issue 13's
# targets; about 5 minutes after the builds. YCSB_* settings: see scripts/bench-ycsb.sh.
bench-ycsb: build
	GO=$(GO) ./scripts/bench-ycsb.sh

# dist builds versioned static binaries, a tarball with them, the
# cosmosd-health script, the systemd unit, the default configuration,
# README.md and LICENSE, and a Debian package with the same into dist/.
dist:
	./scripts/dist.sh $(VERSION) $(COMMIT) $(DATE)

verify-unit: build
	./scripts/verify-unit.sh

clean:
	rm -rf bin dist
