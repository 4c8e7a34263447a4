/*
 * catalog internals shared by catalog.c (open, migrations, state names,
 * statement helpers), catalog_binaries.c, catalog_traces.c and
 * catalog_jobs.c (jobs and their results). Not a public header.
 */
#ifndef OOB_CATALOG_IMPL_H
#define OOB_CATALOG_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include <sqlite3.h>

#include "catalog.h"

struct catalog {
	sqlite3 *db;
	pthread_mutex_t lock;
};

/* The statement helpers. Every public function holds c->lock around them. */

/* Fills err from the database's last error ("catalog: what: ..."); returns
 * -ENOSPC if the disk is full, else -EIO. */
int catalog_db_err(struct catalog *c, struct oob_err *err, const char *what);
/* Runs sql (no rows); 0 or -EIO. */
int catalog_exec_sql(struct catalog *c, const char *sql, struct oob_err *err);
/* Prepares sql and binds "i" int64, "u" uint64 (as its bit pattern), "s"
 * text, "n" NULL-or-int64 (0 = NULL), in the order of the placeholders.
 * NULL on error (err filled). */
sqlite3_stmt *catalog_prep(struct catalog *c, struct oob_err *err, const char *sql,
			   const char *types, ...);
/* Steps a statement that returns no rows and finalizes it (st NULL: the
 * error of catalog_prep). 0, -ENOENT (unknown foreign id), -EINVAL (other
 * constraint) or the catalog_db_err code. */
int catalog_run(struct catalog *c, sqlite3_stmt *st, struct oob_err *err);
/* Copies text column i into dst[n] ("" for NULL), truncating. */
void catalog_col_text(sqlite3_stmt *st, int i, char *dst, size_t n);
/* Wall-clock seconds, the unit of every created/started/finished column. */
int64_t catalog_now_s(void);
/* Runs a query expected to return one row, read by fn; -ENOENT if none. */
int catalog_get_one(struct catalog *c, sqlite3_stmt *st, void (*fn)(sqlite3_stmt *, void *),
		    void *out, const char *what, int64_t id, struct oob_err *err);
/* Collects the rows of st into a malloc'd array of elem-byte structs. */
int catalog_list_rows(struct catalog *c, sqlite3_stmt *st, size_t elem,
		      void (*fn)(sqlite3_stmt *, void *), void **out, size_t *n,
		      struct oob_err *err);

#endif
