/*
 * Which stack slices the Perfetto writers write, and when, in one pass over
 * the event log.
 *
 * Dropping short frames without lookahead: a frame is written only once it
 * is known to last at least min_duration, i.e. at its close, or at the close
 * of a callee that qualifies (a callee never outlasts its callers). At that
 * moment the begins of every not yet written frame below it are written,
 * outermost first. Nothing else has been written for that hart since the
 * outermost of those opened (its callees were all too short so far), so each
 * hart's slices stay in time order and properly nested.
 *
 * Zero-length frames (opened and closed at the same stamp) are never
 * written: they carry no time, and their ties are ordered differently by
 * different viewers.
 *
 * A window is the same pass with every stamp clamped into [from, to): what
 * ran before from is zero-length at from, a frame open at to closes there
 * (and nothing after to is looked at), so the rule applies to the part of
 * each frame in the window and the kept slices stay nested.
 */
#include <stdlib.h>

#include <errno.h>

#include "export/export_impl.h"
#include "export/export_slices.h"
#include "util/oob_mem.h"

struct open_frame {
	uint32_t frame;
	uint64_t t;
};

struct hart_slices {
	struct open_frame *stk;
	size_t n, cap;
	size_t nwritten; /* frames stk[0 .. nwritten) have their begin out */
	uint64_t last;
	int past; /* an event at or after the window's end was seen */
};

struct slices {
	const struct export_clock *clk;
	uint64_t min;
	uint64_t from, to; /* the window: [0, UINT64_MAX) for a whole export */
	const struct export_slice_sink *s;
	struct hart_slices *h;
	uint64_t kept, dropped, hidden;
};

static void close_frame(struct slices *x, struct hart_slices *t, unsigned hart, uint64_t ns)
{
	struct open_frame *top = &t->stk[t->n - 1];
	if (t->nwritten < t->n && ns - top->t >= x->min && ns > top->t) {
		for (size_t i = t->nwritten; i < t->n; i++)
			x->s->begin(x->s->ctx, hart, (uint32_t)i, t->stk[i].frame, t->stk[i].t);
		t->nwritten = t->n;
	}
	if (t->nwritten == t->n) {
		x->s->end(x->s->ctx, hart, top->frame, ns);
		t->nwritten--;
		x->kept++;
	} else {
		x->dropped++;
		if (ns > top->t)
			x->hidden++;
	}
	t->n--;
}

static int on_event(void *ctx, const struct recon_event *ev)
{
	struct slices *x = ctx;
	struct hart_slices *t = &x->h[ev->hart];
	if (t->past)
		return 0;
	uint64_t ns = export_clock_time(x->clk, ev);
	if (ns < t->last)
		ns = t->last; /* a cycle counter going back (damaged trace) */
	t->last = ns;
	if (x->to != UINT64_MAX && ns >= x->to) {
		while (t->n)
			close_frame(x, t, ev->hart, x->to);
		t->past = 1;
		return 0;
	}
	if (ns < x->from)
		ns = x->from;
	if (ev->kind == RECON_EV_OPEN) {
		oob_xgrow((void **)&t->stk, &t->cap, t->n + 1, sizeof(*t->stk));
		t->stk[t->n++] = (struct open_frame){ev->frame, ns};
	} else {
		close_frame(x, t, ev->hart, ns);
	}
	return 0;
}

int export_slices(struct evlog *ev, uint32_t nframes, const struct export_clock *c, uint64_t min_ns,
		  const struct export_slice_sink *s, uint64_t *kept, uint64_t *dropped,
		  struct oob_err *err)
{
	size_t nh = evlog_nharts(ev);
	struct slices x = {.clk = c, .min = min_ns, .to = UINT64_MAX, .s = s};
	x.h = oob_xcalloc(nh ? nh : 1, sizeof(*x.h));
	int rc = evlog_replay(ev, -1, nframes, on_event, &x, err);
	for (size_t i = 0; i < nh; i++)
		free(x.h[i].stk);
	free(x.h);
	*kept = x.kept;
	*dropped = x.dropped;
	return rc;
}

int export_slices_window(struct evlog *ev, struct evidx *ix, uint32_t nframes,
			 const struct export_slices_window *w, const struct export_slice_sink *s,
			 uint64_t *kept, uint64_t *hidden, struct oob_err *err)
{
	struct export_clock clk = {.cycles = w->cycles, .seq = !w->cycles};
	struct slices x = {.clk = &clk, .min = w->min, .from = w->from, .s = s};
	x.to = w->to ? w->to : UINT64_MAX;
	if (x.to <= x.from)
		return oob_err_set(err, -EINVAL, "slices: the window [%llu, %llu) is empty",
				   (unsigned long long)x.from, (unsigned long long)x.to);
	size_t nh = evlog_nharts(ev);
	x.h = oob_xcalloc(nh ? nh : 1, sizeof(*x.h));
	int rc;
	if (ix && evidx_cycles(ix) == w->cycles && evidx_nharts(ix) <= nh) {
		unsigned ni = evidx_nharts(ix);
		uint64_t *lo = oob_xcalloc(ni ? ni : 1, sizeof(*lo));
		uint64_t *hi = oob_xcalloc(ni ? ni : 1, sizeof(*hi));
		for (unsigned i = 0; i < ni; i++) {
			lo[i] = x.from;
			hi[i] = x.to;
		}
		struct evlog_resume rs;
		evidx_seek(ix, w->hart, 1, lo, hi, &rs);
		free(lo);
		free(hi);
		rc = evlog_replay_from(ev, &rs, w->hart, nframes, on_event, &x, err);
	} else {
		rc = evlog_replay(ev, w->hart, nframes, on_event, &x, err);
	}
	for (size_t i = 0; i < nh; i++)
		free(x.h[i].stk);
	free(x.h);
	*kept = x.kept;
	*hidden = x.hidden;
	return rc;
}
