/*
 * catalog internals shared by catalog.c (open, migrations, state names),
 * catalog_db.c (the two backends behind the statement helpers),
 * catalog_binaries.c, catalog_traces.c and
 * catalog_jobs.c (jobs and their results). Not a public header.
 */
#ifndef OOB_CATALOG_IMPL_H
#define OOB_CATALOG_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include <libpq-fe.h>
#include <sqlite3.h>

#include "catalog.h"

/* The SQL of the tables' files is written once, in the subset both backends
 * speak: placeholders "?" or "?N" (rewritten to "$N" for PostgreSQL), no
 * boolean-valued columns (CASE WHEN ... THEN 1 ELSE 0 END instead), integer
 * columns declared INTEGER in migrations (BIGINT in PostgreSQL). Where the
 * dialects differ (JSON functions, row locks) the file picks by c->pg. */
struct catalog {
	sqlite3 *db; /* one of db and pg is set */
	PGconn *pg;
	pthread_mutex_t lock;
	int64_t changes; /* rows the last catalog_run changed */
	char where[160]; /* the database, without credentials (health) */
	char node[64];	 /* catalog_set_node: "" on one node */
	/* The run this handle started (queued -> running): its later moves of
	 * that job require the job's runs to be still this one, so that a run
	 * whose lease lapsed and was run again elsewhere cannot end it twice. */
	int64_t fence_id, fence_runs;
};

/* One statement. SQLite steps it; PostgreSQL runs it in catalog_prep and
 * walks the rows of its result. */
struct catalog_stmt {
	struct catalog *c;
	sqlite3_stmt *lite;
	PGresult *res;
	int row, nrows;
};

/* The statement helpers. Every public function holds c->lock around them. */

/* Fills err from the database's last error ("catalog: what: ..."); returns
 * -ENOSPC if the disk is full, else -EIO. */
int catalog_db_err(struct catalog *c, struct oob_err *err, const char *what);
/* Runs sql (no rows, no parameters, several statements); 0 or -EIO. */
int catalog_exec_sql(struct catalog *c, const char *sql, struct oob_err *err);
/* Opens a write transaction (SQLite: BEGIN IMMEDIATE, the write lock at once). */
int catalog_begin(struct catalog *c, struct oob_err *err);
/* Prepares sql and binds "i" int64, "u" uint64 (as its bit pattern), "s"
 * text, "n" NULL-or-int64 (0 = NULL), in the order of the placeholders.
 * NULL on error (err filled; PostgreSQL reports here what SQLite reports at
 * catalog_run, with the same codes). */
struct catalog_stmt *catalog_prep(struct catalog *c, struct oob_err *err, const char *sql,
				  const char *types, ...);
/* Steps a statement that returns no rows and finalizes it (st NULL: the
 * error of catalog_prep). 0, -ENOENT (unknown foreign id), -EINVAL (other
 * constraint) or the catalog_db_err code. Sets c->changes. */
int catalog_run(struct catalog *c, struct catalog_stmt *st, struct oob_err *err);
/* 1: a row is current, 0: no more rows, -1: error (catalog_db_err tells). */
int catalog_step(struct catalog_stmt *st);
void catalog_finalize(struct catalog_stmt *st);
/* Column i of the current row: 0 / NULL for SQL NULL. */
int64_t catalog_col_i64(struct catalog_stmt *st, int i);
int catalog_col_int(struct catalog_stmt *st, int i);
const char *catalog_col_str(struct catalog_stmt *st, int i);
/* Copies text column i into dst[n] ("" for NULL), truncating. */
void catalog_col_text(struct catalog_stmt *st, int i, char *dst, size_t n);
/* The id the last INSERT gave its row. */
int64_t catalog_last_id(struct catalog *c);
/* Wall-clock seconds, the unit of every created/started/finished column. */
int64_t catalog_now_s(void);
/* Runs a query expected to return one row, read by fn; -ENOENT if none. */
int catalog_get_one(struct catalog *c, struct catalog_stmt *st,
		    void (*fn)(struct catalog_stmt *, void *), void *out, const char *what,
		    int64_t id, struct oob_err *err);
/* Collects the rows of st into a malloc'd array of elem-byte structs. */
int catalog_list_rows(struct catalog *c, struct catalog_stmt *st, size_t elem,
		      void (*fn)(struct catalog_stmt *, void *), void **out, size_t *n,
		      struct oob_err *err);

/* Counts a crash of the running jobs that match (an id or 0, a node or "",
 * leases expired before `before` or 0), fails those at
 * CATALOG_MAX_CRASHES and queues the others again, unleased. Returns the
 * number counted. In a transaction of the caller's. */
int catalog_count_crash_locked(struct catalog *c, int64_t id, const char *node, int64_t before,
			       const char *why, struct oob_err *err);

/* Backends (catalog_db.c): open the connection, set c->where. */
int catalog_db_open_sqlite(struct catalog *c, const char *path, struct oob_err *err);
int catalog_db_open_pg(struct catalog *c, const char *conninfo, struct oob_err *err);
void catalog_db_close(struct catalog *c);

#endif
