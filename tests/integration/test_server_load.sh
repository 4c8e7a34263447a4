#!/bin/sh
# test_server_load.sh: a bounded load test on loopback. wrk reads a finished
# job's flame graph with 64 connections for 5 seconds (it stops by itself);
# every response must be a 2xx and no socket may fail. Prints requests/s.
set -u
T=test_server_load
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
if ! command -v wrk >/dev/null 2>&1; then
	skip all "wrk not installed"
	exit 0
fi
begin_test server_load inputs || exit 0
srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}
curl -s --data-binary "@$ELF" "$SRV_URL/api/v1/binaries?name=prog" >"$W/bin.json"
curl -s -T "$TRACE" "$SRV_URL/api/v1/traces?name=t" >"$W/tr.json"
curl -s -d "{\"trace\": $(jq_py "$W/tr.json" 'j["id"]'), \"binaries\": [$(jq_py "$W/bin.json" 'j["id"]')]}" \
	"$SRV_URL/api/v1/jobs" >"$W/job0.json"
JOB=$(jq_py "$W/job0.json" 'j["id"]')
[ "$(wait_job "$JOB" 300)" = done ] || {
	fail job "$(cat "$W/job.json")"
	exit 0
}
URL="$SRV_URL/api/v1/jobs/$JOB/flamegraph?max_nodes=500"
bytes=$(curl -s "$URL" | wc -c | tr -d ' ')
timeout 30 wrk -t2 -c64 -d5s --latency "$URL" >"$W/wrk.txt" 2>&1
rc=$?
rps=$(sed -n 's/^Requests\/sec: *//p' "$W/wrk.txt")
total=$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' "$W/wrk.txt")
non2xx=$(sed -n 's/^ *Non-2xx or 3xx responses: *//p' "$W/wrk.txt")
sockerr=$(sed -n 's/^ *Socket errors: *//p' "$W/wrk.txt")
p99=$(sed -n 's/^ *99% *//p' "$W/wrk.txt")
if [ $rc -eq 0 ] && [ -n "$rps" ] && [ "${total:-0}" -gt 0 ] && [ -z "$non2xx" ] && [ -z "$sockerr" ]; then
	pass "wrk 64 connections 5 s on a $bytes-byte flame graph: $total requests, 0 errors, $rps requests/s, p99 $p99"
else
	fail "wrk" "rc $rc, non-2xx ${non2xx:-0}, socket errors ${sockerr:-none}: $(tr '\n' ' ' <"$W/wrk.txt" | head -c 400)"
fi
st=$(http GET "$SRV_URL/api/v1/health" "$W/h")
[ "$st" = 200 ] && pass "still serving after the load" || fail "after load" "health $st"
srv_stop || fail "clean shutdown" "exit status $?: $(tail -n 5 "$W/data.log")"
