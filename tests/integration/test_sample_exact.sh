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
#   below the trap marker; or, at the MMU's switch-on, the physical pc of
#   the record's virtual one: that fetch faults into the same instruction
#   at its virtual address, and the physical pc never retires). Past a wfi the idle hart's clock jumps by what
#   the trace does not show: minstret fits that jump with the first sample
#   after it whose pc, with another sample's, lands in the records after
#   that wfi; samples it cannot place are counted as idle (at most 10 %);
# - each sampled stack, symbolized here from `nm` (not by oobprof), must be
#   the exact stack, whole: every segment up to the task's root, the trap
#   markers between them included (the sampler joins a kernel stack to the
#   context its trap interrupted through the pt_regs, sampler_trap.h);
#   equal to it for a complete walk, its inner part for an incomplete one
#   (counted: how many got past a trap, how many stopped before the first).
#   Frames compare by function entry, or by name with GCC's clone suffixes
#   (.constprop.0, .isra.0, .part.0) and oobprof's " (file)" taken off;
#   markers by name, any one matching the exact "[trap]" (a trap whose
#   cause the trace did not record). Code in no ELF (the firmware; the
#   kernel before it turns the MMU on) has no CFI: there the sampler has
#   the pc alone, checked above; the kernel's entry from the firmware is a
#   trap from code in no ELF at the bottom of the exact boot stack, which
#   the sampler does not see. Two walks end where the trace shows a jump:
#   _start_kernel tail-calls start_kernel (the walk's last frame is a stale
#   ra), and ret_from_kernel_thread (inside its symbol) calls a kernel
#   thread's function where the trace starts the thread's stack; a walk
#   whose join fails ends at the entry code (named handle_exception) where
#   the trace shows a jump to the handler: those last frames are dropped.
#   Right after a context switch the trace may not yet know which parked task was resumed (RECONSTRUCTION.md 6, switch_undos):
#   a walk equal to the exact stack through __schedule and different below
#   is counted as that; so is one past the resume, still in the kernel's
#   exit path, equal down to the trap and with another trap and user part, when the
#   trace's first later record in user mode shows another task whose stack
#   ends with the sampled user frames (the swap at the return to user mode,
#   switch_user_fixes); at most 2 % of the samples.
#   Where the pt_regs and the trace disagree by design, the user part is
#   not compared (kernel part equal; each counted): past execve's point of
#   no return (load_elf_binary, begin_new_exec; or do_execveat_common with
#   the new program's entry in the pt_regs) the old program's frames
#   are read in the new one's memory; the new program's first fetch faults
#   at _start while the trace still has the frames execve left; an
#   instruction fetch faulting at a call's, tail call's or return's target
#   (the walk starts at the target, the trace applies the transfer when the
#   target runs: one frame more, other or less at the top of the user
#   part); signal
#   delivery after setup_rt_frame (the pt_regs hold the handler's entry,
#   in signal_setup_done or back in do_work_pending);
#   rt_sigreturn after restore_sigcontext (the pt_regs hold the interrupted
#   context, the trace the vDSO trampoline and the signal's trap; the walk
#   whole, or its inner part when incomplete). These
#   stay under 10 % of the samples, and at least 2 % must equal the exact
#   stack across a trap.
set -u
T=test_sample_exact
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
MAP=$OOB_BUILDDIR/tests/tools/minstret
W=$OOB_BUILDDIR/tests/out/sample_exact
L=$OOB_BUILDDIR/tests/gen/linux
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

. "$OOB_SRCDIR/tests/tools/boot-lib.sh"
if ! boot_ready; then
	echo "SKIP: $T: no qemu-system-riscv64, OpenSBI or booted Linux (gen-linux.sh)"
	exit 0
fi
if [ ! -x "$MAP" ]; then
	fail setup "$MAP not built (make)"
	exit 0
fi
boot_elfs
start=$(date +%s)
boot_sample "$W/console" 1 "-icount shift=0,sleep=off,align=off" "$W/samples" --hz 1000 --instret
cat "$W/samples.err"
if [ $rc != 0 ] || ! grep -q "reboot: Power down" "$W/console"; then
	fail sample "exit $rc, $(head -c 300 "$W/samples.err"); console: $(tail -c 200 "$W/console")"
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

# shellcheck disable=SC2086
CLI=$CLI ELFS=$ELFS BOOT=$L/sv39/boot.oobt TRACED_CONSOLE=$L/sv39/console.log python3 - "$W" <<'PY'
import json, os, re, subprocess, sys
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
    elif line.startswith("# trap ["):
        cur.append(line[7:])  # the join: a marker, as the exact stack has
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
# The same past the resume: the task runs on in the kernel's shared exit
# path (do_work_pending, get_signal ...) until it returns to user space,
# where the trace sees its code and swaps (switch_user_fixes). A complete
# walk equal to the exact stack down to the first trap, with another trap
# or user part, is counted as such when the trace confirms it: at the first later
# record in user mode (stacks-at, every 256 records up to 65536 on), the
# trace has another task whose stack ends with the sampled user frames
# (all but the innermost, which may have moved on).
def user_part_differs(got, seg, same, complete):
    m = next((i for i, f in enumerate(seg) if f["kind"] == "marker"), None)
    return complete and m is not None and m + 2 < len(got) and got[m][1].startswith("[") and \
        all(same(g, f) for g, f in zip(got[:m], seg[:m])), m
def swapped_later(guessed, same):
    if not guessed:
        return [], []
    at = sorted({i + 256 * k for _, i, _, _, _ in guessed for k in range(1, 257)})
    with open(w + "/later.at", "w") as f:
        f.write("".join("%d\n" % i for i in at))
    out = subprocess.run([os.environ["CLI"], "stacks-at"] + os.environ["ELFS"].split() +
                         ["--at-file", w + "/later.at", os.environ["BOOT"]],
                         capture_output=True, text=True).stdout
    later = {e["at"]: e for e in map(json.loads, out.splitlines())}
    ok, no = [], []
    for ins_n, idx, got, seg, task in guessed:
        e = next((later[i] for i in range(idx + 256, idx + 256 * 257, 256)
                  if i in later and later[i]["found"] and not int(later[i]["pc"], 16) >> 63), None)
        frames = e["frames"] if e else []
        t = [f["name"] for f in frames if f["kind"] == "process"]
        fr = [f for f in frames if f["kind"] != "process"]
        user = got[user_part_differs(got, seg, same, True)[1] + 2:]
        good = t and t != task and len(user) <= len(fr) and \
            all(same(g, f) for g, f in zip(user[::-1], fr[::-1]))
        (ok if good else no).append("instret %d (record %d): sampled %s, exact %s; in user mode "
                                    "later: %s" % (ins_n, idx, ";".join(g[1] for g in got),
                                                   ";".join(f["name"] for f in seg),
                                                   ";".join(f["name"] for f in frames)))
    return ok, no
switched, guessed = [], []
n = len(samples)
idle = pc_ok = equal = inner = fw = incomplete = pre_irq = at_fault = fit = 0
joined = whole = inner_joined = replaced = exec_start = fetch_fault = 0
sig_setup = sigreturn = mmu_on = 0
inner_first = []
vector = [a for a, _, n in syms if n == "handle_exception"][0]
entries = {a for a, _, n in syms if n == "_start"}
bad = []
# -icount makes the two boots one execution, but not always: a sampled run
# once printed other instret brackets than the traced one (waits: 132
# instructions fewer by 76.98 M) and every pc from instret 70.98 M on was
# off its record. When the consoles differ, the samples up to the first pc
# off its record are checked as usual, the later ones are not comparable.
diverged = cut = None
tc = os.environ.get("TRACED_CONSOLE", "")
if os.path.exists(tc):
    a = open(tc, errors="replace", newline="").read().split("\n")
    b = open(w + "/console", errors="replace", newline="").read().split("\n")
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    if a != b:
        diverged = "console line %d: traced \"%s\", sampled \"%s\"" % (
            k + 1, a[k][:80] if k < len(a) else "", b[k][:80] if k < len(b) else "")
for ins_n, addrs, complete in samples:
    if cut is not None:
        break
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
    # the MMU's switch-on: the fetch after relocate_enable_mmu's satp write
    # faults at its physical pc and the trap goes to the same instruction's
    # virtual address (the trace: a trap from physical code to it); stopped
    # before that fetch, the hart's pc is the physical one, which never
    # retires (the same kernel offset, 2 MiB aligned)
    below = frames[2] if len(frames) > 2 and frames[1]["kind"] == "marker" else {}
    if e["found"] and addrs[0] < 1 << 32 and int(below.get("addr", "0"), 16) >> 32 == 0 and \
            int(e["pc"], 16) >> 63 and (int(e["pc"], 16) - addrs[0]) & 0x1fffff == 0:
        mmu_on += 1
        e = dict(e, pc="0x%x" % addrs[0])
    if not e["found"] or int(e["pc"], 16) != addrs[0]:
        if diverged:
            cut = ins_n
            continue
        bad.append("instret %d: sampled pc 0x%x, record %d has %s" % (ins_n, addrs[0], idx, e.get("pc")))
        continue
    pc_ok += 1
    incomplete += not complete
    # the whole exact stack, up to its task's root: frames and trap markers
    seg = []
    for f in frames:
        if f["kind"] == "process":
            break
        seg.append(f)
    got = [(None, a) if isinstance(a, str) else sym(a) for a in addrs]
    joined += any(isinstance(a, str) for a in addrs)
    if got[0][0] is None:
        fw += 1  # no ELF, no CFI: the sampler has the pc only (checked above)
        continue
    # handle_exception jumps to the interrupt and fault handlers with ra set
    # to ret_from_exception, and ret_from_kernel_thread (inside its symbol)
    # calls a kernel thread's function: the walk names handle_exception
    # where the trace saw a jump, or the start of the thread's stack
    k = len(got) - 1
    if k > 0 and norm(got[k][1]) == "handle_exception" and \
            (k >= len(seg) or norm(seg[k]["name"]) != "handle_exception"):
        got = got[:-1]
    # a signal handler returns into the vDSO's sigreturn trampoline, code in
    # no ELF given, where the trace shows the trap the signal came at
    while not complete and len(got) > 1 and got[-1][0] is None and not got[-1][1].startswith("["):
        got = got[:-1]
    # _start_kernel tail-calls start_kernel (a jump): the walk's last frame
    # is the ra an earlier call left, where the trace shows the jump
    k = len(got) - 1
    if k > 0 and got[k][1] == "_start_kernel" and seg[k - 1]["name"] == "start_kernel":
        got = got[:-1]
    def same(g, f):
        # "[trap]": a trap whose cause the trace did not record
        if f["kind"] == "marker" or g[1].startswith("["):
            return g[1] == f["name"] or (f["name"] == "[trap]" and g[1].startswith("["))
        return (g[0] is not None and f.get("addr") and g[0] == int(f["addr"], 16)) or \
            norm(g[1]) == norm(f["name"])
    # the kernel's entry from the firmware, a trap from code in no ELF
    # (M-mode): the sampler sees no further than start_kernel
    for m in [i for i, f in enumerate(seg) if f["kind"] == "marker"]:
        if all(f["kind"] == "marker" or f["name"].startswith("0x") for f in seg[m + 1:]):
            seg = seg[:m]
            break
    kernel = [norm(g[1]) for g in got if g[0] is not None and g[0] >> 63]
    user_at = next((i + 1 for i, g in enumerate(got) if g[1].startswith("[") and
                    i + 1 < len(got) and got[i + 1][0] is not None and not got[i + 1][0] >> 63), None)
    ok = len(got) <= len(seg) and all(same(g, f) for g, f in zip(got, seg))
    if not (ok and (not complete or len(got) == len(seg))) and user_at and \
            user_at - 1 <= len(seg) and \
            all(same(g, f) for g, f in zip(got[:user_at - 1], seg[:user_at - 1])):
        # past execve's point of no return the old program's memory is
        # gone: its pt_regs' frames are read in the new one's; back in
        # do_execveat_common (free_bprm), start_thread() has put the new
        # program's entry in them (the walk takes it for the syscall's
        # return and starts 4 bytes before it)
        ua = addrs[user_at] if isinstance(addrs[user_at], int) else -1
        if "load_elf_binary" in kernel or "begin_new_exec" in kernel or \
                ("do_execveat_common" in kernel and (ua in entries or ua + 4 in entries)):
            replaced += 1
            continue
        # signal delivery past setup_rt_frame: the pt_regs hold the
        # handler's entry, which the trace shows only when it runs (in
        # signal_setup_done, or back in do_work_pending after it)
        if "signal_setup_done" in kernel or \
                ("do_work_pending" in kernel and ua >= 0 and sym(ua)[0] == ua):
            sig_setup += 1
            continue
        # rt_sigreturn past restore_sigcontext: the pt_regs hold the context
        # the signal interrupted; the trace shows the vDSO trampoline and
        # the signal's trap until the return to user mode
        tramp = [i for i, f in enumerate(seg) if f["name"].startswith("__vdso_rt_sigreturn")]
        if "sys_rt_sigreturn" in kernel and tramp and \
                (len(got) == len(seg) - 2 or (not complete and len(got) < len(seg) - 2)) and \
                all(same(g, f) for g, f in zip(got, seg[:tramp[0]] + seg[tramp[0] + 2:])):
            sigreturn += 1
            continue
        # the new program's first fetch faults at _start: the trace still
        # shows the frames execve left, or none
        if [g[1] for g in got[user_at:]] == ["_start"] and complete:
            exec_start += 1
            continue
        # an instruction fetch that faults at the target of a call, a tail
        # call or a return: the trace applies the transfer when its target
        # runs, the walk starts there (the callee at its entry, the tail
        # callee in its caller's place, or the caller)
        if got[user_at - 1][1] == "[trap: insn_page_fault]":
            a, b = got[user_at + 1:], seg[user_at:]
            c, d = got[user_at:], seg[user_at + 1:]
            def prefix(x, y):
                return len(x) <= len(y) and all(same(g, f) for g, f in zip(x, y)) and \
                    (len(x) == len(y) or not complete)
            if prefix(a, b) or prefix(c, d) or prefix(a, d):
                fetch_fault += 1
                continue
    first = next((i for i, f in enumerate(seg) if f["kind"] == "marker"), len(seg))
    if ok and complete and len(got) == len(seg):
        equal += 1
        whole += first < len(seg)
    elif ok and not complete:
        inner += 1
        # how far the walk got: past the first trap, or not even to it
        if len(got) > first:
            inner_joined += 1
        elif first < len(seg):
            inner_first.append("instret %d: %s, exact %s" % (ins_n, ";".join(g[1] for g in got), ";".join(f["name"] for f in seg)))
    elif provisional(got, seg, same):
        switched.append("instret %d (record %d): sampled %s, exact %s" % (
            ins_n, idx, ";".join(g[1] for g in got), ";".join(f["name"] for f in seg)))
    elif user_part_differs(got, seg, same, complete)[0]:
        guessed.append((ins_n, idx, got, seg, [f["name"] for f in frames if f["kind"] == "process"]))
    else:
        bad.append("instret %d (record %d): sampled %s%s, exact %s" % (
            ins_n, idx, ";".join(g[1] for g in got), "" if complete else " (incomplete)",
            ";".join(f["name"] for f in seg)))
fixed, unconfirmed = swapped_later(guessed, same)
bad += unconfirmed
switched += fixed
if cut is not None:
    later = sum(1 for i, _, _ in samples if i >= cut)
    print("# the sampled run diverged from the traced one (%s): the first pc off its record at "
          "instret %d; the %d samples from there on are not compared" % (diverged, cut, later))
    samples = [x for x in samples if x[0] < cut]
    n = len(samples)
    idle = sum(1 for i, _, _ in samples if mapped[i] is None)
    with open(w + "/diverged", "w") as f:
        f.write("at instret %d (%s); %d samples before it checked, %d after not" % (
            cut, diverged, n, later))
checked = n - idle
past = sum(1 for i, _, _ in samples if mapped[i] and mapped[i][0] > first_wfi)
print("# %d samples: %d mapped to a record (%d of them past a wfi, of which %d fitted the "
      "clock's jump there), %d not (idle); pc at the mapped record: %d of %d (%d stopped "
      "before an interrupt was taken, %d at the trap of a fault, %d at the physical pc of the "
      "MMU's switch-on)"
      % (n, checked, past, fit, idle, pc_ok, checked, pre_irq, at_fault, mmu_on))
print("# stacks: %d equal (complete walks), %d the inner part (incomplete walks, of %d "
      "incomplete), %d in no ELF (pc only), %d wrong" % (equal, inner, incomplete, fw,
                                                                 len(bad)))
print("# whole stacks: %d samples joined a trap's two sides; %d equal to the exact stack across "
      "at least one trap; %d incomplete walks past a trap, %d incomplete before the first"
      % (joined, whole, inner_joined, len(inner_first)))
print("# the user part read in a new program's memory during execve: %d; the new program's "
      "first fetch faulting at _start: %d; a fetch faulting at a call's or return's target: %d"
      % (replaced, exec_start, fetch_fault))
print("# signal delivery with the handler already in the pt_regs: %d; rt_sigreturn with the "
      "interrupted context restored: %d" % (sig_setup, sigreturn))
print("# after a context switch, the trace's provisional choice of task (not yet swapped): "
      "%d, %d of them in the kernel's exit path, swapped at the return to user mode"
      % (len(switched), len(fixed)))
for b in switched + inner_first[:10] + bad[:40]:
    print("# " + b[:400])
# the joins must work (a few percent of the samples are in a syscall or
# fault of a user task, or an interrupt), and the disagreements by design
# stay rare
excused = replaced + exec_start + fetch_fault + sig_setup + sigreturn
# The tracker's look-alike gap (issue 15, pc only): two tasks asleep in
# schedule() with the same kernel frames above it, the trace resumed the
# other one and nothing undid it (one CI run: a waiting process sampled,
# oom_reaper's kthread in the trace; here: a worker_thread kthread sampled,
# kswapd in the trace). Its two shapes: stacks equal from the top through
# schedule() and different below (lookalike), or equal down to the first
# trap with another user part that the trace's later return to user mode
# does not confirm (unconfirmed: a waiting producer in the trace, sort's
# exit handlers later on that hart). The trace is fixed per machine, so
# such a window catches a sample in some runs (2 of 10 here, once 2
# samples). Up to 1 % of the checked samples of these shapes are a known
# gap, printed; any other disagreement is wrong.
def lookalike(b):
    m = re.match(r"instret \d+ \(record \d+\): sampled (.*?), exact (.*)$", b)
    if not m:
        return False
    norm = lambda fr: [re.sub(r"(\.(isra|constprop|part)\.\d+)+$| \(.*\)$", "", x)
                       for x in fr.split(";")]
    a, e = norm(m.group(1)), norm(m.group(2))
    if "schedule" not in a or "schedule" not in e or a.index("schedule") != e.index("schedule"):
        return False
    # markers as same() has them: the exact "[trap]" is any trap
    k = a.index("schedule") + 1
    return a != e and all(x == y or (y == "[trap]" and x.startswith("["))
                          for x, y in zip(a[:k], e[:k]))
alike = [b for b in bad if lookalike(b) or b in unconfirmed]
if bad and len(alike) == len(bad) and len(alike) <= max(1, checked // 100):
    for b in alike:
        print("# known gap: a look-alike task resumed in the trace: " + b[:300])
    with open(w + "/gap", "w") as f:
        f.write("%d of %d samples" % (len(alike), checked))
    bad = []
    gap = True
else:
    gap = False
conds = [("at least 100 samples", n >= 100), ("90 % mapped", checked >= 0.9 * n),
         ("none wrong", not bad), ("every pc at its record", pc_ok == checked),
         ("provisional choices under 2 %", len(switched) <= 0.02 * checked),
         ("2 % equal across a trap", whole >= 0.02 * checked),
         ("excused under 10 %", excused <= 0.1 * checked)]
# what failed, for the FAIL line (CI shows only the summary's lines)
with open(w + "/why", "w") as f:
    f.write("; ".join(["not met: " + what for what, held in conds if not held] + bad[:2])[:600])
for what, held in conds:
    if not held:
        print("# not met: " + what)
sys.exit((4 if cut is not None else 3 if gap else 0) if all(held for _, held in conds) else 1)
PY
rc=$?
if [ $rc = 0 ]; then
	pass "every sample placed: its pc at the mapped record, its stack the exact one or its inner part"
elif [ $rc = 4 ]; then
	echo "SKIP: $T: every sample placed: the sampled run diverged from the traced one $(cat "$W/diverged")"
elif [ $rc = 3 ]; then
	echo "SKIP: $T: every sample placed: known gap (issue 15): $(cat "$W/gap") in a look-alike task the trace resumed (see the lines above)"
else
	fail "sampled vs exact stacks" "$(cat "$W/why" 2>/dev/null)"
fi
