/*
 * job: the pool of worker threads that runs reconstruction jobs.
 *
 * DESIGN (modelled on Redis' bio.c)
 * ---------------------------------
 * - A fixed number of worker threads, started by job_pool_new and joined by
 *   job_pool_free. No thread is ever created per job.
 * - One FIFO queue of job ids under one mutex and condition variable. Jobs run
 *   in submission order; with N workers, up to N run at once. The queue holds
 *   ids only: the state of record is in the catalog, so the pool can be
 *   rebuilt from it after a crash (catalog_job_recover, then submit each id).
 * - The pool does not know what a job does: it calls the run function given
 *   at creation with a struct job_ctl, through which the job reads its
 *   cancellation flag and publishes its progress (lock-free atomics, read by
 *   the HTTP threads at any time, also on a page shared with a child process:
 *   see jobproc.c). The run function records the outcome
 *   itself (catalog rows, result files); its return value is only logged.
 * - Cancellation: a queued job is removed from the queue at once; a running
 *   job has ctl->cancel set and stops at its next poll (recon polls it with
 *   its progress calls). Shutdown sets cancel to JOB_STOP_SHUTDOWN on every
 *   running job, so the run function can leave it to be re-queued at the next
 *   start instead of marking it cancelled.
 *
 * Thread-safety: every job_pool_* function may be called from any thread,
 * except job_pool_free (once, when no other call is in progress).
 */
#ifndef OOB_JOB_H
#define OOB_JOB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

enum { JOB_STOP_CANCEL = 1, JOB_STOP_SHUTDOWN = 2 };

/* A job_ctl may live in memory shared between processes (jobproc.c): its
 * atomics must not hide a lock. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
	       "job_ctl's atomics work across processes");

struct job_ctl {
	int64_t id;
	/* 0, JOB_STOP_CANCEL or JOB_STOP_SHUTDOWN: written by any thread, polled
	 * by the job (a relaxed load is enough: it only asks it to stop). */
	atomic_int cancel;
	/* Progress: written by the job with job_ctl_progress, read as one
	 * snapshot with job_ctl_read_progress (a seqlock, see job.c). */
	atomic_uint seq;
	atomic_ullong bytes, total, insns;
};

typedef int (*job_run_fn)(void *ctx, struct job_ctl *ctl);

struct job_progress {
	int running;	 /* 1 running, 0 queued */
	size_t position; /* queued: jobs ahead of it */
	uint64_t bytes, total, insns;
};

struct job_pool;

/* Starts nworkers threads (>= 1). NULL + err if a thread cannot start. */
struct job_pool *job_pool_new(unsigned nworkers, job_run_fn run, void *ctx, struct oob_err *err);
/* Cancels nothing: waits for the running jobs after flagging them
 * JOB_STOP_SHUTDOWN, drops the queue, joins the threads. NULL is fine. */
void job_pool_free(struct job_pool *p);

/* Appends id to the queue. -EEXIST if it is already queued or running,
 * -ESHUTDOWN once job_pool_free has begun. */
int job_pool_submit(struct job_pool *p, int64_t id);

enum { JOB_CANCELLED_QUEUED = 1, JOB_CANCELLED_RUNNING = 2 };
/* Returns JOB_CANCELLED_QUEUED (removed, will never run), JOB_CANCELLED_RUNNING
 * (flagged; the run function will see it), or -ENOENT (not in the pool). */
int job_pool_cancel(struct job_pool *p, int64_t id);

/* Progress of a queued or running job; -ENOENT if the pool does not hold it. */
int job_pool_progress(struct job_pool *p, int64_t id, struct job_progress *out);

size_t job_pool_queue_len(struct job_pool *p);
unsigned job_pool_running(struct job_pool *p);
unsigned job_pool_workers(const struct job_pool *p);
/* Blocks until the queue is empty and no job runs (tests, shutdown). */
void job_pool_wait_idle(struct job_pool *p);

/* For run functions: publish progress. */
void job_ctl_progress(struct job_ctl *c, uint64_t bytes, uint64_t total, uint64_t insns);
/* Reads bytes, total and insns of one job_ctl_progress call. -EAGAIN (out
 * unchanged) if an update stayed in progress through `tries` attempts: its
 * writer died mid-update (a child process killed), or is very slow. */
int job_ctl_read_progress(const struct job_ctl *c, unsigned tries, struct job_progress *out);

#endif
