/*
 * catalog_inputs: deleting an input (a trace or a binary) with the checks
 * that keep the catalog whole, in one transaction: no job that is queued or
 * running loses its input, a finished job is deleted with it only when the
 * caller asks (its rows reference the input), and the caller learns whether
 * the input's file is still named by another row (uploads of equal content
 * share one blob).
 */
#include "catalog_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

/* How a kind of input is found and who uses it. Traces are referenced by
 * columns and by the spec alone ("traces" beyond the first, "go_trace",
 * "pycode"):
 * SQLite's JSON functions read the normalized spec (jobspec_to_json). */
struct input_kind {
	const char *what;
	const char *get; /* blob, state ('' for binaries) */
	const char *users;
	const char *del;
};

static const struct input_kind trace_kind = {
    "trace",
    "SELECT blob, state FROM traces WHERE id = ?",
    "SELECT id, state FROM jobs WHERE trace_id = ?1 OR events_id = ?1"
    " OR json_extract(spec, '$.go_trace') = ?1 OR json_extract(spec, '$.pycode') = ?1"
    " OR EXISTS (SELECT 1 FROM json_each(spec, '$.traces') WHERE value = ?1) ORDER BY id",
    "DELETE FROM traces WHERE id = ?",
};

/* The same users in PostgreSQL's JSON functions. */
static const struct input_kind trace_kind_pg = {
    "trace",
    "SELECT blob, state FROM traces WHERE id = ?",
    "SELECT id, state FROM jobs WHERE trace_id = ?1 OR events_id = ?1"
    " OR (spec::jsonb ->> 'go_trace')::bigint = ?1 OR (spec::jsonb ->> 'pycode')::bigint = ?1"
    " OR EXISTS (SELECT 1 FROM jsonb_array_elements_text("
    "  CASE WHEN jsonb_typeof(spec::jsonb -> 'traces') = 'array'"
    "  THEN spec::jsonb -> 'traces' ELSE '[]'::jsonb END) v WHERE v::bigint = ?1)"
    " ORDER BY id",
    "DELETE FROM traces WHERE id = ?",
};

static const struct input_kind binary_kind = {
    "binary",
    "SELECT blob, '' FROM binaries WHERE id = ?",
    "SELECT id, state FROM jobs WHERE id IN"
    " (SELECT job_id FROM job_binaries WHERE binary_id = ?1) ORDER BY id",
    "DELETE FROM binaries WHERE id = ?",
};

struct input_row {
	char blob[128];
	char state[16];
};

struct user_row {
	int64_t id;
	char state[16];
};

static void read_input_v(struct catalog_stmt *st, void *out)
{
	struct input_row *r = out;
	catalog_col_text(st, 0, r->blob, sizeof(r->blob));
	catalog_col_text(st, 1, r->state, sizeof(r->state));
}

static void read_user_v(struct catalog_stmt *st, void *out)
{
	struct user_row *u = out;
	u->id = catalog_col_i64(st, 0);
	catalog_col_text(st, 1, u->state, sizeof(u->state));
}

static int active(const struct user_row *u)
{
	return !strcmp(u->state, "queued") || !strcmp(u->state, "running");
}

/* -EBUSY saying which jobs stand in the way, or 0. */
static int check_users(const struct input_kind *k, int64_t id, const struct user_row *u, size_t n,
		       int with_jobs, struct oob_err *err)
{
	char list[256] = "";
	size_t len = 0, shown = 0;
	int busy = 0;
	for (size_t i = 0; i < n; i++)
		busy |= active(&u[i]);
	for (size_t i = 0; i < n && shown < 8; i++) {
		if (busy && !active(&u[i]))
			continue;
		int w = snprintf(list + len, sizeof(list) - len, "%s%lld (%s)", shown ? ", " : "",
				 (long long)u[i].id, u[i].state);
		if (w < 0 || (size_t)w >= sizeof(list) - len)
			break;
		len += (size_t)w, shown++;
	}
	if (busy)
		return oob_err_set(err, -EBUSY,
				   "%s %lld is used by job %s: wait for it or delete that job "
				   "first",
				   k->what, (long long)id, list);
	if (n && !with_jobs)
		return oob_err_set(err, -EBUSY,
				   "%s %lld is used by job %s%s: delete those jobs first, or ask "
				   "with ?with_jobs=1 to delete them with it",
				   k->what, (long long)id, list, n > shown ? ", ..." : "");
	return 0;
}

static int delete_locked(struct catalog *c, const struct input_kind *k, int64_t id, int with_jobs,
			 struct catalog_deleted *out, struct oob_err *err)
{
	struct input_row row;
	struct user_row *users = NULL;
	size_t n = 0;
	int rc = catalog_get_one(c, catalog_prep(c, err, k->get, "i", id), read_input_v, &row,
				 k->what, id, err);
	if (rc == 0 && !strcmp(row.state, "streaming"))
		rc = oob_err_set(err, -EBUSY, "trace %lld is still being uploaded", (long long)id);
	if (rc == 0)
		rc = catalog_list_rows(c, catalog_prep(c, err, k->users, "i", id), sizeof(*users),
				       read_user_v, (void **)&users, &n, err);
	if (rc == 0)
		rc = check_users(k, id, users, n, with_jobs, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = catalog_run(c,
				 catalog_prep(c, err,
					      "DELETE FROM jobs WHERE id = ?"
					      " AND state NOT IN ('queued', 'running')",
					      "i", users[i].id),
				 err);
	if (rc == 0)
		rc = catalog_run(c, catalog_prep(c, err, k->del, "i", id), err);
	struct catalog_stmt *st =
	    rc == 0 ? catalog_prep(c, err,
				   "SELECT (SELECT COUNT(*) FROM traces WHERE blob = ?1)"
				   " + (SELECT COUNT(*) FROM binaries WHERE blob = ?1)",
				   "s", row.blob)
		    : NULL;
	if (st && catalog_step(st) == 1) {
		snprintf(out->blob, sizeof(out->blob), "%s", row.blob);
		out->blob_unused = catalog_col_i64(st, 0) == 0;
	} else if (rc == 0) {
		rc = catalog_db_err(c, err, "count blob");
	}
	catalog_finalize(st);
	if (rc == 0 && n) {
		out->jobs = oob_xcalloc(n, sizeof(*out->jobs));
		for (size_t i = 0; i < n; i++)
			out->jobs[i] = users[i].id;
		out->njobs = n;
	}
	free(users);
	return rc;
}

static int delete_input(struct catalog *c, const struct input_kind *k, int64_t id, int with_jobs,
			struct catalog_deleted *out, struct oob_err *err)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	int rc = catalog_begin(c, err);
	if (rc == 0) {
		rc = delete_locked(c, k, id, with_jobs, out, err);
		if (rc == 0)
			rc = catalog_exec_sql(c, "COMMIT", err);
		if (rc < 0)
			catalog_exec_sql(c, "ROLLBACK", NULL);
	}
	pthread_mutex_unlock(&c->lock);
	if (rc < 0) {
		free(out->jobs);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

int catalog_trace_delete(struct catalog *c, int64_t id, int with_jobs, struct catalog_deleted *out,
			 struct oob_err *err)
{
	return delete_input(c, c->pg ? &trace_kind_pg : &trace_kind, id, with_jobs, out, err);
}

int catalog_binary_delete(struct catalog *c, int64_t id, int with_jobs, struct catalog_deleted *out,
			  struct oob_err *err)
{
	return delete_input(c, &binary_kind, id, with_jobs, out, err);
}

void catalog_deleted_clear(struct catalog_deleted *d)
{
	free(d->jobs);
	memset(d, 0, sizeof(*d));
}
