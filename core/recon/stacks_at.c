#include "recon/stacks_at.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

struct key {
	uint64_t at;
	size_t i;
};

struct stacks_at {
	unsigned hart;
	size_t n;
	struct stacks_at_stack *v; /* in the order asked */
	struct key *order;	   /* v's indices by ascending at */
	size_t next_stack;	   /* order[] position of the next stack to copy */
	size_t next_pc;		   /* order[] position of the next pc to note */
	uint64_t records;	   /* the hart's records seen in batches */
	uint32_t *open;		   /* the hart's open frames, bottom first */
	uint32_t depth;
	size_t cap;
};

static int by_at(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	return x->at < y->at ? -1 : x->at > y->at;
}

struct stacks_at *stacks_at_new(unsigned hart, const uint64_t *at, size_t n, struct oob_err *err)
{
	if (!n) {
		oob_err_set(err, -EINVAL, "stacks_at: no record index given");
		return NULL;
	}
	struct stacks_at *s = oob_xcalloc(1, sizeof(*s));
	s->hart = hart;
	s->n = n;
	s->v = oob_xcalloc(n, sizeof(*s->v));
	s->order = oob_xcalloc(n, sizeof(*s->order));
	for (size_t i = 0; i < n; i++) {
		s->v[i] = (struct stacks_at_stack){.at = at[i], .priv = -1};
		s->order[i] = (struct key){at[i], i};
	}
	qsort(s->order, n, sizeof(*s->order), by_at);
	return s;
}

void stacks_at_free(struct stacks_at *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].frames);
	free(s->v);
	free(s->order);
	free(s->open);
	free(s);
}

/* Copies the open stack, innermost first, to every index below limit. */
static void copy_until(struct stacks_at *s, uint64_t limit)
{
	while (s->next_stack < s->n && s->order[s->next_stack].at < limit) {
		struct stacks_at_stack *t = &s->v[s->order[s->next_stack++].i];
		t->depth = s->depth;
		t->frames = oob_xcalloc(s->depth ? s->depth : 1, sizeof(*t->frames));
		for (uint32_t d = 0; d < s->depth; d++)
			t->frames[d] = s->open[s->depth - 1 - d];
	}
}

void stacks_at_event(void *ctx, const struct recon_event *ev)
{
	struct stacks_at *s = ctx;
	if (ev->hart != s->hart)
		return;
	/* Record ev->insn runs on the stack after the event, those before it
	 * ran on the stack as it is. */
	copy_until(s, ev->insn);
	if (ev->kind == RECON_EV_OPEN) {
		oob_xgrow((void **)&s->open, &s->cap, ev->depth, sizeof(*s->open));
		s->open[ev->depth - 1] = ev->frame;
		s->depth = ev->depth;
	} else {
		s->depth = ev->depth - 1;
	}
}

void stacks_at_batch(void *ctx, const struct trace_batch *b, uint64_t gseq)
{
	(void)gseq;
	struct stacks_at *s = ctx;
	if (b->hart != s->hart)
		return;
	uint64_t end = s->records + b->n;
	while (s->next_pc < s->n && s->order[s->next_pc].at < end) {
		struct stacks_at_stack *t = &s->v[s->order[s->next_pc++].i];
		uint64_t i = t->at - s->records;
		t->found = 1;
		t->pc = b->pc[i];
		t->priv = b->priv ? b->priv[i] : -1;
	}
	s->records = end;
}

void stacks_at_finish(struct stacks_at *s)
{
	copy_until(s, UINT64_MAX);
	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].found)
			s->v[i].depth = 0;
}

size_t stacks_at_count(const struct stacks_at *s)
{
	return s->n;
}

const struct stacks_at_stack *stacks_at_get(const struct stacks_at *s, size_t i)
{
	return i < s->n ? &s->v[i] : NULL;
}

uint64_t stacks_at_records(const struct stacks_at *s)
{
	return s->records;
}

int stacks_at_run(const struct recon_opts *opts, const char *const *traces, size_t ntraces,
		  unsigned hart, const uint64_t *at, size_t n, struct stacks_at **out,
		  struct profile **prof, struct oob_err *err)
{
	*out = NULL;
	*prof = NULL;
	struct stacks_at *s = stacks_at_new(hart, at, n, err);
	if (!s)
		return err ? err->code : -EINVAL;
	struct recon_opts o = *opts;
	o.on_event = stacks_at_event;
	o.event_ctx = s;
	o.on_batch = stacks_at_batch;
	o.batch_ctx = s;
	struct profile *p = NULL;
	int rc = recon_run(&o, traces, ntraces, &p, err);
	if (rc == 0 && profile_stats(p)->sampled)
		rc = oob_err_set(err, -EINVAL,
				 "%s: a file of samples has no records to index: give a trace",
				 traces[0]);
	if (rc < 0) {
		profile_free(p);
		stacks_at_free(s);
		return rc;
	}
	stacks_at_finish(s);
	*out = s;
	*prof = p;
	return 0;
}
