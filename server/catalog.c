/*
 * catalog: opening the catalog (SQLite or PostgreSQL, catalog_db.c), its
 * migrations (one numbered list for both backends) and the names of the
 * states. The tables' files: catalog_binaries.c, catalog_traces.c,
 * catalog_jobs.c, catalog_inputs.c.
 */
#include "catalog_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

/* Migration i takes the schema from version i to i + 1. Append, never edit:
 * a database in the field has run the earlier ones. */
static const char *const migrations[] = {
    "CREATE TABLE binaries("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
    " sha256 TEXT NOT NULL, blob TEXT NOT NULL, size INTEGER NOT NULL,"
    " build_id TEXT NOT NULL, machine INTEGER NOT NULL, nfuncs INTEGER NOT NULL,"
    " has_dwarf INTEGER NOT NULL, pie INTEGER NOT NULL, created INTEGER NOT NULL);"
    "CREATE INDEX binaries_sha256 ON binaries(sha256);"
    "CREATE TABLE traces("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL,"
    " sha256 TEXT NOT NULL DEFAULT '', blob TEXT NOT NULL, size INTEGER NOT NULL,"
    " format TEXT NOT NULL, description TEXT NOT NULL, lz4 INTEGER NOT NULL,"
    " records INTEGER NOT NULL DEFAULT 0,"
    " state TEXT NOT NULL CHECK (state IN ('ready','streaming','incomplete','invalid')),"
    " error TEXT NOT NULL DEFAULT '', created INTEGER NOT NULL);"
    "CREATE INDEX traces_sha256 ON traces(sha256);"
    "CREATE INDEX traces_name ON traces(name);"
    "CREATE TABLE jobs("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " trace_id INTEGER NOT NULL REFERENCES traces(id),"
    " events_id INTEGER REFERENCES traces(id), spec TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN"
    "  ('queued','running','done','failed','cancelled')),"
    " error_code INTEGER NOT NULL DEFAULT 0, error TEXT NOT NULL DEFAULT '',"
    " bytes INTEGER NOT NULL DEFAULT 0, total_bytes INTEGER NOT NULL DEFAULT 0,"
    " insns INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL,"
    " started INTEGER NOT NULL DEFAULT 0, finished INTEGER NOT NULL DEFAULT 0,"
    " runs INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX jobs_state ON jobs(state);"
    /* base: a uint64 run-time address stored as its int64 bit pattern. */
    "CREATE TABLE job_binaries("
    " job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,"
    " pos INTEGER NOT NULL, binary_id INTEGER NOT NULL REFERENCES binaries(id),"
    " base INTEGER NOT NULL, PRIMARY KEY (job_id, pos));"
    "CREATE TABLE results("
    " job_id INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,"
    " profile TEXT NOT NULL, folded TEXT NOT NULL, partial INTEGER NOT NULL,"
    " stats TEXT NOT NULL, created INTEGER NOT NULL);",
    /* crashes: processes that died while the job ran (its worker, or the
     * whole server); at two the job fails instead of running again. */
    "ALTER TABLE jobs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;",
    /* events: the stack-event log the job wrote beside its profile ('' for
     * results of older versions and snapshots of a stream). One migration
     * of two statements: the parentheses tell clang the joined literals
     * are meant. */
    ("ALTER TABLE results ADD COLUMN events TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE results ADD COLUMN events_bytes INTEGER NOT NULL DEFAULT 0;"),
    /* Several nodes on one catalog: the node that holds a job (claimed or
     * running) until its lease expires, unix seconds; a cancel asked at
     * another node; the node a stream is uploaded to (its connection
     * lives there). */
    ("ALTER TABLE jobs ADD COLUMN lease_node TEXT NOT NULL DEFAULT '';"
     "ALTER TABLE jobs ADD COLUMN lease_expires INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE jobs ADD COLUMN cancel INTEGER NOT NULL DEFAULT 0;"
     "ALTER TABLE traces ADD COLUMN node TEXT NOT NULL DEFAULT '';"),
};

#define NMIGRATIONS (sizeof(migrations) / sizeof(migrations[0]))

_Static_assert(NMIGRATIONS == CATALOG_SCHEMA_VERSION, "one migration per schema version");

/* The names of the states, as the CHECK constraints above spell them: the
 * one place an enum becomes text (the rows, the API). */
static const char *const trace_states[] = {
    [CATALOG_TRACE_READY] = "ready",
    [CATALOG_TRACE_STREAMING] = "streaming",
    [CATALOG_TRACE_INCOMPLETE] = "incomplete",
    [CATALOG_TRACE_INVALID] = "invalid",
};
static const char *const job_states[] = {
    [CATALOG_JOB_QUEUED] = "queued",	   [CATALOG_JOB_RUNNING] = "running",
    [CATALOG_JOB_DONE] = "done",	   [CATALOG_JOB_FAILED] = "failed",
    [CATALOG_JOB_CANCELLED] = "cancelled",
};

#define NTRACE_STATES (sizeof(trace_states) / sizeof(trace_states[0]))
#define NJOB_STATES   (sizeof(job_states) / sizeof(job_states[0]))

_Static_assert(NTRACE_STATES == CATALOG_TRACE_INVALID + 1, "a name for every trace state");
_Static_assert(NJOB_STATES == CATALOG_JOB_CANCELLED + 1, "a name for every job state");

const char *catalog_trace_state_name(enum catalog_trace_state s)
{
	return (unsigned)s < NTRACE_STATES ? trace_states[s] : NULL;
}

const char *catalog_job_state_name(enum catalog_job_state s)
{
	return (unsigned)s < NJOB_STATES ? job_states[s] : NULL;
}

/* The index of name in names[n], or -1. */
static int state_index(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (!strcmp(names[i], name))
			return (int)i;
	return -1;
}

int catalog_trace_state_parse(const char *name, enum catalog_trace_state *out)
{
	int i = state_index(trace_states, NTRACE_STATES, name);
	if (i < 0)
		return -EINVAL;
	*out = (enum catalog_trace_state)i;
	return 0;
}

int catalog_job_state_parse(const char *name, enum catalog_job_state *out)
{
	int i = state_index(job_states, NJOB_STATES, name);
	if (i < 0)
		return -EINVAL;
	*out = (enum catalog_job_state)i;
	return 0;
}

static int schema_version_locked(struct catalog *c);

/* A migration in PostgreSQL's words: its identity columns and 64-bit
 * integers (SQLite's INTEGER is 64-bit already). */
static char *pg_migration(const char *sql)
{
	static const char *const from[] = {"INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER"};
	static const char *const to[] = {"BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
					 "BIGINT"};
	char *out = oob_xmalloc(3 * strlen(sql) + 1), *o = out;
	for (const char *p = sql; *p;) {
		size_t i = 0;
		while (i < 2 && strncmp(p, from[i], strlen(from[i])))
			i++;
		if (i < 2) {
			o += sprintf(o, "%s", to[i]);
			p += strlen(from[i]);
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}

/* Sets the schema version inside the migration's transaction. */
static int set_version(struct catalog *c, int v, struct oob_err *err)
{
	char sql[96];
	if (c->pg)
		snprintf(sql, sizeof(sql), "UPDATE oob_schema SET version = %d", v);
	else
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d;", v);
	return catalog_exec_sql(c, sql, err);
}

/* Runs migration v (to v + 1) in one transaction. */
static int migrate_one(struct catalog *c, int v, struct oob_err *err)
{
	int rc = catalog_begin(c, err);
	char *sql = c->pg ? pg_migration(migrations[v]) : (char *)migrations[v];
	if (rc == 0)
		rc = catalog_exec_sql(c, sql, err);
	if (c->pg)
		free(sql);
	if (rc == 0)
		rc = set_version(c, v + 1, err);
	if (rc == 0)
		rc = catalog_exec_sql(c, "COMMIT", err);
	if (rc < 0) {
		catalog_exec_sql(c, "ROLLBACK", NULL);
		return oob_err_prefix(err, "migration to schema %d", v + 1);
	}
	OOB_INFO("catalog: migrated to schema version %d", v + 1);
	return 0;
}

static int migrate_locked(struct catalog *c, struct oob_err *err)
{
	/* PostgreSQL keeps the version in a table of one row (SQLite: user_version). */
	if (c->pg &&
	    catalog_exec_sql(c,
			     "CREATE TABLE IF NOT EXISTS oob_schema (version INTEGER NOT NULL);"
			     " INSERT INTO oob_schema SELECT 0"
			     " WHERE NOT EXISTS (SELECT 1 FROM oob_schema);",
			     err) < 0)
		return err ? err->code : -EIO;
	int v = schema_version_locked(c);
	if (v > (int)NMIGRATIONS)
		return oob_err_set(err, -ENOTSUP,
				   "catalog: schema version %d is newer than this oobprofd (%d)", v,
				   (int)NMIGRATIONS);
	if (v < 0)
		return catalog_db_err(c, err, "schema version");
	for (; v < (int)NMIGRATIONS; v++) {
		int rc = migrate_one(c, v, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* PostgreSQL: nodes that start together take turns (a session advisory
 * lock), so one migrates and the others find the work done. SQLite's
 * BEGIN IMMEDIATE serializes its writers already. */
static int migrate(struct catalog *c, struct oob_err *err)
{
	if (c->pg && catalog_exec_sql(c, "SELECT pg_advisory_lock(7303014)", err) < 0)
		return err ? err->code : -EIO;
	int rc = migrate_locked(c, err);
	if (c->pg)
		catalog_exec_sql(c, "SELECT pg_advisory_unlock(7303014)", NULL);
	return rc;
}

static int is_pg(const char *where)
{
	return !strncmp(where, "postgresql:", 11) || !strncmp(where, "postgres:", 9);
}

struct catalog *catalog_open(const char *where, struct oob_err *err)
{
	struct catalog *c = oob_xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	/* URIs go to libpq whole; "postgres:" or "postgresql:" before
	 * key=value pairs (the config file's short form) is dropped, and alone
	 * it leaves every parameter to libpq's environment (PGHOST...). */
	const char *conninfo = where;
	if (is_pg(where) && !strstr(where, "://"))
		conninfo = strchr(where, ':') + 1;
	int rc = is_pg(where) ? catalog_db_open_pg(c, conninfo, err)
			      : catalog_db_open_sqlite(c, where, err);
	if (rc < 0 || migrate(c, err) < 0) {
		if (c->where[0])
			oob_err_prefix(err, "%s", c->where);
		catalog_close(c);
		return NULL;
	}
	return c;
}

void catalog_close(struct catalog *c)
{
	if (!c)
		return;
	catalog_db_close(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

const char *catalog_where(const struct catalog *c)
{
	return c->where;
}

int catalog_is_shared(const struct catalog *c)
{
	return c->pg != NULL;
}

/* The version, the caller holding the lock (or opening the catalog). */
static int schema_version_locked(struct catalog *c)
{
	struct catalog_stmt *st = catalog_prep(
	    c, NULL, c->pg ? "SELECT version FROM oob_schema" : "PRAGMA user_version", "");
	int v = st && catalog_step(st) == 1 ? catalog_col_int(st, 0) : -1;
	catalog_finalize(st);
	return v;
}

/* Locked: /health asks from any HTTP thread, and a libpq connection serves
 * one statement at a time. */
int catalog_schema_version(struct catalog *c)
{
	pthread_mutex_lock(&c->lock);
	int v = schema_version_locked(c);
	pthread_mutex_unlock(&c->lock);
	return v;
}
