#!/bin/sh
# GET /api/v1/jobs/{id}/processes answers what `oobprof processes` prints for
# the same inputs (the full-system Spike run: vmlinux, /init, /prog), after
# the result went through the server's storage.
set -u
T=test_server_processes
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_processes || exit 0
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
spike_system_job || { srv_stop; exit 0; }
job=$JOB tr=$TR ids=$BINS
code=$(http GET "$SRV_URL/api/v1/jobs/$job/processes" "$W/api.json")
"$OOB_BUILDDIR/oobprof" processes --json --elf "$GEN/vmlinux" --elf "$S/init" --elf "$S/prog" "$LOG" >"$W/cli.json"
python3 - "$W/api.json" "$W/cli.json" "$code" <<'PY'
import json, sys
T = "test_server_processes"
api, cli, code = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
partial = api.pop("partial", None)
ok = code == "200" and partial is False and api == cli and len(cli["processes"]) >= 5
print(("PASS" if ok else "FAIL") + ": %s: processes equal the CLI's (%s, %d processes, source %s)"
      % (T, code, len(api.get("processes", [])), api.get("source")))
PY

# The same run with tasks by address space (options.tasks = "satp").
curl -s -d "{\"trace\": $tr, \"binaries\": [$ids], \"options\": {\"tasks\": \"satp\"}}" \
	"$SRV_URL/api/v1/jobs" >"$W/job-satp.json"
sjob=$(jq_py "$W/job-satp.json" 'j["id"]')
state=$(wait_job "$sjob" 300)
code=$(http GET "$SRV_URL/api/v1/jobs/$sjob/processes" "$W/api-satp.json")
"$OOB_BUILDDIR/oobprof" processes --json --tasks satp --elf "$GEN/vmlinux" --elf "$S/init" --elf "$S/prog" \
	"$LOG" >"$W/cli-satp.json"
python3 - "$W/api-satp.json" "$W/cli-satp.json" "$code" "$state" <<'PY'
import json, sys
T = "test_server_processes"
api, cli, code, state = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
api.pop("partial", None)
spaces = [p["address_spaces"] for p in cli["processes"] if p["address_spaces"]]
ok = state == "done" and code == "200" and api == cli and cli["source"] == "satp" and len(spaces) == 6
print(("PASS" if ok else "FAIL") + ": %s: tasks by satp through the API (%s %s, %d address spaces)"
      % (T, state, code, len(spaces)))
PY

# ?pid=N: the flame graph of one process. Its root value must be the weight
# of the CLI's folded stacks whose first frame is that process's root frame
# ("<comm> <pid>"; "? [task N]" for the tasks whose pid is unknown), read
# from the folded text rather than from any JSON.
"$OOB_BUILDDIR/oobprof" fold --elf "$GEN/vmlinux" --elf "$S/init" --elf "$S/prog" "$LOG" >"$W/cli.folded"
for pid in $(jq_py "$W/cli.json" '" ".join(sorted({str(p["pid"]) for p in j["processes"]}))'); do
	code=$(http GET "$SRV_URL/api/v1/jobs/$job/flamegraph?pid=$pid" "$W/flame-$pid.json")
	echo "$pid $code" >>"$W/pid-codes"
done
for q in "pid=424242" "pid=abc"; do
	code=$(http GET "$SRV_URL/api/v1/jobs/$job/flamegraph?$q" "$W/flame-bad.json")
	echo "$q $code $(jq_py "$W/flame-bad.json" 'j["error"]["message"]')" >>"$W/bad-codes"
done
python3 - "$W" <<'PY'
import json, re, sys
T = "test_server_processes"
w = sys.argv[1]
procs = json.load(open(w + "/cli.json"))["processes"]
by_root = {}
for line in open(w + "/cli.folded"):
    stack, weight = line.rstrip("\n").rsplit(" ", 1)
    first = stack.split(";", 1)[0]
    by_root[first] = by_root.get(first, 0) + int(weight)
total = sum(by_root.values())
def folded(pid):
    if pid >= 0:
        names = {"%s %d" % (p["comm"] or "?", pid) for p in procs if p["pid"] == pid}
        return sum(by_root.get(n, 0) for n in names)
    return sum(v for k, v in by_root.items() if re.fullmatch(r".* \[task \d+\]", k))
bad, seen, summed = [], [], 0
for line in open(w + "/pid-codes"):
    pid, code = line.split()
    pid = int(pid)
    doc = json.load(open("%s/flame-%d.json" % (w, pid)))
    want = folded(pid)
    got = doc.get("value") if code == "200" else None
    seen.append("%d:%s" % (pid, got))
    if code != "200" or got != want or doc.get("pid") != pid or want <= 0:
        bad.append("pid %d: %s %s, folded %d" % (pid, code, got, want))
    summed += got or 0
if not bad and summed != total:
    bad.append("processes sum to %d, folded total %d" % (summed, total))
if bad or len(seen) < 5:
    print("FAIL: %s: ?pid= equals the CLI's folded stacks of that process: %s" % (T, "; ".join(bad) or seen))
else:
    print("PASS: %s: ?pid= equals the CLI's folded stacks of that process (%s; total %d)" % (T, " ".join(seen), total))
codes = [l.split(" ", 2) for l in open(w + "/bad-codes")]
ok = codes[0][1] == "404" and "424242" in codes[0][2] and codes[1][1] == "400"
print(("PASS" if ok else "FAIL") + ": %s: unknown pid is 404, malformed pid 400 (%s)"
      % (T, "; ".join(" ".join(c).strip() for c in codes)))
PY
srv_stop || fail "clean shutdown" "exit status $?"
