/*
 * The profile's layout and its builder, shared by recon.c (which builds
 * profiles from a calling-context tree) and profile.c. Not a public header.
 */
#ifndef OOB_PROFILE_IMPL_H
#define OOB_PROFILE_IMPL_H

#include "cct.h"
#include "frame.h"
#include "oob_mem.h"
#include "profile.h"
#include "sym.h"

struct profile {
	struct profile_node *nodes;
	size_t nnodes;
	struct profile_frame *frames;
	size_t nframes;
	struct profile_stats st;
	int has_cycles;
	struct oob_arena *arena; /* frame strings */
};

/* Symbolizes the frames once, derives totals and child lists. Never NULL. */
struct profile *profile_build(const struct cct *c, const struct frame_table *ft,
			      const struct sym_space *syms, const struct profile_stats *st,
			      int inline_frames);

#endif
