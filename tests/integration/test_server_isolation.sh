#!/bin/sh
# test_server_isolation.sh: a job never takes the server down, and no job
# crash-loops it (reliability issue, item 1).
# - The 88-byte trace that used to crash oobprofd at every start (a pc of
#   0xffffffffffffffff, the hash map's empty-slot key) is an ordinary job.
# - Each job runs in a process of its own: a worker killed by SIGSEGV fails
#   its job at the second crash (run once more after the first), while the
#   server keeps answering and runs the next job.
# - A job left "running" by a server that died counts a crash at the next
#   start; at the second it fails instead of running again.
set -u
T=test_server_isolation
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_isolation || exit 0
# The SIGSEGV sent below must kill like a crash does, not be reported and
# turned into an exit status by AddressSanitizer's handler.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:handle_segv=0"

srv_start "$W/data" --workers 1 || {
	fail start "server did not start"
	exit 0
}

# ---- all-ones pcs: spike and tracerv-text (40-bit, sign-extended) ----
printf 'core   0: 3 0x0000000080000000 (0x00000013)\ncore   0: 3 0xffffffffffffffff (0x00000013)\n' >"$W/ones.spike"
printf 'Cycle: 100 I0: 0000008000000000\nCycle: 101 I0: 000000ffffffffff\nCycle: 102 I0: 000000ffffffffff\n' >"$W/ones.tracerv"
for f in ones.spike:2 ones.tracerv:3; do
	if "$OOB_BUILDDIR/oobprof" stats "$W/${f%:*}" >"$W/cli.txt" 2>&1 &&
		grep -qx "instructions: ${f#*:}" "$W/cli.txt"; then
		pass "oobprof stats ${f%:*}: instructions: ${f#*:}"
	else
		fail "oobprof stats ${f%:*}" "$(head -c 300 "$W/cli.txt")"
	fi
	name=${f%:*} n=${f#*:}
	id=$(job_of "$W/$name")
	s=$(wait_job "$id" 60)
	insns=$(jq_py "$W/job.json" '(j.get("summary") or {}).get("instructions")')
	alive=$(http GET "$SRV_URL/api/v1/health" "$W/health.json")
	if [ "$s" = done ] && [ "$insns" = "$n" ] && [ "$alive" = 200 ]; then
		pass "$name ($(wc -c <"$W/$name" | tr -d ' ') bytes, pc 0xffffffffffffffff): done, $insns instructions, server up"
	else
		fail "$name" "state $s, instructions $insns, health $alive: $(head -c 300 "$W/job.json")"
	fi
done

# ---- a worker that crashes: SIGSEGV to the job's process, twice ----
# A stream kept open keeps its job running until we are done with it.
mkfifo "$W/feed"
curl -s -T - "$SRV_URL/api/v1/traces?name=held&stream=1" <"$W/feed" >"$W/held.json" &
feeder=$!
exec 3>"$W/feed"
printf 'core   0: 3 0x0000000080000000 (0x00000013)\n' >&3
for i in $(seq 1 100); do
	curl -s "$SRV_URL/api/v1/traces?name=held" >"$W/find.json"
	HELD=$(jq_py "$W/find.json" '(j["traces"] or [{}])[0].get("id", "")')
	[ -n "$HELD" ] && break
	sleep 0.1
done
curl -s -d "{\"trace\": $HELD}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
JOB=$(jq_py "$W/job0.json" 'j["id"]')
# child_of [NOT]: the pid of the job's own process once it runs (not NOT:
# a process that crashed can take a moment to die).
child_of() {
	for _i in $(seq 1 400); do
		_p=$(pgrep -f -- "--run-job $JOB --data" | grep -vx "${1:-0}" | head -n 1)
		[ -n "$_p" ] && {
			echo "$_p"
			return 0
		}
		sleep 0.05
	done
	return 1
}
first=$(child_of) && kill -SEGV "$first"
second=$(child_of "$first")
if [ -n "$first" ] && [ -n "$second" ] && [ "$first" != "$second" ]; then
	pass "a crashed job process ($first, SIGSEGV) is started again ($second)"
else
	fail "restart after one crash" "first '$first', second '$second'"
fi
[ -n "$second" ] && kill -SEGV "$second"
s=$(wait_job "$JOB" 30)
msg=$(jq_py "$W/job.json" 'j.get("error", {}).get("message", "")')
crashes=$(jq_py "$W/job.json" 'j.get("crashes")')
case "$s:$crashes:$msg" in
failed:2:*"crashed its process 2 times (last: signal "*)
	pass "the second crash fails the job: $msg" ;;
*) fail "failed after two crashes" "state $s, crashes $crashes: $msg" ;;
esac
exec 3>&-
wait "$feeder" 2>/dev/null
id=$(job_of "$W/ones.spike")
s=$(wait_job "$id" 60)
[ "$s" = done ] && kill -0 "$SRV_PID" 2>/dev/null &&
	pass "the server survived both crashes and runs the next job ($s)" ||
	fail "after the crashes" "server pid $SRV_PID, next job $s"

# ---- the server itself dies while a job runs: a crash counted at start ----
# left_running ID: what a kill -9 during job ID's run leaves in the catalog.
left_running() {
	python3 - "$W/data/catalog.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE jobs SET state = 'running' WHERE id = ?", (int(sys.argv[2]),))
db.commit()
PY
}
srv_stop || fail "clean shutdown" "exit status $?: $(tail -n 5 "$W/data.log")"
left_running "$id"
srv_start "$W/data" --workers 1 || {
	fail restart "server did not restart"
	exit 0
}
s=$(wait_job "$id" 60)
crashes=$(jq_py "$W/job.json" 'j.get("crashes")')
[ "$s" = done ] && [ "$crashes" = 1 ] && pass "left running by a dead server: run again (crashes 1)" ||
	fail "first server crash" "state $s, crashes $crashes"
srv_kill9
left_running "$id"
srv_start "$W/data" --workers 1 || {
	fail restart "server did not restart"
	exit 0
}
s=$(wait_job "$id" 60)
msg=$(jq_py "$W/job.json" 'j.get("error", {}).get("message", "")')
runs=$(jq_py "$W/job.json" 'j.get("runs")')
case "$s:$runs:$msg" in
failed:2:*"crashed its process 2 times"*"server stopped"*)
	pass "left running by a second dead server: failed, not run again (runs $runs): $msg" ;;
*) fail "second server crash" "state $s, runs $runs: $msg" ;;
esac
srv_stop || fail "clean shutdown" "exit status $?: $(tail -n 5 "$W/data.log")"
