/*
 * api_events: a finished job's stored result, and the stack events of its
 * run for the views that keep time (evented exports, the timeline, window
 * flame graphs).
 *
 * The stored result does not keep the order of frame opens and closes: the
 * first request that needs it reconstructs the job's trace again with the
 * same inputs and options, recording the stack events (evlog.h), and keeps
 * the log and the profile of that run beside the result
 * (results/<id>/events.evl, events-profile.json) for the next requests.
 * Those re-runs are serialized (one at a time in the server), block only the
 * requesting connection, and record at most API_EXPORT_MAX_EVENTS events. A
 * partial result (a stream) is re-run on every request, never cached.
 *
 * Thread-safety: any request thread.
 */
#ifndef OOB_API_EVENTS_H
#define OOB_API_EVENTS_H

#include "api_routes.h"
#include "catalog.h"
#include "recon/evlog.h"
#include "profile/profile.h"
#include "result.h"

#define API_EXPORT_MAX_EVENTS 200000000ull

/* The job's loaded result and its catalog row, or NULL with -EBUSY (409)
 * saying why there is none (queued, running, failed). Release the reference
 * with api_cache_put. */
struct api_cache_ref *api_job_result(struct api_ctx *c, int64_t id, struct catalog_result *row,
				     const struct result **res, struct oob_err *e);

/* A profile of its own (processes included) from a stored result. */
struct profile *api_profile_from_result(const struct result *res, struct oob_err *e);

/* The stack events of job id and the profile of the run that recorded them
 * (the caller frees both): kept ones, or a new re-run. */
int api_job_events(struct api_ctx *c, const struct catalog_result *row, int64_t id, int partial,
		   struct evlog **log, struct profile **p, struct oob_err *e);

#endif
