#include "timeline/timeline_go.h"

#include <errno.h>
#include <math.h>
#include <string.h>

uint64_t timeline_go_time(const struct timeline_go *g, uint64_t ticks)
{
	double v = goclock_map(&g->clock, ticks);
	return v <= 0 ? 0 : (uint64_t)llround(v);
}

/* The fit's figures; a refused one ("ok": false) says why. */
static json_t *fit_desc(const struct goclock_alignment *al, const char *source, const char *why)
{
	const struct goclock_fit *f = &al->fit;
	json_t *j = json_pack("{s:b, s:s, s:f, s:f, s:I, s:s, s:I, s:f, s:f, s:f, s:s, s:I, s:I}",
			      "ok", !why, "source", source, "a", f->clock.a, "b", f->clock.b, "x0",
			      (json_int_t)f->clock.x0, "axis", al->cycles ? "cycles" : "records",
			      "anchors", (json_int_t)f->n, "rms", f->rms, "max_abs", f->max_abs,
			      "tolerance", f->tolerance, "func", al->func, "go_events",
			      (json_int_t)al->go_events, "entries", (json_int_t)al->entries);
	if (why)
		json_object_set_new(j, "error", json_string(why));
	return j;
}

static json_t *refused(const char *source, const char *why)
{
	return json_pack("{s:b, s:s, s:s}", "ok", 0, "source", source, "error", why);
}

/* goclock_align with each ELF in turn until one has the function. */
static int align_any(const struct gotrace *gt, const struct timeline_go_req *q,
		     const struct goclock *given, struct goclock_alignment **al,
		     struct oob_err *err)
{
	int rc = oob_err_set(err, -ENOENT,
			     "go clock: no ELF given with the runtime's trace-event function");
	for (size_t i = 0; i < q->nelfs; i++) {
		struct goclock_align_opts o = {.elf = q->elfs[i].path, .given = given};
		rc = goclock_align(gt, &q->insn, &o, al, err);
		if (rc != -ENOENT)
			return rc;
	}
	return rc;
}

int timeline_go_clock(const struct gotrace *gt, const struct timeline_go_req *q,
		      struct goclock *clock, json_t **desc, struct oob_err *err)
{
	const char *source = q->have_hz ? "given" : "fit";
	struct goclock given;
	struct goclock_alignment *al = NULL;
	*desc = NULL;
	if (q->have_hz &&
	    goclock_from_hz(q->hz, q->offset, gotrace_info(gt)->freq, &given, err) < 0) {
		*desc = refused(source, err->msg);
		return err->code;
	}
	if (q->have_hz && !q->nelfs) { /* nothing to check it against */
		*clock = given;
		*desc = json_pack("{s:b, s:s, s:f, s:f, s:I, s:f, s:f}", "ok", 1, "source", source,
				  "a", given.a, "b", given.b, "x0", (json_int_t)given.x0, "hz",
				  q->hz, "offset", q->offset);
		return 0;
	}
	int rc = align_any(gt, q, q->have_hz ? &given : NULL, &al, err);
	if (rc == 0)
		*clock = al->fit.clock;
	*desc = al ? fit_desc(al, source, rc == 0 ? NULL : err->msg) : refused(source, err->msg);
	goclock_alignment_free(al);
	return rc;
}

int timeline_go_clock_load(const json_t *desc, struct goclock *clock, struct oob_err *err)
{
	json_t *ok = json_object_get(desc, "ok");
	if (!json_is_true(ok)) {
		const char *why = json_string_value(json_object_get(desc, "error"));
		return oob_err_set(err, -EINVAL, "go clock: %s",
				   why ? why : "no model was established");
	}
	json_t *a = json_object_get(desc, "a"), *b = json_object_get(desc, "b"),
	       *x0 = json_object_get(desc, "x0");
	if (!json_is_number(a) || !json_is_number(b) || !json_is_integer(x0) ||
	    !(json_number_value(a) > 0))
		return oob_err_set(err, -EINVAL, "go clock: a malformed model");
	clock->a = json_number_value(a);
	clock->b = json_number_value(b);
	clock->x0 = (uint64_t)json_integer_value(x0);
	return 0;
}
