#include "jobproc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "metrics.h"
#include "store.h"
#include "util/oob_mem.h"

#define CTL_FD	    3
#define POLL_NS	    20000000L /* the parent relays progress and cancel this often */
#define ARG_RUN	    "--run-job"
#define ARG_DATA    "--data"
#define ARG_CATALOG "--catalog"
#define ARG_LEVEL   "--log-level"
#define ARG_EVENTS  "--max-events"

extern char **environ;

/* The page both processes map: the child's job_ctl. */
static struct job_ctl *shared_ctl(int fd)
{
	void *p = mmap(NULL, sizeof(struct job_ctl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int spawn_child(const struct jobproc_env *e, int64_t id, int memfd, pid_t *pid,
		       struct oob_err *err)
{
	char sid[32], level[16], events[32];
	snprintf(sid, sizeof(sid), "%lld", (long long)id);
	snprintf(level, sizeof(level), "%d", (int)e->log_level);
	snprintf(events, sizeof(events), "%llu", (unsigned long long)e->worker->max_events);
	char *argv[] = {"oobprofd",
			ARG_RUN,
			sid,
			ARG_DATA,
			(char *)store_root(e->worker->store),
			ARG_CATALOG,
			(char *)e->catalog,
			ARG_LEVEL,
			level,
			ARG_EVENTS,
			events,
			NULL};
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, memfd, CTL_FD);
	int rc = posix_spawn(pid, "/proc/self/exe", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		return oob_err_set(err, -rc, "job %lld: cannot start its process: %s",
				   (long long)id, strerror(rc));
	return 0;
}

/* Resident bytes of a process (0 if unknown). */
static uint64_t resident_bytes(pid_t pid)
{
	char path[64];
	unsigned long long size = 0, rss = 0;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int n = fscanf(f, "%llu %llu", &size, &rss);
	fclose(f);
	return n == 2 ? (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

/* Waits for the child, relaying progress out and cancellation in. A child
 * killed in the middle of a progress update leaves it unreadable: that
 * relay is skipped (a few tries, not a spin on a dead writer). A child
 * whose resident memory passes the budget is killed; *rss says how much it
 * had then (0 otherwise). RSS, not RLIMIT_AS: a sanitized build reserves
 * terabytes of address space it never touches. */
static int wait_child(pid_t pid, uint64_t budget, struct job_ctl *ctl, struct job_ctl *sh,
		      uint64_t *rss)
{
	int status = 0;
	*rss = 0;
	for (unsigned tick = 0;; tick++) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == 0 && budget && tick % 5 == 0 && !*rss) {
			uint64_t now = resident_bytes(pid);
			if (now > budget) {
				*rss = now;
				kill(pid, SIGKILL);
			}
		}
		int cancel = atomic_load_explicit(&ctl->cancel, memory_order_relaxed);
		if (cancel && !atomic_load_explicit(&sh->cancel, memory_order_relaxed))
			atomic_store_explicit(&sh->cancel, cancel, memory_order_relaxed);
		struct job_progress pr;
		if (job_ctl_read_progress(sh, 100, &pr) == 0)
			job_ctl_progress(ctl, pr.bytes, pr.total, pr.insns);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return 0; /* not ours to reap (cannot happen): treat as ended */
		struct timespec ts = {0, POLL_NS};
		nanosleep(&ts, NULL);
	}
}

/* A job its process did not end (it could not start, or exited with a
 * status before ending it): it fails with why, rather than stay queued
 * where the pool no longer holds it. */
static void fail_unended(struct worker_env *w, int64_t id, int code, const char *msg)
{
	catalog_job_transition(w->cat, id, CATALOG_JOB_QUEUED, CATALOG_JOB_RUNNING, NULL);
	if (catalog_job_finish(w->cat, id, CATALOG_JOB_FAILED, code, msg, NULL, NULL) == 0)
		OOB_WARN("job %lld: %s", (long long)id, msg);
}

/* The scratch folder a killed child could not remove. */
static void remove_scratch(struct worker_env *w, int64_t id)
{
	char scratch[64];
	snprintf(scratch, sizeof(scratch), "tmp/job-%lld", (long long)id);
	store_rmdir(w->store, scratch, NULL);
}

/* After a crash: the scratch folder the child could not remove, and the
 * crash counted. Returns 1 if the job is to run again. */
static int after_crash(struct worker_env *w, int64_t id, int sig)
{
	char why[96];
	snprintf(why, sizeof(why), "signal %d, %s", sig, strsignal(sig));
	OOB_WARN("job %lld: its process was killed by %s", (long long)id, why);
	remove_scratch(w, id);
	struct oob_err err = {0};
	int again = catalog_job_crashed(w->cat, id, why, &err);
	if (again < 0)
		OOB_ERROR("job %lld: cannot record its crash: %s", (long long)id, err.msg);
	return again > 0;
}

static int run_once(const struct jobproc_env *e, struct job_ctl *ctl, struct job_ctl *sh, int memfd,
		    int *again)
{
	struct oob_err err = {0};
	pid_t pid;
	*again = 0;
	memset(sh, 0, sizeof(*sh));
	sh->id = ctl->id;
	int rc = spawn_child(e, ctl->id, memfd, &pid, &err);
	if (rc < 0) {
		OOB_ERROR("%s", err.msg);
		fail_unended(e->worker, ctl->id, -ECHILD, err.msg);
		return rc;
	}
	uint64_t rss;
	int status = wait_child(pid, e->job_memory, ctl, sh, &rss);
	if (rss) {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "the job used %llu MiB of memory, over its budget of %llu MiB "
			 "(--job-memory)",
			 (unsigned long long)(rss >> 20),
			 (unsigned long long)(e->job_memory >> 20));
		remove_scratch(e->worker, ctl->id);
		fail_unended(e->worker, ctl->id, -E2BIG, msg);
	} else if (WIFSIGNALED(status))
		*again = after_crash(e->worker, ctl->id, WTERMSIG(status));
	else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
		char msg[128];
		snprintf(msg, sizeof(msg), "the job's process exited with status %d",
			 WEXITSTATUS(status));
		fail_unended(e->worker, ctl->id, -ECHILD, msg);
	}
	return 0;
}

int jobproc_run(void *ctx, struct job_ctl *ctl)
{
	const struct jobproc_env *e = ctx;
	int memfd = memfd_create("oobprof-job", MFD_CLOEXEC);
	struct job_ctl *sh = NULL;
	if (memfd >= 0 && ftruncate(memfd, sizeof(struct job_ctl)) == 0)
		sh = shared_ctl(memfd);
	int rc = sh ? 0 : -errno, again = 1;
	if (!sh) {
		char msg[160];
		snprintf(msg, sizeof(msg), "no page to share with the job's process: %s",
			 strerror(-rc));
		OOB_ERROR("job %lld: %s", (long long)ctl->id, msg);
		fail_unended(e->worker, ctl->id, -ECHILD, msg);
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rc == 0 && again && !atomic_load_explicit(&ctl->cancel, memory_order_relaxed))
		rc = run_once(e, ctl, sh, memfd, &again);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The instructions the run recorded (the progress page may miss the
	 * last stretch of a short job). */
	struct catalog_job *j = oob_xmalloc(sizeof(*j));
	uint64_t insns = catalog_job_get(e->worker->cat, ctl->id, j, NULL) == 0 ? j->insns : 0;
	free(j);
	metrics_job((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
		    insns);
	if (sh)
		munmap(sh, sizeof(*sh));
	if (memfd >= 0)
		close(memfd);
	return rc;
}

int jobproc_is_child(int argc, char **argv)
{
	return argc > 1 && !strcmp(argv[1], ARG_RUN);
}

static int parse_child_args(int argc, char **argv, int64_t *id, const char **data,
			    const char **catalog, enum oob_log_level *level, uint64_t *events)
{
	if (argc != 11 || strcmp(argv[3], ARG_DATA) || strcmp(argv[5], ARG_CATALOG) ||
	    strcmp(argv[7], ARG_LEVEL) || strcmp(argv[9], ARG_EVENTS))
		return -EINVAL;
	char *end, *end2;
	*id = strtoll(argv[2], &end, 10);
	*events = strtoull(argv[10], &end2, 10);
	if (*end || *id <= 0 || *end2)
		return -EINVAL;
	*data = argv[4];
	*catalog = argv[6];
	*level = (enum oob_log_level)atoi(argv[8]);
	return 0;
}

/* The child's job_ctl is the shared page; it dies with the server. */
static struct job_ctl *child_setup(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		return NULL; /* the server died before the line above */
	signal(SIGPIPE, SIG_IGN);
	return shared_ctl(CTL_FD);
}

int jobproc_child_main(int argc, char **argv)
{
	int64_t id;
	const char *data, *catalog;
	enum oob_log_level level;
	struct worker_env w = {0};
	if (parse_child_args(argc, argv, &id, &data, &catalog, &level, &w.max_events) < 0) {
		fprintf(stderr,
			"oobprofd: usage: oobprofd %s ID %s DIR %s WHERE %s N %s N (the server's "
			"own)\n",
			ARG_RUN, ARG_DATA, ARG_CATALOG, ARG_LEVEL, ARG_EVENTS);
		return 2;
	}
	oob_log_set_level(level);
	struct job_ctl *ctl = child_setup(getppid());
	struct oob_err err = {0};
	int rc = ctl && ctl->id == id ? 0 : oob_err_set(&err, -EINVAL, "no shared job page");
	if (rc == 0 && !(w.store = store_attach(data, &err)))
		rc = err.code;
	if (rc == 0 && !(w.cat = catalog_open(catalog, &err)))
		rc = err.code;
	if (rc == 0)
		rc = worker_run(&w, ctl);
	else
		OOB_ERROR("job %lld: %s", (long long)id, err.msg);
	catalog_close(w.cat);
	store_free(w.store);
	if (ctl)
		munmap(ctl, sizeof(*ctl));
	return rc < 0 ? 1 : 0;
}
