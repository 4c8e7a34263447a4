#!/bin/sh
# oobprof fold --inline: instructions are attributed to the innermost inlined
# function that DWARF names for each pc. Ground truth from binutils: the
# plugin's instruction histogram, each pc resolved by
# `riscv64-linux-gnu-addr2line -i -f` (innermost first), summed per name.
set -u
T=test_cli_inline
G=$OOB_BUILDDIR/tests/gen/progs
CLI=$OOB_BUILDDIR/oobprof
for f in "$CLI" "$G/inline" "$G/inline.oobt" "$G/inline.hist"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
command -v riscv64-linux-gnu-addr2line >/dev/null || { echo "SKIP: $T: all: no addr2line"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Truth: the leaf name of each pc of the program's own code is the first
# (innermost) function addr2line -i -f names.
python3 - "$G/inline.hist" "$G/inline" >"$tmp/truth" <<'PY' || { echo "FAIL: $T: truth: script failed"; exit 1; }
import subprocess, sys
out = {}
for line in open(sys.argv[1]):
    pc, cnt = line.split()
    r = subprocess.run(["riscv64-linux-gnu-addr2line", "-i", "-f", "-e", sys.argv[2], pc],
                       capture_output=True, text=True).stdout.split("\n")
    if "tests/fixtures/progs/" not in r[1]:
        continue  # the C library and start files: not what this test checks
    out[r[0]] = out.get(r[0], 0) + int(cnt)
for k in sorted(out):
    print(k, out[k])
PY
"$CLI" fold --inline --annotate --elf "$G/inline" "$G/inline.oobt" >"$tmp/fold" ||
	{ echo "FAIL: $T: fold: oobprof failed"; exit 1; }
python3 - "$tmp/truth" "$tmp/fold" <<'PY'
import sys
truth = dict((l.split()[0], int(l.split()[1])) for l in open(sys.argv[1]))
got = {}
for l in open(sys.argv[2]):
    stack, w = l.rsplit(" ", 1)
    leaf = stack.split(";")[-1]
    for suf in ("_[i]", "_[k]"):
        if leaf.endswith(suf):
            leaf = leaf[: -len(suf)]
    got[leaf] = got.get(leaf, 0) + int(w)
bad = [(k, v, got.get(k)) for k, v in truth.items() if got.get(k) != v]
inl = sum(1 for l in open(sys.argv[2]) if "_[i]" in l)
if bad or inl == 0:
    print("FAIL: test_cli_inline: leaf_counts: %d mismatches %s, %d inline stacks" % (len(bad), bad[:5], inl))
else:
    print("PASS: test_cli_inline: leaf_counts (%d functions with DWARF, %d inline stacks)" % (len(truth), inl))
PY
