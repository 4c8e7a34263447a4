#include "timeline/timeline_json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int timeline_tracks_parse(const char *s, unsigned *out, struct oob_err *err)
{
	static const char *const names[] = {"harts", "goroutines", "procs", "threads", "gc"};
	*out = 0;
	while (*s) {
		size_t n = strcspn(s, ",");
		unsigned bit = 0;
		if (n == 3 && !strncmp(s, "all", 3))
			bit = TIMELINE_T_ALL;
		for (unsigned i = 0; i < 5; i++)
			if (strlen(names[i]) == n && !strncmp(s, names[i], n))
				bit = 1u << i;
		if (!bit)
			return oob_err_set(err, -EINVAL,
					   "tracks \"%.*s\": expected harts, goroutines, procs, "
					   "threads, gc or all",
					   (int)(n < 40 ? n : 40), s);
		*out |= bit;
		s += n + (s[n] == ',');
	}
	if (!*out)
		return oob_err_set(err, -EINVAL, "tracks: empty");
	return 0;
}

static json_t *id_or_null(int64_t v)
{
	return v == TIMELINE_NONE ? json_null() : json_integer(v);
}

/* busy: bucketed intervals carry it as a sixth member. */
static json_t *spans_json_busy(const struct timeline_spans *s, const char *(*state)(unsigned),
			       int busy)
{
	json_t *a = json_array();
	for (size_t i = 0; i < s->n; i++) {
		const struct timeline_span *v = &s->v[i];
		json_t *iv = json_pack("[I, I, s, o, I]", (json_int_t)v->start, (json_int_t)v->end,
				       state(v->state), id_or_null(v->a), (json_int_t)v->n);
		if (busy)
			json_array_append_new(iv, json_integer((json_int_t)v->busy));
		json_array_append_new(a, iv);
	}
	return a;
}

static json_t *spans_json(const struct timeline_spans *s, const char *(*state)(unsigned))
{
	return spans_json_busy(s, state, 0);
}

static const char *priv_name(unsigned s)
{
	return s ? "kernel" : "user";
}

static json_t *harts_json(const struct timeline *t)
{
	json_t *a = json_array();
	for (size_t i = 0; i < t->nharts; i++)
		json_array_append_new(
		    a, json_pack("{s:i, s:o}", "hart", (int)t->harts[i].hart, "intervals",
				 spans_json_busy(&t->harts[i].spans, priv_name, t->bucket != 0)));
	return a;
}

static json_t *processes_json(const struct profile *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < profile_nprocesses(p); i++) {
		const struct profile_process *q = profile_process(p, i);
		const char *comm = q->comm && *q->comm ? q->comm : NULL;
		if (!comm && q->frame < profile_nframes(p)) /* a task without a pid: "[task 3]" */
			comm = profile_frame(p, q->frame)->name;
		json_array_append_new(a, json_pack("{s:I, s:s}", "pid", (json_int_t)q->pid, "comm",
						   comm ? comm : ""));
	}
	return a;
}

/* ---- Go tracks ---- */

static int64_t go_id(uint64_t v)
{
	return v == GOTRACE_NONE ? TIMELINE_NONE : (int64_t)v;
}

/* The intervals of one Go entity; which is the field shown beside the state
 * (the P a goroutine ran on, the M of a P, the P of an M). */
static void go_spans(const struct timeline_go *g, const struct timeline_opts *o,
		     const struct gotrace_span *v, size_t n, char which, struct timeline_spans *out,
		     uint64_t *merged)
{
	struct timeline_merger m;
	timeline_merger_init(&m, o->from, o->to, o->min_dur, out);
	for (size_t i = 0; i < n; i++) {
		struct timeline_span s = {.start = timeline_go_time(g, v[i].start),
					  .end = timeline_go_time(g, v[i].end),
					  .n = 1,
					  .state = v[i].state};
		s.a = go_id(which == 'p' ? v[i].p : v[i].m);
		timeline_merger_add(&m, &s);
	}
	*merged += timeline_merger_end(&m);
}

static json_t *entity_json(const struct timeline_go *g, const struct timeline_opts *o, uint64_t id,
			   const char *name, const struct gotrace_span *v, size_t n, char which,
			   uint64_t *merged)
{
	struct timeline_spans s = {0};
	go_spans(g, o, v, n, which, &s, merged);
	json_t *j = NULL;
	if (s.n) {
		j = json_pack("{s:I, s:o}", "id", (json_int_t)id, "intervals",
			      spans_json(&s, gotrace_gstate_name));
		if (name)
			json_object_set_new(j, "name", json_string(name));
	}
	free(s.v);
	return j;
}

static void append_some(json_t *a, json_t *v)
{
	if (v)
		json_array_append_new(a, v);
}

static const char *range_state(unsigned k)
{
	return k == GOTRACE_R_STW ? "stw" : "gc";
}

static json_t *gc_json(const struct timeline_go *g, const struct timeline_opts *o, uint64_t *merged)
{
	const struct gotrace_model *m = gotrace_model(g->trace);
	json_t *a = json_array();
	for (unsigned kind = GOTRACE_R_GC; kind <= GOTRACE_R_STW; kind++) {
		struct timeline_spans s = {0};
		struct timeline_merger mg;
		timeline_merger_init(&mg, o->from, o->to, o->min_dur, &s);
		for (size_t i = 0; i < m->nranges; i++)
			if (m->ranges[i].kind == kind)
				timeline_merger_add(
				    &mg, &(struct timeline_span){
					     .start = timeline_go_time(g, m->ranges[i].start),
					     .end = timeline_go_time(g, m->ranges[i].end),
					     .a = TIMELINE_NONE,
					     .n = 1,
					     .state = (uint8_t)kind});
		*merged += timeline_merger_end(&mg);
		json_t *sj = spans_json(&s, range_state);
		json_array_extend(a, sj);
		json_decref(sj);
		free(s.v);
	}
	return a;
}

static json_t *go_json(const struct timeline_go *g, const struct timeline_opts *o, unsigned tracks,
		       uint64_t *merged)
{
	const struct gotrace_model *m = gotrace_model(g->trace);
	const struct gotrace_info *in = gotrace_info(g->trace);
	json_t *j = json_pack("{s:O, s:I, s:I}", "clock", g->clock_json, "start",
			      (json_int_t)timeline_go_time(g, in->min_ticks), "end",
			      (json_int_t)timeline_go_time(g, in->max_ticks));
	if (tracks & TIMELINE_T_GOROUTINES) {
		json_t *a = json_array();
		for (size_t i = 0; i < m->ngs; i++)
			append_some(a, entity_json(g, o, m->gs[i].id, m->gs[i].name,
						   m->gspans + m->gs[i].span0, m->gs[i].nspans, 'p',
						   merged));
		json_object_set_new(j, "goroutines", a);
	}
	if (tracks & TIMELINE_T_PROCS) {
		json_t *a = json_array();
		for (size_t i = 0; i < m->nps; i++)
			append_some(a,
				    entity_json(g, o, m->ps[i].id, NULL, m->pspans + m->ps[i].span0,
						m->ps[i].nspans, 'm', merged));
		json_object_set_new(j, "procs", a);
	}
	if (tracks & TIMELINE_T_THREADS) {
		json_t *a = json_array();
		for (size_t i = 0; i < m->nms; i++)
			append_some(a,
				    entity_json(g, o, m->ms[i].id, NULL, m->mspans + m->ms[i].span0,
						m->ms[i].nspans, 'p', merged));
		json_object_set_new(j, "threads", a);
	}
	if (tracks & TIMELINE_T_GC)
		json_object_set_new(j, "gc", gc_json(g, o, merged));
	return j;
}

json_t *timeline_json(const struct timeline *t, const struct profile *p,
		      const struct timeline_go *go, const struct timeline_opts *o, unsigned tracks)
{
	uint64_t merged = t ? t->merged : 0;
	json_t *j = json_pack(
	    "{s:s, s:I, s:o, s:I}", "axis", profile_has_cycles(p) ? "cycles" : "records", "from",
	    (json_int_t)o->from, "to", o->to ? json_integer((json_int_t)o->to) : json_null(),
	    "min_duration", (json_int_t)o->min_dur);
	if (t) {
		json_object_set_new(j, "detail", json_string(t->bucket ? "buckets" : "exact"));
		if (t->bucket)
			json_object_set_new(j, "bucket", json_integer((json_int_t)t->bucket));
		json_object_set_new(j, "start", json_integer((json_int_t)t->start));
		json_object_set_new(j, "end", json_integer((json_int_t)t->end));
	}
	json_object_set_new(j, "processes", processes_json(p));
	if (t && (tracks & TIMELINE_T_HARTS))
		json_object_set_new(j, "harts", harts_json(t));
	if (go)
		json_object_set_new(j, "go", go_json(go, o, tracks, &merged));
	json_object_set_new(j, "merged", json_integer((json_int_t)merged));
	return j;
}
