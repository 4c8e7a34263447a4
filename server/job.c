#include "job.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

struct qitem {
	int64_t id;
	struct qitem *next;
};

struct job_pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* signalled when the queue grows or on shutdown */
	pthread_cond_t idle; /* signalled when a job ends */
	struct qitem *head, *tail;
	size_t qlen;
	int stopping;
	unsigned nworkers;
	pthread_t *threads;
	struct job_ctl **running; /* one slot per worker, NULL when idle */
	unsigned nrunning;
	job_run_fn run;
	void *ctx;
};

struct worker_arg {
	struct job_pool *p;
	unsigned slot;
};

static struct job_ctl *find_running(struct job_pool *p, int64_t id)
{
	for (unsigned i = 0; i < p->nworkers; i++)
		if (p->running[i] && p->running[i]->id == id)
			return p->running[i];
	return NULL;
}

/* Pops the oldest id; the caller holds the lock and knows the queue is not
 * empty. */
static int64_t pop(struct job_pool *p)
{
	struct qitem *it = p->head;
	int64_t id = it->id;
	p->head = it->next;
	if (!p->head)
		p->tail = NULL;
	p->qlen--;
	free(it);
	return id;
}

static void run_one(struct job_pool *p, unsigned slot, int64_t id)
{
	struct job_ctl ctl = {.id = id};
	p->running[slot] = &ctl;
	p->nrunning++;
	pthread_mutex_unlock(&p->lock);

	int rc = p->run(p->ctx, &ctl);
	if (rc < 0)
		OOB_DEBUG("job %lld: ended with %d", (long long)id, rc);

	pthread_mutex_lock(&p->lock);
	p->running[slot] = NULL;
	p->nrunning--;
	pthread_cond_broadcast(&p->idle);
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct job_pool *p = wa->p;
	unsigned slot = wa->slot;
	free(wa);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stopping)
			break;
		run_one(p, slot, pop(p));
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct job_pool *job_pool_new(unsigned nworkers, job_run_fn run, void *ctx, struct oob_err *err)
{
	struct job_pool *p = oob_xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->run = run;
	p->ctx = ctx;
	p->nworkers = nworkers ? nworkers : 1;
	p->threads = oob_xcalloc(p->nworkers, sizeof(*p->threads));
	p->running = oob_xcalloc(p->nworkers, sizeof(*p->running));
	for (unsigned i = 0; i < p->nworkers; i++) {
		struct worker_arg *wa = oob_xmalloc(sizeof(*wa));
		wa->p = p;
		wa->slot = i;
		int rc = pthread_create(&p->threads[i], NULL, worker_main, wa);
		if (rc != 0) {
			free(wa);
			oob_err_set(err, -rc, "job pool: cannot start worker %u: %s", i,
				    strerror(rc));
			p->nworkers = i;
			job_pool_free(p);
			return NULL;
		}
	}
	return p;
}

void job_pool_free(struct job_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	for (unsigned i = 0; i < p->nworkers; i++)
		if (p->running[i])
			atomic_store(&p->running[i]->cancel, JOB_STOP_SHUTDOWN);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nworkers; i++)
		pthread_join(p->threads[i], NULL);
	while (p->head)
		pop(p);
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->idle);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p->running);
	free(p);
}

static int queued(struct job_pool *p, int64_t id, size_t *pos)
{
	size_t i = 0;
	for (struct qitem *it = p->head; it; it = it->next, i++) {
		if (it->id == id) {
			if (pos)
				*pos = i;
			return 1;
		}
	}
	return 0;
}

int job_pool_submit(struct job_pool *p, int64_t id)
{
	int rc = 0;
	pthread_mutex_lock(&p->lock);
	if (p->stopping) {
		rc = -ESHUTDOWN;
	} else if (find_running(p, id) || queued(p, id, NULL)) {
		rc = -EEXIST;
	} else {
		struct qitem *it = oob_xcalloc(1, sizeof(*it));
		it->id = id;
		if (p->tail)
			p->tail->next = it;
		else
			p->head = it;
		p->tail = it;
		p->qlen++;
		pthread_cond_signal(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static int unlink_queued(struct job_pool *p, int64_t id)
{
	struct qitem **pp = &p->head, *prev = NULL;
	for (; *pp; prev = *pp, pp = &(*pp)->next) {
		if ((*pp)->id != id)
			continue;
		struct qitem *it = *pp;
		*pp = it->next;
		if (p->tail == it)
			p->tail = prev;
		p->qlen--;
		free(it);
		return 1;
	}
	return 0;
}

int job_pool_cancel(struct job_pool *p, int64_t id)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&p->lock);
	struct job_ctl *c = find_running(p, id);
	if (c) {
		atomic_store(&c->cancel, JOB_STOP_CANCEL);
		rc = JOB_CANCELLED_RUNNING;
	} else if (unlink_queued(p, id)) {
		rc = JOB_CANCELLED_QUEUED;
		pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int job_pool_progress(struct job_pool *p, int64_t id, struct job_progress *out)
{
	int rc = 0;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&p->lock);
	struct job_ctl *c = find_running(p, id);
	if (c) {
		out->running = 1;
		/* Its writer is a thread of this process: it always ends its update. */
		while (job_ctl_read_progress(c, 1000, out) < 0)
			;
	} else if (!queued(p, id, &out->position)) {
		rc = -ENOENT;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

size_t job_pool_queue_len(struct job_pool *p)
{
	pthread_mutex_lock(&p->lock);
	size_t n = p->qlen;
	pthread_mutex_unlock(&p->lock);
	return n;
}

unsigned job_pool_running(struct job_pool *p)
{
	pthread_mutex_lock(&p->lock);
	unsigned n = p->nrunning;
	pthread_mutex_unlock(&p->lock);
	return n;
}

unsigned job_pool_workers(const struct job_pool *p)
{
	return p->nworkers;
}

void job_pool_wait_idle(struct job_pool *p)
{
	pthread_mutex_lock(&p->lock);
	while (p->head || p->nrunning)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/*
 * Progress is a seqlock: seq is odd while an update is under way, and every
 * update adds 2. A reader retries until it read the same even seq before and
 * after the fields. Why not the pool's mutex: the writer may be a child
 * process writing a shared page (jobproc.c), where that mutex does not exist
 * (and a process-shared one would stay locked by a child killed mid-update);
 * and a job must never wait for HTTP threads. The fields are atomics (relaxed)
 * so that a racing read is no data race, only a retry; the fences order them
 * against seq (Boehm, "Can seqlocks get along with programming language memory
 * models?", 2012). Writers normally are one thread per job_ctl; the odd seq is
 * taken with a compare-and-swap all the same, so two would only take turns.
 */
void job_ctl_progress(struct job_ctl *c, uint64_t bytes, uint64_t total, uint64_t insns)
{
	unsigned s = atomic_load_explicit(&c->seq, memory_order_relaxed);
	while ((s & 1) || !atomic_compare_exchange_weak_explicit(
			      &c->seq, &s, s + 1, memory_order_acquire, memory_order_relaxed))
		s = atomic_load_explicit(&c->seq, memory_order_relaxed) & ~1u;
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&c->bytes, bytes, memory_order_relaxed);
	atomic_store_explicit(&c->total, total, memory_order_relaxed);
	atomic_store_explicit(&c->insns, insns, memory_order_relaxed);
	atomic_store_explicit(&c->seq, s + 2, memory_order_release);
}

int job_ctl_read_progress(const struct job_ctl *c, unsigned tries, struct job_progress *out)
{
	for (unsigned i = 0; i < tries; i++) {
		if (i > 0)
			sched_yield(); /* let the writer finish */
		unsigned s1 = atomic_load_explicit(&c->seq, memory_order_acquire);
		uint64_t b = atomic_load_explicit(&c->bytes, memory_order_relaxed);
		uint64_t t = atomic_load_explicit(&c->total, memory_order_relaxed);
		uint64_t n = atomic_load_explicit(&c->insns, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		unsigned s2 = atomic_load_explicit(&c->seq, memory_order_relaxed);
		if (!(s1 & 1) && s1 == s2) {
			out->bytes = b;
			out->total = t;
			out->insns = n;
			return 0;
		}
	}
	return -EAGAIN;
}
