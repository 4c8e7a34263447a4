#!/bin/sh
# recon-outputs.sh CLI GEN OUTDIR [SPIKE]: runs the reconstruction over every
# generated fixture (GEN: a build's tests/gen; SPIKE: the shared Spike
# fixture's folder, for its init and prog) and writes each output to a file of
# OUTDIR, one per command: `fold --annotate`, `stats` (less its timings) and
# `processes`, with the ELF sets the integration tests use, plus the variants
# that exercise each way of telling tasks apart (events, satp, matching) and
# the stack events (speedscope). Two trees' outputs compare with
#   diff -r OUTDIR1 OUTDIR2
# which is how a refactoring of core/recon shows it changed nothing.
# Prints one line per output written; exit status 1 if a command failed.
set -u
[ $# -ge 3 ] || {
	echo "usage: $0 CLI GEN OUTDIR [SPIKE]" >&2
	exit 2
}
cli=$1 G=$2 out=$3 S=${4:-}
mkdir -p "$out" || exit 1
status=0

# one NAME CMD ARG...: `oobprof CMD ARG...` into OUTDIR/NAME.CMD (stats
# without its wall-clock lines, which differ from run to run).
one() {
	name=$1 cmd=$2
	shift 2
	o=$out/$name.$cmd
	case $cmd in
	fold) "$cli" fold --annotate "$@" >"$o" 2>"$o.err" ;;
	stats) "$cli" stats "$@" 2>"$o.err" | grep -Ev '^(seconds|minstr_per_s):' >"$o" ;;
	processes) "$cli" processes "$@" >"$o" 2>"$o.err" ;;
	speedscope) "$cli" export --to speedscope "$@" -o "$o" 2>"$o.err" ;;
	esac
	rc=$?
	[ $rc -eq 0 ] || {
		echo "FAIL: $name.$cmd: status $rc: $(head -c 200 "$o.err")"
		status=1
	}
	echo "$name.$cmd $(wc -c <"$o")"
}

# all NAME ARG...: fold, stats and processes.
all() {
	name=$1
	shift
	for c in fold stats processes; do
		one "$name" "$c" "$@"
	done
}

P=$G/progs
for p in recursion mutual fnptr fnptr-pie tailcall tailcall-pie longjmp statics inline mixed mixed-pie; do
	[ -e "$P/$p.oobt" ] || continue
	if [ -e "$P/$p.maps" ]; then
		set -- $(awk '{ printf "--elf %s@%s ", $1, $2 }' "$P/$p.maps")
	else
		set -- --elf "$P/$p"
	fi
	all "progs-$p" "$@" "$P/$p.oobt"
	one "progs-$p" speedscope "$@" "$P/$p.oobt"
	[ "$p" = inline ] && all "progs-$p-inline" --inline "$@" "$P/$p.oobt"
done
# all programs at once: pc-only would match, with bits one task per binary
set --
for p in recursion mutual tailcall longjmp statics mixed; do
	set -- "$@" --elf "$P/$p"
done
[ -e "$P/mixed.oobt" ] && all progs-mixed-allelfs "$@" "$P/mixed.oobt"

R=$G/readers
for f in rdprog.qemu.log tv-c-v40-w1.bin tv-c-v40-w2.bin tv-c-v63-w1.bin tv-c-v63-w2.bin \
	tv-c-v63-w3.bin tv-c-v63-w7.bin tv-nohdr-v63-w1.bin tv-old8-v40.bin tv-text.txt \
	tv-wide12-v63.bin fireperf.txt; do
	[ -e "$R/$f" ] && all "readers-$f" --elf "$R/rdprog" "$R/$f"
done
[ -e "$R/bare.qemu.log" ] && all readers-bare --elf "$R/bare.elf" "$R/bare.qemu.log"
if [ -n "$S" ] && [ -e "$G/vmlinux" ]; then
	K="--elf $G/vmlinux --elf $S/init --elf $S/prog"
	for f in spike.log spike-2core.log spike-l.log; do
		# shellcheck disable=SC2086
		[ -e "$R/$f" ] && all "spike-$f" $K "$R/$f"
	done
	# shellcheck disable=SC2086
	all spike-satp --tasks satp $K "$R/spike.log"
	# shellcheck disable=SC2086
	one spike-2core speedscope $K "$R/spike-2core.log"
	# shellcheck disable=SC2086
	"$cli" convert --to tracerv-bin "$R/spike.log" -o "$out/.pc.trv" 2>/dev/null &&
		all spike-pconly $K "$out/.pc.trv"
	rm -f "$out/.pc.trv"
fi

L=$G/linux
for v in sv57 sv39 smp2; do
	[ -e "$L/$v/boot.oobt" ] || continue
	set -- --elf "$L/$v/vmlinux"
	for u in init calls sort syscalls signals waits; do
		set -- "$@" --elf "$L/$u"
	done
	all "linux-$v" "$@" "$L/$v/boot.oobt"
	[ "$v" = sv39 ] && one "linux-$v" speedscope "$@" "$L/$v/boot.oobt"
	# the kernel alone: one task per hart, no tracker
	all "linux-$v-kernel" --elf "$L/$v/vmlinux" "$L/$v/boot.oobt"
done

# sideband events (tests/integration/test_full_events.sh)
if [ -e "$P/mixed.oobt" ]; then
	N=$(awk '{s += $2} END {print s}' "$P/mixed.hist")
	K=$((N / 3))
	cat >"$out/.ev.jsonl" <<EOT
{"event": "exec", "hart": 0, "seq": 0, "pid": 42, "path": "/bin/mixed"}
{"event": "switch", "hart": 0, "seq": 0, "pid": 42}
{"event": "fork", "hart": 0, "seq": $K, "pid": 42, "child": 43}
{"type": "switch", "seq": $K, "tid": 43}
{"event": "exit", "hart": 0, "seq": $((N - 1)), "pid": 43}
{"event": "map", "hart": 0, "seq": 5, "pid": 42, "path": "/lib/x.so", "base": 4096, "size": 4096}
EOT
	all events-mixed --events "$out/.ev.jsonl" --elf "$P/mixed" "$P/mixed.oobt"
	one events-mixed speedscope --events "$out/.ev.jsonl" --elf "$P/mixed" "$P/mixed.oobt"
	rm -f "$out/.ev.jsonl"
fi
if [ -e "$P/mixed-pie.oobt" ]; then
	{
		echo '{"event": "exec", "hart": 0, "seq": 0, "pid": 7, "path": "/bin/mixed-pie"}'
		echo '{"event": "switch", "hart": 0, "seq": 0, "pid": 7}'
		while read -r elf base; do
			printf '{"event": "map", "hart": 0, "seq": 0, "pid": 7, "path": "%s", "base": "%s"}\n' "$elf" "$base"
		done <"$P/mixed-pie.maps"
	} >"$out/.maps.jsonl"
	set -- $(awk '{ printf "--elf %s ", $1 }' "$P/mixed-pie.maps")
	all events-maps --events "$out/.maps.jsonl" "$@" "$P/mixed-pie.oobt"
	rm -f "$out/.maps.jsonl"
fi
exit $status
