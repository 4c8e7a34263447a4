/* catalog_jobs: the jobs table, the binaries of each job, the job state
 * machine, crash counting and recovery, and the results of jobs. */
#include "catalog_impl.h"

#include <stdio.h>
#include <string.h>

#include "util/oob_log.h"

#define JOB_COLS                                                                                   \
	"j.id, j.trace_id, j.events_id, j.spec, j.state, j.error_code, j.error, j.bytes,"          \
	" j.total_bytes, j.insns, j.created, j.started, j.finished, j.runs,"                       \
	" CASE WHEN r.job_id IS NULL THEN 0 ELSE 1 END, COALESCE(r.partial, 0), j.crashes"
#define JOB_FROM " FROM jobs j LEFT JOIN results r ON r.job_id = j.id"

static void read_job_v(struct catalog_stmt *st, void *out)
{
	struct catalog_job *j = out;
	memset(j, 0, sizeof(*j));
	j->id = catalog_col_i64(st, 0);
	j->trace_id = catalog_col_i64(st, 1);
	j->events_id = catalog_col_i64(st, 2);
	catalog_col_text(st, 3, j->spec, sizeof(j->spec));
	j->state = CATALOG_JOB_FAILED; /* no other text passes the CHECK constraint */
	catalog_job_state_parse(catalog_col_str(st, 4), &j->state);
	j->error_code = catalog_col_int(st, 5);
	catalog_col_text(st, 6, j->error, sizeof(j->error));
	j->bytes = (uint64_t)catalog_col_i64(st, 7);
	j->total_bytes = (uint64_t)catalog_col_i64(st, 8);
	j->insns = (uint64_t)catalog_col_i64(st, 9);
	j->created = catalog_col_i64(st, 10);
	j->started = catalog_col_i64(st, 11);
	j->finished = catalog_col_i64(st, 12);
	j->runs = (unsigned)catalog_col_int(st, 13);
	j->has_result = catalog_col_int(st, 14);
	j->partial = catalog_col_int(st, 15);
	j->crashes = (unsigned)catalog_col_int(st, 16);
}

static int job_add_locked(struct catalog *c, struct catalog_job *j,
			  const struct catalog_job_binary *bins, size_t nbins, struct oob_err *err)
{
	j->created = catalog_now_s();
	j->state = CATALOG_JOB_QUEUED;
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "INSERT INTO jobs (trace_id, events_id, spec, state, created)"
			 " VALUES (?,?,?,?,?)",
			 "inssi", j->trace_id, j->events_id, j->spec,
			 catalog_job_state_name(j->state), j->created);
	int rc = catalog_run(c, st, err);
	if (rc < 0)
		return oob_err_prefix(err, "job of trace %lld", (long long)j->trace_id);
	j->id = catalog_last_id(c);
	for (size_t i = 0; i < nbins; i++) {
		st = catalog_prep(
		    c, err,
		    "INSERT INTO job_binaries (job_id, pos, binary_id, base) VALUES (?,?,?,?)",
		    "iiiu", j->id, (int64_t)i, bins[i].id, bins[i].base);
		if ((rc = catalog_run(c, st, err)) < 0)
			return oob_err_prefix(err, "binary %lld", (long long)bins[i].id);
	}
	return 0;
}

int catalog_job_add(struct catalog *c, struct catalog_job *j, const struct catalog_job_binary *bins,
		    size_t nbins, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_begin(c, err);
	if (rc == 0)
		rc = job_add_locked(c, j, bins, nbins, err);
	if (rc == 0)
		rc = catalog_exec_sql(c, "COMMIT", err);
	if (rc < 0)
		catalog_exec_sql(c, "ROLLBACK", NULL);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_get(struct catalog *c, int64_t id, struct catalog_job *out, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err, "SELECT " JOB_COLS JOB_FROM " WHERE j.id = ?", "i", id);
	int rc = catalog_get_one(c, st, read_job_v, out, "job", id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_list(struct catalog *c, int64_t after, size_t limit, struct catalog_job **out,
		     size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(
	    c, err, "SELECT " JOB_COLS JOB_FROM " WHERE j.id > ? ORDER BY j.id LIMIT ?", "ii",
	    after, (int64_t)limit);
	int rc = catalog_list_rows(c, st, sizeof(**out), read_job_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_job_binary_v(struct catalog_stmt *st, void *out)
{
	struct catalog_job_binary *b = out;
	b->id = catalog_col_i64(st, 0);
	b->base = (uint64_t)catalog_col_i64(st, 1);
}

int catalog_job_binaries(struct catalog *c, int64_t id, struct catalog_job_binary **out, size_t *n,
			 struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "SELECT binary_id, base FROM job_binaries WHERE job_id = ?"
			 " ORDER BY pos",
			 "i", id);
	int rc = catalog_list_rows(c, st, sizeof(**out), read_job_binary_v, (void **)out, n, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* -ENOENT or -EBUSY after an UPDATE ... WHERE id = ? AND state = ? that
 * changed nothing. */
static int why_unchanged(struct catalog *c, int64_t id, const char *from, struct oob_err *err)
{
	struct catalog_stmt *st =
	    catalog_prep(c, err, "SELECT state FROM jobs WHERE id = ?", "i", id);
	if (!st)
		return err ? err->code : -EIO;
	int rc;
	if (catalog_step(st) == 1)
		rc = oob_err_set(err, -EBUSY, "job %lld is %s, not %s", (long long)id,
				 catalog_col_str(st, 0), from);
	else
		rc = oob_err_set(err, -ENOENT, "no job with id %lld", (long long)id);
	catalog_finalize(st);
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
	int64_t fence = from == CATALOG_JOB_RUNNING && c->fence_id == id ? c->fence_runs : 0;
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "UPDATE jobs SET state = ?,"
			 " started = CASE WHEN ? = 1 THEN ? ELSE started END,"
			 " finished = CASE WHEN ? = 1 THEN ? ELSE finished END,"
			 " runs = runs + ?"
			 " WHERE id = ? AND state = ? AND (? = 0 OR runs = ?)",
			 "siiiiiisii", sto, (int64_t)starting, catalog_now_s(), (int64_t)ending,
			 catalog_now_s(), (int64_t)starting, id, sfrom, fence, fence);
	int rc = catalog_run(c, st, err);
	if (rc == 0 && c->changes == 0 && fence)
		return oob_err_set(err, -EBUSY,
				   "job %lld was run again elsewhere after this run's lease "
				   "lapsed: this run's end is not recorded",
				   (long long)id);
	if (rc == 0 && c->changes == 0)
		return why_unchanged(c, id, sfrom, err);
	if (rc == 0 && starting) {
		st = catalog_prep(c, err, "SELECT runs FROM jobs WHERE id = ?", "i", id);
		c->fence_id = st && catalog_step(st) == 1 ? id : 0;
		c->fence_runs = c->fence_id ? catalog_col_i64(st, 0) : 0;
		catalog_finalize(st);
	}
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
	struct catalog_stmt *st = catalog_prep(
	    c, err, "UPDATE jobs SET bytes = ?, total_bytes = ?, insns = ? WHERE id = ?", "uuui",
	    bytes, total, insns, id);
	int rc = catalog_run(c, st, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int result_put_locked(struct catalog *c, const struct catalog_result *r, struct oob_err *err)
{
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "INSERT INTO results (job_id, profile, folded, partial,"
			 " stats, created, events, events_bytes) VALUES (?,?,?,?,?,?,?,?)"
			 " ON CONFLICT (job_id) DO UPDATE SET profile = excluded.profile,"
			 " folded = excluded.folded, partial = excluded.partial,"
			 " stats = excluded.stats, created = excluded.created,"
			 " events = excluded.events, events_bytes = excluded.events_bytes",
			 "issisisu", r->job_id, r->profile, r->folded, (int64_t)r->partial,
			 r->stats, catalog_now_s(), r->events, r->events_bytes);
	return catalog_run(c, st, err);
}

static int finish_locked(struct catalog *c, int64_t id, enum catalog_job_state state, int code,
			 const char *msg, const struct catalog_result *r, struct oob_err *err)
{
	int rc = transition_locked(c, id, CATALOG_JOB_RUNNING, state, err);
	if (rc < 0)
		return rc;
	struct catalog_stmt *st =
	    catalog_prep(c, err, "UPDATE jobs SET error_code = ?, error = ? WHERE id = ?", "isi",
			 (int64_t)code, msg ? msg : "", id);
	if ((rc = catalog_run(c, st, err)) < 0)
		return rc;
	return r ? result_put_locked(c, r, err) : 0;
}

int catalog_job_finish(struct catalog *c, int64_t id, enum catalog_job_state state, int code,
		       const char *msg, const struct catalog_result *r, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = catalog_begin(c, err);
	if (rc == 0)
		rc = finish_locked(c, id, state, code, msg, r, err);
	if (rc == 0)
		rc = catalog_exec_sql(c, "COMMIT", err);
	if (rc < 0)
		catalog_exec_sql(c, "ROLLBACK", NULL);
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

static void read_result_v(struct catalog_stmt *st, void *out)
{
	struct catalog_result *r = out;
	memset(r, 0, sizeof(*r));
	r->job_id = catalog_col_i64(st, 0);
	catalog_col_text(st, 1, r->profile, sizeof(r->profile));
	catalog_col_text(st, 2, r->folded, sizeof(r->folded));
	r->partial = catalog_col_int(st, 3);
	catalog_col_text(st, 4, r->stats, sizeof(r->stats));
	r->created = catalog_col_i64(st, 5);
	catalog_col_text(st, 6, r->events, sizeof(r->events));
	r->events_bytes = (uint64_t)catalog_col_i64(st, 7);
}

int catalog_result_get(struct catalog *c, int64_t job_id, struct catalog_result *out,
		       struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st =
	    catalog_prep(c, err,
			 "SELECT job_id, profile, folded, partial, stats, created, events,"
			 " events_bytes FROM results WHERE job_id = ?",
			 "i", job_id);
	int rc = catalog_get_one(c, st, read_result_v, out, "result for job", job_id, err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_delete(struct catalog *c, int64_t id, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	struct catalog_stmt *st = catalog_prep(c, err,
					       "DELETE FROM jobs WHERE id = ?"
					       " AND state NOT IN ('queued', 'running')",
					       "i", id);
	int rc = catalog_run(c, st, err);
	if (rc == 0 && c->changes == 0)
		rc = why_unchanged(c, id, "finished", err);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static void read_id_v(struct catalog_stmt *st, void *out)
{
	*(int64_t *)out = catalog_col_i64(st, 0);
}

/* The running jobs a crash count applies to: one id (?1, 0 = any), those
 * leased by one node (?2, '' = any), those whose lease ran out before ?3
 * (0 = any). */
#define CRASH_WHERE                                                                                \
	" WHERE state = 'running' AND (?1 = 0 OR id = ?1) AND (?2 = '' OR lease_node = ?2)"        \
	" AND (?3 = 0 OR (lease_node <> '' AND lease_expires < ?3))"

int catalog_count_crash_locked(struct catalog *c, int64_t id, const char *node, int64_t before,
			       const char *why, struct oob_err *err)
{
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "the job crashed its process %d times (last: %s); it is not run again. "
		 "This is a bug in oobprof: the inputs are kept, please report it",
		 CATALOG_MAX_CRASHES, why);
	int rc =
	    catalog_run(c,
			catalog_prep(c, err, "UPDATE jobs SET crashes = crashes + 1" CRASH_WHERE,
				     "isi", id, node, before),
			err);
	int counted = rc == 0 ? (int)c->changes : 0;
	if (rc == 0)
		rc = catalog_run(c,
				 catalog_prep(c, err,
					      "UPDATE jobs SET state = 'failed', finished = ?4,"
					      " error_code = ?5, error = ?6" CRASH_WHERE
					      " AND crashes >= ?7",
					      "isiiisi", id, node, before, catalog_now_s(),
					      (int64_t)-ECHILD, msg, (int64_t)CATALOG_MAX_CRASHES),
				 err);
	if (rc == 0 && c->changes > 0)
		OOB_WARN("catalog: %d job(s) failed after %d crashes", (int)c->changes,
			 CATALOG_MAX_CRASHES);
	/* Queued again with no lease: any node may claim it. */
	if (rc == 0)
		rc = catalog_run(c,
				 catalog_prep(c, err,
					      "UPDATE jobs SET state = 'queued', lease_node = '',"
					      " lease_expires = 0" CRASH_WHERE,
					      "isi", id, node, before),
				 err);
	if (rc == 0 && c->changes > 0)
		OOB_WARN("catalog: %d interrupted job(s) queued again", (int)c->changes);
	return rc < 0 ? rc : counted;
}

static int crash_txn(struct catalog *c, int64_t id, const char *why, struct oob_err *err)
{
	int rc = catalog_begin(c, err), counted = 0;
	/* A job's process can die before it marks its job running (it was
	 * killed while starting): that is its crash too, not a job to forget
	 * in "queued" (the pool has already let it go). */
	if (rc == 0 && id)
		rc = catalog_run(
		    c,
		    catalog_prep(
			c, err,
			"UPDATE jobs SET state = 'running' WHERE id = ? AND state = 'queued'", "i",
			id),
		    err);
	if (rc == 0)
		rc = counted = catalog_count_crash_locked(c, id, c->node, 0, why, err);
	if (rc >= 0)
		rc = catalog_exec_sql(c, "COMMIT", err);
	if (rc < 0)
		catalog_exec_sql(c, "ROLLBACK", NULL);
	return rc < 0 ? rc : counted;
}

int catalog_job_crashed(struct catalog *c, int64_t id, const char *why, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = crash_txn(c, id, why, err);
	if (rc > 0) {
		struct catalog_stmt *st = catalog_prep(
		    c, err,
		    "SELECT CASE WHEN state = 'queued' THEN 1 ELSE 0 END FROM jobs WHERE id = ?",
		    "i", id);
		rc = st && catalog_step(st) == 1 ? catalog_col_int(st, 0) : 0;
		catalog_finalize(st);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int catalog_job_recover(struct catalog *c, int64_t **ids, size_t *n, struct oob_err *err)
{
	pthread_mutex_lock(&c->lock);
	int rc = crash_txn(c, 0, "the server stopped without a shutdown", err);
	struct catalog_stmt *st;
	if (rc >= 0) {
		st = catalog_prep(c, err, "SELECT id FROM jobs WHERE state = 'queued' ORDER BY id",
				  "");
		rc = catalog_list_rows(c, st, sizeof(**ids), read_id_v, (void **)ids, n, err);
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
	struct catalog_stmt *st =
	    catalog_prep(c, NULL, "SELECT COUNT(*) FROM jobs WHERE state = ?", "s", name);
	if (st && catalog_step(st) == 1)
		n = catalog_col_i64(st, 0);
	catalog_finalize(st);
	pthread_mutex_unlock(&c->lock);
	return n;
}
