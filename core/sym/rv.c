#include "sym/rv.h"

#include <stddef.h>

/*
 * Valid means RV64GC (I, M, A, F, D, C, Zicsr, Zifencei) plus what Linux and
 * recent compilers emit beside it: Zihintpause, Zicbom/Zicboz, Zba, Zbb, Zbs.
 * Encodings are checked down to funct3/funct7 and the fixed fields of their
 * formats; tests/unit/test_rv.c compares the verdicts with objdump's.
 */

#define BITS(x, hi, lo) (((x) >> (lo)) & ((1u << ((hi) - (lo) + 1)) - 1))

static int32_t sext(uint32_t v, unsigned bits)
{
	uint32_t m = 1u << (bits - 1);
	return (int32_t)((v ^ m) - m);
}

static int is_link(unsigned r)
{
	return r == 1 || r == 5;
}

/* The RAS-hint table of rv.h for jalr (and c.jr/c.jalr, which are jalr forms). */
static unsigned jalr_kind(unsigned rd, unsigned rs1)
{
	if (!is_link(rd))
		return is_link(rs1) ? RV_RET : RV_JUMP_IND;
	if (is_link(rs1) && rd != rs1)
		return RV_SWAP;
	return RV_CALL_IND;
}

static unsigned set(struct rv_insn *out, unsigned kind)
{
	out->kind = (uint8_t)kind;
	return kind == RV_INVALID ? 0 : out->len;
}

static int32_t imm_j(uint32_t b)
{
	uint32_t v = BITS(b, 31, 31) << 20 | BITS(b, 19, 12) << 12 | BITS(b, 20, 20) << 11 |
		     BITS(b, 30, 21) << 1;
	return sext(v, 21);
}

static int32_t imm_b(uint32_t b)
{
	uint32_t v = BITS(b, 31, 31) << 12 | BITS(b, 7, 7) << 11 | BITS(b, 30, 25) << 5 |
		     BITS(b, 11, 8) << 1;
	return sext(v, 13);
}

static int32_t imm_cj(uint32_t b)
{
	uint32_t v = BITS(b, 12, 12) << 11 | BITS(b, 8, 8) << 10 | BITS(b, 10, 9) << 8 |
		     BITS(b, 6, 6) << 7 | BITS(b, 7, 7) << 6 | BITS(b, 2, 2) << 5 |
		     BITS(b, 11, 11) << 4 | BITS(b, 5, 3) << 1;
	return sext(v, 12);
}

static int32_t imm_cb(uint32_t b)
{
	uint32_t v = BITS(b, 12, 12) << 8 | BITS(b, 6, 5) << 6 | BITS(b, 2, 2) << 5 |
		     BITS(b, 11, 10) << 3 | BITS(b, 4, 3) << 1;
	return sext(v, 9);
}

/* SYSTEM with funct3 = 0: the privileged instructions, identified whole. */
static unsigned decode_priv(uint32_t b, struct rv_insn *out)
{
	switch (b) {
	case 0x00000073:
		return set(out, RV_ECALL);
	case 0x00100073:
		return set(out, RV_EBREAK);
	case 0x00200073:
	case 0x10200073:
	case 0x30200073:
	case 0x7b200073:
		out->csr = (uint16_t)BITS(b, 31, 20);
		return set(out, RV_XRET);
	case 0x10500073:
		return set(out, RV_WFI);
	}
	/* sfence.vma: the one fence of the privileged spec without extensions */
	return set(out, BITS(b, 31, 25) == 0x09 && BITS(b, 11, 7) == 0 ? RV_OTHER : RV_INVALID);
}

static unsigned decode_system(uint32_t b, struct rv_insn *out)
{
	unsigned f3 = BITS(b, 14, 12);

	if (f3 == 0)
		return decode_priv(b, out);
	if (f3 == 4) /* the H extension's loads and stores: not ours */
		return set(out, RV_INVALID);
	out->csr = (uint16_t)BITS(b, 31, 20);
	return set(out, RV_CSR);
}

static unsigned decode_misc_mem(uint32_t b, struct rv_insn *out)
{
	unsigned fm = BITS(b, 31, 28), ordering = BITS(b, 27, 20);

	unsigned f3 = BITS(b, 14, 12);

	if (BITS(b, 11, 7) != 0 || (f3 < 2 && BITS(b, 19, 15) != 0)) /* only cbo has an rs1 */
		return set(out, RV_INVALID);
	switch (f3) {
	case 0: /* fence, pause; fence.tso is fm = 8 with rw,rw */
		return set(out, fm == 0 || (fm == 8 && ordering == 0x33) ? RV_OTHER : RV_INVALID);
	case 1:
		return set(out, BITS(b, 31, 20) == 0 ? RV_FENCE_I : RV_INVALID);
	case 2: /* cbo.inval/clean/flush/zero (Zicbom, Zicboz) */
		return set(out,
			   BITS(b, 31, 20) <= 4 && BITS(b, 31, 20) != 3 ? RV_OTHER : RV_INVALID);
	default:
		return set(out, RV_INVALID);
	}
}

/* OP and OP-32: funct7 x funct3 of RV64IM, Zba, Zbb, Zbs (bit i = funct3 i). */
static int valid_op(uint32_t b, int w)
{
	unsigned f7 = BITS(b, 31, 25), f3 = BITS(b, 14, 12), rs2 = BITS(b, 24, 20);
	unsigned m;

	switch (f7) {
	case 0x00: /* add sll slt sltu xor srl or and / addw sllw srlw */
		m = w ? 0x23 : 0xff;
		break;
	case 0x01: /* mul..remu / mulw divw divuw remw remuw */
		m = w ? 0xf1 : 0xff;
		break;
	case 0x20: /* sub sra, xnor orn andn / subw sraw */
		m = w ? 0x21 : 0xf1;
		break;
	case 0x04: /* zext.h (OP-32, rs2 = 0); add.uw (OP-32) */
		m = w ? (rs2 == 0 ? 0x11 : 0x01) : 0;
		break;
	case 0x05: /* min max minu maxu */
		m = w ? 0 : 0xf0;
		break;
	case 0x10: /* sh1add sh2add sh3add (.uw) */
		m = 0x54;
		break;
	case 0x30: /* rol ror (w) */
		m = 0x22;
		break;
	case 0x24: /* bclr bext */
		m = w ? 0 : 0x22;
		break;
	case 0x14: /* bset, binv */
	case 0x34:
		m = w ? 0 : 0x02;
		break;
	default:
		m = 0;
	}
	return (m >> f3) & 1;
}

/* OP-IMM and OP-IMM-32 shifts and the Zbb/Zbs unary forms: funct3 1 and 5. */
static int valid_op_imm(uint32_t b, int w)
{
	unsigned f3 = BITS(b, 14, 12), hi6 = BITS(b, 31, 26), imm = BITS(b, 31, 20);
	unsigned hi7 = BITS(b, 31, 25);

	if (w) {
		if (f3 == 0)
			return 1;
		if (f3 == 1) /* slliw, slli.uw, clzw ctzw cpopw */
			return hi7 == 0 || hi6 == 0x02 || imm == 0x600 || imm == 0x601 ||
			       imm == 0x602;
		return f3 == 5 && (hi7 == 0 || hi7 == 0x20 || hi7 == 0x30); /* srliw sraiw roriw */
	}
	if (f3 == 1) /* slli, bseti bclri binvi, clz ctz cpop sext.b sext.h */
		return hi6 == 0 || hi6 == 0x0a || hi6 == 0x12 || hi6 == 0x1a || imm == 0x600 ||
		       imm == 0x601 || imm == 0x602 || imm == 0x604 || imm == 0x605;
	if (f3 == 5) /* srli srai rori bexti, rev8 orc.b */
		return hi6 == 0 || hi6 == 0x10 || hi6 == 0x18 || hi6 == 0x12 || imm == 0x6b8 ||
		       imm == 0x287;
	return 1;
}

static int valid_amo(uint32_t b)
{
	unsigned f5 = BITS(b, 31, 27), f3 = BITS(b, 14, 12);

	if (f3 != 2 && f3 != 3)
		return 0;
	if (f5 == 0x02) /* lr: rs2 = 0 */
		return BITS(b, 24, 20) == 0;
	return f5 <= 0x01 || f5 == 0x03 || (f5 % 4 == 0 && f5 <= 0x1c);
}

/* F and D only (fmt 0 and 1); rounding modes 5 and 6 are reserved. */
static int valid_rm(unsigned rm)
{
	return rm != 5 && rm != 6;
}

static int valid_op_fp(uint32_t b)
{
	unsigned f5 = BITS(b, 31, 27), fmt = BITS(b, 26, 25), f3 = BITS(b, 14, 12);
	unsigned rs2 = BITS(b, 24, 20);

	if (fmt > 1)
		return 0;
	switch (f5) {
	case 0x00: /* fadd fsub fmul fdiv */
	case 0x01:
	case 0x02:
	case 0x03:
		return valid_rm(f3);
	case 0x0b: /* fsqrt */
		return rs2 == 0 && valid_rm(f3);
	case 0x04: /* fsgnj fsgnjn fsgnjx */
	case 0x14: /* fle flt feq */
		return f3 <= 2;
	case 0x05: /* fmin fmax */
		return f3 <= 1;
	case 0x08: /* fcvt.s.d / fcvt.d.s (exact: rm = 0, as binutils requires) */
		return fmt ? rs2 == 0 && f3 == 0 : rs2 == 1 && valid_rm(f3);
	case 0x18: /* fcvt.{w,wu,l,lu}.fmt */
		return rs2 <= 3 && valid_rm(f3);
	case 0x1a: /* fcvt.fmt.{w,wu,l,lu}; fcvt.d.w(u) is exact: rm = 0 */
		return rs2 <= 3 && valid_rm(f3) && (!fmt || rs2 > 1 || f3 == 0);
	case 0x1c: /* fmv.x.fmt, fclass */
		return rs2 == 0 && f3 <= 1;
	case 0x1e: /* fmv.fmt.x */
		return rs2 == 0 && f3 == 0;
	default:
		return 0;
	}
}

/* Validity of the opcodes that never transfer control. */
static int valid_plain(uint32_t b)
{
	unsigned f3 = BITS(b, 14, 12);

	switch (BITS(b, 6, 0)) {
	case 0x03: /* LOAD: lb lh lw ld lbu lhu lwu */
		return f3 != 7;
	case 0x07: /* LOAD-FP, STORE-FP: flw fld / fsw fsd */
	case 0x27:
		return f3 == 2 || f3 == 3;
	case 0x23: /* STORE: sb sh sw sd */
		return f3 <= 3;
	case 0x13:
		return valid_op_imm(b, 0);
	case 0x1b:
		return valid_op_imm(b, 1);
	case 0x33:
		return valid_op(b, 0);
	case 0x3b:
		return valid_op(b, 1);
	case 0x2f:
		return valid_amo(b);
	case 0x43: /* fmadd fmsub fnmsub fnmadd */
	case 0x47:
	case 0x4b:
	case 0x4f:
		return BITS(b, 26, 25) <= 1 && valid_rm(f3);
	case 0x53:
		return valid_op_fp(b);
	case 0x17: /* AUIPC, LUI */
	case 0x37:
		return 1;
	default:
		return 0;
	}
}

static unsigned decode32(uint32_t b, struct rv_insn *out)
{
	unsigned opcode = BITS(b, 6, 0), f3 = BITS(b, 14, 12);

	out->rd = (uint8_t)BITS(b, 11, 7);
	out->rs1 = (uint8_t)BITS(b, 19, 15);
	switch (opcode) {
	case 0x6f:
		out->imm = imm_j(b);
		return set(out, is_link(out->rd) ? RV_CALL : RV_JUMP);
	case 0x67:
		if (f3 != 0)
			return set(out, RV_INVALID);
		out->imm = sext(BITS(b, 31, 20), 12);
		return set(out, jalr_kind(out->rd, out->rs1));
	case 0x63:
		if (f3 == 2 || f3 == 3)
			return set(out, RV_INVALID);
		out->rd = 0;
		out->imm = imm_b(b);
		return set(out, RV_BRANCH);
	case 0x73:
		return decode_system(b, out);
	case 0x0f:
		return decode_misc_mem(b, out);
	default:
		return set(out, valid_plain(b) ? RV_OTHER : RV_INVALID);
	}
}

/* Quadrant 1: c.j and the compressed branches; the rest is arithmetic. */
static unsigned decode_c1(uint32_t b, struct rv_insn *out)
{
	unsigned f3 = BITS(b, 15, 13), rd = BITS(b, 11, 7);
	uint32_t nzimm = BITS(b, 12, 12) << 5 | BITS(b, 6, 2);

	switch (f3) {
	case 1: /* c.addiw: rd = 0 reserved */
		return set(out, rd ? RV_OTHER : RV_INVALID);
	case 3: /* c.addi16sp / c.lui: zero immediate reserved */
		return set(out, nzimm ? RV_OTHER : RV_INVALID);
	case 4: /* c.subw, c.addw, then two reserved (Zcb) encodings */
		if (BITS(b, 12, 10) == 7 && BITS(b, 6, 6) == 1)
			return set(out, RV_INVALID);
		return set(out, RV_OTHER);
	case 5:
		out->imm = imm_cj(b);
		return set(out, RV_JUMP);
	case 6:
	case 7:
		out->rs1 = (uint8_t)(8 + BITS(b, 9, 7));
		out->imm = imm_cb(b);
		return set(out, RV_BRANCH);
	default: /* c.addi/c.nop, c.li (rd = 0 hints included) */
		return set(out, RV_OTHER);
	}
}

/* Quadrant 2: c.jr, c.jalr, c.ebreak live under funct3 = 4. */
static unsigned decode_c2(uint32_t b, struct rv_insn *out)
{
	unsigned f3 = BITS(b, 15, 13), r = BITS(b, 11, 7), rs2 = BITS(b, 6, 2);

	if (f3 == 2 || f3 == 3) /* c.lwsp, c.ldsp: rd = 0 reserved */
		return set(out, r ? RV_OTHER : RV_INVALID);
	if (f3 != 4 || rs2 != 0) /* c.slli, c.fldsp, c.*sp stores, c.mv, c.add */
		return set(out, RV_OTHER);
	if (BITS(b, 12, 12) == 0) {
		if (r == 0)
			return set(out, RV_INVALID);
		out->rs1 = (uint8_t)r;
		return set(out, jalr_kind(0, r));
	}
	if (r == 0)
		return set(out, RV_EBREAK);
	out->rd = 1;
	out->rs1 = (uint8_t)r;
	return set(out, jalr_kind(1, r));
}

static unsigned decode16(uint32_t b, struct rv_insn *out)
{
	switch (b & 3) {
	case 0:
		/* c.addi4spn with a zero immediate (incl. 0x0000) and funct3 = 4 are reserved */
		if (BITS(b, 15, 13) == 4 || (BITS(b, 15, 13) == 0 && BITS(b, 12, 5) == 0))
			return set(out, RV_INVALID);
		return set(out, RV_OTHER);
	case 1:
		return decode_c1(b, out);
	default:
		return decode_c2(b, out);
	}
}

/* Compressed: by quadrant and funct3 (the spec's RVC opcode map). */
static unsigned int_dest16(uint32_t b)
{
	unsigned f3 = BITS(b, 15, 13), r = BITS(b, 11, 7), rs2 = BITS(b, 6, 2);
	switch (b & 3) {
	case 0: /* c.addi4spn, c.lw, c.ld write rd'; the rest are fp or stores */
		return f3 == 0 || f3 == 2 || f3 == 3 ? 8 + BITS(b, 4, 2) : 0;
	case 1: /* c.addi, c.addiw, c.li, c.lui/c.addi16sp; arithmetic on rd' */
		return f3 <= 3 ? r : f3 == 4 ? 8 + BITS(b, 9, 7) : 0;
	default:
		if (f3 == 0 || f3 == 2 || f3 == 3) /* c.slli, c.lwsp, c.ldsp */
			return r;
		if (f3 != 4 || (rs2 == 0 && BITS(b, 12, 12) == 0)) /* c.jr, fp, stores */
			return 0;
		if (rs2 == 0) /* c.ebreak, c.jalr */
			return r ? 1 : 0;
		return r; /* c.mv, c.add */
	}
}

int rv_sp_add(uint32_t bits, int32_t *imm)
{
	if (rv_insn_len(bits) == 4) {
		if (BITS(bits, 14, 0) != (2u << 7 | 0x13) || BITS(bits, 19, 15) != 2)
			return 0;
		*imm = sext(bits >> 20, 12);
		return 1;
	}
	if ((bits & 3) != 1 || BITS(bits, 11, 7) != 2)
		return 0;
	if (BITS(bits, 15, 13) == 3) /* c.addi16sp */
		*imm =
		    sext(BITS(bits, 12, 12) << 9 | BITS(bits, 4, 3) << 7 | BITS(bits, 5, 5) << 6 |
			     BITS(bits, 2, 2) << 5 | BITS(bits, 6, 6) << 4,
			 10);
	else if (BITS(bits, 15, 13) == 0) /* c.addi */
		*imm = sext(BITS(bits, 12, 12) << 5 | BITS(bits, 6, 2), 6);
	else
		return 0;
	return 1;
}

int rv_sp_store(uint32_t bits, unsigned *rs2, int32_t *off)
{
	if (rv_insn_len(bits) == 4) {
		if (BITS(bits, 6, 0) != 0x23 || BITS(bits, 14, 12) != 3 || BITS(bits, 19, 15) != 2)
			return 0;
		*rs2 = BITS(bits, 24, 20);
		*off = sext(BITS(bits, 31, 25) << 5 | BITS(bits, 11, 7), 12);
		return 1;
	}
	if ((bits & 3) != 2 || BITS(bits, 15, 13) != 7) /* c.sdsp */
		return 0;
	*rs2 = BITS(bits, 6, 2);
	*off = (int32_t)(BITS(bits, 12, 10) << 3 | BITS(bits, 9, 7) << 6);
	return 1;
}

unsigned rv_int_dest(uint32_t bits)
{
	if (rv_insn_len(bits) == 2)
		return int_dest16(bits & 0xffff);
	unsigned rd = BITS(bits, 11, 7), f5 = BITS(bits, 31, 27);
	switch (BITS(bits, 6, 0)) {
	case 0x03: /* loads */
	case 0x13: /* OP-IMM */
	case 0x17: /* AUIPC */
	case 0x1b: /* OP-IMM-32 */
	case 0x2f: /* AMO, lr, sc */
	case 0x33: /* OP */
	case 0x37: /* LUI */
	case 0x3b: /* OP-32 */
	case 0x67: /* JALR */
	case 0x6f: /* JAL */
		return rd;
	case 0x73: /* the CSR instructions; funct3 0 is ecall, xret, wfi, fences */
		return BITS(bits, 14, 12) ? rd : 0;
	case 0x53: /* compares, fclass / fmv.x, fcvt to an integer */
		return f5 == 0x14 || f5 == 0x18 || f5 == 0x1c ? rd : 0;
	default:
		return 0;
	}
}

unsigned rv_decode(uint32_t bits, struct rv_insn *out)
{
	*out = (struct rv_insn){.len = (uint8_t)rv_insn_len(bits)};
	if (out->len == 2)
		return decode16(bits & 0xffff, out);
	if (BITS(bits, 4, 2) == 7) /* 48-bit and longer encodings */
		return set(out, RV_INVALID);
	return decode32(bits, out);
}

int rv_is_cti(unsigned kind)
{
	return kind != RV_OTHER && kind != RV_CSR && kind != RV_FENCE_I && kind < RV_INVALID;
}

const char *rv_kind_name(unsigned kind)
{
	static const char *const names[] = {
	    [RV_OTHER] = "other",	[RV_BRANCH] = "branch",	  [RV_JUMP] = "jump",
	    [RV_JUMP_IND] = "jump_ind", [RV_CALL] = "call",	  [RV_CALL_IND] = "call_ind",
	    [RV_RET] = "ret",		[RV_SWAP] = "swap",	  [RV_ECALL] = "ecall",
	    [RV_EBREAK] = "ebreak",	[RV_XRET] = "xret",	  [RV_WFI] = "wfi",
	    [RV_CSR] = "csr",		[RV_FENCE_I] = "fence.i", [RV_INVALID] = "invalid",
	};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

const char *rv_cause_name(uint64_t cause)
{
	static const char *const exc[16] = {"[trap: insn_misaligned]",
					    "[trap: insn_access_fault]",
					    "[trap: illegal_insn]",
					    "[trap: ebreak]",
					    "[trap: load_misaligned]",
					    "[trap: load_access_fault]",
					    "[trap: store_misaligned]",
					    "[trap: store_access_fault]",
					    "[trap: ecall]",
					    "[trap: ecall]",
					    "[trap: hypervisor_ecall]",
					    "[trap: ecall]",
					    "[trap: insn_page_fault]",
					    "[trap: load_page_fault]",
					    "[trap]",
					    "[trap: store_page_fault]"};
	static const char *const irq[12] = {
	    "[irq: software]", "[irq: software]", "[irq]", "[irq: software]",
	    "[irq: timer]",    "[irq: timer]",	  "[irq]", "[irq: timer]",
	    "[irq: external]", "[irq: external]", "[irq]", "[irq: external]"};
	if (cause >> 63)
		return (cause & 0xff) < 12 ? irq[cause & 0xff] : "[irq]";
	return cause < 16 ? exc[cause] : "[trap]";
}
