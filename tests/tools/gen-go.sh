#!/bin/sh
# gen-go.sh OUTDIR: fixtures for the Go trace parser and the Go clock alignment,
# in OUTDIR/go/:
#   NAME.d.txt        `go tool trace -d` of every v1 fixture in ../shared/fixtures/go-traces
#                     (Go's own parser: the ground truth test_gotrace compares against)
#   user_task_region_1_19_good.lz4   the same trace in an LZ4 frame
#   gotrace-demo      tests/fixtures/go/gotrace-demo built for linux/riscv64 (Go 1.19)
#   demo.trace, demo.oobt, demo.hist      one run under qemu-riscv64 with the tracing
#                     plugin (OUTDIR/progs/oobtrace.so, built by gen-programs.sh --plugin
#                     from tests/tools/oobtrace.c; one hart per guest thread): its
#                     Go execution trace, instruction trace, and executed-pc histogram
#   demo-sleep.*      the same with a 5 s sleep halfway (a clock fit must fail)
#   demo.d.txt, demo-sleep.d.txt          `go tool trace -d` of those runs
#   demo.truth        "func_addr 0x..." (from `go tool nm`), "go_events N" (lines of
#                     go tool trace -d), "entries N" (the plugin's histogram count at
#                     func_addr less the count at the function's jump back to its
#                     entry, found by objdump: Go's stack-split restart after
#                     morestack passes the entry again without emitting an event),
#                     the same for demo-sleep as sleep_*
# Idempotent: what exists and is newer than its inputs is kept. Prints
# "SKIP: gen-go: <reason>" when go, qemu or the cross tools are missing and
# "FAIL: gen-go: <what>" when a step fails.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
shared=${OOB_SHARED:-$src/../shared}
fix=$shared/fixtures/go-traces
out=$1/go
QEMU=${QEMU:-qemu-riscv64}
status=0

fail() {
	echo "FAIL: gen-go: $*"
	status=1
}

. "$src/tests/tools/newer.sh"

if ! command -v go >/dev/null 2>&1; then
	echo "SKIP: gen-go: go not installed (no ground truth for Go traces)"
	exit 0
fi
mkdir -p "$out" || exit 1

# Go's own decoder on every v1 fixture (it rejects the 1.22+ ones by design).
for f in "$fix"/*_good "$fix"/demo-*.trace; do
	[ -e "$f" ] || continue
	d=$out/$(basename "$f").d.txt
	newer "$d" "$f" || continue
	go tool trace -d "$f" >"$d.tmp" 2>/dev/null && mv "$d.tmp" "$d" ||
		fail "go tool trace -d $f"
done
if command -v lz4 >/dev/null 2>&1 && [ -e "$fix/user_task_region_1_19_good" ]; then
	newer "$out/user_task_region_1_19_good.lz4" "$fix/user_task_region_1_19_good" &&
		rm -f "$out/user_task_region_1_19_good.lz4" &&
		{ lz4 -q -f "$fix/user_task_region_1_19_good" "$out/user_task_region_1_19_good.lz4" ||
			fail "lz4"; }
fi

for tool in "$QEMU" gcc riscv64-linux-gnu-objdump; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: gen-go: $tool not installed (no traced Go run)"
		exit "$status"
	fi
done

# The Go program, cross-built with the standard library only (no network).
prog=$out/gotrace-demo
psrc=$src/tests/fixtures/go/gotrace-demo
if newer "$prog" "$psrc/main.go" "$psrc/go.mod"; then
	(cd "$psrc" && env GOCACHE="$out/gocache" GOPATH="$out/gopath" GOFLAGS=-mod=mod \
		GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=riscv64 \
		go build -o "$prog.tmp" .) && mv "$prog.tmp" "$prog" || fail "go build gotrace-demo"
fi

# The tracing plugin is the one gen-programs.sh builds; gen-fixtures.sh runs this
# script before gen-programs.sh, so ask for the plugin (gen-programs.sh prints its
# own FAIL or SKIP line, and keeps an up-to-date .so).
plugin=$1/progs/oobtrace.so
sh "$src/tests/tools/gen-programs.sh" --plugin "$1" || status=1
[ -x "$prog" ] && [ -e "$plugin" ] || exit "$status"

# run NAME ARGS...: one traced run of the program (GOMAXPROCS=2: two Ms run Go code).
run() {
	name=$1
	shift
	p=$out/$name
	newer "$p.hist" "$prog" "$plugin" "$src/tests/tools/gen-go.sh" || return 0
	rm -f "$p.trace" "$p.oobt" "$p.hist"
	env -i GOMAXPROCS=2 "$QEMU" -plugin "$plugin,out=$p.oobt,hist=$p.tmp.hist" "$prog" "$@" \
		"$p.trace" >"$p.out" 2>&1 && mv "$p.tmp.hist" "$p.hist" ||
		{
			fail "running gotrace-demo $* under qemu (see $p.out)"
			return 0
		}
	go tool trace -d "$p.trace" >"$p.d.txt" 2>/dev/null || fail "go tool trace -d $p.trace"
}
run demo -rounds 30
run demo-sleep -rounds 30 -sleep 5000 # long enough to stand out on a loaded machine

# Ground truth, each number from a tool other than oobprof.
truth=$out/demo.truth
if newer "$truth" "$out/demo.hist" "$out/demo-sleep.hist" "$src/tests/tools/gen-go.sh"; then
	sym=$(go tool nm -size "$prog" | awk '$4 == "runtime.traceEventLocked" { print $1, $2 }')
	addr=${sym% *}
	size=${sym#* }
	if [ -z "$addr" ]; then
		fail "no runtime.traceEventLocked in $prog"
	else
		addr=$(printf '%x' "0x$addr") # as the histogram and objdump print it
		# The stack-split restart: "j <entry>" inside the function itself.
		restart=$(riscv64-linux-gnu-objdump -d --start-address=0x$addr \
			--stop-address=$(printf '0x%x' $((0x$addr + size))) "$prog" |
			awk -v a="$addr" '$3 == "j" && $4 == a { sub(":", "", $1); print "0x" $1 }')
		[ -n "$restart" ] || fail "no stack-split restart jump in runtime.traceEventLocked"
		count() { awk -v a="$1" '$1 == a { n = $2 } END { print n + 0 }' "$2"; }
		{
			echo "func_addr 0x$addr"
			for r in demo sleep; do
				n=$r
				[ $r = sleep ] && n=demo-sleep
				pre=
				[ $r = sleep ] && pre=sleep_
				echo "${pre}go_events $(wc -l <"$out/$n.d.txt")"
				echo "${pre}entries $(($(count "0x$addr" "$out/$n.hist") - $(count "$restart" "$out/$n.hist")))"
			done
		} >"$truth.tmp" && mv "$truth.tmp" "$truth" || fail "writing $truth"
	fi
fi
exit "$status"
