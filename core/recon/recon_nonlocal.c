/*
 * Non-local control flow in pc-only terms (RECONSTRUCTION.md 3.5): the
 * functions whose entry or return says more than a call or a return does,
 * found by name once per binary, and the rules they decide.
 *
 * A frame's kind is looked up the first time the frame is entered and kept
 * in an array indexed by frame id, so the hot path pays an index and a
 * compare per call, and nothing per instruction.
 */
#include "recon/recon_impl.h"

#include <stdlib.h>
#include <string.h>

#include "profile/frame.h"
#include "util/oob_mem.h"

#define KIND_UNSEEN 0xff

/* Every name a kind goes by (aliases share an address; one is enough). */
static const struct {
	const char *name;
	uint8_t kind;
} names[] = {
    {"_setjmp", RECON_FN_SETJMP},
    {"setjmp", RECON_FN_SETJMP},
    {"__sigsetjmp", RECON_FN_SETJMP},
    {"sigsetjmp", RECON_FN_SETJMP},
};

#define NNAMES (sizeof(names) / sizeof(names[0]))

/* The link-time entries of a binary's special functions. */
struct recon_nlbin {
	const struct sym_binary *bin;
	uint64_t entry[NNAMES];
};

void recon_nonlocal_init(struct recon *r)
{
	r->nlbins = oob_xcalloc(r->run.nbins ? r->run.nbins : 1, sizeof(*r->nlbins));
	for (size_t k = 0; k < r->run.nbins; k++) {
		r->nlbins[k].bin = r->run.bins[k];
		for (size_t j = 0; j < NNAMES; j++)
			r->nlbins[k].entry[j] = sym_binary_find_func(r->run.bins[k], names[j].name);
	}
}

void recon_nonlocal_free(struct recon *r)
{
	free(r->nlbins);
	free(r->fkind);
}

static uint8_t classify(const struct recon *r, uint32_t f)
{
	const struct frame *fr = &r->run.frames.v[f];
	if (fr->name || fr->space >= r->run.nspaces)
		return RECON_FN_PLAIN;
	const struct sym_mapping *m = sym_space_find(r->run.syms[fr->space], fr->addr);
	if (!m)
		return RECON_FN_PLAIN;
	uint64_t link = fr->addr - m->bias;
	for (size_t k = 0; k < r->run.nbins; k++) {
		if (r->nlbins[k].bin != m->bin)
			continue;
		for (size_t j = 0; j < NNAMES; j++)
			if (r->nlbins[k].entry[j] && r->nlbins[k].entry[j] == link)
				return names[j].kind;
	}
	return RECON_FN_PLAIN;
}

uint8_t recon_fn_kind_slow(struct recon *r, uint32_t f)
{
	if (f >= r->nfkind) {
		size_t n = r->nfkind ? r->nfkind : 256;
		while (n <= f)
			n *= 2;
		r->fkind = oob_xrealloc(r->fkind, n);
		memset(r->fkind + r->nfkind, KIND_UNSEEN, n - r->nfkind);
		r->nfkind = n;
	}
	if (r->fkind[f] == KIND_UNSEEN)
		r->fkind[f] = classify(r, f);
	return r->fkind[f];
}

void recon_nonlocal_entered(struct recon *r, struct tracker_hart *h, uint8_t kind)
{
	struct stack *s = h->stk;
	if (kind == RECON_FN_SETJMP && s->n >= 2 && !s->v[s->n - 2].marker &&
	    stack_top(s)->ret != STACK_RET_NONE)
		s->v[s->n - 2].jmp = stack_top(s)->ret; /* the caller's setjmp site */
}

int recon_longjmp_land(struct recon *r, struct tracker_hart *h, uint64_t t)
{
	struct stack *s = h->stk;
	int64_t at = -1;
	unsigned found = 0;
	for (int64_t k = (int64_t)s->n - 1; k >= 0; k--) {
		if (s->v[k].jmp == t && !found++)
			at = k;
	}
	if (!found)
		return 0;
	r->run.st.longjmps++;
	if (found > 1) /* a setjmp at this site in several live frames */
		r->run.st.repairs_ambiguous++;
	recon_pop_to(r, h, (uint32_t)at + 1);
	return 1;
}
