#include "flow/code.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

void code_chains_init(struct code_chains *c)
{
	memset(c, 0, sizeof(*c));
	oob_map_init(&c->index, 64);
}

void code_chains_destroy(struct code_chains *c)
{
	oob_map_destroy(&c->index);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

void code_space_init(struct code_space *cs, unsigned id, const struct sym_space *syms,
		     struct frame_table *frames, struct code_chains *chains)
{
	memset(cs, 0, sizeof(*cs));
	cs->id = id;
	cs->syms = syms;
	cs->frames = frames;
	cs->chains = chains;
	oob_map_init(&cs->bits, 4096);
	oob_map_init(&cs->blocks, 4096);
	cs->arena = oob_arena_new();
}

void code_space_destroy(struct code_space *cs)
{
	oob_map_destroy(&cs->bits);
	oob_map_destroy(&cs->blocks);
	oob_arena_free(cs->arena);
	memset(cs, 0, sizeof(*cs));
}

int code_elf_fetch(const struct code_space *cs, uint64_t pc, uint32_t *bits)
{
	uint8_t b[4];
	size_t got = cs->syms ? sym_space_read(cs->syms, pc, b, 4) : 0;
	if (got < 2)
		return 0;
	uint32_t lo = (uint32_t)b[0] | (uint32_t)b[1] << 8;
	if (rv_insn_len(lo) == 2) {
		*bits = lo;
		return 1;
	}
	if (got < 4)
		return 0;
	*bits = lo | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 1;
}

void code_put(struct code_space *cs, uint64_t pc, uint32_t bits)
{
	int inserted;
	uint64_t *v = oob_map_put(&cs->bits, pc, &inserted);
	if (!inserted && *v == bits)
		return;
	*v = bits;
	/* Blocks built before these bits were known may disagree with them: the
	 * bits changed, the ELF image says otherwise, or the pc had no bits at
	 * all. Rare, so start over rather than track which blocks are affected. */
	int stale = !inserted;
	if (!stale) {
		uint32_t elf;
		const uint64_t *b = oob_map_get(&cs->blocks, pc);
		int in_elf = code_elf_fetch(cs, pc, &elf);
		cs->elf_checked += in_elf;
		if (in_elf && elf != bits && !cs->elf_differ++) {
			cs->first_differ = pc;
			cs->first_differ_bits = bits;
		}
		stale = (b && ((const struct code_block *)(uintptr_t)*b)->end == CODE_END_NOCODE) ||
			(in_elf && elf != bits);
	}
	if (stale) {
		oob_map_clear(&cs->blocks);
		cs->gen++;
	}
}

void code_space_flush(struct code_space *cs)
{
	oob_map_clear(&cs->blocks);
	cs->gen++;
}

int code_fetch(const struct code_space *cs, uint64_t pc, uint32_t *bits)
{
	const uint64_t *v = oob_map_get(&cs->bits, pc);
	if (v) {
		*bits = (uint32_t)*v;
		return 1;
	}
	return code_elf_fetch(cs, pc, bits);
}

/* The containing function's frame and its run-time range, from the symbols. */
static void block_func(struct code_space *cs, uint64_t pc, struct code_block *b, uint64_t *hi)
{
	const struct sym_mapping *map = NULL;
	const struct sym_func *f = cs->syms ? sym_space_lookup(cs->syms, pc, &map) : NULL;
	*hi = UINT64_MAX;
	b->func = FRAME_NONE;
	b->entry = 0;
	b->map = cs->syms ? sym_space_find(cs->syms, pc) : NULL;
	if (!f)
		return;
	b->entry = f->entry + map->bias;
	*hi = f->hi + map->bias;
	b->func = frame_func(cs->frames, cs->id, b->entry,
			     b->kernel ? PROFILE_FRAME_KERNEL : PROFILE_FRAME_USER);
}

static uint32_t chain_intern(struct code_space *cs, const struct code_chain *c)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t k = 0; k < c->n; k++)
		h = (h ^ c->frames[k]) * 0x100000001b3ull;
	h &= ~(1ull << 63);
	struct code_chains *t = cs->chains;
	int inserted;
	uint64_t *slot = oob_map_put(&t->index, h, &inserted);
	uint32_t first = inserted ? 0 : (uint32_t)*slot;
	for (uint32_t id = first; id; id = t->v[id - 1].next)
		if (t->v[id - 1].n == c->n &&
		    memcmp(t->v[id - 1].frames, c->frames, c->n * sizeof(c->frames[0])) == 0)
			return id;
	oob_xgrow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v));
	t->v[t->n] = *c;
	t->v[t->n].next = first;
	*slot = ++t->n;
	return (uint32_t)t->n;
}

/* Interned DWARF inline chain at pc (0 when not inlined code). */
static uint32_t chain_at(struct code_space *cs, uint64_t pc)
{
	const struct sym_mapping *m = cs->syms ? sym_space_find(cs->syms, pc) : NULL;
	struct sym_inline in[CODE_CHAIN_MAX];
	int n = m ? sym_binary_inlines(m->bin, pc - m->bias, in, CODE_CHAIN_MAX) : 0;
	if (n <= 0)
		return 0;
	struct code_chain c = {.n = (uint32_t)n};
	for (int k = 0; k < n; k++)
		c.frames[k] = frame_named(cs->frames, PROFILE_FRAME_INLINE, in[k].name);
	return chain_intern(cs, &c);
}

struct code_block *code_block_build(struct code_space *cs, uint64_t pc)
{
	struct code_block tmp;
	uint64_t pcs[CODE_BLOCK_MAX];
	uint64_t hi, at = pc;
	memset(&tmp, 0, sizeof(tmp));
	tmp.start = pc;
	tmp.kernel = (uint8_t)(pc >> 63);
	tmp.end = CODE_END_NOCODE;
	block_func(cs, pc, &tmp, &hi);
	if (cs->inline_mode)
		tmp.inl = chain_at(cs, pc);
	for (;;) {
		uint32_t bits;
		struct rv_insn in;
		if (!code_fetch(cs, at, &bits))
			break;
		if (cs->inline_mode && at != pc && chain_at(cs, at) != tmp.inl)
			break;
		rv_decode(bits, &in);
		pcs[tmp.n++] = at;
		tmp.last = in;
		tmp.last_pc = at;
		tmp.end = rv_is_cti(in.kind) ? CODE_END_CTI : CODE_END_SEQ;
		at += in.len;
		if (tmp.end == CODE_END_CTI || tmp.n == CODE_BLOCK_MAX || at >= hi)
			break;
	}
	if (tmp.n == 0) {
		pcs[tmp.n++] = pc;
		tmp.last_pc = pc;
	}
	tmp.fall = tmp.last_pc + tmp.last.len;
	tmp.target = rv_direct_target(&tmp.last, tmp.last_pc);
	if (tmp.end == CODE_END_SEQ)
		tmp.target = tmp.fall;
	else if (tmp.end == CODE_END_CTI && tmp.last.kind == RV_JUMP)
		tmp.fall = tmp.target;
	tmp.local =
	    tmp.end == CODE_END_SEQ ||
	    (tmp.end == CODE_END_CTI && (tmp.last.kind == RV_BRANCH || tmp.last.kind == RV_JUMP));
	tmp.gen = cs->gen;
	tmp.owner = cs;
	struct code_block *b = oob_arena_alloc(cs->arena, sizeof(*b) + tmp.n * sizeof(pcs[0]));
	*b = tmp;
	memcpy(b->pcs, pcs, tmp.n * sizeof(pcs[0]));
	*oob_map_put(&cs->blocks, pc, NULL) = (uint64_t)(uintptr_t)b;
	cs->nblocks++;
	return b;
}

uint32_t code_frame_at(const struct code_block *b)
{
	if (b->func != FRAME_NONE)
		return b->func;
	return frame_func(b->owner->frames, b->owner->id, b->start,
			  b->kernel ? PROFILE_FRAME_KERNEL : PROFILE_FRAME_USER);
}
