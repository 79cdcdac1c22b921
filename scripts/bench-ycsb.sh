#!/usr/bin/env bash
# make bench-ycsb (issue 13): YCSB workload A, as a new user would run it,
# against a 4-member etcd (Debian's etcd-server, default settings) and a
# 4-node cosmosd (raft engine, insecure, the table provisioned at 160,000
# RU/s so it has 16 physical partitions), one system at a time on this
# machine, every server a separate process with its data on disk and every
# address on loopback. Prints both, the ratios and the verdict on the
# targets; exits 0 whether or not the targets are met, non-zero when the
# benchmark itself fails (a cluster that does not start, too many errors).
#
# The driver is bench/ycsb (its own module: go-ycsb stays out of go.mod),
# built into bin/bench/. Results (JSON per run, the report, server logs)
# go to bin/bench/ycsb-results/<time>/; the servers' data goes to a
# temporary directory that is removed on exit, Ctrl-C included.
#
# Settings (environment):
#   YCSB_DURATION=40s        measured time of each run (after the warm-up)
#   YCSB_WARMUP=5s           time before each run's measured window
#   YCSB_OPS=0               also stop a run after this many operations (0: time only)
#   YCSB_THREADS=64          threads of the peak and half-peak runs
#   YCSB_RECORDS=10000       records loaded and chosen zipfian
#   YCSB_THROUGHPUT=160000   RU/s the cosmosd table is provisioned with
#   YCSB_PARTITIONS=16       physical partitions that must result
#   YCSB_HALF_FRACTION=0.5   rate of the half-peak run, as a fraction of the peak
#   YCSB_HALF_THREADS=64     threads of the half-peak run (paced by go-ycsb's target)
#   YCSB_IDLE=5s             how long the idle servers' CPU is measured before the load
#   YCSB_SYSTEMS="etcd cosmosd"   which systems to run, in order
#   YCSB_MAX_ERROR_RATE=0.001     fail a run when more operations than this failed
#   YCSB_COSMOSD_NET=127.0.77     cosmosd node i on .i, its metadata etcd on .100
#   YCSB_ETCD_NET=127.0.78        etcd member i on .i
#   YCSB_TMPDIR=$TMPDIR or /tmp   where the data directories go (a disk, not tmpfs)
#   YCSB_OUT=bin/bench/ycsb-results/<time>
#   YCSB_KEEP=0              1 keeps the data directories
#   COSMOSD_LOG_LEVEL=info
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
GO=${GO:-go}
YCSB_DURATION=${YCSB_DURATION:-40s}
YCSB_WARMUP=${YCSB_WARMUP:-5s}
YCSB_OPS=${YCSB_OPS:-0}
YCSB_THREADS=${YCSB_THREADS:-64}
YCSB_RECORDS=${YCSB_RECORDS:-10000}
YCSB_THROUGHPUT=${YCSB_THROUGHPUT:-160000}
YCSB_PARTITIONS=${YCSB_PARTITIONS:-16}
YCSB_HALF_FRACTION=${YCSB_HALF_FRACTION:-0.5}
YCSB_HALF_THREADS=${YCSB_HALF_THREADS:-64}
YCSB_IDLE=${YCSB_IDLE:-5s}
YCSB_SYSTEMS=${YCSB_SYSTEMS:-etcd cosmosd}
YCSB_MAX_ERROR_RATE=${YCSB_MAX_ERROR_RATE:-0.001}
YCSB_COSMOSD_NET=${YCSB_COSMOSD_NET:-127.0.77}
YCSB_ETCD_NET=${YCSB_ETCD_NET:-127.0.78}
YCSB_TMPDIR=${YCSB_TMPDIR:-${TMPDIR:-/tmp}}
YCSB_OUT=${YCSB_OUT:-bin/bench/ycsb-results/$(date -u +%Y%m%dT%H%M%SZ)}
YCSB_KEEP=${YCSB_KEEP:-0}
COSMOSD_LOG_LEVEL=${COSMOSD_LOG_LEVEL:-info}

COSMOSD=$ROOT/bin/cosmosd
CTL=$ROOT/bin/cosmosctl
YCSB=$ROOT/bin/bench/ycsb

log() { printf '%s bench-ycsb: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
fail() {
	log "FAILED: $*"
	exit 1
}

# Default settings means etcd's own defaults: no ETCD_* from the caller.
for v in $(compgen -e); do
	case $v in ETCD_* | ETCDCTL_*) unset "$v" ;; esac
done

# --- Dependencies: Debian's etcd (the server under test and cosmosd's
# metadata store) and etcdctl (health checks), as scripts/deps.sh installs
# the test packages. On a systemd host the package also starts its default
# member on 127.0.0.1:2379; this script never uses that one.
need=()
command -v etcd >/dev/null || need+=(etcd-server)
command -v etcdctl >/dev/null || need+=(etcd-client)
if [ ${#need[@]} -gt 0 ]; then
	log "installing ${need[*]}"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
[ -x "$COSMOSD" ] && [ -x "$CTL" ] || fail "bin/cosmosd and bin/cosmosctl are missing: run make build (make bench-ycsb does)"

log "building the driver (bench/ycsb, go-ycsb $(sed -n 's/^.*pingcap\/go-ycsb \(v[^ ]*\).*$/\1/p' bench/ycsb/go.mod | head -1)) into bin/bench/"
(cd bench/ycsb && CGO_ENABLED=0 "$GO" build -trimpath -o "$YCSB" .) || fail "building bench/ycsb"

mkdir -p "$YCSB_OUT/logs"
OUT=$(cd "$YCSB_OUT" && pwd)
WORK=$(mktemp -d "$YCSB_TMPDIR/cosmosd-bench-ycsb.XXXXXX")

# --- Processes: every server and driver started here is in LIVE until it
# has been waited for (its id may then be reused); cleanup stops whatever
# is still there, whichever way the script ends.
declare -A LIVE=() PNAME=()
LAST_PID=

# spawn NAME CMD... starts a process in the background, logging to
# $OUT/logs/NAME.log, and sets LAST_PID.
spawn() {
	local name=$1
	shift
	"$@" >"$OUT/logs/$name.log" 2>&1 &
	LAST_PID=$!
	LIVE[$LAST_PID]=1
	PNAME[$LAST_PID]=$name
}

# stop_pids PID... sends SIGTERM, waits up to 20 s for a graceful exit,
# then sends SIGKILL.
stop_pids() {
	local pid live i
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for ((i = 0; i < 40; i++)); do
		live=0
		for pid in "$@"; do
			kill -0 "$pid" 2>/dev/null && live=1
		done
		[ $live -eq 0 ] && break
		sleep 0.5
	done
	for pid in "$@"; do
		if kill -0 "$pid" 2>/dev/null; then
			log "${PNAME[$pid]:-$pid} did not stop within 20 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
		unset "LIVE[$pid]"
	done
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	local live=("${!LIVE[@]}")
	if [ ${#live[@]} -gt 0 ]; then
		log "stopping ${#live[@]} processes"
		stop_pids "${live[@]}"
	fi
	if [ "$YCSB_KEEP" = 1 ]; then
		log "data kept in $WORK"
	else
		rm -rf "$WORK"
	fi
	[ $rc -eq 0 ] || log "exit $rc; logs and results are in $OUT"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# await PID DESCRIPTION waits for a background command; wait returns at
# once when a signal arrives, so Ctrl-C does not wait for the run to end.
await() {
	local rc=0
	wait "$1" || rc=$?
	unset "LIVE[$1]"
	[ $rc -eq 0 ] || fail "$2 (exit $rc; see $OUT/logs/${PNAME[$1]}.log)"
}

# alive PID... fails when a server has exited.
alive() {
	local pid
	for pid in "$@"; do
		kill -0 "$pid" 2>/dev/null || {
			tail -n 30 "$OUT/logs/${PNAME[$pid]}.log" >&2 || true
			fail "${PNAME[$pid]} exited"
		}
	done
}

# busy HOST PORT: something already listens there.
busy() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

check_free() {
	local hp
	for hp in "$@"; do
		! busy "${hp%:*}" "${hp#*:}" || fail "$hp is already in use (another benchmark? set YCSB_COSMOSD_NET / YCSB_ETCD_NET)"
	done
}

join() {
	local IFS=$1
	shift
	echo "$*"
}

CLK_TCK=$(getconf CLK_TCK)
RUN_FLAGS=(-duration "$YCSB_DURATION" -warmup "$YCSB_WARMUP" -ops "$YCSB_OPS" -clk-tck "$CLK_TCK"
	-max-error-rate "$YCSB_MAX_ERROR_RATE" -p "recordcount=$YCSB_RECORDS")

# ycsb NAME ARGS...: one driver invocation, its output shown and kept.
ycsb() {
	local name=$1
	shift
	spawn "ycsb-$name" "$YCSB" "$@"
	local pid=$LAST_PID
	# The etcd client logs a warning for every request the end of a run
	# cuts off; the log keeps them, the terminal is spared them (failures
	# are counted and sampled in the result).
	tail -n +1 -f --pid="$pid" "$OUT/logs/ycsb-$name.log" |
		grep --line-buffered -v '"logger":"etcd-client"' >&2 &
	local tailpid=$!
	await "$pid" "go-ycsb $name"
	wait "$tailpid" 2>/dev/null || true
}

# --- The machine, for the record.
{
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) memory; $(uname -sr)"
	echo "Data: $WORK on $(df -PT "$WORK" | awk 'NR==2 {print $2 " (" $1 ")"}')"
	echo "etcd: $(etcd --version | head -1); cosmosd: $("$COSMOSD" --version 2>&1 | head -1)"
	echo "Workload A: $YCSB_RECORDS records of 10 x 100 B, 50% reads / 50% updates (all fields), zipfian, cassandra binding at QUORUM, etcd binding with linearizable reads; each run ${YCSB_WARMUP} warm-up + ${YCSB_DURATION} measured"
	echo "Load average: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/machine.txt" >&2
case $(df -PT "$WORK" | awk 'NR==2 {print $2}') in
tmpfs | ramfs) log "WARNING: $WORK is in memory; fsync costs nothing there (set YCSB_TMPDIR to a directory on disk)" ;;
esac

# --- etcd: 4 members, defaults, separate processes.
bench_etcd() {
	local i name peers=() clients=() pids=()
	for i in 1 2 3 4; do
		peers+=("e$i=http://$YCSB_ETCD_NET.$i:2380")
		clients+=("$YCSB_ETCD_NET.$i:2379")
		check_free "$YCSB_ETCD_NET.$i:2379" "$YCSB_ETCD_NET.$i:2380"
	done
	log "starting etcd: 4 members on $YCSB_ETCD_NET.1-4"
	for i in 1 2 3 4; do
		name=e$i
		spawn "etcd-$name" etcd --name "$name" --data-dir "$WORK/etcd/$name" \
			--listen-client-urls "http://$YCSB_ETCD_NET.$i:2379" --advertise-client-urls "http://$YCSB_ETCD_NET.$i:2379" \
			--listen-peer-urls "http://$YCSB_ETCD_NET.$i:2380" --initial-advertise-peer-urls "http://$YCSB_ETCD_NET.$i:2380" \
			--initial-cluster "$(join , "${peers[@]}")" --initial-cluster-token "bench-ycsb-$$" --initial-cluster-state new
		pids+=("$LAST_PID")
	done
	local eps
	eps=$(join , "${clients[@]}")
	for ((i = 0; ; i++)); do
		alive "${pids[@]}"
		etcdctl --endpoints "$eps" --dial-timeout 2s endpoint health >/dev/null 2>&1 && break
		[ $i -lt 60 ] || fail "etcd did not become healthy in 30 s"
		sleep 0.5
	done
	log "etcd healthy: $eps"
	local cpu="servers=$(join , "${pids[@]}")"
	ycsb etcd-idle idle -db etcd -duration "$YCSB_IDLE" -clk-tck "$CLK_TCK" -cpu "$cpu" -out "$OUT/etcd-idle.json"
	ycsb etcd-load load -db etcd -name load -p "etcd.endpoints=$eps" -threads "$YCSB_THREADS" \
		-p "recordcount=$YCSB_RECORDS" -clk-tck "$CLK_TCK" -max-error-rate "$YCSB_MAX_ERROR_RATE" \
		-cpu "$cpu" -out "$OUT/etcd-load.json"
	ycsb etcd-run-64 run -db etcd -name run-64 -p "etcd.endpoints=$eps" -threads "$YCSB_THREADS" "${RUN_FLAGS[@]}" \
		-cpu "$cpu" -out "$OUT/etcd-run-64.json"
	ycsb etcd-run-1 run -db etcd -name run-1 -p "etcd.endpoints=$eps" -threads 1 "${RUN_FLAGS[@]}" \
		-cpu "$cpu" -out "$OUT/etcd-run-1.json"
	alive "${pids[@]}"
	log "stopping etcd"
	stop_pids "${pids[@]}"
}

# --- cosmosd: 4 nodes as separate processes (raft engine, insecure), and
# a single-member etcd of their own for cluster metadata, so the nodes are
# alike (none hosts an embedded etcd) and the metadata's CPU is measured
# apart.
bench_cosmosd() {
	local net=$YCSB_COSMOSD_NET i meta_pid pids=() cql=() admin=()
	check_free "$net.100:2379" "$net.100:2380"
	for i in 1 2 3 4; do
		check_free "$net.$i:9042" "$net.$i:7000" "$net.$i:7070" "$net.$i:8080"
		cql+=("$net.$i:9042")
		admin+=("$net.$i:7070")
	done
	log "starting cosmosd's metadata etcd on $net.100"
	spawn meta-etcd etcd --name meta --data-dir "$WORK/meta-etcd" \
		--listen-client-urls "http://$net.100:2379" --advertise-client-urls "http://$net.100:2379" \
		--listen-peer-urls "http://$net.100:2380" --initial-advertise-peer-urls "http://$net.100:2380" \
		--initial-cluster "meta=http://$net.100:2380" --initial-cluster-token "bench-ycsb-meta-$$"
	meta_pid=$LAST_PID
	for ((i = 0; ; i++)); do
		alive "$meta_pid"
		etcdctl --endpoints "$net.100:2379" --dial-timeout 2s endpoint health >/dev/null 2>&1 && break
		[ $i -lt 60 ] || fail "cosmosd's metadata etcd did not become healthy in 30 s"
		sleep 0.5
	done
	log "starting cosmosd: 4 nodes on $net.1-4"
	for i in 1 2 3 4; do
		spawn "cosmosd-node-$i" "$COSMOSD" --name "node-$i" --data-dir "$WORK/cosmosd/node-$i" \
			--cql-addr "$net.$i:9042" --peer-addr "$net.$i:7000" --admin-addr "$net.$i:7070" --http-addr "$net.$i:8080" \
			--etcd-endpoints "$net.100:2379" --consensus raft --label "zone=z$i" --label "rack=r$i" \
			--log-level "$COSMOSD_LOG_LEVEL"
		pids+=("$LAST_PID")
	done
	local admin_eps up
	admin_eps=$(join , "${admin[@]}")
	for ((i = 0; ; i++)); do
		alive "${pids[@]}" "$meta_pid"
		up=$("$CTL" --endpoints "$admin_eps" nodes list -o json 2>/dev/null | grep -c '"state": "up"' || true)
		[ "$up" = 4 ] && break
		[ $i -lt 120 ] || fail "cosmosd: $up of 4 nodes up after 60 s"
		sleep 0.5
	done
	log "cosmosd: 4 nodes up"
	local fields=() f
	for f in 0 1 2 3 4 5 6 7 8 9; do fields+=("field$f varchar"); done
	# The schema of go-ycsb's cassandra binding (db/cassandra: YCSB_KEY
	# and FIELD0..9, unquoted so lower case), provisioned up front.
	spawn cql-schema "$YCSB" exec -hosts "$(join , "${cql[@]}")" \
		"CREATE KEYSPACE ycsb WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 4}" \
		"CREATE TABLE ycsb.usertable (ycsb_key varchar PRIMARY KEY, $(join , "${fields[@]}")) WITH cosmosdb_provisioned_throughput = $YCSB_THROUGHPUT"
	await "$LAST_PID" "creating keyspace ycsb and table usertable"
	local ring=""
	for ((i = 0; ; i++)); do
		alive "${pids[@]}" "$meta_pid"
		if ring=$("$CTL" --endpoints "$admin_eps" ring show --table ycsb.usertable -o json 2>/dev/null |
			"$YCSB" ringcheck -table ycsb.usertable -partitions "$YCSB_PARTITIONS" 2>&1); then
			break
		fi
		[ $i -lt 120 ] || fail "cosmosd: the table is not ready after 60 s: $ring"
		sleep 0.5
	done
	log "$ring"
	local cpu="servers=$(join , "${pids[@]}")" hosts
	hosts=$(join , "${cql[@]}")
	ycsb cosmosd-idle idle -db cassandra -duration "$YCSB_IDLE" -clk-tck "$CLK_TCK" -cpu "$cpu" -cpu "meta-etcd=$meta_pid" \
		-out "$OUT/cosmosd-idle.json"
	ycsb cosmosd-load load -db cassandra -name load -p "cassandra.cluster=$hosts" -threads "$YCSB_THREADS" \
		-p "recordcount=$YCSB_RECORDS" -clk-tck "$CLK_TCK" -max-error-rate "$YCSB_MAX_ERROR_RATE" \
		-cpu "$cpu" -cpu "meta-etcd=$meta_pid" -out "$OUT/cosmosd-load.json"
	ycsb cosmosd-run-64 run -db cassandra -name run-64 -p "cassandra.cluster=$hosts" -threads "$YCSB_THREADS" "${RUN_FLAGS[@]}" \
		-cpu "$cpu" -cpu "meta-etcd=$meta_pid" -out "$OUT/cosmosd-run-64.json"
	ycsb cosmosd-run-1 run -db cassandra -name run-1 -p "cassandra.cluster=$hosts" -threads 1 "${RUN_FLAGS[@]}" \
		-cpu "$cpu" -cpu "meta-etcd=$meta_pid" -out "$OUT/cosmosd-run-1.json"
	ycsb cosmosd-half-peak run -db cassandra -name half-peak -p "cassandra.cluster=$hosts" -threads "$YCSB_HALF_THREADS" "${RUN_FLAGS[@]}" \
		-target-of "$OUT/cosmosd-run-64.json" -target-fraction "$YCSB_HALF_FRACTION" \
		-cpu "$cpu" -cpu "meta-etcd=$meta_pid" -out "$OUT/cosmosd-half-peak.json"
	alive "${pids[@]}" "$meta_pid"
	ring=$("$CTL" --endpoints "$admin_eps" ring show --table ycsb.usertable -o json 2>/dev/null |
		"$YCSB" ringcheck -table ycsb.usertable -partitions "$YCSB_PARTITIONS" 2>&1) ||
		fail "cosmosd's table after the runs: $ring"
	echo "cosmosd after the runs: $ring" >"$OUT/cosmosd-ring.txt"
	log "stopping cosmosd"
	stop_pids "${pids[@]}"
	stop_pids "$meta_pid"
}

for sys in $YCSB_SYSTEMS; do
	case $sys in
	etcd) bench_etcd ;;
	cosmosd) bench_cosmosd ;;
	*) fail "YCSB_SYSTEMS: unknown system $sys (want etcd and/or cosmosd)" ;;
	esac
done

{
	echo
	cat "$OUT/machine.txt"
	echo
	"$YCSB" report "$OUT"
	if [ -f "$OUT/cosmosd-ring.txt" ]; then
		echo
		cat "$OUT/cosmosd-ring.txt"
	fi
} | tee "$OUT/report.md"
log "results in $OUT"
