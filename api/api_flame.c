#include "api_flame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_json.h"
#include "util/oob_mem.h"

enum { SIDE_NONE = 0, SIDE_USER = 1, SIDE_KERNEL = 2 };

int api_flame_parse_priv(const char *s, enum api_priv *out)
{
	if (!strcmp(s, "all"))
		*out = API_PRIV_ALL;
	else if (!strcmp(s, "user") || !strcmp(s, "u"))
		*out = API_PRIV_USER;
	else if (!strcmp(s, "kernel") || !strcmp(s, "k") || !strcmp(s, "supervisor") ||
		 !strcmp(s, "s"))
		*out = API_PRIV_KERNEL;
	else
		return -EINVAL;
	return 0;
}

/* A process's root frame, or PROFILE_NONE when it is not a process frame of
 * p (results stored before root frames were). */
static uint32_t root_frame(const struct profile *p, const struct profile_process *pr)
{
	if (pr->frame >= profile_nframes(p) ||
	    profile_frame(p, pr->frame)->kind != PROFILE_FRAME_PROCESS)
		return PROFILE_NONE;
	return pr->frame;
}

int api_flame_parse_pid(const struct profile *p, const char *s, struct api_flame_opts *o,
			struct oob_err *e)
{
	char *end;
	errno = 0;
	long long pid = strtoll(s, &end, 10);
	if (!*s || *end || errno || pid < -1)
		return oob_err_set(e, -EINVAL,
				   "pid \"%.40s\": expected a process id (-1: tasks whose pid is "
				   "unknown)",
				   s);
	if (!profile_nprocesses(p))
		return oob_err_set(e, -ENOENT, "this profile has no processes");
	size_t found = 0, rooted = 0;
	for (size_t k = 0; k < profile_nprocesses(p); k++) {
		const struct profile_process *pr = profile_process(p, k);
		if (pr->pid != pid)
			continue;
		found++;
		rooted += root_frame(p, pr) != PROFILE_NONE;
	}
	if (!found)
		return oob_err_set(e, -ENOENT, "no process with pid %lld in this profile", pid);
	if (rooted < found)
		return oob_err_set(e, -ENOENT,
				   "pid %lld: this result was stored without process root frames "
				   "(by an older oobprofd); run the job again",
				   pid);
	o->by_pid = 1;
	o->pid = pid;
	return 0;
}

const char *api_flame_libtype(unsigned kind)
{
	return profile_frame_kind_name(kind);
}

/* Working arrays, one entry per node (root: one per frame). */
struct work {
	uint8_t *root;	 /* frames whose subtrees count (pid filter), or NULL */
	uint8_t *inside; /* node lies in such a subtree (or no pid filter) */
	uint8_t *side;
	uint32_t *depth;
	uint64_t *self, *total, *cycles;
	uint8_t *keep;
	json_t **obj;
};

static uint8_t side_of(const struct profile *r, const struct work *w, uint32_t i)
{
	const struct profile_node *n = profile_node(r, i);
	if (i == 0)
		return SIDE_NONE;
	switch (profile_frame(r, n->frame)->kind) {
	case PROFILE_FRAME_KERNEL:
	case PROFILE_FRAME_MARKER:
	case PROFILE_FRAME_FIRMWARE: /* privileged: with the kernel */
		return SIDE_KERNEL;
	case PROFILE_FRAME_INLINE:
		return w->side[n->parent];
	default:
		return SIDE_USER;
	}
}

static int counts(enum api_priv priv, uint8_t side)
{
	return priv == API_PRIV_ALL || (priv == API_PRIV_USER && side == SIDE_USER) ||
	       (priv == API_PRIV_KERNEL && side == SIDE_KERNEL);
}

/* The root frames of the processes o selects, as a per-frame mark (NULL
 * without a pid filter). Several processes may share a pid (reuse, or -1). */
static uint8_t *root_frames(const struct profile *p, const struct api_flame_opts *o)
{
	if (!o->by_pid)
		return NULL;
	uint8_t *m = oob_xcalloc(profile_nframes(p) + 1, 1);
	for (size_t k = 0; k < profile_nprocesses(p); k++) {
		const struct profile_process *pr = profile_process(p, k);
		uint32_t f = root_frame(p, pr);
		if (pr->pid == o->pid && f != PROFILE_NONE)
			m[f] = 1;
	}
	return m;
}

static int inside(const struct profile *r, const struct work *w, uint32_t i)
{
	const struct profile_node *nd = profile_node(r, i);
	if (!w->root)
		return 1;
	return i && (w->inside[nd->parent] || w->root[nd->frame]);
}

/* Filtered self weights, then totals by one backwards pass (parents come
 * before children). */
static void weigh(const struct profile *r, const struct api_flame_opts *o, struct work *w)
{
	size_t n = profile_nnodes(r);
	for (uint32_t i = 0; i < n; i++) {
		const struct profile_node *nd = profile_node(r, i);
		w->side[i] = side_of(r, w, i);
		w->depth[i] = i ? w->depth[nd->parent] + 1 : 0;
		w->inside[i] = (uint8_t)inside(r, w, i);
		int c = w->inside[i] && counts(o->priv, w->side[i]);
		w->self[i] = c ? profile_node_self(nd, o->metric) : 0;
		w->cycles[i] = c ? nd->self_cycles : 0;
		w->total[i] = w->self[i];
	}
	for (size_t i = n; i-- > 1;) {
		uint32_t p = profile_node(r, (uint32_t)i)->parent;
		w->total[p] += w->total[i];
		w->cycles[p] += w->cycles[i];
	}
}

struct ranked {
	uint64_t total;
	uint32_t id;
};

static int by_total(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Marks the nodes to show; returns how many weighed nodes were merged. A
 * parent's total is at least its child's and its id smaller, so the first
 * max_nodes in (total desc, id asc) order include every kept node's parent. */
static size_t choose(const struct profile *r, const struct api_flame_opts *o, struct work *w)
{
	size_t n = profile_nnodes(r), nweighed = 0, nkept = 0;
	for (uint32_t i = 0; i < n; i++) {
		int weighed = i == 0 || w->total[i] > 0;
		nweighed += weighed;
		w->keep[i] = weighed && w->depth[i] <= API_FLAME_MAX_DEPTH &&
			     (i == 0 || w->keep[profile_node(r, i)->parent]);
		nkept += w->keep[i];
	}
	if (!o->max_nodes || nkept <= o->max_nodes)
		return nweighed - nkept;
	struct ranked *v = oob_xmalloc(nkept * sizeof(*v));
	size_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (w->keep[i])
			v[k++] = (struct ranked){w->total[i], i};
	qsort(v, k, sizeof(*v), by_total);
	for (size_t j = o->max_nodes; j < k; j++)
		w->keep[v[j].id] = 0;
	free(v);
	return nweighed - o->max_nodes;
}

static json_t *node_json(const struct profile *r, const struct work *w, uint32_t i,
			 const struct api_flame_opts *o)
{
	const struct profile_node *nd = profile_node(r, i);
	if (i == 0)
		return json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:[]}", "name", "all", "value",
				 (json_int_t)w->total[0], "self", (json_int_t)w->self[0], "calls",
				 (json_int_t)nd->calls, "cycles", (json_int_t)w->cycles[0],
				 "libtype", "root", "children");
	const struct profile_frame *f = profile_frame(r, nd->frame);
	json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:[]}", "name", f->name, "value",
			      (json_int_t)w->total[i], "self", (json_int_t)w->self[i], "calls",
			      (json_int_t)nd->calls, "cycles", (json_int_t)w->cycles[i], "libtype",
			      api_flame_libtype(f->kind), "children");
	if (f->file)
		json_object_set_new(j, "file", json_string(f->file));
	if (f->line)
		json_object_set_new(j, "line", json_integer(f->line));
	if (f->binary)
		json_object_set_new(j, "binary", json_string(f->binary));
	(void)o;
	return j;
}

/* 1 if an ancestor of node i has the same frame (its total already counts i):
 * the rule of profile_functions. */
static int recursive(const struct profile *r, uint32_t i)
{
	uint32_t fr = profile_node(r, i)->frame;
	for (uint32_t k = profile_node(r, i)->parent; k != 0 && k != PROFILE_NONE;
	     k = profile_node(r, k)->parent)
		if (profile_node(r, k)->frame == fr)
			return 1;
	return 0;
}

static uint64_t func_weight(const struct profile_func *f, enum profile_metric m)
{
	return m == PROFILE_INSNS ? f->self_insns : m == PROFILE_CYCLES ? f->self_cycles : f->calls;
}

size_t api_flame_functions(const struct profile *r, const struct api_flame_opts *o,
			   struct profile_func **out)
{
	size_t n = profile_nnodes(r), nf = profile_nframes(r) ? profile_nframes(r) : 1;
	struct api_flame_opts oi = *o;
	struct work w = {
	    .root = root_frames(r, o),
	    .inside = oob_xcalloc(n, 1),
	    .side = oob_xcalloc(n, 1),
	    .depth = oob_xcalloc(n, sizeof(uint32_t)),
	    .self = oob_xcalloc(n, sizeof(uint64_t)),
	    .total = oob_xcalloc(n, sizeof(uint64_t)),
	    .cycles = oob_xcalloc(n, sizeof(uint64_t)),
	};
	struct profile_func *v = oob_xcalloc(nf, sizeof(*v));
	uint8_t *used = oob_xcalloc(nf, 1);
	oi.metric = PROFILE_INSNS; /* self/total in instructions, cycles beside */
	weigh(r, &oi, &w);
	for (uint32_t i = 1; i < n; i++) {
		const struct profile_node *nd = profile_node(r, i);
		int c = w.inside[i] && counts(o->priv, w.side[i]);
		struct profile_func *f = &v[nd->frame];
		/* kept as the flame graph keeps nodes: with weight; calls as it
		 * shows them (a user caller's calls in a kernel-only view too) */
		if (!w.inside[i] || !w.total[i])
			continue;
		used[nd->frame] = 1;
		f->calls += nd->calls;
		f->self_insns += w.self[i];
		f->self_cycles += c ? nd->self_cycles : 0;
		if (!recursive(r, i)) {
			f->total_insns += w.total[i];
			f->total_cycles += w.cycles[i];
		}
	}
	/* sorted as profile_functions sorts: by self weight, then frame */
	size_t k = 0;
	struct ranked *keys = oob_xcalloc(nf, sizeof(*keys));
	for (uint32_t i = 0; i < profile_nframes(r); i++)
		if (used[i])
			keys[k++] = (struct ranked){func_weight(&v[i], o->metric), i};
	qsort(keys, k, sizeof(*keys), by_total);
	struct profile_func *sorted = oob_xcalloc(k ? k : 1, sizeof(*sorted));
	for (size_t j = 0; j < k; j++) {
		sorted[j] = v[keys[j].id];
		sorted[j].frame = keys[j].id;
	}
	free(keys);
	free(v);
	free(used);
	free(w.root);
	free(w.inside);
	free(w.side);
	free(w.depth);
	free(w.self);
	free(w.total);
	free(w.cycles);
	*out = sorted;
	return k;
}

char *api_flame_render(void *arg, struct api_build *b, size_t *len)
{
	(void)b;
	const struct api_flame_render *a = arg;
	return api_json_body(api_flame_build(a->p, a->partial, a->o), len);
}

char *api_flame_folded(const struct profile *p, enum profile_metric m, int annotate, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		return NULL;
	int rc = profile_write_folded(p, f, m, annotate);
	if (fclose(f) != 0 || rc < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

json_t *api_flame_build(const struct profile *r, int partial, const struct api_flame_opts *o)
{
	size_t n = profile_nnodes(r);
	struct work w = {
	    .root = root_frames(r, o),
	    .inside = oob_xcalloc(n, 1),
	    .side = oob_xcalloc(n, 1),
	    .depth = oob_xcalloc(n, sizeof(uint32_t)),
	    .self = oob_xcalloc(n, sizeof(uint64_t)),
	    .total = oob_xcalloc(n, sizeof(uint64_t)),
	    .cycles = oob_xcalloc(n, sizeof(uint64_t)),
	    .keep = oob_xcalloc(n, 1),
	    .obj = oob_xcalloc(n, sizeof(json_t *)),
	};
	weigh(r, o, &w);
	size_t merged = choose(r, o, &w), shown = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!w.keep[i])
			continue;
		w.obj[i] = node_json(r, &w, i, o);
		shown++;
		if (i)
			json_array_append_new(
			    json_object_get(w.obj[profile_node(r, i)->parent], "children"),
			    w.obj[i]);
	}
	json_t *root = w.obj[0];
	json_object_set_new(root, "metric", json_string(profile_metric_name(o->metric)));
	json_object_set_new(root, "partial", json_boolean(partial));
	json_object_set_new(root, "nodes", json_integer((json_int_t)shown));
	json_object_set_new(root, "merged", json_integer((json_int_t)merged));
	if (o->by_pid)
		json_object_set_new(root, "pid", json_integer((json_int_t)o->pid));
	free(w.root);
	free(w.inside);
	free(w.side);
	free(w.depth);
	free(w.self);
	free(w.total);
	free(w.cycles);
	free(w.keep);
	free(w.obj);
	return root;
}
