/*
 * oobtrace_sp: the stack pointer for oobtrace's sp=on (QEMU 7.2's plugin API
 * cannot read registers). sp is inferred from every load and store whose
 * base is sp (sp = vaddr - imm), followed through known deltas (addi sp,
 * sp, imm; c.addi16sp), and an instruction that writes sp with a value the
 * code does not give (ld sp, mv sp, rt_sigreturn) gets its value once the
 * next sp-relative access anchors it. A change no instruction made (QEMU
 * delivering a signal) is put on the first instruction after the last
 * control transfer the code cannot make (the handler's entry). The result
 * is a REG x2 extra at the instructions that write sp, as Spike logs them.
 */
#ifndef OOBTRACE_SP_H
#define OOBTRACE_SP_H

#include <stdint.h>

#include "trace/trace.h"

enum {
	SP_ANCHOR = 1, /* a load or store with base sp: sp = vaddr - imm */
	SP_DELTA = 2,  /* sp += delta */
	SP_WRITE = 4,  /* sp = something the code does not give */
	SP_ANYNEXT = 8 /* any successor is possible (jalr, xret) */
};

struct sp_site {
	uint8_t kind;
	int32_t imm;	       /* SP_ANCHOR's offset */
	int32_t delta;	       /* SP_DELTA's */
	uint64_t next1, next2; /* the successors the code can reach (not SP_ANYNEXT) */
};

/* Decodes insn at pc (16- or 32-bit encoding). */
void sp_decode(uint64_t pc, uint32_t insn, unsigned len, struct sp_site *s);

/* The batch the records go to (its x array holds TRACE_X_MAX extras). */
void sp_init(struct trace_batch *b);
/* Record idx of the batch (on hart vcpu) is the site at pc. */
void sp_exec(unsigned vcpu, uint64_t pc, const struct sp_site *s, uint32_t idx);
/* The site's sp-relative access at vaddr, by vcpu's current record. */
void sp_mem(unsigned vcpu, const struct sp_site *s, uint64_t vaddr);
/* vcpu's current record makes syscall num (rt_sigreturn writes sp). */
void sp_syscall(unsigned vcpu, int64_t num);
/* The first record of the batch that must stay buffered (a value still to
 * come), or the batch's n. */
uint32_t sp_keep_from(void);
/* The batch's first k records were written: indices move down by k. */
void sp_shift(uint32_t k);
/* The batch is about to be written whole (a change of hart, the end, a full
 * batch with nothing to write first): what is pending is given up. */
void sp_settle(void);
/* Counts for the log line (strays: memory callbacks of another record,
 * ignored). */
void sp_counts(uint64_t *writes, uint64_t *late, uint64_t *lost, uint64_t *fixes, uint64_t *strays);

#endif
