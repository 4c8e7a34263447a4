#!/bin/sh
# GET /api/v1/jobs/{id}/timeline and windowed flame graphs, on two real runs.
#
# Spike full system (Linux, /init, /prog; no cycles: the axis is the record
# index, one hart, so a record is an instruction):
#   - the API answers what `oobprof timeline` prints;
#   - per process, the user and kernel intervals add up to /processes;
#   - a window cut at interval edges holds, per function, exactly the
#     instructions of the log's lines in that window (pc histogram through
#     binutils' symbol tables: tests/tools/truth.py);
#   - min_duration bounds the interval count and loses no time.
# Go 1.19 on qemu-riscv64 (tests/tools/gen-go.sh), with its Go trace as the
# job's go_trace: the upload is detected as a Go trace, the clock is fitted
# on every trace event (one entry into runtime.traceEventLocked each), and
# every goroutine interval is the CLI's Go state interval mapped through the
# reported model; split into one trace per hart, the job still pairs every
# Go event.
set -u
T=test_server_timeline
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_timeline || exit 0
LOG=$GEN/readers/spike.log
S=$SHARED/fixtures/spike
G=$GEN/go
CLI=$OOB_BUILDDIR/oobprof
for f in "$LOG" "$GEN/vmlinux" "$S/init" "$S/prog" "$G/demo.oobt" "$G/demo.trace" "$G/gotrace-demo"; do
	[ -e "$f" ] || { skip all "missing $f"; exit 0; }
done
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }

upload_bin() { # file -> id
	curl -s -T "$1" "$SRV_URL/api/v1/binaries?name=$(basename "$1")" >"$W/up.json"
	jq_py "$W/up.json" 'j["id"]'
}
upload_trace() { # file name -> id (and $W/up-<name>.json)
	curl -s -T "$1" "$SRV_URL/api/v1/traces?name=$2" >"$W/up-$2.json"
	jq_py "$W/up-$2.json" 'j["id"]'
}
run_job() { # body -> job id, done
	curl -s -d "$1" "$SRV_URL/api/v1/jobs" >"$W/job.json"
	id=$(jq_py "$W/job.json" 'j["id"]')
	state=$(wait_job "$id" 300)
	[ "$state" = done ] || { fail job "state $state: $(cat "$W/job.json")"; return 1; }
	echo "$id"
}

# ---- Spike ----
ids="$(upload_bin "$GEN/vmlinux"), $(upload_bin "$S/init"), $(upload_bin "$S/prog")"
tr=$(upload_trace "$LOG" spike)
job=$(run_job "{\"trace\": $tr, \"binaries\": [$ids]}") || { srv_stop; exit 0; }
http GET "$SRV_URL/api/v1/jobs/$job/timeline" "$W/tl.json" >"$W/tl.code"
http GET "$SRV_URL/api/v1/jobs/$job/processes" "$W/procs.json" >/dev/null
"$CLI" timeline --elf "$GEN/vmlinux" --elf "$S/init" --elf "$S/prog" "$LOG" >"$W/cli-tl.json"
D=2000
http GET "$SRV_URL/api/v1/jobs/$job/timeline?min_duration=$D" "$W/tl-merged.json" >/dev/null
python3 - "$W" "$(cat "$W/tl.code")" "$D" <<'PY'
import json, sys
T = "test_server_timeline"
w, code, D = sys.argv[1], sys.argv[2], int(sys.argv[3])
api, cli = json.load(open(w + "/tl.json")), json.load(open(w + "/cli-tl.json"))
def res(ok, what):
    print(("PASS" if ok else "FAIL") + ": %s: %s" % (T, what))
partial = api.pop("partial", None)
res(code == "200" and partial is False and api == cli,
    "spike: the API's timeline is the CLI's (%s, %d intervals)" % (code, len(api["harts"][0]["intervals"])))
procs = json.load(open(w + "/procs.json"))["processes"]
iv = api["harts"][0]["intervals"]
sums = {}
for s, e, priv, p, n in iv:
    if p is not None:  # an index into "processes", the order of /processes
        sums[(p, priv)] = sums.get((p, priv), 0) + e - s
bad = []
for i, p in enumerate(procs):
    for priv in ("user", "kernel"):
        if sums.get((i, priv), 0) != p["instructions"][priv]:
            bad.append("%s %d %s: %d != %d" % (p["comm"], p["pid"], priv, sums.get((i, priv), 0), p["instructions"][priv]))
res(not bad and len(procs) >= 5, "spike: per process, intervals add up to /processes (%s)" % (bad[:3] or "%d processes" % len(procs)))
m = json.load(open(w + "/tl-merged.json"))
mi = m["harts"][0]["intervals"]
span = iv[-1][1] - iv[0][0]
cont = all(mi[i][0] == mi[i - 1][1] for i in range(1, len(mi)))
members = sum(x[4] for x in mi)
res(cont and mi[0][0] == iv[0][0] and mi[-1][1] == iv[-1][1] and members == len(iv)
    and len(mi) <= 2 * span // D + 1 and m["merged"] == len(iv) - len(mi),
    "spike: min_duration=%d merges %d intervals into %d, losing no time" % (D, len(iv), len(mi)))
# windows for the flame graph check: the longest user interval of prog, the
# longest kernel interval
prog = [x for x in iv if x[3] is not None and api["processes"][x[3]]["comm"] == "prog" and x[2] == "user"]
kern = [x for x in iv if x[2] == "kernel"]
with open(w + "/windows", "w") as f:
    for name, v in (("user", prog), ("kernel", kern)):
        x = max(v, key=lambda x: x[1] - x[0])
        f.write("%s %d %d\n" % (name, x[0], x[1]))
PY
while read -r kind from to; do
	http GET "$SRV_URL/api/v1/jobs/$job/flamegraph?from=$from&to=$to" "$W/flame-$kind.json" >"$W/flame-$kind.code"
	awk -v a="$from" -v b="$to" 'NR > a && NR <= b { print $4 }' "$LOG" | sort | uniq -c |
		awk '{ print $2, $1 }' >"$W/hist-$kind"
	if [ "$kind" = user ]; then elf=$S/prog; else elf=$GEN/vmlinux; fi
	python3 "$OOB_SRCDIR/tests/tools/truth.py" self --aliases "$W/hist-$kind" "$elf" >"$W/truth-$kind"
	python3 - "$W" "$kind" "$from" "$to" <<'PY'
import json, re, sys
T = "test_server_timeline"
w, kind, a, b = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
code = open("%s/flame-%s.code" % (w, kind)).read().strip()
doc = json.load(open("%s/flame-%s.json" % (w, kind)))
got = {}
def walk(n):
    if n.get("libtype") in ("user", "kernel") and n.get("self"):
        name = re.sub(r" \(.*\)$", "", n["name"])  # "f (file.c)": one of several f
        got[name] = got.get(name, 0) + n["self"]
    for c in n.get("children", []):
        walk(c)
walk(doc)
# Names compared as groups: the aliases of an address, and same-named
# statics of several files (which both sides tell apart differently).
up = {}
def root(x):
    while up.get(x, x) != x:
        x = up[x]
    return x
def base(x):  # DWARF names the function, the symbol table its compiler clone
    return re.sub(r"(\.(constprop|isra|part|cold)(\.\d+)?)+$", "", x.split("@")[0])
rows, nosym = [], 0
for line in open("%s/truth-%s" % (w, kind)):
    f = line.split()
    if f[0] == "[nosym]":
        nosym = int(f[1])
    if f[0].startswith("["):
        continue
    names = [base(x) for x in [f[0]] + f[2:]]
    for x in names[1:]:
        up[root(x)] = root(names[0])
    rows.append((names[0], int(f[1])))
want = {}
for n, c in rows:
    want[root(n)] = want.get(root(n), 0) + c
g2 = {}
for k, v in got.items():
    g2[root(k)] = g2.get(root(k), 0) + v
got = g2
# assembly routines (memcpy...) are NOTYPE labels, which truth.py leaves
# unnamed: what only we name must be what it could not
bad = sorted(set(want) - set(got)) + [k for k in want if k in got and got[k] != want[k]]
unnamed = sum(v for k, v in got.items() if k not in want)
if unnamed != nosym:
    bad.append("%d instructions in functions truth.py does not name, %d without a symbol" % (unnamed, nosym))
ok = code == "200" and doc.get("value") == b - a and not bad and len(want) > 0
print(("PASS" if ok else "FAIL") + ": %s: spike: window [%d, %d) of %s code: self instructions of %d functions equal the log's (%s)"
      % (T, a, b, kind, len(want), bad[:4] or code))
PY
done <"$W/windows"

# ---- Go ----
gelf=$(upload_bin "$G/gotrace-demo")
gtr=$(upload_trace "$G/demo.oobt" go-insns)
gid=$(upload_trace "$G/demo.trace" go-trace)
gfmt=$(jq_py "$W/up-go-trace.json" 'j["format"]')
[ "$gfmt" = gotrace ] && pass "go: the Go trace upload is detected ($(jq_py "$W/up-go-trace.json" 'j["description"]'))" ||
	fail "go: upload" "format $gfmt: $(cat "$W/up-go-trace.json")"
gjob=$(run_job "{\"trace\": $gtr, \"binaries\": [$gelf], \"go_trace\": $gid}") || { srv_stop; exit 0; }
http GET "$SRV_URL/api/v1/jobs/$gjob/timeline" "$W/gtl.json" >"$W/gtl.code"
"$CLI" gotrace --json "$G/demo.trace" >"$W/gotrace.json"
"$CLI" timeline --elf "$G/gotrace-demo" --gotrace "$G/demo.trace" "$G/demo.oobt" >"$W/cli-gtl.json"
python3 - "$W" <<'PY'
import json, sys
T = "test_server_timeline"
w = sys.argv[1]
code = open(w + "/gtl.code").read().strip()
api, cli = json.load(open(w + "/gtl.json")), json.load(open(w + "/cli-gtl.json"))
gt = json.load(open(w + "/gotrace.json"))
def res(ok, what):
    print(("PASS" if ok else "FAIL") + ": %s: %s" % (T, what))
api.pop("partial", None)
res(code == "200" and api == cli, "go: the API's timeline is the CLI's (%s)" % code)
c = api.get("go", {}).get("clock", {})
res(c.get("ok") is True and c.get("source") == "fit" and c["anchors"] == c["go_events"] == c["entries"] == gt["timed_events"],
    "go: clock fitted on every trace event (%s anchors, %s entries, rms %.0f)" % (c.get("anchors"), c.get("entries"), c.get("rms", -1)))
def mapped(t):
    v = c["a"] * (t - c["x0"]) + c["b"]
    return max(0, int(v + 0.5) if v >= 0 else 0)
want = {}
for g in gt["goroutines"]:
    v = [[mapped(s["start"]), mapped(s["end"]), s["state"], s["p"]] for s in g["spans"]]
    v = [x for x in v if x[1] > x[0]]
    if v:
        want[g["id"]] = v
got = {g["id"]: [x[:4] for x in g["intervals"]] for g in api["go"]["goroutines"]}
diff = [k for k in set(want) | set(got) if want.get(k) != got.get(k)]
res(not diff and len(want) > 10, "go: %d goroutines, every interval the Go state interval mapped by the model (%s)"
    % (len(want), diff[:3] or "%d intervals" % sum(map(len, want.values()))))
PY
# Perfetto: the Go runtime's tracks beside the harts, on the same axis
http GET "$SRV_URL/api/v1/jobs/$gjob/export/perfetto" "$W/gperf.json" >"$W/gperf.code"
python3 - "$W" <<'PY'
import json, re, sys
T = "test_server_timeline"
w = sys.argv[1]
code = open(w + "/gperf.code").read().strip()
doc, tl = json.load(open(w + "/gperf.json")), json.load(open(w + "/gtl.json"))
names, got = {}, {}
for e in doc["traceEvents"]:
    if e.get("pid") != 2:
        continue
    if e["ph"] == "M" and e["name"] == "thread_name":
        names[e["tid"]] = e["args"]["name"]
    elif e["ph"] == "X":  # microseconds with 3 decimals: integer records
        s = round(e["ts"] * 1000)
        got.setdefault(e["tid"], []).append([s, s + round(e["dur"] * 1000), e["name"]])
want = {"G%d" % g["id"]: [x[:3] for x in g["intervals"]] for g in tl["go"]["goroutines"]}
have = {re.match(r"G\d+", names[t]).group(0): v for t, v in got.items() if names[t].startswith("G")}
diff = [k for k in set(want) | set(have) if want.get(k) != have.get(k)]
harts = [e for e in doc["traceEvents"] if e.get("pid") == 1 and e["ph"] in "BE"]
t_end = max(e["ts"] for e in harts) * 1000
ok = code == "200" and not diff and len(want) > 10 and doc["otherData"]["go_slices"] > 0 \
    and "record" in doc["otherData"]["time"] and round(t_end) == tl["end"]
print(("PASS" if ok else "FAIL") + ": %s: go: the Perfetto export carries the Go tracks on the harts' axis "
      "(%s, %d goroutine threads, %s Go slices, harts end at %d = timeline end %d; %s)"
      % (T, code, len(have), doc["otherData"].get("go_slices"), round(t_end), tl["end"], diff[:3]))
PY
# The same run as one file per hart (convert --per-hart: a record's index in
# the whole run is its cycle): a job of the four traces pairs every Go event
# with an entry across the harts, and fits the clock as `oobprof gotrace
# --align` does on the same files (the cycle axis' 2 % tolerance may refuse
# it: then the job says why and by how much, as the CLI does).
"$CLI" convert --to oobt --per-hart -o "$W/go" "$G/demo.oobt" >/dev/null 2>&1
gtrs=
aligns=
for f in "$W/go"-C*; do
	gtrs="$gtrs${gtrs:+, }$(upload_trace "$f" "$(basename "$f")")"
	aligns="$aligns --align $f"
done
if mjob=$(run_job "{\"traces\": [$gtrs], \"binaries\": [$gelf], \"go_trace\": $gid}"); then
	http GET "$SRV_URL/api/v1/jobs/$mjob/timeline" "$W/mtl.json" >"$W/mtl.code"
	# shellcheck disable=SC2086 # one word per file: the build path has no spaces
	"$CLI" gotrace --json $aligns --elf "$G/gotrace-demo" "$G/demo.trace" >"$W/malign.json" 2>"$W/malign.err"
	python3 - "$W" "$gtrs" <<'PY'
import json, sys
T = "test_server_timeline"
w, n = sys.argv[1], len(sys.argv[2].split(","))
api = json.load(open(w + "/mtl.json"))
al = json.load(open(w + "/malign.json"))["alignment"]
gt = json.load(open(w + "/gotrace.json"))
c = api.get("go", {}).get("clock", {})
m = al["model"]
same = c.get("ok") == al["ok"] and c.get("anchors") == m["anchors"] and c.get("entries") == al["entries"] \
    and abs(c.get("rms", -1) - m["rms"]) < 1e-6 * max(1, m["rms"]) and c.get("max_abs") == m["max_abs"]
ok = open(w + "/mtl.code").read().strip() == "200" and same and len(api["harts"]) == n and \
    c.get("go_events") == c.get("entries") == gt["timed_events"]
print(("PASS" if ok else "FAIL") + ": %s: go: a job of %d per-hart traces pairs all %s Go events with %s entries across the harts, "
      "as `oobprof gotrace --align` on the files (ok %s, max %s of tolerance %s on the %s axis)"
      % (T, n, c.get("go_events"), c.get("entries"), c.get("ok"), c.get("max_abs"), c.get("tolerance"), c.get("axis")))
PY
fi
# A Go trace of another run: the job is done, its timeline says why the Go
# trace is not aligned, naming the upload (not the worker's file).
if [ -e "$G/demo-sleep.oobt" ]; then
	str=$(upload_trace "$G/demo-sleep.oobt" go-sleep)
	if xjob=$(run_job "{\"trace\": $str, \"binaries\": [$gelf], \"go_trace\": $gid}"); then
		http GET "$SRV_URL/api/v1/jobs/$xjob/timeline" "$W/xtl.json" >"$W/xtl.code"
		err=$(jq_py "$W/xtl.json" 'j["go"]["clock"]["error"]' 2>/dev/null)
		case "$(cat "$W/xtl.code") $err" in
		"200 "*"but trace $str enters"*"not the same run"*)
			pass "go: a Go trace of another run stays unaligned, and the timeline says why: $err" ;;
		*) fail "go: a Go trace of another run" "$(cat "$W/xtl.code"): $err" ;;
		esac
	fi
fi
srv_stop
