#!/bin/sh
# test_server_api.sh: the real oobprofd end to end with real inputs (a RISC-V
# program traced in QEMU, or the Spike full-system fixture): uploads checked
# against sha256sum/readelf, a job's flame graph and folded stacks against the
# oobprof CLI on the same inputs, the per-function table against ground truth
# computed without oobprof (tests/tools/truth.py), results surviving a
# restart, and the static files.
set -u
T=test_server_api
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
CROSS=${CROSS:-riscv64-linux-gnu-}
begin_test server_api inputs || exit 0
srv_start "$W/data" --workers 2 || {
	fail start "server did not start"
	exit 0
}

# ---- health ----
st=$(http GET "$SRV_URL/api/v1/health" "$W/health.json")
if [ "$st" = 200 ] && [ "$(jq_py "$W/health.json" 'j["status"], j["workers"]')" = "('ok', 2)" ]; then
	pass "health: ok, 2 workers"
else
	fail health "status $st: $(cat "$W/health.json")"
fi

# ---- binary upload: facts checked with other tools ----
st=$(http POST "$SRV_URL/api/v1/binaries?name=prog" "$W/bin.json" --data-binary "@$ELF")
want_sha=$(sha256sum "$ELF" | cut -d' ' -f1)
want_size=$(wc -c <"$ELF" | tr -d ' ')
want_bid=$(${CROSS}readelf -n "$ELF" 2>/dev/null | sed -n 's/.*Build ID: *//p' | head -n 1)
want_dwarf=False
${CROSS}readelf -S "$ELF" | grep -q '\.debug_info' && want_dwarf=True
want_pie=False
${CROSS}readelf -h "$ELF" | grep -q 'DYN' && want_pie=True
got=$(jq_py "$W/bin.json" '"%s %s %s %s %s %s" % (j["sha256"], j["size"], j["build_id"], j["has_dwarf"], j["pie"], j["arch"])')
if [ "$st" = 201 ] && [ "$got" = "$want_sha $want_size ${want_bid:-?} $want_dwarf $want_pie riscv" ]; then
	pass "binary upload: sha256, size, build-id, DWARF, PIE as sha256sum/readelf say"
else
	fail "binary upload" "status $st, got '$got', want '$want_sha $want_size $want_bid $want_dwarf $want_pie riscv'"
fi
BIN=$(jq_py "$W/bin.json" 'j["id"]')
nfun=$(jq_py "$W/bin.json" 'j["functions"]')
nm_fun=$(${CROSS}nm --defined-only "$ELF" | grep -c ' [TtWi] ')
if [ "$nfun" -gt 0 ] && [ "$nfun" -le "$((nm_fun * 2))" ]; then
	pass "binary upload: $nfun function ranges (nm lists $nm_fun function symbols)"
else
	fail "binary functions" "$nfun function ranges vs $nm_fun nm function symbols"
fi

# PUT of the same content (curl -T): the same row, stored once.
st=$(http PUT "$SRV_URL/api/v1/binaries?name=again" "$W/bin2.json" -T "$ELF")
nblobs=$(find "$W/data/blobs" -type f | wc -l)
if [ "$st" = 200 ] && [ "$(jq_py "$W/bin2.json" 'j["id"], j["duplicate"]')" = "($BIN, True)" ] && [ "$nblobs" -eq 1 ]; then
	pass "duplicate binary (PUT): same id, stored once"
else
	fail "duplicate binary" "status $st, $(cat "$W/bin2.json"), $nblobs blobs"
fi

# ---- trace uploads: plain (PUT), LZ4 frame (POST), chunked ----
st=$(http PUT "$SRV_URL/api/v1/traces?name=run1" "$W/tr.json" -T "$TRACE")
TR=$(jq_py "$W/tr.json" 'j.get("id")')
fmt=$(jq_py "$W/tr.json" 'j.get("format")')
want_fmt=oobt
[ "$INPUTS" = spike ] && want_fmt=spike
if [ "$st" = 201 ] && [ "$fmt" = "$want_fmt" ] &&
	[ "$(jq_py "$W/tr.json" 'j["sha256"], j["size"], j["state"]')" = "('$(sha256sum "$TRACE" | cut -d' ' -f1)', $(wc -c <"$TRACE" | tr -d ' '), 'ready')" ]; then
	pass "trace upload (PUT): format $fmt detected, sha256 and size as sha256sum/wc say"
else
	fail "trace upload" "status $st: $(cat "$W/tr.json")"
fi
lz4 -q -f -c "$TRACE" >"$W/trace.lz4"
st=$(http POST "$SRV_URL/api/v1/traces?name=run1-lz4" "$W/trz.json" --data-binary "@$W/trace.lz4")
TRZ=$(jq_py "$W/trz.json" 'j.get("id")')
if [ "$st" = 201 ] && [ "$(jq_py "$W/trz.json" 'j["lz4"], j["format"]')" = "(True, '$want_fmt')" ]; then
	pass "LZ4-framed trace detected (lz4 true, format $want_fmt)"
else
	fail "lz4 trace" "status $st: $(cat "$W/trz.json")"
fi
st=$(http POST "$SRV_URL/api/v1/traces?name=chunked" "$W/trc.json" -H 'Transfer-Encoding: chunked' --data-binary "@$TRACE")
if [ "$st" = 200 ] && [ "$(jq_py "$W/trc.json" 'j["id"], j["duplicate"]')" = "($TR, True)" ]; then
	pass "chunked upload of known content: duplicate of trace $TR"
else
	fail "chunked upload" "status $st: $(cat "$W/trc.json")"
fi

# ---- a job ----
st=$(http POST "$SRV_URL/api/v1/jobs" "$W/job0.json" -d "{\"trace\": $TR, \"binaries\": [$BIN]}")
JOB=$(jq_py "$W/job0.json" 'j.get("id")')
state=$(wait_job "$JOB" 300)
if [ "$st" = 201 ] && [ "$state" = done ]; then
	pass "job $JOB: queued -> done ($(jq_py "$W/job.json" 'j["summary"]["instructions"]') instructions)"
else
	fail "job" "status $st, state $state: $(cat "$W/job.json")"
fi
cp "$W/job.json" "$W/job-done.json"
insns=$(jq_py "$W/job-done.json" 'j["summary"]["instructions"]')
tsize=$(wc -c <"$TRACE" | tr -d ' ')
prog=$(jq_py "$W/job-done.json" 'j["progress"]["bytes"] == j["progress"]["total_bytes"] == '"$tsize"' and j["progress"]["instructions"] == j["summary"]["instructions"]')
[ "$prog" = true ] && pass "progress: all $(wc -c <"$TRACE" | tr -d ' ') bytes and $insns instructions" ||
	fail progress "$(jq_py "$W/job-done.json" 'j["progress"]')"

curl -s "$SRV_URL/api/v1/jobs/$JOB/flamegraph" >"$W/flame.json"
curl -s "$SRV_URL/api/v1/jobs/$JOB/folded" >"$W/folded.txt"
root=$(jq_py "$W/flame.json" 'j["value"]')
[ "$root" = "$insns" ] && pass "flame graph root = $insns instructions" ||
	fail "flame root" "root value $root vs $insns instructions"

# Flame graph self weight per path (value minus children) = folded lines.
python3 - "$W/flame.json" "$W/folded.txt" <<'EOF' >"$W/flame-vs-folded"
import json, sys
def flame(node, prefix, out):
    kids = node.get("children", [])
    for k in kids:
        p = (prefix + ";" if prefix else "") + k["name"].replace(";", ":")
        flame(k, p, out)
    self = node["value"] - sum(k["value"] for k in kids)
    key = prefix if prefix else "[unknown]"
    if self:
        out[key] = out.get(key, 0) + self
def folded(path):
    out = {}
    for line in open(path):
        stack, w = line.rstrip("\n").rsplit(" ", 1)
        out[stack] = out.get(stack, 0) + int(w)
    return out
a, b = {}, folded(sys.argv[2])
flame(json.load(open(sys.argv[1])), "", a)
diff = [k for k in set(a) | set(b) if a.get(k, 0) != b.get(k, 0)]
print("%d %d %d %s" % (len(a), len(b), len(diff), diff[:3]))
EOF
read -r na nb nd rest <"$W/flame-vs-folded"
[ "$nd" = 0 ] && pass "flame graph = folded endpoint ($na paths)" || fail "flame vs folded" "$na/$nb paths, $nd differ: $rest"

# The same inputs through the oobprof command line tool.
CLI=$OOB_BUILDDIR/oobprof
if [ -x "$CLI" ] && "$CLI" fold --elf "$ELF" "$TRACE" >"$W/cli.folded" 2>"$W/cli.err"; then
	if [ "$(sort "$W/cli.folded" | md5sum)" = "$(sort "$W/folded.txt" | md5sum)" ]; then
		pass "folded endpoint = oobprof fold ($(wc -l <"$W/cli.folded" | tr -d ' ') lines)"
	else
		fail "folded vs CLI" "differs: diff <(sort $W/cli.folded) <(sort $W/folded.txt)"
	fi
	python3 - "$W/flame.json" "$W/cli.folded" <<'EOF' >"$W/flame-vs-cli"
import json, sys
def flame(node, prefix, out):
    kids = node.get("children", [])
    for k in kids:
        flame(k, (prefix + ";" if prefix else "") + k["name"].replace(";", ":"), out)
    self = node["value"] - sum(k["value"] for k in kids)
    if self:
        key = prefix if prefix else "[unknown]"
        out[key] = out.get(key, 0) + self
a, b = {}, {}
flame(json.load(open(sys.argv[1])), "", a)
for line in open(sys.argv[2]):
    s, w = line.rstrip("\n").rsplit(" ", 1)
    b[s] = b.get(s, 0) + int(w)
d = [k for k in set(a) | set(b) if a.get(k, 0) != b.get(k, 0)]
print(len(a), sum(b.values()), len(d), d[:3])
EOF
	read -r na total nd rest <"$W/flame-vs-cli"
	[ "$nd" = 0 ] && pass "flame graph values = oobprof fold sums per path ($na paths, $total instructions)" ||
		fail "flame vs CLI" "$nd paths differ: $rest"
	# One shape for the per-function table: the CLI prints what the API answers.
	"$CLI" top --json --elf "$ELF" "$TRACE" >"$W/cli.top.json" 2>>"$W/cli.err"
	curl -s "$SRV_URL/api/v1/jobs/$JOB/top?limit=10000000" >"$W/api.top.json"
	python3 - "$W/cli.top.json" "$W/api.top.json" <<'EOF' >"$W/top-vs-cli"
import json, os, sys
cli, api = (json.load(open(p)) for p in sys.argv[1:])
keys = ["name", "binary", "file", "line", "addr", "kind", "calls", "self_instructions",
        "total_instructions", "self_cycles", "total_cycles", "ipc"]
bad = [k for k in ("metric", "partial", "count", "functions", "stats") if k not in cli]
bad += ["api %s" % list(f) for f in api["functions"][:1] if list(f) != keys]
bad += ["cli %s" % list(f) for f in cli["functions"][:1] if list(f) != keys]
if not bad and (cli["count"], cli["metric"]) != (api["count"], api["metric"]):
    bad.append("count/metric %s/%s vs %s/%s" % (cli["count"], cli["metric"], api["count"], api["metric"]))
if not bad:
    # The binary is the upload's name on the server, the path in the CLI.
    c = {(f["name"], f["addr"]): dict(f, binary=0) for f in cli["functions"]}
    a = {(f["name"], f["addr"]): dict(f, binary=0) for f in api["functions"]}
    bad += ["%s: cli %s api %s" % (k, c.get(k), a.get(k)) for k in set(c) | set(a)
            if c.get(k) != a.get(k)]
print(len(api["functions"]), len(bad), "; ".join(map(str, bad[:3])))
EOF
	read -r nfn nbad rest <"$W/top-vs-cli"
	[ "$nbad" = 0 ] && pass "top: oobprof top --json prints the API's rows ($nfn functions, same fields)" ||
		fail "top vs CLI" "$nbad differ: $rest"
else
	skip "flame vs CLI" "oobprof CLI not built or failed ($(head -c 200 "$W/cli.err" 2>/dev/null))"
fi

# Ground truth without oobprof: QEMU's own instruction histogram per function
# and the program's own call counters (generated programs only).
if [ "$INPUTS" = mixed ] && [ -s "$GEN/progs/mixed.hist" ]; then
	curl -s "$SRV_URL/api/v1/jobs/$JOB/top?limit=100000" >"$W/top.json"
	python3 "$OOB_SRCDIR/tests/tools/truth.py" self "$GEN/progs/mixed.hist" "$ELF" >"$W/truth.self"
	python3 "$OOB_SRCDIR/tests/tools/truth.py" calls "$GEN/progs/mixed.out" >"$W/truth.calls"
	python3 - "$W/top.json" "$W/truth.self" "$W/truth.calls" "$OOB_SRCDIR/tests/tools" "$ELF" <<'EOF' >"$W/truth.cmp"
import json, sys
sys.path.insert(0, sys.argv[4])
import truth
top = {f["name"]: f for f in json.load(open(sys.argv[1]))["functions"]}
selfs = dict(l.split() for l in open(sys.argv[2]) if not l.startswith("["))
calls = dict(l.split() for l in open(sys.argv[3]))
# The symbol table (readelf) says where each function starts.
addrs = {name: a for a, _, name, _, _ in truth.read_symbols(sys.argv[5])[0]}
bad = []
for name, n in calls.items():
    f = top.get(name)
    if not f or f["calls"] != int(n) or f["self_instructions"] != int(selfs.get(name, -1)) or \
            int(f["addr"], 16) != addrs.get(name):
        bad.append("%s: server calls %s self %s addr %s, truth calls %s self %s addr %s" % (
            name, f and f["calls"], f and f["self_instructions"], f and f["addr"], n,
            selfs.get(name), hex(addrs.get(name, -1))))
print(len(calls), len(bad), "; ".join(bad[:3]))
EOF
	read -r nf nbad rest <"$W/truth.cmp"
	[ "$nbad" = 0 ] && pass "top: calls, self instructions and address of the program's $nf functions = QEMU histogram + its own counters + symbol table" ||
		fail "top vs ground truth" "$nbad of $nf differ: $rest"
else
	skip "top vs ground truth" "needs tests/gen/progs/mixed.hist"
fi

# The LZ4 upload reconstructs to the very same stacks.
st=$(http POST "$SRV_URL/api/v1/jobs" "$W/jobz.json" -d "{\"trace\": $TRZ, \"binaries\": [{\"id\": $BIN, \"base\": null}], \"options\": {\"metric\": \"calls\"}}")
JOBZ=$(jq_py "$W/jobz.json" 'j.get("id")')
if [ "$(wait_job "$JOBZ" 300)" = done ] &&
	curl -s "$SRV_URL/api/v1/jobs/$JOBZ/folded" | cmp -s - "$W/folded.txt"; then
	pass "LZ4 trace: identical folded stacks"
else
	fail "lz4 job" "$(cat "$W/job.json")"
fi
# Its stored folded file is in the job's metric (calls): sums = calls made.
ncalls=$(jq_py "$W/job.json" 'j["summary"]["calls"]')
fcalls=$(awk '{s += $NF} END {print s + 0}' "$W/data/results/$JOBZ/folded.txt")
top_calls=$(curl -s "$SRV_URL/api/v1/jobs/$JOBZ/top?metric=calls&limit=1000000" | python3 -c 'import json,sys; print(sum(f["calls"] for f in json.load(sys.stdin)["functions"]))')
[ "$fcalls" = "$top_calls" ] && [ "$fcalls" != "$insns" ] && pass "stored folded in the job's metric: $fcalls calls (summary counts $ncalls call events)" ||
	fail "metric calls" "folded sums $fcalls, top sums $top_calls"

# ---- results survive a restart; delete removes them ----
srv_stop
rc=$?
[ $rc -eq 0 ] && pass "clean shutdown (exit 0, no sanitizer report)" || fail shutdown "exit status $rc: $(tail -n 5 "$W/data.log")"
srv_start "$W/data" --workers 1 || {
	fail restart "server did not restart"
	exit 0
}
curl -s "$SRV_URL/api/v1/jobs/$JOB/flamegraph" | cmp -s - "$W/flame.json" &&
	pass "after a restart: the same flame graph, without re-running (runs = $(curl -s "$SRV_URL/api/v1/jobs/$JOB" | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"])'))" ||
	fail "restart" "flame graph differs after restart"
st=$(http DELETE "$SRV_URL/api/v1/jobs/$JOBZ" "$W/del.json")
st2=$(http GET "$SRV_URL/api/v1/jobs/$JOBZ" "$W/gone.json")
if [ "$st" = 200 ] && [ "$st2" = 404 ] && [ ! -e "$W/data/results/$JOBZ" ]; then
	pass "DELETE of a finished job removes it and its results"
else
	fail delete "DELETE $st, then GET $st2, results folder $(ls "$W/data/results")"
fi
srv_stop

# ---- static files ----
mkdir -p "$W/static/sub" "$W/empty"
printf '<html>viewer</html>\n' >"$W/static/index.html"
printf 'console.log(1);\n' >"$W/static/sub/app.js"
ln -sf /etc/passwd "$W/static/passwd"
srv_start "$W/data" --static "$W/static" || exit 0
ok=1
ct=$(curl -s -o "$W/idx" -w '%{http_code} %{content_type}' "$SRV_URL/")
[ "$ct" = "200 text/html; charset=utf-8" ] && cmp -s "$W/idx" "$W/static/index.html" || ok=0
ct=$(curl -s -o "$W/js" -w '%{http_code} %{content_type}' "$SRV_URL/sub/app.js")
[ "$ct" = "200 text/javascript; charset=utf-8" ] && cmp -s "$W/js" "$W/static/sub/app.js" || ok=0
[ $ok = 1 ] && pass "static files with their content types" || fail static "index or app.js wrong ($ct)"
bad=
for p in /../etc/passwd /%2e%2e/%2e%2e/etc/passwd /sub/../index.html /sub/..%2f..%2fetc/passwd /passwd //etc/passwd /sub; do
	st=$(curl -s --path-as-is -o "$W/trav" -w '%{http_code}' "$SRV_URL$p")
	{ [ "$st" = 404 ] || [ "$st" = 400 ]; } && ! grep -q root: "$W/trav" || bad="$bad $p:$st"
done
[ -z "$bad" ] && pass "no traversal, no symlink, no folder listing (7 paths -> 404)" || fail traversal "$bad"
srv_stop
srv_start "$W/data" --static "$W/empty" || exit 0
st=$(http GET "$SRV_URL/" "$W/builtin")
[ "$st" = 200 ] && grep -q oobprofd "$W/builtin" && pass "built-in page without index.html" || fail "built-in page" "status $st"
srv_stop || fail "clean shutdown 2" "exit status $?"
