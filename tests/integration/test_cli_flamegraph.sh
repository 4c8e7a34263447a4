#!/bin/sh
# test_cli_flamegraph.sh: `oobprof flamegraph` draws exactly the profile
# (issue 19, CLI). The SVG is read back as XML, each frame's stack rebuilt
# from the picture's geometry (its parent is the frame one row down whose
# span holds it), and checked against two truths made without the SVG code:
# - the program's own instruction histogram (tests/tools/truth.py self: per
#   function self instructions from the pcs QEMU counted and readelf's
#   symbols, a function known by any of its aliases, functions of one name
#   in several files summed) against the frames' self weights summed per
#   function name;
# - `oobprof fold`: each frame's total equals the weight of the folded lines
#   under its stack.
# A width that keeps every frame (0.1 px >= 1 instruction) is used for the
# exact sums; at the default width the frames left out are exactly those
# under 0.1 px.
set -u
T=test_cli_flamegraph
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
CLI=$OOB_BUILDDIR/oobprof
G=$OOB_BUILDDIR/tests/gen/progs
W=$OOB_BUILDDIR/tests/out/cli_flamegraph
rm -rf "$W" && mkdir -p "$W"
if [ ! -e "$G/fnptr.oobt" ] || ! command -v riscv64-linux-gnu-readelf >/dev/null 2>&1; then
	echo "SKIP: $T: all: no generated programs (tests/gen/progs) or no readelf"
	exit 0
fi
for p in fnptr recursion inline; do
	[ -e "$G/$p.oobt" ] || continue
	n=$("$OOB_SRCDIR/tests/tools/truth.py" self "$G/$p.hist" "$G/$p" | sed -n 's/^\[total\] //p')
	wide=$((n / 5 + 100)) # >= 0.2 px per instruction: every frame drawn
	"$CLI" flamegraph --width "$wide" --elf "$G/$p" "$G/$p.oobt" -o "$W/$p.svg" 2>"$W/$p.err" &&
		"$CLI" flamegraph --elf "$G/$p" "$G/$p.oobt" -o "$W/$p-1200.svg" 2>>"$W/$p.err" &&
		"$CLI" fold --elf "$G/$p" "$G/$p.oobt" >"$W/$p.fold" 2>>"$W/$p.err" &&
		"$OOB_SRCDIR/tests/tools/truth.py" self --aliases --asm "$G/$p.hist" "$G/$p" >"$W/$p.truth" || {
		echo "FAIL: $T: $p: $(head -c 300 "$W/$p.err")"
		continue
	}
	python3 - "$T" "$p" "$W/$p.svg" "$W/$p-1200.svg" "$W/$p.fold" "$W/$p.truth" <<'PY'
import sys, collections
import xml.etree.ElementTree as E
T, name, svg, svg1200, fold, truth = sys.argv[1:]
NS = "{http://www.w3.org/2000/svg}"

def frames(path):
    out = []
    for g in E.parse(path).getroot().iter(NS + "g"):
        if g.get("class") != "f":
            continue
        r = g.find(NS + "rect")
        title = g.find(NS + "title").text
        out.append({"name": title[:title.rindex(" (")], "d": int(g.get("data-d")),
                    "t": int(g.get("data-t")), "s": int(g.get("data-s")),
                    "x": float(r.get("x")), "w": float(r.get("width")), "y": int(r.get("y"))})
    return out

def stacks(fr):
    """Each frame's stack from the geometry: the parent one row down holds it."""
    by_d = collections.defaultdict(list)
    for f in fr:
        by_d[f["d"]].append(f)
    bad = []
    for f in fr:
        if f["d"] == 0:
            f["stack"] = ()
            continue
        ps = [p for p in by_d[f["d"] - 1]
              if p["x"] - 1e-3 <= f["x"] and f["x"] + f["w"] <= p["x"] + p["w"] + 1e-3]
        if len(ps) != 1 or ps[0]["y"] != f["y"] + 16:
            bad.append(f["name"])
            continue
        f["parent"] = ps[0]
    for f in sorted(fr, key=lambda f: f["d"]):
        if f["d"] and "parent" in f:
            f["stack"] = f["parent"].get("stack", ()) + (f["name"],)
    return bad

folded = collections.Counter()
for line in open(fold):
    st, w = line.rstrip("\n").rsplit(" ", 1)
    folded[tuple(st.split(";"))] += int(w)
under = collections.Counter()
for st, w in folded.items():
    for k in range(len(st) + 1):
        under[st[:k]] += w

ok = True
def check(cond, what, figs):
    global ok
    print("%s: %s: %s: %s: %s" % ("PASS" if cond else "FAIL", T, name, what, figs))
    ok &= cond

fr = frames(svg)
bad = stacks(fr)
check(not bad, "svg geometry: every frame sits on exactly one parent",
      "%d frames%s" % (len(fr), "; orphans: " + ", ".join(bad[:5]) if bad else ""))
wrong = [(";".join(f["stack"]), f["t"], under[f["stack"]]) for f in fr
         if "stack" in f and f["t"] != under[f["stack"]]]
drawn = {f["stack"] for f in fr if "stack" in f}
missing = [st for st in under if st not in drawn]
check(not wrong and not missing, "every frame's total = fold's weight under its stack",
      "%d frames, %d stacks; wrong %s; not drawn %s" % (len(fr), len(under), wrong[:3], missing[:3]))

self_by_fn = collections.Counter()
for f in fr:
    if f["d"]:
        self_by_fn[f["name"]] += f["s"]
want, canon = {}, {}
for line in open(truth):
    k, v, *aliases = line.split()
    if not k.startswith("["):
        # Functions of one name in several files: one line each in the
        # truth ("read_int@file.o"), one name in the picture.
        k = k.split("@")[0]
        want[k] = want.get(k, 0) + int(v)
        for a in [k] + aliases:
            canon[a] = k
total = [int(l.split()[1]) for l in open(truth) if l.startswith("[total]")][0]
got = collections.Counter()
for k, v in self_by_fn.items():
    if v:
        got[canon.get(k, k)] += v
got = dict(got)
check(got == want and fr[0]["t"] == total, "self instructions per function = the program's own histogram",
      "%d functions, %d instructions; differ: %s" % (len(want), total,
      sorted(set(got.items()) ^ set(want.items()))[:4]))

fr12 = frames(svg1200)
stacks(fr12)
scale = 1180.0 / fr12[0]["t"]
small = {f["stack"] for f in fr if "stack" in f and f["t"] * scale < 0.1}
kept = {f["stack"] for f in fr12 if "stack" in f}
lost = [st for st in drawn if st not in kept]
# A frame is left out when it, or one of its callers, is under 0.1 px.
expect_lost = [st for st in drawn if any(st[:k] in small for k in range(1, len(st) + 1))]
check(sorted(lost) == sorted(expect_lost), "1200 px: left out exactly the frames under 0.1 px (and their callees)",
      "%d of %d frames drawn" % (len(kept), len(drawn)))
sys.exit(0 if ok else 1)
PY
done
