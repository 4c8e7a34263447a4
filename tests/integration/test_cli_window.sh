#!/bin/sh
# Time windows (`oobprof fold|timeline --window A:B`) are exact and the event
# index's checkpoints change nothing.
#
# exact: a window holds exactly the records whose time is in [A, B). Truth:
# the TracerV files' own cycle words, decoded here with Python (valid slots
# of each record group, tests/tools/gen-readers.py's layouts), counted with
# bisect. Windows with edges between two stack events (the case the log
# alone cannot cut), on a cycle that several records share (width 2), on the
# first and last record, empty and whole; two tiles (one hart each) at
# different clocks; and a trace without cycles, whose axis is the record
# index (one hart: B - A records).
# seek: for many windows on every fixture with events, the fold and the
# timeline read from the index's checkpoint (--index-every small) are
# byte-identical to the whole log's replay (--no-seek).
set -u
T=test_cli_window
R=$OOB_BUILDDIR/tests/gen/readers
P=$OOB_BUILDDIR/tests/gen/progs
CLI=$OOB_BUILDDIR/oobprof
for f in "$CLI" "$R/tv-c-v40-w1.bin" "$R/tv-c-v63-w2.bin" "$R/rdprog" "$R/rdprog.qemu.log"; do
	[ -e "$f" ] || { echo "SKIP: $T: all: missing $f"; exit 0; }
done
W=$OOB_BUILDDIR/tests/out/cli_window
rm -rf "$W" && mkdir -p "$W"

# Records of a TracerV binary file and their base-clock cycles: "cycle" lines.
cycles() { # file words valid_bit ratio -> $W/<name>.cyc
	python3 - "$@" >"$W/$(basename "$1").cyc" <<'PY'
import struct, sys
path, words, vbit, ratio = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
src = open(path, "rb").read()
body = src[src.index(b"\n") + 1:] if src.startswith(b"#") else src
for i in range(len(body) // (8 * words)):
    w = struct.unpack_from("<%dQ" % words, body, 8 * words * i)
    for s in w[1:]:
        if (s >> vbit) & 1:
            print(w[0] * ratio)
PY
}

# Instructions of a fold (the default metric counts instructions).
total() { awk '{s += $NF} END {print s + 0}' "$1"; }

# Truth for windows over cycle files: "A:B count" per window.
truth() { # windows... < cycle files on argv after --
	python3 - "$@" <<'PY'
import bisect, sys
i = sys.argv.index("--")
wins, files = sys.argv[1:i], sys.argv[i + 1:]
cyc = [[int(l) for l in open(f)] for f in files]
for w in wins:
    a, b = (int(x) for x in w.split(":"))
    print(w, sum(bisect.bisect_left(c, b) - bisect.bisect_left(c, a) for c in cyc))
PY
}

check_windows() { # case trace-args... -- windows...
	case=$1
	shift
	args=
	while [ "$1" != -- ]; do
		args="$args $1"
		shift
	done
	shift
	for w in "$@"; do
		# shellcheck disable=SC2086
		"$CLI" fold --elf "$R/rdprog" --window "$w" $args >"$W/f.folded" 2>"$W/err" ||
			{ echo "FAIL: $T: exact_$case: $w: $(cat "$W/err")"; return; }
		echo "$w $(total "$W/f.folded")"
	done >"$W/$case.got"
}

cycles "$R/tv-c-v40-w1.bin" 2 40 1
cycles "$R/tv-c-v63-w2.bin" 3 63 1
C1=$W/tv-c-v40-w1.bin.cyc
C2=$W/tv-c-v63-w2.bin.cyc
first=$(head -1 "$C1") last=$(tail -1 "$C1")
# A cycle inside a long span (the last, ~150000 records in the kernel, and
# short ones in user code), the first and the last record, one record.
WIN1="100000:200000 250007:260007 $first:$((first + 1)) $last:$((last + 1))
$((first + 5)):$((last - 7)) 0:$((last + 1)) 5:6 $((last + 1)):$((last + 9)) 81700:81900"
# shellcheck disable=SC2086
check_windows one "$R/tv-c-v40-w1.bin" -- $WIN1
# shellcheck disable=SC2086
truth $WIN1 -- "$C1" >"$W/one.want"
if cmp -s "$W/one.want" "$W/one.got"; then
	echo "PASS: $T: exact_one_hart"
else
	echo "FAIL: $T: exact_one_hart: $(diff "$W/one.want" "$W/one.got" | tr '\n' ' ')"
fi

# Width 2: several records retire on one cycle; windows start and end on one.
f2=$(head -1 "$C2")
mid=$(sed -n 50001p "$C2")
WIN2="$mid:$((mid + 1)) $f2:$mid $((mid + 1)):$((mid + 40001)) $mid:$((mid + 3))"
# shellcheck disable=SC2086
check_windows two_wide "$R/tv-c-v63-w2.bin" -- $WIN2
# shellcheck disable=SC2086
truth $WIN2 -- "$C2" >"$W/two_wide.want"
if [ "$(awk '{print $2}' "$W/two_wide.want" | head -1)" -lt 2 ]; then
	echo "FAIL: $T: exact_shared_cycle: record 50001 shares no cycle (fixture changed?)"
elif cmp -s "$W/two_wide.want" "$W/two_wide.got"; then
	echo "PASS: $T: exact_shared_cycle"
else
	echo "FAIL: $T: exact_shared_cycle: $(diff "$W/two_wide.want" "$W/two_wide.got" | tr '\n' ' ')"
fi

# Two tiles: the same records at the base clock and at half of it.
python3 "$OOB_SRCDIR/tests/tools/two-tiles.py" "$R/tv-c-v40-w1.bin" "$W"
cycles "$W/TRACEFILE-C1" 2 40 2
WIN3="100000:200000 385000:500000 250007:600007 $first:$((2 * last + 1)) 771690:771691"
# shellcheck disable=SC2086
check_windows tiles "$W/TRACEFILE-C0" "$W/TRACEFILE-C1" -- $WIN3
# shellcheck disable=SC2086
truth $WIN3 -- "$C1" "$W/TRACEFILE-C1.cyc" >"$W/tiles.want"
if cmp -s "$W/tiles.want" "$W/tiles.got"; then
	echo "PASS: $T: exact_two_harts"
else
	echo "FAIL: $T: exact_two_harts: $(diff "$W/tiles.want" "$W/tiles.got" | tr '\n' ' ')"
fi

# No cycles (QEMU, two harts in one log): the axis is the record's index in
# the log, so a window holds B - A records (the count: the generator's truth).
n=$(awk '$1 == "records" {print $2}' "$R/rdprog.truth")
ok=1
for w in 0:1 1:2 1000:1001 777:5555 12345:$((n - 3)) 0:$n; do
	"$CLI" fold --elf "$R/rdprog" --window "$w" "$R/rdprog.qemu.log" >"$W/q.folded" 2>"$W/err" || {
		ok=0
		echo "FAIL: $T: exact_records: $w: $(cat "$W/err")"
		break
	}
	a=${w%:*} b=${w#*:}
	[ "$(total "$W/q.folded")" = $((b - a)) ] || {
		ok=0
		echo "FAIL: $T: exact_records: $w: $(total "$W/q.folded") instructions, want $((b - a))"
		break
	}
done
[ "$ok" = 1 ] && [ "$n" -gt 20000 ] && echo "PASS: $T: exact_records"
[ "$n" -gt 20000 ] || echo "FAIL: $T: exact_records: only $n records in the QEMU log"

# Index against the whole log's replay, byte for byte.
seek_case() { # name elf-args -- trace-args...
	name=$1
	shift
	eargs=
	while [ "$1" != -- ]; do
		eargs="$eargs $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	"$CLI" timeline $eargs "$@" >"$W/$name.tl" 2>"$W/err" || {
		echo "SKIP: $T: seek_$name: $(cat "$W/err")"
		return
	}
	wins=$(python3 - "$W/$name.tl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s, e = j["start"], j["end"]
d = max(e - s, 1)
out = ["%d:%d" % (s, e + 1), "0:%d" % (s + d // 3)]
for k in range(1, 9):
    a = s + d * k // 10
    out.append("%d:%d" % (a, a + max(d // (7 * k), 1)))
out.append("%d:%d" % (s + d // 2, s + d // 2 + 1))
print(" ".join(out))
PY
)
	bad=
	for w in $wins; do
		for cmd in fold timeline; do
			# shellcheck disable=SC2086
			"$CLI" $cmd $eargs --index-every 3000 --window "$w" "$@" >"$W/a" 2>"$W/err" &&
				"$CLI" $cmd $eargs --no-seek --window "$w" "$@" >"$W/b" 2>>"$W/err" || {
				bad="$cmd $w: $(cat "$W/err")"
				break 2
			}
			cmp -s "$W/a" "$W/b" || {
				bad="$cmd $w: the index's answer differs from the replay's"
				break 2
			}
		done
	done
	if [ -n "$bad" ]; then
		echo "FAIL: $T: seek_$name: $bad"
	else
		echo "PASS: $T: seek_$name"
	fi
}
seek_case tv_one --elf "$R/rdprog" -- "$R/tv-c-v40-w1.bin"
seek_case tv_tiles --elf "$R/rdprog" -- "$W/TRACEFILE-C0" "$W/TRACEFILE-C1"
seek_case qemu --elf "$R/rdprog" -- "$R/rdprog.qemu.log"
[ -e "$R/spike-2core.log" ] && seek_case spike_2core -- "$R/spike-2core.log"
for prog in mixed recursion longjmp; do
	[ -e "$P/$prog.oobt" ] && seek_case "$prog" --elf "$P/$prog" -- "$P/$prog.oobt"
done
# (A Linux boot on two harts: test_server_window.sh, one job, many windows.)
exit 0
