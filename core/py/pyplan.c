/*
 * The follower (pyplan.h; the rules are docs/RECONSTRUCTION.md 17).
 *
 * Per Python frame the interpreter runs, the set of (code object,
 * instruction) pairs its dispatches so far allow: a frame start allows every
 * code object at its first instruction or after a yield (a generator
 * resumed); each dispatch keeps the pairs whose next instruction's base
 * opcode is one the dispatched label stands for; exception unwinding moves
 * each pair to its handler, or marks it leaving. The frames form one stack
 * (the interpreter's frame stack is LIFO across C calls too), so every
 * dispatch belongs to the top frame. Frames end after RETURN_VALUE,
 * YIELD_VALUE, RETURN_GENERATOR or at exit_unwind.
 *
 * A frame's code object is decided when the run is over, in start order:
 * the one code object its pairs name; else the callee the parent's call site
 * names statically (the map's "c" lines); else, for a generator resumed,
 * the one candidate with a generator alive; else it stays ambiguous.
 */
#include "py/pyplan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_map.h"
#include "util/oob_mem.h"

#define OP_RETURN_VALUE	    83
#define OP_YIELD_VALUE	    86
#define OP_RETURN_GENERATOR 75
#define OP_RAISE_VARARGS    130
#define OP_RERAISE	    119
#define SNAP_MAX	    16 /* the parent's pairs kept at a call */

enum { C_EXACT, C_AFTER, C_GONE };

struct cand {
	uint32_t code, k;   /* code object, instruction */
	uint8_t mode, kind; /* C_*; AFTER: the pycode_kind of the dispatch that ran k */
	uint8_t again;	    /* AFTER: k may be dispatched again (see step) */
	uint8_t resumed;    /* started after a yield, not at the first instruction */
};

struct act {
	uint32_t parent; /* activation below (the caller), or PYPLAN_NONE */
	uint8_t entry;	 /* started by a call of the eval function (not inlined) */
	uint8_t throw_in;
	uint8_t resumed;	/* every surviving pair started after a yield */
	uint8_t created;	/* ended by RETURN_GENERATOR */
	uint8_t finished;	/* ended by RETURN_VALUE or an exception (not by a yield) */
	uint32_t outer_pending; /* an entry's: the caller's inline frames still to pop */
	uint32_t *codes;	/* the candidates when it ended (or the run did) */
	uint32_t ncodes;
	uint32_t snap[SNAP_MAX][2]; /* the parent's (code, instruction) pairs at the call */
	uint32_t nsnap;
	uint64_t begin, end; /* order of the start and end among all starts and ends */
	uint32_t code;	     /* decided */
};

struct frame {
	uint32_t act;
	struct cand *c;
	uint32_t n, cap;
	int pushed; /* its first dispatch was planned (the reconstruction pushed it) */
};

struct pyfollow {
	const struct pyeval *ev;
	const struct pycode *map;
	struct oob_map labels; /* pc -> 1 + index into lab */
	struct {
		uint8_t nq;
		uint8_t q[8]; /* the quickened opcodes of the label */
	} lab[256];
	struct frame *stk;
	uint32_t n, cap;
	struct act *acts;
	size_t nacts, capacts;
	uint64_t clock;
	int entered;	  /* the eval function was entered, no frame started yet */
	int raised;	  /* the last dispatch raised: the error label, if it follows, is
			     the same exception */
	uint32_t pending; /* inlined frames that ended, to pop at the next dispatch */
	struct pyplan *plan;
	size_t capev;
	struct cand *tmp;
	uint32_t ntmp, captmp;
	struct cand *init, *thrown; /* the pairs of a frame start, of a throw */
	uint32_t ninit, nthrown;
};

static void tmp_push(struct pyfollow *f, struct cand c)
{
	if (f->ntmp == f->captmp) {
		size_t cap = f->captmp;
		oob_xgrow((void **)&f->tmp, &cap, f->ntmp + 1, sizeof(*f->tmp));
		f->captmp = (uint32_t)cap;
	}
	f->tmp[f->ntmp++] = c;
}

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->code != b->code)
		return a->code < b->code ? -1 : 1;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	if (a->mode != b->mode)
		return a->mode < b->mode ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->again < b->again ? -1 : a->again > b->again;
}

/* tmp without its duplicates (two pairs that lead to the same place): a
 * pair started after a yield only if every one of its sources did. */
static void tmp_unique(struct pyfollow *f)
{
	if (f->ntmp < 2)
		return;
	qsort(f->tmp, f->ntmp, sizeof(*f->tmp), cand_cmp);
	uint32_t w = 0;
	for (uint32_t k = 0; k < f->ntmp; k++) {
		if (w && cand_cmp(&f->tmp[w - 1], &f->tmp[k]) == 0)
			f->tmp[w - 1].resumed &= f->tmp[k].resumed;
		else
			f->tmp[w++] = f->tmp[k];
	}
	f->ntmp = w;
}

/* The frame's pairs := tmp. */
static void take_tmp(struct frame *fr, struct pyfollow *f)
{
	tmp_unique(f);
	struct cand *c = fr->c;
	uint32_t cap = fr->cap;
	fr->c = f->tmp;
	fr->cap = f->captmp;
	fr->n = f->ntmp;
	f->tmp = c;
	f->captmp = cap;
	f->ntmp = 0;
}

static struct act *act_new(struct pyfollow *f, int entry)
{
	oob_xgrow((void **)&f->acts, &f->capacts, f->nacts + 1, sizeof(*f->acts));
	struct act *a = &f->acts[f->nacts++];
	*a = (struct act){.parent = f->n ? f->stk[f->n - 1].act : PYPLAN_NONE,
			  .entry = (uint8_t)entry,
			  .begin = f->clock++,
			  .end = UINT64_MAX,
			  .code = PYPLAN_NONE};
	if (f->n) {
		struct frame *p = &f->stk[f->n - 1];
		for (uint32_t k = 0; k < p->n && a->nsnap < SNAP_MAX; k++)
			if (p->c[k].mode == C_AFTER) {
				a->snap[a->nsnap][0] = p->c[k].code;
				a->snap[a->nsnap++][1] = p->c[k].k;
			}
	}
	return a;
}

static struct frame *frame_push(struct pyfollow *f, int entry)
{
	if (f->n == f->cap) {
		size_t cap = f->cap;
		oob_xgrow((void **)&f->stk, &cap, f->n + 1, sizeof(*f->stk));
		memset(f->stk + f->cap, 0, (cap - f->cap) * sizeof(*f->stk));
		f->cap = (uint32_t)cap;
	}
	struct act *a = act_new(f, entry);
	if (entry) {
		/* A C function called back into Python (a finalizer run by the
		 * RETURN_VALUE that freed the caller's locals): the inline frames
		 * ended before it are popped at the caller's next dispatch, after
		 * this eval call returns, not at this frame's first. */
		a->outer_pending = f->pending;
		f->pending = 0;
	}
	struct frame *fr = &f->stk[f->n++];
	fr->act = (uint32_t)(f->nacts - 1);
	fr->n = 0;
	fr->pushed = 0;
	f->plan->st.frames++;
	return fr;
}

/* The pairs a frame starts with (a start, a throw): computed once. */
static void starts(struct pyfollow *f, int thrown, struct cand **out, uint32_t *n)
{
	f->ntmp = 0;
	for (uint32_t c = 0; c < f->map->n; c++) {
		const struct pycode_obj *o = &f->map->v[c];
		if (!thrown)
			tmp_push(f, (struct cand){.code = c, .mode = C_EXACT});
		for (uint32_t k = 0; k < o->nin; k++) {
			uint16_t op = o->in[k].op;
			if (thrown && op == OP_YIELD_VALUE)
				tmp_push(f, (struct cand){.code = c,
							  .k = k,
							  .mode = C_AFTER,
							  .kind = PYCODE_ONE,
							  .resumed = 1});
			else if (!thrown && (op == OP_YIELD_VALUE || op == OP_RETURN_GENERATOR) &&
				 o->in[k].nsucc)
				tmp_push(f, (struct cand){.code = c,
							  .k = o->in[k].succ[0],
							  .mode = C_EXACT,
							  .resumed = 1});
		}
	}
	*n = f->ntmp;
	*out = oob_xmalloc((f->ntmp ? f->ntmp : 1) * sizeof(**out));
	memcpy(*out, f->tmp, f->ntmp * sizeof(**out));
	f->ntmp = 0;
}

static void begin(struct frame *fr, const struct cand *c, uint32_t n)
{
	if (fr->cap < n) {
		size_t cap = fr->cap;
		oob_xgrow((void **)&fr->c, &cap, n, sizeof(*fr->c));
		fr->cap = (uint32_t)cap;
	}
	memcpy(fr->c, c, n * sizeof(*c));
	fr->n = n;
}

/* A frame start: every code object at its first instruction, or after a
 * yield (a generator resumed: after YIELD_VALUE, or after RETURN_GENERATOR
 * for its first resumption). */
static void start(struct pyfollow *f)
{
	int entry = f->entered;
	f->entered = 0;
	begin(frame_push(f, entry), f->init, f->ninit);
}

/* A generator thrown into (gen.throw, close): the eval function runs its
 * frame from the yield it is suspended at, straight to exception
 * unwinding, without start_frame. */
static void throw_in(struct pyfollow *f)
{
	f->entered = 0;
	struct frame *fr = frame_push(f, 1);
	f->acts[fr->act].throw_in = 1;
	f->plan->st.throws++;
	begin(fr, f->thrown, f->nthrown);
}

static void end(struct pyfollow *f, int finished, int created)
{
	struct frame *fr = &f->stk[--f->n];
	struct act *a = &f->acts[fr->act];
	a->end = f->clock++;
	a->finished = (uint8_t)finished;
	a->created = (uint8_t)created;
	/* Leaving by an exception: the pairs that had no handler. */
	int gone = 0;
	for (uint32_t k = 0; k < fr->n; k++)
		gone |= fr->c[k].mode == C_GONE;
	a->codes = oob_xmalloc((fr->n ? fr->n : 1) * sizeof(*a->codes));
	a->resumed = 1;
	for (uint32_t k = 0; k < fr->n; k++) {
		if (gone && fr->c[k].mode != C_GONE)
			continue;
		a->resumed &= fr->c[k].resumed;
		uint32_t j = 0;
		while (j < a->ncodes && a->codes[j] != fr->c[k].code)
			j++;
		if (j == a->ncodes)
			a->codes[a->ncodes++] = fr->c[k].code;
	}
	if (a->entry) /* the eval function returns: its frames go with it */
		f->pending = a->outer_pending;
	else if (fr->pushed)
		f->pending++;
}

static int matches(const struct pycode *m, uint8_t q, uint16_t op)
{
	return m->deopt[q] == op;
}

/* The pairs that dispatch t of c's code object may be, and, when the one
 * before ran `more` instructions past its own without a dispatch, those
 * after t. A dispatch may come back to its instruction: an adaptive form
 * once it has specialized, and a specialized form that misses (its DEOPT_IF
 * re-dispatches the instruction as the base opcode). */
static void step(struct pyfollow *f, const struct cand *c, uint32_t t, const uint8_t *q, uint8_t nq,
		 int more)
{
	const struct pycode_obj *o = &f->map->v[c->code];
	for (uint8_t j = 0; j < nq; j++)
		if (matches(f->map, q[j], o->in[t].op)) {
			uint8_t kind = f->map->kind[q[j]];
			uint8_t again = kind == PYCODE_AGAIN || f->map->deopt[q[j]] != q[j];
			tmp_push(f, (struct cand){.code = c->code,
						  .k = t,
						  .mode = C_AFTER,
						  .kind = kind,
						  .again = again,
						  .resumed = c->resumed});
		}
	for (uint16_t s = 0; more > 0 && s < o->in[t].nsucc; s++)
		step(f, c, o->in[t].succ[s], q, nq, more - 1);
}

/* How many instructions a dispatch of that kind may run past its own. */
static int extra(uint8_t kind)
{
	return kind == PYCODE_THREE ? 2 : kind == PYCODE_TWO;
}

/* Exception unwinding in the top frame: each pair goes to its handler, or
 * is leaving the frame (exit_unwind follows). */
static void unwind(struct pyfollow *f)
{
	if (f->entered)
		throw_in(f);
	if (!f->n)
		return;
	struct frame *fr = &f->stk[f->n - 1];
	f->ntmp = 0;
	for (uint32_t k = 0; k < fr->n; k++) {
		struct cand c = fr->c[k];
		if (c.mode == C_GONE)
			continue;
		uint32_t h = pycode_handler(&f->map->v[c.code], c.k);
		struct cand to = {.code = c.code, .k = h, .mode = C_EXACT, .resumed = c.resumed};
		if (h == PYCODE_NONE) {
			to.k = c.k;
			to.mode = C_GONE;
		}
		tmp_push(f, to);
	}
	take_tmp(fr, f);
}

static void dispatch(struct pyfollow *f, uint64_t seq, uint32_t li)
{
	if (f->entered)
		throw_in(f); /* a dispatch with no frame start: see throw_in */
	if (!f->n)
		return; /* a frame that started before the trace */
	f->plan->st.dispatches++;
	struct frame *fr = &f->stk[f->n - 1];
	if (!fr->pushed || f->pending) {
		struct pyplan *p = f->plan;
		oob_xgrow((void **)&p->ev, &f->capev, p->nev + 1, sizeof(*p->ev));
		p->ev[p->nev++] =
		    (struct pyplan_event){seq, f->pending, fr->pushed ? PYPLAN_NONE : fr->act};
		fr->pushed = 1;
		f->pending = 0;
	}
	const uint8_t *q = f->lab[li].q;
	uint8_t nq = f->lab[li].nq;
	f->ntmp = 0;
	for (uint32_t k = 0; k < fr->n; k++) {
		struct cand c = fr->c[k];
		const struct pycode_obj *o = &f->map->v[c.code];
		if (c.mode == C_EXACT) {
			step(f, &c, c.k, q, nq, 0);
		} else if (c.mode == C_AFTER) {
			const struct pycode_insn *in = &o->in[c.k];
			if (c.again)
				step(f, &c, c.k, q, nq, 0);
			for (uint16_t s = 0; s < in->nsucc; s++)
				step(f, &c, in->succ[s], q, nq, extra(c.kind));
		}
	}
	take_tmp(fr, f);
	/* The frame ends after these (each label names one kind of end); a raise
	 * unwinds, through the error label or straight to exception_unwind. */
	uint16_t op = fr->n ? f->map->v[fr->c[0].code].in[fr->c[0].k].op : f->map->deopt[q[0]];
	f->raised = op == OP_RAISE_VARARGS || op == OP_RERAISE; /* (after the clear above) */
	if (f->raised)
		unwind(f);
	if (op == OP_RETURN_VALUE || op == OP_YIELD_VALUE || op == OP_RETURN_GENERATOR)
		end(f, op == OP_RETURN_VALUE, op == OP_RETURN_GENERATOR);
}

struct pyfollow *pyfollow_new(const struct pyeval *ev, const struct pycode *map)
{
	struct pyfollow *f = oob_xcalloc(1, sizeof(*f));
	f->ev = ev;
	f->map = map;
	f->plan = oob_xcalloc(1, sizeof(*f->plan));
	oob_map_init(&f->labels, 512);
	uint32_t nl = 0;
	for (int q = 0; q < 256; q++) {
		uint64_t *v = oob_map_get(&f->labels, ev->targets[q]);
		uint32_t li;
		if (!v) {
			li = nl++;
			*oob_map_put(&f->labels, ev->targets[q], NULL) = li + 1;
		} else {
			li = (uint32_t)*v - 1;
		}
		if (f->lab[li].nq < 8)
			f->lab[li].q[f->lab[li].nq++] = (uint8_t)q;
	}
	*oob_map_put(&f->labels, ev->start_frame, NULL) = 1001;
	*oob_map_put(&f->labels, ev->error, NULL) = 1002;
	*oob_map_put(&f->labels, ev->exit_unwind, NULL) = 1003;
	*oob_map_put(&f->labels, ev->lo, NULL) = 1004;
	starts(f, 0, &f->init, &f->ninit);
	starts(f, 1, &f->thrown, &f->nthrown);
	return f;
}

void pyfollow_pc(struct pyfollow *f, uint64_t seq, uint64_t pc)
{
	if (pc - f->ev->lo >= f->ev->hi - f->ev->lo)
		return; /* every place followed is in the eval function */
	uint64_t *v = oob_map_get(&f->labels, pc);
	if (!v)
		return;
	if (*v != 1002)
		f->raised = 0;
	switch (*v) {
	case 1001:
		start(f);
		break;
	case 1002:
		if (!f->raised)
			unwind(f);
		f->raised = 0;
		break;
	case 1003:
		if (f->entered)
			f->entered = 0; /* the call failed before its frame started */
		else if (f->n)
			end(f, 1, 0);
		break;
	case 1004:
		f->entered = 1;
		break;
	default:
		dispatch(f, seq, (uint32_t)*v - 1);
	}
}

static int has(const struct act *a, uint32_t code)
{
	for (uint32_t k = 0; k < a->ncodes; k++)
		if (a->codes[k] == code)
			return 1;
	return 0;
}

/* The callee the parent's call site names, when the parent is decided. */
static uint32_t by_call_site(const struct pyfollow *f, const struct act *a)
{
	if (a->entry || a->parent == PYPLAN_NONE)
		return PYPLAN_NONE;
	uint32_t pc = f->acts[a->parent].code, got = PYPLAN_NONE;
	if (pc == PYPLAN_NONE)
		return PYPLAN_NONE;
	for (uint32_t s = 0; s < a->nsnap; s++) {
		if (a->snap[s][0] != pc)
			continue;
		uint32_t c = pycode_callee(&f->map->v[pc], a->snap[s][1]);
		if (c == PYPLAN_NONE || (got != PYPLAN_NONE && got != c))
			return PYPLAN_NONE;
		got = c;
	}
	return got != PYPLAN_NONE && has(a, got) ? got : PYPLAN_NONE;
}

/* A generator resumed: the one candidate with a generator alive (created
 * before a's start, not finished before it). Quadratic in the frames, but
 * only for the ambiguous resumptions. */
static uint32_t by_generator(const struct pyfollow *f, size_t ai)
{
	const struct act *a = &f->acts[ai];
	if (!a->resumed)
		return PYPLAN_NONE;
	uint32_t got = PYPLAN_NONE;
	for (uint32_t j = 0; j < a->ncodes; j++) {
		int64_t live = 0;
		for (size_t b = 0; b < ai; b++) {
			const struct act *o = &f->acts[b];
			if (o->code != a->codes[j])
				continue;
			live += o->created && o->end < a->begin;
			live -= o->finished && o->resumed && o->end < a->begin;
		}
		if (live > 0) {
			if (got != PYPLAN_NONE)
				return PYPLAN_NONE;
			got = a->codes[j];
		}
	}
	return got;
}

static char *ambiguous_name(const struct pycode *m, const struct act *a)
{
	size_t n = 16;
	for (uint32_t k = 0; k < a->ncodes; k++)
		n += strlen(m->v[a->codes[k]].name) + 3;
	char *s = oob_xmalloc(n), *p = s;
	p += sprintf(p, "py:? (");
	for (uint32_t k = 0; k < a->ncodes && k < 8; k++)
		p += sprintf(p, "%s%s", k ? " | " : "", m->v[a->codes[k]].name + 3);
	sprintf(p, "%s)", a->ncodes > 8 ? " | ..." : "");
	return s;
}

struct pyplan *pyfollow_finish(struct pyfollow *f)
{
	while (f->n) /* frames still running when the trace ends */
		end(f, 0, 0);
	struct pyplan *p = f->plan;
	struct oob_map by_code; /* code + 1 -> name index */
	oob_map_init(&by_code, 64);
	p->names = oob_xcalloc(f->nacts + 1, sizeof(*p->names));
	uint32_t *name = oob_xmalloc((f->nacts + 1) * sizeof(*name));
	for (size_t i = 0; i < f->nacts; i++) {
		struct act *a = &f->acts[i];
		uint32_t c = PYPLAN_NONE;
		if (a->ncodes == 1) {
			c = a->codes[0];
			p->st.by_opcodes++;
		} else if (a->ncodes > 1 && (c = by_call_site(f, a)) != PYPLAN_NONE) {
			p->st.by_call_site++;
		} else if (a->ncodes > 1 && (c = by_generator(f, i)) != PYPLAN_NONE) {
			p->st.by_generator++;
		}
		a->code = c;
		if (c != PYPLAN_NONE) {
			uint64_t *v = oob_map_get(&by_code, (uint64_t)c + 1);
			if (!v) {
				v = oob_map_put(&by_code, (uint64_t)c + 1, NULL);
				*v = p->nnames;
				p->names[p->nnames++] = oob_xstrdup(f->map->v[c].name);
			}
			name[i] = (uint32_t)*v;
			continue;
		}
		if (a->ncodes)
			p->st.ambiguous++;
		else
			p->st.unknown++;
		name[i] = p->nnames;
		p->names[p->nnames++] = a->ncodes ? ambiguous_name(f->map, a) : oob_xstrdup("py:?");
	}
	for (size_t e = 0; e < p->nev; e++)
		if (p->ev[e].name != PYPLAN_NONE)
			p->ev[e].name = name[p->ev[e].name];
	free(name);
	oob_map_destroy(&by_code);
	for (size_t i = 0; i < f->nacts; i++)
		free(f->acts[i].codes);
	free(f->acts);
	for (uint32_t k = 0; k < f->cap; k++)
		free(f->stk[k].c);
	free(f->stk);
	free(f->tmp);
	free(f->init);
	free(f->thrown);
	oob_map_destroy(&f->labels);
	free(f);
	return p;
}

void pyplan_free(struct pyplan *p)
{
	if (!p)
		return;
	for (uint32_t k = 0; k < p->nnames; k++)
		free(p->names[k]);
	free(p->names);
	free(p->ev);
	free(p);
}

int pyplan_build(const char *const *traces, size_t ntraces, const struct trace_opts *topts,
		 const struct pyeval *ev, const struct pycode *map, struct pyplan **out,
		 struct oob_err *err)
{
	*out = NULL;
	if (ntraces != 1)
		return oob_err_set(err, -ENOTSUP, "Python frames: one trace file (one hart) only");
	struct trace_reader *tr = trace_open(traces[0], topts, err);
	if (!tr)
		return err ? err->code : -EINVAL;
	struct pyfollow *f = pyfollow_new(ev, map);
	const struct trace_batch *b;
	uint64_t seq = 0;
	int rc, hart = -1;
	while ((rc = trace_next(tr, &b, err)) > 0) {
		if (hart >= 0 && b->hart != hart) {
			rc = oob_err_set(err, -ENOTSUP,
					 "%s: Python frames: one hart only (%d and %u)", traces[0],
					 hart, b->hart);
			break;
		}
		hart = b->hart;
		for (uint32_t i = 0; i < b->n; i++)
			pyfollow_pc(f, seq + i, b->pc[i]);
		seq += b->n;
	}
	trace_close(tr);
	struct pyplan *p = pyfollow_finish(f);
	if (rc < 0) {
		pyplan_free(p);
		return rc;
	}
	p->hart = hart < 0 ? 0 : (unsigned)hart;
	*out = p;
	return 0;
}
