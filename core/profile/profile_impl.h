/*
 * The profile's layout and its builder, shared by recon.c (which builds
 * profiles from a calling-context tree) and profile.c. Not a public header.
 */
#ifndef OOB_PROFILE_IMPL_H
#define OOB_PROFILE_IMPL_H

#include "profile/cct.h"
#include "profile/frame.h"
#include "util/oob_mem.h"
#include "profile/profile.h"
#include "sym/sym.h"

struct profile {
	struct profile_node *nodes;
	size_t nnodes;
	struct profile_frame *frames;
	size_t nframes;
	struct profile_stats st;
	int has_cycles;
	struct profile_process *procs;
	size_t nprocs;
	const char *proc_source;
	uint64_t switches;
	struct profile_warning warnings[PROFILE_WARNINGS_MAX];
	size_t nwarnings;
	struct profile_pc *pcs; /* per-pc counts (profile_set_pcs), or NULL */
	size_t npcs;
	struct profile_site *sites;
	size_t nsites;
	struct profile_hart_calls *hcalls; /* per hart entries (profile_set_hart_calls) */
	size_t nhcalls;
	struct oob_arena *arena; /* frame strings, process data, warnings */
};

/* Gives p the per-pc rows and sites (p takes both arrays, allocated with
 * malloc; the sites' strings are copied into p's arena). */
void profile_set_pcs(struct profile *p, struct profile_pc *rows, size_t nrows,
		     struct profile_site *sites, size_t nsites);
/* Gives p the per-hart entry counts (p takes the malloc'd array). */
void profile_set_hart_calls(struct profile *p, struct profile_hart_calls *v, size_t n);

/* Symbolizes the frames once, derives totals and child lists. Never NULL. */
struct profile *profile_build(const struct cct *c, const struct frame_table *ft,
			      const struct sym_space *const *spaces, size_t nspaces,
			      const struct profile_stats *st);

#endif
