#!/bin/sh
# test_server_pg.sh: server tests written for the SQLite catalog run again,
# unchanged, on the PostgreSQL backend: a cluster of the test's own
# (tests/tools/pg-cluster.sh) and OOB_PG_SOCK, with which server-lib.sh's
# srv_start gives every data folder a database of its own (--catalog). Their
# lines are named "<test>[postgresql]". The tests that read catalog.db
# themselves (crash, delete, events, isolation) stay SQLite-only: their
# catalog assertions are covered on both backends by test_catalog.
set -u
T=test_server_pg
. "$OOB_SRCDIR/tests/tools/server-lib.sh"
begin_test server_pg inputs || exit 0
command -v psql >/dev/null 2>&1 || {
	skip all "psql not installed (apt-get install postgresql)"
	exit 0
}
PG=$(mktemp -d /tmp/oobprof-pg.XXXXXX)
chmod 711 "$PG"
OOB_PG_SOCK=$(sh "$OOB_SRCDIR/tests/tools/pg-cluster.sh" start "$PG/c" 2>"$W/pg.err")
rc=$?
trap 'sh "$OOB_SRCDIR/tests/tools/pg-cluster.sh" stop "$PG/c"; rm -rf "$PG"' EXIT
if [ $rc -eq 77 ]; then
	skip all "$(cat "$W/pg.err")"
	exit 0
elif [ $rc -ne 0 ]; then
	fail postgresql "cluster did not start: $(tail -n 3 "$W/pg.err")"
	exit 0
fi
OOB_TEST_SUFFIX=-pg
export OOB_PG_SOCK OOB_TEST_SUFFIX
for t in api stream bad timeline; do
	f=$OOB_SRCDIR/tests/integration/test_server_$t.sh
	[ -f "$f" ] || continue
	sh "$f" 2>"$W/$t.err" | sed 's/^\(PASS\|FAIL\|SKIP\): \([A-Za-z0-9_]*\): /\1: \2[postgresql]: /'
done
# The servers above really used PostgreSQL: their databases hold their rows.
n=$(psql -X -tA "postgresql:///postgres?host=$OOB_PG_SOCK&user=oob" \
	-c "SELECT COUNT(*) FROM pg_database WHERE datname LIKE 'oob\_%'")
[ "${n:-0}" -ge 4 ] && pass "the servers' catalogs were PostgreSQL databases ($n)" ||
	fail "catalogs in PostgreSQL" "$n databases"
