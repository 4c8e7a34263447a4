/* catalog_traces: the traces table (instruction traces, event logs, Go
 * traces; uploaded or streamed). */
#include "catalog_impl.h"

#include <string.h>

#define TRACE_COLS                                                                                 \
	"id, name, sha256, blob, size, format, description, lz4, state, error, created, records,"  \
	" node"

static void read_trace_v(struct catalog_stmt *st, void *out)
{
	struct catalog_trace *t = out;
	memset(t, 0, sizeof(*t));
	t->id = catalog_col_i64(st, 0);
	catalog_col_text(st, 1, t->name, sizeof(t->name));
	catalog_col_text(st, 2, t->sha256, sizeof(t->sha256));
	catalog_col_text(st, 3, t->blob, sizeof(t->blob));
	t->size = (uint64_t)catalog_col_i64(st, 4);
	catalog_col_text(st, 5, t->format, sizeof(t->format));
	catalog_col_text(st, 6, t->description, sizeof(t->description));
	t->lz4 = catalog_col_int(st, 7);
	t->state = CATALOG_TRACE_INVALID; /* no other text passes the CHECK constraint */
	catalog_trace_state_parse(catalog_col_str(st, 8), &t->state);
	catalog_col_text(st, 9, t->error, sizeof(t->error));
	t->created = catalog_col_i64(st, 10);
	t->records = (uint64_t)catalog_col_i64(st, 11);
	catalog_col_text(st, 12, t->node, sizeof(t->node));
}

int catalog_trace_add(struct catalog *c, struct catalog_trace *t, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	t->created = catalog_now_s();
	struct catalog_stmt *st = catalog_prep(
	    c, err,
	    "INSERT INTO traces (name, sha256, blob, size, format, description,"
	    " lz4, state, error, created, records, node) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
	    "sssussissius", t->name, t->sha256, t->blob, t->size, t->format, t->description,
	    (int64_t)t->lz4, catalog_trace_state_name(t->state), t->error, t->created, t->records,
	    c->node);
	int rc = catalog_run(c, st, err);
	if (rc == 0)
		t->id = catalog_last_id(c);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_get(struct catalog *c, int64_t id, struct catalog_trace *out, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err, "SELECT " TRACE_COLS " FROM traces WHERE id = ?", "i", id);
	int rc = catalog_get_one(c, st, read_trace_v, out, "trace", id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_find(struct catalog *c, const char *sha256, struct catalog_trace *out,
		       struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(c, err,
					       "SELECT " TRACE_COLS " FROM traces WHERE sha256 = ?"
					       " AND state = 'ready' ORDER BY id LIMIT 1",
					       "s", sha256);
	int rc = catalog_get_one(c, st, read_trace_v, out, "trace", 0, err);
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
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "SELECT " TRACE_COLS " FROM traces WHERE id > ?"
			 " AND (?2 = '' OR name = ?2) AND (?3 = '' OR state = ?3)"
			 " ORDER BY id LIMIT ?4",
			 "issi", after, name ? name : "", sname, (int64_t)limit);
	int rc = catalog_list_rows(c, st, sizeof(**out), read_trace_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_update(struct catalog *c, const struct catalog_trace *t, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(
	    c, err,
	    "UPDATE traces SET sha256 = ?, blob = ?, size = ?, format = ?,"
	    " description = ?, lz4 = ?, state = ?, error = ?, records = ?"
	    " WHERE id = ?",
	    "ssussissui", t->sha256, t->blob, t->size, t->format, t->description, (int64_t)t->lz4,
	    catalog_trace_state_name(t->state), t->error, t->records, t->id);
	int rc = catalog_run(c, st, err);
	if (rc == 0 && c->changes == 0)
		rc = oob_err_set(err, -ENOENT, "no trace with id %lld", (long long)t->id);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_trace_close_streams(struct catalog *c, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "UPDATE traces SET state = 'incomplete',"
			 " error = 'upload interrupted: the server stopped while it streamed'"
			 " WHERE state = 'streaming' AND (?1 = '' OR node = ?1)",
			 "s", c->node);
	int rc = catalog_run(c, st, err);
	if (rc == 0)
		rc = c->changes;
	pthread_mutex_unlock(&c->lock);
	return rc;
}
