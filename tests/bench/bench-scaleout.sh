#!/bin/sh
# bench-scaleout.sh TRACE ELF: the figures behind deploy/README.md's sizing
# note, on a PostgreSQL cluster of its own (tests/tools/pg-cluster.sh) and
# oobprofd nodes of OOB_BUILDDIR sharing one data folder:
#   - instructions/s of one worker (one job of TRACE on a node of 1 worker,
#     from /metrics: instructions over job seconds);
#   - the fixed cost of a job (20 jobs of a small trace), and what the
#     catalog pays per job: rows, bytes of tables and indexes, transactions
#     (pg_stat_database, the idle nodes' polling measured apart);
#   - storage per G instructions of TRACE in each format oobprof convert
#     writes (tracerv-bin plain and LZ4, oobt) and of a job's results;
#   - jobs/s of 1 and of 3 nodes on this machine (bounded by its cores).
# Prints figures; never passes or fails on timing. Called by run-bench.sh.
set -u
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
trace=$1 elf=$2
small=${3:-$OOB_BUILDDIR/tests/gen/progs/mixed.oobt}
srv=$OOB_BUILDDIR/oobprofd
cli=$OOB_BUILDDIR/oobprof
command -v psql >/dev/null 2>&1 || {
	echo "bench-scaleout: psql not installed; skipped"
	exit 0
}
dir=$(mktemp -d "${TMPDIR:-/tmp}/oobprof-bench-scaleout.XXXXXX") || exit 1
chmod 711 "$dir"
sock=$(sh "$OOB_SRCDIR/tests/tools/pg-cluster.sh" start "$dir/pg" 2>"$dir/pg.err") || {
	echo "bench-scaleout: no PostgreSQL cluster: $(tail -n 2 "$dir/pg.err")"
	rm -rf "$dir"
	exit 0
}
pids=""
trap 'stop_nodes
sh "$OOB_SRCDIR/tests/tools/pg-cluster.sh" stop "$dir/pg"; rm -rf "$dir"' EXIT
psql -X -q "postgresql:///postgres?host=$sock&user=oob" -c "CREATE DATABASE oob"
cat="postgresql:///oob?host=$sock&user=oob"
sql() { psql -X -tA "$cat" -c "$1"; }
jid() { sed -n 's/^{"id":\([0-9]*\).*/\1/p'; }
metric() { curl -s "$1/metrics" | sed -n "s/^$2 //p"; }

start_node() { # start_node NAME WORKERS: sets U to its URL (not in $(...):
	# pids must reach the caller, to stop the node)
	rm -f "$dir/$1.port"
	"$srv" --listen 127.0.0.1:0 --port-file "$dir/$1.port" --data "$dir/data" --catalog "$cat" \
		--node-id "$1" --workers "$2" --log-level warn >>"$dir/$1.log" 2>&1 &
	pids="$pids $!"
	for _ in $(seq 1 100); do
		[ -s "$dir/$1.port" ] && break
		sleep 0.1
	done
	U="http://127.0.0.1:$(cat "$dir/$1.port")"
}
stop_nodes() {
	kill $pids 2>/dev/null
	wait $pids 2>/dev/null
	pids=""
}
wait_all() { # wait_all URL: until no job is queued or running
	while [ "$(sql "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')")" != 0 ]; do
		sleep 0.05
	done
}
post_jobs() { # post_jobs URL TRACE_ID BIN_ID N
	for _ in $(seq 1 "$4"); do
		curl -s -o /dev/null -d "{\"trace\": $2, \"binaries\": [$3]}" "$1/api/v1/jobs"
	done
}

start_node n1 1
u1=$U
bin=$(curl -s -T "$elf" "$u1/api/v1/binaries?name=$(basename "$elf")" | jid)
big=$(curl -s -T "$trace" "$u1/api/v1/traces?name=big" | jid)
sm=$(curl -s -T "$small" "$u1/api/v1/traces?name=small" | jid)
[ -n "$bin" ] && [ -n "$big" ] && [ -n "$sm" ] || {
	echo "bench-scaleout: uploads failed"
	exit 0
}
if nm "$srv" 2>/dev/null | grep -q '__asan_init'; then
	echo "bench-scaleout: note: $srv is built with sanitizers; configure without them for real figures"
fi

# One worker's rate on the big trace.
post_jobs "$u1" "$big" "$bin" 1
wait_all
ins=$(metric "$u1" oobprof_job_instructions_total)
secs=$(metric "$u1" oobprof_job_seconds_total)
echo "bench-scaleout: one worker: $ins instructions in $secs s: $(echo "$ins $secs" | awk '{ printf "%.1f", $1 / $2 / 1e6 }') M instructions/s"
res=$(du -sb "$dir/data/results" | cut -f1)
echo "bench-scaleout: its results (profile, folded, events, index, lod): $res bytes, $(echo "$res $ins" | awk '{ printf "%.2f", $1 / $2 }') bytes an instruction"

# Storage per format: the same instructions converted.
for f in tracerv-bin tracerv-bin.lz4 oobt; do
	case $f in
	*.lz4) "$cli" convert --to tracerv-bin --lz4 "$trace" -o "$dir/conv" 2>/dev/null ;;
	*) "$cli" convert --to "$f" "$trace" -o "$dir/conv" 2>/dev/null ;;
	esac || {
		echo "bench-scaleout: format $f: convert failed"
		continue
	}
	sz=$(wc -c <"$dir/conv")
	echo "bench-scaleout: format $f: $sz bytes, $(echo "$sz $ins" | awk '{ printf "%.3f bytes an instruction, %.2f GB per G instructions", $1 / $2, $1 / $2 }')"
	rm -f "$dir/conv"
done

# The catalog's cost per job: 20 small jobs on 2 workers.
sleep 1
idle0=$(sql "SELECT xact_commit FROM pg_stat_database WHERE datname = 'oob'")
sleep 5
idle1=$(sql "SELECT xact_commit FROM pg_stat_database WHERE datname = 'oob'")
stop_nodes
start_node n1 2
u1=$U
x0=$(sql "SELECT xact_commit FROM pg_stat_database WHERE datname = 'oob'")
t0=$(date +%s.%N)
post_jobs "$u1" "$sm" "$bin" 20
wait_all
t1=$(date +%s.%N)
x1=$(sql "SELECT xact_commit FROM pg_stat_database WHERE datname = 'oob'")
echo "bench-scaleout: 20 jobs of $(basename "$small") on 1 node of 2 workers: $(echo "$t0 $t1" | awk '{ printf "%.2f s, %.0f ms a job", $2 - $1, ($2 - $1) * 50 }')"
echo "$idle0 $idle1 $x0 $x1 $t0 $t1" | awk '{ idle = ($2 - $1) / 5; printf "bench-scaleout: catalog transactions: %.1f a second for an idle node (polls, leases), %.1f a job beyond that\n", idle, (($4 - $3) - idle * ($6 - $5)) / 20 }'
sql "SELECT 'bench-scaleout: catalog rows a job: jobs ' || (SELECT COUNT(*) FROM jobs)::float / (SELECT COUNT(*) FROM jobs) || ', job_binaries ' || (SELECT COUNT(*) FROM job_binaries)::float / (SELECT COUNT(*) FROM jobs) || ', results ' || (SELECT COUNT(*) FROM results)::float / (SELECT COUNT(*) FROM jobs) || '; bytes a job (tables + indexes of jobs, job_binaries, results): ' || (pg_total_relation_size('jobs') + pg_total_relation_size('job_binaries') + pg_total_relation_size('results')) / (SELECT COUNT(*) FROM jobs)"

# Jobs/s of 1 node and of 3 nodes (2 workers each) on this machine.
for n in 1 3; do
	stop_nodes
	start_node n1 2
	u1=$U
	[ $n -eq 3 ] && start_node n2 2 && start_node n3 2
	t0=$(date +%s.%N)
	post_jobs "$u1" "$sm" "$bin" 30
	wait_all
	t1=$(date +%s.%N)
	echo "bench-scaleout: 30 small jobs, $n node(s) of 2 workers: $(echo "$t0 $t1" | awk '{ printf "%.1f jobs/s", 30 / ($2 - $1) }') ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
done
echo "bench-scaleout: jobs in the catalog: $(sql "SELECT COUNT(*) FROM jobs") (all done: $(sql "SELECT COUNT(*) FROM jobs WHERE state = 'done'"))"
