/*
 * jobproc: every job in a process of its own, so that a job that crashes (a
 * bug that some input reaches) fails that job, never the server.
 *
 * jobproc_run is the job pool's run function in oobprofd. It starts the
 * running executable again (/proc/self/exe) as
 *
 *   oobprofd --run-job ID --data DIR --catalog WHERE --log-level N
 *
 * and waits for it. That child (jobproc_child_main) opens the store and the
 * catalog itself and runs worker_run. Parent and child share one page, a
 * memfd that is the child's fd 3, holding a struct job_ctl: the child writes
 * the job's progress there and polls its cancel flag; the parent relays both
 * to and from the pool's job_ctl. Streams: the child asks the catalog whether
 * the upload is still open (the upload registry is the server's memory).
 *
 * A child killed by a signal is a crash (catalog_job_crashed): the job runs
 * once more, and fails with the signal named at the second crash. A child
 * that exits with a status without ending its job fails the job. The child
 * dies with the server (PR_SET_PDEATHSIG); the catalog then counts the crash
 * at the next start.
 *
 * Thread-safety: jobproc_run runs on the pool's threads, any number at once.
 */
#ifndef OOB_JOBPROC_H
#define OOB_JOBPROC_H

#include "job.h"
#include "util/oob_log.h"
#include "worker.h"

struct jobproc_env {
	struct worker_env *worker; /* the server's: catalog, store, uploads */
	const char *catalog;	   /* what the child opens (catalog_open's where) */
	enum oob_log_level log_level;
	uint64_t job_memory; /* resident bytes a job may use (0: no limit) */
};

/* The job_run_fn: ctx is a struct jobproc_env. Returns 0 when the job ended
 * (whatever its outcome), a negative errno when its process could not start
 * or its end could not be recorded. */
int jobproc_run(void *ctx, struct job_ctl *ctl);

/* Whether argv asks for a job's process (argv[1] is "--run-job"). */
int jobproc_is_child(int argc, char **argv);

/* main() of a job's process; returns the process' exit status. */
int jobproc_child_main(int argc, char **argv);

#endif
