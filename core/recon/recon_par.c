/*
 * The parallel run (RECONSTRUCTION.md 16): the trace of one hart is cut into
 * chunks of consecutive records; worker threads run each chunk
 * speculatively (recon_chunk.c) while this thread reads the trace and joins
 * the chunks in order to the master reconstruction. A chunk no worker has
 * started when its turn comes is run here directly (the sequential code):
 * the work balances itself and the master never waits for a chunk it could
 * run. A second hart in the trace ends the cutting: what is left runs
 * sequentially.
 */
#include "recon/recon_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/trace_merge.h"
#include "util/oob_log.h"
#include "util/oob_mem.h"

enum slot_state { SLOT_FILLED = 1, SLOT_RUNNING, SLOT_DONE, SLOT_MASTER };

struct par {
	struct recon *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct recon_chunk *ring;
	int *state;
	size_t cap;
	uint64_t next_read, next_join, next_spec; /* chunk numbers */
	int quit;
	/* split runs (trace_split.h): chunks are decoded by whoever runs them */
	const struct trace_split *split;
	struct oob_err fail; /* a joined chunk's decoding error */
	uint64_t joined, direct, rerun;
	/* records of the joined chunks, and of them those the master re-ran up
	 * to the snapshot (a join's cost) */
	uint64_t joined_recs, rerun_recs;
	double worker_cpu; /* seconds of CPU the workers used */
};

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct recon_chunk *slot(struct par *p, uint64_t k)
{
	return &p->ring[k % p->cap];
}

/* Takes the oldest chunk nobody has started (caller holds mu): its number,
 * or UINT64_MAX. */
static uint64_t claim_spec(struct par *p)
{
	/* a worker that slept while chunks went by must not read a reused
	 * slot's state as that of the chunk it last saw there */
	if (p->next_spec < p->next_join)
		p->next_spec = p->next_join;
	while (p->next_spec < p->next_read && p->state[p->next_spec % p->cap] != SLOT_FILLED)
		p->next_spec++;
	if (p->next_spec == p->next_read)
		return UINT64_MAX;
	p->state[p->next_spec % p->cap] = SLOT_RUNNING;
	return p->next_spec++;
}

static void run_spec(struct par *p, uint64_t k)
{
	pthread_mutex_unlock(&p->mu);
	recon_chunk_spec(p->r, slot(p, k));
	pthread_mutex_lock(&p->mu);
	p->state[k % p->cap] = SLOT_DONE;
	pthread_cond_broadcast(&p->cv);
}

static void *worker(void *arg)
{
	struct par *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->quit) {
		uint64_t k = claim_spec(p);
		if (k == UINT64_MAX)
			pthread_cond_wait(&p->cv, &p->mu);
		else
			run_spec(p, k);
	}
	p->worker_cpu += thread_cpu();
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void publish(struct par *p)
{
	pthread_mutex_lock(&p->mu);
	if (p->split)
		recon_chunk_set_piece(slot(p, p->next_read), p->split, (size_t)p->next_read);
	/* the first chunk starts the trace: nothing to speculate about */
	p->state[p->next_read % p->cap] = p->next_read ? SLOT_FILLED : SLOT_MASTER;
	p->next_read++;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Joins the oldest chunk, if it can be now (1), else 0; may instead run a
 * waiting chunk's speculation here when the master has nothing to do. */
static int join_next(struct par *p, int can_read)
{
	uint64_t k = p->next_join;
	pthread_mutex_lock(&p->mu);
	int *st = &p->state[k % p->cap];
	if (can_read && *st != SLOT_DONE) {
		pthread_mutex_unlock(&p->mu); /* reading on feeds the workers */
		return 0;
	}
	if (*st == SLOT_FILLED)
		*st = SLOT_MASTER; /* nobody started it: run it here */
	if (*st == SLOT_RUNNING) {
		uint64_t s;
		if ((s = claim_spec(p)) != UINT64_MAX)
			run_spec(p, s);
		else
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
		return 0;
	}
	pthread_mutex_unlock(&p->mu);
	struct recon_chunk *c = slot(p, k);
	uint64_t g0;
	if (*st == SLOT_MASTER) {
		recon_chunk_join(p->r, c); /* no speculation: the chunk's records, in order */
		p->direct++;
	} else if (g0 = p->r->run.gseq, recon_chunk_join(p->r, c)) {
		p->joined++;
		p->joined_recs += p->r->run.gseq - g0;
		p->rerun_recs += c->p - g0;
	} else {
		p->rerun++;
	}
	if (c->rc < 0) /* the records before the error were joined */
		p->fail = c->err;
	recon_chunk_clear(c);
	pthread_mutex_lock(&p->mu);
	p->next_join++; /* claim_spec reads it */
	pthread_mutex_unlock(&p->mu);
	return 1;
}

static void drain(struct par *p)
{
	while (p->next_join < p->next_read)
		join_next(p, 0);
}

unsigned recon_par_chunk_records(void)
{
	/* a hidden knob for tests: tiny chunks cut inside everything */
	const char *s = getenv("OOB_CHUNK_RECORDS");
	long v = s ? strtol(s, NULL, 10) : 0;
	return v > 0 && v < (1l << 30) ? (unsigned)v : RECON_CHUNK_RECORDS;
}

static int poll(struct recon *r, uint64_t raw_bytes, struct oob_err *err)
{
	const struct recon_opts *o = r->opts;
	if (o->progress)
		o->progress(o->progress_ctx, raw_bytes, r->seen);
	if (o->cancel && atomic_load_explicit(o->cancel, memory_order_relaxed))
		return oob_err_set(err, -ECANCELED, "cancelled after %llu instructions",
				   (unsigned long long)r->seen);
	return 0;
}

static unsigned par_start(struct par *p, struct recon *r, unsigned threads, pthread_t *tids)
{
	unsigned nw = 0;
	p->r = r;
	p->cap = 2 * (size_t)threads + 2;
	p->ring = oob_xcalloc(p->cap, sizeof(*p->ring));
	p->state = oob_xcalloc(p->cap, sizeof(*p->state));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (; nw + 1 < threads; nw++)
		if (pthread_create(&tids[nw], NULL, worker, p) != 0)
			break;
	return nw;
}

static void par_stop(struct par *p, pthread_t *tids, unsigned nw, unsigned threads, unsigned per)
{
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (unsigned k = 0; k < nw; k++)
		pthread_join(tids[k], NULL);
	for (size_t k = 0; k < p->cap; k++)
		recon_chunk_free(&p->ring[k]);
	/* the master's CPU time bounds the wall time from below */
	OOB_INFO("recon: %u threads, chunks of %u records%s: %llu joined (the master re-ran "
		 "%.1f%% of their records, up to their snapshots), %llu re-run sequentially, "
		 "%llu run directly; CPU s: %.2f %s and joining, %.2f in workers",
		 threads, per, p->split ? " decoded where they run" : "",
		 (unsigned long long)p->joined,
		 p->joined_recs ? 100.0 * (double)p->rerun_recs / (double)p->joined_recs : 0.0,
		 (unsigned long long)p->rerun, (unsigned long long)p->direct, thread_cpu(),
		 p->split ? "cutting" : "reading", p->worker_cpu);
	p->r->par_joined = p->joined;
	p->r->par_rerun = p->rerun;
	p->r->par_direct = p->direct;
	free(p->ring);
	free(p->state);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
}

int recon_par_run(struct recon *r, struct trace_merge *m, unsigned threads, struct oob_err *err)
{
	struct par p = {0};
	unsigned per = recon_par_chunk_records();
	pthread_t *tids = oob_xcalloc(threads, sizeof(*tids));
	unsigned nw = par_start(&p, r, threads, tids);
	const struct trace_batch *b;
	int rc, hart = -1, tail = 0;
	struct recon_chunk *cur = NULL;
	while ((rc = trace_merge_next(m, &b, err)) > 0) {
		if (hart < 0)
			hart = b->hart;
		if (b->hart != hart && !tail) {
			/* another hart: the rest runs sequentially */
			if (cur && cur->nb)
				publish(&p);
			drain(&p);
			tail = 1;
			OOB_INFO("recon: a second hart at record %llu: sequential from there",
				 (unsigned long long)b->seq);
		}
		if (tail) {
			recon_feed(r, b);
			continue;
		}
		for (uint32_t s = 0; s < b->n;) {
			while (p.next_read - p.next_join >= p.cap - 1)
				if (join_next(&p, 0) &&
				    (rc = poll(r, trace_merge_raw_bytes(m), err)) < 0)
					goto out;
			cur = slot(&p, p.next_read);
			if (!cur->nb)
				cur->start = b->seq + s;
			uint32_t e = b->n - s < per - cur->n ? b->n : s + (uint32_t)(per - cur->n);
			recon_chunk_add(cur, b, s, e);
			s = e;
			if (cur->n == per)
				publish(&p);
			while (p.next_join < p.next_read && join_next(&p, 1))
				if ((rc = poll(r, trace_merge_raw_bytes(m), err)) < 0)
					goto out;
		}
	}
	if (rc == 0 && !tail) {
		cur = slot(&p, p.next_read);
		if (cur->nb)
			publish(&p);
		while (p.next_join < p.next_read)
			if (join_next(&p, 0) && (rc = poll(r, trace_merge_raw_bytes(m), err)) < 0)
				break;
	}
out:
	par_stop(&p, tids, nw, threads, per);
	free(tids);
	return rc;
}

/* The master only hands out chunk numbers and joins: every chunk is read
 * and decoded by the thread that runs it (the master too, for the chunks
 * it runs itself). */
int recon_par_run_split(struct recon *r, const struct trace_split *sp, unsigned threads,
			struct oob_err *err)
{
	struct par p = {.split = sp};
	unsigned per = recon_par_chunk_records();
	pthread_t *tids = oob_xcalloc(threads, sizeof(*tids));
	unsigned nw = par_start(&p, r, threads, tids);
	size_t np = trace_split_pieces(sp);
	int rc = 0;
	for (uint64_t k = 0; k <= np && rc == 0; k++) {
		/* keep the ring full, join in order; then drain it */
		while (p.next_join < p.next_read &&
		       (k == np || p.next_read - p.next_join >= p.cap - 1)) {
			if (!join_next(&p, 0))
				continue;
			if (p.fail.code) {
				rc = p.fail.code;
				if (err)
					*err = p.fail;
				break;
			}
			if ((rc = poll(r, trace_split_raw_end(sp, (size_t)p.next_join - 1), err)) <
			    0)
				break;
		}
		if (k < np)
			publish(&p);
	}
	par_stop(&p, tids, nw, threads, per);
	free(tids);
	return rc;
}
