#!/bin/sh
# test_server_bad.sh: hostile and broken requests get the documented 4xx
# (api/openapi.yaml), register nothing, leave no file behind, and the server
# keeps serving: non-ELF binaries, non-trace traces, truncated bodies, bad job
# JSON, unknown ids, path-like names, oversize bodies and headers, too many
# uploads at once, missing or wrong tokens.
set -u
T=test_server_bad
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
# The files under the data folder's tmp (a node of several receives in
# tmp/node-<id>/, which stays as an empty folder).
tmp_files() { find "$W/data/tmp" -type f | sed "s|^$W/data/tmp/||"; }
begin_test server_bad inputs || exit 0

# expect NAME STATUS CODE METHOD URL [curl args]: the status and error code.
expect() {
	_name=$1 _st=$2 _code=$3 _m=$4 _u=$5
	shift 5
	_got=$(http "$_m" "$SRV_URL$_u" "$W/resp" "$@")
	_c=$(jq_py "$W/resp" 'j.get("error", {}).get("code")' 2>/dev/null)
	if [ "$_got" = "$_st" ] && { [ -z "$_code" ] || [ "$_c" = "$_code" ]; }; then
		pass "$_name -> $_st${_code:+ $_code}"
	else
		fail "$_name" "got $_got ($(head -c 300 "$W/resp")), want $_st $_code"
	fi
}

# nothing_left: no temporary file, and the catalog counts are unchanged.
counts() {
	printf '%s %s %s\n' "$(curl -s "$SRV_URL/api/v1/binaries" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["binaries"]))')" \
		"$(curl -s "$SRV_URL/api/v1/traces" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["traces"]))')" \
		"$(find "$W/data/blobs" -type f | wc -l)"
}

srv_start "$W/data" --max-upload 2M || {
	fail start "server did not start"
	exit 0
}
curl -s --data-binary "@$ELF" "$SRV_URL/api/v1/binaries?name=prog" >"$W/bin.json"
BIN=$(jq_py "$W/bin.json" 'j["id"]')
head -c 1500000 "$TRACE" >"$W/small.trace"
[ "$INPUTS" = mixed ] && cp "$TRACE" "$W/small.trace"
curl -s --data-binary "@$W/small.trace" "$SRV_URL/api/v1/traces?name=t" >"$W/tr.json"
TR=$(jq_py "$W/tr.json" 'j["id"]')
before=$(counts)

# ---- content that is not what it claims ----
expect "non-ELF binary" 400 invalid_input POST "/api/v1/binaries?name=x" --data-binary "@$W/small.trace"
msg=$(jq_py "$W/resp" 'j["error"]["message"][-60:]')
grep -qi elf "$W/resp" && pass "non-ELF: the message says ELF (...$msg)" ||
	fail "non-ELF message" "$(cat "$W/resp")"
head -c 3000 /dev/urandom >"$W/random.bin"
expect "random bytes as a trace" 400 invalid_input POST "/api/v1/traces?name=x" --data-binary "@$W/random.bin"
expect "random bytes as format=fireperf" 400 invalid_input POST "/api/v1/traces?name=x&format=fireperf" --data-binary "@$W/random.bin"
printf 'Indent: 0, Start label: main, At cycle: 10\nIndent: 1, Start label: f, At cycle: 20\ngarbage\n' >"$W/bad.fireperf"
expect "FirePerf log with a bad line 3" 400 invalid_input POST "/api/v1/traces?name=x&format=fireperf" --data-binary "@$W/bad.fireperf"
grep -q "line 3" "$W/resp" && pass "bad FirePerf line: the message names line 3" ||
	fail "bad FirePerf line message" "$(cat "$W/resp")"
printf 'core   0: 3 0x80000000 (0x00000013)\ncore   0: 3 0x800' >"$W/cut.spike"
expect "spike log cut mid-line, format=spike" 400 invalid_input POST "/api/v1/traces?name=x&format=spike" --data-binary "@$W/cut.spike"
expect "unknown format name" 400 invalid_input POST "/api/v1/traces?format=elf" --data-binary "@$W/small.trace"
printf 'not json\n' >"$W/bad.jsonl"
expect "events that are not JSON Lines" 400 invalid_input POST "/api/v1/traces?format=events" --data-binary "@$W/bad.jsonl"
printf '{"hart": 0, "cycle": 5, "switch": {"pid": 1, "tid": 1}}\n' >"$W/ev.jsonl"
expect "events file" 201 "" POST "/api/v1/traces?format=events&name=ev" --data-binary "@$W/ev.jsonl"
EV=$(jq_py "$W/resp" 'j["id"]')
after=$(counts)
# the events upload is the only new row and blob
[ "$(echo "$before" | awk '{print $1, $2 + 1, $3 + 1}')" = "$after" ] && [ -z "$(tmp_files)" ] &&
	pass "refused uploads registered nothing and left no file" || fail "nothing left" "before $before after $after, tmp: $(tmp_files)"

# ---- a body that stops early ----
port=$(cat "$W/data.port")
python3 - "$port" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /api/v1/traces?name=cut HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
s.sendall(b"core   0: 3 0x80000000 (0x00000013)\n" * 100)
time.sleep(0.3)
s.close()
EOF
sleep 0.5
[ "$(counts)" = "$after" ] && [ -z "$(tmp_files)" ] &&
	pass "truncated body (Content-Length 1000000, 3600 bytes sent): nothing registered, no file left" ||
	fail "truncated body" "counts $(counts) vs $after; tmp: $(tmp_files)"

# ---- jobs ----
# A request target of "?x" leaves the path empty: the query is not a file name.
expect "empty path (request target ?index.html)" 404 not_found GET / --request-target '?index.html'
expect "job: bad JSON" 400 invalid_input POST /api/v1/jobs -d '{"trace": '
grep -q 'line 1' "$W/resp" && pass "bad JSON: the message says where" || fail "bad JSON message" "$(cat "$W/resp")"
expect "job: not an object" 400 invalid_input POST /api/v1/jobs -d '[1, 2]'
expect "job: unknown key" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"binarys\": []}"
expect "job: no trace" 400 invalid_input POST /api/v1/jobs -d '{"binaries": []}'
expect "job: unknown trace" 404 not_found POST /api/v1/jobs -d '{"trace": 424242}'
expect "job: unknown binary" 404 not_found POST /api/v1/jobs -d "{\"trace\": $TR, \"binaries\": [$BIN, 999]}"
expect "job: events as the trace" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $EV}"
expect "job: a trace as events" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"events\": $TR}"
expect "job: bad base" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"binaries\": [{\"id\": $BIN, \"base\": \"zz\"}]}"
# An ELF of another machine (the host's true(1)) is stored, but no job of a
# RISC-V trace takes it: its code cannot hold the trace's pcs.
curl -s --data-binary "@/bin/true" "$SRV_URL/api/v1/binaries?name=host" >"$W/host.json"
HOST=$(jq_py "$W/host.json" 'j["id"]')
HOSTM=$(jq_py "$W/host.json" 'j.get("machine")')
expect "job: a binary of another machine (e_machine $HOSTM)" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"binaries\": [$BIN, $HOST]}"
grep -q "not RISC-V" "$W/resp" && pass "wrong machine: the message says so ($(jq_py "$W/resp" 'j["error"]["message"]'))" ||
	fail "wrong machine message" "$(cat "$W/resp")"
after=$(counts) # the host binary is the one new row
expect "job: bad option" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"options\": {\"metric\": \"joules\"}}"
expect "job: tracerv valid_bit 12" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"options\": {\"tracerv\": {\"valid_bit\": 12}}}"
expect "job: an instruction trace as go_trace" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"go_trace\": $TR}"
expect "job: bad go_clock" 400 invalid_input POST /api/v1/jobs -d "{\"trace\": $TR, \"options\": {\"go_clock\": {\"hz\": -1}}}"
head -c 2000000 /dev/zero | tr '\0' ' ' >"$W/big.json"
expect "job: 2 MB body" 413 too_large POST /api/v1/jobs --data-binary "@$W/big.json"
[ "$(curl -s "$SRV_URL/api/v1/jobs" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')" = 0 ] &&
	pass "no job was created by the bad requests" || fail "jobs created" "$(curl -s "$SRV_URL/api/v1/jobs")"

# ---- unknown ids and routes ----
expect "GET unknown job" 404 not_found GET /api/v1/jobs/77
expect "GET unknown trace" 404 not_found GET /api/v1/traces/77
expect "GET unknown binary" 404 not_found GET /api/v1/binaries/77
expect "DELETE unknown job" 404 not_found DELETE /api/v1/jobs/77
expect "flame graph of unknown job" 404 not_found GET /api/v1/jobs/77/flamegraph
expect "non-numeric id" 404 not_found GET /api/v1/jobs/abc
expect "id 0" 404 not_found GET /api/v1/jobs/0
expect "huge id" 404 not_found GET /api/v1/jobs/99999999999999999999999
expect "unknown route" 404 not_found GET /api/v2/anything
expect "wrong method" 405 method_not_allowed DELETE /api/v1/traces
expect "timeline of unknown job" 404 not_found GET /api/v1/jobs/77/timeline
expect "list: bad limit" 400 invalid_input GET "/api/v1/jobs?limit=0"
# A state filter that names no state is refused (it used to list nothing).
expect "list traces: unknown state" 400 invalid_input GET "/api/v1/traces?state=Ready"
grep -q 'ready, streaming, incomplete' "$W/resp" && pass "unknown state: the message lists the states" ||
	fail "unknown state message" "$(cat "$W/resp")"
# The upload $TR is complete: listed as ready, not as streaming; empty: all.
ready=$(curl -s "$SRV_URL/api/v1/traces?state=ready" | python3 -c 'import json,sys; print(" ".join(str(t["id"]) if t["state"] == "ready" else "not-ready" for t in json.load(sys.stdin)["traces"]))')
nstream=$(curl -s "$SRV_URL/api/v1/traces?state=streaming" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["traces"]))')
nall=$(curl -s "$SRV_URL/api/v1/traces?state=" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["traces"]))')
case " $ready " in
*" not-ready "*) fail "list traces by state" "state=ready listed others: $ready" ;;
*" $TR "*) [ "$nstream" = 0 ] && [ "$nall" -ge 1 ] && pass "list traces by state" ||
	fail "list traces by state" "streaming $nstream, all $nall" ;;
*) fail "list traces by state" "ready: '$ready', want $TR among them" ;;
esac

# ---- result views of a real job: bad parameters ----
curl -s -d "{\"trace\": $TR, \"binaries\": [$BIN]}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
JOB=$(jq_py "$W/job0.json" 'j["id"]')
wait_job "$JOB" 300 >/dev/null
expect "timeline: to before from" 400 invalid_input GET "/api/v1/jobs/$JOB/timeline?from=10&to=5"
expect "timeline: bad tracks" 400 invalid_input GET "/api/v1/jobs/$JOB/timeline?tracks=harts,nope"
expect "timeline: bad min_duration" 400 invalid_input GET "/api/v1/jobs/$JOB/timeline?min_duration=x"
expect "flame: window to before from" 400 invalid_input GET "/api/v1/jobs/$JOB/flamegraph?from=9&to=3"
expect "flame: bad metric" 400 invalid_input GET "/api/v1/jobs/$JOB/flamegraph?metric=joules"
expect "flame: bad priv" 400 invalid_input GET "/api/v1/jobs/$JOB/flamegraph?priv=hyper"
expect "flame: negative max_nodes" 400 invalid_input GET "/api/v1/jobs/$JOB/flamegraph?max_nodes=-1"
expect "flame: hart 5 of 1" 400 invalid_input GET "/api/v1/jobs/$JOB/flamegraph?hart=5"
has_cycles=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["summary"]["cycles"] > 0)' "$W/job.json")
[ "$has_cycles" = False ] && expect "flame: cycles of a trace without cycles" 400 invalid_input GET "/api/v1/jobs/$JOB/flamegraph?metric=cycles"

# ---- names ----
for n in '../../etc/passwd' 'a/b' '..' '.hidden' 'x%01y' 'back%5cslash' "$(printf 'n%.0s' $(seq 1 200))"; do
	expect "name \"$(echo "$n" | head -c 20)\"" 400 invalid_input POST "/api/v1/binaries?name=$n" --data-binary "@$ELF"
done

# ---- sizes ----
head -c 3000000 /dev/zero >"$W/3M"
expect "3 MB body with Content-Length over --max-upload 2M" 413 too_large POST "/api/v1/traces?name=big" --data-binary "@$W/3M"
# Chunked: the length is only known once the limit is passed; a body far
# longer than what the server discards (64 MiB) must get its 413 too.
head -c 200000000 /dev/zero >"$W/200M"
for f in 3M 200M; do
	expect "$f chunked body over --max-upload 2M" 413 too_large POST "/api/v1/traces?name=big" \
		-H 'Transfer-Encoding: chunked' -T "$W/$f"
done
rm -f "$W/200M"
big=$(python3 -c 'print("x" * 50000)')
expect "50 KB header over --max-header 32K" 431 too_large GET /api/v1/health -H "X-Big: $big"
[ "$(counts)" = "$after" ] && [ -z "$(tmp_files)" ] && pass "oversize bodies registered nothing, left no file" ||
	fail "oversize leftovers" "$(counts) vs $after; tmp: $(tmp_files)"
st=$(http GET "$SRV_URL/api/v1/health" "$W/h")
[ "$st" = 200 ] && pass "still serving after all of the above" || fail "still serving" "health $st"
srv_stop || fail "clean shutdown" "exit status $?: $(tail -n 5 "$W/data.log")"

# ---- authentication and upload slots ----
printf 's3cret-token-for-tests\n' >"$W/token"
srv_start "$W/data2" --token-file "$W/token" --max-uploads 1 || exit 0
expect "upload without a token" 401 unauthorized POST "/api/v1/binaries?name=p" --data-binary "@$ELF"
expect "upload with a wrong token" 401 unauthorized POST "/api/v1/binaries?name=p" -H 'Authorization: Bearer s3cret-token-for-test' --data-binary "@$ELF"
expect "job without a token" 401 unauthorized POST /api/v1/jobs -d '{"trace": 1}'
expect "upload with the token" 201 "" POST "/api/v1/binaries?name=p" -H 'Authorization: Bearer s3cret-token-for-tests' --data-binary "@$ELF"
expect "read without a token (reads are open)" 200 "" GET /api/v1/binaries
port=$(cat "$W/data2.port")
python3 - "$port" >"$W/slow.out" 2>&1 <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"POST /api/v1/traces?name=slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-token-for-tests\r\nContent-Length: 100000\r\n\r\n")
for i in range(60):
    s.sendall(b"x" * 10)
    time.sleep(0.1)
s.close()
EOF
slow=$!
# The slot is taken once the server has the slow upload's first bytes: wait
# for health to count it (a fixed sleep lost the race on a loaded machine).
i=0
while [ $i -lt 50 ] && [ "$(curl -s "$SRV_URL/api/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("uploads"))' 2>/dev/null)" != 1 ]; do
	sleep 0.1
	i=$((i + 1))
done
expect "second upload while --max-uploads 1 is in use" 503 busy POST "/api/v1/traces?name=t2" -H 'Authorization: Bearer s3cret-token-for-tests' --data-binary "@$W/small.trace"
wait $slow
srv_stop
srv_start "$W/data2" --token-file "$W/token" --auth-reads || exit 0
expect "auth-reads: list without a token" 401 unauthorized GET /api/v1/jobs
expect "auth-reads: list with the token" 200 "" GET /api/v1/jobs -H 'Authorization: Bearer s3cret-token-for-tests'
expect "auth-reads: health stays open" 200 "" GET /api/v1/health
srv_stop || fail "clean shutdown 2" "exit status $?"
printf 'short\n' >"$W/badtoken"
"$OOBPROFD" --data "$W/data3" --listen 127.0.0.1:0 --token-file "$W/badtoken" >"$W/badtoken.log" 2>&1
rc=$?
[ $rc -ne 0 ] && grep -q '8 or more' "$W/badtoken.log" && pass "a too short token refuses to start (exit $rc)" ||
	fail "short token" "exit $rc: $(cat "$W/badtoken.log")"
