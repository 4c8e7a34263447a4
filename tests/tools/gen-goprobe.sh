#!/bin/sh
# gen-goprobe.sh OUTDIR: the Go probe program of issue 15 (exact stacks through
# Go's runtime stack switches), in OUTDIR/go/:
#   goprobe         tests/fixtures/go/goprobe built for linux/riscv64 with
#                   -gcflags=all=-l (no inlining: every call is a frame for Go too)
#   goprobe.oobt, goprobe.hist, goprobe.out   one run under qemu-riscv64 with the
#                   tracing plugin (OUTDIR/progs/oobtrace.so, gen-programs.sh
#                   --plugin; GOMAXPROCS=2): its instruction trace, executed-pc
#                   histogram and stdout, which has the chain Go's runtime.Callers
#                   gave every probe (stack_truth.py check; test_nonlocal.sh)
# A script of its own, so that the Go demo of gen-go.sh (whose runs other tests
# align against their own Go traces) is not run again when this one changes.
# Idempotent (newer.sh). Prints "SKIP: gen-goprobe: <reason>" when go, qemu or
# the plugin's compiler are missing and "FAIL: gen-goprobe: <what>" when a step fails.
set -u
[ $# -eq 1 ] || {
	echo "usage: $0 OUTDIR" >&2
	exit 2
}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$1/go
QEMU=${QEMU:-qemu-riscv64}
status=0

fail() {
	echo "FAIL: gen-goprobe: $*"
	status=1
}

. "$src/tests/tools/newer.sh"

for tool in go "$QEMU" gcc; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: gen-goprobe: $tool not installed"
		exit 0
	fi
done
mkdir -p "$out" || exit 1
plugin=$1/progs/oobtrace.so
sh "$src/tests/tools/gen-programs.sh" --plugin "$1" || status=1
[ -e "$plugin" ] || exit "$status"

gp=$out/goprobe
gsrc=$src/tests/fixtures/go/goprobe
if newer "$gp" "$gsrc/main.go" "$gsrc/go.mod"; then
	(cd "$gsrc" && env GOCACHE="$out/gocache" GOPATH="$out/gopath" GOFLAGS=-mod=mod \
		GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=riscv64 \
		go build -gcflags=all=-l -o "$gp.tmp" .) && mv "$gp.tmp" "$gp" || fail "go build goprobe"
fi
[ -x "$gp" ] || exit "$status"
if newer "$gp.hist" "$gp" "$plugin" "$src/tests/tools/gen-goprobe.sh"; then
	rm -f "$gp.oobt" "$gp.hist" "$gp.out"
	env -i GOMAXPROCS=2 "$QEMU" -plugin "$plugin,out=$gp.oobt,hist=$gp.tmp.hist" "$gp" \
		>"$gp.tmp.out" 2>&1 && mv "$gp.tmp.out" "$gp.out" && mv "$gp.tmp.hist" "$gp.hist" ||
		fail "running goprobe under qemu (see $gp.tmp.out)"
fi
exit "$status"
