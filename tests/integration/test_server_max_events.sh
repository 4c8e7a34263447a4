#!/bin/sh
# test_server_max_events.sh: oobprofd --max-events N bounds the stack events
# a job keeps (its events.evl). With a bound the run passes, the job still
# ends done with its profile (flame graph, top), its log is capped at exactly
# N events, and what needs the whole log is refused with 413 and the figures
# (the timeline); without the bound the same job keeps every event (more
# than N, read from its events.evl header) and its timeline answers.
set -u
T=test_server_max_events
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
W=$OOB_BUILDDIR/tests/out/server_max_events
rm -rf "$W"
mkdir -p "$W"
N=1000
if [ ! -x "$OOBPROFD" ]; then
	skip all "oobprofd not built"
	exit 0
fi
if ! pick_inputs; then
	skip all "no real trace: neither tests/gen/progs nor the Spike fixture"
	exit 0
fi

# run_job DATA FLAGS...: a server, one job of TRACE with ELF; sets JOB, leaves
# the server running
run_job() {
	_d=$1
	shift
	srv_start "$_d" "$@" || return 1
	curl -s -X POST "$SRV_URL/api/v1/binaries?name=$(basename "$ELF")" --data-binary "@$ELF" >"$W/bin.json"
	curl -s -X POST "$SRV_URL/api/v1/traces?name=run" --data-binary "@$TRACE" >"$W/tr.json"
	curl -s -X POST "$SRV_URL/api/v1/jobs" -d "{\"trace\": $(jq_py "$W/tr.json" 'j["id"]'), \
\"binaries\": [$(jq_py "$W/bin.json" 'j["id"]')]}" >"$W/job0.json"
	JOB=$(jq_py "$W/job0.json" 'j["id"]')
	[ "$(wait_job "$JOB" 300)" = "done" ]
}

if ! run_job "$W/free"; then
	fail "uncapped job" "$(head -c 300 "$W/job.json")"
	srv_stop
	exit 0
fi
st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/timeline" "$W/free.timeline")
http GET "$SRV_URL/api/v1/jobs/$JOB/top?limit=1000000" "$W/free.top" >/dev/null
# the uncapped log's event count, from its header (docs: evlog.h)
seen=$(python3 -c 'import struct, sys
b = open(sys.argv[1], "rb").read(64)
print(struct.unpack_from("<Q", b, 16)[0])' "$W/free/results/$JOB/events.evl" 2>/dev/null)
srv_stop || fail "uncapped server" "exited non-zero: $(tail -n 3 "$W/free.log")"
if [ "$st" = 200 ] && [ -n "$seen" ] && [ "$seen" -gt "$N" ]; then
	pass "default bound: the timeline answers (200); the log keeps all $seen events"
else
	fail "default bound" "timeline $st, events '$seen' (must be over $N)"
fi

if ! run_job "$W/capped" --max-events "$N"; then
	fail "capped job" "$(head -c 300 "$W/job.json")"
	srv_stop
	exit 0
fi
st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/timeline" "$W/capped.timeline")
msg=$(jq_py "$W/capped.timeline" 'j["error"]["message"]' 2>/dev/null)
want="capped at $N events (the run had more)"
case $msg in
*"$want"*) ok=1 ;;
*) ok=0 ;;
esac
if [ "$st" = 413 ] && [ $ok = 1 ]; then
	pass "--max-events $N: the timeline is refused, 413: $msg"
else
	fail "--max-events $N: timeline" "status $st, message '$msg' (want 413 and '$want')"
fi
st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/top?limit=1000000" "$W/capped.top")
if [ "$st" = 200 ] && python3 - "$W/free.top" "$W/capped.top" <<'PY'; then
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
strip = lambda j: [(f["name"], f["calls"], f["self_instructions"], f["total_instructions"]) for f in j["functions"]]
sys.exit(0 if strip(a) == strip(b) and a["functions"] else 1)
PY
	pass "--max-events $N: the profile is whole (/top equals the uncapped job's)"
else
	fail "--max-events $N: /top" "status $st, or it differs from the uncapped job's"
fi
grep -q "more than $N stack events (--max-events)" "$W/capped.log" &&
	pass "--max-events $N: the job's log says so" ||
	fail "--max-events $N: warning" "no 'more than $N stack events' in the server's log"
srv_stop || fail "capped server" "exited non-zero: $(tail -n 3 "$W/capped.log")"
