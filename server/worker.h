/*
 * worker: what a job does, as the job pool's run function (job_run_fn).
 *
 * For job <id>: moves it queued -> running in the catalog (a job cancelled
 * meanwhile is skipped), reads its spec (the normalized JSON the API
 * accepted), resolves trace, events and binaries to files of the store, runs
 * recon_run with progress and cancellation wired to the pool's job_ctl, and
 * writes the results atomically (paths from result_path, result.h):
 *
 *   DATA/results/<id>/profile.json   the profile (see result.h)
 *   DATA/results/<id>/folded.txt     folded stacks in the job's metric
 *   DATA/results/<id>/events.evl     the run's stack events (evlog.h), for
 *                                    the timeline, window flame graphs and
 *                                    evented exports: the API never runs
 *                                    the reconstruction itself
 *   DATA/results/<id>/go.json        the Go clock model (with a go_trace)
 *
 * then ends the job (done | failed | cancelled) in one catalog transaction
 * with its result row (which names the event log and its size). A job
 * stopped by a shutdown goes back to "queued" so that the next start runs it
 * again from the beginning.
 *
 * Binaries are named once, here: a frame names its binary by the name it
 * was uploaded under, the second of two binaries of one name in a job as
 * "<name>.<position>" (libc.so and libc.so.1). Every view of the job (flame
 * graph, folded stacks, exports, timeline) reads the names this run gave.
 *
 * Streamed traces: while the upload is open, the reader waits for more bytes
 * (in_opts.more backed by upload_stream_wait) instead of stopping at the
 * current end. While it follows the stream, the job publishes snapshots: at
 * progress points (every 2^24 instructions, as recon reports progress), the
 * instructions decoded so far are reconstructed again as a separate run and
 * stored as the job's result with partial = true; the final result replaces
 * them when the stream closes. Snapshots keep no stack events (the final run
 * does): until then the time-keeping views answer 409. Snapshots are rate-limited so that they cost
 * at most about a fifth of the job's time.
 *
 * Thread-safety: worker_run runs on the pool's threads, any number at once;
 * the env is shared and read-only.
 */
#ifndef OOB_WORKER_H
#define OOB_WORKER_H

#include "catalog.h"
#include "job.h"
#include "store.h"
#include "upload.h"

struct worker_env {
	struct catalog *cat;
	struct store *store;
	struct upload_registry *uploads; /* NULL in a job's own process: streams
					    are then followed through the catalog */
	uint64_t max_events;		 /* stack events a job keeps; 0: RESULT_MAX_EVENTS */
};

/* The job_run_fn: ctx is a struct worker_env. Returns 0 when the job ended
 * (whatever its outcome), a negative errno when it could not be recorded. */
int worker_run(void *ctx, struct job_ctl *ctl);

#endif
