/*
 * recon_pcs: per-pc counts (recon_opts.pcs). Counters live with the code
 * blocks: a block keeps an array of its pcs' counts under the calling context
 * and hart it last ran in, so the hot loop adds to an array it already holds
 * and looks a table up only when the block runs under another context or on
 * another hart. At the end the arrays are summed per (node, pc, hart) and
 * each pc is symbolized once. The times each context is entered are kept
 * per hart beside (recon_pcs_call): pprof's samples carry their hart.
 */
#include "recon/recon_impl.h"

#include <stdlib.h>
#include <string.h>

#include "profile/profile_impl.h"
#include "util/oob_mem.h"

struct pcs_ent {
	struct code_block *blk;
	uint32_t node;
	uint16_t hart;
	uint32_t next;	/* entry index + 1 of the same (blk, node) on another hart */
	uint64_t *hits; /* 2 * blk->n: instructions, then cycles */
};

struct recon_pcs {
	/* pc_id << 32 | node -> index + 1 of its first entry; the entries of
	 * other harts chain from it (a few harts: a short walk, and only when
	 * the block changes context or hart) */
	struct oob_map index;
	struct pcs_ent *v;
	size_t n, cap;
	struct oob_map calls; /* node << 16 | hart -> times entered there */
	uint32_t nblocks;     /* pc_id given so far */
	struct oob_arena *arena;
	struct profile_site *sites; /* recon_pcs_sites: sorted */
	size_t nsites;
	struct oob_map sidx;	/* (space << 48 ^ pc) -> site index + 1 */
	struct pcs_pend {	/* per hart: the cycle counter of its last record */
		uint64_t *at;	/* NULL before the hart's first record */
		uint64_t cycle; /* that record's cycle */
	} * pend;
	size_t npend;
};

void recon_pcs_init(struct recon *r)
{
	r->pcs = oob_xcalloc(1, sizeof(*r->pcs));
	oob_map_init(&r->pcs->index, 1024);
	oob_map_init(&r->pcs->calls, 1024);
	r->pcs->arena = oob_arena_new();
}

void recon_pcs_free(struct recon *r)
{
	if (!r->pcs)
		return;
	oob_map_destroy(&r->pcs->index);
	oob_map_destroy(&r->pcs->calls);
	if (r->pcs->sites)
		oob_map_destroy(&r->pcs->sidx);
	free(r->pcs->sites);
	oob_arena_free(r->pcs->arena);
	free(r->pcs->v);
	free(r->pcs->pend);
	free(r->pcs);
	r->pcs = NULL;
}

/* Points blk's counters at those of (blk, node, hart), made on first use. */
static void bind(struct recon_pcs *c, struct code_block *blk, uint32_t node, uint16_t hart)
{
	if (!blk->pc_id)
		blk->pc_id = ++c->nblocks;
	uint64_t *slot = oob_map_put(&c->index, (uint64_t)blk->pc_id << 32 | node, NULL);
	uint32_t prev = 0, e = (uint32_t)*slot;
	while (e && c->v[e - 1].hart != hart) {
		prev = e;
		e = c->v[e - 1].next;
	}
	if (!e) {
		if (c->n == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 1024;
			c->v = oob_xrealloc(c->v, c->cap * sizeof(*c->v));
		}
		c->v[c->n] = (struct pcs_ent){
		    .blk = blk,
		    .node = node,
		    .hart = hart,
		    .hits = oob_arena_zalloc(c->arena, 2 * blk->n * sizeof(uint64_t))};
		e = (uint32_t)++c->n;
		if (prev)
			c->v[prev - 1].next = e;
		else
			*slot = e;
	}
	blk->pc_hits = c->v[e - 1].hits;
	blk->pc_node = node;
	blk->pc_hart = hart;
}

void recon_pcs_call(struct recon *r, const struct tracker_hart *h, uint32_t node)
{
	++*oob_map_put(&r->pcs->calls, (uint64_t)node << 16 | h->id, NULL);
}

void recon_pcs_hit(struct recon *r, struct tracker_hart *h, struct code_block *blk, uint32_t pos,
		   uint32_t k, uint32_t i)
{
	struct recon_pcs *c = r->pcs;
	uint32_t node = h->stk->n ? stack_top(h->stk)->node : CCT_ROOT;
	if (!blk->pc_hits || blk->pc_node != node || blk->pc_hart != h->id)
		bind(c, blk, node, h->id);
	uint64_t *ins = blk->pc_hits + pos;
	for (uint32_t j = 0; j < k; j++)
		ins[j]++;
	const uint64_t *cyc = r->run.b->cycle;
	if (!cyc)
		return;
	if (h->id >= c->npend) {
		c->pend = oob_xrealloc(c->pend, (h->id + 1u) * sizeof(*c->pend));
		memset(c->pend + c->npend, 0, (h->id + 1u - c->npend) * sizeof(*c->pend));
		c->npend = h->id + 1u;
	}
	/* A record's cycles are known when the next one of its hart retires. */
	struct pcs_pend *p = &c->pend[h->id];
	uint64_t *cy = blk->pc_hits + blk->n + pos;
	for (uint32_t j = 0; j < k; j++) {
		if (p->at)
			*p->at += cyc[i + j] - p->cycle;
		p->at = &cy[j];
		p->cycle = cyc[i + j];
	}
}

/* ---- the end: rows per (node, pc, hart), sites symbolized once ---- */

static int is_call(const struct code_block *b, uint32_t j)
{
	return j + 1 == b->n && b->end == CODE_END_CTI &&
	       (b->last.kind == RV_CALL || b->last.kind == RV_CALL_IND);
}

static void site_fill(struct profile_site *s, const struct code_block *b, uint64_t pc)
{
	const struct sym_mapping *m = NULL;
	s->pc = pc;
	s->link = pc;
	s->space = b->owner->id;
	s->frame = code_frame_at(b);
	if (b->owner->syms)
		sym_space_lookup(b->owner->syms, pc, &m);
	if (!m)
		return;
	s->link = pc - m->bias;
	s->binary = sym_binary_path(m->bin);
	s->build_id = sym_binary_build_id(m->bin);
	unsigned line = 0;
	if (sym_binary_srcline(m->bin, s->link, &s->file, &line))
		s->line = line;
	struct sym_inline inl[PROFILE_SITE_INLINES];
	int n = sym_binary_inlines(m->bin, s->link, inl, PROFILE_SITE_INLINES);
	for (int k = 0; k < n; k++) {
		s->inl[k].name = inl[k].name;
		s->inl[k].call_file = inl[k].call_file;
		s->inl[k].call_line = inl[k].call_line;
	}
	s->ninl = n > 0 ? (uint32_t)n : 0;
}

static int cmp_site(const void *a, const void *b)
{
	const struct profile_site *x = a, *y = b;
	if (x->space != y->space)
		return x->space < y->space ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static int cmp_row(const void *a, const void *b)
{
	const struct profile_pc *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	return x->hart < y->hart ? -1 : x->hart > y->hart;
}

static int cmp_hcalls(const void *a, const void *b)
{
	const struct profile_hart_calls *x = a, *y = b;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->hart < y->hart ? -1 : x->hart > y->hart;
}

/* Sites of every counted pc, sorted; sidx maps (space << 48 ^ pc) to the
 * index + 1. */
static struct profile_site *make_sites(struct recon_pcs *c, struct oob_map *sidx, size_t *ns)
{
	size_t n = 0, cap = 1024;
	struct profile_site *s = oob_xcalloc(cap, sizeof(*s));
	for (size_t e = 0; e < c->n; e++) {
		const struct code_block *b = c->v[e].blk;
		for (uint32_t j = 0; j < b->n; j++) {
			uint64_t *slot =
			    oob_map_put(sidx, (uint64_t)b->owner->id << 48 ^ b->pcs[j], NULL);
			if (*slot)
				continue;
			if (n == cap) {
				s = oob_xrealloc(s, 2 * cap * sizeof(*s));
				memset(s + cap, 0, cap * sizeof(*s));
				cap *= 2;
			}
			site_fill(&s[n++], b, b->pcs[j]);
			*slot = n;
		}
	}
	qsort(s, n, sizeof(*s), cmp_site);
	for (size_t k = 0; k < n; k++)
		*oob_map_put(sidx, (uint64_t)s[k].space << 48 ^ s[k].pc, NULL) = k + 1;
	*ns = n;
	return s;
}

void recon_pcs_sites(struct recon *r)
{
	struct recon_pcs *c = r->pcs;
	oob_map_init(&c->sidx, 1024);
	c->sites = make_sites(c, &c->sidx, &c->nsites);
}

/* The times entered per (node, hart), sorted. */
static void finish_calls(struct recon_pcs *c, struct profile *p)
{
	size_t n = 0, pos = 0;
	uint64_t key, val;
	struct profile_hart_calls *v = oob_xcalloc(c->calls.count + 1, sizeof(*v));
	while (oob_map_next(&c->calls, &pos, &key, &val))
		v[n++] = (struct profile_hart_calls){(uint32_t)(key >> 16),
						     (uint32_t)(key & 0xffff), val};
	qsort(v, n, sizeof(*v), cmp_hcalls);
	profile_set_hart_calls(p, v, n);
}

void recon_pcs_finish(struct recon *r, struct profile *p)
{
	struct recon_pcs *c = r->pcs;
	size_t n = 0, cap = 1024;
	struct profile_pc *rows = oob_xcalloc(cap, sizeof(*rows));
	for (size_t e = 0; e < c->n; e++) {
		const struct pcs_ent *en = &c->v[e];
		const struct code_block *b = en->blk;
		for (uint32_t j = 0; j < b->n; j++) {
			if (!en->hits[j])
				continue;
			uint64_t site =
			    *oob_map_get(&c->sidx, (uint64_t)b->owner->id << 48 ^ b->pcs[j]) - 1;
			if (n == cap) {
				cap *= 2;
				rows = oob_xrealloc(rows, cap * sizeof(*rows));
			}
			rows[n++] = (struct profile_pc){
			    .node = en->node,
			    .site = (uint32_t)site,
			    .hart = en->hart,
			    .insns = en->hits[j],
			    .cycles = en->hits[b->n + j],
			    .calls = is_call(b, j) ? en->hits[j] : 0,
			};
		}
	}
	/* one pc may sit in several blocks (a jump into the middle of one) */
	qsort(rows, n, sizeof(*rows), cmp_row);
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		if (m && !cmp_row(&rows[m - 1], &rows[k])) {
			rows[m - 1].insns += rows[k].insns;
			rows[m - 1].cycles += rows[k].cycles;
			rows[m - 1].calls += rows[k].calls;
		} else {
			rows[m++] = rows[k];
		}
	}
	profile_set_pcs(p, rows, m, c->sites, c->nsites);
	c->sites = NULL; /* the profile's now */
	oob_map_destroy(&c->sidx);
	finish_calls(c, p);
}
