/*
 * Python frames on the shadow stack (RECONSTRUCTION.md 17). The plan
 * (py/pyplan.h), made by a pass over the trace before this one, says at
 * which records (opcode dispatches) Python frames end and start. A Python
 * frame is an entry inside the eval function's C frame: its node shows the
 * py: frame, its frame stays the C function's, so the control-flow rules
 * (same function, tail calls, returns) see what they always saw; C code the
 * frame's opcodes call nests above it. Frames the eval function ran inline
 * end at the next dispatch of their caller; the frames of one eval call are
 * all left when that call returns (recon_py_leave, before the return is
 * matched).
 */
#include "recon/recon_impl.h"

#include <errno.h>
#include <stdlib.h>

#include "profile/frame.h"
#include "py/pycode.h"
#include "py/pyplan.h"
#include "sym/sym.h"
#include "util/oob_mem.h"

static void next_event(struct recon *r)
{
	r->py_at = r->py_i < r->py->nev ? r->py->ev[r->py_i].seq : UINT64_MAX;
}

/* The plan, for the CPython ELF among the given ones. */
int recon_py_load(struct recon *r, const char *const *traces, size_t ntraces, struct oob_err *err)
{
	const struct recon_opts *o = r->opts;
	struct pyeval ev;
	int rc = -ENOENT;
	size_t k;
	for (k = 0; k < o->nelfs; k++)
		if ((rc = pyeval_find(o->elfs[k].path, 0, &ev, err)) == 0)
			break;
	if (rc < 0)
		return o->nelfs ? rc
				: oob_err_set(err, -EINVAL,
					      "--pycode needs the interpreter's ELF (--elf)");
	if (o->elfs[k].base != RECON_BASE_LINK)
		return oob_err_set(err, -ENOTSUP,
				   "%s: Python frames: the interpreter at its link address only",
				   o->elfs[k].path);
	struct pycode *map;
	if ((rc = pycode_load(o->pycode, &map, err)) < 0)
		return rc;
	rc = pyplan_build(traces, ntraces, &o->trace, &ev, map, &r->py, err);
	pycode_free(map);
	if (rc < 0)
		return rc;
	r->py_frames = oob_xmalloc((r->py->nnames + 1) * sizeof(*r->py_frames));
	for (uint32_t n = 0; n < r->py->nnames; n++)
		r->py_frames[n] = FRAME_NONE;
	struct profile_stats *st = &r->run.st;
	st->py_frames = r->py->st.frames;
	st->py_by_opcodes = r->py->st.by_opcodes;
	st->py_by_call_site = r->py->st.by_call_site;
	st->py_by_generator = r->py->st.by_generator;
	st->py_ambiguous = r->py->st.ambiguous;
	st->py_unknown = r->py->st.unknown;
	r->py_i = 0;
	next_event(r);
	return 0;
}

void recon_py_free(struct recon *r)
{
	pyplan_free(r->py);
	free(r->py_frames);
	r->py = NULL;
	r->py_frames = NULL;
}

void recon_py_event(struct recon *r, struct tracker_hart *h, uint32_t i)
{
	const struct pyplan_event *e = &r->py->ev[r->py_i++];
	next_event(r);
	if (h->id != r->py->hart)
		return;
	recon_flush(r, h, i);
	r->run.st.events++;
	for (uint32_t k = 0; k < e->npop; k++) {
		if (h->stk->n <= stack_segment_base(h->stk) ||
		    !recon_entry_inside(r, stack_top(h->stk))) {
			r->run.st.py_mismatch++;
			break;
		}
		recon_pop_to(r, h, h->stk->n - 1);
	}
	if (e->name == PYPLAN_NONE)
		return;
	if (r->py_frames[e->name] == FRAME_NONE)
		r->py_frames[e->name] =
		    frame_named(&r->run.frames, PROFILE_FRAME_USER, r->py->names[e->name]);
	recon_push_inside(r, h, r->py_frames[e->name]);
}

void recon_py_leave(struct recon *r, struct tracker_hart *h)
{
	while (h->stk->n > stack_segment_base(h->stk) && recon_entry_inside(r, stack_top(h->stk)))
		recon_pop_to(r, h, h->stk->n - 1);
}
