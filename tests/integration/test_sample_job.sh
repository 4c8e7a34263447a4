#!/bin/sh
# test_sample_job.sh: a samples file written by `oobprof sample` as a server
# job (issue 17). Our Linux boots under qemu-system-riscv64 -icount, sampled
# at 1000 Hz through -gdb with the CFI of vmlinux and the user programs, as
# in test_sample_exact.sh (kernel and user frames joined across traps). The
# file goes to oobprofd like a trace, with those ELFs as the job's binaries
# (symbolized there, offline), beside a job of the traced boot
# (tests/gen/linux/sv39, the same execution). The server and the CLI must
# agree exactly on the same file and ELFs:
# - the job's /top and `oobprof top --json`: every function's self and
#   total, kind and count; the stats' samples and failed walks;
# - the job's flame graph (max_nodes=0), flattened into root-to-node paths
#   with their self values, and `oobprof fold`: every stack's count, the
#   trap markers between kernel and user frames included (some must be);
# - GET /api/v1/compare?base=EXACT&other=SAMPLED and `oobprof diff --json`
#   of the trace and the file: the summary, and per function the shares,
#   delta, sigma and bound.
set -u
T=test_sample_job
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test sample_job || exit 0
CLI=$OOB_BUILDDIR/oobprof
L=$GEN/linux
. "$OOB_SRCDIR/tests/tools/boot-lib.sh"
if ! boot_ready; then
	skip all "no qemu-system-riscv64, OpenSBI or booted Linux (gen-linux.sh)"
	exit 0
fi
boot_elfs
QPID=
cleanup() {
	[ -n "$QPID" ] && kill "$QPID" 2>/dev/null
	srv_stop >/dev/null 2>&1
}
trap cleanup EXIT

boot_sample "$W/console" 1 "-icount shift=0,sleep=off,align=off" "$W/boot.samples" --hz 1000
if [ $rc != 0 ] || ! grep -q "# trap \[" "$W/boot.samples"; then
	fail sample "exit $rc, $(head -c 300 "$W/boot.samples.err"), no joined stacks?"
	exit 0
fi
cat "$W/boot.samples.err"

# the CLI's side
# shellcheck disable=SC2086
"$CLI" top --json $ELFS "$W/boot.samples" >"$W/cli-top.json" 2>"$W/cli.err" &&
	"$CLI" fold $ELFS "$W/boot.samples" >"$W/cli.folded" 2>>"$W/cli.err" &&
	"$CLI" diff --json $ELFS "$L/sv39/boot.oobt" "$W/boot.samples" >"$W/cli-diff.json" \
		2>>"$W/cli.err" || {
	fail cli "$(head -c 300 "$W/cli.err")"
	exit 0
}

# the server's side
srv_start "$W/data" --workers 1 || {
	fail start "server did not start"
	exit 0
}
ids=
for e in sv39/vmlinux $PROGS; do
	curl -s -T "$L/$e" "$SRV_URL/api/v1/binaries?name=$(basename "$e")" >"$W/bin.json"
	ids="$ids${ids:+, }$(jq_py "$W/bin.json" 'j["id"]')"
done
job() { # job FILE NAME: a finished job's id, with all the binaries
	curl -s -T "$1" "$SRV_URL/api/v1/traces?name=$2" >"$W/tr-$2.json"
	curl -s -d "{\"trace\": $(jq_py "$W/tr-$2.json" 'j["id"]'), \"binaries\": [$ids]}" \
		"$SRV_URL/api/v1/jobs" >"$W/job-$2.json"
	id=$(jq_py "$W/job-$2.json" 'j["id"]')
	[ "$(wait_job "$id" 600)" = done ] && echo "$id"
}
S=$(job "$W/boot.samples" boot.samples)
X=$(job "$L/sv39/boot.oobt" boot.oobt)
if [ -z "$S" ] || [ -z "$X" ]; then
	fail jobs "sampled $S, exact $X: $(cat "$W/job.json")"
	exit 0
fi
http GET "$SRV_URL/api/v1/jobs/$S/top?limit=100000" "$W/srv-top.json" >/dev/null
http GET "$SRV_URL/api/v1/jobs/$S/flamegraph?max_nodes=0" "$W/srv-flame.json" >/dev/null
http GET "$SRV_URL/api/v1/compare?base=$X&other=$S" "$W/srv-diff.json" >/dev/null
srv_stop || fail "clean shutdown" "exit status $?"

python3 - "$T" "$W" <<'PY'
import json, sys
T, w = sys.argv[1:]
def check(ok, what, figs):
    print("%s: %s: %s: %s" % ("PASS" if ok else "FAIL", T, what, figs))
def load(n):
    return json.load(open(w + "/" + n))
# top: every row, exactly
ct, st = load("cli-top.json"), load("srv-top.json")
keys = ("name", "kind", "self_instructions", "total_instructions")
rows = lambda t: sorted(tuple(r.get(k) for k in keys) for r in t["functions"])
cs, ss = ct.get("stats", {}), st.get("stats", {})
same = rows(ct) == rows(st) and len(ct["functions"]) > 20
check(same and cs.get("samples") == ss.get("samples") and
      cs.get("failed_walks") == ss.get("failed_walks"),
      "the job's top = oobprof top: every function's self and total",
      "%d functions, %s samples, %s failed walks (CLI %s, %s)" % (
          len(st["functions"]), ss.get("samples"), ss.get("failed_walks"), cs.get("samples"),
          cs.get("failed_walks")))
# flame graph flattened = oobprof fold
fold = {}
for line in open(w + "/cli.folded"):
    path, n = line.rstrip("\n").rsplit(" ", 1)
    fold[path] = fold.get(path, 0) + int(n)
flat = {}
def walk(node, path):
    kids = node.get("children", [])
    own = node["value"] - sum(k["value"] for k in kids)
    if own and path:
        p = ";".join(path)
        flat[p] = flat.get(p, 0) + own
    for k in kids:
        walk(k, path + [k["name"]])
walk(load("srv-flame.json"), [])
joined = sum(n for p, n in fold.items() if ";[trap" in p or ";[irq" in p)
check(flat == fold and joined > 0,
      "the job's flame graph = oobprof fold, stack by stack",
      "%d stacks, %d samples, %d of them joined across a trap (%d stacks differ)" % (
          len(fold), sum(fold.values()), joined, len(set(flat.items()) ^ set(fold.items()))))
# compare = oobprof diff
cd, sd = load("cli-diff.json"), load("srv-diff.json")
fk = ("name", "base", "other", "base_total", "other_total", "delta", "sigma", "within_bound")
frows = lambda d: sorted(tuple(f.get(k) for k in fk) for f in d["functions"])
summ = ("function_error", "stack_error", "max_function_delta", "bound", "outside_bound")
check(frows(cd) == frows(sd) and all(cd["summary"].get(k) == sd["summary"].get(k) for k in summ),
      "compare?base=exact&other=sampled = oobprof diff: summary and every function",
      "%d functions; function error %s, stack error %s, %s outside 3 sigma" % (
          len(sd["functions"]), sd["summary"].get("function_error"),
          sd["summary"].get("stack_error"), sd["summary"].get("outside_bound")))
PY
