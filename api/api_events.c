#include "api_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_cache.h"
#include "recon/evlog.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"
#include "result.h"

/* ---- the stored result ---- */

struct api_cache_ref *api_job_result(struct api_ctx *c, int64_t id, struct catalog_result *row,
				     const struct result **res, struct oob_err *e)
{
	char abs[1400];
	struct catalog_job *j;
	if (catalog_result_get(c->cat, id, row, NULL) == 0) {
		store_abspath(c->store, row->profile, abs, sizeof(abs));
		return api_cache_get(c->cache, id, abs, res, e);
	}
	j = oob_xmalloc(sizeof(*j));
	if (catalog_job_get(c->cat, id, j, e) == 0) {
		if (j->state == CATALOG_JOB_FAILED)
			oob_err_set(e, -EBUSY, "job %lld failed: %s", (long long)id, j->error);
		else
			oob_err_set(e, -EBUSY, "job %lld is %s: no result yet", (long long)id,
				    catalog_job_state_name(j->state));
	}
	free(j);
	return NULL;
}

/* ---- the stack events the job kept ---- */

/* Why a result has no event log: a snapshot of a stream still arriving, or
 * a job run by an oobprofd that kept none. Re-running is the worker's job. */
static int no_events(const struct catalog_result *row, int64_t id, struct oob_err *e)
{
	if (row->partial)
		return oob_err_set(e, -EBUSY,
				   "job %lld: its result is a snapshot of a stream still arriving; "
				   "stack events come with the final result",
				   (long long)id);
	return oob_err_set(e, -EBUSY,
			   "job %lld predates stack events: submit it again (POST /api/v1/jobs "
			   "with its spec) for its timeline, window flame graphs and evented "
			   "exports",
			   (long long)id);
}

struct evlog *api_job_events(struct api_ctx *c, const struct catalog_result *row, int64_t id,
			     struct oob_err *e)
{
	char abs[1400];
	struct oob_err why = {0};
	if (!row->events[0]) {
		no_events(row, id, e);
		return NULL;
	}
	store_abspath(c->store, row->events, abs, sizeof(abs));
	struct evlog *log = evlog_open(abs, &why);
	if (!log)
		oob_err_set(e, why.code == -ENOENT ? -ENOENT : -EIO,
			    "job %lld: its stack events are unreadable (%s): submit the job again",
			    (long long)id, why.msg);
	return log;
}

struct evidx *api_job_index(struct api_ctx *c, int64_t id)
{
	char rel[128], abs[1400];
	struct oob_err e = {0};
	result_path(id, RESULT_INDEX, rel, sizeof(rel));
	store_abspath(c->store, rel, abs, sizeof(abs));
	struct evidx *ix = evidx_open(abs, &e);
	if (!ix && e.code != -ENOENT)
		OOB_WARN("job %lld: %s: replaying its whole event log", (long long)id, e.msg);
	return ix;
}

struct timeline_lod *api_job_lod(struct api_ctx *c, int64_t id)
{
	char rel[128], abs[1400];
	struct oob_err e = {0};
	result_path(id, RESULT_LOD, rel, sizeof(rel));
	store_abspath(c->store, rel, abs, sizeof(abs));
	struct timeline_lod *l = timeline_lod_open(abs, &e);
	if (!l && e.code != -ENOENT)
		OOB_WARN("job %lld: %s: coarse timelines replay its event log", (long long)id,
			 e.msg);
	return l;
}
