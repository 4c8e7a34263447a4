#!/bin/sh
# test_cli_bounds.sh: a hostile trace cannot grow a stack without bound
# (reliability issue, item 2). N records of `jal ra, 0` at one pc are N - 1
# nested calls; with --max-depth D the stack stops at D frames, every
# instruction is still counted, and the N - D pushes beyond are counted as
# repairs_depth (arithmetic, not a captured output).
set -u
T=test_cli_bounds
: "${OOB_BUILDDIR:?}"
OOBPROF=$OOB_BUILDDIR/oobprof
W=$OOB_BUILDDIR/tests/out/cli_bounds
rm -rf "$W" && mkdir -p "$W"
N=300000
D=1000
python3 - "$W/calls.spike" "$N" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("core   0: 3 0x0000000080000000 (0x000000ef)\n" * int(sys.argv[2]))
PY
"$OOBPROF" stats --max-depth $D "$W/calls.spike" >"$W/stats.txt" 2>&1
"$OOBPROF" fold --max-depth $D "$W/calls.spike" >"$W/folded.txt" 2>&1
deepest=$(awk -F';' '{ if (NF > m) m = NF } END { print m }' "$W/folded.txt")
total=$(awk '{ s += $NF } END { print s }' "$W/folded.txt")
dropped=$(sed -n 's/^repairs_depth: //p' "$W/stats.txt")
want=$((N - 1 - (D - 1)))
if [ "$deepest" = $D ] && [ "$total" = $N ] && [ "$dropped" = $want ]; then
	echo "PASS: $T: $N nested calls, --max-depth $D: deepest stack $deepest, $total instructions, repairs_depth $dropped"
else
	echo "FAIL: $T: max-depth: deepest $deepest (want $D), instructions $total (want $N), repairs_depth $dropped (want $want)"
fi
"$OOBPROF" stats "$W/calls.spike" >"$W/stats-default.txt" 2>&1
[ "$(sed -n 's/^repairs_depth: //p' "$W/stats-default.txt")" = 0 ] &&
	echo "PASS: $T: the default limit (1048576) keeps all $N frames" ||
	echo "FAIL: $T: default limit: $(grep repairs_depth "$W/stats-default.txt")"
for bad in 0 -1 x 4294967296; do
	if "$OOBPROF" stats --max-depth "$bad" "$W/calls.spike" >"$W/bad.txt" 2>&1; then
		echo "FAIL: $T: --max-depth $bad accepted"
	else
		grep -q -- "--max-depth" "$W/bad.txt" && echo "PASS: $T: --max-depth $bad refused: $(head -n 1 "$W/bad.txt")" ||
			echo "FAIL: $T: --max-depth $bad: $(head -n 1 "$W/bad.txt")"
	fi
done
