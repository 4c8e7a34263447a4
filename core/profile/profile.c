#include "profile/profile.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_map.h"
#include "profile/profile_impl.h"

void profile_free(struct profile *p)
{
	if (!p)
		return;
	free(p->nodes);
	free(p->frames);
	free(p->procs);
	free(p->pcs);
	free(p->sites);
	free(p->hcalls);
	oob_arena_free(p->arena);
	free(p);
}

size_t profile_nnodes(const struct profile *p)
{
	return p->nnodes;
}

const struct profile_node *profile_node(const struct profile *p, uint32_t id)
{
	return &p->nodes[id];
}

size_t profile_nframes(const struct profile *p)
{
	return p->nframes;
}

const struct profile_frame *profile_frame(const struct profile *p, uint32_t id)
{
	return &p->frames[id];
}

const struct profile_stats *profile_stats(const struct profile *p)
{
	return &p->st;
}

int profile_has_cycles(const struct profile *p)
{
	return p->has_cycles;
}

size_t profile_nprocesses(const struct profile *p)
{
	return p->nprocs;
}

const struct profile_process *profile_process(const struct profile *p, size_t i)
{
	return &p->procs[i];
}

const char *profile_process_source(const struct profile *p)
{
	return p->proc_source;
}

uint64_t profile_switches(const struct profile *p)
{
	return p->switches;
}

void profile_set_processes(struct profile *p, const struct profile_process *v, size_t n,
			   const char *source, uint64_t switches)
{
	free(p->procs);
	p->procs = oob_xcalloc(n ? n : 1, sizeof(*p->procs));
	p->nprocs = n;
	p->proc_source = source ? oob_arena_strdup(p->arena, source) : NULL;
	p->switches = switches;
	for (size_t i = 0; i < n; i++) {
		struct profile_exec *ex =
		    oob_arena_zalloc(p->arena, (v[i].nexecs + 1) * sizeof(*ex));
		for (size_t e = 0; e < v[i].nexecs; e++)
			ex[e] = (struct profile_exec){
			    oob_arena_strdup(p->arena, v[i].execs[e].path), v[i].execs[e].when};
		uint64_t *satps = oob_arena_zalloc(p->arena, (v[i].nsatps + 1) * sizeof(*satps));
		if (v[i].nsatps)
			memcpy(satps, v[i].satps, v[i].nsatps * sizeof(*satps));
		p->procs[i] = v[i];
		p->procs[i].comm = oob_arena_strdup(p->arena, v[i].comm ? v[i].comm : "");
		p->procs[i].execs = ex;
		p->procs[i].satps = satps;
	}
}

void profile_copy_processes(struct profile *dst, const struct profile *src)
{
	profile_set_processes(dst, src->procs, src->nprocs, src->proc_source, src->switches);
}

void profile_add_warning(struct profile *p, const char *kind, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	if (p->nwarnings == PROFILE_WARNINGS_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->warnings[p->nwarnings++] = (struct profile_warning){oob_arena_strdup(p->arena, kind),
							       oob_arena_strdup(p->arena, msg)};
}

size_t profile_nwarnings(const struct profile *p)
{
	return p->nwarnings;
}

const struct profile_warning *profile_warning(const struct profile *p, size_t i)
{
	return i < p->nwarnings ? &p->warnings[i] : NULL;
}

const char *profile_frame_kind_name(unsigned kind)
{
	switch (kind) {
	case PROFILE_FRAME_FIRMWARE:
		return "firmware";
	case PROFILE_FRAME_KERNEL:
		return "kernel";
	case PROFILE_FRAME_MARKER:
		return "marker";
	case PROFILE_FRAME_PROCESS:
		return "process";
	case PROFILE_FRAME_INLINE:
		return "inline";
	default:
		return "user";
	}
}

static const char *const metric_names[] = {"instructions", "cycles", "calls"};

int profile_metric_parse(const char *name, enum profile_metric *out)
{
	for (unsigned i = 0; i < 3; i++) {
		if (strcmp(name, metric_names[i]) == 0) {
			*out = (enum profile_metric)i;
			return 0;
		}
	}
	if (strcmp(name, "samples") == 0) { /* sampled profiles keep counts there */
		*out = PROFILE_INSNS;
		return 0;
	}
	return -EINVAL;
}

const char *profile_metric_name(enum profile_metric m)
{
	return metric_names[m];
}

uint64_t profile_node_self(const struct profile_node *n, enum profile_metric m)
{
	return m == PROFILE_INSNS ? n->self_insns : m == PROFILE_CYCLES ? n->self_cycles : n->calls;
}

uint64_t profile_node_total(const struct profile_node *n, enum profile_metric m)
{
	return m == PROFILE_INSNS    ? n->total_insns
	       : m == PROFILE_CYCLES ? n->total_cycles
				     : n->calls;
}

/* ---- building ---- */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path;
}

static void name_function(struct profile *p, struct profile_frame *pf, const struct frame *f,
			  const struct sym_space *const *spaces, size_t nspaces)
{
	const struct sym_space *syms = f->space < nspaces ? spaces[f->space] : NULL;
	const struct sym_mapping *map = NULL;
	const struct sym_func *sf = syms ? sym_space_lookup(syms, f->addr, &map) : NULL;
	char buf[64];
	if (!sf) {
		map = syms ? sym_space_find(syms, f->addr) : NULL;
		snprintf(buf, sizeof(buf), "0x%" PRIx64, f->addr);
		pf->name = oob_arena_strdup(p->arena, buf);
		pf->binary = map ? sym_binary_name(map->bin) : NULL;
		return;
	}
	uint64_t entry = sf->entry + map->bias;
	if (entry == f->addr) {
		pf->name = oob_arena_strdup(p->arena, sf->name);
	} else {
		size_t n = strlen(sf->name) + 32;
		char *s = oob_arena_alloc(p->arena, n);
		snprintf(s, n, "%s+0x%" PRIx64, sf->name, f->addr - entry);
		pf->name = s;
	}
	pf->binary = sym_binary_name(map->bin);
	pf->file = sf->file;
	pf->line = sf->line;
}

/* Distinct functions that print alike (static functions of the same name in
 * two files, one name in two binaries) get the file, binary or address added,
 * so that stacks never merge frames that are not the same function. */
void profile_disambiguate(struct profile *p)
{
	struct oob_map seen;
	oob_map_init(&seen, p->nframes * 2);
	for (size_t pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < p->nframes; i++) {
			struct profile_frame *f = &p->frames[i];
			if (f->kind == PROFILE_FRAME_MARKER || f->kind == PROFILE_FRAME_PROCESS)
				continue;
			uint64_t h = 0xcbf29ce484222325ull;
			for (const char *c = f->name; *c; c++)
				h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
			h &= ~(1ull << 63);
			int inserted;
			uint64_t *v = oob_map_put(&seen, h, &inserted);
			if (pass == 0) {
				*v = inserted ? i : (*v | 1ull << 63);
				continue;
			}
			if (!(*v >> 63))
				continue;
			const char *tag = f->file ? base_name(f->file) : f->binary;
			size_t n = strlen(f->name) + (tag ? strlen(tag) : 0) + 32;
			char *s = oob_arena_alloc(p->arena, n);
			if (tag)
				snprintf(s, n, "%s (%s)", f->name, tag);
			else
				snprintf(s, n, "%s@0x%" PRIx64, f->name, f->addr);
			f->name = s;
		}
	}
	oob_map_destroy(&seen);
}

static void build_frames(struct profile *p, const struct frame_table *ft,
			 const struct sym_space *const *spaces, size_t nspaces)
{
	p->nframes = ft->n;
	p->frames = oob_xcalloc(ft->n ? ft->n : 1, sizeof(*p->frames));
	for (uint32_t i = 0; i < ft->n; i++) {
		const struct frame *f = frame_get(ft, i);
		struct profile_frame *pf = &p->frames[i];
		pf->kind = f->kind;
		pf->addr = f->addr;
		if (f->name)
			pf->name = oob_arena_strdup(p->arena, f->name);
		else
			name_function(p, pf, f, spaces, nspaces);
		if (pf->file)
			pf->file = oob_arena_strdup(p->arena, pf->file);
		if (pf->binary)
			pf->binary = oob_arena_strdup(p->arena, pf->binary);
	}
	profile_disambiguate(p);
}

static void build_nodes(struct profile *p, const struct cct *c)
{
	p->nnodes = c->n;
	p->nodes = oob_xcalloc(c->n, sizeof(*p->nodes));
	for (size_t i = 0; i < c->n; i++) {
		const struct cct_node *s = &c->v[i];
		struct profile_node *d = &p->nodes[i];
		d->parent = i ? s->parent : PROFILE_NONE;
		d->frame = i ? s->frame : PROFILE_NONE;
		d->first_child = d->next_sibling = PROFILE_NONE;
		d->calls = s->calls;
		d->self_insns = d->total_insns = s->insns;
		d->self_cycles = d->total_cycles = s->cycles;
		if (s->cycles)
			p->has_cycles = 1;
	}
	/* Children are created after their parents, so one backwards pass sums
	 * totals and links children in creation order. */
	for (size_t i = c->n; i-- > 1;) {
		struct profile_node *d = &p->nodes[i], *par = &p->nodes[d->parent];
		par->total_insns += d->total_insns;
		par->total_cycles += d->total_cycles;
		d->next_sibling = par->first_child;
		par->first_child = (uint32_t)i;
	}
}

struct profile *profile_build(const struct cct *c, const struct frame_table *ft,
			      const struct sym_space *const *spaces, size_t nspaces,
			      const struct profile_stats *st)
{
	struct profile *p = oob_xcalloc(1, sizeof(*p));
	p->arena = oob_arena_new();
	p->st = *st;
	if (st->cycles)
		p->has_cycles = 1;
	build_frames(p, ft, spaces, nspaces);
	build_nodes(p, c);
	return p;
}

static const char *copy_str(struct profile *p, const char *s)
{
	return s ? oob_arena_strdup(p->arena, s) : NULL;
}

static int check_parts(const struct profile_node *nodes, size_t nnodes, size_t nframes,
		       struct oob_err *err)
{
	if (nnodes == 0 || nodes[0].parent != PROFILE_NONE)
		return oob_err_set(err, -EINVAL, "profile: node 0 must be the root");
	for (size_t i = 1; i < nnodes; i++) {
		if (nodes[i].parent >= i)
			return oob_err_set(err, -EINVAL,
					   "profile: node %zu: parent %u does not precede it", i,
					   nodes[i].parent);
		if (nodes[i].frame >= nframes)
			return oob_err_set(err, -EINVAL, "profile: node %zu: frame %u out of range",
					   i, nodes[i].frame);
	}
	return 0;
}

struct profile *profile_new(const struct profile_node *nodes, size_t nnodes,
			    const struct profile_frame *frames, size_t nframes,
			    const struct profile_stats *st, struct oob_err *err)
{
	if (check_parts(nodes, nnodes, nframes, err) < 0)
		return NULL;
	struct profile *p = oob_xcalloc(1, sizeof(*p));
	p->arena = oob_arena_new();
	p->st = *st;
	p->st.format = copy_str(p, st->format);
	p->has_cycles = st->cycles != 0;
	p->nframes = nframes;
	p->frames = oob_xcalloc(nframes ? nframes : 1, sizeof(*p->frames));
	for (size_t i = 0; i < nframes; i++) {
		p->frames[i] = frames[i];
		p->frames[i].name = copy_str(p, frames[i].name ? frames[i].name : "?");
		p->frames[i].binary = copy_str(p, frames[i].binary);
		p->frames[i].file = copy_str(p, frames[i].file);
	}
	/* Re-derive through the same path as a fresh reconstruction. */
	struct cct c = {.n = nnodes};
	c.v = oob_xcalloc(nnodes, sizeof(*c.v));
	for (size_t i = 0; i < nnodes; i++)
		c.v[i] = (struct cct_node){.parent = nodes[i].parent,
					   .frame = nodes[i].frame,
					   .calls = nodes[i].calls,
					   .insns = nodes[i].self_insns,
					   .cycles = nodes[i].self_cycles};
	build_nodes(p, &c);
	free(c.v);
	return p;
}

/* ---- folded stacks ---- */

static int write_frame(FILE *f, const struct profile_frame *fr, int annotate)
{
	for (const char *c = fr->name; *c; c++)
		if (putc(*c == ';' ? ':' : (*c == '\n' ? ' ' : *c), f) == EOF)
			return -EIO;
	if (annotate && fr->kind == PROFILE_FRAME_KERNEL)
		fputs("_[k]", f);
	else if (annotate && fr->kind == PROFILE_FRAME_INLINE)
		fputs("_[i]", f);
	return 0;
}

int profile_write_folded(const struct profile *p, FILE *f, enum profile_metric m, int annotate)
{
	uint32_t *path = oob_xmalloc((p->nnodes + 1) * sizeof(*path));
	for (uint32_t i = 1; i < p->nnodes; i++) {
		const struct profile_node *n = &p->nodes[i];
		uint64_t w = profile_node_self(n, m);
		if (!w)
			continue;
		size_t depth = 0;
		for (uint32_t k = i; k != 0 && k != PROFILE_NONE; k = p->nodes[k].parent)
			path[depth++] = p->nodes[k].frame;
		while (depth--) {
			write_frame(f, &p->frames[path[depth]], annotate);
			if (depth)
				putc(';', f);
		}
		fprintf(f, " %" PRIu64 "\n", w);
	}
	/* Instructions that ran before any frame was known stay on the root. */
	if (p->nnodes && profile_node_self(&p->nodes[0], m) && m != PROFILE_CALLS)
		fprintf(f, "[unknown] %" PRIu64 "\n", profile_node_self(&p->nodes[0], m));
	free(path);
	return ferror(f) ? -EIO : 0;
}

/* ---- per-function table ---- */

struct func_key {
	uint64_t key;
	uint32_t frame;
};

static int key_cmp(const void *a, const void *b)
{
	const struct func_key *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static uint64_t func_self(const struct profile_func *f, enum profile_metric m)
{
	return m == PROFILE_INSNS ? f->self_insns : m == PROFILE_CYCLES ? f->self_cycles : f->calls;
}

/* 1 if an ancestor of node i has the same frame (its total already counts i). */
static int recursive(const struct profile *p, uint32_t i)
{
	uint32_t fr = p->nodes[i].frame;
	for (uint32_t k = p->nodes[i].parent; k != 0 && k != PROFILE_NONE; k = p->nodes[k].parent)
		if (p->nodes[k].frame == fr)
			return 1;
	return 0;
}

size_t profile_functions(const struct profile *p, enum profile_metric m, struct profile_func **out)
{
	struct profile_func *v = oob_xcalloc(p->nframes ? p->nframes : 1, sizeof(*v));
	uint8_t *used = oob_xcalloc(p->nframes ? p->nframes : 1, 1);
	for (uint32_t i = 1; i < p->nnodes; i++) {
		const struct profile_node *n = &p->nodes[i];
		struct profile_func *f = &v[n->frame];
		used[n->frame] = 1;
		f->calls += n->calls;
		f->self_insns += n->self_insns;
		f->self_cycles += n->self_cycles;
		if (!recursive(p, i)) {
			f->total_insns += n->total_insns;
			f->total_cycles += n->total_cycles;
		}
	}
	size_t k = 0;
	struct func_key *keys = oob_xcalloc(p->nframes ? p->nframes : 1, sizeof(*keys));
	for (uint32_t i = 0; i < p->nframes; i++)
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
