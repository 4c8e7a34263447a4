#!/bin/sh
# A real multi-threaded Go program (tests/tools/gen-go.sh: Go 1.19 riscv64
# under qemu-riscv64, one hart per QEMU vCPU, interleaved in one oobt trace):
# the core follows harts that appear mid-trace and Go's coroutine-style
# control transfers without losing an instruction. Truth: the plugin's own
# instruction histogram.
set -u
T=test_cli_go
G=$OOB_BUILDDIR/tests/gen/go
CLI=$OOB_BUILDDIR/oobprof
for f in "$CLI" "$G/demo.oobt" "$G/demo.hist" "$G/gotrace-demo"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
out=$("$CLI" stats --elf "$G/gotrace-demo" "$G/demo.oobt" 2>&1) || { echo "FAIL: $T: stats: $out"; exit 0; }
want=$(awk '{s += $2} END {print s}' "$G/demo.hist")
got=$(echo "$out" | sed -n 's/^instructions: //p')
harts=$(echo "$out" | sed -n 's/^harts: //p')
if [ "$got" = "$want" ] && [ "${harts:-0}" -gt 1 ]; then
	echo "PASS: $T: every instruction accounted ($got on $harts harts)"
else
	echo "FAIL: $T: instructions $got (histogram $want), harts $harts"
fi
fold=$("$CLI" fold --elf "$G/gotrace-demo" "$G/demo.oobt" | awk '{s += $NF} END {print s}')
[ "$fold" = "$want" ] && echo "PASS: $T: folded weights sum to the total ($fold)" ||
	echo "FAIL: $T: folded weights sum to $fold, not $want"
