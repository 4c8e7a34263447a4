#include "job.h"
#include "oobtest.h"

#include <pthread.h>
#include <time.h>

/* A run function that records the order jobs ran in and, for ids >= 100,
 * spins until cancelled (like recon polling its cancel flag). */
struct rec {
	pthread_mutex_t lock;
	int64_t order[64];
	int n;
	int concurrent, max_concurrent;
	int stopped_by[256];
	volatile int started[256];
};

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static int run_fn(void *ctx, struct job_ctl *ctl)
{
	struct rec *r = ctx;
	pthread_mutex_lock(&r->lock);
	r->order[r->n++] = ctl->id;
	if (++r->concurrent > r->max_concurrent)
		r->max_concurrent = r->concurrent;
	pthread_mutex_unlock(&r->lock);
	r->started[ctl->id] = 1;
	if (ctl->id >= 100) {
		for (uint64_t i = 0; !ctl->cancel; i++) {
			job_ctl_progress(ctl, i, 1000, i * 10);
			sleep_ms(1);
		}
		r->stopped_by[ctl->id] = ctl->cancel;
	} else {
		sleep_ms(5);
	}
	pthread_mutex_lock(&r->lock);
	r->concurrent--;
	pthread_mutex_unlock(&r->lock);
	return ctl->cancel ? -ECANCELED : 0;
}

static void wait_started(struct rec *r, int64_t id)
{
	for (int i = 0; i < 5000 && !r->started[id]; i++)
		sleep_ms(1);
}

static void fifo_with_one_worker(void)
{
	static struct rec r = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct job_pool *p = job_pool_new(1, run_fn, &r, NULL);
	CHECK(p != NULL);
	for (int64_t id = 1; id <= 20; id++)
		CHECK_EQ(job_pool_submit(p, id), 0);
	job_pool_wait_idle(p);
	CHECK_EQ(r.n, 20);
	for (int i = 0; i < 20; i++)
		CHECK_EQ(r.order[i], i + 1);
	CHECK_EQ(r.max_concurrent, 1);
	job_pool_free(p);
}

static void workers_run_in_parallel(void)
{
	static struct rec r = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct job_pool *p = job_pool_new(3, run_fn, &r, NULL);
	CHECK(p != NULL);
	CHECK_EQ(job_pool_workers(p), 3);
	for (int64_t id = 100; id < 103; id++)
		CHECK_EQ(job_pool_submit(p, id), 0);
	for (int64_t id = 100; id < 103; id++)
		wait_started(&r, id);
	CHECK_EQ(job_pool_running(p), 3);
	CHECK_EQ(r.max_concurrent, 3);
	CHECK_EQ(job_pool_submit(p, 101), -EEXIST);
	for (int64_t id = 100; id < 103; id++)
		CHECK_EQ(job_pool_cancel(p, id), JOB_CANCELLED_RUNNING);
	job_pool_wait_idle(p);
	for (int64_t id = 100; id < 103; id++)
		CHECK_EQ(r.stopped_by[id], JOB_STOP_CANCEL);
	job_pool_free(p);
}

static void cancel_queued_and_progress(void)
{
	static struct rec r = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct job_pool *p = job_pool_new(1, run_fn, &r, NULL);
	CHECK(p != NULL);
	CHECK_EQ(job_pool_submit(p, 110), 0); /* occupies the only worker */
	wait_started(&r, 110);
	CHECK_EQ(job_pool_submit(p, 1), 0);
	CHECK_EQ(job_pool_submit(p, 2), 0);
	CHECK_EQ(job_pool_submit(p, 3), 0);
	CHECK_EQ(job_pool_queue_len(p), 3);
	struct job_progress pr;
	CHECK_EQ(job_pool_progress(p, 3, &pr), 0);
	CHECK_EQ(pr.running, 0);
	CHECK_EQ(pr.position, 2);
	sleep_ms(20);
	CHECK_EQ(job_pool_progress(p, 110, &pr), 0);
	CHECK_EQ(pr.running, 1);
	CHECK(pr.insns > 0 && pr.insns == pr.bytes * 10 && pr.total == 1000);
	CHECK_EQ(job_pool_cancel(p, 2), JOB_CANCELLED_QUEUED);
	CHECK_EQ(job_pool_cancel(p, 2), -ENOENT);
	CHECK_EQ(job_pool_progress(p, 2, &pr), -ENOENT);
	CHECK_EQ(job_pool_cancel(p, 110), JOB_CANCELLED_RUNNING);
	job_pool_wait_idle(p);
	CHECK_EQ(r.n, 3);
	CHECK(r.order[0] == 110 && r.order[1] == 1 && r.order[2] == 3);
	job_pool_free(p);
}

static void shutdown_interrupts_running_jobs(void)
{
	static struct rec r = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct job_pool *p = job_pool_new(2, run_fn, &r, NULL);
	CHECK(p != NULL);
	CHECK_EQ(job_pool_submit(p, 120), 0);
	CHECK_EQ(job_pool_submit(p, 121), 0);
	CHECK_EQ(job_pool_submit(p, 5), 0); /* still queued at shutdown */
	wait_started(&r, 120);
	wait_started(&r, 121);
	job_pool_free(p);
	CHECK_EQ(r.stopped_by[120], JOB_STOP_SHUTDOWN);
	CHECK_EQ(r.stopped_by[121], JOB_STOP_SHUTDOWN);
	CHECK_EQ(r.started[5], 0);
}

/* A writer publishing (i, 2i, 3i) as fast as it can: every snapshot read
 * while it runs must be one of its triples, never a mix of two. */
struct hammer {
	struct job_ctl ctl;
	atomic_int done;
};

static void *hammer_fn(void *arg)
{
	struct hammer *h = arg;
	for (uint64_t i = 1; i <= 2000000; i++)
		job_ctl_progress(&h->ctl, i, 2 * i, 3 * i);
	atomic_store(&h->done, 1);
	return NULL;
}

static void progress_is_one_snapshot(void)
{
	static struct hammer h;
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, hammer_fn, &h), 0);
	unsigned long reads = 0, torn = 0;
	uint64_t last = 0;
	while (!atomic_load(&h.done)) {
		struct job_progress pr;
		if (job_ctl_read_progress(&h.ctl, 1000, &pr) < 0)
			continue;
		reads++;
		torn += pr.total != 2 * pr.bytes || pr.insns != 3 * pr.bytes || pr.bytes < last;
		last = pr.bytes;
	}
	pthread_join(t, NULL);
	CHECK(reads > 0);
	CHECK_EQ(torn, 0);
	struct job_progress pr;
	CHECK_EQ(job_ctl_read_progress(&h.ctl, 1, &pr), 0);
	CHECK(pr.bytes == 2000000 && pr.total == 4000000 && pr.insns == 6000000);
	/* A writer that died mid-update (odd seq) is given up on, not waited for. */
	atomic_fetch_add(&h.ctl.seq, 1);
	pr.bytes = 7;
	CHECK_EQ(job_ctl_read_progress(&h.ctl, 3, &pr), -EAGAIN);
	CHECK_EQ(pr.bytes, 7);
}

int main(void)
{
	OOBTEST_BEGIN("test_job");
	RUN(fifo_with_one_worker);
	RUN(workers_run_in_parallel);
	RUN(cancel_queued_and_progress);
	RUN(shutdown_interrupts_running_jobs);
	RUN(progress_is_one_snapshot);
	return OOBTEST_END();
}
