#!/usr/bin/env python3
"""Compares oobprof's stacks with FirePerf's on one Spike --log-commits trace.

  fireperf_compare.py [--oobprof BIN] [--top N] [--examples N]
                      [--examples-from A|B|C] VMLINUX LOG USER_ELF...

Runs `oobprof fold` and `oobprof export --to speedscope` (its stack at every
instruction; both must agree) with --elf VMLINUX --elf USER_ELF..., and
fireperf_model.py (FirePerf's algorithm, TRACERV.md) in three variants:
  A  FirePerf as it is: vmlinux only, user space = USERSPACE_ALL
  B  A + the user ELFs, looked up as FireSim's older driver looked up kernel
     modules (first image holding the pc wins; no address spaces)
  C  B with function ranges from the ELF symbol tables instead of DWARF (not
     FirePerf: separates its stack heuristic from its DWARF-based table)
and prints markdown: a summary, the reasons for every instruction whose stack
differs (heuristic labels, see labels()), self/inclusive instructions per
function (top N by difference between B and oobprof) and example stacks.

Stacks are compared after normalization: oobprof's process root frame
("init 1") and trap markers ("[trap: ecall]") are dropped, the " (file)"
suffixes oobprof adds to tell same-named functions apart are removed, clone
suffixes (.constprop.0, .isra.0, .part.0, .cold) are stripped, and aliases
(two names at one address, e.g. fork/__libc_fork) map to one name.
Truth: each pc through the symbol table alone (readelf -sW: FUNC symbols and
sized NOTYPE ones, innermost); a user pc is given to the ELF whose bytes at
that address equal the instruction bits on the log line.
"""
import argparse
import bisect
import collections
import difflib
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fireperf_model as fp  # noqa: E402

USER = fp.USER
SUFFIX = re.compile(r" \([^()]*\)$")
CLONE = re.compile(r"(\.(constprop|isra|part|cold|localalias|lto_priv)(\.\d+)?)+$")
NOSYM = "[nosym]"


def norm(name):
    return CLONE.sub("", SUFFIX.sub("", name))


class Interner:
    def __init__(self):
        self.ids, self.items = {}, []

    def __call__(self, item):
        i = self.ids.get(item)
        if i is None:
            i = self.ids[item] = len(self.items)
            self.items.append(item)
        return i


# ---------------------------------------------------------------- truth
def exec_segments(path):
    """PT_LOAD segments with PF_X of an ELF64 little-endian file: [(vaddr, bytes)]."""
    data = open(path, "rb").read()
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    segs = []
    for k in range(phnum):
        typ, flags, off, vaddr, _, filesz, _, _ = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + k * phentsize)
        if typ == 1 and flags & 1:
            segs.append((vaddr, data[off:off + filesz]))
    return segs


class SymTable:
    """Functions of one ELF by address alone: FUNC/IFUNC symbols, and NOTYPE
    ones with a size (asm entry points); size 0 extends to the next symbol;
    nested ranges resolve to the innermost. Of the names at one address (also
    unsized NOTYPE aliases such as the kernel's weak memcpy), the one FirePerf's
    table uses (its DWARF name) if any, else the first GLOBAL one; alias maps
    every name found at that address only to it."""

    def __init__(self, path, prefer):
        by_addr, self.alias = {}, {}
        for line in fp.run([fp.CROSS + "readelf", "-sW", path]).splitlines():
            f = line.split()
            if len(f) < 8 or not f[0].endswith(":") or not f[6].isdigit():
                continue
            addr, size, typ, bind, name = int(f[1], 16), int(f[2], 0), f[3], f[4], f[7]
            if name.startswith("$") or typ not in ("FUNC", "IFUNC", "NOTYPE"):
                continue
            by_addr.setdefault(addr, []).append((size, typ, bind, norm(name.split("@")[0])))
        self.starts, self.ends, self.names, where = [], [], [], collections.Counter()
        for al in by_addr.values():
            where.update({n for _, _, _, n in al})
        for a in sorted(by_addr):
            al = by_addr[a]
            if not any(t != "NOTYPE" or s for s, t, _, _ in al):
                continue  # only code labels here: not a function
            self.starts.append(a)
            self.ends.append(a + max(s for s, _, _, _ in al))
            names = [n for _, _, _, n in al]
            pick = [n for n in names if n in prefer] or \
                   [n for _, _, b, n in al if b == "GLOBAL"] or names
            self.names.append(pick[0])
            for n in names:
                if where[n] == 1:
                    self.alias[n] = pick[0]
        for k, e in enumerate(self.ends):  # size 0: up to the next function
            if e == self.starts[k]:
                self.ends[k] = self.starts[k + 1] if k + 1 < len(self.starts) else e + 1

    def lookup(self, pc):
        i = bisect.bisect_right(self.starts, pc) - 1
        for j in range(i, max(i - 16, -1), -1):
            if pc < self.ends[j]:
                return self.names[j]
        return NOSYM


def truth_leaves(pcs, insns, kernel, users):
    """Truth leaf name per instruction, and the index in users of the ELF of a
    user pc (-1 for a kernel pc); users = [(SymTable, segments)]."""
    out, elf, last, cache, undecided = [], [], None, {}, 0
    for pc, insn in zip(pcs, insns):
        if pc >= 1 << 63:
            out.append(cache.get(pc) or cache.setdefault(pc, kernel.lookup(pc)))
            elf.append(-1)
            continue
        n, want, hits = (len(insn) - 2) // 2, int(insn, 16), []
        for k, (tab, segs) in enumerate(users):
            for va, b in segs:
                if va <= pc and pc + n <= va + len(b):
                    if int.from_bytes(b[pc - va:pc - va + n], "little") == want:
                        hits.append(k)
                    break
        if len(hits) == 1:
            last = hits[0]
        elif not hits:
            out.append(NOSYM)
            elf.append(-1)
            continue
        elif last not in hits:
            last, undecided = hits[0], undecided + 1
        out.append(users[last][0].lookup(pc))
        elf.append(last)
    return out, elf, undecided


# ---------------------------------------------------------------- oobprof
def oobprof_stacks(binary, elfs, log):
    """oobprof's stack of each instruction (from its speedscope export, checked
    against `oobprof fold`): (raw stacks, per-instruction index, distinct, depth)."""
    args = [a for e in elfs for a in ("--elf", e)]
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "o.json")
        subprocess.run([binary, "export", "--to", "speedscope", "--metric", "instructions",
                        "--max-events", "0"] + args + [log, "-o", js], check=True)
        prof = json.load(open(js))
        folded = subprocess.run([binary, "fold"] + args + [log], check=True,
                                capture_output=True, text=True).stdout
    frames = [f["name"] for f in prof["shared"]["frames"]]
    (p,) = prof["profiles"]
    raw, sid, stack, last = Interner(), [], [], 0
    key = raw(())
    for e in p["events"]:
        at = e["at"]
        if at > last:
            sid.extend([key] * (at - last))
            last = at
        if e["type"] == "O":
            stack.append(frames[e["frame"]])
        else:
            stack.pop()
        key = raw(tuple(stack))
    sid.extend([key] * (p["endValue"] - last))
    check = collections.Counter()
    for line in folded.splitlines():
        st, c = line.rsplit(" ", 1)
        check[tuple(st.split(";"))] += int(c)
    assert collections.Counter(raw.items[s] for s in sid) == check, \
        "oobprof fold and speedscope export disagree"
    return raw.items, sid, len(check), max(len(s) for s in check)


# ---------------------------------------------------------------- categories
def dedup(st):
    return tuple(f for k, f in enumerate(st) if k == 0 or st[k - 1] != f)


ASM = "stack: entry.S local label as a frame (asm-sequence labels, entered at first byte)"


def labels(F, O, T, P, kern, why, switched, ctx):
    """Why FirePerf's stack F differs from oobprof's O for one instruction
    (T: truth leaf; P: FirePerf's table's name of the pc; why, switched: how
    FirePerf's stack bottom came to be; ctx: name sets). A leaf reason
    excludes the others; stack reasons (same leaf) can combine."""
    if F == O:
        return []
    if not F or not O or F[-1] != O[-1]:
        if not F:
            return ["leaf: instruction dropped by FirePerf's fold (stack empty)"]
        if F[-1] == USER:
            return ["leaf: kernel pc in a gap of FirePerf's table -> USERSPACE_ALL" if kern
                    else "leaf: user pc -> USERSPACE_ALL"]
        if P != T:
            return ["leaf: FirePerf's table names the kernel pc differently (entry.S labels)" if kern
                    else "leaf: user pc resolved in the wrong ELF (first ELF wins)"]
        if F[-1] != P:
            return ["leaf: callee's last instruction charged to the caller (End-event timing)"]
        if O[-1] != T:
            return ["leaf: oobprof's leaf differs from the symbol table"]
        return ["leaf: other"]
    out = set()
    if switched:
        out.add("stack: bottom built in another process (context switch; threads' stacks merge)")
    dF, dO = dedup(F), dedup(O)
    if len(O) - len(dO) > len(F) - len(dF):
        out.add("stack: recursion collapsed (frames matched by name)")
    ops = difflib.SequenceMatcher(None, dO, dF, autojunk=False).get_opcodes()
    for tag, i1, i2, j1, j2 in ops:
        if tag == "replace" and all(f in ctx["asm"] for f in dF[j1:j2]):
            out.add(ASM)  # the same entry.S code, named by its local labels
            continue
        if tag in ("delete", "replace"):  # oobprof's frames that FirePerf lacks
            if i1 == 0 and j1 == 0:
                out.add({"user": "stack: outer frames lost (stack emptied at USERSPACE_ALL)",
                         "zeroed": "stack: outer frames lost (after STACK ZEROED)"}.get(
                             why, "stack: outer frames lost (trace start)"))
            else:
                out.add("stack: frames missing in between (popped to a same-named frame)")
        if tag not in ("insert", "replace"):
            continue
        for k in range(j1, j2):  # frames only FirePerf has
            f = dF[k]
            if f in ctx["user"] and ctx["wrong_elf"]:
                out.add("stack: extra frame: user frame named from the wrong ELF")
            elif f in ctx["kernel"] and any(x in ctx["user"] for x in dF[k + 1:]):
                out.add("stack: extra frame: kernel frame left under user frames "
                        "(sret to a function's first byte looks like a call)")
            elif f in ctx["asm"]:
                out.add(ASM)
            elif tag == "insert" and i1 < len(dO):
                out.add("stack: extra frame: caller kept across a tail call or jump")
            else:
                out.add("stack: extra frame: other (a returned or another thread's frame kept)")
    return sorted(out) or ["stack: other"]


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--oobprof", default=os.path.join(here, "../../build-dev/oobprof"))
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--examples", type=int, default=2)
    ap.add_argument("--examples-from", default="B", choices="ABC")
    ap.add_argument("vmlinux")
    ap.add_argument("log")
    ap.add_argument("user", nargs="+")
    a = ap.parse_args()
    t0 = time.time()
    pcs, insns = fp.read_pcs(a.log)
    n = len(pcs)
    kimg = fp.Image(a.vmlinux)
    uimgs = [fp.Image(u) for u in a.user]
    oraw, osid, oraw_distinct, oraw_depth = oobprof_stacks(a.oobprof, [a.vmlinux] + a.user, a.log)
    assert len(osid) == n, "oobprof counted %d instructions, the log has %d" % (len(osid), n)

    # names: aliases -> one canonical name, kernel or user meaning by context
    ktab = SymTable(a.vmlinux, {e[2] for e in kimg.entries})
    utabs = [(SymTable(u, {e[2] for e in img.entries}), exec_segments(u))
             for u, img in zip(a.user, uimgs)]
    kmap, umap = ktab.alias, {}
    for tab, _ in utabs:
        for k, v in tab.alias.items():
            umap.setdefault(k, v)
    gmap = {f: kmap.get(f, umap.get(f, f)) for f in set(kmap) | set(umap)
            if f not in kmap or f not in umap or kmap[f] == umap[f]}
    unames = set(umap) | {e[2] for i in uimgs for e in i.entries}
    knames = set(kmap) | {e[2] for e in kimg.entries}
    ctx = {"user": unames - knames, "kernel": knames - unames,
           "asm": {e[2] for e in kimg.entries if e[3]} - set(ktab.names)}

    def canon(st, kern):  # leaf by the pc's side, other frames where unambiguous
        st = tuple(gmap.get(norm(f), norm(f)) for f in st)
        if st and st[-1] in kmap and st[-1] in umap:
            st = st[:-1] + ((kmap if kern else umap)[st[-1]],)
        return st

    truth, telf, undecided = truth_leaves(pcs, insns, ktab, utabs)
    orid = [(s[0] if s else "") for s in oraw]  # oobprof's process of each stack
    # Does the process run code of a user ELF other than the first (which
    # FirePerf B would look up in the first ELF)? By its last user pc.
    pelf, last = [], {}
    for o, e in zip(osid, telf):
        if e >= 0:
            last[orid[o]] = e
        pelf.append(last.get(orid[o], 0) > 0)
    ostk = [tuple(f for f in s[1:] if not f.startswith("[trap")) for s in oraw]

    simgs = [fp.Image(e, symtab_table=True) for e in [a.vmlinux] + a.user]
    variants = {"A": [kimg], "B": [kimg] + uimgs, "C": simgs}
    res, groups = {}, {}
    for v, imgs in variants.items():
        t, fst, fsid, bottom = fp.track(pcs, imgs)
        pname = {pc: norm(r[0]) if r else USER for pc, r in t.cache.items()}
        g = collections.Counter()
        for f, o, tr, pc, (b, why), we in zip(fsid, osid, truth, pcs, bottom, pelf):
            g[(f, o, tr, pname[pc], pc >= 1 << 63, why,
               orid[osid[b]] != orid[o], we)] += 1
        res[v], groups[v] = t, (fst, g)

    cats = {v: collections.Counter() for v in variants}
    examples = collections.defaultdict(collections.Counter)
    stat = {v: collections.Counter() for v in list(variants) + ["oobprof"]}
    fself = {v: collections.Counter() for v in variants}
    fincl = {v: collections.Counter() for v in variants}
    oself, oincl, tself = collections.Counter(), collections.Counter(), collections.Counter()
    for v, (fst, g) in groups.items():
        for (f, o, tr, p, kern, why, sw, we), c in g.items():
            F, O = canon(fst[f], kern), canon(ostk[o], kern)
            T, P = canon((tr,), kern)[0], canon((p,), kern)[0]
            fself[v][F[-1] if F else "[none]"] += c
            for x in set(F):
                fincl[v][x] += c
            if v == "B":
                oself[O[-1]] += c
                tself[T] += c
                for x in set(O):
                    oincl[x] += c
                stat["oobprof"]["leaf_truth"] += c if O[-1] != T else 0
            stat[v]["leaf_truth"] += c if (F[-1] if F else None) != T else 0
            ctx["wrong_elf"] = we
            ls = labels(F, O, T, P, kern, why, sw, ctx)
            if not ls:
                continue
            stat[v]["stack"] += c
            stat[v]["leaf"] += c if ls[0].startswith("leaf") else 0
            for lab in ls:
                cats[v][lab] += c
                if v == a.examples_from:
                    examples[lab][(F, O, P, T)] += c

    # ------------------------------------------------------------ output
    out = sys.stdout.write

    def row(label, vals):
        out("| %s | %s |\n" % (label, " | ".join(
            v if isinstance(v, str) else "{:,}".format(v) for v in vals)))

    def distinct_depth(v):
        fst, g = groups[v]
        seen = {canon(fst[k[0]], k[4]) for k in g}
        return len(seen), max(len(s) for s in seen)

    ostacks = {canon(ostk[k[1]], k[4]) for k in groups["B"][1]}
    dd = {v: distinct_depth(v) for v in variants}
    out("## Summary: %s, %s instructions\n\n" % (os.path.basename(a.log), "{:,}".format(n)))
    out("| | FirePerf A (vmlinux only) | FirePerf B (+ user ELFs) | FirePerf C (B, ranges from symtab) | oobprof |\n")
    out("|---|---:|---:|---:|---:|\n")
    row("total instructions", [sum(fself[v].values()) for v in variants] + [sum(oself.values())])
    row("distinct stacks (normalized)", [dd[v][0] for v in variants] + [len(ostacks)])
    row("max depth (normalized)", [dd[v][1] for v in variants] + [max(map(len, ostacks))])
    row("instructions whose leaf function differs from oobprof's", [stat[v]["leaf"] for v in variants] + ["-"])
    row("instructions whose full stack differs from oobprof's", [stat[v]["stack"] for v in variants] + ["-"])
    row("instructions whose leaf differs from the truth (pc histogram)",
        [stat[v]["leaf_truth"] for v in variants] + [stat["oobprof"]["leaf_truth"]])
    row("instructions charged to USERSPACE_ALL", [fself[v][USER] for v in variants] + [0])
    row("instructions dropped by FirePerf's fold (empty stack)", [fself[v]["[none]"] for v in variants] + [0])
    row("calls seen (Start events) / STACK ZEROED warnings",
        ["%s / %s" % ("{:,}".format(res[v].counts["push"]), "{:,}".format(res[v].counts["zeroed"]))
         for v in variants] + ["-"])
    out("\noobprof before normalization: %s distinct stacks, max depth %d (process root and "
        "trap markers included). Truth: %d user instructions matched several ELFs' bytes.\n\n"
        % ("{:,}".format(oraw_distinct), oraw_depth, undecided))

    out("## Why FirePerf's stack differs from oobprof's (instructions; one instruction can "
        "have several stack reasons)\n\n| reason | A | B | C |\n|---|---:|---:|---:|\n")
    allcats = sorted(set().union(*cats.values()), key=lambda c: (not c.startswith("leaf"), -cats["B"][c] - cats["A"][c]))
    for c in allcats:
        row(c, [cats[v][c] for v in variants])
    row("**instructions whose stack differs**", [stat[v]["stack"] for v in variants])

    funcs = (set(fself["B"]) | set(oself) | set(fincl["B"]) | set(oincl)) - {"[none]"}
    top = sorted(funcs, key=lambda f: (-max(abs(fself["B"][f] - oself[f]),
                                           abs(fincl["B"][f] - oincl[f])), f))
    out("\n## Per function: instructions, top %d by difference between FirePerf B and "
        "oobprof\n\n" % a.top)
    out("| function | truth self | oobprof self | FirePerf B self | FirePerf C self "
        "| oobprof incl | FirePerf B incl | FirePerf C incl |\n")
    out("|---|---:|---:|---:|---:|---:|---:|---:|\n")
    for f in top[:a.top]:
        out("| `%s` | %s |\n" % (f, " | ".join("{:,}".format(x) for x in (
            tself[f], oself[f], fself["B"][f], fself["C"][f],
            oincl[f], fincl["B"][f], fincl["C"][f]))))

    out("\n## Examples (variant %s, most frequent per reason)\n\n" % a.examples_from)
    for c in allcats:
        if not examples[c]:
            continue
        out("**%s**\n\n" % c)
        for (F, O, P, T), cnt in examples[c].most_common(a.examples):
            out("- %s instructions%s\n  - FirePerf: `%s`\n  - oobprof: `%s`\n" % (
                "{:,}".format(cnt), " (pc: FirePerf `%s`, symbol table `%s`)" % (P, T) if P != T else "",
                ";".join(F) or "(empty)", ";".join(O)))
        out("\n")
    sys.stderr.write("fireperf_compare: %.1f s\n" % (time.time() - t0))


if __name__ == "__main__":
    main()
