#!/bin/sh
# test_sample_rsp.sh: `oobprof sample`, the out-of-band sampler (issue 17,
# item 1), against the exact profile of the same program. The program
# (tests/fixtures/sample/sampled.c: a deterministic workload, every round
# alike) is built twice for RISC-V, with and without frame pointers; a run of
# a few rounds is traced by the QEMU plugin and folded by oobprof: its
# stacks are the ground truth. A run of many rounds under qemu-riscv64 -g is
# sampled at 100 Hz (~4 s; at 200 Hz on a loaded host the guest advances
# too little between samples for them to be independent draws), and then:
# - CFI (-fomit-frame-pointer build, --unwind cfi): the stack of every
#   complete walk, symbolized here from `nm` (not by oobprof), is a stack of
#   the exact profile, from _start down; failed walks (they stop at code
#   without CFI: static glibc has no FDE for strtol, exit, ...) are at most
#   3 % and what they found is the innermost part of an exact stack;
# - frame pointers (-fno-omit-frame-pointer -fno-shrink-wrap: GCC sets up no
#   frame on paths that need none otherwise; --unwind fp): every sample whose
#   pc is in the program's own code, outside the instructions of a prologue
#   or epilogue where s0 is not the frame's (objdump), has an exact stack
#   from main down (static glibc has no frame pointers above main); the
#   others are at most 3 %;
# - both: `oobprof diff --json` of the trace against the samples counts every
#   sample and puts the share of every function expected in 5 samples or more
#   within 3 sigma of the binomial error; the rarer functions (main, light:
#   a few instructions per round) take at most 3 % of the samples together.
#   They get more than their instruction share: QEMU stops at translation-
#   block starts, and host time is spent on the block lookups of returns
#   (measured: ~1 % of the samples where instructions say 0.002 %);
# - --instret: one "# instret N" line per sample, N non-decreasing;
# - a program of three threads (tests/fixtures/sample/threads.c): QEMU user
#   mode stops only the thread the signal went to, so only that one is
#   sampled (no "# thread" lines), and its stacks are exact ones (CFI);
# - bad stubs (tests/tools/bad_stub.py: closes, bad checksums, garbage,
#   silence) and no stub: exit status 1 and a message naming the fault,
#   within the timeout (no hang).
set -u
T=test_sample_rsp
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
PLUGIN=$OOB_BUILDDIR/tests/gen/progs/oobtrace.so
W=$OOB_BUILDDIR/tests/out/sample_rsp
rm -rf "$W" && mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
QPID=

cleanup() { [ -n "$QPID" ] && kill "$QPID" 2>/dev/null; }
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: until something listens (at most 10 s), seen in
# /proc/net/tcp: a stub serves one connection, a probe would take it.
wait_port() {
	python3 - "$1" <<'PY'
import sys, time
want = ":%04X" % int(sys.argv[1])
for _ in range(200):
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = open(f).read().split("\n")[1:]
        except OSError:
            continue
        if any(len(r.split()) > 3 and r.split()[1].endswith(want) and r.split()[3] == "0A"
               for r in rows):
            sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
PY
}

# ---- bad stubs: need only python3 ----
for mode in close badsum garbage silent; do
	port=$(free_port)
	python3 "$OOB_SRCDIR/tests/tools/bad_stub.py" "$mode" "$port" &
	spid=$!
	wait_port "$port" || true
	start=$(date +%s)
	timeout 30 "$CLI" sample --timeout 1000 "127.0.0.1:$port" >"$W/bad.out" 2>"$W/bad.err"
	rc=$?
	took=$(($(date +%s) - start))
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	case $mode in
	close) want="closed the connection" ;;
	badsum) want="bad checksum" ;;
	garbage) want="garbage" ;;
	silent) want="no answer from the stub in 1000 ms" ;;
	esac
	if [ $rc = 1 ] && grep -q "$want" "$W/bad.err" && [ "$took" -le 10 ]; then
		pass "bad stub ($mode): exit 1, \"$want\", ${took} s"
	else
		fail "bad stub ($mode)" "exit $rc after ${took} s: $(head -c 300 "$W/bad.err")"
	fi
done
port=$(free_port)
"$CLI" sample "127.0.0.1:$port" >/dev/null 2>"$W/refused.err"
rc=$?
if [ $rc = 1 ] && grep -q "connecting to 127.0.0.1:$port: Connection refused" "$W/refused.err"; then
	pass "no stub: exit 1, connection refused"
else
	fail "no stub" "exit $rc: $(cat "$W/refused.err")"
fi

for tool in qemu-riscv64 riscv64-linux-gnu-gcc riscv64-linux-gnu-objdump; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "SKIP: $T: $tool not installed"
		exit 0
	fi
done
if [ ! -e "$PLUGIN" ]; then
	echo "SKIP: $T: no QEMU plugin ($PLUGIN: tests/tools/gen-programs.sh)"
	exit 0
fi

# ---- the program, its exact profile ----
SRC=$OOB_SRCDIR/tests/fixtures/sample/sampled.c
FLAGS="-g -O2 -static -fno-optimize-sibling-calls"
riscv64-linux-gnu-gcc $FLAGS -fno-omit-frame-pointer -fno-shrink-wrap -o "$W/fp" "$SRC" &&
	riscv64-linux-gnu-gcc $FLAGS -fomit-frame-pointer -o "$W/cfi" "$SRC" || {
	fail build "riscv64-linux-gnu-gcc failed"
	exit 0
}
# three threads, each in its own loop (threads.c), for the user-mode rule
riscv64-linux-gnu-gcc $FLAGS -fomit-frame-pointer -pthread -o "$W/thr" \
	"$OOB_SRCDIR/tests/fixtures/sample/threads.c" || fail build "threads.c"
for v in fp cfi thr; do
	env -i qemu-riscv64 -plugin "$PLUGIN,out=$W/$v.oobt" "$W/$v" 20 >/dev/null &&
		"$CLI" fold --elf "$W/$v" "$W/$v.oobt" >"$W/$v.exact" 2>"$W/$v.fold.err" || {
		fail "$v: exact profile" "$(head -c 300 "$W/$v.fold.err")"
		continue
	}
	riscv64-linux-gnu-objdump -d "$W/$v" >"$W/$v.dis"
	nm -S --defined-only "$W/$v" >"$W/$v.nm"
done

# sample V UNWIND [OPTIONS]: samples a run of V at 100 Hz into $W/V.samples.
sample() {
	v=$1 unwind=$2
	shift 2
	port=$(free_port)
	qemu-riscv64 -g "$port" "$W/$v" 20000 >"$W/$v.run" &
	QPID=$!
	wait_port "$port" || {
		fail "$v: qemu -g" "nothing listens on $port"
		return 1
	}
	timeout 120 "$CLI" sample --hz 100 --pid "$QPID" --unwind "$unwind" --elf "$W/$v" "$@" \
		"127.0.0.1:$port" -o "$W/$v.samples" 2>"$W/$v.err"
	rc=$?
	wait "$QPID"
	QPID=
	cat "$W/$v.err"
	grep -q "^rounds=20000 " "$W/$v.run" || {
		fail "$v: sampled run" "the program did not finish: $(cat "$W/$v.run")"
		return 1
	}
	[ $rc = 0 ] || fail "$v: oobprof sample" "exit $rc: $(head -c 300 "$W/$v.err")"
	return $rc
}

# check V UNWIND: the stacks of the samples against the exact ones.
check_stacks() {
	python3 - "$W/$1" "$2" <<'PY'
import re, sys
base, unwind = sys.argv[1], sys.argv[2]
syms = []
for line in open(base + ".nm"):
    f = line.split()
    if len(f) == 4 and f[2] in "TtWw":
        syms.append((int(f[0], 16), int(f[1], 16), f[3]))
syms.sort()
# aliases (one address, several names: ____strtol_l_internal and
# ____strtoll_l_internal) all become the first, on both sides
canon, first = {}, {}
for a, _, n in syms:
    canon[n] = first.setdefault(a, n)
def name(a):
    lo, hi = 0, len(syms)
    while lo < hi:
        m = (lo + hi) // 2
        if syms[m][0] <= a: lo = m + 1
        else: hi = m
    if lo and a < syms[lo - 1][0] + syms[lo - 1][1]:
        return canon[syms[lo - 1][2]]
    return "0x%x" % a
# where s0 is not the frame's own: from the entry to the "add s0,sp,N" that
# sets it, and after the "ld s0" that restores the caller's
edges = {}
cur = None
for line in open(base + ".dis"):
    m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
    if m:
        cur = m.group(2)
        edges[cur] = [int(m.group(1), 16), None, None]
        continue
    m = re.match(r"^\s+([0-9a-f]+):\s+[0-9a-f]+\s+(\S+)\s+(\S+)", line)
    if m and cur:
        a, op, args = int(m.group(1), 16), m.group(2), m.group(3)
        if op in ("add", "addi") and args.startswith("s0,sp,") and edges[cur][1] is None:
            edges[cur][1] = a
        if op == "ld" and args.startswith("s0,"):
            edges[cur][2] = a
def in_edge(fn, a):
    e = edges.get(fn)
    if not e or e[1] is None:
        return True  # no frame pointer at all: libc
    return a <= e[1] or (e[2] is not None and a > e[2])
exact, inner = set(), set()  # the stacks; their innermost parts
for line in open(base + ".exact"):
    fr = [canon.get(f, f) for f in line.rsplit(" ", 1)[0].split(";")]
    exact.add(";".join(fr))
    inner.update(";".join(fr[i:]) for i in range(len(fr)))
def from_main(s):
    fr = s.split(";")
    return ";".join(fr[fr.index("main"):]) if "main" in fr else None
exact_main = {from_main(s) for s in exact} - {None}
samples, cur_s = [], []
for line in open(base + ".samples"):
    line = line.strip()
    if not line or line.startswith("#"):
        continue
    if line in ("0", "1"):
        samples.append((cur_s, line == "1"))
        cur_s = []
    else:
        cur_s.append(int(line, 16))
own = {"main", "heavy", "light", "work", "rec"}
bad, unchecked, failed = [], 0, 0
for addrs, ok in samples:
    names = [name(a) for a in addrs]
    stack = ";".join(reversed(names))
    failed += not ok
    if unwind == "cfi" and not ok:
        if stack not in inner:
            bad.append(stack)
    elif unwind == "cfi":
        if stack not in exact:
            bad.append(stack)
    elif names[0] in own and not in_edge(names[0], addrs[0]):
        if from_main(stack) not in exact_main:
            bad.append(stack)
    else:
        unchecked += 1
n = len(samples)
print("# %s: %d samples, %d failed walks, %d not checked (libc, prologues), %d distinct stacks"
      % (unwind, n, failed, unchecked, len({";".join(map(name, a)) for a, _ in samples})))
ok = n >= 150 and not bad and unchecked <= 0.03 * n and (unwind != "cfi" or failed <= 0.03 * n)
if not ok:
    print("FAIL: test_sample_rsp: %s stacks: %d samples, %d not in the exact profile, e.g. %s; "
          "%d unchecked, %d failed" % (unwind, n, len(bad), bad[:3], unchecked, failed))
sys.exit(0 if ok else 1)
PY
}

check_shares() {
	"$CLI" diff --json --elf "$W/$1" "$W/$1.oobt" "$W/$1.samples" >"$W/$1.diff" 2>"$W/$1.diff.err"
	python3 - "$W/$1.diff" "$W/$1.samples" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = sum(1 for l in open(sys.argv[2]) if l.strip() in ("0", "1"))
s = d["summary"]
f = {r["name"]: r for r in d["functions"]}
print("# %s: function share error %.4f, heavy %.3f vs %.3f, rec %.3f vs %.3f, work %.3f vs %.3f"
      % (sys.argv[3], s["function_error"], f["heavy"]["base"], f["heavy"]["other"],
         f["rec"]["base"], f["rec"]["other"], f["work"]["base"], f["work"]["other"]))
assert d["other"]["total"] == n, (d["other"]["total"], n)
common = [r for r in d["functions"] if r["base"] * n >= 5]
rare = sum(r["other"] for r in d["functions"] if r["base"] * n < 5)
print("# %s: %d samples, %d common functions, %.4f of the samples in rare ones"
      % (sys.argv[3], n, len(common), rare))
assert len(common) == 3, common
assert all(r["within_bound"] for r in common), common
assert rare <= 0.03, rare
PY
}

for v in cfi fp; do
	extra=
	[ $v = cfi ] && extra=--instret
	sample $v $v $extra || continue
	check_stacks $v $v && pass "$v: every sampled stack is an exact one"
	check_shares $v && pass "$v: shares within 3 sigma of the exact ones (oobprof diff)" ||
		fail "$v: shares" "$(head -c 300 "$W/$v.diff.err")"
done
# QEMU user mode's stub stops only the thread SIGINT went to and gives
# stale registers for the others: with --pid the sampler samples that one
# alone (no "# thread" lines), and its stacks are exact ones.
if sample thr cfi; then
	if ! check_stacks thr cfi; then
		fail "threads, user mode" "the stacks (see above)"
	elif grep -q "^# thread" "$W/thr.samples"; then
		fail "threads, user mode" "$(grep -c '^# thread' "$W/thr.samples") thread lines"
	else
		pass "threads, user mode: the signalled thread alone, its stacks exact ones"
	fi
fi
python3 - "$W/cfi.samples" <<'PY' && pass "--instret: one non-decreasing instret per sample" || fail "--instret" "see above"
import sys
vals, n = [], 0
for l in open(sys.argv[1]):
    if l.startswith("# instret "):
        vals.append(int(l.split()[2]))
    n += l.strip() in ("0", "1")
ok = n > 0 and len(vals) == n and all(a <= b for a, b in zip(vals, vals[1:]))
if not ok:
    print("FAIL: test_sample_rsp: instret: %d values for %d samples" % (len(vals), n))
sys.exit(0 if ok else 1)
PY

# ---- full system: our Linux booting under qemu-system-riscv64 -icount ----
# Sampled at 1000 Hz through -gdb (the interrupt byte stops it; virtual
# time stands still meanwhile, so as fast as stops go) with the CFI of vmlinux
# and of the user programs; every stack whose pc is outside the firmware
# (no ELF), up to its innermost trap marker (test_sample_exact.sh compares
# the segments past it), must be the innermost part of a stack of the traced boot (the
# same execution: -icount), once the names are made alike (both sides add
# " (file)" to names several functions share, taken off here) and the
# outermost entry frames the trace shows otherwise are dropped
# (handle_exception: the trace shows "[trap]"; _start_kernel: entered by a
# jump from the firmware), and a signal handler is compared from itself up
# (its caller, the vDSO trampoline, is code no sample names). Half of the
# samples must have 3 frames or more.
# minstret (instructions under -icount) never falls.
L=$OOB_BUILDDIR/tests/gen/linux
. "$OOB_SRCDIR/tests/tools/boot-lib.sh"
if ! boot_ready; then
	echo "SKIP: $T: system: no qemu-system-riscv64, OpenSBI or booted Linux (gen-linux.sh)"
	exit 0
fi
boot_elfs
boot_sample "$W/sys.console" 1 "-icount shift=0,sleep=off,align=off" "$W/sys.samples" \
	--hz 1000 --instret
cat "$W/sys.samples.err"
# shellcheck disable=SC2086
"$CLI" fold $ELFS "$L/sv39/boot.oobt" >"$W/sys.exact" 2>/dev/null &&
	"$CLI" fold $ELFS "$W/sys.samples" >"$W/sys.fold" 2>/dev/null
if [ $rc != 0 ] || ! grep -q "reboot: Power down" "$W/sys.console"; then
	fail system "exit $rc, $(head -c 300 "$W/sys.samples.err"); console: $(tail -c 200 "$W/sys.console")"
	exit 0
fi
python3 - "$W/sys.exact" "$W/sys.fold" "$W/sys.samples" \
	"$(awk '$1 == "instructions" { print $2 }' "$L/sv39/boot.info")" <<'PY' &&
import re, sys
exact_f, fold_f, samples_f, total = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def norm(f):
    return re.sub(r" \([^()]*\)$", "", f)
exact = set()
for l in open(exact_f):
    fr = [norm(f) for f in l.rsplit(" ", 1)[0].split(";")]
    for i in range(len(fr)):
        exact.add(";".join(fr[i:]))
ok = fw = deep = 0
bad = []
for l in open(fold_f):
    s, n = l.rsplit(" ", 1)
    n = int(n)
    fr = [norm(f) for f in s.split(";") if f not in ("[walk failed]", "[walk truncated]")]
    # the innermost segment: the joins across traps are checked whole by
    # test_sample_exact.sh, sample by sample
    marks = [i for i, f in enumerate(fr) if f.startswith("[")]
    if marks:
        fr = fr[marks[-1] + 1:]
    while len(fr) > 1 and fr[0] in ("handle_exception", "_start_kernel"):
        fr = fr[1:]
    # a signal handler's caller is the vDSO's sigreturn trampoline (code no
    # sample symbolizes: each process maps the vDSO elsewhere); the trace
    # shows the trap the signal came at there: compare from the handler up
    hexes = [i for i, f in enumerate(fr[:-1]) if re.fullmatch(r"0x[0-9a-f]+", f)]
    if hexes:
        fr = fr[hexes[-1] + 1:]
    # the firmware (0x80000000...), QEMU virt's reset ROM (0x1000, the
    # first instructions of the boot) and a user pc in no ELF (the vDSO's
    # sigreturn trampoline), code without CFI: the pc alone
    if fr[-1].startswith("0x8") or re.fullmatch(r"0x1[0-9a-f]{3}", fr[-1]) or \
            (len(fr) == 1 and re.fullmatch(r"0x[0-9a-f]+", fr[0])):
        fw += n
    elif ";".join(fr) in exact:
        ok += n
        deep += n if len(fr) >= 3 else 0
    else:
        bad.append(";".join(fr)[-200:])
ins = [int(l.split()[2]) for l in open(samples_f) if l.startswith("# instret ")]
rising = all(a <= b for a, b in zip(ins, ins[1:]))  # equal: stopped while idle
print("# system: %d samples in the kernel or programs (%d with 3 frames or more), %d in the "
      "firmware or other code of no ELF, %d not innermost parts of exact stacks; minstret %d .. %d of %d instructions"
      % (ok + len(bad), deep, fw, len(bad), ins[0], ins[-1], total))
# no upper bound: with sleep=off an idle hart's virtual time (the waits
# workload's naps) advances minstret by instructions no trace records
good = ok >= 50 and not bad and deep >= ok / 2 and rising
if not good:
    print("FAIL: test_sample_rsp: system: %s; minstret rising %s, last %d of %d"
          % (bad[:3], rising, ins[-1], total))
sys.exit(0 if good else 1)
PY
	pass "system: Linux boot sampled, every stack the innermost part of an exact one"
