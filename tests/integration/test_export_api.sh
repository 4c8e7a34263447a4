#!/bin/sh
# test_export_api.sh: GET /api/v1/jobs/{id}/export/{speedscope,perfetto,perfetto-pb,pprof,
# folded,svg} on the real oobprofd with a real trace: each export byte-for-byte
# the CLI's (`oobprof export` on the same files) and read back by the
# standalone checker against the server's own /top; the stack events written
# by the job itself (the exports only read them: the file never changes);
# refusals with the documented statuses; a damaged log refused, not trusted;
# a deleted job's files gone.
set -u
T=test_export_api
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
W=$OOB_BUILDDIR/tests/out/export_api
rm -rf "$W"
mkdir -p "$W"
CLI=$OOB_BUILDDIR/oobprof
CHECK="python3 $OOB_SRCDIR/tests/tools/export-check.py"
if [ ! -x "$OOBPROFD" ] || [ ! -x "$CLI" ]; then
	skip all "oobprofd or oobprof not built"
	exit 0
fi
if ! pick_inputs; then
	skip all "no real trace: neither tests/gen/progs nor the Spike fixture"
	exit 0
fi
srv_start "$W/data" || {
	fail start "server did not start"
	exit 0
}

# The binary is uploaded under its file name, so that frames name it as the
# CLI does; the trace's name becomes the profile's name.
NAME=run-1
curl -s -X POST "$SRV_URL/api/v1/binaries?name=$(basename "$ELF")" --data-binary "@$ELF" >"$W/bin.json"
curl -s -X POST "$SRV_URL/api/v1/traces?name=$NAME" --data-binary "@$TRACE" >"$W/tr.json"
BIN=$(jq_py "$W/bin.json" 'j["id"]')
TR=$(jq_py "$W/tr.json" 'j["id"]')
curl -s -X POST "$SRV_URL/api/v1/jobs" -d "{\"trace\": $TR, \"binaries\": [$BIN]}" >"$W/job.json"
JOB=$(jq_py "$W/job.json" 'j["id"]')
state=$(wait_job "$JOB" 120)
if [ "$state" != done ]; then
	fail job "job $JOB ended $state: $(cat "$W/job.json")"
	srv_stop
	exit 0
fi
curl -s "$SRV_URL/api/v1/jobs/$JOB/top?limit=1000000" >"$W/top.json"

# ---- each export: the CLI's bytes, and right by the standalone checker ----
for fmt in speedscope perfetto perfetto-pb pprof folded svg; do
	st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/export/$fmt" "$W/api.$fmt")
	$CLI export --to "$fmt" --name "$NAME" --elf "$ELF" "$TRACE" -o "$W/cli.$fmt" 2>"$W/cli.$fmt.err"
	if [ "$st" = 200 ] && cmp -s "$W/api.$fmt" "$W/cli.$fmt"; then
		pass "$fmt: 200, the same bytes as oobprof export ($(wc -c <"$W/api.$fmt") bytes)"
	else
		fail "$fmt" "status $st; differs from the CLI's: $(cmp "$W/api.$fmt" "$W/cli.$fmt" 2>&1 | head -c 200)"
	fi
	[ $fmt = svg ] && continue # its numbers: test_cli_flamegraph
	extra=
	[ $fmt = perfetto-pb ] && extra="--json $W/api.perfetto"
	# shellcheck disable=SC2086
	if $CHECK "$fmt" "$W/api.$fmt" "$W/top.json" instructions $extra >"$W/check.$fmt" 2>&1; then
		pass "$fmt: totals equal the server's /top ($(cat "$W/check.$fmt"))"
	else
		fail "$fmt: totals" "$(head -c 500 "$W/check.$fmt")"
	fi
done

# ---- the stack events are the job's, written once by its worker ----
EVL=$W/data/results/$JOB/events.evl
kept=$(jq_py "$W/job.json" 'j.get("stack_events_bytes")')
stamp() { stat -c '%i %s %Y' "$EVL" 2>/dev/null; }
st1=$(stamp)
cp "$EVL" "$W/events.evl.orig" 2>/dev/null
http GET "$SRV_URL/api/v1/jobs/$JOB/export/perfetto?min_duration=500" "$W/p500" >/dev/null
http GET "$SRV_URL/api/v1/jobs/$JOB/export/speedscope" "$W/s2" >/dev/null
if [ -s "$EVL" ] && [ "$kept" = "$(stat -c %s "$EVL")" ] && [ "$(stamp)" = "$st1" ] &&
	cmp -s "$W/s2" "$W/api.speedscope" && ! grep -q "reconstructing" "$W/data.log"; then
	pass "the job wrote results/$JOB/events.evl ($kept bytes, as the job says); exports only read it"
else
	fail "kept events" "job says $kept bytes; $(ls -l "$W/data/results/$JOB" | tr '\n' ' '); $(grep reconstructing "$W/data.log" | head -2)"
fi
if $CHECK perfetto "$W/p500" "$W/top.json" instructions --min-ns 500 >"$W/check.p500" 2>&1; then
	pass "perfetto min_duration=500: $(cat "$W/check.p500")"
else
	fail "perfetto min_duration" "$(head -c 300 "$W/check.p500")"
fi

# A damaged log is not trusted: the export is refused, saying so (running
# the reconstruction again is the worker's, for a job submitted again).
printf 'OOBEVL1\000garbage' >"$EVL"
st=$(http GET "$SRV_URL/api/v1/jobs/$JOB/export/speedscope" "$W/s3")
msg=$(jq_py "$W/s3" 'j["error"]["message"]' 2>/dev/null)
case "$st $msg" in
"500 job $JOB: its stack events are unreadable"*"not an oobprof event log"*"submit the job again")
	pass "a damaged event log is refused (500: $msg)" ;;
*) fail "damaged log" "status $st: $(head -c 300 "$W/s3")" ;;
esac
cp "$W/events.evl.orig" "$EVL"

# ---- headers ----
curl -s -D "$W/h" -o /dev/null "$SRV_URL/api/v1/jobs/$JOB/export/perfetto?download=1"
disp=$(tr -d '\r' <"$W/h" | sed -n 's/^Content-Disposition: //Ip')
ctype=$(tr -d '\r' <"$W/h" | sed -n 's/^Content-Type: //Ip')
case $disp in
*"filename=\"$NAME-job$JOB.trace.json\"") pass "download: $disp ($ctype), not *.chrome.json" ;;
*) fail "download header" "Content-Disposition: $disp" ;;
esac

curl -s -D "$W/h" -o /dev/null "$SRV_URL/api/v1/jobs/$JOB/export/perfetto-pb?download=1"
disp=$(tr -d '\r' <"$W/h" | sed -n 's/^Content-Disposition: //Ip')
ctype=$(tr -d '\r' <"$W/h" | sed -n 's/^Content-Type: //Ip')
case "$disp $ctype" in
*"filename=\"$NAME-job$JOB.pftrace.gz\" application/gzip") pass "perfetto-pb download: $disp ($ctype)" ;;
*) fail "perfetto-pb download header" "Content-Disposition: $disp, Content-Type: $ctype" ;;
esac
http GET "$SRV_URL/api/v1/jobs/$JOB/export/perfetto-json" "$W/api.pjson" >/dev/null
if cmp -s "$W/api.pjson" "$W/api.perfetto"; then
	pass "perfetto-json is perfetto (the JSON)"
else
	fail "perfetto-json" "differs from perfetto: $(head -c 200 "$W/api.pjson")"
fi

# ---- speedscope's sampled fallback says so: a header and the profile's name ----
curl -s -D "$W/h" -o "$W/fb.json" "$SRV_URL/api/v1/jobs/$JOB/export/speedscope?max_events=10"
fb=$(tr -d '\r' <"$W/h" | sed -n 's/^X-Oobprof-Fallback: //Ip')
curl -s -D "$W/h2" -o /dev/null "$SRV_URL/api/v1/jobs/$JOB/export/speedscope"
if [ "$fb" = sampled ] && grep -q '"name":"[^"]*(sampled: [0-9]* stack events > max 10)"' "$W/fb.json" &&
	! grep -qi '^X-Oobprof-Fallback' "$W/h2"; then
	pass "speedscope over max_events: X-Oobprof-Fallback: $fb, and the name says why"
else
	fail "speedscope fallback" "header '$fb', $(head -c 200 "$W/fb.json")"
fi

# ---- refusals ----
expect() { # LABEL STATUS CODE PATH
	st=$(http GET "$SRV_URL$4" "$W/err.json")
	code=$(jq_py "$W/err.json" 'j["error"]["code"]' 2>/dev/null)
	if [ "$st" = "$2" ] && [ "$code" = "$3" ]; then
		pass "refused: $1 ($st $code)"
	else
		fail "refused: $1" "status $st, $(head -c 200 "$W/err.json"), want $2 $3"
	fi
}
expect "unknown job" 404 not_found "/api/v1/jobs/98765/export/pprof"
expect "bad metric" 400 invalid_input "/api/v1/jobs/$JOB/export/pprof?metric=bogus"
expect "cycles of a trace without" 400 invalid_input "/api/v1/jobs/$JOB/export/speedscope?metric=cycles"
expect "clock_hz without cycles" 400 invalid_input "/api/v1/jobs/$JOB/export/perfetto?clock_hz=1000000"
expect "min_duration not a number" 400 invalid_input "/api/v1/jobs/$JOB/export/perfetto?min_duration=ten"
expect "sampled=2" 400 invalid_input "/api/v1/jobs/$JOB/export/speedscope?sampled=2"
expect "an export that does not exist" 404 not_found "/api/v1/jobs/$JOB/export/chrome"

# A job without a result (its trace read as the wrong format): 409 saying why.
curl -s -X POST "$SRV_URL/api/v1/jobs" -d "{\"trace\": $TR, \"options\": {\"format\": \"qemu\"}}" >"$W/job2.json"
J2=$(jq_py "$W/job2.json" 'j.get("id")')
st2=$(wait_job "$J2" 60)
if [ "$st2" = failed ]; then
	expect "a failed job" 409 conflict "/api/v1/jobs/$J2/export/speedscope"
else
	skip "refused: a failed job" "the job ended $st2 ($(head -c 200 "$W/job2.json"))"
fi

# ---- deleting the job deletes what was kept for it ----
st=$(http DELETE "$SRV_URL/api/v1/jobs/$JOB" "$W/del.json")
if [ "$st" = 200 ] && [ ! -e "$W/data/results/$JOB" ]; then
	pass "a deleted job leaves no kept events behind"
else
	fail "delete" "status $st; $(ls "$W/data/results/$JOB" 2>&1 | tr '\n' ' ')"
fi
expect "a deleted job" 404 not_found "/api/v1/jobs/$JOB/export/folded"

srv_stop || fail "clean shutdown" "exit status $? (sanitizer report in $W/data.log?)"
exit 0
