/*
 * code: what the reconstruction knows about the code of one address space,
 * organized for the hot loop.
 *
 * Instruction bits come from the trace when it carries them (code_put, the
 * bits that actually executed win) and otherwise from the ELF images mapped
 * in the sym_space. Straight-line code is cut into blocks: a block starts at a
 * pc where control arrived and runs to the first control-transfer instruction
 * (or to the end of its function's range, or to the last instruction whose
 * bits are known). The reconstruction then checks a whole block of trace
 * records against the block's addresses with one tight loop and looks at control
 * flow only at block ends, so the cost per instruction is a compare, and a
 * hash lookup happens per block at most (successors are cached in the block).
 *
 * Each block also knows the function that contains it (its frame id, from the
 * symbol table, FRAME_NONE without symbols), so "did control leave the current
 * function" is one compare.
 *
 * When code bytes change under a pc (self-modifying or reloaded code), every
 * block is invalidated (code_generation changes). Not thread-safe.
 */
#ifndef OOB_CODE_H
#define OOB_CODE_H

#include <stdint.h>

#include "profile/frame.h"
#include "util/oob_map.h"
#include "sym/rv.h"
#include "sym/sym.h"

#define CODE_BLOCK_MAX 256

enum code_end {
	CODE_END_CTI = 1, /* last instruction transfers control (last.kind) */
	CODE_END_SEQ,	  /* last instruction falls through to last_pc + last.len */
	CODE_END_NOCODE,  /* no bits for this pc: one record, length unknown */
};

struct code_block {
	uint64_t start;
	uint64_t last_pc;
	uint64_t entry;		       /* run-time entry of the containing function, 0 if none */
	uint32_t func;		       /* frame of the containing function, or FRAME_NONE */
	const struct sym_mapping *map; /* binary mapped there, or NULL */
	struct code_space *owner;      /* the space the block belongs to */
	uint32_t n;		       /* instructions */
	uint32_t gen;		       /* code generation the block was built in */
	uint32_t inl;	     /* inline chain of every instruction (0 = none, or inline off) */
	uint8_t end;	     /* enum code_end */
	uint8_t kernel;	     /* address in the kernel half (bit 63 set) */
	struct rv_insn last; /* decoded last instruction (unless CODE_END_NOCODE) */
	/* Where control may go without it being a call, return or trap: the
	 * fall-through and the direct target of a branch or jump (both the
	 * fall-through for CODE_END_SEQ). Valid when local is 1. */
	uint64_t fall, target;
	uint8_t local;
	uint16_t pc_hart;	    /* per-pc counts: the hart pc_hits count for (in padding) */
	struct code_block *succ[2]; /* recently seen successors (may be stale: check gen) */
	/* Per-pc counts (recon_opts.pcs): the counters of this block under the
	 * calling context pc_node on hart pc_hart (2n: instructions, then
	 * cycles), NULL until first counted; pc_id names the block in recon's
	 * table. */
	uint64_t *pc_hits;
	uint32_t pc_node, pc_id;
	uint64_t pcs[]; /* the n instructions' addresses: the trace must show exactly these */
};

struct code_space {
	unsigned id;		      /* address-space id used for frame interning */
	const struct sym_space *syms; /* borrowed; may be NULL */
	struct frame_table *frames;   /* borrowed */
	struct oob_map bits;	      /* pc -> instruction bits seen in the trace */
	struct oob_map blocks;	      /* start pc -> struct code_block * */
	struct oob_arena *arena;      /* blocks */
	uint32_t gen;
	uint64_t nblocks;
	/* With inline frames on, blocks also end where the DWARF inline chain
	 * changes; chains are interned in a table shared by all spaces. */
	int inline_mode;
	struct code_chains *chains; /* borrowed */
	/* The user program this space holds (process mode: exec picks the space
	 * by this binary's name), or NULL. */
	const struct sym_binary *main_binary;
	/* pcs whose executed bits the trace showed where an ELF image has
	 * bits too, and how many of them differ (the first such pc): code
	 * that is not the given binary's ran there (recon_warn). */
	uint64_t elf_checked, elf_differ, first_differ;
	uint32_t first_differ_bits; /* what the trace showed there */
};

#define CODE_CHAIN_MAX 8

/* An interned inline chain: INLINE frames, outermost first. */
struct code_chain {
	uint32_t n;
	uint32_t frames[CODE_CHAIN_MAX];
	uint32_t next; /* next chain id with the same hash */
};

struct code_chains {
	struct code_chain *v; /* id = index + 1 */
	size_t n, cap;
	struct oob_map index; /* hash of the frame list -> first id */
};

void code_chains_init(struct code_chains *c);
void code_chains_destroy(struct code_chains *c);

void code_space_init(struct code_space *cs, unsigned id, const struct sym_space *syms,
		     struct frame_table *frames, struct code_chains *chains);
void code_space_destroy(struct code_space *cs);

/* Records the bits that executed at pc (from the trace). */
void code_put(struct code_space *cs, uint64_t pc, uint32_t bits);

/* Instruction bits at pc (trace first, then ELF). Returns 1 and fills *bits, or 0. */
int code_fetch(const struct code_space *cs, uint64_t pc, uint32_t *bits);
/* Bits of the ELF image mapped at pc, ignoring what the trace showed there:
 * 1 if there is code, 0 if not. */
int code_elf_fetch(const struct code_space *cs, uint64_t pc, uint32_t *bits);

struct code_block *code_block_build(struct code_space *cs, uint64_t pc);
/* Drops every block of cs (its symbols changed: a binary was mapped). Blocks
 * stay readable until cs is destroyed (arena), but are stale. */
void code_space_flush(struct code_space *cs);

/* The block starting at pc (built on first use). Never NULL. */
static inline struct code_block *code_block_at(struct code_space *cs, uint64_t pc)
{
	uint64_t *v = oob_map_get(&cs->blocks, pc);
	if (v)
		return (struct code_block *)(uintptr_t)*v;
	return code_block_build(cs, pc);
}

/* The block starting at pc, trying from's successor cache first. */
static inline struct code_block *code_next(struct code_space *cs, struct code_block *from,
					   uint64_t pc)
{
	for (int k = 0; k < 2; k++) {
		struct code_block *s = from->succ[k];
		if (s && s->start == pc && s->owner == cs && s->gen == cs->gen)
			return s;
	}
	struct code_block *b = code_block_at(cs, pc);
	if (from->gen == cs->gen) {
		from->succ[1] = from->succ[0];
		from->succ[0] = b;
	}
	return b;
}

/* The chain with this id (1-based). */
static inline const struct code_chain *code_chain_get(const struct code_chains *c, uint32_t id)
{
	return &c->v[id - 1];
}

/* Frame of the function containing pc: the block's, else a frame keyed by pc
 * itself (code without symbols is named by the address control arrived at). */
uint32_t code_frame_at(const struct code_block *b);

#endif
