/*
 * rv: just enough of an RV64GC decoder to classify control flow
 * (DESIGN.md 4.1). Pure functions, thread-safe, no allocation.
 *
 * Link registers are x1 (ra) and x5 (t0). Classification of jal/jalr follows
 * the return-address-stack hints of the RISC-V unprivileged spec (table
 * "Return-address stack prediction hints"):
 *   rd link?  rs1 link?  rd == rs1?  kind
 *   no        no         -           RV_JUMP_IND (jalr) / RV_JUMP (jal)
 *   no        yes        -           RV_RET
 *   yes       no         -           RV_CALL_IND (jalr) / RV_CALL (jal)
 *   yes       yes        no          RV_SWAP (pop, then push)
 *   yes       yes        yes         RV_CALL_IND
 * Compressed forms: c.j -> RV_JUMP, c.jr rs1 -> RV_RET if rs1 is a link
 * register else RV_JUMP_IND, c.jalr -> RV_CALL_IND (or RV_SWAP when rs1 = x5),
 * c.beqz/c.bnez -> RV_BRANCH. (c.jal exists only on RV32; we decode RV64.)
 *
 * Valid encodings are those of RV64GC (I, M, A, F, D, C, Zicsr, Zifencei,
 * sfence.vma and the xret/wfi of the privileged spec) plus Zihintpause,
 * Zicbom/Zicboz, Zba, Zbb and Zbs, checked down to the fixed fields of each
 * format; everything else (V, H, custom opcodes, reserved RVC encodings such
 * as c.addi16sp with a zero immediate, reserved rounding modes) is
 * RV_INVALID. tests/unit/test_rv.c holds this against objdump on every
 * 16-bit encoding, 100k 32-bit ones and whole binaries.
 */
#ifndef OOB_RV_H
#define OOB_RV_H

#include <stdint.h>

enum rv_kind {
	RV_OTHER = 0, /* no control transfer (fall through only) */
	RV_BRANCH,    /* conditional branch: fall through or pc + imm */
	RV_JUMP,      /* jal x0 / c.j: pc + imm, no link */
	RV_JUMP_IND,  /* jalr without link semantics: tail call or switch table */
	RV_CALL,      /* jal with link rd */
	RV_CALL_IND,  /* jalr / c.jalr with link rd */
	RV_RET,	      /* jalr x0, rs1 = link */
	RV_SWAP,      /* coroutine swap: pop then push */
	RV_ECALL,
	RV_EBREAK,
	RV_XRET, /* sret, mret, uret (and dret) */
	RV_WFI,
	RV_CSR, /* csrr* / csrw*; csr field set */
	RV_FENCE_I,
	RV_INVALID, /* not a valid encoding (or an extension we do not know) */
};

struct rv_insn {
	uint8_t len;	 /* 2 or 4 */
	uint8_t kind;	 /* enum rv_kind */
	uint8_t rd, rs1; /* jal/jalr forms (c.jr: rd 0; c.jalr: rd 1); branches: rs1, rd 0 */
	uint16_t csr;	 /* RV_CSR: CSR number; RV_XRET: 0x102 sret, 0x302 mret, 0x002 uret */
	int32_t imm;	 /* branch/jal offset (pc-relative), jalr immediate */
};

/* Length in bytes (2 or 4) of the instruction whose low halfword is lo.
 * Encodings longer than 32 bits (reserved in RV64GC) report 4. */
static inline unsigned rv_insn_len(uint32_t lo)
{
	return (lo & 3) == 3 ? 4 : 2;
}

/* Decodes bits (a 16-bit encoding in the low half, or 32 bits; the upper
 * half is ignored when the low two bits say 16). Always fills *out (fields a
 * kind does not use are 0); returns out->len, or 0 for RV_INVALID. */
unsigned rv_decode(uint32_t bits, struct rv_insn *out);

/* The integer register (1..31) the instruction at bits writes, 0 when it
 * writes none (stores, branches, c.jr, fences, ecall, floating-point
 * results, x0). Exact for the encodings rv_decode accepts; c.jalr and jal
 * / jalr with a link write their link. What an unwinder without CFI asks:
 * does a function ever change ra or sp? */
unsigned rv_int_dest(uint32_t bits);

/* The two forms a prologue uses on the stack (an unwinder without CFI
 * reads them): `addi sp, sp, imm` (also c.addi16sp, c.addi sp), 1 with
 * *imm; `sd rs2, off(sp)` (also c.sdsp), 1 with *rs2 and *off. */
int rv_sp_add(uint32_t bits, int32_t *imm);
int rv_sp_store(uint32_t bits, unsigned *rs2, int32_t *off);

/* Direct target of RV_BRANCH / RV_JUMP / RV_CALL at pc. */
static inline uint64_t rv_direct_target(const struct rv_insn *in, uint64_t pc)
{
	return pc + (uint64_t)(int64_t)in->imm;
}

/* 1 if kind transfers control (anything but RV_OTHER, RV_CSR, RV_FENCE_I, RV_INVALID). */
int rv_is_cti(unsigned kind);

/* A short name of a kind ("call", "ret", ...), for debugging and stats. */
const char *rv_kind_name(unsigned kind);

/* The frame name of a trap marker for an mcause/scause value, as the
 * profiles show it: "[trap: ecall]", "[irq: timer]"; "[trap]"/"[irq]" for
 * causes without a name. */
const char *rv_cause_name(uint64_t cause);

#endif
