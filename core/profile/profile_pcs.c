/*
 * profile_pcs: the per-pc counts a profile may carry (profile.h,
 * recon_opts.pcs).
 */
#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile/profile_impl.h"
#include "profile/profile_json.h"
#include "util/oob_map.h"
#include "util/oob_mem.h"

size_t profile_npcs(const struct profile *p)
{
	return p->npcs;
}

const struct profile_pc *profile_pc(const struct profile *p, size_t i)
{
	return &p->pcs[i];
}

size_t profile_nhart_calls(const struct profile *p)
{
	return p->nhcalls;
}

const struct profile_hart_calls *profile_hart_calls(const struct profile *p, size_t i)
{
	return &p->hcalls[i];
}

void profile_set_hart_calls(struct profile *p, struct profile_hart_calls *v, size_t n)
{
	free(p->hcalls);
	p->hcalls = v;
	p->nhcalls = n;
}

size_t profile_nsites(const struct profile *p)
{
	return p->nsites;
}

const struct profile_site *profile_site(const struct profile *p, uint32_t i)
{
	return &p->sites[i];
}

/* Sites share their strings (a binary's path, a file name): each distinct
 * pointer is copied once. */
static const char *keep(struct oob_arena *a, struct oob_map *seen, const char *s)
{
	if (!s)
		return NULL;
	uint64_t *v = oob_map_put(seen, (uint64_t)(uintptr_t)s, NULL);
	if (!*v)
		*v = (uint64_t)(uintptr_t)oob_arena_strdup(a, s);
	return (const char *)(uintptr_t)*v;
}

void profile_set_pcs(struct profile *p, struct profile_pc *rows, size_t nrows,
		     struct profile_site *sites, size_t nsites)
{
	free(p->pcs);
	free(p->sites);
	p->pcs = rows;
	p->npcs = nrows;
	p->sites = sites;
	p->nsites = nsites;
	struct oob_map seen;
	oob_map_init(&seen, 256);
	for (size_t i = 0; i < nsites; i++) {
		struct profile_site *s = &sites[i];
		s->binary = keep(p->arena, &seen, s->binary);
		s->build_id = keep(p->arena, &seen, s->build_id);
		s->file = keep(p->arena, &seen, s->file);
		for (uint32_t k = 0; k < s->ninl; k++) {
			s->inl[k].name = keep(p->arena, &seen, s->inl[k].name);
			s->inl[k].call_file = keep(p->arena, &seen, s->inl[k].call_file);
		}
	}
	oob_map_destroy(&seen);
}

/* ---- stored with a result (profile_json.h) ---- */

static json_t *str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

static json_t *hex(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return json_string(b);
}

static json_t *site_json(const struct profile_site *s)
{
	json_t *inl = json_array();
	for (uint32_t k = 0; k < s->ninl; k++)
		json_array_append_new(inl, json_pack("[o, o, I]", str_or_null(s->inl[k].name),
						     str_or_null(s->inl[k].call_file),
						     (json_int_t)s->inl[k].call_line));
	return json_pack("[o, o, I, I, o, o, o, I, o]", hex(s->pc), hex(s->link),
			 (json_int_t)s->space,
			 s->frame == PROFILE_NONE ? (json_int_t)-1 : (json_int_t)s->frame,
			 str_or_null(s->binary), str_or_null(s->build_id), str_or_null(s->file),
			 (json_int_t)s->line, inl);
}

json_t *profile_pcs_json(const struct profile *p)
{
	if (!p->npcs)
		return NULL;
	json_t *sites = json_array(), *rows = json_array(), *hcalls = json_array();
	for (size_t i = 0; i < p->nsites; i++)
		json_array_append_new(sites, site_json(&p->sites[i]));
	for (size_t i = 0; i < p->npcs; i++) {
		const struct profile_pc *r = &p->pcs[i];
		json_t *row =
		    json_pack("[I, I, I, I, I]", (json_int_t)r->node, (json_int_t)r->site,
			      (json_int_t)r->insns, (json_int_t)r->cycles, (json_int_t)r->calls);
		if (r->hart != PROFILE_HART_UNKNOWN)
			json_array_append_new(row, json_integer(r->hart));
		json_array_append_new(rows, row);
	}
	for (size_t i = 0; i < p->nhcalls; i++)
		json_array_append_new(hcalls, json_pack("[I, I, I]", (json_int_t)p->hcalls[i].node,
							(json_int_t)p->hcalls[i].hart,
							(json_int_t)p->hcalls[i].calls));
	json_t *doc = json_pack("{s:o, s:o}", "sites", sites, "rows", rows);
	if (p->nhcalls)
		json_object_set_new(doc, "hart_calls", hcalls);
	else
		json_decref(hcalls);
	return doc;
}

/* Strings point into the document until profile_set_pcs copies them. */
static int site_from_json(struct profile_site *s, const json_t *v, size_t nframes)
{
	json_t *pc, *link, *bin, *bid, *file, *inl;
	json_int_t space, frame, line;
	if (json_unpack((json_t *)v, "[o, o, I, I, o, o, o, I, o]", &pc, &link, &space, &frame,
			&bin, &bid, &file, &line, &inl) < 0 ||
	    !json_is_string(pc) || !json_is_string(link) || space < 0 || space > UINT32_MAX ||
	    frame < -1 || frame >= (json_int_t)nframes || line < 0 || line > UINT32_MAX ||
	    !json_is_array(inl) || json_array_size(inl) > PROFILE_SITE_INLINES)
		return -EINVAL;
	s->pc = strtoull(json_string_value(pc), NULL, 16);
	s->link = strtoull(json_string_value(link), NULL, 16);
	s->space = (uint32_t)space;
	s->frame = frame < 0 ? PROFILE_NONE : (uint32_t)frame;
	s->binary = json_string_value(bin);
	s->build_id = json_string_value(bid);
	s->file = json_string_value(file);
	s->line = (uint32_t)line;
	for (size_t k = 0; k < json_array_size(inl); k++) {
		json_t *name, *cf;
		json_int_t cl;
		if (json_unpack(json_array_get(inl, k), "[o, o, I]", &name, &cf, &cl) < 0 ||
		    !json_is_string(name) || cl < 0 || cl > UINT32_MAX)
			return -EINVAL;
		s->inl[k].name = json_string_value(name);
		s->inl[k].call_file = json_string_value(cf);
		s->inl[k].call_line = (uint32_t)cl;
	}
	s->ninl = (uint32_t)json_array_size(inl);
	return 0;
}

/* A row stored before rows had harts has five elements: its hart is unknown. */
static int row_from_json(struct profile_pc *r, const json_t *v, size_t nnodes, size_t nsites)
{
	json_int_t node, site, insns, cycles, calls, hart = PROFILE_HART_UNKNOWN;
	if (json_unpack((json_t *)v, "[I, I, I, I, I!]", &node, &site, &insns, &cycles, &calls) <
		0 &&
	    json_unpack((json_t *)v, "[I, I, I, I, I, I!]", &node, &site, &insns, &cycles, &calls,
			&hart) < 0)
		return -EINVAL;
	if (node < 0 || (size_t)node >= nnodes || site < 0 || (size_t)site >= nsites || insns < 0 ||
	    cycles < 0 || calls < 0 || hart < 0 || hart > PROFILE_HART_UNKNOWN)
		return -EINVAL;
	*r = (struct profile_pc){.node = (uint32_t)node,
				 .site = (uint32_t)site,
				 .hart = (uint32_t)hart,
				 .insns = (uint64_t)insns,
				 .cycles = (uint64_t)cycles,
				 .calls = (uint64_t)calls};
	return 0;
}

/* "hart_calls": absent in a profile stored before they were kept. */
static int hcalls_from_json(struct profile *p, const json_t *a, struct oob_err *err)
{
	if (!a)
		return 0;
	if (!json_is_array(a))
		return oob_err_set(err, -EINVAL, "profile: \"hart_calls\" is not an array");
	size_t n = json_array_size(a);
	struct profile_hart_calls *v = oob_xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		json_int_t node, hart, calls;
		if (json_unpack(json_array_get(a, i), "[I, I, I!]", &node, &hart, &calls) < 0 ||
		    node < 1 || (size_t)node >= p->nnodes || hart < 0 || hart >= UINT32_MAX ||
		    calls < 0) {
			free(v);
			return oob_err_set(err, -EINVAL, "profile: hart_calls %zu is malformed", i);
		}
		v[i] = (struct profile_hart_calls){(uint32_t)node, (uint32_t)hart, (uint64_t)calls};
	}
	profile_set_hart_calls(p, v, n);
	return 0;
}

int profile_pcs_from_json(struct profile *p, const json_t *doc, struct oob_err *err)
{
	if (!doc)
		return 0;
	const json_t *sa = json_object_get(doc, "sites"), *ra = json_object_get(doc, "rows");
	if (!json_is_array(sa) || !json_is_array(ra))
		return oob_err_set(err, -EINVAL, "profile: \"pcs\" is malformed");
	size_t ns = json_array_size(sa), nr = json_array_size(ra);
	struct profile_site *sites = oob_xcalloc(ns ? ns : 1, sizeof(*sites));
	struct profile_pc *rows = oob_xcalloc(nr ? nr : 1, sizeof(*rows));
	for (size_t i = 0; i < ns; i++)
		if (site_from_json(&sites[i], json_array_get(sa, i), p->nframes) < 0) {
			free(sites);
			free(rows);
			return oob_err_set(err, -EINVAL, "profile: pcs site %zu is malformed", i);
		}
	for (size_t i = 0; i < nr; i++)
		if (row_from_json(&rows[i], json_array_get(ra, i), p->nnodes, ns) < 0) {
			free(sites);
			free(rows);
			return oob_err_set(err, -EINVAL, "profile: pcs row %zu is malformed", i);
		}
	profile_set_pcs(p, rows, nr, sites, ns);
	return hcalls_from_json(p, json_object_get(doc, "hart_calls"), err);
}
