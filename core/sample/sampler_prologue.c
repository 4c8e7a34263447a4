/*
 * sampler_prologue: a frame from its function's code (sampler_prologue.h).
 */
#include "sample/sampler_prologue.h"

#include "sym/rv.h"

/* The instruction at off: its length, 0 when it is past the end or not one
 * rv_decode knows. */
static unsigned insn_at(const uint8_t *code, size_t size, size_t off, uint32_t *bits,
			struct rv_insn *in)
{
	if (off + 2 > size)
		return 0;
	uint32_t b = code[off] | (uint32_t)code[off + 1] << 8;
	if (rv_insn_len(b) == 4) {
		if (off + 4 > size)
			return 0;
		b |= (uint32_t)code[off + 2] << 16 | (uint32_t)code[off + 3] << 24;
	}
	*bits = b;
	return rv_decode(b, in);
}

/* Whether the code from off on writes sp only to tear down a frame of this
 * size (`addi sp, sp, size`: the epilogues): then wherever a call is made
 * past the prologue, sp is the prologue's. */
static int one_frame(const uint8_t *code, size_t size, size_t off, int32_t frame)
{
	while (off < size) {
		uint32_t bits;
		struct rv_insn in;
		int32_t imm;
		unsigned len = insn_at(code, size, off, &bits, &in);
		if (!len || (rv_int_dest(bits) == 2 && !(rv_sp_add(bits, &imm) && imm == frame)))
			return 0;
		off += len;
	}
	return 1;
}

/*
 * An innermost frame stopped past a control transfer, in a function with
 * one frame set up at its entry (frame, with its save slots): whether the
 * frame is there at pc_off, from what the code does next, straight on: a
 * call or the epilogue's `addi sp, sp, +N` (the frame is there), or a
 * return or the prologue's `addi sp, sp, -N` with no frame in between (it
 * is not: an early exit or the epilogue's tail, ra and s0 in registers).
 * 0 when a branch or a jump comes first.
 */
static int frame_ahead(const uint8_t *code, size_t size, size_t off, struct sampler_frame *f)
{
	for (;;) {
		uint32_t bits;
		struct rv_insn in;
		int32_t imm;
		unsigned len = insn_at(code, size, off, &bits, &in);
		if (!len)
			return 0;
		if (rv_sp_add(bits, &imm) && imm < 0)
			break;
		if ((rv_sp_add(bits, &imm) && imm > 0) ||
		    ((in.kind == RV_CALL || in.kind == RV_CALL_IND) && in.rd == 1))
			return 1;
		if (in.kind == RV_RET)
			break;
		if (rv_is_cti(in.kind))
			return 0;
		off += len;
	}
	*f = (struct sampler_frame){0, SAMPLER_NOT_SAVED, SAMPLER_NOT_SAVED};
	return 1;
}

int sampler_prologue_scan(const uint8_t *code, size_t size, size_t pc_off, int caller,
			  struct sampler_frame *f)
{
	int32_t sp = 0, imm; /* the sp here, relative to the entry's (the CFA) */
	size_t off = 0;
	unsigned rs2;
	f->ra_at = f->s0_at = SAMPLER_NOT_SAVED;
	for (;;) {
		uint32_t bits;
		struct rv_insn in;
		if (!caller && off >= pc_off) {
			if (off > pc_off) /* not an instruction boundary */
				return 0;
			break;
		}
		unsigned len = insn_at(code, size, off, &bits, &in);
		if (!len)
			return 0;
		if (caller && pc_off < off + len)
			break; /* the call: its state is the frame's */
		if (rv_is_cti(in.kind)) {
			/* past a branch, a frame set up once for the whole
			 * function: there at a call site, else frame_ahead */
			if (f->ra_at == SAMPLER_NOT_SAVED || sp >= 0 ||
			    !one_frame(code, size, off, -sp))
				return 0;
			f->cfa = -sp;
			return caller || frame_ahead(code, size, pc_off, f);
		}
		unsigned rd = rv_int_dest(bits);
		if (rv_sp_add(bits, &imm)) {
			if (imm >= 0) /* an epilogue: ra and s0 back in registers */
				return 0;
			sp += imm;
		} else if (rv_sp_store(bits, &rs2, &imm)) {
			if (rs2 == 1 && f->ra_at == SAMPLER_NOT_SAVED)
				f->ra_at = sp + imm;
			if (rs2 == 8 && f->s0_at == SAMPLER_NOT_SAVED)
				f->s0_at = sp + imm;
		} else if (rd == 2 || (rd == 1 && f->ra_at == SAMPLER_NOT_SAVED) ||
			   (rd == 8 && f->s0_at == SAMPLER_NOT_SAVED)) {
			return 0; /* the caller's sp, ra or s0 lost */
		}
		off += len;
	}
	if (caller && (f->ra_at == SAMPLER_NOT_SAVED || sp >= 0))
		return 0;
	f->cfa = -sp;
	return 1;
}
