# server-lib.sh: shared by tests/integration/test_server_*.sh (sourced, POSIX
# sh). Starts the real oobprofd on 127.0.0.1 with a kernel-chosen port
# (--listen 127.0.0.1:0 --port-file) and a data folder of the test's own,
# and provides small helpers. The caller sets T (the test's name) first.
: "${OOB_SRCDIR:?}" "${OOB_BUILDDIR:?}"
OOBPROFD=${OOBPROFD:-$OOB_BUILDDIR/oobprofd}
GEN=$OOB_BUILDDIR/tests/gen
SHARED=${OOB_SHARED:-$OOB_SRCDIR/../shared}
SRV_PID=
SRV_URL=

pass() { echo "PASS: $T: $1"; }
fail() { echo "FAIL: $T: $1: $2"; }
skip() { echo "SKIP: $T: $1: $2"; }

# srv_catalog DATA_DIR: with OOB_PG_SOCK set (test_server_pg.sh), the
# --catalog flag of a PostgreSQL database of that data folder's own on the
# cluster at that socket (made empty when the folder is new, kept across
# restarts on the same folder); nothing otherwise (SQLite in the folder).
srv_catalog() {
	[ -n "${OOB_PG_SOCK:-}" ] || return 0
	_db=oob_$(printf %s "$1" | cksum | cut -d' ' -f1)
	if [ ! -d "$1" ]; then
		psql -X -q "postgresql:///postgres?host=$OOB_PG_SOCK&user=oob" \
			-c "DROP DATABASE IF EXISTS $_db" -c "CREATE DATABASE $_db" >/dev/null 2>&1
	fi
	echo "--catalog=postgresql:///$_db?host=$OOB_PG_SOCK&user=oob"
}

# srv_start DATA_DIR [flags...]: starts the server, sets SRV_PID and SRV_URL.
# Returns 1 (after printing why) if it does not come up within 20 s.
srv_start() {
	_d=$1
	shift
	_cat=$(srv_catalog "$_d")
	mkdir -p "$_d"
	rm -f "$_d.port"
	"$OOBPROFD" --listen 127.0.0.1:0 --port-file "$_d.port" --data "$_d" --log-level info \
		${_cat:+"$_cat"} "$@" >>"$_d.log" 2>&1 &
	SRV_PID=$!
	_i=0
	while [ ! -s "$_d.port" ]; do
		_i=$((_i + 1))
		if [ $_i -gt 200 ] || ! kill -0 "$SRV_PID" 2>/dev/null; then
			echo "server did not start: $(tail -n 3 "$_d.log")" >&2
			return 1
		fi
		sleep 0.1
	done
	SRV_URL="http://127.0.0.1:$(cat "$_d.port")"
	return 0
}

# srv_stop: SIGTERM and wait; returns the server's exit status (sanitizer
# reports, leaks included, make it non-zero).
srv_stop() {
	[ -n "$SRV_PID" ] || return 0
	kill -TERM "$SRV_PID" 2>/dev/null
	wait "$SRV_PID"
	_rc=$?
	SRV_PID=
	return $_rc
}

# srv_kill9: the crash.
srv_kill9() {
	[ -n "$SRV_PID" ] || return 0
	kill -KILL "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
}

# jq_py FILE EXPR: evaluates a Python expression over the JSON in FILE (as j).
jq_py() {
	python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)' "$1" "$2"
}

# http METHOD URL OUTFILE [curl args...]: prints the status code.
http() {
	_m=$1 _u=$2 _o=$3
	shift 3
	curl -s -o "$_o" -w '%{http_code}' -X "$_m" "$@" "$_u"
}

# job_of FILE: uploads FILE as a trace and starts a job on it; prints its id.
job_of() {
	curl -s --data-binary "@$1" "$SRV_URL/api/v1/traces?name=$(basename "$1")" >"$W/tr.json"
	curl -s -d "{\"trace\": $(jq_py "$W/tr.json" 'j["id"]')}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
	jq_py "$W/job0.json" 'j["id"]'
}

# wait_job ID [seconds]: waits until the job leaves queued/running; prints
# its final state.
wait_job() {
	_n=0
	_max=$((${2:-120} * 10))
	while :; do
		curl -s "$SRV_URL/api/v1/jobs/$1" >"$W/job.json"
		_s=$(jq_py "$W/job.json" 'j.get("state")')
		case $_s in
		queued | running) ;;
		*)
			echo "$_s"
			return 0
			;;
		esac
		_n=$((_n + 1))
		[ $_n -gt $_max ] && {
			echo "timeout($_s)"
			return 1
		}
		sleep 0.1
	done
}

# stream_held FILE BYTES FLAG NAME: uploads FILE as a stream named NAME
# (?stream=1, curl reading a pipe): its first BYTES, then the rest once the
# test creates FLAG (at most 60 s later), so that what the test checks while
# the stream is open happens while it is open, however loaded the machine.
# The response goes to stdout.
stream_held() {
	rm -f "$3"
	{
		head -c "$2" "$1"
		_i=0
		while [ ! -e "$3" ] && [ $_i -lt 600 ]; do
			sleep 0.1
			_i=$((_i + 1))
		done
		tail -c +"$(($2 + 1))" "$1"
	} | curl -s -T - "$SRV_URL/api/v1/traces?name=$4&stream=1"
}

# spike_system_job: the Spike full-system run ($GEN/readers/spike.log with
# vmlinux, /init and /prog) as a job of the running server: sets LOG, S (the
# Spike fixtures), BINS (the binaries' ids, comma-separated), TR (the
# trace's id) and JOB (done). Returns 1 after a SKIP line (an input is
# missing) or a FAIL line (the job did not finish).
spike_system_job() {
	LOG=$GEN/readers/spike.log
	S=$SHARED/fixtures/spike
	for _f in "$LOG" "$GEN/vmlinux" "$S/init" "$S/prog"; do
		[ -e "$_f" ] || { skip all "missing $_f"; return 1; }
	done
	BINS=
	for _b in "$GEN/vmlinux" "$S/init" "$S/prog"; do
		curl -s -T "$_b" "$SRV_URL/api/v1/binaries?name=$(basename "$_b")" >"$W/bin.json"
		BINS="$BINS${BINS:+, }$(jq_py "$W/bin.json" 'j["id"]')"
	done
	curl -s -T "$LOG" "$SRV_URL/api/v1/traces?name=spike" >"$W/trace.json"
	TR=$(jq_py "$W/trace.json" 'j["id"]')
	curl -s -d "{\"trace\": $TR, \"binaries\": [$BINS]}" "$SRV_URL/api/v1/jobs" >"$W/job0.json"
	JOB=$(jq_py "$W/job0.json" 'j["id"]')
	_s=$(wait_job "$JOB" 600)
	[ "$_s" = done ] || { fail job "state $_s"; return 1; }
}

# pick_inputs: sets TRACE and ELF (and ELF2, maybe empty) to a real trace and
# its binary: a generated program (tests/gen/progs/mixed) when present, else
# the first 250,000 lines of the Spike fixture with /init. Returns 1 if none.
pick_inputs() {
	ELF2=
	if [ -s "$GEN/progs/mixed.oobt" ] && [ -s "$GEN/progs/mixed" ]; then
		TRACE=$GEN/progs/mixed.oobt
		ELF=$GEN/progs/mixed
		INPUTS=mixed
		return 0
	fi
	if [ -s "$SHARED/fixtures/spike/linux-init.commits.log.xz" ]; then
		TRACE=$W/spike250k.log
		[ -s "$TRACE" ] || xz -dc "$SHARED/fixtures/spike/linux-init.commits.log.xz" |
			head -n 250000 >"$TRACE"
		ELF=$SHARED/fixtures/spike/init
		INPUTS=spike
		return 0
	fi
	return 1
}

# begin_test NAME [inputs]: the work folder $W (emptied), and a SKIP line and
# status 1 when oobprofd is not built or (with "inputs") no real trace exists.
begin_test() {
	# OOB_TEST_SUFFIX: a second run of the same test (test_server_pg.sh)
	# works in a folder of its own, beside the first.
	W=$OOB_BUILDDIR/tests/out/$1${OOB_TEST_SUFFIX:-}
	rm -rf "$W"
	mkdir -p "$W"
	if [ ! -x "$OOBPROFD" ]; then
		skip all "oobprofd not built"
		return 1
	fi
	if [ "${2:-}" = inputs ] && ! pick_inputs; then
		skip all "no real trace: neither tests/gen/progs nor the Spike fixture"
		return 1
	fi
}
