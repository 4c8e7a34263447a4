#!/bin/sh
# Prepares Debian's PostgreSQL (postgresql@15-main.service, from the
# "postgresql" package) for oobprofd nodes: a role and a database named
# oobprof, owned by that role. oobprofd creates and migrates its tables
# itself at the first node's start. Idempotent. Run as root on the
# database machine:
#   sh deploy/pg-setup.sh            # peer auth over the Unix socket
#   sh deploy/pg-setup.sh PASSWORD   # and a password for remote nodes
# For remote nodes, also allow them in pg_hba.conf, e.g.
#   hostssl oobprof oobprof 10.0.0.0/16 scram-sha-256
# and set listen_addresses in postgresql.conf; then reload postgresql.
set -eu
systemctl enable --now postgresql >/dev/null
as_pg() { runuser -u postgres -- "$@"; }
as_pg psql -X -tA -c "SELECT 1 FROM pg_roles WHERE rolname = 'oobprof'" | grep -q 1 ||
	as_pg createuser oobprof
as_pg psql -X -tA -c "SELECT 1 FROM pg_database WHERE datname = 'oobprof'" | grep -q 1 ||
	as_pg createdb -O oobprof oobprof
if [ $# -ge 1 ]; then
	printf "ALTER ROLE oobprof PASSWORD '%s'\n" "$(printf %s "$1" | sed "s/'/''/g")" |
		as_pg psql -X -q
fi
echo "pg-setup: database oobprof ready (owner oobprof)"
