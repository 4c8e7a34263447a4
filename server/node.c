/* node: claiming from the shared queue, renewing leases, reaping. */
#include "node.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "util/oob_log.h"
#include "util/oob_mem.h"

#define POLL_MS 250

struct node {
	struct catalog *cat;
	struct job_pool *pool;
	unsigned lease_s;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop, kicked;
	int64_t last_cancel; /* the node thread's */
	atomic_ullong claims, renewals, reaped;
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Claims while a worker would otherwise sit idle. */
static void claim_for_idle(struct node *n)
{
	struct oob_err err = {0};
	while (job_pool_queue_len(n->pool) == 0 &&
	       job_pool_running(n->pool) < job_pool_workers(n->pool)) {
		int64_t id;
		int rc = catalog_job_claim(n->cat, n->lease_s, &id, &err);
		if (rc < 0)
			OOB_WARN("node: cannot claim a job: %s", err.msg);
		if (rc <= 0)
			return;
		atomic_fetch_add(&n->claims, 1);
		if (job_pool_submit(n->pool, id) < 0)
			return; /* shutting down: the lease lapses or is released */
		/* Let a worker take it, so that running counts it. */
		for (int i = 0; i < 100 && job_pool_queue_len(n->pool) > 0; i++)
			nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

/* Cancels asked at other nodes for jobs this node holds. */
static void relay_cancels(struct node *n)
{
	int64_t *ids;
	size_t k;
	struct oob_err err = {0};
	if (catalog_job_cancels(n->cat, &ids, &k, &err) < 0) {
		OOB_WARN("node: cannot read cancel requests: %s", err.msg);
		return;
	}
	for (size_t i = 0; i < k; i++) {
		int rc = job_pool_cancel(n->pool, ids[i]);
		if (rc == JOB_CANCELLED_QUEUED)
			catalog_job_transition(n->cat, ids[i], CATALOG_JOB_QUEUED,
					       CATALOG_JOB_CANCELLED, NULL);
		/* Flagged until it ends: said once. */
		if (rc > 0 && ids[i] != n->last_cancel)
			OOB_INFO("job %lld: cancelled at another node's request",
				 (long long)ids[i]);
		if (rc > 0)
			n->last_cancel = ids[i];
	}
	free(ids);
}

static void keep_leases(struct node *n)
{
	struct oob_err err = {0};
	int rc = catalog_job_renew(n->cat, n->lease_s, &err);
	if (rc < 0)
		OOB_WARN("node: cannot renew leases: %s", err.msg);
	else
		atomic_fetch_add(&n->renewals, (unsigned long long)rc);
	rc = catalog_job_reap(n->cat, &err);
	if (rc < 0)
		OOB_WARN("node: cannot reap lapsed leases: %s", err.msg);
	else if (rc > 0) {
		atomic_fetch_add(&n->reaped, (unsigned long long)rc);
		OOB_WARN("node: %d job(s) of a node that stopped renewing queued again", rc);
	}
}

static void *node_main(void *arg)
{
	struct node *n = arg;
	double next_renew = 0;
	pthread_mutex_lock(&n->lock);
	while (!n->stop) {
		pthread_mutex_unlock(&n->lock);
		double now = mono_s();
		if (now >= next_renew) {
			keep_leases(n);
			next_renew = now + n->lease_s / 3.0;
		}
		relay_cancels(n);
		claim_for_idle(n);
		pthread_mutex_lock(&n->lock);
		if (n->stop || n->kicked) {
			n->kicked = 0;
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += POLL_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&n->wake, &n->lock, &ts);
		n->kicked = 0;
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}

struct node *node_start(struct catalog *cat, struct job_pool *pool, unsigned lease_s,
			struct oob_err *err)
{
	struct node *n = oob_xcalloc(1, sizeof(*n));
	n->cat = cat;
	n->pool = pool;
	n->lease_s = lease_s;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->wake, NULL);
	int rc = pthread_create(&n->thread, NULL, node_main, n);
	if (rc != 0) {
		oob_err_set(err, -rc, "node: cannot start its thread");
		pthread_cond_destroy(&n->wake);
		pthread_mutex_destroy(&n->lock);
		free(n);
		return NULL;
	}
	return n;
}

void node_kick(struct node *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->kicked = 1;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

void node_stats(struct node *n, struct node_stats *out)
{
	*out = (struct node_stats){0};
	if (!n)
		return;
	out->claims = atomic_load(&n->claims);
	out->renewals = atomic_load(&n->renewals);
	out->reaped = atomic_load(&n->reaped);
}

void node_stop(struct node *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = 1;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
}

void node_free(struct node *n)
{
	if (!n)
		return;
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n);
}
