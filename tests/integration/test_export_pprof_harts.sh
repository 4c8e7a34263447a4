#!/bin/sh
# pprof at the exact pc carries the hart that ran each sample as a label
# (docs/DESIGN.md, exports): the same stack run on two harts is two samples.
#
# Ground truth, none of it from oobprof: the records of each hart among the
# first N of the trace, counted by tests/tools/oobt-decode.py --harts (a
# decoder of its own, from docs/formats/OOBT.md). The two-hart Linux boot
# (tests/gen/linux/smp2, as test_full_qemu.sh runs it) is cut with
# --max-insns (a whole boot is 1.9 G records: too many for a Python decoder);
# the cut falls on a batch end, so N is the profile's own total, and the
# truth says how those N split between the harts.
#
# Also: the per-hart samples add up to the per-context profile's (`export
# --to pprof` without --pcs: one sample per calling context, from the
# calling-context tree rather than the per-pc rows), every sample type's flat
# weight per function; `go tool pprof -tags` shows the same per-hart totals;
# a single-hart trace labels every sample hart 0.
#
# The per-context form has the same labels (split per hart by a replay of
# the stack events): its instructions per hart label = the truth too, its
# calls per hart = the per-pc form's, its instructions per comm and per pid
# label = the process table's (`oobprof processes --json`: counted per
# task, not from the tree), and no sample's stack (`go tool pprof -traces`)
# holds a process pseudo-frame ("comm pid").
set -u
T=test_export_pprof_harts
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
G=$OOB_BUILDDIR/tests/gen
S=$G/linux/smp2
CLI=$OOB_BUILDDIR/oobprof
CHECK=$OOB_SRCDIR/tests/tools/export-check.py
N=${HARTS_MAX_INSNS:-40000000}
GO=${GO:-go}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
pass() { echo "PASS: $T: $*"; }
fail() {
	echo "FAIL: $T: $*"
	fails=$((fails + 1))
}

if [ ! -s "$S/boot.oobt" ] || [ ! -s "$S/vmlinux" ] || [ ! -e "$G/linux/init" ]; then
	echo "SKIP: $T: smp2: no $S/boot.oobt (gen-linux did not run)"
else
	set -- --elf "$S/vmlinux"
	for u in init calls sort syscalls signals waits; do
		set -- "$@" --elf "$G/linux/$u"
	done
	if "$CLI" export --to pprof --pcs --max-insns "$N" "$@" "$S/boot.oobt" -o "$tmp/pcs.pb.gz" \
		2>"$tmp/err" &&
		"$CLI" export --to pprof --max-insns "$N" "$@" "$S/boot.oobt" -o "$tmp/ctx.pb.gz" \
			2>>"$tmp/err"; then
		python3 "$CHECK" pprof-harts "$tmp/pcs.pb.gz" >"$tmp/harts.json" || fail "smp2: pprof-harts"
		# the profile's total, then the truth for that many records
		n=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(sum(v[0] for v in d["per_hart"].values()))' "$tmp/harts.json")
		python3 "$OOB_SRCDIR/tests/tools/oobt-decode.py" --harts "$n" "$S/boot.oobt" >"$tmp/truth" ||
			fail "smp2: oobt-decode.py --harts"
		if python3 - "$tmp/harts.json" "$tmp/truth" "$n" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
truth = dict(l.split() for l in open(sys.argv[2]))
got = dict((h, str(v[d["types"].index("instructions")])) for h, v in d["per_hart"].items())
ok = got == truth and len(truth) == 2 and d["unlabelled"] == 0 and d["split_stacks"] > 0
print("  %s records; per hart: pprof %s, oobt-decode.py %s; %d samples, %d without one "
      "hart label, %d stacks on both harts" % (sys.argv[3], sorted(got.items()),
      sorted(truth.items()), d["samples"], d["unlabelled"], d["split_stacks"]))
sys.exit(0 if ok else 1)
PY
			pass "smp2: instructions per hart label = the trace's records per hart"
		else
			fail "smp2: instructions per hart label (see above)"
		fi
		python3 "$CHECK" pprof-harts "$tmp/ctx.pb.gz" >"$tmp/ctx-harts.json" || fail "smp2: pprof-harts (per context)"
		if python3 - "$tmp/ctx-harts.json" "$tmp/truth" "$tmp/harts.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
truth = dict(l.split() for l in open(sys.argv[2]))
pcs = json.load(open(sys.argv[3]))
k = d["types"].index("instructions")
got = dict((h, str(v[k])) for h, v in d["per_hart"].items())
kc, kp = d["types"].index("calls"), pcs["types"].index("calls")
calls = dict((h, v[kc]) for h, v in d["per_hart"].items())
want_calls = dict((h, v[kp]) for h, v in pcs["per_hart"].items())
ok = got == truth and calls == want_calls and d["unlabelled"] == 0 and d["split_stacks"] > 0
print("  per context: instructions per hart %s (truth %s), calls %s (per pc: %s); %d samples, "
      "%d unlabelled, %d stacks on both harts" % (sorted(got.items()), sorted(truth.items()),
      sorted(calls.items()), sorted(want_calls.items()), d["samples"], d["unlabelled"], d["split_stacks"]))
sys.exit(0 if ok else 1)
PY
			pass "smp2: per-context pprof: instructions per hart label = the trace's, calls = the per-pc form's"
		else
			fail "smp2: per-context pprof: per hart labels (see above)"
		fi
		if python3 "$CHECK" pprof-flat-same "$tmp/pcs.pb.gz" "$tmp/ctx.pb.gz" >"$tmp/out" 2>&1; then
			pass "smp2: harts summed = the per-context profile ($(tail -1 "$tmp/out"))"
		else
			fail "smp2: harts summed != the per-context profile: $(tail -5 "$tmp/out")"
		fi
		if command -v "$GO" >/dev/null; then
			for form in pcs ctx; do
			for m in instructions calls; do
				"$GO" tool pprof -tags -sample_index=$m "$tmp/$form.pb.gz" >"$tmp/tags" 2>"$tmp/err"
				# " hart: Total X" then "  V (P%): H" lines
				got=$(awk '/^ hart:/ { on = 1; next } on && NF == 0 { on = 0 }
					on { n = $1; sub(/\.0$/, "", n); h = $NF; print h, n }' "$tmp/tags" | sort)
				want=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); k = d["types"].index(sys.argv[2])
for h in sorted(d["per_hart"]): print(h, d["per_hart"][h][k])' "$tmp/harts.json" "$m")
				if [ -n "$got" ] && [ "$got" = "$want" ]; then
					pass "smp2: go tool pprof -tags ($form): $m per hart ($(echo $got))"
				else
					fail "smp2: go tool pprof -tags ($form): $m per hart: '$got', want '$want'"
				fi
			done
			done
			"$CLI" processes --json --max-insns "$N" "$@" "$S/boot.oobt" >"$tmp/procs.json" 2>/dev/null ||
				fail "smp2: oobprof processes"
			"$GO" tool pprof -tags -sample_index=instructions "$tmp/ctx.pb.gz" >"$tmp/tags" 2>"$tmp/err"
			"$GO" tool pprof -traces "$tmp/ctx.pb.gz" >"$tmp/traces" 2>>"$tmp/err"
			if python3 - "$tmp/tags" "$tmp/procs.json" "$tmp/traces" <<'PY'; then
import json, re, sys
# "  comm: Total X" / " pid: Total X" sections of "V (P%): LABEL" lines
got, key = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\w+): Total", line)
    if m:
        key = m.group(1)
        continue
    m = re.match(r"\s*([\d.]+) \(\s*[\d.]+%\): (.*)$", line)
    if m and key:
        got.setdefault(key, {})[m.group(2)] = int(float(m.group(1)))
want = {"comm": {}, "pid": {}}
frames = set()
for p in json.load(open(sys.argv[2]))["processes"]:
    n = p["instructions"]["user"] + p["instructions"]["kernel"]
    want["comm"][p["comm"]] = want["comm"].get(p["comm"], 0) + n
    if p["pid"] >= 0:
        want["pid"][str(p["pid"])] = want["pid"].get(str(p["pid"]), 0) + n
        frames.add("%s %d" % (p["comm"], p["pid"]))
drop = lambda d: dict((k, v) for k, v in d.items() if v)
# a stack's lines: "  VALUE   LEAF", then "       CALLER" (labels "  key:  v" apart)
stacks = set(m.group(1) for l in open(sys.argv[3]) if not re.match(r"\s*\w+:", l)
             for m in [re.match(r"\s+(?:\d+\s{2,})?(\S.*\S|\S)\s*$", l)] if m)
pseudo = sorted(frames & stacks)
ok = drop(got.get("comm", {})) == drop(want["comm"]) and drop(got.get("pid", {})) == drop(want["pid"]) and not pseudo
print("  comm: %d labels, pid: %d labels (processes: %d, %d); pseudo-frames in stacks: %s" % (
    len(got.get("comm", {})), len(got.get("pid", {})), len(drop(want["comm"])), len(drop(want["pid"])), pseudo[:3]))
if not ok:
    for k in ("comm", "pid"):
        for n in sorted(set(got.get(k, {})) | set(want[k])):
            if got.get(k, {}).get(n, 0) != want[k].get(n, 0):
                print("    %s %s: pprof %s, processes %s" % (k, n, got.get(k, {}).get(n), want[k].get(n)))
sys.exit(0 if ok else 1)
PY
				pass "smp2: per-context pprof: instructions per comm and pid label = the process table's, no process frames"
			else
				fail "smp2: per-context pprof: comm/pid labels (see above)"
			fi
		else
			echo "SKIP: $T: smp2: go tool pprof -tags: no go"
		fi
	else
		fail "smp2: export failed: $(head -c 300 "$tmp/err")"
	fi
fi

# One hart: every sample is hart 0's; its instructions are all the trace's.
P=$G/progs/recursion
if [ -s "$P.oobt" ]; then
	"$CLI" export --to pprof --pcs --elf "$P" "$P.oobt" -o "$tmp/one.pb.gz" 2>"$tmp/err" ||
		fail "one hart: export failed: $(head -c 300 "$tmp/err")"
	python3 "$CHECK" pprof-harts "$tmp/one.pb.gz" >"$tmp/one.json" &&
		python3 "$OOB_SRCDIR/tests/tools/oobt-decode.py" --harts 1000000000 "$P.oobt" >"$tmp/one.truth"
	if python3 - "$tmp/one.json" "$tmp/one.truth" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
truth = [l.split() for l in open(sys.argv[2])]
ok = list(d["per_hart"]) == ["0"] and d["unlabelled"] == 0 and \
    truth == [["0", str(d["per_hart"]["0"][0])]]
print("  %d samples, harts %s, truth %s" % (d["samples"], list(d["per_hart"]), truth))
sys.exit(0 if ok else 1)
PY
		pass "one hart: every sample labelled hart 0"
	else
		fail "one hart: labels (see above)"
	fi
else
	echo "SKIP: $T: one hart: no $P.oobt"
fi
[ "$fails" -eq 0 ]
