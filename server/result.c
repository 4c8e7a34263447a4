#include "result.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "oob_mem.h"

struct result {
	struct profile_node *nodes;
	size_t nnodes;
	struct profile_frame *frames;
	size_t nframes;
	struct profile_stats st;
	int has_cycles, partial;
	struct oob_arena *arena;
};

/* The uint64 counters of profile_stats, by JSON key. */
#define STAT_FIELDS(X)                                                                             \
	X(instructions)                                                                            \
	X(cycles)                                                                                  \
	X(events)                                                                                  \
	X(calls)                                                                                   \
	X(returns)                                                                                 \
	X(tail_calls)                                                                              \
	X(traps)                                                                                   \
	X(trap_returns)                                                                            \
	X(swaps)                                                                                   \
	X(repairs_unwind)                                                                          \
	X(repairs_unknown)                                                                         \
	X(returns_above)                                                                           \
	X(unknown_pcs)                                                                             \
	X(raw_bytes)

json_t *result_stats_json(const struct profile_stats *s)
{
	json_t *o = json_object();
	json_object_set_new(o, "format", json_string(s->format ? s->format : "unknown"));
	json_object_set_new(o, "harts", json_integer(s->harts));
#define SET(f) json_object_set_new(o, #f, json_integer((json_int_t)s->f));
	STAT_FIELDS(SET)
#undef SET
	json_object_set_new(o, "seconds", json_real(s->seconds));
	json_object_set_new(o, "partial", json_boolean(s->partial));
	return o;
}

static json_t *frame_json(const struct profile_frame *f)
{
	char addr[24];
	snprintf(addr, sizeof(addr), "0x%" PRIx64, f->addr);
	return json_pack("[s, s?, s?, I, i, s]", f->name ? f->name : "?", f->binary, f->file,
			 (json_int_t)f->line, (int)f->kind, addr);
}

char *result_json_from_profile(const struct profile *p, int partial, size_t *len)
{
	json_t *frames = json_array(), *nodes = json_array();
	for (uint32_t i = 0; i < profile_nframes(p); i++)
		json_array_append_new(frames, frame_json(profile_frame(p, i)));
	for (uint32_t i = 0; i < profile_nnodes(p); i++) {
		const struct profile_node *n = profile_node(p, i);
		json_int_t par = i ? (json_int_t)n->parent : -1, fr = i ? (json_int_t)n->frame : -1;
		json_array_append_new(
		    nodes, json_pack("[I, I, I, I, I]", par, fr, (json_int_t)n->calls,
				     (json_int_t)n->self_insns, (json_int_t)n->self_cycles));
	}
	json_t *doc = json_pack("{s:s, s:i, s:b, s:b, s:o, s:o, s:o}", "format", "oobprof-profile",
				"version", RESULT_VERSION, "partial", partial, "has_cycles",
				profile_has_cycles(p), "stats", result_stats_json(profile_stats(p)),
				"frames", frames, "nodes", nodes);
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (len)
		*len = text ? strlen(text) : 0;
	return text;
}

static const char *dup_or_null(struct oob_arena *a, json_t *v)
{
	return json_is_string(v) ? oob_arena_strdup(a, json_string_value(v)) : NULL;
}

static int parse_frame(struct result *r, size_t i, json_t *v, struct oob_err *err)
{
	json_t *name, *bin, *file, *addr;
	json_int_t line;
	int kind;
	if (json_unpack(v, "[o, o, o, I, i, o]", &name, &bin, &file, &line, &kind, &addr) < 0 ||
	    !json_is_string(name) || !json_is_string(addr) || kind < 0 ||
	    kind > PROFILE_FRAME_INLINE || line < 0 || line > UINT32_MAX)
		return oob_err_set(err, -EINVAL, "profile: frame %zu is malformed", i);
	struct profile_frame *f = &r->frames[i];
	f->name = dup_or_null(r->arena, name);
	f->binary = dup_or_null(r->arena, bin);
	f->file = dup_or_null(r->arena, file);
	f->line = (uint32_t)line;
	f->kind = (uint8_t)kind;
	f->addr = strtoull(json_string_value(addr), NULL, 16);
	return 0;
}

static int parse_node(struct result *r, uint32_t i, json_t *v, struct oob_err *err)
{
	json_int_t par, fr, calls, si, sc;
	if (json_unpack(v, "[I, I, I, I, I]", &par, &fr, &calls, &si, &sc) < 0)
		return oob_err_set(err, -EINVAL, "profile: node %u is malformed", i);
	struct profile_node *n = &r->nodes[i];
	int root_ok = i == 0 && par == -1 && fr == -1;
	int child_ok = i > 0 && par >= 0 && par < i && fr >= 0 && (size_t)fr < r->nframes;
	if (!(root_ok || child_ok) || calls < 0 || si < 0 || sc < 0)
		return oob_err_set(err, -EINVAL,
				   "profile: node %u: parent %lld or frame %lld out of range", i,
				   (long long)par, (long long)fr);
	n->parent = i ? (uint32_t)par : PROFILE_NONE;
	n->frame = i ? (uint32_t)fr : PROFILE_NONE;
	n->first_child = n->next_sibling = PROFILE_NONE;
	n->calls = (uint64_t)calls;
	n->self_insns = n->total_insns = (uint64_t)si;
	n->self_cycles = n->total_cycles = (uint64_t)sc;
	return 0;
}

/* The same backwards pass as profile_build: totals, children in order. */
static void link_nodes(struct result *r)
{
	for (size_t i = r->nnodes; i-- > 1;) {
		struct profile_node *d = &r->nodes[i], *par = &r->nodes[d->parent];
		par->total_insns += d->total_insns;
		par->total_cycles += d->total_cycles;
		d->next_sibling = par->first_child;
		par->first_child = (uint32_t)i;
	}
}

static int parse_stats(struct result *r, json_t *o, struct oob_err *err)
{
	struct profile_stats *s = &r->st;
	json_t *v;
	if (!json_is_object(o))
		return oob_err_set(err, -EINVAL, "profile: \"stats\" is not an object");
	s->format = dup_or_null(r->arena, json_object_get(o, "format"));
	s->harts = (unsigned)json_integer_value(json_object_get(o, "harts"));
#define GET(f) s->f = (uint64_t)json_integer_value(json_object_get(o, #f));
	STAT_FIELDS(GET)
#undef GET
	if ((v = json_object_get(o, "seconds")))
		s->seconds = json_number_value(v);
	s->partial = json_is_true(json_object_get(o, "partial"));
	return 0;
}

static int parse_doc(struct result *r, json_t *doc, struct oob_err *err)
{
	json_t *frames, *nodes, *stats;
	const char *fmt;
	int version, partial, has_cycles, rc;
	if (json_unpack(doc, "{s:s, s:i, s:b, s:b, s:o, s:o, s:o}", "format", &fmt, "version",
			&version, "partial", &partial, "has_cycles", &has_cycles, "stats", &stats,
			"frames", &frames, "nodes", &nodes) < 0 ||
	    strcmp(fmt, "oobprof-profile") != 0 || !json_is_array(frames) || !json_is_array(nodes))
		return oob_err_set(err, -EINVAL, "not an oobprof profile document");
	if (version != RESULT_VERSION)
		return oob_err_set(err, -ENOTSUP, "profile document version %d (expected %d)",
				   version, RESULT_VERSION);
	r->partial = partial;
	r->has_cycles = has_cycles;
	r->nframes = json_array_size(frames);
	r->nnodes = json_array_size(nodes);
	if (r->nnodes == 0 || r->nnodes >= PROFILE_NONE || r->nframes >= PROFILE_NONE)
		return oob_err_set(err, -EINVAL, "profile: %zu nodes, %zu frames", r->nnodes,
				   r->nframes);
	r->frames = oob_xcalloc(r->nframes ? r->nframes : 1, sizeof(*r->frames));
	r->nodes = oob_xcalloc(r->nnodes, sizeof(*r->nodes));
	for (size_t i = 0; i < r->nframes; i++)
		if ((rc = parse_frame(r, i, json_array_get(frames, i), err)) < 0)
			return rc;
	for (uint32_t i = 0; i < r->nnodes; i++)
		if ((rc = parse_node(r, i, json_array_get(nodes, i), err)) < 0)
			return rc;
	link_nodes(r);
	return parse_stats(r, stats, err);
}

struct result *result_parse(const char *text, size_t n, struct oob_err *err)
{
	json_error_t je;
	json_t *doc = json_loadb(text, n, 0, &je);
	if (!doc) {
		oob_err_set(err, -EINVAL, "profile: line %d: %s", je.line, je.text);
		return NULL;
	}
	struct result *r = oob_xcalloc(1, sizeof(*r));
	r->arena = oob_arena_new();
	int rc = parse_doc(r, doc, err);
	json_decref(doc);
	if (rc < 0) {
		result_free(r);
		return NULL;
	}
	return r;
}

struct result *result_load(const char *path, struct oob_err *err)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0, k;
	struct result *r = NULL;
	do {
		oob_xgrow((void **)&buf, &cap, len + 65536, 1);
		k = fread(buf + len, 1, cap - len, f);
		len += k;
	} while (k > 0);
	if (ferror(f))
		oob_err_set(err, -EIO, "%s: read error", path);
	else if (!(r = result_parse(buf, len, err)))
		oob_err_prefix(err, "%s", path);
	free(buf);
	fclose(f);
	return r;
}

void result_free(struct result *r)
{
	if (!r)
		return;
	free(r->nodes);
	free(r->frames);
	oob_arena_free(r->arena);
	free(r);
}

size_t result_nnodes(const struct result *r)
{
	return r->nnodes;
}

const struct profile_node *result_node(const struct result *r, uint32_t id)
{
	return &r->nodes[id];
}

size_t result_nframes(const struct result *r)
{
	return r->nframes;
}

const struct profile_frame *result_frame(const struct result *r, uint32_t id)
{
	return &r->frames[id];
}

const struct profile_stats *result_stats(const struct result *r)
{
	return &r->st;
}

int result_has_cycles(const struct result *r)
{
	return r->has_cycles;
}

int result_partial(const struct result *r)
{
	return r->partial;
}

static void write_frame(FILE *f, const struct profile_frame *fr, int annotate)
{
	for (const char *c = fr->name; *c; c++)
		putc(*c == ';' ? ':' : (*c == '\n' ? ' ' : *c), f);
	if (annotate && fr->kind == PROFILE_FRAME_KERNEL)
		fputs("_[k]", f);
	else if (annotate && fr->kind == PROFILE_FRAME_INLINE)
		fputs("_[i]", f);
}

int result_write_folded(const struct result *r, FILE *f, enum profile_metric m, int annotate)
{
	uint32_t *path = oob_xmalloc((r->nnodes + 1) * sizeof(*path));
	for (uint32_t i = 1; i < r->nnodes; i++) {
		uint64_t w = profile_node_self(&r->nodes[i], m);
		if (!w)
			continue;
		size_t depth = 0;
		for (uint32_t k = i; k != 0 && k != PROFILE_NONE; k = r->nodes[k].parent)
			path[depth++] = r->nodes[k].frame;
		while (depth--) {
			write_frame(f, &r->frames[path[depth]], annotate);
			if (depth)
				putc(';', f);
		}
		fprintf(f, " %" PRIu64 "\n", w);
	}
	uint64_t root = profile_node_self(&r->nodes[0], m);
	if (root && m != PROFILE_CALLS)
		fprintf(f, "[unknown] %" PRIu64 "\n", root);
	free(path);
	return ferror(f) ? -EIO : 0;
}

static int recursive(const struct result *r, uint32_t i)
{
	uint32_t fr = r->nodes[i].frame;
	for (uint32_t k = r->nodes[i].parent; k != 0 && k != PROFILE_NONE; k = r->nodes[k].parent)
		if (r->nodes[k].frame == fr)
			return 1;
	return 0;
}

static uint64_t func_self(const struct profile_func *f, enum profile_metric m)
{
	return m == PROFILE_INSNS ? f->self_insns : m == PROFILE_CYCLES ? f->self_cycles : f->calls;
}

struct func_key {
	uint64_t key;
	uint32_t frame;
};

/* Descending by self weight, then ascending by frame: profile_functions' order. */
static int key_cmp(const void *a, const void *b)
{
	const struct func_key *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

size_t result_functions(const struct result *r, enum profile_metric m, struct profile_func **out)
{
	size_t nf = r->nframes ? r->nframes : 1, k = 0;
	struct profile_func *v = oob_xcalloc(nf, sizeof(*v));
	uint8_t *used = oob_xcalloc(nf, 1);
	for (uint32_t i = 1; i < r->nnodes; i++) {
		const struct profile_node *n = &r->nodes[i];
		struct profile_func *f = &v[n->frame];
		used[n->frame] = 1;
		f->calls += n->calls;
		f->self_insns += n->self_insns;
		f->self_cycles += n->self_cycles;
		if (!recursive(r, i)) {
			f->total_insns += n->total_insns;
			f->total_cycles += n->total_cycles;
		}
	}
	struct func_key *keys = oob_xcalloc(nf, sizeof(*keys));
	for (uint32_t i = 0; i < r->nframes; i++)
		if (used[i])
			keys[k++] = (struct func_key){func_self(&v[i], m), i};
	qsort(keys, k, sizeof(*keys), key_cmp);
	struct profile_func *sorted = oob_xcalloc(k ? k : 1, sizeof(*sorted));
	for (size_t j = 0; j < k; j++) {
		sorted[j] = v[keys[j].frame];
		sorted[j].frame = keys[j].frame;
	}
	free(keys);
	free(used);
	free(v);
	*out = sorted;
	return k;
}
