/* The match and bin trackers, and the binary matching park also uses. */
#include "tasks/tracker_match.h"

#include <stdio.h>
#include <stdlib.h>

#include "util/oob_mem.h"

unsigned tracker_match_pick(struct tracker_run *r, struct tracker_hart *h, uint64_t excl,
			    uint64_t pc)
{
	unsigned last = h->task->ucs ? h->task->ucs->id : 0;
	if (last && !(excl >> last & 1) && sym_space_find(r->syms[last], pc))
		return last;
	for (unsigned k = 1; k < r->nspaces && k < 64; k++)
		if (!(excl >> k & 1) && r->spaces[k]->main_binary && sym_space_find(r->syms[k], pc))
			return k;
	return 0;
}

unsigned tracker_match_begin(struct tracker_run *r, struct tracker_hart *h, uint64_t *excl,
			     uint64_t pc)
{
	*excl = 0;
	r->st.match_runs++;
	return tracker_match_pick(r, h, 0, pc);
}

unsigned tracker_match_next(struct tracker_run *r, struct tracker_hart *h, uint64_t *excl,
			    struct code_block *nb, uint32_t i)
{
	*excl |= 1ull << h->task->ucs->id;
	unsigned k = tracker_match_pick(r, h, *excl, nb->start);
	if (!k) {
		r->st.match_failed++;
		return 0;
	}
	r->st.match_switches++;
	r->svc->flush(r, h, i);
	return k;
}

/* The user binaries that may hold pc (bit k: user space k). */
static uint64_t space_candidates(const struct tracker_run *r, uint64_t pc)
{
	uint64_t cand = 0;
	for (unsigned k = 1; k < r->nspaces && k < 64; k++)
		if (r->spaces[k]->main_binary && sym_space_find(r->syms[k], pc))
			cand |= 1ull << k;
	return cand;
}

struct code_block *tracker_space_enter(struct tracker_run *r, struct tracker_hart *h,
				       struct code_block *nb, uint32_t i)
{
	const struct trace_batch *b = r->b;
	uint64_t cand = space_candidates(r, nb->start);
	for (uint32_t j = i; b->insn && j < b->n && (cand & (cand - 1)) && !(b->pc[j] >> 63); j++) {
		uint64_t agree = 0;
		for (unsigned k = 1; k < 64; k++) {
			uint32_t bits;
			if (cand >> k & 1 && code_elf_fetch(r->spaces[k], b->pc[j], &bits) &&
			    bits == b->insn[j])
				agree |= 1ull << k;
		}
		if (agree)
			cand = agree;
	}
	if (!cand)
		return nb;
	unsigned k = (unsigned)__builtin_ctzll(cand);
	struct task *t = h->task;
	t->ucs = r->spaces[k];
	t->ucs_known = 1;
	snprintf(t->comm, sizeof(t->comm), "%.16s", sym_binary_name(r->spaces[k]->main_binary));
	return code_block_at(t->ucs, nb->start);
}

/* ---- match: a task per candidate binary ---- */

struct match {
	struct tracker base;
	struct task **tasks; /* per space id, NULL until used */
	size_t ntasks;
	uint64_t *excl; /* per hart: user spaces ruled out for the current run */
	size_t nexcl;
};

static uint64_t *excl_of(struct match *m, const struct tracker_hart *h)
{
	return tracker_per_hart((void **)&m->excl, &m->nexcl, h->id, sizeof(*m->excl));
}

static struct task *match_task(struct match *m, unsigned k)
{
	struct tracker_run *r = m->base.run;
	if (k >= m->ntasks) { /* spaces made after setup (none without events) */
		m->tasks = oob_xrealloc(m->tasks, (k + 1) * sizeof(*m->tasks));
		for (size_t j = m->ntasks; j <= k; j++)
			m->tasks[j] = NULL;
		m->ntasks = k + 1;
	}
	if (!m->tasks[k]) {
		struct task *t = proc_task_new(&r->proc, (uint64_t)k + 1, r->spaces[k]);
		snprintf(t->comm, sizeof(t->comm), "%.16s",
			 sym_binary_name(r->spaces[k]->main_binary));
		m->tasks[k] = t;
	}
	return m->tasks[k];
}

/* The run goes to binary k: its task's stack. */
static void match_switch(struct match *m, struct tracker_hart *h, unsigned k, uint32_t i)
{
	struct task *t = match_task(m, k);
	if (t != h->task)
		m->base.run->svc->switch_task(m->base.run, h, t->key, i);
}

static void match_start(struct tracker *t, struct tracker_hart *h, const struct trace_batch *b,
			uint32_t i)
{
	struct match *m = (struct match *)t;
	unsigned k =
	    !(b->pc[i] >> 63) ? tracker_match_pick(t->run, h, *excl_of(m, h), b->pc[i]) : 0;
	if (k) {
		h->task = match_task(m, k);
		h->stk = &h->task->stk;
	}
}

static struct code_block *match_enter(struct tracker *t, struct tracker_hart *h,
				      struct code_block *nb, uint32_t i)
{
	unsigned k = tracker_match_begin(t->run, h, excl_of((struct match *)t, h), nb->start);
	if (!k)
		return nb;
	match_switch((struct match *)t, h, k, i);
	return code_block_at(t->run->spaces[k], nb->start);
}

static struct code_block *match_mismatch(struct tracker *t, struct tracker_hart *h,
					 struct code_block *nb, uint32_t i)
{
	unsigned k = tracker_match_next(t->run, h, excl_of((struct match *)t, h), nb, i);
	if (!k)
		return NULL;
	match_switch((struct match *)t, h, k, i);
	nb = code_block_at(t->run->spaces[k], nb->start);
	t->run->svc->resume(t->run, h, nb, i);
	return nb;
}

static void match_free(struct tracker *t)
{
	struct match *m = (struct match *)t;
	free(m->tasks);
	free(m->excl);
	free(m);
}

static const struct tracker_ops match_ops = {
    .source = "matched",
    .on_start = match_start,
    .on_user_entry = match_enter,
    .on_mismatch = match_mismatch,
    .free = match_free,
};

struct tracker *tracker_match_new(struct tracker_run *r)
{
	struct match *m = oob_xcalloc(1, sizeof(*m));
	m->base = (struct tracker){&match_ops, r};
	m->ntasks = r->nspaces;
	m->tasks = oob_xcalloc(m->ntasks, sizeof(*m->tasks));
	return &m->base;
}

/* ---- bin: a task per user binary, by address ---- */

/* The task of the user binary that holds pc, or NULL when no binary does
 * (code of no ELF stays on the current task). */
static struct task *bin_task(struct tracker_run *r, uint64_t pc)
{
	for (size_t k = 1; k < r->nspaces; k++) {
		const struct sym_mapping *m = sym_space_find(r->syms[k], pc);
		if (!m)
			continue;
		size_t b = 0;
		while (b < r->nbins && r->bins[b] != m->bin)
			b++;
		struct task *t = proc_task_find(&r->proc, ids_key(IDS_KEY_BIN, b));
		if (!t) {
			t = proc_task_new(&r->proc, ids_key(IDS_KEY_BIN, b), r->spaces[k]);
			snprintf(t->comm, sizeof(t->comm), "%.16s", sym_binary_name(m->bin));
		}
		return t;
	}
	return NULL;
}

static void bin_start(struct tracker *t, struct tracker_hart *h, const struct trace_batch *b,
		      uint32_t i)
{
	struct task *k = !(b->pc[i] >> 63) ? bin_task(t->run, b->pc[i]) : NULL;
	if (k) {
		h->task = k;
		h->stk = &k->stk;
	}
}

/* A return to user space: the stack of the binary that runs there. */
static struct code_block *bin_enter(struct tracker *t, struct tracker_hart *h,
				    struct code_block *nb, uint32_t i)
{
	struct task *k = bin_task(t->run, nb->start);
	if (k && k != h->task)
		t->run->svc->switch_task(t->run, h, k->key, i);
	return nb;
}

static void bin_free(struct tracker *t)
{
	free(t);
}

static const struct tracker_ops bin_ops = {
    .source = "matched",
    .on_start = bin_start,
    .on_user_entry = bin_enter,
    .free = bin_free,
};

struct tracker *tracker_bin_new(struct tracker_run *r)
{
	struct tracker *t = oob_xcalloc(1, sizeof(*t));
	*t = (struct tracker){&bin_ops, r};
	return t;
}
