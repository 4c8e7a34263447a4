#!/bin/sh
# Loads one sample job into a running oobprofd unless it has one already:
# traces tests/fixtures/progs/mixed.c under qemu-riscv64 (via the test fixture
# generator), uploads the trace and the ELF, starts a job.
# usage: load-sample.sh BUILD_DIR URL
set -eu
build=$1
url=$2
top=$(cd "$(dirname "$0")/.." && pwd)

for _ in $(seq 1 50); do
	curl -sf "$url/api/v1/health" >/dev/null 2>&1 && break
	sleep 0.1
done
# A data folder that has jobs already needs no sample.
if curl -sf "$url/api/v1/jobs" | grep -q '"id"'; then
	exit 0
fi
gen="$build/tests/gen"
OOB_SRCDIR=$top OOB_BUILDDIR=$build sh "$top/tests/tools/gen-programs.sh" "$gen" >/dev/null
trace="$gen/progs/mixed.oobt"
elf="$gen/progs/mixed"
[ -f "$trace" ] && [ -f "$elf" ] || { echo "load-sample: no sample trace generated"; exit 1; }
id_of() { python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
bin=$(curl -sf -T "$elf" "$url/api/v1/binaries?name=mixed" | id_of)
tr=$(curl -sf -T "$trace" "$url/api/v1/traces?name=sample-mixed" | id_of)
job=$(curl -sf -X POST -H 'Content-Type: application/json' \
	-d "{\"trace\": $tr, \"binaries\": [$bin]}" "$url/api/v1/jobs" | id_of)
echo "sample job: $url/#/jobs/$job"
