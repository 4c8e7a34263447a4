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
# With Python frames (--pycode: a code map of pyprog.py and the stdlib modules
# the start-up runs, made by tests/tools/pycode.py; RECONSTRUCTION.md 17):
#   calls per code      per code object of pyprog.py, the calls of its py:
#                       frame = the 'call' events CPython's own profiling hook
#                       counts on the host (tests/tools/pycalls.py), plus the
#                       generators created (a frame the hook does not show)
#   counters            per function, = pyprog.py's own counters (pycalls; a
#                       generator: created + started + resumed)
#   call paths          per stack of pyprog.py's frames, the calls = the
#                       hook's (C frames between them left out)
#   C under Python      sorted's key function runs under list_sort under
#                       builtin_sorted under py:main
#   C with py frames    self instructions and calls of every C function as
#                       without them, but the eval loop's, whose self
#                       instructions (the histogram's count of its pcs) are
#                       split between it and the py: frames
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

# ---- Python frames ----
if [ ! -x "$HOST_PYTHON" ]; then
	skip "$n: python frames" "$HOST_PYTHON absent"
	exit 0
fi
if ! sh "$OOB_SRCDIR/tests/tools/pymap.sh" "$gen" "$HOST_PYTHON" >"$w/$n.pymap" 2>"$w/$n.pymap.err"; then
	fail "$n: python frames" "pycode.py: $(head -c 300 "$w/$n.pymap.err")"
	exit 0
fi
if ! (cd "$gen" && env -i PYTHONHASHSEED=0 "$HOST_PYTHON" -S -s -B \
	"$OOB_SRCDIR/tests/tools/pycalls.py" "$n.py") >"$w/$n.pycalls" 2>"$w/$n.pycalls.err"; then
	fail "$n: python frames" "pycalls.py: $(head -c 300 "$w/$n.pycalls.err")"
	exit 0
fi
for cmd in top fold; do
	o=$w/$n.py.$cmd
	if [ $cmd = top ]; then set -- top --json; else set -- fold --metric calls; fi
	if ! timeout "$TIMEOUT" "$cli" "$@" --pycode "$w/$n.pymap" --elf "$py" "$p.oobt" >"$o" 2>"$o.err"; then
		fail "$n: python frames: $cmd" "exit status $? ($(head -c 300 "$o.err"))"
		exit 0
	fi
done
python3 - "$w/$n.py.top" "$w/$n.py.fold" "$w/$n.pycalls" "$p.out" "$w/$n.self" "$w/$n.entries" "$py" <<'EOF'
import collections, json, re, subprocess, sys
T, name = "test_python", "pyprog"
topp, foldp, callsp, outp, selfp, entp, elf = sys.argv[1:]


def report(case, bad, extra=""):
    if bad:
        more = " (+%d more)" % (len(bad) - 6) if len(bad) > 6 else ""
        print("FAIL: %s: %s: %s: %s%s" % (T, name, case, "; ".join(bad[:6]), more))
    else:
        print("PASS: %s: %s: %s%s" % (T, name, case, extra))


doc = json.load(open(topp))
funcs, st = doc["functions"], doc["stats"]
PY = re.compile(r"^py:(\S+) \(pyprog\.py:(\d+)\)$")
got = collections.Counter()
for fn in funcs:
    m = PY.match(fn["name"])
    if m:
        got["%s %s" % m.groups()] += int(fn.get("calls", 0))
hook, gens, paths = collections.Counter(), collections.Counter(), collections.Counter()
for line in open(callsp):
    f = line.split()
    if f[0] == "calls":
        hook["%s %s" % (f[1], f[2])] = int(f[3])
    elif f[0] == "gens":
        gens["%s %s" % (f[1], f[2])] = int(f[3])
    elif f[0] == "path":
        paths[f[1]] = int(f[2])

# every code object of pyprog.py: the hook's calls plus the generators created
bad = ["py:%s: oobprof %d, hook %d + %d created" % (k, got[k], hook[k], gens[k])
       for k in sorted(set(hook) | set(got)) if got[k] != hook[k] + gens[k]]
# frames under pyprog's module code that no code object, or several, explain
for line in open(foldp):
    frames = line.rsplit(" ", 1)[0].split(";")
    if "py:<module> (pyprog.py:1)" in frames and frames[-1].startswith("py:?"):
        bad.append("undecided under py:<module>: %s" % frames[-1][:200])
report("python frames: calls per code object = CPython's profiling hook", bad,
       " (%d code objects, %d calls)" % (len(hook), sum(got.values())))

# pyprog.py's own counters
counters, resumes = {}, {}
for line in open(outp):
    f = line.split()
    if f[0] == "pycalls":
        counters[f[1]] = int(f[2])
    elif f[0] == "pyresumes":
        resumes[f[1]] = int(f[2])
bad = []
for fn, c in sorted(counters.items()):
    ks = [k for k in got if k.split()[0].split(".")[-1] == fn]
    g = sum(got[k] for k in ks)
    want = 2 * c + resumes[fn] if fn in resumes else c
    if len(ks) != 1 or g != want:
        bad.append("%s: oobprof %d (%s), counters say %d" % (fn, g, ",".join(ks), want))
report("python frames: calls = pyprog's counters", bad,
       " (%d functions, %d calls)" % (len(counters), sum(counters.values())))

# call paths of pyprog.py's frames; a generator leaf also counts its
# creation, which the hook does not show (compared above, in total)
folded = collections.Counter()
sortpaths = notsorted = 0
for line in open(foldp):
    stack, n = line.rsplit(" ", 1)
    frames = stack.split(";")
    py = [PY.match(x) for x in frames]
    if py[-1]:
        folded[";".join("%s:%s" % m.groups() for m in py if m)] += int(n)
    if frames[-1] == "py:sort_key (pyprog.py:80)":
        sortpaths += 1
        if not re.search(r"py:main \(pyprog\.py:106\);([^;]+;)*builtin_sorted;([^;]+;)*"
                         r"list_sort;([^;]+;)*_PyEval_EvalFrameDefault;py:sort_key", stack):
            notsorted += 1
genleaf = {k.replace(" ", ":") for k in gens}
keys = [k for k in sorted(set(paths) | set(folded)) if k.split(";")[-1] not in genleaf]
bad = ["%s: oobprof %d, hook %d" % (k, folded[k], paths[k]) for k in keys if folded[k] != paths[k]]
report("python frames: calls per path of Python frames = the hook's", bad, " (%d paths)" % len(keys))
bad = ["%d of %d paths of py:sort_key not so" % (notsorted, sortpaths)] if notsorted or not sortpaths else []
report("python frames: sorted's key function under list_sort under py:main", bad,
       " (%d paths)" % sortpaths)

# C functions as without Python frames; the eval loop's self split with them
nm = subprocess.run(["riscv64-linux-gnu-nm", elf], capture_output=True, text=True).stdout
evala = [int(l.split()[0], 16) for l in nm.splitlines() if l.endswith(" _PyEval_EvalFrameDefault")]
truth, ent = {}, {}
for line in open(selfp):
    f = line.split()
    if not f[0].startswith("["):
        truth[int(f[0].split(":")[1], 16)] = int(f[1])
for line in open(entp):
    a, c = line.split()
    ent[int(a.split(":")[1], 16)] = int(c)
cself, ccalls, pyself = collections.Counter(), collections.Counter(), 0
for fn in funcs:
    if fn["name"].startswith("py:"):
        pyself += int(fn.get("self_instructions", 0))
        continue
    a = int(fn["addr"], 16)
    cself[a] += int(fn.get("self_instructions", 0))
    ccalls[a] += int(fn.get("calls", 0))
bad = []
if len(evala) != 1:
    bad.append("no _PyEval_EvalFrameDefault in nm")
else:
    e = evala[0]
    if cself[e] + pyself != truth.get(e):
        bad.append("eval loop %d + py frames %d, histogram %s" % (cself[e], pyself, truth.get(e)))
    bad += ["0x%x: oobprof %d, truth %d" % (a, cself[a], c) for a, c in sorted(truth.items())
            if a != e and cself[a] != c]
bad += ["calls 0x%x: oobprof %d, entry pc ran %d" % (a, ccalls[a], c)
        for a, c in sorted(ent.items()) if ccalls[a] != c]
report("python frames: C functions unchanged, the eval loop's self = eval + py frames", bad,
       " (py frames %d of the eval loop's %s instructions)"
       % (pyself, truth.get(evala[0]) if evala else "?"))

bad = ["%s %s, expected 0" % (k, st.get(k))
       for k in ("repairs_unknown", "repairs_unwind", "repairs_ambiguous", "py_mismatch")
       if st.get(k) != 0]
report("python frames: repairs", bad,
       " (frames %s: by opcodes %s, by call site %s, by generator %s, ambiguous %s, "
       "of no code object of the map %s)" % (st.get("py_frames"), st.get("py_by_opcodes"),
                                             st.get("py_by_call_site"), st.get("py_by_generator"),
                                             st.get("py_ambiguous"), st.get("py_unknown")))
EOF
exit 0
