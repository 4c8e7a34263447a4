/*
 * Reading ahead (RECONSTRUCTION.md 3.5): when stacks are parked (a Go
 * program, a program that switches ucontext contexts), the choice among
 * the stacks parked at one pc follows the hart's next records until its
 * returns tell them apart, and a batch (4096 records) often ends first.
 * The run then reads LOOK_MAX batches ahead of the one it feeds: each
 * batch the reader hands out is copied into a slot (the reader's arrays
 * are reused by its next call), and the hot loop sees the slots after its
 * own through recon_look_ahead. Only such runs pay for the copies.
 */
#include "recon/recon_impl.h"

#include <stdlib.h>
#include <string.h>

#include "trace/trace_merge.h"
#include "util/oob_mem.h"

#define LOOK_MAX 16 /* batches read ahead: 64 Ki records */

struct look_slot {
	struct trace_batch b;
	uint64_t *pc, *cycle;
	uint32_t *insn, *insn_new;
	uint8_t *priv;
	struct trace_extra *x; /* room for x_cap (most batches have none) */
	size_t x_cap;
	char *text; /* the extras' event texts, one after another */
	size_t text_cap;
};

struct recon_look {
	struct look_slot v[LOOK_MAX];
	size_t first, n; /* the slots in reading order: v[first], ... (a ring) */
	int fed;	 /* v[first] was handed out: the next call drops it */
	int end;	 /* the reader is done: rc says how */
	int rc;
	struct oob_err err;
};

struct recon_look *recon_look_new(void)
{
	struct recon_look *l = oob_xcalloc(1, sizeof(*l));
	for (size_t k = 0; k < LOOK_MAX; k++) {
		struct look_slot *s = &l->v[k];
		s->pc = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*s->pc));
		s->cycle = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*s->cycle));
		s->insn = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*s->insn));
		s->insn_new = oob_xmalloc(TRACE_BATCH_MAX * sizeof(*s->insn_new));
		s->priv = oob_xmalloc(TRACE_BATCH_MAX);
	}
	return l;
}

void recon_look_free(struct recon_look *l)
{
	if (!l)
		return;
	for (size_t k = 0; k < LOOK_MAX; k++) {
		struct look_slot *s = &l->v[k];
		free(s->pc);
		free(s->cycle);
		free(s->insn);
		free(s->insn_new);
		free(s->priv);
		free(s->x);
		free(s->text);
	}
	free(l);
}

/* Copies the event texts of b's extras into s (their pointers die with
 * the reader's next call). */
static void copy_texts(struct look_slot *s, const struct trace_batch *b)
{
	size_t need = 0;
	for (uint32_t k = 0; k < b->nx; k++)
		if (b->x[k].text)
			need += strlen(b->x[k].text) + 1;
	if (need > s->text_cap) {
		s->text_cap = need;
		s->text = oob_xrealloc(s->text, need);
	}
	char *p = s->text;
	for (uint32_t k = 0; k < b->nx; k++) {
		if (!b->x[k].text)
			continue;
		size_t len = strlen(b->x[k].text) + 1;
		memcpy(p, b->x[k].text, len);
		s->x[k].text = p;
		p += len;
	}
}

static void copy_batch(struct look_slot *s, const struct trace_batch *b)
{
	uint32_t n = b->n;
	s->b = *b;
	s->b.pc = memcpy(s->pc, b->pc, n * sizeof(*b->pc));
	s->b.cycle = b->cycle ? memcpy(s->cycle, b->cycle, n * sizeof(*b->cycle)) : NULL;
	s->b.insn = b->insn ? memcpy(s->insn, b->insn, n * sizeof(*b->insn)) : NULL;
	s->b.priv = b->priv ? memcpy(s->priv, b->priv, n) : NULL;
	s->b.insn_new = b->insn_new
			    ? memcpy(s->insn_new, b->insn_new, b->ninsn_new * sizeof(*b->insn_new))
			    : NULL;
	if (b->nx > s->x_cap) {
		s->x_cap = b->nx;
		s->x = oob_xrealloc(s->x, s->x_cap * sizeof(*s->x));
	}
	s->b.x = b->nx ? memcpy(s->x, b->x, b->nx * sizeof(*b->x)) : NULL;
	copy_texts(s, b);
}

int recon_look_next(struct recon_look *l, struct trace_merge *m, const struct trace_batch **out,
		    struct oob_err *err)
{
	if (l->fed) {
		l->first = (l->first + 1) % LOOK_MAX;
		l->n--;
		l->fed = 0;
	}
	while (!l->end && l->n < LOOK_MAX) {
		const struct trace_batch *b;
		int rc = trace_merge_next(m, &b, &l->err);
		if (rc <= 0) {
			l->end = 1;
			l->rc = rc;
			break;
		}
		copy_batch(&l->v[(l->first + l->n) % LOOK_MAX], b);
		l->n++;
	}
	if (!l->n) {
		/* the records before a reader's failure were all handed out */
		if (l->rc < 0 && err)
			*err = l->err;
		return l->rc;
	}
	*out = &l->v[l->first].b;
	l->fed = 1;
	return 1;
}

const struct trace_batch *recon_look_ahead(const struct recon_look *l, size_t k)
{
	if (!l || !l->fed || k + 1 >= l->n)
		return NULL;
	return &l->v[(l->first + 1 + k) % LOOK_MAX].b;
}
