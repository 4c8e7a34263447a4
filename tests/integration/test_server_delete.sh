#!/bin/sh
# test_server_delete.sh: DELETE /api/v1/traces/{id} and /api/v1/binaries/{id}
# on the real oobprofd with a real trace and its ELF (server-lib.sh's
# pick_inputs).
# - a trace still streaming, and the binary of a job that runs on it, are
#   refused with 409 naming the job;
# - an input of a finished job is refused (409 naming it) unless
#   ?with_jobs=1, which deletes the job (its result folder too);
# - the file is removed only when no other row names it: the same bytes
#   uploaded whole and streamed are two rows sharing one blob (the truth:
#   the blob column of catalog.db, read here with Python's sqlite3);
# - unknown ids answer 404; the server exits cleanly (sanitizers).
set -u
T=test_server_delete
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_delete inputs || exit 0
srv_start "$W/data" --workers 2 || { fail start "server did not start"; exit 0; }

id_of() { jq_py "$1" 'j.get("id", "")'; }
# blob_of TABLE ID: the file of a row, from the catalog itself
blob_of() {
	python3 -c 'import sqlite3,sys
db = sqlite3.connect(sys.argv[1])
r = db.execute("SELECT blob FROM %s WHERE id = ?" % sys.argv[2], (int(sys.argv[3]),)).fetchone()
print(r[0] if r else "")' "$W/data/catalog.db" "$1" "$2"
}
expect() { # expect NAME WANT GOT [detail]
	if [ "$2" = "$3" ]; then pass "$1${4:+ ($4)}"; else fail "$1" "want $2, got $3${4:+: $4}"; fi
}

curl -s -T "$ELF" "$SRV_URL/api/v1/binaries?name=prog" >"$W/b.json"
BIN=$(id_of "$W/b.json")
curl -s -T "$TRACE" "$SRV_URL/api/v1/traces?name=whole" >"$W/t.json"
TR=$(id_of "$W/t.json")
BLOB=$(blob_of traces "$TR")
[ -n "$BIN" ] && [ -n "$TR" ] && [ -s "$W/data/$BLOB" ] || { fail upload "$(cat "$W/b.json" "$W/t.json")"; srv_stop; exit 0; }

# A stream held open: its trace is streaming, a job on it runs.
size=$(wc -c <"$TRACE" | tr -d ' ')
half=$((size / 2))
stream_held "$TRACE" "$half" "$W/go" live >"$W/stream.json" &
feeder=$!
SID=
for i in $(seq 1 100); do
	curl -s "$SRV_URL/api/v1/traces?name=live" >"$W/find.json"
	SID=$(jq_py "$W/find.json" '(j["traces"] or [{}])[0].get("id", "")')
	[ -n "$SID" ] && break
	sleep 0.1
done
curl -s -d "{\"trace\": $SID, \"binaries\": [$BIN]}" "$SRV_URL/api/v1/jobs" >"$W/js.json"
JS=$(id_of "$W/js.json")
sleep 1
st=$(http DELETE "$SRV_URL/api/v1/traces/$SID" "$W/d1.json")
expect "a trace still streaming is refused" 409 "$st" "$(jq_py "$W/d1.json" 'j["error"]["message"]')"
st=$(http DELETE "$SRV_URL/api/v1/binaries/$BIN" "$W/d2.json")
msg=$(jq_py "$W/d2.json" 'j["error"]["message"]')
case $msg in *"job $JS ("*) named=yes ;; *) named=no ;; esac
expect "the binary of a running job is refused, naming the job" "409 yes" "$st $named" "$msg"
touch "$W/go"
wait "$feeder"
s=$(wait_job "$JS" 300)
expect "the job on the stream finishes" done "$s"
SBLOB=$(blob_of traces "$SID")
expect "the streamed and the whole upload share one file" "$BLOB" "$SBLOB"

# A finished job: refused without with_jobs, deleted with it.
curl -s -d "{\"trace\": $TR, \"binaries\": [$BIN]}" "$SRV_URL/api/v1/jobs" >"$W/j.json"
J=$(id_of "$W/j.json")
s=$(wait_job "$J" 300)
[ "$s" = done ] || fail "job" "$s"
st=$(http DELETE "$SRV_URL/api/v1/traces/$TR" "$W/d3.json")
msg=$(jq_py "$W/d3.json" 'j["error"]["message"]')
case $msg in *"job $J (done)"*) named=yes ;; *) named=no ;; esac
expect "a trace of a finished job is refused without with_jobs, naming it" "409 yes" "$st $named" "$msg"
[ -d "$W/data/results/$J" ] || fail "result folder" "no $W/data/results/$J before the delete"
st=$(http DELETE "$SRV_URL/api/v1/traces/$TR?with_jobs=1" "$W/d4.json")
got=$(jq_py "$W/d4.json" '(j.get("deleted"), j.get("jobs_deleted"), j.get("file_removed"))')
expect "with_jobs=1 deletes the trace and its job; the shared file stays" \
	"200 (True, [$J], False)" "$st $got"
jst=$(http GET "$SRV_URL/api/v1/jobs/$J" "$W/g1.json")
tst=$(http GET "$SRV_URL/api/v1/traces/$TR" "$W/g2.json")
[ -d "$W/data/results/$J" ] && rd=kept || rd=gone
[ -s "$W/data/$BLOB" ] && fb=kept || fb=gone
expect "the job, its result folder and the trace row are gone; the file is not" \
	"404 404 gone kept" "$jst $tst $rd $fb"

# The last row naming the file: the file goes.
st=$(http DELETE "$SRV_URL/api/v1/traces/$SID?with_jobs=1" "$W/d5.json")
got=$(jq_py "$W/d5.json" '(j.get("jobs_deleted"), j.get("file_removed"))')
[ -e "$W/data/$BLOB" ] && fb=kept || fb=gone
expect "deleting the last trace on the file removes it" "200 ([$JS], True) gone" "$st $got $fb"

BBLOB=$(blob_of binaries "$BIN")
st=$(http DELETE "$SRV_URL/api/v1/binaries/$BIN" "$W/d6.json")
got=$(jq_py "$W/d6.json" '(j.get("jobs_deleted"), j.get("file_removed"))')
[ -e "$W/data/$BBLOB" ] && fb=kept || fb=gone
expect "a binary no job uses is deleted with its file" "200 ([], True) gone" "$st $got $fb"
n=$(curl -s "$SRV_URL/api/v1/binaries" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["binaries"]))')
expect "the binary is no longer listed" 0 "$n"

a=$(http DELETE "$SRV_URL/api/v1/traces/999" "$W/d7.json")
b=$(http DELETE "$SRV_URL/api/v1/binaries/999" "$W/d8.json")
c=$(http DELETE "$SRV_URL/api/v1/binaries/1?with_jobs=2" "$W/d9.json")
expect "unknown ids answer 404, a bad with_jobs 400" "404 404 400" "$a $b $c"

if srv_stop; then pass "server exits cleanly"; else fail "server exit" "status $? (see $W/data.log)"; fi
