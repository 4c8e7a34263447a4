#!/bin/sh
# GET /api/v1/jobs/{id}/offcpu and /path answer what `oobprof offcpu` and
# `oobprof path` print for the same inputs (the Sv57 Linux boot of
# tests/tools/gen-linux.sh with its /waits workload), after the run went
# through the server's storage and its stack-event log; the off-CPU flame
# graph's root value is the folded stacks' total; bad requests are refused
# with a message. test_full_waits checks the numbers against the guest.
set -u
T=test_server_waits
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_waits || exit 0
L=$GEN/linux
V=$L/sv57
for f in "$V/boot.oobt" "$V/vmlinux" "$V/console.log" "$L/init" "$L/waits"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
grep -q '^waits: read 0 instret' "$V/console.log" || { skip all "the boot has no /waits output"; exit 0; }
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
ids=
for b in "$V/vmlinux" "$L/init" "$L/waits"; do
	curl -s -T "$b" "$SRV_URL/api/v1/binaries?name=$(basename "$b")" >"$W/bin.json"
	ids="$ids${ids:+, }$(jq_py "$W/bin.json" 'j["id"]')"
done
curl -s -T "$V/boot.oobt" "$SRV_URL/api/v1/traces?name=boot.oobt" >"$W/trace.json"
tr=$(jq_py "$W/trace.json" 'j["id"]')
curl -s -d "{\"trace\": $tr, \"binaries\": [$ids]}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
job=$(jq_py "$W/job0.json" 'j["id"]')
state=$(wait_job "$job" 600)
[ "$state" = done ] || { fail job "state $state"; srv_stop; exit 0; }
E="--elf $V/vmlinux --elf $L/init --elf $L/waits"
# the consumer: the task of the first wait in consume(), by name or pid
# shellcheck disable=SC2086
"$OOB_BUILDDIR/oobprof" offcpu --json $E "$V/boot.oobt" >"$W/cli.json" 2>/dev/null
task=$(jq_py "$W/cli.json" '[w["task"] if w["pid"] is None else str(w["pid"]) for w in j["waits"] if any(f.startswith("consume") for f in w["stack"])][0]')
win=$(tr -d '\r' <"$V/console.log" | sed -n 's/^waits: read \([0-9]*\) instret \([0-9]*\) \([0-9]*\)$/\2 \3/p' |
	awk 'NR == 1 {a = $1} {b = $2} END {print a ":" b}')
q=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$task")
# shellcheck disable=SC2086
"$OOB_BUILDDIR/oobprof" offcpu --pid "$task" $E "$V/boot.oobt" >"$W/cli.folded" 2>/dev/null
# shellcheck disable=SC2086
"$OOB_BUILDDIR/oobprof" path --task "$task" --window "$win" $E "$V/boot.oobt" >"$W/cli-path.json" 2>/dev/null
c1=$(http GET "$SRV_URL/api/v1/jobs/$job/offcpu" "$W/api.json")
c2=$(http GET "$SRV_URL/api/v1/jobs/$job/offcpu?view=folded&pid=$q" "$W/api.folded")
c3=$(http GET "$SRV_URL/api/v1/jobs/$job/offcpu?view=flamegraph&pid=$q" "$W/api-flame.json")
c4=$(http GET "$SRV_URL/api/v1/jobs/$job/path?task=$q&from=${win%:*}&to=${win#*:}" "$W/api-path.json")
c5=$(http GET "$SRV_URL/api/v1/jobs/$job/path" "$W/e1.json")
c6=$(http GET "$SRV_URL/api/v1/jobs/$job/offcpu?pid=nosuch" "$W/e2.json")
c7=$(http GET "$SRV_URL/api/v1/jobs/$job/offcpu?view=svg" "$W/e3.json")
srv_stop
python3 - "$W" "$c1 $c2 $c3 $c4" "$c5 $c6 $c7" <<'PY'
import json, sys
T = "test_server_waits"
W, codes, errs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
def check(case, ok, detail):
    print(("PASS" if ok else "FAIL") + ": %s: %s (%s)" % (T, case, detail))
api, cli = json.load(open(W + "/api.json")), json.load(open(W + "/cli.json"))
partial = api.pop("partial", None)
check("offcpu JSON equals the CLI's", codes[0] == "200" and partial is False and api == cli and
      cli["counts"]["waits"] > 0, "%s, %d waits" % (codes[0], len(api.get("waits", []))))
fa, fc = open(W + "/api.folded").read(), open(W + "/cli.folded").read()
check("offcpu folded equals the CLI's", codes[1] == "200" and fa == fc and fc,
      "%s, %d lines" % (codes[1], len(fc.splitlines())))
flame = json.load(open(W + "/api-flame.json"))
total = sum(int(l.rsplit(" ", 1)[1]) for l in fc.splitlines())
check("offcpu flame graph's root is the folded total", codes[2] == "200" and flame.get("value") == total,
      "%s, %s vs %d" % (codes[2], flame.get("value"), total))
pa, pc = json.load(open(W + "/api-path.json")), json.load(open(W + "/cli-path.json"))
pa.pop("partial", None)
check("path equals the CLI's", codes[3] == "200" and pa == pc and len(pc["steps"]) > 1,
      "%s, %d steps" % (codes[3], len(pa.get("steps", []))))
msgs = [json.load(open(W + "/e%d.json" % i)).get("error", {}).get("message", "") for i in (1, 2, 3)]
check("bad requests are refused with a message", errs == ["400", "404", "400"] and all(msgs),
      "; ".join("%s %s" % (c, m) for c, m in zip(errs, msgs)))
PY
