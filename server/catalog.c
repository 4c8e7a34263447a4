#include "catalog.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

struct catalog {
	sqlite3 *db;
	pthread_mutex_t lock;
};

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
     * results of older versions and snapshots of a stream). */
    "ALTER TABLE results ADD COLUMN events TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE results ADD COLUMN events_bytes INTEGER NOT NULL DEFAULT 0;",
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

static int db_err(struct catalog *c, struct oob_err *err, const char *what)
{
	int rc = sqlite3_errcode(c->db);
	int code = rc == SQLITE_FULL ? -ENOSPC : -EIO;
	return oob_err_set(err, code, "catalog: %s: %s", what, sqlite3_errmsg(c->db));
}

static int exec_sql(struct catalog *c, const char *sql, struct oob_err *err)
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
static sqlite3_stmt *prep(struct catalog *c, struct oob_err *err, const char *sql,
			  const char *types, ...)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_err(c, err, "prepare");
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
			db_err(c, err, "bind");
			sqlite3_finalize(st);
			st = NULL;
			break;
		}
	}
	va_end(ap);
	return st;
}

/* Steps a statement that returns no rows and finalizes it. */
static int run(struct catalog *c, sqlite3_stmt *st, struct oob_err *err)
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
			ret = db_err(c, err, "write");
	}
	sqlite3_finalize(st);
	return ret;
}

static void col_text(sqlite3_stmt *st, int i, char *dst, size_t n)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
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
		int rc = exec_sql(c, "BEGIN IMMEDIATE", err);
		if (rc == 0)
			rc = exec_sql(c, migrations[v], err);
		if (rc == 0)
			rc = exec_sql(c, bump, err);
		if (rc == 0)
			rc = exec_sql(c, "COMMIT", err);
		if (rc < 0) {
			exec_sql(c, "ROLLBACK", NULL);
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
	if (exec_sql(c,
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

/* ---- binaries ---- */

#define BIN_COLS "id, name, sha256, blob, size, build_id, machine, nfuncs, has_dwarf, pie, created"

static void read_binary(sqlite3_stmt *st, struct catalog_binary *b)
{
	memset(b, 0, sizeof(*b));
	b->id = sqlite3_column_int64(st, 0);
	col_text(st, 1, b->name, sizeof(b->name));
	col_text(st, 2, b->sha256, sizeof(b->sha256));
	col_text(st, 3, b->blob, sizeof(b->blob));
	b->size = (uint64_t)sqlite3_column_int64(st, 4);
	col_text(st, 5, b->build_id, sizeof(b->build_id));
	b->machine = (unsigned)sqlite3_column_int(st, 6);
	b->nfuncs = (uint64_t)sqlite3_column_int64(st, 7);
	b->has_dwarf = sqlite3_column_int(st, 8);
	b->pie = sqlite3_column_int(st, 9);
	b->created = sqlite3_column_int64(st, 10);
}

int catalog_binary_add(struct catalog *c, struct catalog_binary *b, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	b->created = now_s();
	sqlite3_stmt *st = prep(c, err,
				"INSERT INTO binaries (name, sha256, blob, size, build_id, machine,"
				" nfuncs, has_dwarf, pie, created) VALUES (?,?,?,?,?,?,?,?,?,?)",
				"sssusiiiii", b->name, b->sha256, b->blob, b->size, b->build_id,
				(int64_t)b->machine, (int64_t)b->nfuncs, (int64_t)b->has_dwarf,
				(int64_t)b->pie, b->created);
	int rc = run(c, st, err);
	if (rc == 0)
		b->id = sqlite3_last_insert_rowid(c->db);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Runs a query expected to return one row, read by fn; -ENOENT if none. */
static int get_one(struct catalog *c, sqlite3_stmt *st, void (*fn)(sqlite3_stmt *, void *),
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
		ret = db_err(c, err, "read");
	sqlite3_finalize(st);
	return ret;
}

static void read_binary_v(sqlite3_stmt *st, void *out)
{
	read_binary(st, out);
}

int catalog_binary_get(struct catalog *c, int64_t id, struct catalog_binary *out,
		       struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err, "SELECT " BIN_COLS " FROM binaries WHERE id = ?", "i", id);
	int rc = get_one(c, st, read_binary_v, out, "binary", id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_binary_find(struct catalog *c, const char *sha256, struct catalog_binary *out,
			struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err,
				"SELECT " BIN_COLS " FROM binaries WHERE sha256 = ?"
				" ORDER BY id LIMIT 1",
				"s", sha256);
	int rc = get_one(c, st, read_binary_v, out, "binary", 0, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* Collects the rows of st into a malloc'd array of elem-byte structs. */
static int list_rows(struct catalog *c, sqlite3_stmt *st, size_t elem,
		     void (*fn)(sqlite3_stmt *, void *), void **out, size_t *n, struct oob_err *err)
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
		ret = db_err(c, err, "list");
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(st);
	return ret;
}

int catalog_binary_list(struct catalog *c, int64_t after, size_t limit, struct catalog_binary **out,
			size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st =
	    prep(c, err, "SELECT " BIN_COLS " FROM binaries WHERE id > ? ORDER BY id LIMIT ?", "ii",
		 after, (int64_t)limit);
	int rc = list_rows(c, st, sizeof(**out), read_binary_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- traces ---- */

#define TRACE_COLS                                                                                 \
	"id, name, sha256, blob, size, format, description, lz4, state, error, created, records"

static void read_trace_v(sqlite3_stmt *st, void *out)
{
	struct catalog_trace *t = out;
	memset(t, 0, sizeof(*t));
	t->id = sqlite3_column_int64(st, 0);
	col_text(st, 1, t->name, sizeof(t->name));
	col_text(st, 2, t->sha256, sizeof(t->sha256));
	col_text(st, 3, t->blob, sizeof(t->blob));
	t->size = (uint64_t)sqlite3_column_int64(st, 4);
	col_text(st, 5, t->format, sizeof(t->format));
	col_text(st, 6, t->description, sizeof(t->description));
	t->lz4 = sqlite3_column_int(st, 7);
	t->state = CATALOG_TRACE_INVALID; /* no other text passes the CHECK constraint */
	catalog_trace_state_parse((const char *)sqlite3_column_text(st, 8), &t->state);
	col_text(st, 9, t->error, sizeof(t->error));
	t->created = sqlite3_column_int64(st, 10);
	t->records = (uint64_t)sqlite3_column_int64(st, 11);
}

int catalog_trace_add(struct catalog *c, struct catalog_trace *t, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	t->created = now_s();
	sqlite3_stmt *st = prep(
	    c, err,
	    "INSERT INTO traces (name, sha256, blob, size, format, description,"
	    " lz4, state, error, created, records) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	    "sssussissiu", t->name, t->sha256, t->blob, t->size, t->format, t->description,
	    (int64_t)t->lz4, catalog_trace_state_name(t->state), t->error, t->created, t->records);
	int rc = run(c, st, err);
	if (rc == 0)
		t->id = sqlite3_last_insert_rowid(c->db);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_get(struct catalog *c, int64_t id, struct catalog_trace *out, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err, "SELECT " TRACE_COLS " FROM traces WHERE id = ?", "i", id);
	int rc = get_one(c, st, read_trace_v, out, "trace", id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_find(struct catalog *c, const char *sha256, struct catalog_trace *out,
		       struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err,
				"SELECT " TRACE_COLS " FROM traces WHERE sha256 = ?"
				" AND state = 'ready' ORDER BY id LIMIT 1",
				"s", sha256);
	int rc = get_one(c, st, read_trace_v, out, "trace", 0, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_list(struct catalog *c, int64_t after, size_t limit, const char *name,
		       enum catalog_trace_state state, struct catalog_trace **out, size_t *n,
		       struct oob_err *err)
{
	const char *sname = state == CATALOG_TRACE_ANY ? "" : catalog_trace_state_name(state);
	if (!sname)
		return oob_err_set(err, -EINVAL, "catalog: no trace state %d", (int)state);
	pthread_mutex_lock(&c->lock);
	/* An empty filter matches everything: (? = '' OR col = ?). */
	sqlite3_stmt *st = prep(c, err,
				"SELECT " TRACE_COLS " FROM traces WHERE id > ?"
				" AND (?2 = '' OR name = ?2) AND (?3 = '' OR state = ?3)"
				" ORDER BY id LIMIT ?4",
				"issi", after, name ? name : "", sname, (int64_t)limit);
	int rc = list_rows(c, st, sizeof(**out), read_trace_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_update(struct catalog *c, const struct catalog_trace *t, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st =
	    prep(c, err,
		 "UPDATE traces SET sha256 = ?, blob = ?, size = ?, format = ?,"
		 " description = ?, lz4 = ?, state = ?, error = ?, records = ?"
		 " WHERE id = ?",
		 "ssussissui", t->sha256, t->blob, t->size, t->format, t->description,
		 (int64_t)t->lz4, catalog_trace_state_name(t->state), t->error, t->records, t->id);
	int rc = run(c, st, err);
	if (rc == 0 && sqlite3_changes(c->db) == 0)
		rc = oob_err_set(err, -ENOENT, "no trace with id %lld", (long long)t->id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_close_streams(struct catalog *c, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st =
	    prep(c, err,
		 "UPDATE traces SET state = 'incomplete',"
		 " error = 'upload interrupted: the server stopped while it streamed'"
		 " WHERE state = 'streaming'",
		 "");
	int rc = run(c, st, err);
	if (rc == 0)
		rc = sqlite3_changes(c->db);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* ---- jobs ---- */

#define JOB_COLS                                                                                   \
	"j.id, j.trace_id, j.events_id, j.spec, j.state, j.error_code, j.error, j.bytes,"          \
	" j.total_bytes, j.insns, j.created, j.started, j.finished, j.runs,"                       \
	" r.job_id IS NOT NULL, COALESCE(r.partial, 0), j.crashes"
#define JOB_FROM " FROM jobs j LEFT JOIN results r ON r.job_id = j.id"

static void read_job_v(sqlite3_stmt *st, void *out)
{
	struct catalog_job *j = out;
	memset(j, 0, sizeof(*j));
	j->id = sqlite3_column_int64(st, 0);
	j->trace_id = sqlite3_column_int64(st, 1);
	j->events_id = sqlite3_column_int64(st, 2);
	col_text(st, 3, j->spec, sizeof(j->spec));
	j->state = CATALOG_JOB_FAILED; /* no other text passes the CHECK constraint */
	catalog_job_state_parse((const char *)sqlite3_column_text(st, 4), &j->state);
	j->error_code = sqlite3_column_int(st, 5);
	col_text(st, 6, j->error, sizeof(j->error));
	j->bytes = (uint64_t)sqlite3_column_int64(st, 7);
	j->total_bytes = (uint64_t)sqlite3_column_int64(st, 8);
	j->insns = (uint64_t)sqlite3_column_int64(st, 9);
	j->created = sqlite3_column_int64(st, 10);
	j->started = sqlite3_column_int64(st, 11);
	j->finished = sqlite3_column_int64(st, 12);
	j->runs = (unsigned)sqlite3_column_int(st, 13);
	j->has_result = sqlite3_column_int(st, 14);
	j->partial = sqlite3_column_int(st, 15);
	j->crashes = (unsigned)sqlite3_column_int(st, 16);
}

static int job_add_locked(struct catalog *c, struct catalog_job *j,
			  const struct catalog_job_binary *bins, size_t nbins, struct oob_err *err)
{
	j->created = now_s();
	j->state = CATALOG_JOB_QUEUED;
	sqlite3_stmt *st = prep(c, err,
				"INSERT INTO jobs (trace_id, events_id, spec, state, created)"
				" VALUES (?,?,?,?,?)",
				"inssi", j->trace_id, j->events_id, j->spec,
				catalog_job_state_name(j->state), j->created);
	int rc = run(c, st, err);
	if (rc < 0)
		return oob_err_prefix(err, "job of trace %lld", (long long)j->trace_id);
	j->id = sqlite3_last_insert_rowid(c->db);
	for (size_t i = 0; i < nbins; i++) {
		st =
		    prep(c, err,
			 "INSERT INTO job_binaries (job_id, pos, binary_id, base) VALUES (?,?,?,?)",
			 "iiiu", j->id, (int64_t)i, bins[i].id, bins[i].base);
		if ((rc = run(c, st, err)) < 0)
			return oob_err_prefix(err, "binary %lld", (long long)bins[i].id);
	}
	return 0;
}

int catalog_job_add(struct catalog *c, struct catalog_job *j, const struct catalog_job_binary *bins,
		    size_t nbins, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = exec_sql(c, "BEGIN IMMEDIATE", err);
	if (rc == 0)
		rc = job_add_locked(c, j, bins, nbins, err);
	if (rc == 0)
		rc = exec_sql(c, "COMMIT", err);
	if (rc < 0)
		exec_sql(c, "ROLLBACK", NULL);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_get(struct catalog *c, int64_t id, struct catalog_job *out, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err, "SELECT " JOB_COLS JOB_FROM " WHERE j.id = ?", "i", id);
	int rc = get_one(c, st, read_job_v, out, "job", id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_list(struct catalog *c, int64_t after, size_t limit, struct catalog_job **out,
		     size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st =
	    prep(c, err, "SELECT " JOB_COLS JOB_FROM " WHERE j.id > ? ORDER BY j.id LIMIT ?", "ii",
		 after, (int64_t)limit);
	int rc = list_rows(c, st, sizeof(**out), read_job_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_job_binary_v(sqlite3_stmt *st, void *out)
{
	struct catalog_job_binary *b = out;
	b->id = sqlite3_column_int64(st, 0);
	b->base = (uint64_t)sqlite3_column_int64(st, 1);
}

int catalog_job_binaries(struct catalog *c, int64_t id, struct catalog_job_binary **out, size_t *n,
			 struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err,
				"SELECT binary_id, base FROM job_binaries WHERE job_id = ?"
				" ORDER BY pos",
				"i", id);
	int rc = list_rows(c, st, sizeof(**out), read_job_binary_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* -ENOENT or -EBUSY after an UPDATE ... WHERE id = ? AND state = ? that
 * changed nothing. */
static int why_unchanged(struct catalog *c, int64_t id, const char *from, struct oob_err *err)
{
	sqlite3_stmt *st = prep(c, err, "SELECT state FROM jobs WHERE id = ?", "i", id);
	if (!st)
		return err ? err->code : -EIO;
	int rc;
	if (sqlite3_step(st) == SQLITE_ROW)
		rc = oob_err_set(err, -EBUSY, "job %lld is %s, not %s", (long long)id,
				 (const char *)sqlite3_column_text(st, 0), from);
	else
		rc = oob_err_set(err, -ENOENT, "no job with id %lld", (long long)id);
	sqlite3_finalize(st);
	return rc;
}

static int transition_locked(struct catalog *c, int64_t id, enum catalog_job_state from,
			     enum catalog_job_state to, struct oob_err *err)
{
	const char *sfrom = catalog_job_state_name(from), *sto = catalog_job_state_name(to);
	if (!sfrom || !sto)
		return oob_err_set(err, -EINVAL, "catalog: no job state %d",
				   (int)(sfrom ? to : from));
	int starting = to == CATALOG_JOB_RUNNING;
	int ending = !starting && to != CATALOG_JOB_QUEUED;
	sqlite3_stmt *st = prep(c, err,
				"UPDATE jobs SET state = ?,"
				" started = CASE WHEN ? THEN ? ELSE started END,"
				" finished = CASE WHEN ? THEN ? ELSE finished END,"
				" runs = runs + ?"
				" WHERE id = ? AND state = ?",
				"siiiiiis", sto, (int64_t)starting, now_s(), (int64_t)ending,
				now_s(), (int64_t)starting, id, sfrom);
	int rc = run(c, st, err);
	if (rc == 0 && sqlite3_changes(c->db) == 0)
		rc = why_unchanged(c, id, sfrom, err);
	return rc;
}

int catalog_job_transition(struct catalog *c, int64_t id, enum catalog_job_state from,
			   enum catalog_job_state to, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = transition_locked(c, id, from, to, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_progress(struct catalog *c, int64_t id, uint64_t bytes, uint64_t total,
			 uint64_t insns, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st =
	    prep(c, err, "UPDATE jobs SET bytes = ?, total_bytes = ?, insns = ? WHERE id = ?",
		 "uuui", bytes, total, insns, id);
	int rc = run(c, st, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int result_put_locked(struct catalog *c, const struct catalog_result *r, struct oob_err *err)
{
	sqlite3_stmt *st = prep(c, err,
				"INSERT OR REPLACE INTO results (job_id, profile, folded, partial,"
				" stats, created, events, events_bytes) VALUES (?,?,?,?,?,?,?,?)",
				"issisisu", r->job_id, r->profile, r->folded, (int64_t)r->partial,
				r->stats, now_s(), r->events, r->events_bytes);
	return run(c, st, err);
}

static int finish_locked(struct catalog *c, int64_t id, enum catalog_job_state state, int code,
			 const char *msg, const struct catalog_result *r, struct oob_err *err)
{
	int rc = transition_locked(c, id, CATALOG_JOB_RUNNING, state, err);
	if (rc < 0)
		return rc;
	sqlite3_stmt *st = prep(c, err, "UPDATE jobs SET error_code = ?, error = ? WHERE id = ?",
				"isi", (int64_t)code, msg ? msg : "", id);
	if ((rc = run(c, st, err)) < 0)
		return rc;
	return r ? result_put_locked(c, r, err) : 0;
}

int catalog_job_finish(struct catalog *c, int64_t id, enum catalog_job_state state, int code,
		       const char *msg, const struct catalog_result *r, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = exec_sql(c, "BEGIN IMMEDIATE", err);
	if (rc == 0)
		rc = finish_locked(c, id, state, code, msg, r, err);
	if (rc == 0)
		rc = exec_sql(c, "COMMIT", err);
	if (rc < 0)
		exec_sql(c, "ROLLBACK", NULL);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_result_put(struct catalog *c, const struct catalog_result *r, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = result_put_locked(c, r, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_result_v(sqlite3_stmt *st, void *out)
{
	struct catalog_result *r = out;
	memset(r, 0, sizeof(*r));
	r->job_id = sqlite3_column_int64(st, 0);
	col_text(st, 1, r->profile, sizeof(r->profile));
	col_text(st, 2, r->folded, sizeof(r->folded));
	r->partial = sqlite3_column_int(st, 3);
	col_text(st, 4, r->stats, sizeof(r->stats));
	r->created = sqlite3_column_int64(st, 5);
	col_text(st, 6, r->events, sizeof(r->events));
	r->events_bytes = (uint64_t)sqlite3_column_int64(st, 7);
}

int catalog_result_get(struct catalog *c, int64_t job_id, struct catalog_result *out,
		       struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err,
				"SELECT job_id, profile, folded, partial, stats, created, events,"
				" events_bytes FROM results WHERE job_id = ?",
				"i", job_id);
	int rc = get_one(c, st, read_result_v, out, "result for job", job_id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_delete(struct catalog *c, int64_t id, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	sqlite3_stmt *st = prep(c, err,
				"DELETE FROM jobs WHERE id = ?"
				" AND state NOT IN ('queued', 'running')",
				"i", id);
	int rc = run(c, st, err);
	if (rc == 0 && sqlite3_changes(c->db) == 0)
		rc = why_unchanged(c, id, "finished", err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_id_v(sqlite3_stmt *st, void *out)
{
	*(int64_t *)out = sqlite3_column_int64(st, 0);
}

/* Counts a crash of every running job (one id, or all with id 0), fails
 * those that reached CATALOG_MAX_CRASHES (`why` ends the message) and queues
 * the others again. Returns the number of jobs counted. */
static int count_crash_locked(struct catalog *c, int64_t id, const char *why, struct oob_err *err)
{
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "the job crashed its process %d times (last: %s); it is not run again. "
		 "This is a bug in oobprof: the inputs are kept, please report it",
		 CATALOG_MAX_CRASHES, why);
	int rc = run(c,
		     prep(c, err,
			  "UPDATE jobs SET crashes = crashes + 1"
			  " WHERE state = 'running' AND (? = 0 OR id = ?)",
			  "ii", id, id),
		     err);
	int counted = rc == 0 ? sqlite3_changes(c->db) : 0;
	if (rc == 0)
		rc = run(c,
			 prep(c, err,
			      "UPDATE jobs SET state = 'failed', finished = ?, error_code = ?,"
			      " error = ? WHERE state = 'running' AND (? = 0 OR id = ?)"
			      " AND crashes >= ?",
			      "iisiii", now_s(), (int64_t)-ECHILD, msg, id, id,
			      (int64_t)CATALOG_MAX_CRASHES),
			 err);
	if (rc == 0 && sqlite3_changes(c->db) > 0)
		OOB_WARN("catalog: %d job(s) failed after %d crashes", sqlite3_changes(c->db),
			 CATALOG_MAX_CRASHES);
	if (rc == 0)
		rc = run(c,
			 prep(c, err,
			      "UPDATE jobs SET state = 'queued'"
			      " WHERE state = 'running' AND (? = 0 OR id = ?)",
			      "ii", id, id),
			 err);
	if (rc == 0 && sqlite3_changes(c->db) > 0)
		OOB_WARN("catalog: %d interrupted job(s) queued again", sqlite3_changes(c->db));
	return rc < 0 ? rc : counted;
}

static int crash_txn(struct catalog *c, int64_t id, const char *why, struct oob_err *err)
{
	int rc = exec_sql(c, "BEGIN IMMEDIATE", err), counted = 0;
	/* A job's process can die before it marks its job running (it was
	 * killed while starting): that is its crash too, not a job to forget
	 * in "queued" (the pool has already let it go). */
	if (rc == 0 && id)
		rc = run(c,
			 prep(c, err,
			      "UPDATE jobs SET state = 'running' WHERE id = ? AND state = 'queued'",
			      "i", id),
			 err);
	if (rc == 0)
		rc = counted = count_crash_locked(c, id, why, err);
	if (rc >= 0)
		rc = exec_sql(c, "COMMIT", err);
	if (rc < 0)
		exec_sql(c, "ROLLBACK", NULL);
	return rc < 0 ? rc : counted;
}

int catalog_job_crashed(struct catalog *c, int64_t id, const char *why, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = crash_txn(c, id, why, err);
	if (rc > 0) {
		sqlite3_stmt *st =
		    prep(c, err, "SELECT state = 'queued' FROM jobs WHERE id = ?", "i", id);
		rc = st && sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
		sqlite3_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_recover(struct catalog *c, int64_t **ids, size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = crash_txn(c, 0, "the server stopped without a shutdown", err);
	sqlite3_stmt *st;
	if (rc >= 0) {
		st = prep(c, err, "SELECT id FROM jobs WHERE state = 'queued' ORDER BY id", "");
		rc = list_rows(c, st, sizeof(**ids), read_id_v, (void **)ids, n, err);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int64_t catalog_job_count(struct catalog *c, enum catalog_job_state state)
{
	const char *name = catalog_job_state_name(state);
	if (!name)
		return -1;
	pthread_mutex_lock(&c->lock);
	int64_t n = -1;
	sqlite3_stmt *st = prep(c, NULL, "SELECT COUNT(*) FROM jobs WHERE state = ?", "s", name);
	if (st && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	pthread_mutex_unlock(&c->lock);
	return n;
}
