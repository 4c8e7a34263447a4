#!/bin/sh
# test_server_compare.sh: GET /api/v1/compare (issue 17, differential
# profiles) on real jobs. Job A: a real RISC-V program's trace with its ELF
# (exact). Job B: A's own folded stacks uploaded as a sampled file: every
# share equal, error 0. Job C: 3000 samples drawn from A's folded stacks by a
# seeded generator here: the API's total share error equals the one this
# script computes from the two folded files itself, the per-function
# differences stay within the binomial bound, and the differential flame
# graph's deltas add up per node.
set -u
T=test_server_compare
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_compare || exit 0
P=$GEN/progs/mutual
[ -e "$P.oobt" ] || { skip all "no $P.oobt"; exit 0; }
"$OOB_BUILDDIR/oobprof" fold --elf "$P" "$P.oobt" >"$W/a.folded" || { fail fold "oobprof fold"; exit 0; }
python3 - "$W/a.folded" "$W/c.folded" <<'PY'
import random, sys
rows = [l.rsplit(" ", 1) for l in open(sys.argv[1]).read().splitlines()]
rnd = random.Random(17)
got = {}
for s in rnd.choices([r[0] for r in rows], weights=[int(r[1]) for r in rows], k=3000):
    got[s] = got.get(s, 0) + 1
with open(sys.argv[2], "w") as f:
    for s, n in sorted(got.items()):
        f.write("%s %d\n" % (s, n))
PY
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
curl -s -T "$P" "$SRV_URL/api/v1/binaries?name=mutual" >"$W/bin.json"
job() { # job FILE NAME [BINARIES]: a finished job's id
	curl -s -T "$1" "$SRV_URL/api/v1/traces?name=$2" >"$W/tr-$2.json"
	curl -s -d "{\"trace\": $(jq_py "$W/tr-$2.json" 'j["id"]'), \"binaries\": [${3:-}]}" \
		"$SRV_URL/api/v1/jobs" >"$W/job0.json"
	id=$(jq_py "$W/job0.json" 'j["id"]')
	[ "$(wait_job "$id" 120)" = done ] && echo "$id"
}
A=$(job "$P.oobt" a.oobt "$(jq_py "$W/bin.json" 'j["id"]')")
B=$(job "$W/a.folded" b.folded)
C=$(job "$W/c.folded" c.folded)
[ -n "$A" ] && [ -n "$B" ] && [ -n "$C" ] || { fail jobs "A=$A B=$B C=$C: $(cat "$W/job.json")"; srv_stop; exit 0; }
http GET "$SRV_URL/api/v1/compare?base=$A&other=$B" "$W/ab.json" >/dev/null
http GET "$SRV_URL/api/v1/compare?base=$A&other=$C&stacks=1" "$W/ac.json" >/dev/null
python3 - "$T" "$W/ab.json" "$W/ac.json" "$W/a.folded" "$W/c.folded" <<'PY'
import json, sys
T, ab, ac, fa, fc = sys.argv[1:]
def check(ok, what, figs):
    print("%s: %s: %s: %s" % ("PASS" if ok else "FAIL", T, what, figs))
ab, ac = json.load(open(ab)), json.load(open(ac))
s = ab["summary"]
check(abs(s["function_error"]) < 1e-12 and abs(s["stack_error"]) < 1e-12,
      "an exact job against its own folded stacks: error 0", str(s)[:200])
def shares(path):
    w = {}
    for l in open(path):
        st, n = l.rsplit(" ", 1)
        w[st] = w.get(st, 0) + int(n)
    t = sum(w.values())
    return {k: v / t for k, v in w.items()}
a, c = shares(fa), shares(fc)
tv = sum(abs(a.get(k, 0) - c.get(k, 0)) for k in set(a) | set(c)) / 2
got = ac["summary"]["stack_error"]
check(abs(got - tv) < 1e-9, "3000 seeded samples: the stack error = the folded files' own total variation",
      "API %.6f, here %.6f" % (got, tv))
outside = [f for f in ac["functions"] if f.get("within_bound") is False]
check(not outside, "every function's difference within the binomial bound",
      "%d functions, %d outside" % (len(ac["functions"]), len(outside)))
def walk(n, bad):
    kids = n.get("children", [])
    if kids and "delta" in n:
        pass
    for k in kids:
        walk(k, bad)
    if "delta" not in n:
        bad.append(n.get("name"))
bad = []
walk(ac["flame"], bad)
check(not bad, "the differential flame graph has a delta on every node", "missing on %s" % bad[:3])
PY
http GET "$SRV_URL/api/v1/compare?base=$A" "$W/e.json" >/dev/null
[ "$(jq_py "$W/e.json" 'j["error"]["code"]')" = invalid_input ] && pass "compare without other: 400" ||
	fail "compare without other" "$(cat "$W/e.json")"
srv_stop || fail "clean shutdown" "exit status $?"
