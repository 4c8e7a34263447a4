#include "result.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "profile/profile_json.h"

/* A loaded result is a core profile (so folded stacks and function tables
 * come from the same code as the CLI's) plus what only the server keeps. */
struct result {
	struct profile *p;
	int partial;
};

/* What a document is parsed into before profile_new copies it. */
struct result_doc {
	struct profile_node *nodes;
	size_t nnodes;
	struct profile_frame *frames;
	size_t nframes;
	struct profile_stats st;
	json_t *processes; /* borrowed from the document */
	json_t *warnings;  /* likewise; NULL in results stored before them */
	json_t *pcs;	   /* likewise; NULL when the job did not count per pc */
	int has_cycles, partial;
	struct oob_arena *arena;
};

void result_path(int64_t job, enum result_file f, char *buf, size_t n)
{
	static const char *const names[] = {
	    [RESULT_DIR] = "",
	    [RESULT_PROFILE] = "/profile.json",
	    [RESULT_FOLDED] = "/folded.txt",
	    [RESULT_EVENTS] = "/events.evl",
	    [RESULT_GO] = "/go.json",
	    [RESULT_INDEX] = "/events.idx",
	    [RESULT_LOD] = "/events.lod",
	};
	snprintf(buf, n, "results/%lld%s", (long long)job, names[f]);
}

static json_t *frame_json(const struct profile_frame *f)
{
	char addr[24];
	snprintf(addr, sizeof(addr), "0x%" PRIx64, f->addr);
	return json_pack("[s, s?, s?, I, i, s]", f->name ? f->name : "?", f->binary, f->file,
			 (json_int_t)f->line, (int)f->kind, addr);
}

/* The process list as the API serves it, plus each process's root frame:
 * the per-process flame graph needs it, the API does not show it. */
static json_t *processes_json(const struct profile *p)
{
	json_t *doc = profile_processes_json(p), *arr = json_object_get(doc, "processes");
	for (size_t k = 0; k < profile_nprocesses(p) && k < json_array_size(arr); k++)
		json_object_set_new(json_array_get(arr, k), "frame",
				    json_integer(profile_process(p, k)->frame));
	return doc;
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
	json_t *doc = json_pack(
	    "{s:s, s:i, s:b, s:b, s:o, s:o, s:o, s:o, s:o}", "format", "oobprof-profile", "version",
	    RESULT_VERSION, "partial", partial, "has_cycles", profile_has_cycles(p), "stats",
	    profile_stats_json(profile_stats(p)), "frames", frames, "nodes", nodes, "processes",
	    processes_json(p), "warnings", profile_warnings_json(p));
	json_t *pcs = profile_pcs_json(p);
	if (pcs)
		json_object_set_new(doc, "pcs", pcs);
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

static int parse_frame(struct result_doc *r, size_t i, json_t *v, struct oob_err *err)
{
	json_t *name, *bin, *file, *addr;
	json_int_t line;
	int kind;
	if (json_unpack(v, "[o, o, o, I, i, o]", &name, &bin, &file, &line, &kind, &addr) < 0 ||
	    !json_is_string(name) || !json_is_string(addr) || kind < 0 ||
	    kind > PROFILE_FRAME_FIRMWARE || line < 0 || line > UINT32_MAX)
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

static int parse_node(struct result_doc *r, uint32_t i, json_t *v, struct oob_err *err)
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

static int parse_stats(struct result_doc *r, json_t *o, struct oob_err *err)
{
	struct profile_stats *s = &r->st;
	json_t *v;
	if (!json_is_object(o))
		return oob_err_set(err, -EINVAL, "profile: \"stats\" is not an object");
	s->format = dup_or_null(r->arena, json_object_get(o, "format"));
	s->harts = (unsigned)json_integer_value(json_object_get(o, "harts"));
#define GET(f) s->f = (uint64_t)json_integer_value(json_object_get(o, #f));
	PROFILE_STAT_FIELDS(GET)
#undef GET
	if ((v = json_object_get(o, "seconds")))
		s->seconds = json_number_value(v);
	s->partial = json_is_true(json_object_get(o, "partial"));
	s->sampled = json_is_true(json_object_get(o, "sampled"));
	return 0;
}

static int parse_doc(struct result_doc *r, json_t *doc, struct oob_err *err)
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
	r->processes = json_object_get(doc, "processes");
	r->warnings = json_object_get(doc, "warnings");
	r->pcs = json_object_get(doc, "pcs");
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
	struct result_doc d = {.arena = oob_arena_new()};
	struct result *r = NULL;
	if (parse_doc(&d, doc, err) == 0) {
		struct profile *p = profile_new(d.nodes, d.nnodes, d.frames, d.nframes, &d.st, err);
		if (p && (profile_processes_from_json(p, d.processes, err) < 0 ||
			  profile_warnings_from_json(p, d.warnings, err) < 0 ||
			  profile_pcs_from_json(p, d.pcs, err) < 0)) {
			profile_free(p);
			p = NULL;
		}
		if (p) {
			r = oob_xcalloc(1, sizeof(*r));
			r->p = p;
			r->partial = d.partial;
		}
	}
	json_decref(doc);
	free(d.nodes);
	free(d.frames);
	oob_arena_free(d.arena);
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
	profile_free(r->p);
	free(r);
}

const struct profile *result_profile(const struct result *r)
{
	return r->p;
}

size_t result_nnodes(const struct result *r)
{
	return profile_nnodes(r->p);
}

const struct profile_node *result_node(const struct result *r, uint32_t id)
{
	return profile_node(r->p, id);
}

size_t result_nframes(const struct result *r)
{
	return profile_nframes(r->p);
}

const struct profile_frame *result_frame(const struct result *r, uint32_t id)
{
	return profile_frame(r->p, id);
}

const struct profile_stats *result_stats(const struct result *r)
{
	return profile_stats(r->p);
}

int result_has_cycles(const struct result *r)
{
	return profile_has_cycles(r->p);
}

int result_partial(const struct result *r)
{
	return r->partial;
}

int result_write_folded(const struct result *r, FILE *f, enum profile_metric m, int annotate)
{
	return profile_write_folded(r->p, f, m, annotate);
}

size_t result_functions(const struct result *r, enum profile_metric m, struct profile_func **out)
{
	return profile_functions(r->p, m, out);
}
