/*
 * recon_go_impl: the store of parked stacks (recon_go.c) as the choice
 * among them (recon_go_pick.c) reads it. Private to core/recon/.
 */
#ifndef OOB_RECON_GO_IMPL_H
#define OOB_RECON_GO_IMPL_H

#include "recon/recon_impl.h"

#define GO_PARKED_MAX 65536 /* goroutines parked at once; past that one is dropped */
#define GO_CAND_MAX   64    /* candidates followed per resume (more: counted ambiguous) */
#define GO_LOOKAHEAD  65536 /* records the first choice looks at */
#define GO_SEGS	      17    /* the batch and those read ahead (recon_look.c) */

struct go_ent {
	uint32_t frame;
	uint64_t ret;
	uint64_t sp; /* the register regime's entry sp (0: unknown) */
};

/* A doubt between two goroutines about which bottom is whose: the bottom
 * cut entries of this one may be the other's bottom ocut entries, and the
 * other way round. */
struct go_link {
	uint32_t slot;	/* the other goroutine, parked */
	uint64_t stamp; /* its parking */
	uint32_t cut, ocut;
	uint8_t on;
};

struct go_parked {
	struct go_ent *e; /* bottom first; e[n-1].ret is the resume pc */
	uint32_t n;
	uint8_t live;	/* parked (else running provisionally, or free) */
	uint16_t held;	/* 1 + the hart running it provisionally, 0: none */
	uint64_t stamp; /* which parking this is (slots are reused) */
	struct go_link link;
};

struct go_prov {
	int active;
	uint32_t base, len; /* the restored entries: [base, base + len) of the stack */
	uint32_t low;	    /* entries from here up have returned since */
	uint32_t chosen;    /* slot running */
	uint32_t nfront;    /* the first nfront candidates the batch's next pcs did not
			       tell from the chosen one (it was the first parked) */
	uint32_t ncand;	    /* other slots still possible */
	uint32_t cand[GO_CAND_MAX];
	uint64_t cstamp[GO_CAND_MAX]; /* their stamps */
	struct go_link link;	      /* the running goroutine's doubt, if any */
	uint32_t link_base;	      /* where its bottom starts on the stack */
};

struct recon_go {
	struct go_parked *v;
	uint32_t n, cap, nlive;
	uint32_t *free; /* free slots (room for cap) */
	uint32_t nfree;
	struct go_prov *prov; /* per hart id */
	size_t nprov;
	uint32_t provs;	 /* harts with a provisional resume */
	uint64_t stamps; /* parkings so far */
};

/* Orders cand (n slots parked at record i's pc) by the returns of the
 * hart's next blocks, past its batch (recon_look.c); returns how many fit
 * them all, first. */
uint32_t recon_go_narrow(struct recon *r, struct tracker_hart *h, uint32_t *cand, uint32_t n,
			 uint32_t i);
/* Orders cand by which one's return addresses the batch's next pcs reach
 * first, at the first depth where they differ; returns how many stay in
 * front. */
uint32_t recon_go_guess(struct recon *r, uint32_t *cand, uint32_t n, uint32_t i);

#endif
