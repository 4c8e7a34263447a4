/*
 * profile_pcs: the per-pc counts a profile may carry (profile.h,
 * recon_opts.pcs).
 */
#include "profile/profile.h"

#include <stdlib.h>

#include "profile/profile_impl.h"
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
