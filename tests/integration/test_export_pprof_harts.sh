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
		if python3 "$CHECK" pprof-flat-same "$tmp/pcs.pb.gz" "$tmp/ctx.pb.gz" >"$tmp/out" 2>&1; then
			pass "smp2: harts summed = the per-context profile ($(tail -1 "$tmp/out"))"
		else
			fail "smp2: harts summed != the per-context profile: $(tail -5 "$tmp/out")"
		fi
		if command -v "$GO" >/dev/null; then
			for m in instructions calls; do
				"$GO" tool pprof -tags -sample_index=$m "$tmp/pcs.pb.gz" >"$tmp/tags" 2>"$tmp/err"
				# " hart: Total X" then "  V (P%): H" lines
				got=$(awk '/^ hart:/ { on = 1; next } on && NF == 0 { on = 0 }
					on { n = $1; sub(/\.0$/, "", n); h = $NF; print h, n }' "$tmp/tags" | sort)
				want=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); k = d["types"].index(sys.argv[2])
for h in sorted(d["per_hart"]): print(h, d["per_hart"][h][k])' "$tmp/harts.json" "$m")
				if [ -n "$got" ] && [ "$got" = "$want" ]; then
					pass "smp2: go tool pprof -tags: $m per hart ($(echo $got))"
				else
					fail "smp2: go tool pprof -tags: $m per hart: '$got', want '$want'"
				fi
			done
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
