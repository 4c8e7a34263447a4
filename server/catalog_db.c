/*
 * catalog_db: the two backends behind the statement helpers of
 * catalog_impl.h. SQLite (embedded, one file) prepares and steps; libpq
 * (PostgreSQL, shared by several nodes) runs each statement at catalog_prep
 * with its parameters as text (the server infers their types from the
 * columns they meet) and walks the rows of its result.
 */
#include "catalog_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/oob_mem.h"

#define MAX_PARAMS 16

int catalog_db_err(struct catalog *c, struct oob_err *err, const char *what)
{
	if (c->pg) {
		const char *m = PQerrorMessage(c->pg);
		int len = (int)strcspn(m, "\n");
		return oob_err_set(err, -EIO, "catalog: %s: %.*s", what, len, m);
	}
	int rc = sqlite3_errcode(c->db);
	int code = rc == SQLITE_FULL ? -ENOSPC : -EIO;
	return oob_err_set(err, code, "catalog: %s: %s", what, sqlite3_errmsg(c->db));
}

/* A connection PostgreSQL dropped (its restart, a network cut) is opened
 * again before the next statement rather than failing every later one. */
static void pg_revive(struct catalog *c)
{
	if (PQstatus(c->pg) != CONNECTION_OK)
		PQreset(c->pg);
}

/* The error of a failed PostgreSQL result, with SQLite's codes: a missing
 * foreign row -ENOENT, another constraint -EINVAL, a full disk -ENOSPC. */
static int pg_result_err(struct catalog *c, PGresult *res, struct oob_err *err)
{
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	const char *m = PQresultErrorMessage(res);
	int len = (int)strcspn(m, "\n");
	if (state && !strcmp(state, "23503"))
		return oob_err_set(err, -ENOENT, "catalog: unknown id (%.*s)", len, m);
	if (state && !strncmp(state, "23", 2))
		return oob_err_set(err, -EINVAL, "catalog: %.*s", len, m);
	if (state && !strcmp(state, "53100"))
		return oob_err_set(err, -ENOSPC, "catalog: %.*s", len, m);
	(void)c;
	return oob_err_set(err, -EIO, "catalog: %.*s", len, m);
}

int catalog_exec_sql(struct catalog *c, const char *sql, struct oob_err *err)
{
	if (c->pg) {
		pg_revive(c);
		PGresult *res = PQexec(c->pg, sql);
		ExecStatusType s = PQresultStatus(res);
		int rc =
		    s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? 0 : pg_result_err(c, res, err);
		PQclear(res);
		return rc;
	}
	char *msg = NULL;
	if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	int rc = oob_err_set(err, -EIO, "catalog: %s", msg ? msg : "exec failed");
	sqlite3_free(msg);
	return rc;
}

int catalog_begin(struct catalog *c, struct oob_err *err)
{
	return catalog_exec_sql(c, c->pg ? "BEGIN" : "BEGIN IMMEDIATE", err);
}

/* sql with "?" and "?N" rewritten to "$N" outside quoted literals. */
static char *pg_placeholders(const char *sql)
{
	size_t n = strlen(sql);
	char *out = oob_xmalloc(2 * n + 1), *o = out;
	int next = 1, quoted = 0;
	for (const char *p = sql; *p; p++) {
		if (*p == '\'')
			quoted = !quoted;
		if (quoted || *p != '?') {
			*o++ = *p;
			continue;
		}
		*o++ = '$';
		if (p[1] >= '0' && p[1] <= '9') {
			while (p[1] >= '0' && p[1] <= '9')
				*o++ = *++p;
		} else {
			o += sprintf(o, "%d", next++);
		}
	}
	*o = '\0';
	return out;
}

static struct catalog_stmt *pg_prep(struct catalog *c, struct oob_err *err, const char *sql,
				    const char *types, va_list ap)
{
	char nums[MAX_PARAMS][24];
	const char *vals[MAX_PARAMS];
	int n = 0;
	for (; types[n]; n++) {
		if (n == MAX_PARAMS) {
			oob_err_set(err, -EINVAL, "catalog: over %d parameters", MAX_PARAMS);
			return NULL;
		}
		if (types[n] == 's') {
			vals[n] = va_arg(ap, const char *);
		} else if (types[n] == 'u') {
			snprintf(nums[n], sizeof(nums[n]), "%lld",
				 (long long)(int64_t)va_arg(ap, uint64_t));
			vals[n] = nums[n];
		} else {
			int64_t v = va_arg(ap, int64_t);
			snprintf(nums[n], sizeof(nums[n]), "%lld", (long long)v);
			vals[n] = types[n] == 'n' && v == 0 ? NULL : nums[n];
		}
	}
	char *q = pg_placeholders(sql);
	pg_revive(c);
	PGresult *res = PQexecParams(c->pg, q, n, NULL, vals, NULL, NULL, 0);
	free(q);
	ExecStatusType s = PQresultStatus(res);
	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		pg_result_err(c, res, err);
		PQclear(res);
		return NULL;
	}
	struct catalog_stmt *st = oob_xcalloc(1, sizeof(*st));
	st->c = c;
	st->res = res;
	st->row = -1;
	st->nrows = PQntuples(res);
	const char *changed = PQcmdTuples(res);
	c->changes = changed[0] ? strtoll(changed, NULL, 10) : 0;
	return st;
}

static struct catalog_stmt *lite_prep(struct catalog *c, struct oob_err *err, const char *sql,
				      const char *types, va_list ap)
{
	sqlite3_stmt *lite = NULL;
	if (sqlite3_prepare_v2(c->db, sql, -1, &lite, NULL) != SQLITE_OK) {
		catalog_db_err(c, err, "prepare");
		return NULL;
	}
	for (int i = 0; types[i]; i++) {
		int k = i + 1, rc;
		if (types[i] == 's') {
			rc = sqlite3_bind_text(lite, k, va_arg(ap, const char *), -1,
					       SQLITE_TRANSIENT);
		} else if (types[i] == 'u') {
			rc = sqlite3_bind_int64(lite, k, (sqlite3_int64)va_arg(ap, uint64_t));
		} else {
			int64_t v = va_arg(ap, int64_t);
			rc = (types[i] == 'n' && v == 0) ? sqlite3_bind_null(lite, k)
							 : sqlite3_bind_int64(lite, k, v);
		}
		if (rc != SQLITE_OK) {
			catalog_db_err(c, err, "bind");
			sqlite3_finalize(lite);
			return NULL;
		}
	}
	struct catalog_stmt *st = oob_xcalloc(1, sizeof(*st));
	st->c = c;
	st->lite = lite;
	return st;
}

struct catalog_stmt *catalog_prep(struct catalog *c, struct oob_err *err, const char *sql,
				  const char *types, ...)
{
	va_list ap;
	va_start(ap, types);
	struct catalog_stmt *st =
	    c->pg ? pg_prep(c, err, sql, types, ap) : lite_prep(c, err, sql, types, ap);
	va_end(ap);
	return st;
}

static int lite_run(struct catalog *c, sqlite3_stmt *st, struct oob_err *err)
{
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW) {
		c->changes = sqlite3_changes(c->db);
		return 0;
	}
	int x = sqlite3_extended_errcode(c->db);
	if (x == SQLITE_CONSTRAINT_FOREIGNKEY)
		return oob_err_set(err, -ENOENT, "catalog: unknown id (%s)", sqlite3_errmsg(c->db));
	if ((x & 0xff) == SQLITE_CONSTRAINT)
		return oob_err_set(err, -EINVAL, "catalog: %s", sqlite3_errmsg(c->db));
	return catalog_db_err(c, err, "write");
}

int catalog_run(struct catalog *c, struct catalog_stmt *st, struct oob_err *err)
{
	if (!st)
		return err ? err->code : -EIO;
	int ret = st->lite ? lite_run(c, st->lite, err) : 0;
	catalog_finalize(st);
	return ret;
}

int catalog_step(struct catalog_stmt *st)
{
	if (st->res)
		return ++st->row < st->nrows ? 1 : 0;
	int rc = sqlite3_step(st->lite);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

void catalog_finalize(struct catalog_stmt *st)
{
	if (!st)
		return;
	PQclear(st->res);
	sqlite3_finalize(st->lite);
	free(st);
}

const char *catalog_col_str(struct catalog_stmt *st, int i)
{
	if (st->res)
		return PQgetisnull(st->res, st->row, i) ? NULL : PQgetvalue(st->res, st->row, i);
	return (const char *)sqlite3_column_text(st->lite, i);
}

int64_t catalog_col_i64(struct catalog_stmt *st, int i)
{
	if (!st->res)
		return sqlite3_column_int64(st->lite, i);
	const char *v = catalog_col_str(st, i);
	return v ? strtoll(v, NULL, 10) : 0;
}

int catalog_col_int(struct catalog_stmt *st, int i)
{
	return (int)catalog_col_i64(st, i);
}

void catalog_col_text(struct catalog_stmt *st, int i, char *dst, size_t n)
{
	const char *t = catalog_col_str(st, i);
	snprintf(dst, n, "%s", t ? t : "");
}

int64_t catalog_last_id(struct catalog *c)
{
	if (!c->pg)
		return sqlite3_last_insert_rowid(c->db);
	int64_t id = 0;
	struct catalog_stmt *st = catalog_prep(c, NULL, "SELECT lastval()", "");
	if (st && catalog_step(st) == 1)
		id = catalog_col_i64(st, 0);
	catalog_finalize(st);
	return id;
}

int64_t catalog_now_s(void)
{
	return (int64_t)time(NULL);
}

int catalog_get_one(struct catalog *c, struct catalog_stmt *st,
		    void (*fn)(struct catalog_stmt *, void *), void *out, const char *what,
		    int64_t id, struct oob_err *err)
{
	if (!st)
		return err ? err->code : -EIO;
	int rc = catalog_step(st), ret = 0;
	if (rc == 1)
		fn(st, out);
	else if (rc == 0)
		ret = oob_err_set(err, -ENOENT, "no %s with id %lld", what, (long long)id);
	else
		ret = catalog_db_err(c, err, "read");
	catalog_finalize(st);
	return ret;
}

int catalog_list_rows(struct catalog *c, struct catalog_stmt *st, size_t elem,
		      void (*fn)(struct catalog_stmt *, void *), void **out, size_t *n,
		      struct oob_err *err)
{
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (!st)
		return err ? err->code : -EIO;
	int rc;
	while ((rc = catalog_step(st)) == 1) {
		oob_xgrow(out, &cap, *n + 1, elem);
		fn(st, (char *)*out + *n * elem);
		(*n)++;
	}
	int ret = 0;
	if (rc != 0) {
		ret = catalog_db_err(c, err, "list");
		free(*out);
		*out = NULL;
		*n = 0;
	}
	catalog_finalize(st);
	return ret;
}

int catalog_db_open_sqlite(struct catalog *c, const char *path, struct oob_err *err)
{
	int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX;
	snprintf(c->where, sizeof(c->where), "sqlite:%s", path);
	if (sqlite3_open_v2(path, &c->db, flags, NULL) != SQLITE_OK)
		return oob_err_set(err, -EIO, "cannot open: %s",
				   c->db ? sqlite3_errmsg(c->db) : "cannot open");
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, 5000);
	/* WAL: readers never block the writer; synchronous=FULL: a committed row
	 * survives power loss, which is what "registered" promises. */
	return catalog_exec_sql(c,
				"PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
				" PRAGMA foreign_keys=ON;",
				err);
}

int catalog_db_open_pg(struct catalog *c, const char *conninfo, struct oob_err *err)
{
	c->pg = PQconnectdb(conninfo);
	if (!c->pg)
		return oob_err_set(err, -ENOMEM, "catalog: out of memory connecting");
	if (PQstatus(c->pg) != CONNECTION_OK)
		return catalog_db_err(c, err, "cannot connect to PostgreSQL");
	/* Named by what it reaches, never by the password its URI may hold. */
	snprintf(c->where, sizeof(c->where), "postgresql:%s@%s/%s", PQuser(c->pg),
		 PQhost(c->pg) ? PQhost(c->pg) : "", PQdb(c->pg));
	/* Warnings and notices ("relation already exists") are not ours to log. */
	return catalog_exec_sql(c, "SET client_min_messages = warning", err);
}

void catalog_db_close(struct catalog *c)
{
	if (c->pg)
		PQfinish(c->pg);
	if (c->db)
		sqlite3_close(c->db);
	c->pg = NULL;
	c->db = NULL;
}
