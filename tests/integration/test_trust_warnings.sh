#!/bin/sh
# test_trust_warnings.sh: results people can trust (issue 19). What the
# reconstruction cannot vouch for is said, in the CLI (stderr), the job's
# summary (API) and the viewer, with figures checked against truth made
# another way:
# - a QEMU Linux boot without its vmlinux: "no_vmlinux", and machine-mode
#   firmware ("firmware", frames of kind "firmware") whose instruction count
#   equals the plugin's own histogram over OpenSBI's range exactly; with
#   it, "kthread_names": as many kernel threads named by their function
#   as the process list has;
# - the Spike run with prog but not init (both static, both at 0x10000):
#   init's code ran at prog's addresses, so its functions would be shown
#   under prog's names: "bits_mismatch" naming prog; none once init is
#   given; without the kernel, the two cannot be told apart: said so.
set -u
T=test_trust_warnings
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test trust_warnings || exit 0
CLI=$OOB_BUILDDIR/oobprof
L=$GEN/linux/sv39
LOG=$GEN/readers/spike.log
S=$SHARED/fixtures/spike

if [ -e "$L/boot.oobt" ] && [ -e "$L/boot.hist" ]; then
	"$CLI" top --json "$L/boot.oobt" >"$W/boot.json" 2>"$W/boot.err"
	"$CLI" top --json --elf "$L/vmlinux" "$L/boot.oobt" >"$W/bootk.json" 2>"$W/bootk.err"
	"$CLI" processes --json --elf "$L/vmlinux" "$L/boot.oobt" >"$W/bootk.procs" 2>/dev/null
	python3 - "$T" "$L/boot.hist" "$W/boot.err" "$W/boot.json" "$W/bootk.err" "$W/bootk.procs" <<'PY'
import json, re, sys
T, hist, err, top, errk, procs = sys.argv[1:]
FW = (0x80000000, 0x80200000)
fw = kernel = 0
for line in open(hist):
    m = re.match(r"0x([0-9a-f]+) (\d+)", line)
    if m:
        pc, n = int(m.group(1), 16), int(m.group(2))
        fw += n if FW[0] <= pc < FW[1] else 0
        kernel += n if pc >> 63 else 0
def warnings(path):
    out = {}
    for line in open(path):
        m = re.match(r"oobprof: warning: ([\d.]+)% of the instructions \((\d+)\) ran in (.*?) of no", line)
        if m:
            out[m.group(3)] = int(m.group(2))
        elif "warning" in line:
            out[line.strip()] = -1
    return out
def check(ok, what, figs):
    print("%s: %s: %s: %s" % ("PASS" if ok else "FAIL", T, what, figs))
w, wk = warnings(err), warnings(errk)
check(w.get("machine-mode firmware") == fw, "boot: firmware instructions = the plugin's histogram over 0x80000000..0x80200000",
      "warning %s, histogram %d" % (w.get("machine-mode firmware"), fw))
k = w.get("kernel code", 0)
check(abs(k - kernel) <= kernel // 10000 and "give the kernel's vmlinux" in open(err).read(),
      "boot without vmlinux: kernel code of no ELF said, within 0.01% of the histogram",
      "warning %d, histogram %d" % (k, kernel))
check("kernel code" not in wk and wk.get("machine-mode firmware") == fw,
      "boot with vmlinux: no kernel warning; the firmware one the same", str(wk))
# kernel threads named by their function, not their comm: said, and counted
named = [p["comm"] for p in json.load(open(procs))["processes"] if p.get("comm", "").startswith("[kthread")]
said = re.search(r"warning: (\d+) kernel threads are named by their thread function \((.*?)\), not by their comm",
                 open(errk).read())
check(named and said and int(said.group(1)) == len(named) and said.group(2) in named,
      "boot: kernel threads without their comm said, as many as the process list has",
      "warning %s, process list %d" % (said and said.group(0), len(named)))
funcs = json.load(open(top))["functions"]
fwf = [f for f in funcs if FW[0] <= int(f["addr"], 16) < FW[1]]
check(fwf and all(f["kind"] == "firmware" for f in fwf), "firmware functions have kind firmware",
      "%d functions, kinds %s" % (len(fwf), sorted({f["kind"] for f in fwf})))
PY
else
	skip boot "no QEMU Linux boot (tests/gen/linux/sv39)"
fi

for f in "$LOG" "$GEN/vmlinux" "$S/init" "$S/prog"; do
	[ -e "$f" ] || { skip spike "missing $f"; exit 0; }
done
"$CLI" top -n 1 --elf "$GEN/vmlinux" --elf "$S/prog" "$LOG" >/dev/null 2>"$W/prog.err"
"$CLI" top -n 1 --elf "$GEN/vmlinux" --elf "$S/init" --elf "$S/prog" "$LOG" >/dev/null 2>"$W/both.err"
"$CLI" top -n 1 --elf "$S/init" --elf "$S/prog" "$LOG" >/dev/null 2>"$W/nok.err"
grep -q "differ from prog's at .* another program ran" "$W/prog.err" &&
	pass "spike, prog without init: $(grep -o 'differ from prog.s at [0-9]* of the [0-9]* addresses' "$W/prog.err")" ||
	fail "spike, prog without init" "$(cat "$W/prog.err")"
! grep -q "warning" "$W/both.err" && pass "spike, init and prog given: no warning" ||
	fail "spike, init and prog" "$(cat "$W/both.err")"
grep -q "where prog's match: the processes .* could not be told apart" "$W/nok.err" &&
	pass "spike, no vmlinux: init's addresses ran prog's code: said so" ||
	fail "spike without vmlinux" "$(cat "$W/nok.err")"

# The job's summary carries them (and the result file keeps them).
srv_start "$W/data" --workers 1 || { fail start "server did not start"; exit 0; }
ids=
for b in "$GEN/vmlinux" "$S/prog"; do
	curl -s -T "$b" "$SRV_URL/api/v1/binaries?name=$(basename "$b")" >"$W/bin.json"
	ids="$ids${ids:+, }$(jq_py "$W/bin.json" 'j["id"]')"
done
curl -s -T "$LOG" "$SRV_URL/api/v1/traces?name=spike" >"$W/trace.json"
curl -s -d "{\"trace\": $(jq_py "$W/trace.json" 'j["id"]'), \"binaries\": [$ids]}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
job=$(jq_py "$W/job0.json" 'j["id"]')
state=$(wait_job "$job" 300)
kinds=$(jq_py "$W/job.json" '",".join(w["kind"] for w in (j.get("summary") or {}).get("warnings", []))')
msg=$(jq_py "$W/job.json" '((j.get("summary") or {}).get("warnings") or [{}])[0].get("message", "")')
cli=$(sed -n 's/^oobprof: warning: //p' "$W/prog.err" | head -n 1)
if [ "$state" = done ] && [ "$kinds" = bits_mismatch ] && [ "$msg" = "$cli" ]; then
	pass "job summary: warnings [$kinds], the CLI's words"
else
	fail "job summary" "state $state, kinds [$kinds]: $msg"
fi
# /top reads the stored result back: the warnings went through it.
http GET "$SRV_URL/api/v1/jobs/$job/top?limit=1" "$W/top.json" >/dev/null
stored=$(jq_py "$W/top.json" '"|".join(w["message"] for w in j.get("warnings", []))')
[ "$stored" = "$cli" ] && pass "the stored result keeps them (/top)" || fail "stored warnings" "$stored"

srv_stop || fail "clean shutdown" "exit status $?"
