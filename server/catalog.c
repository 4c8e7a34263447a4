/*
 * catalog: opening the SQLite catalog, its migrations, the names of the
 * states, and the statement helpers (catalog_impl.h) that the tables'
 * files use: catalog_binaries.c, catalog_traces.c, catalog_jobs.c.
 */
#include "catalog_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int catalog_db_err(struct catalog *c, struct oob_err *err, const char *what)
{
	int rc = sqlite3_errcode(c->db);
	int code = rc == SQLITE_FULL ? -ENOSPC : -EIO;
	return oob_err_set(err, code, "catalog: %s: %s", what, sqlite3_errmsg(c->db));
}

int catalog_exec_sql(struct catalog *c, const char *sql, struct oob_err *err)
{
	char *msg = NULL;
	if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	int rc = oob_err_set(err, -EIO, "catalog: %s", msg ? msg : "exec failed");
	sqlite3_free(msg);
	return rc;
}

/* Prepares sql and binds "i" int64, "u" uint64 (as its bit pattern), "s"
 * text, "n" NULL-or-int64 (0 = NULL), in the order of the placeholders. */
sqlite3_stmt *catalog_prep(struct catalog *c, struct oob_err *err, const char *sql,
			   const char *types, ...)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
		catalog_db_err(c, err, "prepare");
		return NULL;
	}
	va_list ap;
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		int k = i + 1, rc;
		if (types[i] == 's') {
			rc = sqlite3_bind_text(st, k, va_arg(ap, const char *), -1,
					       SQLITE_TRANSIENT);
		} else if (types[i] == 'u') {
			rc = sqlite3_bind_int64(st, k, (sqlite3_int64)va_arg(ap, uint64_t));
		} else {
			int64_t v = va_arg(ap, int64_t);
			rc = (types[i] == 'n' && v == 0) ? sqlite3_bind_null(st, k)
							 : sqlite3_bind_int64(st, k, v);
		}
		if (rc != SQLITE_OK) {
			catalog_db_err(c, err, "bind");
			sqlite3_finalize(st);
			st = NULL;
			break;
		}
	}
	va_end(ap);
	return st;
}

/* Steps a statement that returns no rows and finalizes it. */
int catalog_run(struct catalog *c, sqlite3_stmt *st, struct oob_err *err)
{
	if (!st)
		return err ? err->code : -EIO;
	int rc = sqlite3_step(st);
	int ret = 0;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		int x = sqlite3_extended_errcode(c->db);
		if (x == SQLITE_CONSTRAINT_FOREIGNKEY)
			ret = oob_err_set(err, -ENOENT, "catalog: unknown id (%s)",
					  sqlite3_errmsg(c->db));
		else if ((x & 0xff) == SQLITE_CONSTRAINT)
			ret = oob_err_set(err, -EINVAL, "catalog: %s", sqlite3_errmsg(c->db));
		else
			ret = catalog_db_err(c, err, "write");
	}
	sqlite3_finalize(st);
	return ret;
}

void catalog_col_text(sqlite3_stmt *st, int i, char *dst, size_t n)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

int64_t catalog_now_s(void)
{
	return (int64_t)time(NULL);
}

/* Runs a query expected to return one row, read by fn; -ENOENT if none. */
int catalog_get_one(struct catalog *c, sqlite3_stmt *st, void (*fn)(sqlite3_stmt *, void *),
		    void *out, const char *what, int64_t id, struct oob_err *err)
{
	if (!st)
		return err ? err->code : -EIO;
	int rc = sqlite3_step(st), ret = 0;
	if (rc == SQLITE_ROW)
		fn(st, out);
	else if (rc == SQLITE_DONE)
		ret = oob_err_set(err, -ENOENT, "no %s with id %lld", what, (long long)id);
	else
		ret = catalog_db_err(c, err, "read");
	sqlite3_finalize(st);
	return ret;
}

/* Collects the rows of st into a malloc'd array of elem-byte structs. */
int catalog_list_rows(struct catalog *c, sqlite3_stmt *st, size_t elem,
		      void (*fn)(sqlite3_stmt *, void *), void **out, size_t *n,
		      struct oob_err *err)
{
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (!st)
		return err ? err->code : -EIO;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		oob_xgrow(out, &cap, *n + 1, elem);
		fn(st, (char *)*out + *n * elem);
		(*n)++;
	}
	int ret = 0;
	if (rc != SQLITE_DONE) {
		ret = catalog_db_err(c, err, "list");
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(st);
	return ret;
}

static int migrate(struct catalog *c, struct oob_err *err)
{
	int v = catalog_schema_version(c);
	if (v > (int)NMIGRATIONS)
		return oob_err_set(err, -ENOTSUP,
				   "catalog: schema version %d is newer than this oobprofd (%d)", v,
				   (int)NMIGRATIONS);
	for (; v < (int)NMIGRATIONS; v++) {
		char bump[64];
		snprintf(bump, sizeof(bump), "PRAGMA user_version = %d;", v + 1);
		int rc = catalog_exec_sql(c, "BEGIN IMMEDIATE", err);
		if (rc == 0)
			rc = catalog_exec_sql(c, migrations[v], err);
		if (rc == 0)
			rc = catalog_exec_sql(c, bump, err);
		if (rc == 0)
			rc = catalog_exec_sql(c, "COMMIT", err);
		if (rc < 0) {
			catalog_exec_sql(c, "ROLLBACK", NULL);
			return oob_err_prefix(err, "migration to schema %d", v + 1);
		}
		OOB_INFO("catalog: migrated to schema version %d", v + 1);
	}
	return 0;
}

struct catalog *catalog_open(const char *path, struct oob_err *err)
{
	struct catalog *c = oob_xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
	if (sqlite3_open_v2(path, &c->db, flags, NULL) != SQLITE_OK) {
		oob_err_set(err, -EIO, "catalog %s: %s", path,
			    c->db ? sqlite3_errmsg(c->db) : "cannot open");
		goto fail;
	}
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, 5000);
	/* WAL: readers never block the writer; synchronous=FULL: a committed row
	 * survives power loss, which is what "registered" promises. */
	if (catalog_exec_sql(c,
			     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
			     " PRAGMA foreign_keys=ON;",
			     err) < 0 ||
	    migrate(c, err) < 0) {
		oob_err_prefix(err, "%s", path);
		goto fail;
	}
	return c;
fail:
	catalog_close(c);
	return NULL;
}

void catalog_close(struct catalog *c)
{
	if (!c)
		return;
	sqlite3_close(c->db);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int catalog_schema_version(struct catalog *c)
{
	sqlite3_stmt *st = NULL;
	int v = -1;
	if (sqlite3_prepare_v2(c->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return v;
}
