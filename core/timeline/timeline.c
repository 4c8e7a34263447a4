#include "timeline/timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_map.h"
#include "util/oob_mem.h"

/* ---- merging ---- */

void timeline_merger_init(struct timeline_merger *m, uint64_t from, uint64_t to, uint64_t min_dur,
			  struct timeline_spans *out)
{
	memset(m, 0, sizeof(*m));
	m->from = from;
	m->to = to ? to : UINT64_MAX;
	m->min_dur = min_dur;
	m->out = out;
}

static void put(struct timeline_spans *o, const struct timeline_span *s)
{
	oob_xgrow((void **)&o->v, &o->cap, o->n + 1, sizeof(*o->v));
	o->v[o->n++] = *s;
}

static void flush_pending(struct timeline_merger *m)
{
	if (!m->have)
		return;
	put(m->out, &m->pend);
	m->have = 0;
}

void timeline_merger_add(struct timeline_merger *m, const struct timeline_span *s)
{
	struct timeline_span c = *s;
	c.start = c.start > m->from ? c.start : m->from;
	c.end = c.end < m->to ? c.end : m->to;
	if (c.end <= c.start)
		return;
	uint64_t dur = c.end - c.start;
	if (!m->min_dur || dur >= m->min_dur) {
		flush_pending(m);
		put(m->out, &c);
		return;
	}
	if (m->have && m->pend.end != c.start)
		flush_pending(m);
	if (!m->have) {
		m->pend = c;
		m->pend_best = dur;
		m->have = 1;
	} else {
		m->merged++;
		m->pend.end = c.end;
		m->pend.n += c.n;
		if (dur > m->pend_best) { /* the group shows its longest member */
			m->pend.a = c.a;
			m->pend.state = c.state;
			m->pend_best = dur;
		}
	}
	if (m->pend.end - m->pend.start >= m->min_dur)
		flush_pending(m);
}

uint64_t timeline_merger_end(struct timeline_merger *m)
{
	flush_pending(m);
	return m->merged;
}

/* ---- hart intervals ---- */

/* A replay's view of one hart. */
struct hstate {
	uint32_t *stk; /* frame ids (timeline_harts) or node ids (timeline_profile) */
	size_t n, cap;
	int started;
	uint64_t t0, insn, cycle; /* stamps of the previous event */
	struct timeline_span cur; /* timeline_harts: the interval being built */
	struct timeline_merger mg;
};

struct hreplay {
	const struct profile *p;
	const struct timeline_opts *o;
	int cycles;
	int any;	  /* an event was seen */
	int64_t *proc_of; /* per frame: process index, or TIMELINE_NONE */
	struct timeline *t;
	struct hstate *hs;
	size_t nhs;
	timeline_span_fn fn; /* set: every span goes here, unmerged */
	void *fn_ctx;
};

/* A hart's finished interval: to its merger, or to the caller's sink (which
 * sees what a merger without min_dur keeps: the spans longer than 0). */
static void emit(struct hreplay *x, struct hstate *h, unsigned hart)
{
	if (!x->fn)
		timeline_merger_add(&h->mg, &h->cur);
	else if (h->cur.end > h->cur.start)
		x->fn(x->fn_ctx, hart, &h->cur);
}

static struct hstate *hstate_get(struct hstate **hs, size_t *n, unsigned hart)
{
	if (hart >= *n) {
		*hs = oob_xrealloc(*hs, (hart + 1) * sizeof(**hs));
		memset(*hs + *n, 0, (hart + 1 - *n) * sizeof(**hs));
		*n = hart + 1;
	}
	return &(*hs)[hart];
}

static void stack_apply(struct hstate *h, const struct recon_event *ev, uint32_t id)
{
	if (ev->kind == RECON_EV_OPEN) {
		oob_xgrow((void **)&h->stk, &h->cap, h->n + 1, sizeof(*h->stk));
		h->stk[h->n++] = id;
	} else if (h->n) {
		h->n--;
	}
}

static uint64_t when(int cycles, const struct recon_event *ev)
{
	return cycles ? ev->cycle : ev->seq;
}

static int on_hart_event(void *ctx, const struct recon_event *ev)
{
	struct hreplay *x = ctx;
	struct hstate *h = hstate_get(&x->hs, &x->nhs, ev->hart);
	uint64_t t = when(x->cycles, ev);
	stack_apply(h, ev, ev->frame);
	struct timeline_span s = {.a = TIMELINE_NONE, .n = 1};
	if (h->n) {
		s.a = x->proc_of[h->stk[0]];
		uint8_t kind = profile_frame(x->p, h->stk[h->n - 1])->kind;
		s.state = kind == PROFILE_FRAME_KERNEL || kind == PROFILE_FRAME_FIRMWARE;
	}
	if (!h->started) {
		h->started = 1;
		h->cur = s;
		h->cur.start = t;
		if (t < x->t->start || !x->any)
			x->t->start = t;
	} else if (s.a != h->cur.a || s.state != h->cur.state) {
		h->cur.end = t;
		emit(x, h, ev->hart);
		h->cur = s;
		h->cur.start = t;
	}
	h->t0 = t;
	if (t > x->t->end)
		x->t->end = t;
	x->any = 1;
	return 0;
}

static int64_t *process_index(const struct profile *p)
{
	size_t nf = profile_nframes(p);
	int64_t *v = oob_xmalloc((nf ? nf : 1) * sizeof(*v));
	for (size_t i = 0; i < nf; i++)
		v[i] = TIMELINE_NONE;
	for (size_t i = 0; i < profile_nprocesses(p); i++) {
		uint32_t f = profile_process(p, i)->frame;
		if (f < nf)
			v[f] = (int64_t)i;
	}
	return v;
}

static void hstates_free(struct hstate *hs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(hs[i].stk);
	free(hs);
}

static int evlog_for(struct evlog *log, const struct profile *p, int hart, evlog_fn fn, void *ctx,
		     struct oob_err *err)
{
	return evlog_replay(log, hart, (uint32_t)profile_nframes(p), fn, ctx, err);
}

/* An index that can serve this profile's time axis, else NULL. */
static struct evidx *usable(struct evidx *ix, const struct profile *p)
{
	return ix && evidx_cycles(ix) == profile_has_cycles(p) ? ix : NULL;
}

/* The replay of timeline_harts: from the index's checkpoint before the
 * window when there is an index, then the run's first and last event times
 * (which the partial replay did not see all of) from the index. */
static int harts_replay(struct evlog *log, struct evidx *ix, const struct profile *p,
			const struct timeline_opts *o, struct hreplay *x, struct oob_err *err)
{
	if (!ix)
		return evlog_for(log, p, o->hart, on_hart_event, x, err);
	unsigned nh = evidx_nharts(ix);
	uint64_t *lo = oob_xcalloc(nh ? nh : 1, sizeof(*lo)), *hi = oob_xcalloc(nh ? nh : 1, 8);
	for (unsigned i = 0; i < nh; i++) {
		lo[i] = o->from;
		hi[i] = o->to ? o->to : UINT64_MAX;
	}
	struct evlog_resume rs;
	evidx_seek(ix, o->hart, 1, lo, hi, &rs);
	free(lo);
	free(hi);
	int rc = evlog_replay_from(log, &rs, o->hart, (uint32_t)profile_nframes(p), on_hart_event,
				   x, err);
	x->any = 0;
	for (unsigned i = 0; rc == 0 && i < nh && i < x->nhs; i++) {
		uint64_t first, last, events;
		evidx_hart_events(ix, i, &first, &last, &events);
		if (!events || (o->hart >= 0 && (unsigned)o->hart != i))
			continue;
		if (!x->hs[i].started) { /* all its events outside the part read */
			x->hs[i].started = 1;
			x->hs[i].cur = (struct timeline_span){.start = last, .end = last, .n = 1};
			x->hs[i].t0 = last;
		}
		if (!x->any || first < x->t->start)
			x->t->start = first;
		if (!x->any || last > x->t->end)
			x->t->end = last;
		x->any = 1;
	}
	return rc;
}

int timeline_harts(struct evlog *log, const struct profile *p, const struct timeline_opts *o,
		   struct timeline **out, struct oob_err *err)
{
	return timeline_harts_ix(log, NULL, p, o, out, err);
}

int timeline_harts_ix(struct evlog *log, struct evidx *ix, const struct profile *p,
		      const struct timeline_opts *o, struct timeline **out, struct oob_err *err)
{
	struct timeline *t = oob_xcalloc(1, sizeof(*t));
	struct hreplay x = {.p = p, .o = o, .cycles = profile_has_cycles(p), .t = t};
	unsigned nh = evlog_nharts(log);
	t->cycles = x.cycles;
	x.proc_of = process_index(p);
	x.hs = oob_xcalloc(nh ? nh : 1, sizeof(*x.hs));
	x.nhs = nh;
	t->harts = oob_xcalloc(nh ? nh : 1, sizeof(*t->harts));
	for (unsigned i = 0; i < nh; i++) {
		t->harts[i].hart = i;
		timeline_merger_init(&x.hs[i].mg, o->from, o->to, o->min_dur, &t->harts[i].spans);
	}
	int rc = harts_replay(log, usable(ix, p), p, o, &x, err);
	for (unsigned i = 0; rc == 0 && i < nh; i++) {
		if (!x.hs[i].started) {
			free(t->harts[i].spans.v);
			continue;
		}
		x.hs[i].cur.end = x.hs[i].t0; /* the state the hart ended in */
		timeline_merger_add(&x.hs[i].mg, &x.hs[i].cur);
		t->merged += timeline_merger_end(&x.hs[i].mg);
		t->harts[t->nharts++] = t->harts[i];
	}
	free(x.proc_of);
	hstates_free(x.hs, x.nhs);
	if (rc < 0) {
		for (unsigned i = 0; i < nh; i++)
			free(t->harts[i].spans.v);
		t->nharts = 0;
		timeline_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

int timeline_harts_each(struct evlog *log, const struct profile *p, timeline_span_fn fn, void *ctx,
			struct oob_err *err)
{
	struct timeline t = {0};
	struct timeline_opts o = {.hart = -1};
	struct hreplay x = {.p = p, .o = &o, .cycles = profile_has_cycles(p), .t = &t};
	unsigned nh = evlog_nharts(log);
	x.fn = fn;
	x.fn_ctx = ctx;
	x.proc_of = process_index(p);
	x.hs = oob_xcalloc(nh ? nh : 1, sizeof(*x.hs));
	x.nhs = nh;
	int rc = evlog_for(log, p, -1, on_hart_event, &x, err);
	for (unsigned i = 0; rc == 0 && i < x.nhs; i++) {
		if (!x.hs[i].started)
			continue;
		x.hs[i].cur.end = x.hs[i].t0;
		emit(&x, &x.hs[i], i);
	}
	free(x.proc_of);
	hstates_free(x.hs, x.nhs);
	return rc;
}

void timeline_free(struct timeline *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nharts; i++)
		free(t->harts[i].spans.v);
	free(t->harts);
	free(t);
}

/* ---- the profile of a window ---- */

struct preplay {
	const struct profile *p;
	int cycles;
	uint64_t from, to;
	struct oob_map child; /* parent << 32 | frame -> node */
	struct profile_node *nodes;
	struct hstate *hs;
	size_t nhs;
	uint64_t insns, cycle_sum;
	/* exact windows (an index): per hart the records [pf, pt) and the
	 * cycles of records pf and pt */
	uint64_t *pf, *pt, *cf, *ct;
	size_t npos;
	struct oob_err *err;
};

static void index_children(struct preplay *x)
{
	size_t n = profile_nnodes(x->p);
	oob_map_init(&x->child, n * 2);
	for (uint32_t i = 1; i < n; i++) {
		const struct profile_node *nd = profile_node(x->p, i);
		*oob_map_put(&x->child, (uint64_t)nd->parent << 32 | nd->frame, NULL) = i;
	}
}

static int in_window(const struct preplay *x, uint64_t t)
{
	return t >= x->from && (x->to == 0 || t < x->to);
}

/* The part of the span [h->insn, ev->insn) in the hart's records [pf, pt). */
static void charge_exact(struct preplay *x, struct hstate *h, const struct recon_event *ev,
			 uint32_t top)
{
	unsigned k = ev->hart;
	if (k >= x->npos)
		return;
	uint64_t lo = h->insn > x->pf[k] ? h->insn : x->pf[k];
	uint64_t hi = ev->insn < x->pt[k] ? ev->insn : x->pt[k];
	if (lo >= hi)
		return;
	uint64_t c0 = lo == h->insn ? h->cycle : x->cf[k];
	uint64_t c1 = hi == ev->insn ? ev->cycle : x->ct[k];
	uint64_t cyc = c1 > c0 ? c1 - c0 : 0;
	x->nodes[top].self_insns += hi - lo;
	x->nodes[top].self_cycles += cyc;
	x->insns += hi - lo;
	x->cycle_sum += cyc;
}

static int opened_in_window(const struct preplay *x, const struct recon_event *ev, uint64_t t)
{
	if (!x->pf)
		return in_window(x, t);
	return ev->hart < x->npos && ev->insn >= x->pf[ev->hart] && ev->insn < x->pt[ev->hart];
}

static int on_profile_event(void *ctx, const struct recon_event *ev)
{
	struct preplay *x = ctx;
	struct hstate *h = hstate_get(&x->hs, &x->nhs, ev->hart);
	uint64_t t = when(x->cycles, ev);
	uint32_t top = h->n ? h->stk[h->n - 1] : 0;
	if (h->started && x->pf) {
		charge_exact(x, h, ev, top);
	} else if (h->started && in_window(x, h->t0)) {
		x->nodes[top].self_insns += ev->insn - h->insn;
		x->nodes[top].self_cycles += ev->cycle - h->cycle;
		x->insns += ev->insn - h->insn;
		x->cycle_sum += ev->cycle - h->cycle;
	}
	h->started = 1;
	h->t0 = t;
	h->insn = ev->insn;
	h->cycle = ev->cycle;
	uint32_t node = 0;
	if (ev->kind == RECON_EV_OPEN) {
		uint64_t *v = oob_map_get(&x->child, (uint64_t)top << 32 | ev->frame);
		if (!v)
			return oob_err_set(x->err, -EINVAL,
					   "stack events: frame %u under node %u is not in the "
					   "profile",
					   ev->frame, top);
		node = (uint32_t)*v;
		if (ev->calls && opened_in_window(x, ev, t))
			x->nodes[node].calls++;
	}
	stack_apply(h, ev, node);
	return 0;
}

/* Each hart's records [pf, pt) of the window, and the resume point. */
static int exact_bounds(struct preplay *x, struct evidx *ix, int hart, struct evlog_resume *rs)
{
	unsigned nh = evidx_nharts(ix);
	x->npos = nh;
	x->pf = oob_xcalloc(nh ? nh : 1, sizeof(uint64_t));
	x->pt = oob_xcalloc(nh ? nh : 1, sizeof(uint64_t));
	x->cf = oob_xcalloc(nh ? nh : 1, sizeof(uint64_t));
	x->ct = oob_xcalloc(nh ? nh : 1, sizeof(uint64_t));
	for (unsigned i = 0; i < nh; i++) {
		int rc = evidx_pos(ix, i, x->from, &x->pf[i], &x->cf[i], x->err);
		if (rc == 0 && x->to)
			rc = evidx_pos(ix, i, x->to, &x->pt[i], &x->ct[i], x->err);
		else
			x->pt[i] = UINT64_MAX;
		if (rc < 0)
			return rc;
	}
	evidx_seek(ix, hart, 0, x->pf, x->pt, rs);
	return 0;
}

int timeline_profile(struct evlog *log, const struct profile *p, int hart, uint64_t from,
		     uint64_t to, struct profile **out, struct oob_err *err)
{
	return timeline_profile_ix(log, NULL, p, hart, from, to, out, err);
}

int timeline_profile_ix(struct evlog *log, struct evidx *ix, const struct profile *p, int hart,
			uint64_t from, uint64_t to, struct profile **out, struct oob_err *err)
{
	size_t n = profile_nnodes(p), nf = profile_nframes(p);
	struct preplay x = {.p = p, .cycles = profile_has_cycles(p), .from = from, .to = to};
	x.err = err;
	x.nodes = oob_xcalloc(n ? n : 1, sizeof(*x.nodes));
	for (uint32_t i = 0; i < n; i++) {
		x.nodes[i].parent = profile_node(p, i)->parent;
		x.nodes[i].frame = profile_node(p, i)->frame;
	}
	index_children(&x);
	int rc;
	struct evlog_resume rs;
	if ((ix = usable(ix, p)) && (rc = exact_bounds(&x, ix, hart, &rs)) == 0)
		rc = evlog_replay_from(log, &rs, hart, (uint32_t)nf, on_profile_event, &x, err);
	else if (!ix)
		rc = evlog_for(log, p, hart, on_profile_event, &x, err);
	if (rc == 0) {
		struct profile_frame *fr = oob_xmalloc((nf ? nf : 1) * sizeof(*fr));
		for (uint32_t i = 0; i < nf; i++)
			fr[i] = *profile_frame(p, i);
		struct profile_stats st = *profile_stats(p);
		st.instructions = x.insns;
		st.cycles = x.cycle_sum;
		*out = profile_new(x.nodes, n, fr, nf, &st, err);
		if (*out)
			profile_copy_processes(*out, p);
		rc = *out ? 0 : err->code;
		free(fr);
	}
	oob_map_destroy(&x.child);
	hstates_free(x.hs, x.nhs);
	free(x.nodes);
	free(x.pf);
	free(x.pt);
	free(x.cf);
	free(x.ct);
	return rc;
}
