/* spike reader: `spike --log-commits` lines, and the `-l` lines when a log has
 * no commit lines. Lines that describe no instruction are accepted and
 * skipped: "core N: >>>>  SYMBOL" (Spike names the function it enters when
 * it has the ELF's symbols: pk and full-system runs) and the "tval2" and
 * "tinst" lines that follow a hypervisor trap's "tval".
 *
 * A line is parsed fully before anything is appended to the batch; a line
 * that does not fit (batch full, another hart, extras array full) is copied
 * aside and parsed again at the next call. A `-l` line may describe an
 * instruction that traps (an `exception` line follows), so it stays
 * tentative until the next line proves that it retired. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace_impl.h"

enum { LINE_MAX_SPIKE = 64 * 1024, LINE_X_MAX = 1024 };

enum line_kind { L_COMMIT, L_DISASM, L_EXCEPTION, L_TVAL, L_OTHER };

struct rec {
	uint16_t hart;
	uint8_t priv;
	uint64_t pc;
	uint32_t insn;
	uint32_t nx;
	struct trace_extra x[LINE_X_MAX];
};

struct spike_st {
	int has_commit;
	struct trace_lines lines;
	int tent_valid; /* a -l record waiting for proof that it retired */
	struct rec tent;
	int trap_valid; /* an exception waiting for the next record of its hart */
	uint16_t trap_hart;
	struct trace_extra trap;
	uint8_t last_priv; /* priv for -l records: the last one seen */
	struct rec cur;	   /* scratch for the line being parsed */
	size_t xw;	   /* XLEN in hex digits: the pc's of the last record line */
};

static const char *const trap_names[] = {
    "instruction_address_misaligned",
    "instruction_access_fault",
    "illegal_instruction",
    "breakpoint",
    "load_address_misaligned",
    "load_access_fault",
    "store_address_misaligned",
    "store_access_fault",
    "user_ecall",
    "supervisor_ecall",
    "virtual_supervisor_ecall",
    "machine_ecall",
    "instruction_page_fault",
    "load_page_fault",
    NULL,
    "store_page_fault",
    NULL,
    NULL,
    NULL,
    NULL,
    "instruction_guest_page_fault",
    "load_guest_page_fault",
    "virtual_instruction",
    "store_guest_page_fault",
};

static int spike_open(struct trace_reader *r, struct oob_err *err)
{
	struct spike_st *st = oob_xcalloc(1, sizeof(*st));
	const uint8_t *p;
	r->st = st;
	trace_lines_init(&st->lines, "spike", LINE_MAX_SPIKE);
	long n = in_peek(r->in, &p, 64 * 1024, err);
	if (n < 0)
		return (int)n;
	/* Commit lines carry a privilege digit after "core N: ". */
	const uint8_t *q = p, *end = p + n;
	int any_disasm = 0;
	while (q < end) {
		const uint8_t *nl = memchr(q, '\n', (size_t)(end - q));
		const char *s = (const char *)q, *e = nl ? (const char *)nl : (const char *)end;
		uint64_t v;
		if (!TRACE_LIT(&s, e, "core")) {
			trace_skip_spaces(&s, e);
			if (!trace_dec(&s, e, &v) && !TRACE_LIT(&s, e, ":")) {
				trace_skip_spaces(&s, e);
				if (e - s > 2 && s[0] >= '0' && s[0] <= '3' && s[1] == ' ')
					st->has_commit = 1;
				else if (e - s > 2 && s[0] == '0' && s[1] == 'x')
					any_disasm = 1;
			}
		}
		if (st->has_commit || !nl)
			break;
		q = nl + 1;
	}
	if (st->has_commit || !any_disasm) {
		st->has_commit = 1;
		r->fields = TRACE_F_INSN | TRACE_F_PRIV | TRACE_F_REGS | TRACE_F_MEM;
		snprintf(r->desc, sizeof(r->desc),
			 "spike: commit log (priv, insn, registers, memory)");
	} else {
		r->fields = TRACE_F_INSN;
		snprintf(r->desc, sizeof(r->desc),
			 "spike: -l log without commit lines (insn only)");
	}
	return 0;
}

static void spike_close(struct trace_reader *r)
{
	struct spike_st *st = r->st;
	if (!st)
		return;
	trace_lines_free(&st->lines);
	free(st);
	r->st = NULL;
}

static int bad_line(struct trace_reader *r, uint64_t lineno, const char *line, long n,
		    const char *what, struct oob_err *err)
{
	char ex[256];
	trace_excerpt(line, (size_t)n, ex, sizeof(ex));
	return oob_err_set(err, -EINVAL, "spike: line %" PRIu64 ": expected %s, got \"%s\"", lineno,
			   what, ex);
}

static struct trace_extra *add_x(struct rec *c, unsigned kind)
{
	if (c->nx >= LINE_X_MAX)
		return NULL;
	struct trace_extra *x = &c->x[c->nx++];
	memset(x, 0, sizeof(*x));
	x->kind = (uint8_t)kind;
	return x;
}

/* The fields after "(0xINSN)" of a commit line. NULL on success, else what
 * was expected. */
static const char *parse_fields(struct rec *c, const char *s, const char *e)
{
	uint64_t num, v;
	for (;;) {
		trace_skip_spaces(&s, e);
		if (s == e)
			return NULL;
		struct trace_extra *x;
		char t = *s;
		if (!TRACE_LIT(&s, e, "mem ")) {
			trace_skip_spaces(&s, e);
			if (trace_0x(&s, e, &v))
				return "a memory address after \"mem\"";
			const char *save = s;
			uint64_t val = 0;
			int store = 0;
			trace_skip_spaces(&s, e);
			const char *vs = s;
			if (!trace_0x(&s, e, &val)) {
				store = 1;
				if (s - vs - 2 > 16)
					return "a store value of at most 64 bits";
			} else {
				s = save;
			}
			if (!(x = add_x(c, store ? TRACE_X_STORE : TRACE_X_LOAD)))
				return "fewer fields";
			x->addr = v;
			x->val = val;
			if (store)
				x->size = (uint8_t)((s - vs - 2 + 1) / 2);
			continue;
		}
		if ((t == 'x' || t == 'f' || t == 'v' || t == 'c') && e - s > 1 && s[1] >= '0' &&
		    s[1] <= '9') {
			s++;
			if (trace_dec(&s, e, &num) || num > 0xffff)
				return "a register or CSR number";
			if (t == 'c') {
				if (TRACE_LIT(&s, e, "_"))
					return "\"_name\" after a CSR number";
				while (s < e && *s != ' ' && *s != '\t')
					s++;
			}
			trace_skip_spaces(&s, e);
			if (t == 'v') { /* vector registers: wider than our extras */
				if (TRACE_LIT(&s, e, "0x"))
					return "a vector register value";
				while (s < e && ((*s >= '0' && *s <= '9') ||
						 ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')))
					s++;
				continue;
			}
			const char *vs = s;
			if (trace_0x(&s, e, &v)) {
				/* FLEN 128 (Q) values: keep the low 64 bits */
				s = vs;
				if (TRACE_LIT(&s, e, "0x"))
					return "a hex value";
				const char *h0 = s;
				while (s < e && *s != ' ' && *s != '\t')
					s++;
				if (s - h0 <= 16 || s - h0 > 32)
					return "a hex value";
				const char *lo = s - 16;
				if (trace_hex(&lo, s, &v) || lo != s)
					return "a hex value";
			}
			if (!(x = add_x(c, t == 'x'   ? TRACE_X_REG
					   : t == 'f' ? TRACE_X_FREG
						      : TRACE_X_CSR)))
				return "fewer fields";
			x->num = (uint16_t)num;
			x->val = v;
			continue;
		}
		return "x<n>, f<n>, c<num>_<csr> or mem fields";
	}
}

static int trap_cause(const char *s, const char *e, uint64_t *cause)
{
	uint64_t v;
	if (!TRACE_LIT(&s, e, "trap_")) {
		for (unsigned i = 0; i < sizeof(trap_names) / sizeof(trap_names[0]); i++) {
			size_t k = trap_names[i] ? strlen(trap_names[i]) : 0;
			if (k && (size_t)(e - s) == k && memcmp(s, trap_names[i], k) == 0) {
				*cause = i;
				return 0;
			}
		}
	}
	/* "interrupt #N" / "trap #N" style names */
	int irq = (size_t)(e - s) >= 9 && memcmp(s, "interrupt", 9) == 0;
	while (s < e && (*s < '0' || *s > '9'))
		s++;
	if (trace_dec(&s, e, &v) || s != e || v > 63)
		return -1;
	*cause = v | (irq ? 1ull << 63 : 0);
	return 0;
}

/* Parses one line into st->cur. Returns its kind, or -1 with *what set. */
static int parse_line(struct spike_st *st, const char *s, const char *e, const char **what)
{
	struct rec *c = &st->cur;
	uint64_t v;
	c->nx = 0;
	*what = "\"core N: ...\"";
	if (s == e)
		return L_OTHER;
	if (TRACE_LIT(&s, e, "core"))
		return -1;
	trace_skip_spaces(&s, e);
	if (trace_dec(&s, e, &v) || v > 0xffff || TRACE_LIT(&s, e, ":"))
		return -1;
	c->hart = (uint16_t)v;
	trace_skip_spaces(&s, e);
	if (e - s > 2 && s[0] >= '0' && s[0] <= '3' && s[1] == ' ') {
		c->priv = (uint8_t)(s[0] - '0');
		s += 2;
		st->xw = e - s > 2 ? trace_hex_digits(s + 2, e) : 0; /* spike_cut's XLEN */
		if (trace_0x(&s, e, &c->pc) || TRACE_LIT(&s, e, " (") || trace_0x(&s, e, &v) ||
		    v > 0xffffffff || TRACE_LIT(&s, e, ")")) {
			*what = "\"core N: P 0xPC (0xINSN)\"";
			return -1;
		}
		c->insn = (uint32_t)v;
		if ((*what = parse_fields(c, s, e)))
			return -1;
		return L_COMMIT;
	}
	const char *pc0 = s;
	if (!trace_0x(&s, e, &c->pc)) {
		st->xw = (size_t)(s - pc0 - 2);
		if (TRACE_LIT(&s, e, " (") || trace_0x(&s, e, &v) || v > 0xffffffff ||
		    TRACE_LIT(&s, e, ")")) {
			*what = "\"core N: 0xPC (0xINSN) disassembly\"";
			return -1;
		}
		c->insn = (uint32_t)v;
		return L_DISASM;
	}
	if (!TRACE_LIT(&s, e, "exception ")) {
		const char *name = s;
		while (s < e && *s != ',')
			s++;
		c->x[0].val = 0;
		if (trap_cause(name, s, &c->x[0].val) || TRACE_LIT(&s, e, ", epc ") ||
		    trace_0x(&s, e, &c->pc)) {
			*what = "\"exception trap_NAME, epc 0x...\"";
			return -1;
		}
		return L_EXCEPTION;
	}
	if (!TRACE_LIT(&s, e, ">>>>"))
		return L_OTHER;
	trace_skip_spaces(&s, e);
	if (!TRACE_LIT(&s, e, "tval2 ") || !TRACE_LIT(&s, e, "tinst ")) {
		if (trace_0x(&s, e, &v)) {
			*what = "\"tval2 0x...\" or \"tinst 0x...\"";
			return -1;
		}
		return L_OTHER;
	}
	if (!TRACE_LIT(&s, e, "tval ")) {
		if (trace_0x(&s, e, &c->x[0].addr)) {
			*what = "\"tval 0x...\"";
			return -1;
		}
		return L_TVAL;
	}
	*what = "a commit, disassembly, exception, tval or \">>>>  symbol\" line";
	return -1;
}

/* The token before end (spaces skipped back first): [*t, end). */
static const char *token_before(const char *s, const char *end, const char **t)
{
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*t = end;
	while (*t > s && (*t)[-1] != ' ' && (*t)[-1] != '\t')
		(*t)--;
	return end;
}

static int width_in(size_t d, size_t a, size_t b, size_t c)
{
	return d == a || d == b || d == c;
}

/* A line without its '\n' that parsed: only its last token can have been
 * cut. Spike prints the pc, registers, CSRs and addresses with XLEN's
 * digits, a store value with 2, 4, 8 or 16 and a float register with
 * FLEN's (8, 16, 32): a hex value short of its width is cut. NULL: whole. */
static const char *spike_cut(struct spike_st *st, const char *s, const char *e, int kind)
{
	const char *t, *p, *pp, *te = token_before(s, e, &t);
	const char *pe = token_before(s, t, &p), *ppe = token_before(s, p, &pp);
	if (kind == L_DISASM || kind == L_OTHER || te - t < 2 || t[0] != '0' || t[1] != 'x')
		return NULL;
	size_t d = (size_t)(te - t - 2), xw = st->xw;
	int ok_x = xw ? d == xw : width_in(d, 8, 16, 16);
	if (kind != L_COMMIT)
		return ok_x ? NULL : "the address is short of XLEN's digits";
	if (pe - p == 3 && !memcmp(p, "mem", 3))
		return ok_x ? NULL : "the memory address is short of XLEN's digits";
	if (ppe - pp == 3 && !memcmp(pp, "mem", 3))
		return d == 2 || width_in(d, 4, 8, 16) ? NULL : "the store value is cut";
	if (*p == 'f')
		return width_in(d, 8, 16, 32) ? NULL : "the float register value is cut";
	if (*p == 'v')
		return NULL;
	return ok_x ? NULL : "the register value is short of XLEN's digits";
}

/* Appends a record; 1 if it does not fit in this batch. */
static int append(struct trace_reader *r, struct spike_st *st, const struct rec *c)
{
	struct trace_batch *b = &r->b;
	int trap = st->trap_valid && st->trap_hart == c->hart;
	if (b->n && (b->hart != c->hart || b->n == TRACE_BATCH_MAX ||
		     b->nx + c->nx + (unsigned)trap > TRACE_X_MAX))
		return 1;
	uint32_t i = b->n++;
	b->hart = c->hart;
	r->pc[i] = c->pc;
	r->insn[i] = c->insn;
	r->priv[i] = c->priv;
	if (trap) {
		r->x[b->nx] = st->trap;
		r->x[b->nx++].idx = i;
		st->trap_valid = 0;
	}
	for (uint32_t j = 0; j < c->nx; j++) {
		r->x[b->nx] = c->x[j];
		r->x[b->nx++].idx = i;
	}
	return 0;
}

static int spike_next(struct trace_reader *r, struct oob_err *err)
{
	struct spike_st *st = r->st;
	for (;;) {
		const char *line;
		long n;
		uint64_t lineno;
		n = trace_lines_next(&st->lines, r->in, &line, &lineno, err);
		if (n == -1) {
			if (st->tent_valid) {
				if (append(r, st, &st->tent))
					return 1;
				st->tent_valid = 0;
			}
			return r->b.n ? 1 : 0;
		}
		if (n < 0)
			return (int)n;
		const char *what, *cut;
		int kind = parse_line(st, line, line + n, &what);
		if (in_line_unterminated(r->in) &&
		    (cut = kind < 0 ? "a field is missing" : spike_cut(st, line, line + n, kind)))
			return r->b.n ? trace_lines_carry(&st->lines, line, n, lineno)
				      : trace_line_cut(r->in, "spike", line, n, cut, err);
		if (kind < 0) /* deliver the good records first; the error comes next */
			return r->b.n ? trace_lines_carry(&st->lines, line, n, lineno)
				      : bad_line(r, lineno, line, n, what, err);
		struct rec *c = &st->cur;
		switch (kind) {
		case L_COMMIT:
			if (append(r, st, c))
				return trace_lines_carry(&st->lines, line, n, lineno);
			st->last_priv = c->priv;
			break;
		case L_DISASM:
			if (st->has_commit)
				break;
			if (st->tent_valid && append(r, st, &st->tent))
				return trace_lines_carry(&st->lines, line, n, lineno);
			c->priv = st->last_priv;
			c->nx = 0;
			memcpy(&st->tent, c, offsetof(struct rec, x));
			st->tent.nx = 0;
			st->tent_valid = 1;
			break;
		case L_EXCEPTION:
			st->tent_valid = 0;
			st->trap_valid = 1;
			st->trap_hart = c->hart;
			memset(&st->trap, 0, sizeof(st->trap));
			st->trap.kind = TRACE_X_TRAP;
			st->trap.val = c->x[0].val;
			break;
		case L_TVAL:
			if (st->trap_valid && st->trap_hart == c->hart)
				st->trap.addr = c->x[0].addr;
			break;
		default:
			break;
		}
	}
}

const struct trace_fmt_ops trace_spike_ops = {spike_open, spike_next, spike_close};
