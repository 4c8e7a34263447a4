/*
 * gotrace internals shared by gotrace.c (open, tables, accessors),
 * gotrace_v1.c, gotrace_v2.c (the two wire decoders and their orderings) and
 * gotrace_model.c (state machines -> intervals). Not a public header.
 */
#ifndef OOB_GOTRACE_IMPL_H
#define OOB_GOTRACE_IMPL_H

#include "go/gotrace.h"
#include "util/oob_map.h"
#include "util/oob_mem.h"

/* Varint errors (gotrace_uv). */
#define GOTRACE_UV_SHORT (-1) /* input ended inside the varint */
#define GOTRACE_UV_LONG	 (-2) /* more than 10 bytes, or a 10th byte above 1 */

/* Upper bounds that keep hostile input from asking for absurd memory. */
#define GOTRACE_MAX_FRAMES 1024u
#define GOTRACE_MAX_STRING (1u << 20)

struct gotrace_vec {
	void *p;
	size_t n, cap;
};

struct gotrace {
	struct oob_arena *arena; /* strings, frames */
	const char *name;
	struct gotrace_info info;
	uint64_t counts[256];

	struct gotrace_event *ev; /* in global order once parsed */
	size_t nev, cap_ev;

	struct gotrace_stack *stacks; /* index = dense stack id; 0 = none */
	size_t nstacks, cap_stacks;

	/* model storage (gotrace_model.c) */
	struct gotrace_model model;
	struct gotrace_goroutine *gs;
	struct gotrace_proc *ps;
	struct gotrace_thread *ms;
	struct gotrace_span *gspans, *pspans, *mspans;
	struct gotrace_syscall *syscalls;
	struct gotrace_range *ranges;
	struct gotrace_task *tasks;
	struct gotrace_region *regions;
	struct gotrace_log *logs;
	const struct gotrace_event **samples;
};

/* Decodes an unsigned LEB128 at p[*pos] (n bytes in all), advancing *pos.
 * Non-minimal (padded) encodings are accepted. 0 or GOTRACE_UV_*. */
static inline int gotrace_uv(const uint8_t *p, size_t n, size_t *pos, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (*pos >= n)
			return GOTRACE_UV_SHORT;
		uint8_t b = p[(*pos)++];
		if (i == 9 && b > 1)
			return GOTRACE_UV_LONG;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return GOTRACE_UV_LONG;
}

/* Appends a zeroed event (context fields GOTRACE_NONE) and returns it; the
 * pointer is valid until the next push. */
struct gotrace_event *gotrace_push(struct gotrace *t);
/* A new empty stack slot; returns its dense id (>= 1). */
uint32_t gotrace_stack_new(struct gotrace *t);
/* Copies s (n bytes, not NUL-terminated) into the arena. */
const char *gotrace_strdup(struct gotrace *t, const uint8_t *s, size_t n);
/* Reorders t->ev by the permutation order[] (new position i takes old
 * order[i]). */
void gotrace_permute(struct gotrace *t, const uint32_t *order);

/* Wire decoders. p/n: the whole file; ver: from the header. They fill
 * t->ev (global order), t->stacks, t->info and t->counts. */
int gotrace_v1_parse(struct gotrace *t, const uint8_t *p, size_t n, int ver, struct oob_err *err);
int gotrace_v2_parse(struct gotrace *t, const uint8_t *p, size_t n, int ver, struct oob_err *err);
const char *gotrace_v1_type_name(unsigned type);
const char *gotrace_v2_type_name(unsigned type);

/* Builds t->model from t->ev; frees with gotrace_model_free. */
int gotrace_model_build(struct gotrace *t, struct oob_err *err);
void gotrace_model_free(struct gotrace *t);

/* A small growable array of fixed-size elements (malloc'ed). */
static inline void *gotrace_vec_push(struct gotrace_vec *v, size_t elem)
{
	oob_xgrow(&v->p, &v->cap, v->n + 1, elem);
	return (char *)v->p + elem * v->n++;
}

#endif
