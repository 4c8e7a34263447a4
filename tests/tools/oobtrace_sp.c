/*
 * oobtrace_sp: sp inferred from sp-relative accesses (oobtrace_sp.h). Runs
 * inside QEMU's callbacks under oobtrace's lock (or with one guest thread).
 * The records between a write of unknown value and the access that anchors
 * it stay in oobtrace's batch (sp_keep_from); a batch full of them, or a
 * change of hart, gives the value up (nothing is emitted for it, counted).
 */
#include "oobtrace_sp.h"

#include <string.h>

#define SP_NR_RT_SIGRETURN 139
#define SP_VCPUS	   256
#define SP_PEND		   64 /* delta writes followed while a value is pending */

static int64_t sext(uint32_t v, unsigned bits)
{
	return (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

static unsigned bits(uint32_t v, unsigned hi, unsigned lo)
{
	return (v >> lo) & ((1u << (hi - lo + 1)) - 1);
}

static void decode32(uint64_t pc, uint32_t in, struct sp_site *s)
{
	unsigned op = in & 0x7f, rd = bits(in, 11, 7), f3 = bits(in, 14, 12),
		 rs1 = bits(in, 19, 15);
	int writes_rd = 1;
	switch (op) {
	case 0x03: /* loads */
	case 0x07: /* fp loads */
		if (rs1 == 2) {
			s->kind |= SP_ANCHOR;
			s->imm = (int32_t)sext(in >> 20, 12);
		}
		writes_rd = op == 0x03;
		break;
	case 0x23: /* stores */
	case 0x27:
		if (rs1 == 2) {
			s->kind |= SP_ANCHOR;
			s->imm = (int32_t)sext(bits(in, 31, 25) << 5 | rd, 12);
		}
		writes_rd = 0;
		break;
	case 0x13:
		if (rd == 2 && f3 == 0 && rs1 == 2) {
			s->kind |= SP_DELTA;
			s->delta = (int32_t)sext(in >> 20, 12);
			writes_rd = 0;
		}
		break;
	case 0x63: /* branches */
		s->next2 = pc + (uint64_t)sext(bits(in, 31, 31) << 12 | bits(in, 7, 7) << 11 |
						   bits(in, 30, 25) << 5 | bits(in, 11, 8) << 1,
					       13);
		writes_rd = 0;
		break;
	case 0x6f: /* jal */
		s->next1 = s->next2 =
		    pc + (uint64_t)sext(bits(in, 31, 31) << 20 | bits(in, 19, 12) << 12 |
					    bits(in, 20, 20) << 11 | bits(in, 30, 21) << 1,
					21);
		break;
	case 0x67: /* jalr */
		s->kind |= SP_ANYNEXT;
		break;
	case 0x73:
		if (f3 == 0) {
			writes_rd = 0;
			if (in != 0x00000073u) /* anything but ecall: ebreak, xret, wfi */
				s->kind |= SP_ANYNEXT;
		}
		break;
	case 0x0f: /* fences */
		writes_rd = 0;
		break;
	case 0x2f: /* AMOs */
		if (rs1 == 2) {
			s->kind |= SP_ANCHOR;
			s->imm = 0;
		}
		break;
	default:
		break;
	}
	if (writes_rd && rd == 2)
		s->kind |= SP_WRITE;
}

static void decode16(uint64_t pc, uint32_t in, struct sp_site *s)
{
	unsigned q = in & 3, f3 = bits(in, 15, 13), rd = bits(in, 11, 7), rs2 = bits(in, 6, 2);
	unsigned b12 = bits(in, 12, 12);
	if (q == 1) {
		if (f3 == 0 && rd == 2) { /* c.addi sp */
			s->kind |= SP_DELTA;
			s->delta = (int32_t)sext(b12 << 5 | rs2, 6);
		} else if (f3 == 3 && rd == 2) { /* c.addi16sp */
			s->kind |= SP_DELTA;
			s->delta =
			    (int32_t)sext(b12 << 9 | bits(in, 4, 3) << 7 | bits(in, 5, 5) << 6 |
					      bits(in, 2, 2) << 5 | bits(in, 6, 6) << 4,
					  10);
		} else if ((f3 == 1 || f3 == 2) && rd == 2) { /* c.addiw, c.li */
			s->kind |= SP_WRITE;
		} else if (f3 == 5) { /* c.j */
			s->next1 = s->next2 =
			    pc + (uint64_t)sext(b12 << 11 | bits(in, 8, 8) << 10 |
						    bits(in, 10, 9) << 8 | bits(in, 6, 6) << 7 |
						    bits(in, 7, 7) << 6 | bits(in, 2, 2) << 5 |
						    bits(in, 11, 11) << 4 | bits(in, 5, 3) << 1,
						12);
		} else if (f3 >= 6) { /* c.beqz, c.bnez */
			s->next2 = pc + (uint64_t)sext(
					    b12 << 8 | bits(in, 6, 5) << 6 | bits(in, 2, 2) << 5 |
						bits(in, 11, 10) << 3 | bits(in, 4, 3) << 1,
					    9);
		}
	} else if (q == 2) {
		switch (f3) {
		case 0: /* c.slli */
			if (rd == 2)
				s->kind |= SP_WRITE;
			break;
		case 1: /* c.fldsp */
			s->kind |= SP_ANCHOR;
			s->imm = (int32_t)(b12 << 5 | bits(in, 6, 5) << 3 | bits(in, 4, 2) << 6);
			break;
		case 2: /* c.lwsp */
			s->kind |= SP_ANCHOR | (rd == 2 ? SP_WRITE : 0);
			s->imm = (int32_t)(b12 << 5 | bits(in, 6, 4) << 2 | bits(in, 3, 2) << 6);
			break;
		case 3: /* c.ldsp */
			s->kind |= SP_ANCHOR | (rd == 2 ? SP_WRITE : 0);
			s->imm = (int32_t)(b12 << 5 | bits(in, 6, 5) << 3 | bits(in, 4, 2) << 6);
			break;
		case 4:
			if (rs2 == 0) /* c.jr, c.jalr, c.ebreak */
				s->kind |= SP_ANYNEXT;
			else if (rd == 2) /* c.mv sp, c.add sp */
				s->kind |= SP_WRITE;
			break;
		case 5: /* c.fsdsp */
		case 7: /* c.sdsp */
			s->kind |= SP_ANCHOR;
			s->imm = (int32_t)(bits(in, 12, 10) << 3 | bits(in, 9, 7) << 6);
			break;
		case 6: /* c.swsp */
			s->kind |= SP_ANCHOR;
			s->imm = (int32_t)(bits(in, 12, 9) << 2 | bits(in, 8, 7) << 6);
			break;
		}
	}
	/* quadrant 0 addresses through x8..x15 only; c.addi4spn reads sp */
}

void sp_decode(uint64_t pc, uint32_t insn, unsigned len, struct sp_site *s)
{
	memset(s, 0, sizeof(*s));
	s->next1 = s->next2 = pc + len;
	if (len == 2)
		decode16(pc, insn, s);
	else
		decode32(pc, insn, s);
}

/* ---- per-vCPU state ---- */

struct vst {
	int known;
	uint64_t sp; /* before the current record, when known */
	/* the current record, its write of sp not applied yet */
	const struct sp_site *cur;
	const struct sp_site *last; /* the site of the last record (kept by sp_settle) */
	uint32_t cur_idx;
	int cur_in_batch, cur_sys, cur_early;
	/* the successors of the previous record */
	int has_prev, prev_any;
	uint64_t next1, next2;
	/* a write of unknown value, then delta writes: (idx, offset) each */
	uint32_t npend;
	uint32_t pidx[SP_PEND];
	int64_t poff[SP_PEND], off;
	/* a transfer the code cannot make, since the last anchor */
	int disc;
	uint32_t didx;
	uint64_t dsp;
};

static struct {
	struct trace_batch *b;
	struct vst v[SP_VCPUS];
	uint64_t writes, late, lost, fixes, strays;
} S;

void sp_init(struct trace_batch *b)
{
	S.b = b;
}

void sp_counts(uint64_t *writes, uint64_t *late, uint64_t *lost, uint64_t *fixes, uint64_t *strays)
{
	*strays = S.strays;
	*writes = S.writes;
	*late = S.late;
	*lost = S.lost;
	*fixes = S.fixes;
}

/* Sets the x2 write of record idx (sorted insert, or overwrite). */
static void emit(uint32_t idx, uint64_t val)
{
	struct trace_batch *b = S.b;
	uint32_t k = b->nx;
	while (k > 0 && b->x[k - 1].idx > idx)
		k--;
	if (k > 0 && b->x[k - 1].idx == idx) {
		b->x[k - 1].val = val;
		return;
	}
	if (b->nx == TRACE_X_MAX)
		return;
	memmove(&b->x[k + 1], &b->x[k], (b->nx - k) * sizeof(*b->x));
	b->x[k] = (struct trace_extra){.idx = idx, .kind = TRACE_X_REG, .num = 2, .val = val};
	b->nx++;
	S.writes++;
}

static void give_up(struct vst *v)
{
	S.lost += v->npend;
	v->npend = 0;
	v->disc = 0;
}

/* Applies the current record's write of sp. */
static void finish_cur(struct vst *v)
{
	const struct sp_site *s = v->cur;
	int sys = v->cur_sys;
	v->cur = NULL;
	v->cur_sys = 0;
	if ((s->kind & SP_WRITE) || sys) {
		give_up(v);
		v->known = 0;
		v->off = 0;
		if (v->cur_in_batch) {
			v->pidx[0] = v->cur_idx;
			v->poff[0] = 0;
			v->npend = 1;
		}
	} else if (s->kind & SP_DELTA) {
		if (v->known) {
			v->sp += (uint64_t)(int64_t)s->delta;
			if (v->cur_in_batch)
				emit(v->cur_idx, v->sp);
		} else if (v->npend && v->npend < SP_PEND && v->cur_in_batch) {
			v->off += s->delta;
			v->pidx[v->npend] = v->cur_idx;
			v->poff[v->npend++] = v->off;
		} else {
			give_up(v);
		}
	}
}

void sp_exec(unsigned vcpu, uint64_t pc, const struct sp_site *s, uint32_t idx)
{
	if (vcpu >= SP_VCPUS)
		return;
	struct vst *v = &S.v[vcpu];
	if (v->cur)
		finish_cur(v);
	if (v->known && v->has_prev && !v->prev_any && pc != v->next1 && pc != v->next2) {
		v->disc = 1; /* a signal's handler, or the return from one */
		v->didx = idx;
		v->dsp = v->sp;
	}
	v->cur = v->last = s;
	v->cur_idx = idx;
	v->cur_in_batch = 1;
	v->cur_early = 0;
	v->has_prev = 1;
	v->prev_any = (s->kind & SP_ANYNEXT) != 0;
	v->next1 = s->next1;
	v->next2 = s->next2;
}

void sp_syscall(unsigned vcpu, int64_t num)
{
	if (vcpu < SP_VCPUS && num == SP_NR_RT_SIGRETURN)
		S.v[vcpu].cur_sys = 1;
}

/* sp changed between the last anchor and the current record with no
 * instruction writing it: QEMU delivered a signal before the record after
 * a transfer the code cannot make (the handler's entry). As Spike shows a
 * kernel's delivery, the handler's first instruction sees the new sp: the
 * change goes on the record before it (the interrupted one), and every
 * write since moves with it. Without such a transfer: on the record before
 * the current one. */
static void invisible(struct vst *v, uint64_t a)
{
	int64_t corr = (int64_t)(a - v->sp);
	struct trace_batch *b = S.b;
	if (v->disc) {
		for (uint32_t k = 0; k < b->nx; k++)
			if (b->x[k].idx >= v->didx && b->x[k].kind == TRACE_X_REG &&
			    b->x[k].num == 2)
				b->x[k].val += (uint64_t)corr;
		emit(v->didx ? v->didx - 1 : 0, v->dsp + (uint64_t)corr);
		S.fixes++;
	} else if (v->cur_in_batch && v->cur_idx > 0) {
		emit(v->cur_idx - 1, a);
		S.late++;
	} else {
		S.late++;
	}
}

void sp_mem(unsigned vcpu, const struct sp_site *s, uint64_t vaddr)
{
	if (vcpu >= SP_VCPUS)
		return;
	struct vst *v = &S.v[vcpu];
	uint64_t a = vaddr - (uint64_t)(int64_t)s->imm;
	/* QEMU 7.2 runs an atomic's memory callbacks from its helper with
	 * whatever callbacks the vCPU last had set: an AMO with no callback of
	 * its own reports its address through the next sp-relative access's
	 * (measured: 2 to 90 a run of nl_thread-pie, each a false sp). A
	 * callback belongs to the vCPU's last record, or to none. */
	if (s != v->last) {
		S.strays++;
		return;
	}
	if (v->cur_early)
		return; /* the record's write was applied before its access came */
	if (v->npend) {
		uint64_t base = a - (uint64_t)v->off;
		for (uint32_t k = 0; k < v->npend; k++)
			emit(v->pidx[k], base + (uint64_t)v->poff[k]);
		v->npend = 0;
	} else if (v->known && a != v->sp) {
		invisible(v, a);
	}
	v->known = 1;
	v->sp = a;
	v->disc = 0;
}

uint32_t sp_keep_from(void)
{
	const struct vst *v = &S.v[S.b->hart < SP_VCPUS ? S.b->hart : 0];
	uint32_t k = S.b->n;
	if (S.b->hart >= SP_VCPUS)
		return k;
	if (v->npend && v->pidx[0] < k)
		k = v->pidx[0];
	if (v->disc && v->didx - (v->didx > 0) < k)
		k = v->didx - (v->didx > 0);
	return k;
}

void sp_shift(uint32_t k)
{
	struct trace_batch *b = S.b;
	uint32_t j = 0;
	while (j < b->nx && b->x[j].idx < k)
		j++;
	memmove(b->x, b->x + j, (b->nx - j) * sizeof(*b->x));
	b->nx -= j;
	for (uint32_t i = 0; i < b->nx; i++)
		b->x[i].idx -= k;
	if (b->hart >= SP_VCPUS)
		return;
	struct vst *v = &S.v[b->hart];
	for (uint32_t i = 0; i < v->npend; i++)
		v->pidx[i] -= k;
	v->didx -= k;
	v->cur_idx -= k;
}

void sp_settle(void)
{
	if (S.b->hart >= SP_VCPUS)
		return;
	struct vst *v = &S.v[S.b->hart];
	if (v->cur) {
		v->cur_early = (v->cur->kind & SP_ANCHOR) && (v->cur->kind & SP_WRITE);
		finish_cur(v);
	}
	give_up(v);
	v->cur_in_batch = 0;
}
