/*
 * catalog_queue: the job queue that several nodes share (DESIGN.md 6).
 *
 * A node claims the oldest queued job nobody holds: SELECT ... FOR UPDATE
 * SKIP LOCKED (PostgreSQL), so that nodes claiming at once take different
 * rows without waiting on each other, then stamps its lease (node, expiry)
 * on it. It renews the leases of every job it holds while it lives; a node
 * that dies stops renewing, and any node's reaper finds the lapsed lease: a
 * running job counts a crash and is queued again for another node, a
 * claimed one that never started is claimable again. SQLite (one node)
 * serializes writers already and has no row locks: the same code without
 * the locking clause.
 */
#include "catalog_impl.h"

#include <stdio.h>
#include <string.h>

#include "util/oob_log.h"

int catalog_set_node(struct catalog *c, const char *node, struct oob_err *err)
{
	if (!node || strlen(node) >= sizeof(c->node))
		return oob_err_set(err, -EINVAL, "catalog: node id longer than %zu bytes",
				   sizeof(c->node) - 1);
	snprintf(c->node, sizeof(c->node), "%s", node);
	return 0;
}

const char *catalog_node(const struct catalog *c)
{
	return c->node;
}

static int claim_locked(struct catalog *c, unsigned lease_s, int64_t *id, struct oob_err *err)
{
	int64_t now = catalog_now_s();
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 c->pg ? "SELECT id FROM jobs WHERE state = 'queued' AND lease_expires < ?"
				 " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
			       : "SELECT id FROM jobs WHERE state = 'queued' AND lease_expires < ?"
				 " ORDER BY id LIMIT 1",
			 "i", now);
	if (!st)
		return err ? err->code : -EIO;
	int row = catalog_step(st);
	*id = row == 1 ? catalog_col_i64(st, 0) : 0;
	catalog_finalize(st);
	if (row < 0)
		return catalog_db_err(c, err, "claim");
	if (row == 0)
		return 0;
	int rc = catalog_run(
	    c,
	    catalog_prep(c, err, "UPDATE jobs SET lease_node = ?, lease_expires = ? WHERE id = ?",
			 "sii", c->node, now + (int64_t)lease_s, *id),
	    err);
	return rc < 0 ? rc : 1;
}

int catalog_job_claim(struct catalog *c, unsigned lease_s, int64_t *id, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_begin(c, err);
	if (rc == 0)
		rc = claim_locked(c, lease_s, id, err);
	if (rc >= 0 && catalog_exec_sql(c, "COMMIT", err) < 0)
		rc = err ? err->code : -EIO;
	if (rc < 0)
		catalog_exec_sql(c, "ROLLBACK", NULL);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_renew(struct catalog *c, unsigned lease_s, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_run(c,
			     catalog_prep(c, err,
					  "UPDATE jobs SET lease_expires = ? WHERE lease_node = ?"
					  " AND state IN ('queued', 'running')",
					  "is", catalog_now_s() + (int64_t)lease_s, c->node),
			     err);
	if (rc == 0)
		rc = (int)c->changes;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_reap(struct catalog *c, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_begin(c, err);
	if (rc == 0)
		rc = catalog_count_crash_locked(c, 0, "", catalog_now_s(),
						"its node stopped renewing its lease", err);
	if (rc >= 0 && catalog_exec_sql(c, "COMMIT", err) < 0)
		rc = err ? err->code : -EIO;
	if (rc < 0)
		catalog_exec_sql(c, "ROLLBACK", NULL);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_release(struct catalog *c, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_run(c,
			     catalog_prep(c, err,
					  "UPDATE jobs SET lease_node = '', lease_expires = 0"
					  " WHERE lease_node = ? AND state = 'queued'",
					  "s", c->node),
			     err);
	if (rc == 0)
		rc = (int)c->changes;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_lease(struct catalog *c, int64_t id, char *node, size_t n, int64_t *expires,
		      struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(
	    c, err, "SELECT lease_node, lease_expires FROM jobs WHERE id = ?", "i", id);
	int rc = st ? catalog_step(st) : -1;
	if (rc == 1) {
		catalog_col_text(st, 0, node, n);
		*expires = catalog_col_i64(st, 1);
		rc = 0;
	} else if (rc == 0) {
		rc = oob_err_set(err, -ENOENT, "no job with id %lld", (long long)id);
	} else {
		rc = st ? catalog_db_err(c, err, "lease") : (err ? err->code : -EIO);
	}
	catalog_finalize(st);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_request_cancel(struct catalog *c, int64_t id, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_run(c,
			     catalog_prep(c, err,
					  "UPDATE jobs SET cancel = 1 WHERE id = ?"
					  " AND state IN ('queued', 'running')",
					  "i", id),
			     err);
	if (rc == 0)
		rc = c->changes > 0;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_id_v(struct catalog_stmt *st, void *out)
{
	*(int64_t *)out = catalog_col_i64(st, 0);
}

int catalog_job_cancels(struct catalog *c, int64_t **ids, size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "SELECT id FROM jobs WHERE lease_node = ? AND cancel = 1"
			 " AND state IN ('queued', 'running') ORDER BY id",
			 "s", c->node);
	int rc = catalog_list_rows(c, st, sizeof(**ids), read_id_v, (void **)ids, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}
