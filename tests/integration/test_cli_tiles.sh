#!/bin/sh
# Several TracerV files, one tile (hart) each, in different clock domains:
# each file's header ("Relative Frequency: m/d of Base Clock") converts its
# cycles to the base clock, so the tiles share one time axis. Two copies of
# one real trace (tests/gen/readers: rdprog under QEMU, as FireSim TracerV
# binary records), one at the base clock and one at half of it: every
# instruction counts twice, and the second tile's times are exactly twice
# the first's. Truth: the files' own cycle words, read here with Python.
set -u
T=test_cli_tiles
R=$OOB_BUILDDIR/tests/gen/readers
CLI=$OOB_BUILDDIR/oobprof
for f in "$CLI" "$R/tv-c-v63-w1.bin" "$R/rdprog"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
W=$OOB_BUILDDIR/tests/out/cli_tiles
rm -rf "$W" && mkdir -p "$W"
python3 "$OOB_SRCDIR/tests/tools/two-tiles.py" "$R/tv-c-v63-w1.bin" "$W"
"$CLI" fold --elf "$R/rdprog" "$R/tv-c-v63-w1.bin" >"$W/one.folded" &&
	"$CLI" fold --elf "$R/rdprog" "$W/TRACEFILE-C0" "$W/TRACEFILE-C1" >"$W/two.folded" &&
	"$CLI" timeline --elf "$R/rdprog" "$W/TRACEFILE-C0" "$W/TRACEFILE-C1" >"$W/timeline.json" ||
	{ echo "FAIL: $T: oobprof: see $W"; exit 0; }
python3 - "$W" "$R/tv-c-v63-w1.bin" <<'PY'
import json, struct, sys
T = "test_cli_tiles"
w, src = sys.argv[1], open(sys.argv[2], "rb").read()
body = src[src.index(b"\n") + 1:]
recs = [struct.unpack_from("<QQ", body, 16 * i) for i in range(len(body) // 16)]
valid = [r for r in recs if r[1] >> 63]
def fold(p):
    d = {}
    for line in open(p):
        k, v = line.rsplit(" ", 1)
        d[k] = d.get(k, 0) + int(v)
    return d
one, two = fold(w + "/one.folded"), fold(w + "/two.folded")
ok = two == {k: 2 * v for k, v in one.items()} and sum(one.values()) == len(valid)
print(("PASS" if ok else "FAIL") + ": %s: two tiles, every instruction counted twice (%d records each)"
      % (T, len(valid)))
tl = json.load(open(w + "/timeline.json"))
h = {x["hart"]: x["intervals"] for x in tl["harts"]}
first, last = valid[0][0], valid[-1][0]
ok = (tl["axis"] == "cycles" and h[0][0][0] == first and h[0][-1][1] == last
      and h[1][0][0] == 2 * first and h[1][-1][1] == 2 * last
      and [[2 * a, 2 * b, s] for a, b, s, _, _ in h[0]] == [x[:3] for x in h[1]])
print(("PASS" if ok else "FAIL") + ": %s: the half-rate tile's times are twice the base-rate tile's "
      "(base clock %d..%d and %d..%d; cycle words %d..%d)"
      % (T, h[0][0][0], h[0][-1][1], h[1][0][0], h[1][-1][1], first, last))
PY
