#!/usr/bin/env python3
"""Exact stacks of the non-local control-flow programs, against their own word.

The programs of tests/fixtures/progs/nonlocal keep their own call chain and
print, for every probe they ran (tests/fixtures/progs/nonlocal/nl.h):
  chain <count> <root>;<f>;...;<probe>   "~" stands for any run of frames that
                                          are no function of the program
  maxdepth <n>
  calls <name> <n>
No oobprof code computes any of this. Frame names are symbol names; a token
also matches any other symbol at the same address (readelf -sW aliases, e.g.
_ZN5GuardD1Ev for _ZN5GuardD2Ev), and NAME.abi0 (a Go assembly function:
tests/fixtures/go/goprobe prints the chains runtime.Callers gives).

  stack_truth.py check --label L --out OUT --hist HIST --fold F --calls-fold C
                 ELF[@BASE]...
      F and C: `oobprof fold` (instructions) and `oobprof fold --metric calls`
      of the trace. HIST: "0x<pc> <count>" of the same run (the plugin's, or
      counted from a -d exec log). The first ELF is the program. Prints one
      line per check, "PASS|FAIL: stack_truth: L: <check>: <figures>":
        probes  every folded stack that ends in a probe equals a chain the
                program printed, and each chain weighs exactly
                (instructions per probe call) x (times it ran)
        calls   calls per program function (fold --metric calls, summed over
                the stacks it is the leaf of) = the program's counters
        self    self instructions per program function = HIST over the
                symbol's range (truth.py's Elf)
        depth   no stack holds more program frames above its root than the
                program's deepest chain
  stack_truth.py sp --out OUT --log LOG ELF
      The stack pointer check (static ELF only): LOG is `qemu-riscv64 -d cpu
      -singlestep -dfilter <probe and root entries>` of a run whose stdout is
      OUT. Frame sizes come from each function's prologue in objdump -d
      (the first "add(i) sp,sp,-N"). For every chain without "~", the sp its
      probe must be entered with is sp(root entry) - sum of the frames from
      the root to the probe's caller; the multiset of those sps (chain counts)
      must equal the multiset of sps the log shows at the probe's entry.
        PASS|FAIL: stack_truth: sp: <figures>

Exit status 2 with a message on stderr for unreadable or malformed input.
"""
import collections
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import truth  # noqa: E402  (tests/tools/truth.py: symbols and histograms)

ANY = "~"
T = "stack_truth"


def die(msg):
    sys.stderr.write("stack_truth.py: %s\n" % msg)
    sys.exit(2)


def read_out(path):
    """(chains {probe: [(tokens, count)]}, maxdepth, counters {name: n})."""
    chains, maxdepth, counters = collections.defaultdict(list), None, {}
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        die("%s: %s" % (path, e))
    for line in lines:
        f = line.split()
        if len(f) == 3 and f[0] == "chain":
            toks = f[2].split(";")
            chains[toks[-1]].append((toks, int(f[1])))
        elif len(f) == 2 and f[0] == "maxdepth":
            maxdepth = int(f[1])
        elif len(f) == 3 and f[0] == "calls":
            counters[f[1]] = int(f[2])
        elif line.startswith("chains overflowed"):
            die("%s: the program's chain table overflowed" % path)
    if not chains or maxdepth is None or not counters:
        die("%s: no chain, maxdepth or calls lines" % path)
    return chains, maxdepth, counters


def read_fold(path):
    stacks = []
    try:
        for n, line in enumerate(open(path), 1):
            stack, _, w = line.rstrip("\n").rpartition(" ")
            if not stack or not w.isdigit():
                die("%s:%d: not a folded stack" % (path, n))
            stacks.append((stack.split(";"), int(w)))
    except OSError as e:
        die("%s: %s" % (path, e))
    return stacks


class Names:
    """Which frame names are the program's, and their aliases."""

    def __init__(self, elf, counters):
        self.alias = {}
        for e in elf.entries:
            for n in e["names"]:
                self.alias[n] = set(e["names"])
        self.prog = set()
        for c in counters:
            self.prog |= self.alias.get(c, {c})

    def same(self, frame, tok):
        # Go names its assembly functions NAME.abi0 in the ELF, NAME itself
        return (frame == tok or frame in self.alias.get(tok, ())
                or frame == tok + ".abi0")

    def is_prog(self, frame):
        return frame in self.prog


def match(frames, toks, names):
    """Whether frames (from the root on) equal the chain toks, ANY matching
    any run (possibly empty) of frames that are not the program's."""
    memo = {}

    def go(i, j):
        key = (i, j)
        if key in memo:
            return memo[key]
        if j == len(toks):
            r = i == len(frames)
        elif toks[j] == ANY:
            r = go(i, j + 1) or (
                i < len(frames) and not names.is_prog(frames[i]) and go(i + 1, j))
        else:
            r = i < len(frames) and names.same(frames[i], toks[j]) and go(i + 1, j + 1)
        memo[key] = r
        return r

    return go(0, 0)


def from_root(stack, roots, names):
    """The stack from the first frame that is one of the roots, or None."""
    for i, f in enumerate(stack):
        if any(names.same(f, r) for r in roots):
            return stack[i:]
    return None


def prog_depth(frames, names):
    return sum(1 for f in frames if names.is_prog(f))


def self_counts(hist, elf, funcs):
    """Self instructions of each of funcs (names) from the histogram."""
    want = {}
    for i, e in enumerate(elf.entries):
        for n in e["names"]:
            if n in funcs:
                want[i] = n
    got = collections.Counter()
    for pc, c in hist:
        i = elf.lookup(pc)
        if i in want:
            got[want[i]] += c
    return got


def check_probes(label, chains, stacks, names, per_call):
    exact, total, worst = 0, 0, []
    unmatched = collections.Counter()
    for probe, want in sorted(chains.items()):
        roots = {toks[0] for toks, _ in want}
        weight = collections.Counter()
        for stack, w in stacks:
            if not names.same(stack[-1], probe):
                continue
            frames = from_root(stack, roots, names)
            hit = None
            if frames is not None:
                hit = next((k for k, (toks, _) in enumerate(want) if match(frames, toks, names)),
                           None)
            if hit is None:
                d = prog_depth(frames or stack, names)
                best = min((d - prog_depth([t for t in toks if t != ANY], names) for toks, _ in want),
                           key=abs)
                unmatched[best] += w
            else:
                weight[hit] += w
        for k, (toks, n) in enumerate(want):
            total += 1
            if per_call.get(probe) is not None and weight[k] == per_call[probe] * n:
                exact += 1
            elif len(worst) < 2:
                worst.append("%s x%d weighs %d, want %s" % (
                    ";".join(toks[-4:]), n, weight[k],
                    "?" if per_call.get(probe) is None else per_call[probe] * n))
    figs = "%d of %d probe chains exact" % (exact, total)
    deep = {d: w for d, w in unmatched.items() if d > 0}
    shallow = {d: w for d, w in unmatched.items() if d <= 0}
    if deep:
        figs += "; %d instructions in stacks too deep by %d..%d frames" % (
            sum(deep.values()), min(deep), max(deep))
    if shallow:
        figs += "; %d instructions in stacks that match no chain (%+d..%+d frames)" % (
            sum(shallow.values()), min(shallow), max(shallow))
    if worst:
        figs += "; e.g. " + "; ".join(worst)
    return exact == total and not unmatched, figs


def cmd_check(argv):
    opts, elfs = {}, []
    while argv:
        if argv[0].startswith("--") and len(argv) > 1:
            opts[argv[0]] = argv[1]
            argv = argv[2:]
        else:
            elfs.append(argv.pop(0))
    need = {"--label", "--out", "--hist", "--fold", "--calls-fold"}
    if set(opts) != need or not elfs:
        die("usage: stack_truth.py check --label L --out OUT --hist HIST --fold F "
            "--calls-fold C ELF[@BASE]...")
    label = opts["--label"]
    chains, maxdepth, counters = read_out(opts["--out"])
    stacks = read_fold(opts["--fold"])
    cstacks = read_fold(opts["--calls-fold"])
    elf = truth.Elf(elfs[0])
    names = Names(elf, counters)
    hist = truth.read_hist(opts["--hist"])
    selfc = self_counts(hist, elf, set(counters))

    def line(ok, check, figs):
        print("%s: %s: %s: %s: %s" % ("PASS" if ok else "FAIL", T, label, check, figs))

    per_call = {}
    for probe in chains:
        c = counters.get(probe)
        if c and selfc[probe] % c == 0:
            per_call[probe] = selfc[probe] // c
    ok, figs = check_probes(label, chains, stacks, names, per_call)
    line(ok, "probes", figs)

    def compare(check, got, unit):
        bad = ["%s %d (program %d)" % (f, got[f], counters[f] if unit == "calls" else selfc[f])
               for f in counters
               if got[f] != (counters[f] if unit == "calls" else selfc[f])]
        line(not bad, check, "%d of %d functions exact%s" % (
            len(counters) - len(bad), len(counters), ("; " + ", ".join(bad[:4])) if bad else ""))

    for check, st, unit in (("calls", cstacks, "calls"), ("self", stacks, "insns")):
        got = collections.Counter()
        for stack, w in st:
            for f in counters:
                if names.same(stack[-1], f):
                    got[f] += w
                    break
        compare(check, got, unit)

    roots = {toks[0] for want in chains.values() for toks, _ in want}
    deepest, full = 0, max(len(s) for s, _ in stacks)
    for stack, _ in stacks:
        frames = from_root(stack, roots, names)
        if frames is not None:
            deepest = max(deepest, prog_depth(frames, names))
    line(deepest <= maxdepth, "depth",
         "deepest stack holds %d program frames above its root (program's deepest chain: %d); "
         "%d frames in all" % (deepest, maxdepth, full))


def frame_sizes(path):
    """{function: bytes its prologue takes off sp} from objdump -d."""
    out = truth.run([truth.CROSS + "objdump", "-d", "--no-show-raw-insn", path])
    sizes, cur, seen = {}, None, 0
    for line in out.splitlines():
        m = re.match(r"[0-9a-f]+ <([^>]+)>:", line)
        if m:
            cur, seen = m.group(1), 0
            sizes[cur] = 0
            continue
        if cur is None or seen > 24:
            continue
        seen += 1
        m = re.match(r"\s+[0-9a-f]+:\s+(?:c\.)?addi?\s+sp,sp,(-\d+)", line)
        if m and sizes[cur] == 0:
            sizes[cur] = -int(m.group(1))
    return sizes


def read_cpu_log(path, entries):
    """[(name, sp)] in log order, for each entry pc of interest."""
    hits, pc = [], None
    try:
        for line in open(path):
            m = re.match(r"\s*pc\s+([0-9a-f]+)", line)
            if m:
                pc = int(m.group(1), 16)
                continue
            m = re.search(r"x2/sp\s+([0-9a-f]+)", line)
            if m and pc is not None:
                if pc in entries:
                    hits.append((entries[pc], int(m.group(1), 16)))
                pc = None
    except OSError as e:
        die("%s: %s" % (path, e))
    return hits


def cmd_sp(argv):
    opts = {}
    while len(argv) > 1 and argv[0].startswith("--"):
        opts[argv[0]] = argv[1]
        argv = argv[2:]
    if set(opts) != {"--out", "--log"} or len(argv) != 1:
        die("usage: stack_truth.py sp --out OUT --log LOG ELF")
    chains, _, counters = read_out(opts["--out"])
    elf = truth.Elf(argv[0])
    names = Names(elf, counters)
    entries = {}
    for a, e in zip(elf.addrs, elf.entries):
        for n in e["names"]:
            if n in counters:
                entries[a] = n
    sizes = frame_sizes(argv[0])
    hits = read_cpu_log(opts["--log"], entries)
    roots = {toks[0] for want in chains.values() for toks, _ in want}
    root_sp = {}
    for n, sp in hits:
        if n in roots:
            root_sp.setdefault(n, set()).add(sp)
    checked, skipped, bad = 0, 0, []
    for probe, want in sorted(chains.items()):
        expect = collections.Counter()
        for toks, c in want:
            base = root_sp.get(toks[0], set())
            if ANY in toks or len(base) != 1:
                skipped += c
                continue
            sp = next(iter(base))
            for t in toks[:-1]:
                # objdump labels a function by one of its aliases
                sp -= max(sizes.get(a, 0) for a in names.alias.get(t, {t}) | {t})
            expect[sp] += c
        if not expect:
            continue
        seen = collections.Counter(sp for n, sp in hits if n == probe)
        # hits of chains with "~" are not predicted: only the predicted sps
        # must be there, each exactly as often as the chains say
        for sp, c in expect.items():
            checked += c
            if seen[sp] != c:
                bad.append("%s at sp 0x%x: %d entries, chains say %d" % (probe, sp, seen[sp], c))
    if not hits:
        die("%s: no probe entries in the log" % opts["--log"])
    print("%s: %s: sp: %d probe entries at the sp their printed chain implies%s%s" % (
        "FAIL" if bad or not checked else "PASS", T, checked - sum(1 for _ in bad),
        "; %d not predicted (chains with ~, or several root sps)" % skipped if skipped else "",
        "; " + "; ".join(bad[:4]) if bad else ""))


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("check", "sp"):
        die("usage: stack_truth.py check|sp ... (see the top of this file)")
    {"check": cmd_check, "sp": cmd_sp}[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
