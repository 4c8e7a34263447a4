/* qemu reader: `-singlestep -d nochain,exec[,in_asm][,int]` logs of
 * qemu-riscv64 and qemu-system-riscv64 (QEMU 7.2 line formats, TRACEGEN.md).
 *
 * A Trace line stays tentative until the next line: "Stopped execution of TB
 * chain" and "cpu_io_recompile: rewound" say that it did not run. Instruction
 * bits come from in_asm blocks, printed once per translated block before the
 * block's first Trace line; later executions of the block only name its host
 * address, so bits are remembered per host TB pointer (checked against the
 * pc, since QEMU reuses host memory after flushing its TB cache). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace_impl.h"

enum { LINE_MAX_QEMU = 64 * 1024, ASM_MAX = 512, TB_MAP_MAX = 1 << 24 };

struct tb_ent {
	uint64_t host, pc;
	uint32_t insn;
};

struct qrec {
	uint16_t hart;
	uint8_t priv;
	uint64_t pc;
	uint32_t insn;
	int has_trap;
	struct trace_extra trap;
};

struct qemu_st {
	struct trace_lines lines;
	int tent_valid;
	struct qrec tent;
	int trap_valid;
	uint16_t trap_hart;
	struct trace_extra trap;
	/* the pc a "Stopped execution" line kept from running, until the hart's
	 * next Trace line */
	int stop_valid;
	uint16_t stop_hart;
	uint64_t stop_pc;
	/* the in_asm block printed last, until its first Trace line */
	uint64_t asm_pc[ASM_MAX];
	uint32_t asm_insn[ASM_MAX];
	unsigned nasm;
	/* host TB pointer -> (pc, bits), open addressing */
	struct tb_ent *map;
	size_t map_cap, map_n;
};

static int qemu_open(struct trace_reader *r, struct oob_err *err)
{
	struct qemu_st *st = oob_xcalloc(1, sizeof(*st));
	const uint8_t *p;
	r->st = st;
	trace_lines_init(&st->lines, "qemu", LINE_MAX_QEMU);
	st->map_cap = 4096;
	st->map = oob_xcalloc(st->map_cap, sizeof(*st->map));
	long n = in_peek(r->in, &p, 64 * 1024, err);
	if (n < 0)
		return (int)n;
	/* in_asm output precedes the first Trace line of every block. */
	int in_asm = 0;
	for (const uint8_t *q = p, *end = p + n; q + 3 <= end;) {
		if (memcmp(q, "IN:", 3) == 0) {
			in_asm = 1;
			break;
		}
		const uint8_t *nl = memchr(q, '\n', (size_t)(end - q));
		if (!nl)
			break;
		q = nl + 1;
	}
	r->fields = TRACE_F_PRIV | (in_asm ? TRACE_F_INSN : 0);
	snprintf(r->desc, sizeof(r->desc), "qemu: -d exec log%s",
		 in_asm ? " with in_asm (instruction bits)" : " (no instruction bits)");
	return 0;
}

static void qemu_close(struct trace_reader *r)
{
	struct qemu_st *st = r->st;
	if (!st)
		return;
	trace_lines_free(&st->lines);
	free(st->map);
	free(st);
	r->st = NULL;
}

static size_t map_slot(const struct qemu_st *st, uint64_t host)
{
	uint64_t h = host * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 20) & (st->map_cap - 1);
	while (st->map[i].host && st->map[i].host != host)
		i = (i + 1) & (st->map_cap - 1);
	return i;
}

static void map_put(struct qemu_st *st, uint64_t host, uint64_t pc, uint32_t insn)
{
	if (!host)
		return;
	if ((st->map_n + 1) * 2 > st->map_cap) {
		struct tb_ent *old = st->map;
		size_t oc = st->map_cap;
		if (oc >= TB_MAP_MAX) { /* forget rather than grow without bound */
			memset(st->map, 0, oc * sizeof(*old));
			st->map_n = 0;
		} else {
			st->map_cap = oc * 2;
			st->map = oob_xcalloc(st->map_cap, sizeof(*st->map));
			for (size_t i = 0; i < oc; i++)
				if (old[i].host)
					st->map[map_slot(st, old[i].host)] = old[i];
			free(old);
		}
	}
	size_t i = map_slot(st, host);
	st->map_n += !st->map[i].host;
	st->map[i] = (struct tb_ent){host, pc, insn};
}

static uint32_t insn_of(struct qemu_st *st, uint64_t host, uint64_t pc)
{
	if (st->nasm) {
		uint32_t bits = 0;
		for (unsigned i = 0; i < st->nasm; i++)
			if (st->asm_pc[i] == pc)
				bits = st->asm_insn[i];
		st->nasm = 0;
		map_put(st, host, pc, bits);
		return bits;
	}
	const struct tb_ent *e = &st->map[map_slot(st, host)];
	return e->host == host && e->pc == pc ? e->insn : 0;
}

/* "[cs_base/pc/flags/cflags]" (QEMU >= 6) or "[cs_base/pc/flags]". */
static int parse_bracket(const char **s, const char *e, uint64_t *pc, uint64_t *flags)
{
	uint64_t f[4];
	int nf = 0;
	if (TRACE_LIT(s, e, "["))
		return -1;
	for (;;) {
		if (nf == 4)
			return -1;
		if (trace_0x(s, e, &f[nf]) && trace_hex(s, e, &f[nf]))
			return -1;
		nf++;
		if (!TRACE_LIT(s, e, "]"))
			break;
		if (TRACE_LIT(s, e, "/"))
			return -1;
	}
	if (nf < 3)
		return -1;
	*pc = f[1];
	*flags = f[2];
	return 0;
}

enum { Q_TRACE, Q_DROP, Q_STOP, Q_ASM, Q_ASM_START, Q_INT, Q_SKIP };

/* Parses one line; for Q_TRACE fills c. Returns the kind or -1 with *what. */
static int parse_line(struct qemu_st *st, const char *s, const char *e, struct qrec *c,
		      const char **what)
{
	uint64_t v, host, flags;
	if (s == e || !TRACE_LIT(&s, e, "----------------") || !TRACE_LIT(&s, e, "Priv:") ||
	    !TRACE_LIT(&s, e, "OBJD-"))
		return Q_SKIP;
	if (!TRACE_LIT(&s, e, "IN:"))
		return Q_ASM_START;
	if (!TRACE_LIT(&s, e, "Trace ")) {
		*what = "\"Trace N: 0xHOST [CSBASE/PC/FLAGS/CFLAGS] sym\"";
		if (trace_dec(&s, e, &v) || v > 0xffff || TRACE_LIT(&s, e, ":"))
			return -1;
		trace_skip_spaces(&s, e);
		if (trace_0x(&s, e, &host) && trace_hex(&s, e, &host))
			return -1;
		trace_skip_spaces(&s, e);
		if (parse_bracket(&s, e, &c->pc, &flags))
			return -1;
		c->hart = (uint16_t)v;
		c->priv = (uint8_t)(flags & 3);
		/* 2 is "S with SUM" in QEMU >= 8's mmu index; still S */
		if (c->priv == 2)
			c->priv = 1;
		c->insn = insn_of(st, host, c->pc);
		c->has_trap = 0;
		return Q_TRACE;
	}
	if (!TRACE_LIT(&s, e, "Stopped execution of TB chain"))
		return Q_STOP;
	if (!TRACE_LIT(&s, e, "cpu_io_recompile: rewound"))
		return Q_DROP;
	if (!TRACE_LIT(&s, e, "riscv_cpu_do_interrupt: hart:")) {
		uint64_t hart, async, cause, tval;
		*what = "\"riscv_cpu_do_interrupt: hart:N, async:A, cause:C, epc:0x.., tval:0x..\"";
		if (trace_dec(&s, e, &hart) || hart > 0xffff || TRACE_LIT(&s, e, ", async:") ||
		    trace_dec(&s, e, &async) || TRACE_LIT(&s, e, ", cause:") ||
		    (trace_0x(&s, e, &cause) && trace_hex(&s, e, &cause)) ||
		    TRACE_LIT(&s, e, ", epc:") || trace_0x(&s, e, &v) ||
		    TRACE_LIT(&s, e, ", tval:") || trace_0x(&s, e, &tval))
			return -1;
		st->trap_valid = 1;
		st->trap_hart = (uint16_t)hart;
		memset(&st->trap, 0, sizeof(st->trap));
		st->trap.kind = TRACE_X_TRAP;
		st->trap.val = cause | (async ? 1ull << 63 : 0);
		st->trap.addr = tval;
		return Q_INT;
	}
	if (!trace_0x(&s, e, &v)) {
		*what = "\"0xPC:  BITS  disassembly\" (in_asm)";
		if (TRACE_LIT(&s, e, ":"))
			return -1;
		trace_skip_spaces(&s, e);
		const char *b0 = s;
		uint64_t bits;
		if (trace_hex(&s, e, &bits) || bits > 0xffffffff || (s - b0 != 4 && s - b0 != 8))
			return -1;
		if (st->nasm < ASM_MAX) {
			st->asm_pc[st->nasm] = v;
			st->asm_insn[st->nasm++] = (uint32_t)bits;
		}
		return Q_ASM;
	}
	if (!TRACE_LIT(&s, e, "Linking TBs")) {
		*what = "a log made with -d nochain (this one chains blocks: instructions are "
			"missing)";
		return -1;
	}
	*what = "a Trace, in_asm, Stopped execution or riscv_cpu_do_interrupt line";
	return -1;
}

/* A line without its '\n' that parsed: cut if it is an in_asm line without
 * its disassembly (the instruction bits may be short) or an interrupt line
 * ending in a tval short of 8 or 16 digits. NULL: whole. */
static const char *qemu_cut(const char *s, const char *e, int kind)
{
	if (kind == Q_ASM) {
		s = memchr(s, ':', (size_t)(e - s)) + 1;
		trace_skip_spaces(&s, e);
		s += trace_hex_digits(s, e);
		trace_skip_spaces(&s, e);
		return s == e ? "the instruction bits end the line, without their disassembly"
			      : NULL;
	}
	if (kind == Q_INT) {
		const char *t = e;
		while (t > s && t[-1] != ':' && t[-1] != ' ')
			t--;
		size_t d = e - t > 2 && t[0] == '0' && t[1] == 'x' ? trace_hex_digits(t + 2, e) : 0;
		return d && d != 8 && d != 16 && t + 2 + d == e ? "the tval is cut" : NULL;
	}
	return NULL;
}

static int append(struct trace_reader *r, const struct qrec *c)
{
	struct trace_batch *b = &r->b;
	if (b->n && (b->hart != c->hart || b->n == TRACE_BATCH_MAX))
		return 1;
	uint32_t i = b->n++;
	b->hart = c->hart;
	r->pc[i] = c->pc;
	r->insn[i] = c->insn;
	r->priv[i] = c->priv;
	if (c->has_trap) {
		r->x[b->nx] = c->trap;
		r->x[b->nx++].idx = i;
	}
	return 0;
}

static int qemu_next(struct trace_reader *r, struct oob_err *err)
{
	struct qemu_st *st = r->st;
	struct qrec c;
	for (;;) {
		const char *line;
		long n;
		uint64_t lineno;
		n = trace_lines_next(&st->lines, r->in, &line, &lineno, err);
		if (n == -1) {
			if (st->tent_valid) {
				if (append(r, &st->tent))
					return 1;
				st->tent_valid = 0;
			}
			return r->b.n ? 1 : 0;
		}
		if (n < 0)
			return (int)n;
		/* A Trace line finalizes the tentative one: make room first, so
		 * that parsing (which updates the TB map) happens once. */
		if (st->tent_valid && n > 6 && memcmp(line, "Trace ", 6) == 0) {
			if (append(r, &st->tent))
				return trace_lines_carry(&st->lines, line, n, lineno);
			st->tent_valid = 0;
		}
		const char *what = "", *cut;
		int kind = parse_line(st, line, line + n, &c, &what);
		if (in_line_unterminated(r->in) &&
		    (cut = kind < 0 ? "a field is missing" : qemu_cut(line, line + n, kind)))
			return r->b.n ? trace_lines_carry(&st->lines, line, n, lineno)
				      : trace_line_cut(r->in, "qemu", line, n, cut, err);
		if (kind < 0) {
			char ex[256];
			trace_excerpt(line, (size_t)n, ex, sizeof(ex));
			return oob_err_set(err, -EINVAL,
					   "qemu: line %" PRIu64 ": expected %s, got \"%s\"",
					   lineno, what, ex);
		}
		switch (kind) {
		case Q_TRACE:
			if (st->trap_valid && st->trap_hart == c.hart) {
				c.has_trap = 1;
				c.trap = st->trap;
				st->trap_valid = 0;
			} else if (st->stop_valid && st->stop_hart == c.hart &&
				   st->stop_pc != c.pc) {
				/* QEMU left before stop_pc ran and went elsewhere, with no
				 * -d int line: user mode delivered a signal there. A pc-only
				 * reading takes a signal at a return's target for a call. */
				c.has_trap = 1;
				memset(&c.trap, 0, sizeof(c.trap));
				c.trap.kind = TRACE_X_TRAP;
				c.trap.val = TRACE_CAUSE_UNSAID;
			}
			if (st->stop_hart == c.hart)
				st->stop_valid = 0;
			st->tent = c;
			st->tent_valid = 1;
			break;
		case Q_STOP:
			if (st->tent_valid) {
				st->stop_valid = 1;
				st->stop_hart = st->tent.hart;
				st->stop_pc = st->tent.pc;
			}
			/* fall through */
		case Q_DROP:
			if (st->tent_valid && st->tent.has_trap) {
				st->trap_valid = 1;
				st->trap_hart = st->tent.hart;
				st->trap = st->tent.trap;
			}
			st->tent_valid = 0;
			break;
		case Q_ASM_START:
			st->nasm = 0;
			break;
		default:
			break;
		}
	}
}

const struct trace_fmt_ops trace_qemu_ops = {qemu_open, qemu_next, qemu_close};
