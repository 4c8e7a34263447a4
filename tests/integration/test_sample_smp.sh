#!/bin/sh
# test_sample_smp.sh: `oobprof sample` samples every hart of a two-hart
# guest at each stop (issue 17: targets with several threads). Our Linux
# boots on two harts under qemu-system-riscv64 -gdb (as the traced smp2 boot
# does: -accel tcg,thread=single, no -icount, so this run is not the traced
# one) and is sampled at 200 Hz through the stub, which lists the vCPUs as
# threads (qfThreadInfo) and reads each one's registers and memory after Hg.
# Checked:
# - every stop sampled both harts, each sample after its "# thread N" line
#   (harts 1 and 2, as many samples each as stops);
# - the two harts' samples are their own: at a tenth of the stops at least
#   their pcs differ (a stub that ignored Hg would give one hart twice);
# - each kernel stack, symbolized here from `nm` (not by oobprof), is a
#   stack of the exact profile of the traced two-hart boot: its innermost
#   part up to the trap (at most 8 frames, aliases as one name; the entry
#   from the firmware and the entry code taken off) ends some folded
#   stack of `oobprof fold` on tests/gen/linux/smp2/boot.oobt. The two runs
#   differ, so a rare path may be missing from the trace: 90 % at least of
#   the distinct stacks sampled. Distinct, because how long a path runs is
#   the host's doing: on a loaded host one hart spun in a seqlock retry
#   (ktime_get_update_offsets_now;cpu_relax) for 82 of 527 samples, a path
#   the traced boot never took.
set -u
T=test_sample_smp
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
L=$OOB_BUILDDIR/tests/gen/linux
W=$OOB_BUILDDIR/tests/out/sample_smp
rm -rf "$W" && mkdir -p "$W"
pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
QPID=
cleanup() { [ -n "$QPID" ] && kill "$QPID" 2>/dev/null; }
trap cleanup EXIT
. "$OOB_SRCDIR/tests/tools/boot-lib.sh"
if ! boot_ready || [ ! -e "$L/smp2/boot.oobt" ]; then
	echo "SKIP: $T: no qemu-system-riscv64, OpenSBI or booted Linux on two harts (gen-linux.sh)"
	exit 0
fi
boot_elfs
boot_sample "$W/console" 2 "-accel tcg,thread=single" "$W/samples" --hz 200
cat "$W/samples.err"
if [ $rc != 0 ] || ! grep -q "reboot: Power down" "$W/console"; then
	fail sample "exit $rc, $(head -c 300 "$W/samples.err"); console: $(tail -c 200 "$W/console")"
	exit 0
fi
# shellcheck disable=SC2086
"$CLI" fold $ELFS "$L/smp2/boot.oobt" >"$W/exact.folded" 2>"$W/exact.err" || {
	fail "exact profile" "$(head -c 300 "$W/exact.err")"
	exit 0
}
for e in sv39/vmlinux $PROGS; do
	nm -S --defined-only "$L/$e"
done >"$W/nm"
python3 - "$W" "$T" <<'PY'
import bisect, collections, re, sys
w, T = sys.argv[1:]
def check(ok, what, figs):
    print("%s: %s: %s: %s" % ("PASS" if ok else "FAIL", T, what, figs))
syms = []
for line in open(w + "/nm"):
    f = line.split()
    if len(f) == 3:
        f = [f[0], "0"] + f[1:]
    if len(f) == 4 and f[2] in "TtWw" and not f[3].startswith("$"):
        syms.append((int(f[0], 16), int(f[1], 16), f[3]))
syms.sort()
starts = [s[0] for s in syms]
def sym(a):
    i = bisect.bisect_right(starts, a) - 1
    for j in range(i, max(i - 64, -1), -1):
        if a < syms[j][0] + syms[j][1]:
            return syms[j][2]
    nxt = starts[i + 1] if i + 1 < len(starts) else a + 1
    return syms[i][2] if i >= 0 and not syms[i][1] and nxt - syms[i][0] <= 0x1000 else None
# one name per address: the trace names a function by one of its aliases
# (__se_sys_exit_group), nm's lookup here may take another (sys_exit_group)
byaddr = collections.defaultdict(list)
for a, _, name in syms:
    if not name.startswith("$"):  # mapping symbols ($x...) name no function
        byaddr[a].append(name)
canon = {name: min(n for n in names if not n.startswith("__efistub_")) if any(
    not n.startswith("__efistub_") for n in names) else min(names)
    for names in byaddr.values() for name in names}
def norm(n):
    n = re.sub(r" \([^()]*\)$", "", n)
    n = re.sub(r"\.(constprop|isra|part|cold|lto_priv)\.?[0-9]*", "", n)
    n = "handle_exception" if n in ("ret_from_exception", "resume_userspace") else n
    return canon.get(n, n)
K = 8
ends = set()
for line in open(w + "/exact.folded"):
    fr = [norm(x) for x in line.rsplit(" ", 1)[0].split(";")[1:]]
    for k in range(1, min(K, len(fr)) + 1):
        ends.add(tuple(fr[-k:]))
# the samples: (hart, lines) in file order
samples, hart = [], None
for block in open(w + "/samples").read().split("\n\n"):
    lines = [l for l in block.split("\n") if l and not l.startswith("# oobprof")]
    t = [l.split()[2] for l in lines if l.startswith("# thread ")]
    if any(l.startswith("0x") for l in lines):
        samples.append((t[0] if t else None, lines))
per = collections.Counter(h for h, _ in samples)
stops = [(a, b) for (ha, a), (hb, b) in zip(samples[0::2], samples[1::2]) if (ha, hb) == ("1", "2")]
check(set(per) == {"1", "2"} and per["1"] == per["2"] == len(stops) > 50,
      "every stop sampled both harts, each after its thread line",
      "samples per thread %s, stops %d" % (dict(per), len(stops)))
pc = lambda ls: next(l for l in ls if l.startswith("0x"))
differ = sum(1 for a, b in stops if pc(a) != pc(b))
check(differ >= 0.1 * len(stops), "the harts' samples are their own (pcs differ)",
      "%d of %d stops" % (differ, len(stops)))
n = found = 0
missing = collections.Counter()
seen = set()
for _, lines in samples:
    names = []
    for l in lines:
        if l.startswith("# trap"):
            break
        if l.startswith("0x"):
            s = sym(int(l, 16))
            names.append(norm(s) if s else l)
    if not int(pc(lines), 16) >> 63:
        continue  # firmware or user code first: the kernel part is empty
    while len(names) > 1 and names[-1] in ("_start", "_start_kernel", "handle_exception"):
        names.pop()
    key = tuple(reversed(names[:K]))
    n += 1
    if key in ends:
        found += 1
        seen.add(key)
    else:
        missing[";".join(key)] += 1
for k, v in missing.most_common(5):
    print("# not in the traced boot (%d): %s" % (v, k))
distinct = len(seen) + len(missing)
check(n >= 20 and len(seen) >= 0.9 * distinct,
      "kernel stacks of both harts are stacks of the exact two-hart profile",
      "%d of %d distinct stacks (%d of %d samples)" % (len(seen), distinct, found, n))
PY
