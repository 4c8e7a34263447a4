#!/bin/sh
# test_server_scaleout.sh: three oobprofd nodes on one PostgreSQL catalog
# (a cluster this test starts: tests/tools/pg-cluster.sh) and one data
# folder. 50 uploads and 50 jobs spread over the nodes: each job runs once,
# on some node, and its folded stacks equal those of the same program run
# by a single-node SQLite server; equal uploads share one blob. kill -9 of
# the node running a long job: the job's lease lapses and another node runs
# it to the result the single node gives. kill -9 of a node during an
# upload: every acknowledged upload hashes to its sha256, no blob is
# half-written, and the node's restart empties only its own tmp folder. A
# stream uploaded to one node is followed by a job on whichever node claims
# it and read back from a third; a cancel asked at one node stops the job
# on the node that runs it. /health and /metrics tell the nodes apart.
set -u
T=test_server_scaleout
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_scaleout inputs || exit 0
PROGS="fnptr inline longjmp mixed mutual recursion statics tailcall"
for p in $PROGS; do
	[ -s "$GEN/progs/$p.oobt" ] && [ -s "$GEN/progs/$p" ] || {
		skip all "generated program traces missing (tests/gen/progs/$p)"
		exit 0
	}
done
command -v psql >/dev/null 2>&1 || {
	skip all "psql not installed (apt-get install postgresql)"
	exit 0
}
# The cluster lives in /tmp: its owner (postgres, not root) must reach it.
PG=$(mktemp -d /tmp/oobprof-pg.XXXXXX)
chmod 711 "$PG"
SOCK=$(sh "$OOB_SRCDIR/tests/tools/pg-cluster.sh" start "$PG/c" 2>"$W/pg.err")
rc=$?
if [ $rc -eq 77 ]; then
	skip all "$(cat "$W/pg.err")"
	rm -rf "$PG"
	exit 0
elif [ $rc -ne 0 ]; then
	fail postgresql "cluster did not start: $(tail -n 3 "$W/pg.err")"
	rm -rf "$PG"
	exit 0
fi
psql -X -q "postgresql:///postgres?host=$SOCK&user=oob" -c "CREATE DATABASE oob"
CAT="postgresql:///oob?host=$SOCK&user=oob"
sql() { psql -X -tA "$CAT" -c "$1"; }

PIDS="" # "name:pid" of each node
node_start() { # node_start NAME: starts node NAME, sets its URL in U_<NAME>
	rm -f "$W/$1.port"
	"$OOBPROFD" --listen 127.0.0.1:0 --port-file "$W/$1.port" --data "$W/data" \
		--catalog "$CAT" --node-id "$1" --workers 2 --lease 3 --log-level info \
		>>"$W/$1.log" 2>&1 &
	eval "PID_$1=$!"
	for _i in $(seq 1 200); do
		[ -s "$W/$1.port" ] && break
		sleep 0.1
	done
	[ -s "$W/$1.port" ] || {
		fail "start $1" "$(tail -n 3 "$W/$1.log")"
		return 1
	}
	eval "U_$1=http://127.0.0.1:$(cat "$W/$1.port")"
}
node_stop() { # node_stop NAME SIGNAL: and waits
	eval "_p=\${PID_$1:-}"
	[ -n "$_p" ] || return 0
	kill "-$2" "$_p" 2>/dev/null
	wait "$_p" 2>/dev/null
	_rc=$?
	eval "PID_$1="
	return $_rc
}
url() { eval "echo \$U_$1"; }
cleanup() {
	for n in n1 n2 n3; do node_stop $n KILL; done
	srv_kill9
	sh "$OOB_SRCDIR/tests/tools/pg-cluster.sh" stop "$PG/c"
	rm -rf "$PG"
}
trap cleanup EXIT

for n in n1 n2 n3; do node_start $n || exit 0; done
NODES="n1 n2 n3"
nth() { echo "$NODES" | cut -d' ' -f$(($1 % 3 + 1)); }

# ---- the reference: one node on SQLite ----
srv_start "$W/ref" --workers 2 || {
	fail reference "server did not start"
	exit 0
}
REF=$SRV_URL
# Fields of the server's compact JSON without a Python start per call (a
# third of a second on a loaded machine, times hundreds): the top-level id
# comes first; state and sha256 appear once in a job or trace.
jid() { sed -n 's/^{"id":\([0-9]*\).*/\1/p' "$1"; }
jstate() { sed -n 's/^{"id":[0-9]*,"state":"\([a-z]*\)".*/\1/p' "$1"; }
# wait_at URL ID: waits until job ID leaves queued/running; prints its state.
wait_at() {
	for _i in $(seq 1 1500); do
		curl -s "$1/api/v1/jobs/$2" >"$W/wait.json"
		_s=$(jstate "$W/wait.json")
		case $_s in
		queued | running) sleep 0.1 ;;
		*)
			echo "$_s"
			return 0
			;;
		esac
	done
	echo "timeout"
}
for p in $PROGS; do
	curl -s --data-binary "@$GEN/progs/$p" "$SRV_URL/api/v1/binaries?name=$p" >"$W/rb.json"
	curl -s -T "$GEN/progs/$p.oobt" "$SRV_URL/api/v1/traces?name=$p" >"$W/rt.json"
	curl -s -d "{\"trace\": $(jid "$W/rt.json"), \"binaries\": [$(jid "$W/rb.json")]}" \
		"$SRV_URL/api/v1/jobs" >"$W/rj-$p.json"
done
for p in $PROGS; do
	id=$(jid "$W/rj-$p.json")
	[ "$(wait_at "$REF" "$id")" = done ] || fail "reference $p" "$(cat "$W/wait.json")"
	curl -s "$SRV_URL/api/v1/jobs/$id/folded" >"$W/ref-$p.folded"
done

# ---- 50 uploads and 50 jobs over three nodes ----
t0=$(date +%s.%N)
for p in $PROGS; do
	curl -s --data-binary "@$GEN/progs/$p" "$(url n1)/api/v1/binaries?name=$p" >"$W/b-$p.json"
done
i=0
while [ $i -lt 50 ]; do
	p=$(echo $PROGS | cut -d' ' -f$((i % 8 + 1)))
	curl -s -T "$GEN/progs/$p.oobt" "$(url "$(nth $i)")/api/v1/traces?name=$p-$i" >"$W/t-$i.json"
	i=$((i + 1))
done
i=0
while [ $i -lt 50 ]; do
	p=$(echo $PROGS | cut -d' ' -f$((i % 8 + 1)))
	curl -s -d "{\"trace\": $(jid "$W/t-$i.json"), \"binaries\": [$(jid "$W/b-$p.json")]}" \
		"$(url "$(nth $((i + 1)))")/api/v1/jobs" >"$W/j-$i.json"
	i=$((i + 1))
done
t2=$(date +%s.%N)
ok=0 bad=""
i=0
while [ $i -lt 50 ]; do
	p=$(echo $PROGS | cut -d' ' -f$((i % 8 + 1)))
	id=$(jid "$W/j-$i.json")
	at=$(url "$(nth $((i + 2)))") # read back from a third node
	st=$(wait_at "$at" "$id")
	curl -s "$at/api/v1/jobs/$id/folded" >"$W/f-$i.folded"
	if [ "$st" = done ] && cmp -s "$W/f-$i.folded" "$W/ref-$p.folded"; then
		ok=$((ok + 1))
	else
		bad="$bad $id($st)"
	fi
	i=$((i + 1))
done
t1=$(date +%s.%N)
[ $ok -eq 50 ] && pass "50 jobs over 3 nodes: all done, folded stacks equal to the single-node SQLite run ($(echo "$t1 - $t0" | bc) s with the uploads)" ||
	fail "50 jobs" "$ok of 50 equal; wrong:$bad"
runs=$(sql "SELECT COUNT(*), SUM(runs), MIN(runs), MAX(runs), COUNT(DISTINCT lease_node) FROM jobs")
span=$(sql "SELECT MAX(finished) - MIN(created) || ' s, ' || ROUND(AVG(finished - started), 2) || ' s per job' FROM jobs")
echo "# jobs: created to last finished $span; uploads and job posts took $(echo "$t2 - $t0" | bc) s"
per=$(sql "SELECT lease_node || '=' || COUNT(*) FROM jobs GROUP BY lease_node ORDER BY 1" | tr '\n' ' ')
case $runs in
50\|50\|1\|1\|[23]) pass "each job ran once (runs: count|sum|min|max|nodes = $runs; per node: $per)" ;;
*) fail "each job once" "runs $runs; per node $per" ;;
esac
nblobs=$(find "$W/data/blobs" -type f | wc -l | tr -d ' ')
[ "$nblobs" -eq 16 ] && pass "50 uploads of 8 traces + 8 binaries: 16 blobs (equal content stored once)" ||
	fail "dedup" "$nblobs blobs"

# ---- /health and /metrics ----
curl -s "$(url n2)/api/v1/health" >"$W/health.json"
h=$(jq_py "$W/health.json" 'j["node"], j["catalog"].split("@")[0], j["shared"], j["store"] == "'"$(cd "$W/data" && pwd -P)"'"')
[ "$h" = "('n2', 'postgresql:oob', True, True)" ] && pass "health names node, catalog and store ($h)" ||
	fail health "$h: $(cat "$W/health.json")"
curl -s "$(url n1)/metrics" >"$W/metrics.txt"
done_n=$(sed -n 's/^oobprof_jobs{state="done"} //p' "$W/metrics.txt")
up_n=$(sed -n 's/^oobprof_uploads_total //p' "$W/metrics.txt")
ren=$(sed -n 's/^oobprof_lease_renewals_total //p' "$W/metrics.txt")
n1_jobs=$(sql "SELECT COUNT(*) FROM jobs WHERE lease_node = 'n1'")
n1_run=$(sed -n 's/^oobprof_jobs_run_total //p' "$W/metrics.txt")
n1_ins=$(sed -n 's/^oobprof_job_instructions_total //p' "$W/metrics.txt")
up_b=$(sed -n 's/^oobprof_upload_bytes_total //p' "$W/metrics.txt")
# n1 received uploads 0, 3, 6, ... 48 (17) and the 8 binaries: their bytes
# by wc, its jobs' instructions by the catalog.
want_b=$(for p in $PROGS; do wc -c <"$GEN/progs/$p"; done | awk '{s += $1} END {print s}')
i=0
while [ $i -lt 50 ]; do
	p=$(echo $PROGS | cut -d' ' -f$((i % 8 + 1)))
	want_b=$((want_b + $(wc -c <"$GEN/progs/$p.oobt")))
	i=$((i + 3))
done
want_ins=$(sql "SELECT SUM(insns) FROM jobs WHERE lease_node = 'n1'")
if [ "$done_n" = 50 ] && [ "$up_n" = 25 ] && [ "$up_b" = "$want_b" ] && [ "$n1_run" = "$n1_jobs" ] &&
	[ "$n1_ins" = "$want_ins" ] && [ -n "$ren" ] &&
	grep -q '^# TYPE oobprof_job_seconds_total counter$' "$W/metrics.txt"; then
	pass "metrics at n1: 50 done, 25 uploads of $up_b bytes (wc), $n1_run jobs and $n1_ins instructions as the catalog says, $ren lease renewals"
else
	fail metrics "done=$done_n uploads=$up_n bytes=$up_b (wc $want_b) run=$n1_run (catalog $n1_jobs) insns=$n1_ins (catalog $want_ins) renewals=$ren"
fi

# ---- kill -9 of the node running a long job ----
LONG=$W/spike-full.log
LELF=$SHARED/fixtures/spike/init
if [ -s "$SHARED/fixtures/spike/linux-init.commits.log.xz" ]; then
	xz -dc "$SHARED/fixtures/spike/linux-init.commits.log.xz" >"$LONG"
	curl -s --data-binary "@$LELF" "$REF/api/v1/binaries?name=init" >"$W/rlb.json"
	curl -s -T "$LONG" "$REF/api/v1/traces?name=long" >"$W/rlt.json"
	curl -s -d "{\"trace\": $(jid "$W/rlt.json"), \"binaries\": [$(jid "$W/rlb.json")]}" \
		"$REF/api/v1/jobs" >"$W/rlj.json"
	curl -s --data-binary "@$LELF" "$(url n1)/api/v1/binaries?name=init" >"$W/lb.json"
	curl -s -T "$LONG" "$(url n2)/api/v1/traces?name=long" >"$W/lt.json"
	curl -s -d "{\"trace\": $(jid "$W/lt.json"), \"binaries\": [$(jid "$W/lb.json")]}" \
		"$(url n3)/api/v1/jobs" >"$W/lj.json"
	LJ=$(jid "$W/lj.json")
	victim=""
	for _i in $(seq 1 200); do
		victim=$(sql "SELECT lease_node FROM jobs WHERE id = $LJ AND state = 'running'")
		[ -n "$victim" ] && break
		sleep 0.05
	done
	node_stop "$victim" KILL
	tk=$(date +%s.%N)
	NODES=$(echo "n1 n2 n3" | tr ' ' '\n' | grep -vx "$victim" | tr '\n' ' ')
	st=$(wait_at "$(url "$(nth 0)")" "$LJ")
	td=$(date +%s.%N)
	curl -s "$(url "$(nth 0)")/api/v1/jobs/$LJ/folded" >"$W/long.folded"
	after=$(sql "SELECT lease_node || ' runs=' || runs || ' crashes=' || crashes FROM jobs WHERE id = $LJ")
	rid=$(jid "$W/rlj.json")
	rst=$(wait_at "$REF" "$rid")
	curl -s "$REF/api/v1/jobs/$rid/folded" >"$W/long-ref.folded"
	if [ "$st" = done ] && [ "$rst" = done ] && [ -n "$victim" ] &&
		! echo "$after" | grep -q "^$victim " && echo "$after" | grep -q "runs=2 crashes=1" &&
		cmp -s "$W/long.folded" "$W/long-ref.folded"; then
		pass "node $victim killed mid-job: job $LJ ran again on another node ($after), done $(echo "$td - $tk" | bc) s after the kill, folded stacks equal to the single node's ($(wc -l <"$W/long.folded" | tr -d ' ') lines)"
	else
		fail "kill -9 mid-job" "victim '$victim', state $st (ref $rst), $after, $(cmp "$W/long.folded" "$W/long-ref.folded" 2>&1)"
	fi
	node_start "$victim" || exit 0
	NODES="n1 n2 n3"
else
	skip "kill -9 mid-job" "no Spike fixture for a long job"
fi
# ---- a cancel asked at one node for the job another node runs ----
# Jobs poll their cancel flag every 2^24 instructions: this one has 38 M.
if env -i qemu-riscv64 -plugin "$GEN/progs/oobtrace.so,out=$W/mixed100.oobt" "$GEN/progs/mixed" 100 \
	>/dev/null 2>&1; then
	curl -s -T "$W/mixed100.oobt" "$(url n2)/api/v1/traces?name=mixed100" >"$W/m100.json"
	curl -s -d "{\"trace\": $(jid "$W/m100.json"), \"binaries\": [$(jid "$W/b-mixed.json")]}" \
		"$(url n1)/api/v1/jobs" >"$W/cj.json"
	CJ=$(jid "$W/cj.json")
	runner=""
	for _i in $(seq 1 200); do
		runner=$(sql "SELECT lease_node FROM jobs WHERE id = $CJ AND state = 'running'")
		[ -n "$runner" ] && break
		sleep 0.05
	done
	other=$(echo "n1 n2 n3" | tr ' ' '\n' | grep -vx "$runner" | head -n 1)
	dst=$(http DELETE "$(url "$other")/api/v1/jobs/$CJ" "$W/cdel.json")
	st=$(wait_at "$(url "$other")" "$CJ")
	if [ "$dst" = 202 ] && [ "$st" = cancelled ] && grep -q "job $CJ: cancelled at another node" "$W/$runner.log"; then
		pass "DELETE at $other of job $CJ running on $runner: 202, then cancelled there"
	else
		fail "cancel across nodes" "runner '$runner', DELETE at $other: $dst $(cat "$W/cdel.json"), state $st"
	fi
else
	skip "cancel across nodes" "qemu-riscv64 could not trace a long run of mixed"
fi

srv_stop || fail "reference server" "exit status $? (sanitizer report?): $(tail -n 5 "$W/ref.log")"

# ---- kill -9 of a node during an upload ----
BIG=$GEN/progs/mixed-pie.oobt # content not stored yet
python3 - "$(cat "$W/n3.port")" >"$W/slow.log" 2>&1 <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /api/v1/traces?name=halfway HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n")
try:
    for i in range(200):
        s.sendall(b"core   0: 3 0x0000000080000000 (0x00000013)\n" * 1000)
        time.sleep(0.05)
except OSError:
    pass
PY
slow=$!
# Meanwhile acknowledged uploads at the other nodes.
curl -s -T "$BIG" "$(url n1)/api/v1/traces?name=big" >"$W/big.json"
for _i in $(seq 1 60); do
	f=$(ls "$W/data/tmp/node-n3" 2>/dev/null | head -n 1)
	[ -n "$f" ] && [ "$(stat -c %s "$W/data/tmp/node-n3/$f")" -gt 200000 ] && break
	sleep 0.1
done
partial=$(ls "$W/data/tmp/node-n3" 2>/dev/null)
node_stop n3 KILL
kill $slow 2>/dev/null
wait $slow 2>/dev/null
# Every trace and binary the catalog names hashes to its sha256; no blob
# file differs from its content address; nothing of "halfway" is stored.
check=$(sql "SELECT blob || ' ' || sha256 FROM traces WHERE state = 'ready' UNION ALL SELECT blob || ' ' || sha256 FROM binaries" |
	while read -r blob sha; do
		[ "$(sha256sum "$W/data/$blob" | cut -d' ' -f1)" = "$sha" ] || echo "bad:$blob"
	done)
wrong=$(find "$W/data/blobs/sha256" -type f | while read -r f; do
	[ "$(sha256sum "$f" | cut -d' ' -f1)" = "$(basename "$(dirname "$f")")$(basename "$f")" ] || echo "$f"
done)
acked=$(sql "SELECT COUNT(*) FROM traces WHERE state = 'ready'")
halfway=$(sql "SELECT COUNT(*) FROM traces WHERE name = 'halfway'")
if [ -n "$partial" ] && [ -z "$check" ] && [ -z "$wrong" ] && [ "$halfway" = 0 ] &&
	[ "$(jq_py "$W/big.json" 'j["state"]')" = ready ]; then
	pass "node n3 killed mid-upload ($partial in its tmp): $acked acknowledged traces and every binary hash to their sha256, no blob half-written, the cut upload not registered"
else
	fail "kill -9 mid-upload" "partial '$partial'; bad: $check; wrong blobs: $wrong; halfway rows $halfway; big: $(cat "$W/big.json")"
fi
mkdir -p "$W/data/tmp/node-n1"
touch "$W/data/tmp/node-n1/upload-of-n1" # another node's body in flight
node_start n3 || exit 0
if [ -z "$(ls "$W/data/tmp/node-n3")" ] && [ -e "$W/data/tmp/node-n1/upload-of-n1" ]; then
	pass "n3's restart emptied its own tmp folder, not n1's"
else
	fail "restart cleaning" "n3: $(ls "$W/data/tmp/node-n3"); n1: $(ls "$W/data/tmp/node-n1")"
fi
rm -f "$W/data/tmp/node-n1/upload-of-n1"

# ---- a stream uploaded to n1, its job on a node that claims it, read at n3 ----
P=mixed
size=$(wc -c <"$GEN/progs/$P.oobt" | tr -d ' ')
third=$((size / 3))
{
	head -c "$third" "$GEN/progs/$P.oobt"
	sleep 3
	tail -c +"$((third + 1))" "$GEN/progs/$P.oobt"
} | curl -s -T - "$(url n1)/api/v1/traces?name=live&stream=1" >"$W/stream.json" &
feeder=$!
SID=""
for _i in $(seq 1 50); do
	SID=$(sql "SELECT id FROM traces WHERE name = 'live'")
	[ -n "$SID" ] && break
	sleep 0.1
done
curl -s -d "{\"trace\": $SID, \"binaries\": [$(jid "$W/b-$P.json")]}" "$(url n2)/api/v1/jobs" >"$W/sj.json"
SJ=$(jid "$W/sj.json")
sleep 1.5
curl -s "$(url n3)/api/v1/jobs/$SJ" >"$W/sj1.json"
curl -s "$(url n3)/api/v1/traces/$SID" >"$W/st1.json"
fst=$(http GET "$(url n3)/api/v1/jobs/$SJ/flamegraph" "$W/sf1.json")
who=$(sql "SELECT lease_node FROM jobs WHERE id = $SJ")
if [ "$(jq_py "$W/sj1.json" 'j["state"]')" = running ] && [ "$(jq_py "$W/st1.json" 'j["state"]')" = streaming ] &&
	{ [ "$fst" = 409 ] || [ "$(jq_py "$W/sj1.json" 'str(j.get("partial"))')" = True ]; }; then
	pass "stream at n1 followed by job $SJ on $who while it streams; n3 serves its state (flame graph: $fst until the first snapshot)"
else
	fail "stream across nodes" "job $(cat "$W/sj1.json"); trace $(cat "$W/st1.json"); flamegraph $fst"
fi
wait $feeder
st=$(wait_at "$(url n3)" "$SJ")
curl -s "$(url n3)/api/v1/jobs/$SJ/folded" >"$W/stream.folded"
if [ "$st" = done ] && cmp -s "$W/stream.folded" "$W/ref-$P.folded" &&
	[ "$(jq_py "$W/stream.json" 'j["sha256"]')" = "$(sha256sum "$GEN/progs/$P.oobt" | cut -d' ' -f1)" ]; then
	pass "the streamed job's result, read at n3, equals the single node's"
else
	fail "stream result" "state $st; $(cmp "$W/stream.folded" "$W/ref-$P.folded" 2>&1); $(cat "$W/stream.json")"
fi

# ---- clean stops: no sanitizer report ----
for n in n1 n2 n3; do
	node_stop $n TERM || fail "stop $n" "exit status $?: $(tail -n 5 "$W/$n.log")"
done
left=$(sql "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')")
[ "$left" = 0 ] && pass "every job ended; nodes stopped cleanly" || fail "left over" "$left jobs queued or running"
