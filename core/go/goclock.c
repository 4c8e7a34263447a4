/* goclock: the Go clock model, its least-squares fit and the alignment of a
 * Go execution trace with the instruction trace of the same run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "go/goclock.h"
#include "util/oob_map.h"
#include "util/oob_mem.h"
#include "sym/sym.h"
#include "trace/trace_merge.h"

double goclock_map(const struct goclock *c, uint64_t go_ticks)
{
	return c->a * (double)(int64_t)(go_ticks - c->x0) + c->b;
}

uint64_t goclock_unmap(const struct goclock *c, double trace_time)
{
	double d = (trace_time - c->b) / c->a + (double)c->x0;
	return d <= 0 ? 0 : d >= 1.8e19 ? UINT64_MAX : (uint64_t)llround(d);
}

int goclock_from_hz(double hz, double offset, uint64_t go_freq, struct goclock *out,
		    struct oob_err *err)
{
	if (!(hz > 0) || !isfinite(hz) || !go_freq || !isfinite(offset))
		return oob_err_set(err, -EINVAL,
				   "go_clock: hz must be positive and finite (got %g) and the Go "
				   "trace must have a frequency (got %llu)",
				   hz, (unsigned long long)go_freq);
	*out = (struct goclock){.a = hz / (double)go_freq, .b = offset, .x0 = 0};
	return 0;
}

static double tolerance(const struct goclock_fit_opts *o, double span)
{
	if (o && o->max_residual > 0)
		return o->max_residual;
	return (o && o->max_residual_rel > 0 ? o->max_residual_rel : 0.02) * span;
}

/* Residuals of out->clock; fills the summary and returns 0 or the refusal. */
static int judge(const struct goclock_anchor *a, size_t n, const struct goclock_fit_opts *o,
		 struct goclock_fit *out, double *resid, struct oob_err *err)
{
	double lo = INFINITY, hi = -INFINITY, ss = 0;
	out->n = n;
	out->max_abs = 0;
	out->worst = 0;
	for (size_t i = 0; i < n; i++) {
		double r = goclock_map(&out->clock, a[i].go) - (double)a[i].trace;
		if (resid)
			resid[i] = r;
		ss += r * r;
		if (fabs(r) > out->max_abs) {
			out->max_abs = fabs(r);
			out->worst = i;
		}
		lo = fmin(lo, (double)a[i].trace);
		hi = fmax(hi, (double)a[i].trace);
	}
	out->span = n ? hi - lo : 0;
	out->rms = n ? sqrt(ss / (double)n) : 0;
	out->tolerance = tolerance(o, out->span);
	if (n && out->max_abs > out->tolerance) {
		const struct goclock_anchor *w = &a[out->worst];
		return oob_err_set(
		    err, -EINVAL,
		    "the Go clock model does not hold: anchor %zu of %zu (Go event at "
		    "offset 0x%llx, tick %llu; trace time %llu on hart %u) is %.0f "
		    "trace units off the line, over the tolerance of %.0f (span %.0f, "
		    "rms %.1f)",
		    out->worst, n, (unsigned long long)w->go_off, (unsigned long long)w->go,
		    (unsigned long long)w->trace, w->hart, out->max_abs, out->tolerance, out->span,
		    out->rms);
	}
	return 0;
}

int goclock_fit(const struct goclock_anchor *a, size_t n, const struct goclock_fit_opts *o,
		struct goclock_fit *out, double *resid, struct oob_err *err)
{
	size_t min = o && o->min_anchors ? o->min_anchors : 3;
	memset(out, 0, sizeof(*out));
	out->n = n;
	if (n < min || n < 2)
		return oob_err_set(err, -EINVAL,
				   "a Go clock fit needs at least %zu anchors, there are %zu",
				   min < 2 ? 2 : min, n);
	/* Centre on the first anchor so that large tick and cycle values keep
	 * their precision in doubles. */
	uint64_t x0 = a[0].go, y0 = a[0].trace;
	double mx = 0, my = 0, sxx = 0, sxy = 0;
	for (size_t i = 0; i < n; i++) {
		mx += (double)(int64_t)(a[i].go - x0);
		my += (double)(int64_t)(a[i].trace - y0);
	}
	mx /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		double dx = (double)(int64_t)(a[i].go - x0) - mx;
		double dy = (double)(int64_t)(a[i].trace - y0) - my;
		sxx += dx * dx;
		sxy += dx * dy;
	}
	if (sxx == 0)
		return oob_err_set(
		    err, -EINVAL,
		    "a Go clock fit needs anchors at different Go times (all %zu are "
		    "at tick %llu)",
		    n, (unsigned long long)x0);
	double slope = sxy / sxx;
	out->clock = (struct goclock){.a = slope, .b = (double)y0 + my - slope * mx, .x0 = x0};
	int rc = judge(a, n, o, out, resid, err);
	if (!(slope > 0) || !isfinite(slope))
		return oob_err_set(
		    err, -EINVAL,
		    "the Go clock fit has slope %g: Go time does not advance with the "
		    "trace's time (are these traces of the same run?)",
		    slope);
	return rc;
}

int goclock_check(const struct goclock *c, const struct goclock_anchor *a, size_t n,
		  const struct goclock_fit_opts *o, struct goclock_fit *out, double *resid,
		  struct oob_err *err)
{
	memset(out, 0, sizeof(*out));
	out->clock = *c;
	return judge(a, n, o, out, resid, err);
}

/* --- alignment -------------------------------------------------------------- */

struct hit {
	uint64_t idx;
	uint32_t hart;
};

struct scan {
	struct hit *entries, *ecalls;
	size_t nentries, cap_entries, necalls, cap_ecalls;
	uint64_t insns;
	unsigned harts;
	int cycles;
};

static void hit_push(struct hit **v, size_t *n, size_t *cap, uint64_t idx, uint32_t hart)
{
	oob_xgrow((void **)v, cap, *n + 1, sizeof(**v));
	(*v)[(*n)++] = (struct hit){idx, hart};
}

#define ECALL 0x00000073u

static int hit_cmp(const void *pa, const void *pb)
{
	const struct hit *a = pa, *b = pb;
	if (a->idx != b->idx)
		return a->idx < b->idx ? -1 : 1;
	return (a->hart > b->hart) - (a->hart < b->hart);
}

/* The trace-event function's run-time range [lo, hi). */
struct func_range {
	uint64_t lo, hi;
};

/* Whether pc, preceded on its hart by prev, enters f once more for one more
 * event. Go's stack-split prologue calls morestack, which resumes at the jump
 * back to the entry that follows the call: that second pass over the entry
 * comes from inside f itself and emits nothing (the event functions never
 * call themselves). */
static int event_entry(const struct func_range *f, uint64_t pc, uint64_t prev)
{
	return pc == f->lo && !(prev >= f->lo && prev < f->hi);
}

/* One pass over the instruction trace: entries into f, and ecalls. */
static int scan_trace(const struct goclock_traces *t, const struct func_range *f, struct scan *s,
		      struct oob_err *err)
{
	struct trace_merge *r = trace_merge_open_run(t->paths, &t->opts, t->harts, t->n, err);
	const struct trace_batch *b;
	uint64_t *prev; /* last pc per hart */
	int rc;
	if (!r)
		return err ? err->code : -EINVAL;
	if (t->n > 1 && !trace_merge_by_cycle(r)) {
		trace_merge_close(r);
		return oob_err_set(err, -EINVAL,
				   "%zu instruction traces without cycles have no common time",
				   t->n);
	}
	prev = oob_xcalloc(UINT16_MAX + 1, sizeof(*prev));
	while ((rc = trace_merge_next(r, &b, err)) > 0) {
		s->harts = b->hart + 1u > s->harts ? b->hart + 1u : s->harts;
		s->cycles = b->cycle != NULL;
		for (uint32_t i = 0; i < b->n; i++) {
			if (event_entry(f, b->pc[i], i ? b->pc[i - 1] : prev[b->hart]))
				hit_push(&s->entries, &s->nentries, &s->cap_entries,
					 b->cycle ? b->cycle[i] : b->seq + i, b->hart);
		}
		if (b->n)
			prev[b->hart] = b->pc[b->n - 1];
		if (b->insn)
			for (uint32_t i = 0; i < b->n; i++)
				if (b->insn[i] == ECALL)
					hit_push(&s->ecalls, &s->necalls, &s->cap_ecalls,
						 b->cycle ? b->cycle[i] : b->seq + i, b->hart);
		s->insns += b->n;
	}
	trace_merge_close(r);
	free(prev);
	/* Harts interleave in the file; with cycles, time order is by cycle. */
	if (s->cycles) {
		qsort(s->entries, s->nentries, sizeof(*s->entries), hit_cmp);
		qsort(s->ecalls, s->necalls, sizeof(*s->ecalls), hit_cmp);
	}
	return rc;
}

static int find_func(const struct goclock_align_opts *o, const char **name, struct func_range *f,
		     struct oob_err *err)
{
	static const char *const defaults[] = {"runtime.traceEventLocked",
					       "runtime.traceWriter.event"};
	struct sym_binary *b = sym_binary_open(o->elf, err);
	if (!b)
		return err ? err->code : -EINVAL;
	uint64_t addr = 0;
	if (o->func) {
		*name = o->func;
		addr = sym_binary_find_func(b, o->func);
	}
	for (size_t i = 0; !o->func && !addr && i < 2; i++) {
		*name = defaults[i];
		addr = sym_binary_find_func(b, defaults[i]);
	}
	const struct sym_func *sf = addr ? sym_binary_lookup(b, addr) : NULL;
	*f = (struct func_range){addr + o->elf_bias, (sf ? sf->hi : addr + 1) + o->elf_bias};
	sym_binary_free(b);
	if (!addr)
		return oob_err_set(err, -ENOENT,
				   "%s: no function %s (a stripped binary, or not a Go program "
				   "that writes execution traces)",
				   o->elf,
				   o->func ? o->func
					   : "runtime.traceEventLocked or "
					     "runtime.traceWriter.event");
	return 0;
}

struct goev {
	uint64_t ticks, m, off;
	size_t order;
	uint16_t kind;
};

static int goev_cmp(const void *pa, const void *pb)
{
	const struct goev *a = pa, *b = pb;
	if (a->ticks != b->ticks)
		return a->ticks < b->ticks ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

/* The Go trace's timed events, by time (ties: the trace's own order). */
static struct goev *go_events(const struct gotrace *gt, size_t *n)
{
	size_t nev, k = 0;
	const struct gotrace_event *ev = gotrace_events(gt, &nev);
	struct goev *v = oob_xmalloc((nev + 1) * sizeof(*v));
	for (size_t i = 0; i < nev; i++)
		if (ev[i].kind != GOTRACE_EV_CPU_SAMPLE) {
			v[k] = (struct goev){ev[i].ticks, ev[i].m, ev[i].off, k, ev[i].kind};
			k++;
		}
	qsort(v, k, sizeof(*v), goev_cmp);
	*n = k;
	return v;
}

/* First ecall on hart after idx (ecalls sorted by idx), or NULL. */
static const struct hit *next_ecall(const struct scan *s, uint32_t hart, uint64_t idx)
{
	size_t lo = 0, hi = s->necalls;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->ecalls[mid].idx <= idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < s->necalls; i++)
		if (s->ecalls[i].hart == hart)
			return &s->ecalls[i];
	return NULL;
}

/* Per Go thread: the hart most of its anchors ran on. Counts per (thread,
 * hart) pair in one map; threads in another. */
static void threads(struct goclock_alignment *al)
{
	struct oob_map tm, pairs;
	size_t cap = 0;
	oob_map_init(&tm, 16);
	oob_map_init(&pairs, 16);
	for (size_t i = 0; i < al->nemit; i++) {
		const struct goclock_anchor *a = &al->anchors[i];
		if (a->go_m == GOTRACE_NONE || a->go_m >= (1ull << 47))
			continue;
		int fresh;
		uint64_t *slot = oob_map_put(&tm, a->go_m, &fresh);
		if (fresh) {
			oob_xgrow((void **)&al->threads, &cap, al->nthreads + 1,
				  sizeof(*al->threads));
			al->threads[al->nthreads] = (struct goclock_thread){a->go_m, 0, 0, 0};
			*slot = al->nthreads++;
		}
		struct goclock_thread *th = &al->threads[*slot];
		uint64_t *c = oob_map_put(&pairs, a->go_m << 16 | (a->hart & 0xffff), NULL);
		th->anchors++;
		if (++*c > th->other || (*c == th->other && a->hart == th->hart)) {
			th->other = *c; /* holds the best count until the end */
			th->hart = a->hart;
		}
	}
	for (size_t t = 0; t < al->nthreads; t++) {
		struct goclock_thread *th = &al->threads[t];
		th->other = th->anchors - th->other;
		al->thread_mismatch += th->other;
	}
	oob_map_destroy(&tm);
	oob_map_destroy(&pairs);
}

static void add_syscalls(struct goclock_alignment *al, const struct scan *s)
{
	size_t n = al->nemit;
	for (size_t i = 0; i < n; i++) {
		const struct goclock_anchor *e = &al->anchors[i];
		if (e->go_kind != GOTRACE_EV_GO_SYSCALL)
			continue;
		const struct hit *h = next_ecall(s, e->hart, e->trace);
		if (!h)
			continue;
		struct goclock_anchor *a = &al->anchors[al->nanchors++];
		*a = *e;
		a->trace = h->idx;
		a->kind = GOCLOCK_ANCHOR_SYSCALL;
		al->nsys++;
	}
}

static struct goclock_alignment *pair(const struct goev *ev, size_t n, const struct scan *s)
{
	struct goclock_alignment *al = oob_xcalloc(1, sizeof(*al));
	al->anchors = oob_xcalloc(2 * n + 1, sizeof(*al->anchors));
	al->resid = oob_xcalloc(2 * n + 1, sizeof(*al->resid));
	for (size_t i = 0; i < n; i++)
		al->anchors[i] = (struct goclock_anchor){.go = ev[i].ticks,
							 .trace = s->entries[i].idx,
							 .go_m = ev[i].m,
							 .go_off = ev[i].off,
							 .hart = s->entries[i].hart,
							 .kind = GOCLOCK_ANCHOR_EMIT,
							 .go_kind = ev[i].kind};
	al->nemit = al->nanchors = n;
	add_syscalls(al, s);
	threads(al);
	al->go_events = n;
	al->entries = s->nentries;
	al->ecalls = s->necalls;
	al->insns = s->insns;
	al->harts = s->harts;
	al->cycles = s->cycles;
	return al;
}

static void syscall_residuals(struct goclock_alignment *al)
{
	double sum = 0;
	for (size_t i = al->nemit; i < al->nanchors; i++) {
		double r =
		    goclock_map(&al->fit.clock, al->anchors[i].go) - (double)al->anchors[i].trace;
		al->resid[i] = r;
		sum += r;
		al->sys_max_abs = fmax(al->sys_max_abs, fabs(r));
	}
	al->sys_mean = al->nsys ? sum / (double)al->nsys : 0;
}

int goclock_align(const struct gotrace *gt, const struct goclock_traces *insn,
		  const struct goclock_align_opts *opts, struct goclock_alignment **out,
		  struct oob_err *err)
{
	struct scan s = {0};
	struct goev *ev = NULL;
	const char *fname = NULL;
	struct func_range f = {0, 0};
	size_t n = 0;
	int rc;
	*out = NULL;
	if ((rc = find_func(opts, &fname, &f, err)) < 0)
		return rc;
	if ((rc = scan_trace(insn, &f, &s, err)) < 0)
		goto out;
	ev = go_events(gt, &n);
	if (n != s.nentries) {
		const char *more = insn->n > 1 ? " (with the other harts)" : "";
		rc = oob_err_set(err, -EINVAL,
				 "the Go trace has %zu timed events but %s%s enters %s (0x%llx) "
				 "%zu times: not the same run, or one of the traces is cut",
				 n, insn->paths[0], more, fname, (unsigned long long)f.lo,
				 s.nentries);
		goto out;
	}
	struct goclock_alignment *al = pair(ev, n, &s);
	struct goclock_fit_opts fo = opts->fit;
	al->func = fname;
	al->func_addr = f.lo;
	if (fo.max_residual <= 0 && fo.max_residual_rel <= 0)
		fo.max_residual_rel = s.cycles ? GOCLOCK_TOL_CYCLES : GOCLOCK_TOL_INSNS;
	if (opts->given)
		rc = goclock_check(opts->given, al->anchors, al->nemit, &fo, &al->fit, al->resid,
				   err);
	else
		rc = goclock_fit(al->anchors, al->nemit, &fo, &al->fit, al->resid, err);
	syscall_residuals(al);
	*out = al;
out:
	free(ev);
	free(s.entries);
	free(s.ecalls);
	return rc;
}

void goclock_alignment_free(struct goclock_alignment *al)
{
	if (!al)
		return;
	free(al->anchors);
	free(al->resid);
	free(al->threads);
	free(al);
}

double goclock_align_map(const struct goclock_alignment *al, uint64_t go_ticks)
{
	const struct goclock_anchor *a = al->anchors;
	size_t n = al->nemit, lo = 0, hi = n;
	if (!n || go_ticks < a[0].go || go_ticks > a[n - 1].go)
		return goclock_map(&al->fit.clock, go_ticks);
	while (lo < hi) { /* first anchor at or after go_ticks */
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid].go < go_ticks)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (a[lo].go == go_ticks || lo == 0)
		return (double)a[lo].trace;
	const struct goclock_anchor *p = &a[lo - 1], *q = &a[lo];
	double f = (double)(go_ticks - p->go) / (double)(q->go - p->go);
	return (double)p->trace + f * ((double)q->trace - (double)p->trace);
}
