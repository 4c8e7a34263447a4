#!/bin/sh
# test_python.sh: CPython 3.11 for RISC-V (Debian 12's source, cross-built by
# tests/tools/gen-python.sh) running tests/fixtures/python/pyprog.py under
# qemu-riscv64, traced by the plugin. Checks, against ground truth that owes
# nothing to oobprof:
#   guest run           the guest's output is the host python3.11's (same
#                       3.11.2): the program's counters are what CPython
#                       computes, not an accident of the emulation
#   self instructions   per function of the interpreter's ELF, from the
#                       histogram the plugin counts (truth.py self, by entry
#                       address: CPython has many static namesakes)
#   total               the histogram's sum
#   calls               per C function, the executions of its entry pc
#                       (truth.py entries: functions that loop back to their
#                       own entry are left out)
#   repairs             0: every return matched its call
#   dispatch            the interpreter dispatches bytecode by computed gotos
#                       and only indirect jumps reach a handler's label
#                       (tests/tools/pydispatch.py check): the executed
#                       opcodes are in a pc-only trace (issue 18, step 3)
#   frame starts        the executions of the eval loop's start_frame label
#                       (DWARF) = RESUME + RETURN_GENERATOR dispatches: each
#                       Python frame start is one, in pc terms
# Prints PASS/FAIL/SKIP: test_python: <case>[: why].
set -u
T=test_python
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
gen=$OOB_BUILDDIR/tests/gen/python
cli=$OOB_BUILDDIR/oobprof
truth=$OOB_SRCDIR/tests/tools/truth.py
w=$OOB_BUILDDIR/tests/out/python
HOST_PYTHON=${BUILD_PYTHON:-/usr/bin/python3.11}
TIMEOUT=${CLI_TIMEOUT:-600}

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

n=pyprog
p=$gen/$n
py=$gen/bin/python3.11
if [ ! -e "$p.hist" ] || [ ! -e "$p.oobt" ] || [ ! -x "$py" ]; then
	skip all "python trace not generated (see tests/out/gen-fixtures.log)"
	exit 0
fi
if [ ! -x "$cli" ]; then
	skip all "oobprof CLI not built"
	exit 0
fi
mkdir -p "$w" || exit 1

# ---- the guest ran the program as the host does ----
if [ ! -x "$HOST_PYTHON" ]; then
	skip "$n: guest output" "$HOST_PYTHON absent"
elif ! (cd "$gen" && env -i PYTHONHASHSEED=0 "$HOST_PYTHON" -S -s -B "$n.py") >"$w/$n.host.out"; then
	fail "$n: guest output" "$HOST_PYTHON $n.py failed"
elif ! grep -q '^pycalls fib ' "$p.out"; then
	fail "$n: guest output" "no pycalls lines in $p.out"
elif cmp -s "$w/$n.host.out" "$p.out"; then
	pass "$n: guest output is the host's ($(grep -c '^py' "$p.out") counters)"
else
	fail "$n: guest output is the host's" "diff $w/$n.host.out $p.out"
fi

# ---- the executed opcodes are in the pcs ----
if python3 "$OOB_SRCDIR/tests/tools/pydispatch.py" check "$py" >"$w/dispatch" 2>&1; then
	pass "dispatch by computed gotos, labels reached by indirect jumps only ($(tr '\n' ' ' <"$w/dispatch"))"
else
	fail "dispatch by computed gotos, labels reached by indirect jumps only" "$(tr '\n' ' ' <"$w/dispatch")"
fi

if python3 "$OOB_SRCDIR/tests/tools/pydispatch.py" frames "$py" "$p.hist" >"$w/frames" 2>&1; then
	pass "$n: frame starts = RESUME + RETURN_GENERATOR dispatches ($(tr '\n' ' ' <"$w/frames"))"
else
	fail "$n: frame starts = RESUME + RETURN_GENERATOR dispatches" "$(tr '\n' ' ' <"$w/frames")"
fi

# ---- the C-level profile ----
python3 "$truth" self --asm --addrs "$p.hist" "$py" >"$w/$n.self" &&
	python3 "$truth" entries --addrs "$p.hist" "$py" >"$w/$n.entries" 2>"$w/$n.entries.err" || {
	fail "$n: truth" "truth.py failed"
	exit 0
}
if ! timeout "$TIMEOUT" "$cli" top --json --elf "$py" "$p.oobt" >"$w/$n.json" 2>"$w/$n.err"; then
	fail "$n: top --json" "exit status $? ($(head -c 300 "$w/$n.err"))"
	exit 0
fi
python3 - "$w/$n.json" "$w/$n.self" "$w/$n.entries" <<'EOF'
import json, sys
T, name = "test_python", "pyprog"
jpath, selfp, entp = sys.argv[1:]


def report(case, bad, extra=""):
    if bad:
        more = " (+%d more)" % (len(bad) - 6) if len(bad) > 6 else ""
        print("FAIL: %s: %s: %s: %s%s" % (T, name, case, "; ".join(bad[:6]), more))
    else:
        print("PASS: %s: %s: %s%s" % (T, name, case, extra))


doc = json.load(open(jpath))
funcs, stats = doc["functions"], doc["stats"]
truth, total = {}, 0
for line in open(selfp):
    f = line.split()
    if f[0] == "[total]":
        total = int(f[1])
    elif not f[0].startswith("["):
        truth[int(f[0].split(":")[1], 16)] = int(f[1])
got = {}
for fn in funcs:
    a = int(fn["addr"], 16)
    g = got.setdefault(a, {"self": 0, "calls": 0, "name": fn["name"]})
    g["self"] += int(fn.get("self_instructions", 0))
    g["calls"] += int(fn.get("calls", 0))

bad = ["%s 0x%x: oobprof %d, truth %d" % (got.get(a, {}).get("name", "?"), a,
                                         got.get(a, {"self": 0})["self"], c)
       for a, c in sorted(truth.items()) if got.get(a, {"self": 0})["self"] != c]
bad += ["%s 0x%x: oobprof %d, no function there in truth" % (g["name"], a, g["self"])
        for a, g in sorted(got.items()) if g["self"] and a not in truth]
report("self instructions per function", bad, " (%d functions)" % len(truth))

bad = []
if stats.get("instructions") != total:
    bad.append("stats.instructions %s, histogram total %d" % (stats.get("instructions"), total))
s = sum(int(fn.get("self_instructions", 0)) for fn in funcs)
if s != total:
    bad.append("sum of self_instructions %d, histogram total %d" % (s, total))
report("total instructions", bad, " (%d)" % total)

ent = {}
for line in open(entp):
    a, c = line.split()
    ent[int(a.split(":")[1], 16)] = int(c)
bad = ["%s 0x%x: oobprof %d, entry pc ran %d" % (got.get(a, {}).get("name", "?"), a,
                                                got.get(a, {"calls": 0})["calls"], c)
       for a, c in sorted(ent.items()) if got.get(a, {"calls": 0})["calls"] != c]
report("calls per C function", bad, " (%d functions)" % len(ent))

bad = ["%s %s, expected 0" % (k, stats.get(k))
       for k in ("repairs_unknown", "repairs_unwind", "repairs_ambiguous") if stats.get(k) != 0]
report("repairs", bad, " (calls %s)" % stats.get("calls"))
EOF
exit 0
