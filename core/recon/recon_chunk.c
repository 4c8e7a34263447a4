/*
 * One chunk of a parallel reconstruction (RECONSTRUCTION.md 16): its
 * speculative run on a stack that does not know what lies below the chunk's
 * start, and the join that checks the master's state against it and takes
 * its counts.
 *
 * The speculative run starts like a trace does (the root, then the frame the
 * first record is in: the floor). Whatever reads or changes the floor or an
 * entry below it (a return above the start, a repair that searches the
 * whole stack, a setjmp of the floor's frame) may depend on the stack the
 * chunk does not know: those events "touch" (recon_touch), and after each
 * the run takes a snapshot: it keeps the stack and the hart's state and
 * starts its counts over, on a fresh tree whose first nodes are the stack's
 * path. After the last snapshot nothing the run did depended on the floor's
 * content or what is below it, so the run from there is the sequential run's
 * from there, provided the sequential stack at the snapshot has the same
 * entries above the floor and the same frame at it. The join re-runs the
 * chunk's records up to the snapshot on the master (exact: it is the
 * sequential code), compares, and then rebases the speculative counts under
 * the master's node for the floor. When anything differs it simply goes on
 * running the chunk itself: never wrong, only slower.
 */
#include "recon/recon_impl.h"

#include <stdlib.h>
#include <string.h>

#include "profile/frame.h"
#include "util/oob_mem.h"

/* Room for n more records; the batches point into the arrays. */
static void reserve(struct recon_chunk *c, size_t n)
{
	if (c->n + n <= c->reccap)
		return;
	c->reccap = c->n + n > 2 * c->reccap ? c->n + n : 2 * c->reccap;
	c->pcs = oob_xrealloc(c->pcs, c->reccap * sizeof(*c->pcs));
	c->cycles = oob_xrealloc(c->cycles, c->reccap * sizeof(*c->cycles));
	c->insns = oob_xrealloc(c->insns, c->reccap * sizeof(*c->insns));
	c->privs = oob_xrealloc(c->privs, c->reccap);
	size_t at = 0;
	for (size_t k = 0; k < c->nb; k++) {
		struct trace_batch *b = &c->b[k];
		b->pc = c->pcs + at;
		b->cycle = b->cycle ? c->cycles + at : NULL;
		b->insn = b->insn ? c->insns + at : NULL;
		b->priv = b->priv ? c->privs + at : NULL;
		at += b->n;
	}
}

/* The records with bits after e in b, whose bits the sequential run learns
 * with b's (before it runs record s): those the reader says are new, else
 * all. Only the chunk's last batch can end inside the reader's. */
static void keep_ahead(struct recon_chunk *c, const struct trace_batch *b, uint32_t e)
{
	uint32_t n = 0;
	c->ahead.n = 0;
	if (!b->insn || e == b->n)
		return;
	if (b->n - e > c->acap) {
		c->acap = b->n - e;
		c->apcs = oob_xrealloc(c->apcs, c->acap * sizeof(*c->apcs));
		c->ainsns = oob_xrealloc(c->ainsns, c->acap * sizeof(*c->ainsns));
	}
	for (uint32_t k = 0; b->insn_new && k < b->ninsn_new; k++)
		if (b->insn_new[k] >= e) {
			c->apcs[n] = b->pc[b->insn_new[k]];
			c->ainsns[n++] = b->insn[b->insn_new[k]];
		}
	for (uint32_t i = e; !b->insn_new && i < b->n; i++) {
		c->apcs[n] = b->pc[i];
		c->ainsns[n++] = b->insn[i];
	}
	c->ahead = (struct trace_batch){
	    .n = n, .hart = b->hart, .pc = c->apcs, .insn = c->ainsns, .seq = b->seq + e};
}

void recon_chunk_add(struct recon_chunk *c, const struct trace_batch *b, uint32_t s, uint32_t e)
{
	if (c->nb == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->b = oob_xrealloc(c->b, c->cap * sizeof(*c->b));
	}
	uint32_t n = e - s, nnew = 0, nx = 0;
	uint32_t *inew = NULL;
	struct trace_extra *x = NULL;
	reserve(c, n);
	if (b->insn_new) { /* the records with new bits, as the chunk numbers them */
		inew = oob_xmalloc((b->ninsn_new + 1) * sizeof(*inew));
		for (uint32_t k = 0; k < b->ninsn_new; k++)
			if (b->insn_new[k] >= s && b->insn_new[k] < e)
				inew[nnew++] = b->insn_new[k] - s;
	}
	if (b->nx) { /* trap causes; events (text) never come here */
		x = oob_xmalloc(b->nx * sizeof(*x));
		for (uint32_t k = 0; k < b->nx; k++)
			if (b->x[k].idx >= s && b->x[k].idx < e) {
				x[nx] = b->x[k];
				x[nx++].idx -= s;
			}
	}
	uint64_t at = c->n;
	memcpy(c->pcs + at, b->pc + s, n * sizeof(*b->pc));
	if (b->cycle)
		memcpy(c->cycles + at, b->cycle + s, n * sizeof(*b->cycle));
	if (b->insn)
		memcpy(c->insns + at, b->insn + s, n * sizeof(*b->insn));
	if (b->priv)
		memcpy(c->privs + at, b->priv + s, n);
	c->b[c->nb++] = (struct trace_batch){.n = n,
					     .hart = b->hart,
					     .pc = c->pcs + at,
					     .cycle = b->cycle ? c->cycles + at : NULL,
					     .insn = b->insn ? c->insns + at : NULL,
					     .priv = b->priv ? c->privs + at : NULL,
					     .insn_new = inew,
					     .ninsn_new = nnew,
					     .x = x,
					     .nx = nx,
					     .seq = b->seq + s};
	c->n += n;
	keep_ahead(c, b, e);
}

void recon_chunk_set_piece(struct recon_chunk *c, const struct trace_split *sp, size_t k)
{
	c->sp = sp;
	c->piece = k;
	c->start = trace_split_first(sp, k);
}

/* The chunk's batches, in order: the copies, or a split chunk's records
 * decoded one batch at a time (at the chunk's end or on a decoding
 * error: NULL). */
static void batches_start(struct recon_chunk *c, size_t *k)
{
	*k = 0;
	if (c->sp)
		trace_split_cur_start(c->sp, c->piece, &c->cur);
}

static const struct trace_batch *batch_next(struct recon_chunk *c, size_t *k)
{
	if (!c->sp)
		return *k < c->nb ? &c->b[(*k)++] : NULL;
	if (c->rc)
		return NULL;
	long n = trace_split_cur_next(c->sp, &c->cur, &c->err);
	if (n <= 0) {
		c->rc = (int)n;
		return NULL;
	}
	c->cb = c->cur.b;
	c->cb.seq = c->start + (*k);
	*k += (size_t)n;
	return &c->cb;
}

/* What the batch batch_next just gave (the k-th) learns ahead, if any. */
static const struct trace_batch *ahead_of(const struct recon_chunk *c, size_t k)
{
	return !c->sp && k == c->nb && c->ahead.n ? &c->ahead : NULL;
}

void recon_chunk_clear(struct recon_chunk *c)
{
	for (size_t k = 0; k < c->nb; k++) {
		free((void *)c->b[k].insn_new);
		free(c->b[k].x);
	}
	recon_free(c->spec);
	c->spec = NULL;
	c->nb = 0;
	c->n = 0;
	c->ahead.n = 0;
	c->ncode = 0;
	c->nsnap = 0;
	c->p = UINT64_MAX;
	c->sp = NULL;
	c->rc = 0;
	memset(&c->chk, 0, sizeof(c->chk));
}

void recon_chunk_free(struct recon_chunk *c)
{
	recon_chunk_clear(c);
	free(c->b);
	free(c->snap);
	free(c->code);
	free(c->pcs);
	free(c->cycles);
	free(c->insns);
	free(c->privs);
	free(c->apcs);
	free(c->ainsns);
	trace_split_cur_free(&c->cur);
	memset(c, 0, sizeof(*c));
}

/* ---- the speculative run ---- */

static void spec_snapshot(struct recon *r, struct tracker_hart *h, uint64_t at)
{
	struct recon_chunk *c = (struct recon_chunk *)r->chk;
	struct stack *s = h->stk;
	c->chk.touched = 0;
	c->chk.maxn = s->n;
	/* counts start over on a tree of the stack's path: entry j is node j + 1 */
	cct_destroy(&r->cct);
	cct_init(&r->cct);
	uint32_t node = CCT_ROOT;
	for (uint32_t j = 0; j < s->n; j++)
		s->v[j].node = node = cct_child(&r->cct, node, s->v[j].frame);
	const char *format = r->run.st.format;
	memset(&r->run.st, 0, sizeof(r->run.st));
	r->run.st.format = format;
	c->ncode = 0;
	if (s->n > c->snapcap) {
		c->snapcap = s->n;
		c->snap = oob_xrealloc(c->snap, c->snapcap * sizeof(*c->snap));
	}
	memcpy(c->snap, s->v, s->n * sizeof(*s->v));
	c->nsnap = s->n;
	c->p = at;
	c->nframes = (uint32_t)r->run.frames.n;
	c->blk_start = h->blk->start;
	c->last_seq = h->last_seq;
	c->last_cycle = h->last_cycle;
	c->priv = h->priv;
	c->xret_deferred = h->xret_deferred;
	c->vector = r->vector;
	c->mvector = r->mvector;
	c->sigret_pushed = r->sigret_pushed;
}

/* Bits the trace shows: the speculative run knows less code than the
 * sequential one (what ran before the chunk), which is no difference where
 * the ELFs have the same bits; anything else and the chunk is not joined. */
static void spec_learned(struct recon *r, struct code_space *cs, uint64_t pc, uint32_t bits)
{
	struct recon_chunk *c = (struct recon_chunk *)r->chk;
	size_t had = cs->bits.count;
	uint64_t checked = cs->elf_checked, differ = cs->elf_differ;
	uint32_t gen = cs->gen;
	code_put(cs, pc, bits);
	if (cs->bits.count == had)
		return;
	if (cs->gen != gen || cs->elf_differ != differ || cs->elf_checked == checked) {
		c->chk.unsafe = 1;
		return;
	}
	if (c->ncode == c->codecap) {
		c->codecap = c->codecap ? 2 * c->codecap : 256;
		c->code = oob_xrealloc(c->code, c->codecap * sizeof(*c->code));
	}
	c->code[c->ncode++] = (struct recon_chunk_code){pc, cs->id, bits};
}

static int chunk_empty(const struct recon_chunk *c)
{
	return !c->sp && !c->nb;
}

static uint16_t chunk_hart(const struct recon_chunk *c)
{
	return c->sp ? trace_split_hart(c->sp) : c->b[0].hart;
}

void recon_chunk_spec(const struct recon *m, struct recon_chunk *c)
{
	c->p = UINT64_MAX;
	struct recon *r = recon_new_lent(m);
	c->spec = r;
	if (!r || recon_start(r, m->fields, m->run.st.format, NULL) < 0 || r->trk || r->go ||
	    r->run.proc.enabled || chunk_empty(c)) {
		c->chk.unsafe = 1;
		return;
	}
	struct tracker_hart *h = recon_hart(r, chunk_hart(c));
	h->seq = r->run.gseq = c->start;
	c->chk.spec = 1;
	c->chk.touched = 1; /* the chunk's first block end is the first snapshot */
	c->chk.floor = h->task->root_frame != FRAME_NONE;
	c->chk.snapshot = spec_snapshot;
	c->chk.learned = spec_learned;
	c->chk.stop = UINT64_MAX;
	r->chk = &c->chk;
	size_t k;
	const struct trace_batch *b;
	batches_start(c, &k);
	while (!c->chk.unsafe && (b = batch_next(c, &k)))
		recon_feed_from(r, b, 0, ahead_of(c, k));
	if (c->sp)
		c->n = k; /* its records, as far as they decode */
	if (c->rc)
		c->chk.unsafe = 1; /* the join stops at the error */
}

/* ---- the join ---- */

static void plain_learned(struct recon *r, struct code_space *cs, uint64_t pc, uint32_t bits)
{
	(void)r;
	code_put(cs, pc, bits);
}

static int same_frame_in(const struct recon *a, uint32_t fa, const struct recon *b, uint32_t fb)
{
	const struct frame *x = frame_get(&a->run.frames, fa), *y = frame_get(&b->run.frames, fb);
	if (x->kind != y->kind || x->space != y->space || x->addr != y->addr)
		return 0;
	return (!x->name && !y->name) || (x->name && y->name && strcmp(x->name, y->name) == 0);
}

static uint32_t map_frame(struct recon *m, const struct recon *s, uint32_t *fmap, uint32_t f)
{
	if (fmap[f] == FRAME_NONE) {
		const struct frame *x = frame_get(&s->run.frames, f);
		fmap[f] = x->name ? frame_named(&m->run.frames, x->kind, x->name)
				  : frame_func(&m->run.frames, x->space, x->addr, x->kind);
	}
	return fmap[f];
}

/* The unwinder's jmp is a frame id + 1 (recon_nonlocal.c count_walk), not
 * an address: ids differ between the runs. */
static int jmp_is_frame(struct recon *r, const struct stack_entry *e)
{
	return e->jmp && !e->marker && recon_fn_kind(r, e->frame) == RECON_FN_RAISE;
}

static int same_jmp(struct recon *s, const struct stack_entry *a, struct recon *m,
		    const struct stack_entry *b)
{
	if (jmp_is_frame(s, a) || jmp_is_frame(m, b))
		return jmp_is_frame(s, a) && jmp_is_frame(m, b) &&
		       same_frame_in(s, (uint32_t)a->jmp - 1, m, (uint32_t)b->jmp - 1);
	return a->jmp == b->jmp;
}

/* 1 if the master, stopped at the snapshot's record, is where the
 * speculative run was: same block, same pending span, same entries above
 * the floor (frames compared by what they are: each run has its table). */
static int converged(struct recon *m, const struct tracker_hart *h, const struct recon_chunk *c)
{
	struct recon *s = c->spec;
	uint32_t f = c->chk.floor, ns = c->nsnap, nm = h->stk->n;
	if (h->blk->start != c->blk_start || h->pos || h->last_seq != c->last_seq ||
	    h->last_cycle != c->last_cycle || h->priv != c->priv ||
	    h->xret_deferred != c->xret_deferred || m->vector != c->vector ||
	    m->mvector != c->mvector || m->sigret_pushed != c->sigret_pushed || ns <= f || nm < ns)
		return 0;
	uint32_t d = nm - ns;
	if ((uint64_t)c->chk.maxn + d >= m->max_depth)
		return 0; /* the master's pushes could meet the depth limit */
	for (uint32_t j = f; j < ns; j++) {
		const struct stack_entry *a = &c->snap[j], *b = &h->stk->v[j + d];
		if (!same_frame_in(s, a->frame, m, b->frame) || a->marker != b->marker)
			return 0;
		if (j > f && (a->ret != b->ret || a->walked != b->walked || a->sp != b->sp ||
			      !same_jmp(s, a, m, b)))
			return 0;
	}
	/* Counts only from the floor's node down: nodes below it cannot have
	 * any after the snapshot (nothing reached them). */
	const struct cct *t = &s->cct;
	for (uint32_t k = 0; k <= f && k < t->n; k++)
		if (t->v[k].insns || t->v[k].cycles || t->v[k].calls)
			return 0;
	for (size_t k = f + 2; k < t->n; k++)
		if (t->v[k].parent < f + 1)
			return 0;
	return 1;
}

static void merge(struct recon *m, struct tracker_hart *h, struct recon_chunk *c)
{
	struct recon *s = c->spec;
	struct tracker_hart *hs = recon_hart(s, chunk_hart(c));
	uint32_t f = c->chk.floor, d = h->stk->n - c->nsnap;
	uint32_t *fmap = oob_xmalloc((s->run.frames.n + 1) * sizeof(*fmap));
	memset(fmap, 0xff, (s->run.frames.n + 1) * sizeof(*fmap));
	uint32_t *nmap = oob_xcalloc(s->cct.n, sizeof(*nmap));
	/* Frames, then nodes, in the speculative run's creation order since the
	 * snapshot, which is the order the sequential run first meets them in
	 * (a frame when its code is first decoded, used by a node or not): the
	 * same ids for new ones. */
	for (uint32_t k = c->nframes; k < s->run.frames.n; k++)
		map_frame(m, s, fmap, k);
	nmap[f + 1] = h->stk->v[f + d].node;
	for (size_t k = f + 2; k < s->cct.n; k++)
		nmap[k] = cct_child(&m->cct, nmap[s->cct.v[k].parent],
				    map_frame(m, s, fmap, s->cct.v[k].frame));
	for (size_t k = f + 1; k < s->cct.n; k++) {
		struct cct_node *to = &m->cct.v[nmap[k]];
		to->calls += s->cct.v[k].calls;
		to->insns += s->cct.v[k].insns;
		to->cycles += s->cct.v[k].cycles;
	}
#define ADD(x) m->run.st.x += s->run.st.x;
	PROFILE_STAT_FIELDS(ADD)
#undef ADD
	for (size_t k = 0; k < c->ncode; k++)
		code_put(m->run.spaces[c->code[k].space], c->code[k].pc, c->code[k].bits);
	/* the final stack: the master's up to the floor, the chunk's above */
	stack_truncate(h->stk, f + 1 + d);
	for (uint32_t j = f + 1; j < hs->stk->n; j++) {
		const struct stack_entry *e = &hs->stk->v[j];
		stack_push(h->stk, map_frame(m, s, fmap, e->frame), nmap[e->node], e->ret,
			   e->marker);
		struct stack_entry *t = stack_top(h->stk);
		t->walked = e->walked;
		t->jmp = jmp_is_frame(s, e)
			     ? (uint64_t)map_frame(m, s, fmap, (uint32_t)e->jmp - 1) + 1
			     : e->jmp;
		t->sp = e->sp;
	}
	h->blk = code_block_at(space_of(m, h, hs->blk->start), hs->blk->start);
	h->pos = hs->pos;
	h->seq = hs->seq;
	h->last_seq = hs->last_seq;
	h->last_cycle = hs->last_cycle;
	h->end_cycle = hs->end_cycle;
	h->priv = hs->priv;
	h->xret_deferred = hs->xret_deferred;
	if (hs->low < h->low)
		h->low = hs->low;
	m->vector = s->vector;
	m->mvector = s->mvector;
	m->sigret_pushed = s->sigret_pushed;
	m->seen += c->start + c->n - m->run.gseq;
	m->run.gseq = s->run.gseq;
	free(fmap);
	free(nmap);
}

/* 1 if all the code the master learned from the trace is the ELFs' own:
 * then a speculative run, which sees only the bits new in its chunk, knows
 * the same code (anything else it learns makes it unsafe). */
static int elf_code_only(const struct recon *m)
{
	for (size_t k = 0; k < m->run.nspaces; k++) {
		const struct code_space *cs = m->run.spaces[k];
		if (cs->elf_differ || cs->bits.count != cs->elf_checked)
			return 0;
	}
	return 1;
}

int recon_chunk_join(struct recon *m, struct recon_chunk *c)
{
	size_t k;
	uint32_t at = 0;
	const struct trace_batch *b = NULL;
	batches_start(c, &k);
	/* a split chunk's start is exact when every slot before it was valid */
	if (c->spec && !c->chk.unsafe && c->p != UINT64_MAX && !chunk_empty(c) &&
	    c->start == m->run.gseq && elf_code_only(m)) {
		struct recon_chk rc = {.stop = c->p, .learned = plain_learned};
		m->chk = &rc;
		while ((b = batch_next(c, &k))) {
			at = recon_feed_from(m, b, 0, ahead_of(c, k));
			if (rc.stopped)
				break;
		}
		m->chk = NULL;
		if (!rc.stopped)
			return 0; /* it ran to the end: the snapshot's record was no block end */
		struct tracker_hart *h = recon_hart(m, chunk_hart(c));
		if (converged(m, h, c)) {
			merge(m, h, c);
			return 1;
		}
		/* the rest of the batch it stopped in */
		recon_feed_from(m, b, at, ahead_of(c, k));
	}
	while ((b = batch_next(c, &k)))
		recon_feed_from(m, b, 0, ahead_of(c, k));
	return 0;
}
