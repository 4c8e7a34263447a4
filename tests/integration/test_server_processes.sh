#!/bin/sh
# GET /api/v1/jobs/{id}/processes answers what `oobprof processes` prints for
# the same inputs (the full-system Spike run: vmlinux, /init, /prog), after
# the result went through the server's storage.
set -u
T=test_server_processes
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_processes || exit 0
LOG=$GEN/readers/spike.log
S=$SHARED/fixtures/spike
for f in "$LOG" "$GEN/vmlinux" "$S/init" "$S/prog"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
ids=
for b in "$GEN/vmlinux" "$S/init" "$S/prog"; do
	curl -s -T "$b" "$SRV_URL/api/v1/binaries?name=$(basename "$b")" >"$W/bin.json"
	ids="$ids${ids:+, }$(jq_py "$W/bin.json" 'j["id"]')"
done
curl -s -T "$LOG" "$SRV_URL/api/v1/traces?name=spike" >"$W/trace.json"
tr=$(jq_py "$W/trace.json" 'j["id"]')
curl -s -d "{\"trace\": $tr, \"binaries\": [$ids]}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
job=$(jq_py "$W/job0.json" 'j["id"]')
state=$(wait_job "$job" 300)
[ "$state" = done ] || { fail job "state $state"; srv_stop; exit 0; }
code=$(http GET "$SRV_URL/api/v1/jobs/$job/processes" "$W/api.json")
"$OOB_BUILDDIR/oobprof" processes --elf "$GEN/vmlinux" --elf "$S/init" --elf "$S/prog" "$LOG" >"$W/cli.json"
python3 - "$W/api.json" "$W/cli.json" "$code" <<'PY'
import json, sys
T = "test_server_processes"
api, cli, code = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
partial = api.pop("partial", None)
ok = code == "200" and partial is False and api == cli and len(cli["processes"]) >= 5
print(("PASS" if ok else "FAIL") + ": %s: processes equal the CLI's (%s, %d processes, source %s)"
      % (T, code, len(api.get("processes", [])), api.get("source")))
PY
srv_stop || fail "clean shutdown" "exit status $?"
