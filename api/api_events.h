/*
 * api_events: a finished job's stored result, and the stack events of its
 * run for the views that keep time (evented exports, the timeline, window
 * flame graphs).
 *
 * The stored result does not keep the order of frame opens and closes; the
 * worker recorded them as the job ran (results/<id>/events.evl, named by the
 * result row; its frame ids are those of the stored profile). Requests only
 * read those files: none runs the reconstruction or waits for another.
 * Results without a log answer 409: a snapshot of a stream still arriving,
 * or a job of an oobprofd that kept none (it must be submitted again).
 *
 * Thread-safety: any request thread.
 */
#ifndef OOB_API_EVENTS_H
#define OOB_API_EVENTS_H

#include "api_routes.h"
#include "catalog.h"
#include "recon/evidx.h"
#include "timeline/timeline_lod.h"
#include "recon/evlog.h"
#include "profile/profile.h"
#include "result.h"

/* The job's loaded result and its catalog row, or NULL with -EBUSY (409)
 * saying why there is none (queued, running, failed). Release the reference
 * with api_cache_put. */
struct api_cache_ref *api_job_result(struct api_ctx *c, int64_t id, struct catalog_result *row,
				     const struct result **res, struct oob_err *e);

/* The stack events of job id (row from api_job_result; free with
 * evlog_free), or NULL and -EBUSY (409) saying why the result has none,
 * -EIO for a damaged log. */
struct evlog *api_job_events(struct api_ctx *c, const struct catalog_result *row, int64_t id,
			     struct oob_err *e);

/* The index of that log (results/<id>/events.idx; free with evidx_free), or
 * NULL: a job of an oobprofd that wrote none, or an index that does not open
 * (logged): the views then replay the whole log. */
struct evidx *api_job_index(struct api_ctx *c, int64_t id);

/* The timeline's summaries of that log (results/<id>/events.lod; free with
 * timeline_lod_free), or NULL: none written, or a file that does not open
 * (logged). */
struct timeline_lod *api_job_lod(struct api_ctx *c, int64_t id);

#endif
