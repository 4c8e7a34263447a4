#!/bin/sh
# test_python_stacks.sh: the exact stack with Python frames (stacks-at
# --pycode; RECONSTRUCTION.md 17) at points where CPython itself says what
# its frames are. tests/fixtures/python/pychain.py, run by the cross-built
# CPython 3.11 under qemu-riscv64 (gen-python.sh), prints at each probe the
# interpreter's own frame chain (sys._getframe, f_back), and print is called
# nowhere else. Ground truth that owes nothing to oobprof:
#   probe records       the records where the pc is builtin_print's entry
#                       (readelf's symbol; the records found by a scan of the
#                       trace's TracerV form, not by a reconstruction): one
#                       per "chain" line, as many as the plugin's histogram
#                       counts at that pc
#   probe K             the py: frames of the stack at the K-th such record,
#                       innermost first, = the K-th printed chain, name,
#                       file and first line. A frame named `? (A | B)` (code
#                       objects that ran the same opcodes, which no decided
#                       call site tells apart: RECONSTRUCTION.md 17, "not
#                       exact") is a SKIP when the chain's frame is among
#                       its candidates and every other frame is equal
#   C frames            the stack's other frames = the stack without --pycode
#   repairs             py_mismatch 0: every planned end met a Python frame
# Prints PASS/FAIL/SKIP: test_python_stacks: <case>[: why].
set -u
T=test_python_stacks
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
G=$OOB_BUILDDIR/tests/gen/python
CLI=$OOB_BUILDDIR/oobprof
W=$OOB_BUILDDIR/tests/out/python_stacks
HOST_PYTHON=${BUILD_PYTHON:-/usr/bin/python3.11}

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

TR=$G/pychain.oobt
PY=$G/bin/python3.11
if [ ! -s "$TR" ] || [ ! -s "$G/pychain.hist" ] || [ ! -x "$PY" ]; then
	skip all "python trace not generated (see tests/out/gen-fixtures.log)"
	exit 0
fi
rm -rf "$W" && mkdir -p "$W"
if ! sh "$OOB_SRCDIR/tests/tools/pymap.sh" "$G" "$HOST_PYTHON" pychain >"$W/map" 2>"$W/map.err"; then
	fail map "pymap.sh: $(head -c 300 "$W/map.err")"
	exit 0
fi
pc=$(readelf -sW "$PY" | awk '$8 == "builtin_print" && $4 == "FUNC" { print "0x" $2 }')
if [ -z "$pc" ]; then
	fail "probe records" "no builtin_print in $PY's symbols"
	exit 0
fi
pc=$(printf '0x%x' "$((pc))") # as the histogram writes it
# The record index of every retirement of pc: the trace as 16-byte TracerV
# records (cycle, slot with the valid bit 63) on a pipe.
"$CLI" convert --to tracerv-bin "$TR" -o - 2>"$W/convert.err" | python3 -c '
import struct, sys
want = struct.pack("<Q", (1 << 63) | int(sys.argv[1], 0))
inp = sys.stdin.buffer
inp.readline()  # the clock header
n, out, buf = 0, [], b""
while True:
    more = inp.read(1 << 24)
    buf += more
    pos = buf.find(want)
    while pos >= 0:
        if pos % 16 == 8:
            out.append(str(n + pos // 16))
        pos = buf.find(want, pos + 1)
    whole = len(buf) // 16 * 16
    n += whole // 16
    buf = buf[whole:]
    if not more:
        break
print(",".join(out))
' "$pc" >"$W/at" || {
	fail "probe records" "convert: $(head -c 300 "$W/convert.err")"
	exit 0
}
nat=$(tr ',' '\n' <"$W/at" | grep -c .)
nline=$(grep -c '^chain ' "$G/pychain.out")
nhist=$(awk -v pc="$pc" '$1 == pc { print $2 }' "$G/pychain.hist")
if [ "$nat" -gt 0 ] && [ "$nat" = "$nline" ] && [ "$nat" = "${nhist:-0}" ]; then
	pass "probe records: $nat retirements of builtin_print ($pc) = $nline chain lines = the histogram's count"
else
	fail "probe records" "$nat records at $pc, $nline chain lines, histogram ${nhist:-none}"
	exit 0
fi
for v in py c; do
	set -- --elf "$PY"
	[ $v = py ] && set -- "$@" --pycode "$W/map"
	"$CLI" stacks-at "$@" --at "$(cat "$W/at")" "$TR" >"$W/stacks.$v" 2>"$W/stacks.$v.err" || {
		fail "stacks-at ($v)" "exit status $? ($(head -c 300 "$W/stacks.$v.err"))"
		exit 0
	}
done
"$CLI" stats --elf "$PY" --pycode "$W/map" "$TR" >"$W/stats" 2>&1 || fail stats "exit status $?"
python3 - "$T" "$G/pychain.out" "$W/stacks.py" "$W/stacks.c" "$W/stats" <<'EOF'
import json, re, sys
T, out, with_py, without, stats = sys.argv[1:]
chains = [l[6:].rstrip("\n").split(";") for l in open(out) if l.startswith("chain ")]
py_st = [json.loads(l) for l in open(with_py)]
c_st = [json.loads(l) for l in open(without)]


def say(word, case, why=""):
    print("%s: %s: %s%s" % (word, T, case, ": " + why if why else ""))


def candidates(name):
    m = re.fullmatch(r"\? \((.*)\)", name)
    return m.group(1).split(" | ") if m else None


bad_c = []
for k, (want, s, c) in enumerate(zip(chains, py_st, c_st), 1):
    names = [f["name"] for f in s["frames"]]
    py = [n[3:] for n in names if n.startswith("py:")]
    case = "probe %d: %s (%d Python frames)" % (k, want[1] if len(want) > 1 else want[0],
                                                 len(want))
    if [n for n in names if not n.startswith("py:")] != [f["name"] for f in c["frames"]]:
        bad_c.append(k)
    if py == want:
        say("PASS", case)
        continue
    amb = [i for i, (g, w) in enumerate(zip(py, want)) if g != w]
    if len(py) == len(want) and all(w in (candidates(py[i]) or []) for i in amb
                                    for w in [want[i]]):
        say("SKIP", case, "known gap: %s among the candidates of %s" % (
            ", ".join(want[i] for i in amb), ", ".join("py:" + py[i] for i in amb)))
        continue
    say("FAIL", case, "want %s; got %s" % (";".join(want), ";".join(py)))
if bad_c:
    say("FAIL", "C frames as without --pycode", "probes %s differ" % bad_c)
else:
    say("PASS", "C frames as without --pycode (%d stacks)" % len(c_st))
st = dict(l.split(": ", 1) for l in open(stats).read().splitlines() if ": " in l)
mm = st.get("py_mismatch", "?").strip()
say("PASS" if mm == "0" else "FAIL", "repairs: py_mismatch %s (frames %s: by opcodes %s, "
    "by call site %s, by generator %s, ambiguous %s, unknown %s)" % (
        mm, st.get("py_frames"), st.get("py_by_opcodes"), st.get("py_by_call_site"),
        st.get("py_by_generator"), st.get("py_ambiguous"), st.get("py_unknown")))
EOF
