/*
 * oob_progress: how far a long computation is, for another thread to read
 * (a server's view builds answer "202, 37 % done" meanwhile), and a flag by
 * which that thread asks it to stop.
 *
 * The computation chooses the unit (stack-event bytes for an event-log
 * replay) and adds each pass's size to total when the pass starts, so
 * done <= total holds at every read. A computation of several passes shows
 * a total that grows pass by pass, unless its caller, who knows the passes
 * coming, announces them first (oob_progress_expect).
 *
 * tick, when set, is called on the computing thread at each step (each
 * buffer read, about every 256 KiB), so its owner can act at a point where
 * the computation holds no lock of its own.
 */
#ifndef OOB_PROGRESS_H
#define OOB_PROGRESS_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>

struct oob_progress {
	_Atomic uint64_t done, total;
	atomic_int cancel;
	void (*tick)(void *ctx);
	void *tick_ctx;
	uint64_t expected; /* announced and not yet begun: the computing thread's */
};

/* Passes of n units in all are coming: total shows them now. */
static inline void oob_progress_expect(struct oob_progress *p, uint64_t n)
{
	p->expected += n;
	atomic_fetch_add_explicit(&p->total, n, memory_order_relaxed);
}

/* A pass of n units begins (counted already if it was expected). NULL p: no
 * one watches. */
static inline void oob_progress_begin(struct oob_progress *p, uint64_t n)
{
	if (!p)
		return;
	uint64_t known = p->expected < n ? p->expected : n;
	p->expected -= known;
	atomic_fetch_add_explicit(&p->total, n - known, memory_order_relaxed);
}

/* n more units are done: 0, or -ECANCELED when the computation should stop. */
static inline int oob_progress_step(struct oob_progress *p, uint64_t n)
{
	if (!p)
		return 0;
	atomic_fetch_add_explicit(&p->done, n, memory_order_relaxed);
	if (p->tick)
		p->tick(p->tick_ctx);
	return atomic_load_explicit(&p->cancel, memory_order_relaxed) ? -ECANCELED : 0;
}

#endif
