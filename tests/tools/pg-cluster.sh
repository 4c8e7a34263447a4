#!/bin/sh
# A throw-away PostgreSQL cluster for tests: on a Unix socket in DIR/sock
# only (no TCP port to collide with a parallel test), fsync off (a test's
# data need not survive a power cut), superuser "oob" with trust auth.
#
#   pg-cluster.sh start DIR   initdb + start; prints the socket folder
#   pg-cluster.sh stop DIR    stop (immediate) and remove DIR
#
# initdb refuses to run as root: as root the cluster belongs to the user
# "postgres" (Debian's package creates it) or else "nobody". Exit 77 (the
# automake SKIP code) when the PostgreSQL server programs are missing.
set -eu
cmd=${1:?start or stop}
dir=${2:?folder}
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bindir" ] && [ -x "$bindir/initdb" ] || {
	echo "pg-cluster: PostgreSQL server not installed (apt-get install postgresql)" >&2
	exit 77
}
as=""
if [ "$(id -u)" -eq 0 ]; then
	owner=postgres
	id postgres >/dev/null 2>&1 || owner=nobody
	as="runuser -u $owner --"
fi
case $cmd in
start)
	mkdir -p "$dir/sock"
	[ -z "$as" ] || chown -R "$owner" "$dir"
	$as test -w "$dir" || {
		echo "pg-cluster: $owner cannot write $dir (a parent folder is private?)" >&2
		exit 1
	}
	$as "$bindir/initdb" -D "$dir/data" -U oob -A trust --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 || {
		cat "$dir/initdb.log" >&2
		exit 1
	}
	$as "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
		-o "-k $dir/sock -c listen_addresses= -c fsync=off -c max_connections=200" \
		start >/dev/null || {
		cat "$dir/server.log" >&2
		exit 1
	}
	echo "$dir/sock"
	;;
stop)
	[ -d "$dir/data" ] && $as "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
	rm -rf "$dir"
	;;
*)
	echo "pg-cluster: unknown command $cmd" >&2
	exit 2
	;;
esac
