#!/bin/sh
# test_sample_exact.sh: every sample of `oobprof sample` on a full-system
# boot checked against the exact stack at its instruction count (issue 17).
# Our Linux boots twice under qemu-system-riscv64 -icount (deterministic:
# the same execution): traced once (tests/gen/linux/sv39/boot.oobt, made by
# gen-linux.sh) and sampled here through -gdb at 1000 Hz with --instret and
# the CFI of vmlinux and the user programs. Then:
# - tests/tools/minstret (the trace reader and rules of its own, no
#   reconstruction) turns each sample's minstret into the record index the
#   hart stopped at (docs/formats/SAMPLES.md, "minstret and the record
#   index"); `oobprof stacks-at` gives the exact stack at all of them in one
#   pass;
# - the record's pc must be the sampled pc (or, when the record is the trap
#   vector's first, the pc the interrupt came at: the stub stopped the hart
#   between the last record and the interrupt; the stack is then the one
#   below the trap marker). Past a wfi the idle hart's clock jumps by what
#   the trace does not show: minstret fits that jump with the first sample
#   after it whose pc, with another sample's, lands in the records after
#   that wfi; samples it cannot place are counted as idle (at most 10 %);
# - each sampled stack, symbolized here from `nm` (not by oobprof), must be
#   the exact stack's innermost segment (up to its first trap marker or task
#   root): equal to it for a complete walk, its inner part for an incomplete
#   one (counted). Frames compare by function entry, or by name with GCC's
#   clone suffixes (.constprop.0, .isra.0, .part.0) and oobprof's " (file)"
#   taken off. Code in no ELF (the firmware; the kernel before it turns
#   the MMU on) has no CFI: there the sampler has the pc alone, checked above.
#   Two walks end where the trace shows a jump: _start_kernel tail-calls
#   start_kernel (the walk's last frame is a stale ra), and handle_exception
#   jumps to the interrupt and fault handlers with ra = ret_from_exception
#   (ret_from_kernel_thread, inside its symbol, calls a kernel thread's
#   function where the trace starts the thread's stack): those last frames
#   are dropped. Right after a context switch the trace may not yet know
#   which parked task was resumed (RECONSTRUCTION.md 6, switch_undos): a
#   walk equal to the exact stack through __schedule and different below is
#   counted as that, at most 2 % of the samples.
set -u
T=test_sample_exact
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
MAP=$OOB_BUILDDIR/tests/tools/minstret
W=$OOB_BUILDDIR/tests/out/sample_exact
L=$OOB_BUILDDIR/tests/gen/linux
FW=${OPENSBI_FW:-/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.bin}
rm -rf "$W" && mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
QPID=
cleanup() { [ -n "$QPID" ] && kill "$QPID" 2>/dev/null; }
trap cleanup EXIT

# ---- stacks-at on a user program: bad input, and the innermost frame ----
P=$OOB_BUILDDIR/tests/gen/progs/fnptr
if [ -e "$P.oobt" ]; then
	"$CLI" stacks-at --at 12x --elf "$P" "$P.oobt" >/dev/null 2>"$W/e1"
	r1=$?
	"$CLI" stacks-at --elf "$P" "$P.oobt" >/dev/null 2>"$W/e2"
	r2=$?
	printf '5\n# a comment\n\n-3\n' >"$W/bad.at"
	"$CLI" stacks-at --at-file "$W/bad.at" --elf "$P" "$P.oobt" >/dev/null 2>"$W/e3"
	r3=$?
	printf '0x1000\n1\n' >"$W/one.samples"
	"$CLI" stacks-at --at 0 "$W/one.samples" >/dev/null 2>"$W/e4"
	r4=$?
	if [ $r1 = 2 ] && grep -q "'12x' is not a record index" "$W/e1" && [ $r2 = 2 ] &&
		grep -q "give the record indices" "$W/e2" && [ $r3 = 2 ] &&
		grep -q "line 4: '-3' is not a record index" "$W/e3" && [ $r4 = 1 ] &&
		grep -q "a file of samples has no records" "$W/e4"; then
		pass "stacks-at: bad indices, none, a samples file: exit 2, 2, 2, 1 with the reason"
	else
		fail "stacks-at errors" "exits $r1 $r2 $r3 $r4: $(cat "$W/e1" "$W/e2" "$W/e3" "$W/e4")"
	fi
	# every 997th record, and one past the end: the innermost frame is the
	# function nm puts the record's pc in (the pcs from oobt-decode.py)
	python3 "$OOB_SRCDIR/tests/tools/oobt-decode.py" "$P.oobt" >"$W/fnptr.pcs"
	nrec=$(wc -l <"$W/fnptr.pcs")
	awk -v n="$nrec" 'NR % 997 == 1 { print NR - 1 } END { print n }' "$W/fnptr.pcs" >"$W/fnptr.at"
	nm -S --defined-only "$P" >"$W/fnptr.nm"
	if "$CLI" stacks-at --at-file "$W/fnptr.at" --elf "$P" "$P.oobt" >"$W/fnptr.jsonl" \
		2>"$W/fnptr.err" && python3 - "$W" "$nrec" <<'PY'; then
import json, sys
w, nrec = sys.argv[1], int(sys.argv[2])
pcs = [int(l.split()[0], 16) for l in open(w + "/fnptr.pcs")]
syms = []
for l in open(w + "/fnptr.nm"):
    f = l.split()
    if len(f) == 4 and f[2] in "TtWw":
        syms.append((int(f[0], 16), int(f[1], 16)))
def entry(a):
    c = [s for s, z in syms if s <= a < s + z]
    return max(c) if c else None
n = bad = 0
for l in open(w + "/fnptr.jsonl"):
    e = json.loads(l)
    if e["at"] >= nrec:
        bad += e["found"]
        continue
    n += 1
    inner = e["frames"][0]
    want = entry(pcs[e["at"]])
    if int(e["pc"], 16) != pcs[e["at"]] or (want is not None and int(inner["addr"], 16) != want):
        bad += 1
        print("# record %d: pc %s, innermost %s, nm says 0x%x" % (e["at"], e["pc"], inner, want or 0))
print("# stacks-at: %d records of fnptr, %d wrong" % (n, bad))
sys.exit(0 if n > 10 and not bad else 1)
PY
		pass "stacks-at: the record's pc and its function innermost, past the end not found"
	else
		fail "stacks-at on fnptr" "$(head -c 300 "$W/fnptr.err")"
	fi
fi

if ! command -v qemu-system-riscv64 >/dev/null 2>&1 || [ ! -e "$L/sv39/boot.oobt" ] ||
	[ ! -e "$FW" ]; then
	echo "SKIP: $T: no qemu-system-riscv64, OpenSBI or booted Linux (gen-linux.sh)"
	exit 0
fi
if [ ! -x "$MAP" ]; then
	fail setup "$MAP not built (make)"
	exit 0
fi
PROGS="init calls sort syscalls signals waits"
ELFS="--elf $L/sv39/vmlinux"
for p in $PROGS; do
	ELFS="$ELFS --elf $L/$p"
done

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
qemu-system-riscv64 -M virt -m 256M -smp 1 -nographic -no-reboot -bios "$FW" \
	-kernel "$L/sv39/Image" -icount shift=0,sleep=off,align=off -seed 1 \
	-gdb "tcp:127.0.0.1:$port" -S >"$W/console" 2>&1 &
QPID=$!
# the stub listens once QEMU is up: retry the connection for 10 s
i=0
while ! grep -qi ":$(printf '%04X' "$port") 00000000:0000 0A" /proc/net/tcp 2>/dev/null && [ $i -lt 200 ]; do
	sleep 0.05
	i=$((i + 1))
done
start=$(date +%s)
# shellcheck disable=SC2086
timeout 300 "$CLI" sample --hz 1000 --unwind cfi $ELFS --instret "127.0.0.1:$port" \
	-o "$W/samples" 2>"$W/sample.err"
rc=$?
wait "$QPID"
QPID=
cat "$W/sample.err"
if [ $rc != 0 ] || ! grep -q "reboot: Power down" "$W/console"; then
	fail sample "exit $rc, $(head -c 300 "$W/sample.err"); console: $(tail -c 200 "$W/console")"
	exit 0
fi
echo "# sampled in $(($(date +%s) - start)) s"

# "N PC" per sample: minstret and the pc the hart stopped at
awk '/^# instret / { n = $3; pc = "" } /^0x/ && pc == "" { pc = $1; print n, pc }' \
	"$W/samples" >"$W/instret"
"$MAP" "$L/sv39/boot.oobt" <"$W/instret" >"$W/map" 2>"$W/map.err" || {
	fail minstret "$(cat "$W/map.err")"
	exit 0
}
cat "$W/map.err"
awk '$2 != "idle" { print $2; if ($3 ~ /^[0-9]/) print $3 }' "$W/map" >"$W/at"
t0=$(date +%s)
# shellcheck disable=SC2086
"$CLI" stacks-at $ELFS --at-file "$W/at" "$L/sv39/boot.oobt" -o "$W/exact.jsonl" \
	2>"$W/exact.err" || {
	fail stacks-at "$(head -c 300 "$W/exact.err")"
	exit 0
}
echo "# stacks-at: $(wc -l <"$W/at") indices in $(($(date +%s) - t0)) s"
for e in sv39/vmlinux $PROGS; do
	nm -S --defined-only "$L/$e"
done >"$W/nm"

python3 - "$W" <<'PY'
import json, re, sys
w = sys.argv[1]
syms = []
for line in open(w + "/nm"):
    f = line.split()
    if len(f) == 3:  # no size (assembly labels): up to the next symbol
        f = [f[0], "0"] + f[1:]
    if len(f) == 4 and f[2] in "TtWw":
        syms.append((int(f[0], 16), int(f[1], 16), f[3]))
syms.sort()
starts = [s[0] for s in syms]
import bisect
def sym(a):
    i = bisect.bisect_right(starts, a) - 1
    # a sized symbol covering a (labels inside it start after it), else a
    # label without size up to the next symbol (at most 4 KiB away)
    for j in range(i, max(i - 64, -1), -1):
        if a < syms[j][0] + syms[j][1]:
            i = j
            break
    else:
        nxt = starts[i + 1] if i + 1 < len(starts) else a + 1
        if i < 0 or syms[i][1] or nxt - syms[i][0] > 0x1000 or a >= nxt:
            return None, "0x%x" % a
    return syms[i][0], syms[i][2]
# entry.S's code after handle_exception (ret_from_exception, and
# resume_userspace without a size) is one frame with it, or ret_from_exception
# when a handler returns there: one name for all three
entry = {"ret_from_exception": "handle_exception", "resume_userspace": "handle_exception"}
def norm(n):
    n = re.sub(r" \([^()]*\)$", "", n)
    n = re.sub(r"\.(constprop|isra|part|cold|lto_priv)\.?[0-9]*", "", n)
    return entry.get(n, n)

samples, cur, ins = [], [], None
for line in open(w + "/samples"):
    line = line.strip()
    if line.startswith("# instret "):
        ins = int(line.split()[2])
    elif line in ("0", "1"):
        samples.append((ins, cur, line == "1"))
        cur = []
    elif line and not line.startswith("#"):
        cur.append(int(line, 16))
mapped, fitted = {}, set()
first_wfi = int(re.search(r"the first at (-?[0-9]+)", open(w + "/map.err").read()).group(1))
for line in open(w + "/map"):
    f = line.split()
    if f[-1] == "fit":
        fitted.add(int(f[0]))
        f = f[:-1]
    mapped[int(f[0])] = None if f[1] == "idle" else [int(x) for x in f[1:]]
exact = {}
for line in open(w + "/exact.jsonl"):
    e = json.loads(line)
    exact[e["at"]] = e

# Right after __switch_to, a pc-only trace cannot tell which of the tasks
# parked in __schedule the scheduler resumed: the reconstruction resumes the
# likeliest provisionally and swaps when a later return shows another
# (switch_undos, RECONSTRUCTION.md 6); the records before the swap keep the
# first guess. A walk that agrees from its pc through __schedule and then
# differs is counted as such, and bounded.
def provisional(got, seg, same):
    k = 0
    while k < min(len(got), len(seg)) and same(got[k], seg[k]):
        k += 1
    return 0 < k < min(len(got), len(seg)) and "__schedule" in [norm(g[1]) for g in got[:k]]
switched = []
n = len(samples)
idle = pc_ok = equal = inner = fw = incomplete = pre_irq = at_fault = fit = 0
vector = [a for a, _, n in syms if n == "handle_exception"][0]
bad = []
for ins_n, addrs, complete in samples:
    idx = mapped[ins_n]
    if idx is None:
        idle += 1
        continue
    if ins_n in fitted:
        fit += 1  # its pc chose the clock's jump at the wfi before it
    # a record that did not retire (a fault): stopped before it or at its trap
    if len(idx) > 1 and exact[idx[1]]["found"] and int(exact[idx[1]]["pc"], 16) == addrs[0]:
        at_fault += 1
        idx = idx[1]
    else:
        idx = idx[0]
    e = exact[idx]
    frames = e.get("frames", [])
    if e["found"] and int(e["pc"], 16) != addrs[0] and int(e["pc"], 16) == vector:
        # the record is the trap vector's first: the stub stopped the hart
        # after record idx - 1 retired and before it took the interrupt,
        # at the pc the interrupt returns to: the stack below the marker
        m = [i for i, f in enumerate(frames) if f["kind"] == "marker"]
        below = frames[m[0] + 1:] if m else []
        if below and below[0]["kind"] != "process" and \
                (sym(addrs[0])[0] == int(below[0].get("addr", "0"), 16)):
            pre_irq += 1
            frames = below
            e = dict(e, pc="0x%x" % addrs[0])
    if not e["found"] or int(e["pc"], 16) != addrs[0]:
        bad.append("instret %d: sampled pc 0x%x, record %d has %s" % (ins_n, addrs[0], idx, e.get("pc")))
        continue
    pc_ok += 1
    incomplete += not complete
    seg = []
    for f in frames:
        if f["kind"] in ("marker", "process"):
            break
        seg.append(f)
    got = [sym(a) for a in addrs]
    if got[0][0] is None:
        fw += 1  # no ELF, no CFI: the sampler has the pc only (checked above)
        continue
    # handle_exception jumps to the interrupt and fault handlers with ra set
    # to ret_from_exception, and ret_from_kernel_thread (inside its symbol)
    # calls a kernel thread's function: the walk names handle_exception
    # where the trace saw a jump, or the start of the thread's stack
    if len(got) > 1 and norm(got[-1][1]) == "handle_exception" and seg and \
            norm(seg[-1]["name"]) != "handle_exception":
        got = got[:-1]
    # a signal handler returns into the vDSO's sigreturn trampoline, code in
    # no ELF given, where the trace shows the trap the signal came at
    while not complete and len(got) > len(seg) and got[-1][0] is None:
        got = got[:-1]
    # _start_kernel tail-calls start_kernel (a jump): the walk's last frame
    # is the ra an earlier call left, where the trace shows the jump
    if len(got) > 1 and got[-1][1] == "_start_kernel" and seg and seg[-1]["name"] == "start_kernel":
        got = got[:-1]
    def same(g, f):
        return (g[0] is not None and f.get("addr") and g[0] == int(f["addr"], 16)) or \
            norm(g[1]) == norm(f["name"])
    ok = len(got) <= len(seg) and all(same(g, f) for g, f in zip(got, seg))
    if ok and complete and len(got) == len(seg):
        equal += 1
    elif ok and not complete:
        inner += 1
    elif not complete and provisional(got, seg, same):
        switched.append("instret %d (record %d): sampled %s, exact %s" % (
            ins_n, idx, ";".join(g[1] for g in got), ";".join(f["name"] for f in seg)))
    else:
        bad.append("instret %d (record %d): sampled %s%s, exact %s" % (
            ins_n, idx, ";".join(g[1] for g in got), "" if complete else " (incomplete)",
            ";".join(f["name"] for f in seg)))
checked = n - idle
past = sum(1 for i, _, _ in samples if mapped[i] and mapped[i][0] > first_wfi)
print("# %d samples: %d mapped to a record (%d of them past a wfi, of which %d fitted the "
      "clock's jump there), %d not (idle); pc at the mapped record: %d of %d (%d stopped "
      "before an interrupt was taken, %d at the trap of a fault)"
      % (n, checked, past, fit, idle, pc_ok, checked, pre_irq, at_fault))
print("# stacks: %d equal (complete walks), %d the inner part (incomplete walks, of %d "
      "incomplete), %d in no ELF (pc only), %d wrong" % (equal, inner, incomplete, fw,
                                                                 len(bad)))
print("# after a context switch, the trace's provisional choice of task (not yet swapped): %d"
      % len(switched))
for b in switched + bad[:40]:
    print("# " + b[:400])
ok = n >= 100 and checked >= 0.9 * n and not bad and pc_ok == checked and \
    len(switched) <= 0.02 * checked
sys.exit(0 if ok else 1)
PY
rc=$?
if [ $rc = 0 ]; then
	pass "every sample placed: its pc at the mapped record, its stack the exact one or its inner part"
else
	fail "sampled vs exact stacks" "see the lines above"
fi
