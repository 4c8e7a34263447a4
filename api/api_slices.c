#include "api_slices.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api_cache.h"
#include "api_json.h"
#include "api_timeline.h"
#include "export/export_slices.h"
#include "util/oob_mem.h"
#include "profile/profile.h"

#define NO_PROCESS UINT32_MAX

struct slice {
	uint64_t start, end;
	uint32_t depth, frame, track;
};

/* Per hart: the slices begun, in time order (outermost first), and the
 * indices of those still open. */
struct hart_out {
	struct slice *v;
	size_t n, cap;
	size_t *open;
	size_t nopen, opencap;
	uint32_t track; /* by process: the track of the running stack */
};

struct track {
	unsigned hart;
	uint32_t process; /* NO_PROCESS: none, or by=hart */
};

struct collect {
	const struct profile *p;
	int by_process;
	uint32_t *proc_of; /* per frame: its process index, NO_PROCESS */
	struct hart_out *h;
	size_t nh;
	struct track *tracks;
	size_t ntracks, trcap;
	size_t total;
	int over; /* more than API_SLICES_MAX */
};

static uint32_t track_of(struct collect *x, unsigned hart, uint32_t process)
{
	for (size_t i = 0; i < x->ntracks; i++)
		if (x->tracks[i].hart == hart && x->tracks[i].process == process)
			return (uint32_t)i;
	oob_xgrow((void **)&x->tracks, &x->trcap, x->ntracks + 1, sizeof(*x->tracks));
	x->tracks[x->ntracks] = (struct track){hart, process};
	return (uint32_t)x->ntracks++;
}

static struct hart_out *hart_get(struct collect *x, unsigned hart)
{
	if (hart >= x->nh) {
		x->h = oob_xrealloc(x->h, (hart + 1) * sizeof(*x->h));
		memset(x->h + x->nh, 0, (hart + 1 - x->nh) * sizeof(*x->h));
		x->nh = hart + 1;
	}
	return &x->h[hart];
}

static void on_begin(void *ctx, unsigned hart, uint32_t depth, uint32_t frame, uint64_t t)
{
	struct collect *x = ctx;
	struct hart_out *h = hart_get(x, hart);
	if (depth == 0)
		h->track = track_of(x, hart, x->by_process ? x->proc_of[frame] : NO_PROCESS);
	if (x->total >= API_SLICES_MAX) {
		x->over = 1;
		return;
	}
	oob_xgrow((void **)&h->v, &h->cap, h->n + 1, sizeof(*h->v));
	oob_xgrow((void **)&h->open, &h->opencap, h->nopen + 1, sizeof(*h->open));
	h->v[h->n] = (struct slice){t, t, depth, frame, h->track};
	h->open[h->nopen++] = h->n++;
	x->total++;
}

static void on_end(void *ctx, unsigned hart, uint32_t frame, uint64_t t)
{
	struct collect *x = ctx;
	struct hart_out *h = hart_get(x, hart);
	(void)frame;
	if (h->nopen) /* none when its begin was past the bound */
		h->v[h->open[--h->nopen]].end = t;
}

static uint32_t *process_index(const struct profile *p)
{
	size_t nf = profile_nframes(p);
	uint32_t *v = oob_xmalloc((nf ? nf : 1) * sizeof(*v));
	for (size_t i = 0; i < nf; i++)
		v[i] = NO_PROCESS;
	for (size_t i = 0; i < profile_nprocesses(p); i++) {
		uint32_t f = profile_process(p, i)->frame;
		if (f < nf)
			v[f] = (uint32_t)i;
	}
	return v;
}

static json_t *track_json(const struct collect *x, const struct track *t)
{
	json_t *j = json_pack("{s:I}", "hart", (json_int_t)t->hart);
	if (t->process == NO_PROCESS) {
		if (x->by_process)
			json_object_set_new(j, "process", json_null());
		return j;
	}
	const struct profile_process *q = profile_process(x->p, t->process);
	const char *comm = q->comm && *q->comm ? q->comm : profile_frame(x->p, q->frame)->name;
	json_object_set_new(j, "process", json_integer(t->process));
	json_object_set_new(j, "pid", json_integer((json_int_t)q->pid));
	json_object_set_new(j, "comm", json_string(comm));
	return j;
}

/* The document: tracks in (hart, process) order, each with its slices in
 * time order; frames numbered in the order first met. */
static json_t *slices_json(struct collect *x)
{
	size_t nf = profile_nframes(x->p);
	uint32_t *local = oob_xmalloc((nf ? nf : 1) * sizeof(*local));
	memset(local, 0xff, (nf ? nf : 1) * sizeof(*local));
	json_t *frames = json_array(), **arrs = oob_xcalloc(x->ntracks + 1, sizeof(*arrs));
	uint32_t *depth = oob_xcalloc(x->ntracks + 1, sizeof(*depth));
	for (size_t i = 0; i < x->ntracks; i++)
		arrs[i] = json_array();
	for (size_t k = 0; k < x->nh; k++) {
		for (size_t i = 0; i < x->h[k].n; i++) {
			const struct slice *s = &x->h[k].v[i];
			if (local[s->frame] == UINT32_MAX) {
				const struct profile_frame *fr = profile_frame(x->p, s->frame);
				local[s->frame] = (uint32_t)json_array_size(frames);
				json_array_append_new(
				    frames, json_pack("{s:s, s:s}", "name", fr->name, "kind",
						      profile_frame_kind_name(fr->kind)));
			}
			json_array_append_new(arrs[s->track],
					      json_pack("[I, I, i, i]", (json_int_t)s->start,
							(json_int_t)s->end, (int)s->depth,
							(int)local[s->frame]));
			if (s->depth + 1 > depth[s->track])
				depth[s->track] = s->depth + 1;
		}
	}
	json_t *tracks = json_array();
	for (size_t i = 0; i < x->ntracks; i++) {
		json_t *t = track_json(x, &x->tracks[i]);
		json_object_set_new(t, "depth", json_integer(depth[i]));
		json_object_set_new(t, "slices", arrs[i]);
		json_array_append_new(tracks, t);
	}
	free(arrs);
	free(depth);
	free(local);
	return json_pack("{s:o, s:o}", "frames", frames, "tracks", tracks);
}

static int track_cmp(const void *a, const void *b)
{
	const struct track *x = a, *y = b;
	if (x->hart != y->hart)
		return x->hart < y->hart ? -1 : 1;
	return x->process < y->process ? -1 : x->process > y->process;
}

/* Tracks sorted by (hart, process), the slices renumbered to match. */
static void sort_tracks(struct collect *x)
{
	struct track *old = oob_xmalloc((x->ntracks + 1) * sizeof(*old));
	uint32_t *to = oob_xmalloc((x->ntracks + 1) * sizeof(*to));
	memcpy(old, x->tracks, x->ntracks * sizeof(*old));
	qsort(x->tracks, x->ntracks, sizeof(*x->tracks), track_cmp);
	for (size_t i = 0; i < x->ntracks; i++)
		for (size_t k = 0; k < x->ntracks; k++)
			if (!track_cmp(&old[i], &x->tracks[k]))
				to[i] = (uint32_t)k;
	for (size_t k = 0; k < x->nh; k++)
		for (size_t i = 0; i < x->h[k].n; i++)
			x->h[k].v[i].track = to[x->h[k].v[i].track];
	free(old);
	free(to);
}

static void collect_free(struct collect *x)
{
	for (size_t k = 0; k < x->nh; k++) {
		free(x->h[k].v);
		free(x->h[k].open);
	}
	free(x->h);
	free(x->tracks);
	free(x->proc_of);
}

static int by_arg(struct http_req *r, int *by_process, struct oob_err *e)
{
	const char *s = http_req_arg(r, "by");
	*by_process = s && !strcmp(s, "process");
	if (s && !*by_process && strcmp(s, "hart"))
		return oob_err_set(e, -EINVAL, "by \"%.40s\": expected hart or process", s);
	return 0;
}

/* The events the replay would go through: the index's estimate, else the
 * whole log. */
static int check_size(const struct api_job_events *ev, const struct timeline_opts *o,
		      struct oob_err *e)
{
	double n = ev->ix ? api_timeline_window_events(ev->ix, o) : (double)evlog_count(ev->log);
	if (n > API_SLICES_MAX_EVENTS)
		return oob_err_set(e, -EFBIG,
				   "the window holds about %.0f stack events, over the bound of %u "
				   "for slices: narrow the window",
				   n, API_SLICES_MAX_EVENTS);
	return 0;
}

static json_t *build(struct api_ctx *c, struct http_req *r, int64_t id, struct oob_err *e)
{
	struct timeline_opts o;
	struct api_job_events ev = {0};
	struct collect x = {0};
	uint64_t kept = 0, hidden = 0;
	json_t *j = NULL;
	if (api_timeline_window_args(r, &o, e) < 0 || by_arg(r, &x.by_process, e) < 0 ||
	    api_job_events_get(c, id, &ev, e) < 0 || check_size(&ev, &o, e) < 0)
		goto out;
	x.p = ev.p;
	x.proc_of = process_index(ev.p);
	struct export_slices_window w = {.from = o.from,
					 .to = o.to,
					 .min = o.min_dur,
					 .hart = o.hart,
					 .cycles = profile_has_cycles(ev.p)};
	struct export_slice_sink sink = {.ctx = &x, .begin = on_begin, .end = on_end};
	if (export_slices_window(ev.log, ev.ix, (uint32_t)profile_nframes(ev.p), &w, &sink, &kept,
				 &hidden, e) < 0)
		goto out;
	if (x.over) {
		oob_err_set(e, -EFBIG,
			    "%llu slices is over the bound of %d: raise min_duration or narrow the "
			    "window",
			    (unsigned long long)kept, API_SLICES_MAX);
		goto out;
	}
	sort_tracks(&x);
	j = slices_json(&x);
	json_object_set_new(j, "axis", json_string(w.cycles ? "cycles" : "records"));
	json_object_set_new(j, "from", json_integer((json_int_t)o.from));
	json_object_set_new(j, "to", o.to ? json_integer((json_int_t)o.to) : json_null());
	json_object_set_new(j, "min_duration", json_integer((json_int_t)o.min_dur));
	json_object_set_new(j, "by", json_string(x.by_process ? "process" : "hart"));
	json_object_set_new(j, "slices", json_integer((json_int_t)kept));
	json_object_set_new(j, "hidden", json_integer((json_int_t)hidden));
	json_object_set_new(j, "partial", json_boolean(ev.partial));
out:
	collect_free(&x);
	api_job_events_put(c, &ev);
	return j;
}

int api_jobs_slices(struct api_ctx *c, struct http_req *r, struct api_req *q)
{
	struct oob_err e = {0};
	json_t *j = build(c, r, q->id, &e);
	if (j)
		http_respond_json(r, 200, j);
	else
		http_respond_oob_err(r, &e);
	return HTTP_BODY_NONE;
}
