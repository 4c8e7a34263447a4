/* oobt reader: the decoder of docs/formats/OOBT.md.
 *
 * Decoding works on a window from in_peek. Operations are grouped: the prefix
 * operations (INSN, PRIV, HART, extras) before a record operation, and that
 * record operation. The state at the start of the group is kept, so that
 * whenever a group cannot complete here (window exhausted, batch full, bytes
 * corrupt) the decoder rolls back to the group start: a batch always ends on a
 * group boundary, and records before a corruption are still delivered. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/oobt.h"
#include "trace/trace_impl.h"

enum {
	SLACK = 128,	      /* longest operation except EVENT, rounded up */
	TEXT_BATCH = 1 << 20, /* event text per batch before it ends early */
	TEXT_CAP = TEXT_BATCH + OOBT_TEXT_PER_RECORD + 16,
};

enum { ST_FULL = 1, ST_MORE, ST_END };

/* decode_impl variant flags (beyond the TRACE_F_* bits): insn only where
 * new; version 1's untagged cache (oobt_st.itag). */
#define INSN_SPARSE (1u << 30)
#define INSN_TAGGED (1u << 29)

struct hstate {
	uint64_t pc, cycle;
	uint8_t priv;
};

struct oobt_st {
	struct oobt_header h;
	struct in_stream *body;
	int own_body;
	uint32_t *icache;
	/* version 1: the pc whose bits each slot last gave. Its writer sent
	 * INSN only when the slot's bits changed, so a record whose slot last
	 * gave another pc's bits may bring bits new for its pc without one
	 * (they equal the other pc's): it is listed in insn_new too. Version 2
	 * writers send INSN then (OOBT.md), and this costs a fifth of the
	 * decoding. */
	uint64_t *itag;
	uint32_t imask;
	struct hstate *harts;
	size_t nharts;
	uint16_t hart;
	uint64_t maddr;
	uint64_t total;
	int ended;
	int cut;       /* the upload ended inside the body: nothing more to read */
	int synced;    /* a SYNC was read (a piece starts with one) */
	int piece;     /* trace_opts.oobt_piece */
	int from_sync; /* a piece after the body's start: it starts with SYNC */
	uint64_t first, base;
	char *text;
	size_t text_used;
	uint8_t run_cnt[128];
	/* 64-bit, so that a RUN's six pcs are three vector adds and stores
	 * (measured: a third of the decoder's instructions were these stores
	 * widening byte offsets one by one) */
	uint64_t run_off[128][8];
};

typedef uint64_t v2u64 __attribute__((vector_size(16)));

/* pcs[0..5] = pc + o[0..5], two at a time (GCC/Clang vector extension:
 * SSE2 on x86-64, NEON on arm64). */
static inline void run_pcs(uint64_t *pcs, uint64_t pc, const uint64_t *o)
{
	const v2u64 base = {pc, pc};
	v2u64 a, b, c;
	memcpy(&a, o, sizeof(a));
	memcpy(&b, o + 2, sizeof(b));
	memcpy(&c, o + 4, sizeof(c));
	a += base;
	b += base;
	c += base;
	memcpy(pcs, &a, sizeof(a));
	memcpy(pcs + 2, &b, sizeof(b));
	memcpy(pcs + 4, &c, sizeof(c));
}

static void build_run_table(struct oobt_st *st)
{
	for (unsigned op = 2; op < 128; op++) {
		unsigned k = 0, off = 0;
		while ((op >> (k + 1)) != 0)
			k++;
		st->run_cnt[op] = (uint8_t)k;
		for (unsigned i = 0; i < 8; i++) {
			if (i < k)
				off += (op >> i & 1) ? 4 : 2;
			st->run_off[op][i] = off;
		}
	}
}

static int oobt_open(struct trace_reader *r, struct oob_err *err)
{
	struct oobt_st *st = oob_xcalloc(1, sizeof(*st));
	const uint8_t *p;
	r->st = st;
	long n = in_peek(r->in, &p, OOBT_HEADER_MAX, err);
	if (n < 0)
		return (int)n;
	int rc = oobt_header_decode(p, (size_t)n, &st->h, err);
	if (rc)
		return rc;
	if ((size_t)n < st->h.header_size)
		return oob_err_set(err, -EINVAL, "oobt: header of %u bytes truncated at byte %ld",
				   st->h.header_size, n);
	in_consume(r->in, st->h.header_size);
	r->fields = st->h.fields;
	r->clk_num = st->h.clock_num;
	r->clk_den = st->h.clock_den;
	if (st->h.compression == OOBT_COMP_LZ4) {
		struct in_opts o = r->opts.in;
		st->body = in_open_sub(r->in, in_name(r->in), 1, &o, err);
		if (!st->body)
			return err ? err->code : -EINVAL;
		st->own_body = 1;
	} else {
		st->body = r->in;
	}
	st->imask = (1u << st->h.icache_log2) - 1;
	r->has_insn_new = 1; /* INSN operations say when bits change */
	st->icache = oob_xcalloc((size_t)st->imask + 1, sizeof(uint32_t));
	if (st->h.version < 2) {
		st->itag = oob_xmalloc(((size_t)st->imask + 1) * sizeof(*st->itag));
		memset(st->itag, 0xff, ((size_t)st->imask + 1) * sizeof(*st->itag)); /* no pc */
	}
	st->nharts = 1;
	st->harts = oob_xcalloc(1, sizeof(*st->harts));
	st->text = oob_xmalloc(TEXT_CAP);
	st->piece = r->opts.oobt_piece.on;
	st->first = r->opts.oobt_piece.first;
	st->base = r->opts.oobt_piece.offset;
	st->from_sync = st->piece && st->base > 0;
	build_run_table(st);
	const char *src = st->h.source_format <= TRACE_FMT_OOBT
			      ? trace_format_name((enum trace_format)st->h.source_format)
			      : "unknown";
	snprintf(r->desc, sizeof(r->desc),
		 "oobt: version %u, fields 0x%x, %s body, insn cache 2^%u, from %s", st->h.version,
		 st->h.fields, st->own_body ? "lz4" : "plain", st->h.icache_log2, src);
	return 0;
}

static void oobt_close(struct trace_reader *r)
{
	struct oobt_st *st = r->st;
	if (!st)
		return;
	if (st->own_body)
		in_close(st->body);
	free(st->icache);
	free(st->itag);
	free(st->harts);
	free(st->text);
	free(st);
	r->st = NULL;
}

/* Slow path of a varint: NULL when longer than 10 bytes or over 64 bits. */
static const uint8_t *varint_slow(const uint8_t *p, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned s = 0; s < 70; s += 7) {
		uint64_t b = *p++;
		if (s == 63 && b > 1)
			return NULL;
		x |= (b & 0x7f) << s;
		if (b < 0x80) {
			*v = x;
			return p;
		}
	}
	return NULL;
}

#define VARINT(p, v)                                                                               \
	do {                                                                                       \
		if (*(p) < 0x80) {                                                                 \
			(v) = *(p)++;                                                              \
		} else if (!((p) = varint_slow((p), &(v)))) {                                      \
			goto bad_varint;                                                           \
		}                                                                                  \
	} while (0)

/* A varint that may end anywhere before hard: NULL past hard or when too
 * long (*bad). */
static const uint8_t *varint_in(const uint8_t *p, const uint8_t *hard, uint64_t *v, int *bad)
{
	uint64_t x = 0;
	for (unsigned s = 0; p < hard; s += 7) {
		uint64_t b = *p++;
		if (s == 63 && b > 1) {
			*bad = 1;
			return NULL;
		}
		x |= (b & 0x7f) << s;
		if (b < 0x80) {
			*v = x;
			return p;
		}
	}
	return NULL;
}

/* SYNC's operands at p, read into st when they are whole and right: their
 * end; NULL with *why when wrong, without when they run past hard. */
static const uint8_t *sync_read(struct oobt_st *st, const uint8_t *p, const uint8_t *hard,
				const char **why)
{
	uint64_t rec, nh, cur, pc, cyc;
	int bad = 0;
	if (!(p = varint_in(p, hard, &rec, &bad)) || !(p = varint_in(p, hard, &nh, &bad)))
		goto out;
	if (nh == 0 || nh > 0x10000 || nh < st->nharts) {
		*why = "SYNC states no hart, more than 65536, or fewer than the stream used";
		return NULL;
	}
	if (st->h.version < 2) {
		*why = "SYNC in a version 1 file";
		return NULL;
	}
	struct hstate *hs = oob_xmalloc(nh * sizeof(*hs));
	for (uint64_t k = 0; k < nh && p; k++) {
		if ((p = varint_in(p, hard, &pc, &bad)) && (p = varint_in(p, hard, &cyc, &bad)) &&
		    p < hard)
			hs[k] = (struct hstate){pc, cyc, *p++};
		else
			p = NULL;
		if (p && hs[k].priv > 3)
			bad = 1, p = NULL;
	}
	if (p)
		p = varint_in(p, hard, &cur, &bad);
	if (p && cur >= nh)
		bad = 1, p = NULL;
	if (p && (st->synced || !st->from_sync) && rec != st->total) {
		*why = "SYNC record count differs from the records read";
		p = NULL;
	} else if (p && !st->synced && st->from_sync && rec != st->first) {
		*why = "SYNC record count differs from its sync mark's";
		p = NULL;
	}
	if (p) {
		free(st->harts);
		st->harts = hs;
		st->nharts = (size_t)nh;
		st->hart = (uint16_t)cur;
		st->total = rec;
		st->synced = 1;
		st->maddr = 0;
		memset(st->icache, 0, ((size_t)st->imask + 1) * sizeof(*st->icache));
		return p;
	}
	free(hs);
out:
	if (bad && !*why)
		*why = "SYNC with a bad varint, priv or current hart";
	return NULL;
}

struct dec {
	const uint8_t *buf, *soft, *hard;
	int at_end;
	const uint8_t *consumed; /* group boundary reached */
	const char *why;	 /* error text when decode fails */
	int code;
	uint64_t where; /* window offset of the failing operation */
};

/* Decodes operations into r's batch. Returns ST_* or -1 on an error at the
 * group start (only when the batch is empty; otherwise the batch is delivered
 * first and the error comes back next call). Inlined once per common set of
 * fields, so that the per-record work has no field tests. */
static inline __attribute__((always_inline)) int
decode_impl(struct trace_reader *r, struct oobt_st *st, struct dec *d, const unsigned fields)
{
	const uint8_t *p = d->buf, *gstart = p, *op_at = p;
	const uint8_t *const soft = d->soft, *const hard = d->hard;
	const int at_end = d->at_end;
	const uint32_t imask = st->imask;
	uint32_t *const icache = st->icache;
	uint64_t *const itag = st->itag;
	/* locals, so that stores into the batch do not force reloads of r */
	uint64_t *const restrict pcv = r->pc, *const restrict cycv = r->cycle;
	uint32_t *const restrict insv = r->insn;
	uint8_t *const restrict privv = r->priv;
	struct hstate *h = &st->harts[st->hart];
	uint64_t pc = h->pc, cyc = h->cycle;
	uint8_t priv = h->priv, g_priv = priv;
	uint64_t maddr = st->maddr, g_maddr = maddr;
	size_t tused = st->text_used, g_text = tused, pend_text = 0;
	const uint32_t n0 = r->b.n;
	uint32_t n = n0, nx = r->b.nx, npend = 0;
	uint32_t pend_insn = 0;
	int has_pend_insn = 0, status = ST_MORE;
	uint64_t v, v2, npc;

	while (p < soft) {
		op_at = p;
		unsigned op = *p++;
		uint32_t k;
		if (op < 0x80) {
			if (op < 2) {
				if (op == 0) {
					d->why = "invalid operation 0x00";
					goto bad;
				}
				if (!npend && !has_pend_insn && priv == g_priv)
					gstart = p;
				continue;
			}
			k = st->run_cnt[op];
			if (n + k > TRACE_BATCH_MAX)
				goto full;
			const uint64_t *o = st->run_off[op];
			uint64_t *pcs = pcv + n;
			run_pcs(pcs, pc, o);
			npc = pc + o[k - 1];
		} else if (op < 0xc0) {
			k = 1;
			if (n + 1 > TRACE_BATCH_MAX)
				goto full;
			npc = pcv[n] = pc + (uint64_t)(2 * ((int64_t)(op & 0x3f) - 32));
		} else if (op == OOBT_OP_JUMP) {
			k = 1;
			if (n + 1 > TRACE_BATCH_MAX)
				goto full;
			VARINT(p, v);
			npc = pcv[n] = pc + (uint64_t)oobt_unzz(v);
		} else {
			struct trace_extra *x;
			switch (op) {
			case OOBT_OP_INSN16:
				pend_insn = (uint32_t)p[0] | (uint32_t)p[1] << 8;
				has_pend_insn = 1;
				p += 2;
				continue;
			case OOBT_OP_INSN32:
				pend_insn = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
					    (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
				has_pend_insn = 1;
				p += 4;
				continue;
			case OOBT_OP_HART:
				VARINT(p, v);
				if (v > 0xffff) {
					d->why = "hart number over 65535";
					goto bad;
				}
				if (v == st->hart)
					continue;
				if (n)
					goto full;
				h->pc = pc;
				h->cycle = cyc;
				h->priv = priv;
				if (v >= st->nharts) {
					size_t nn = (size_t)v + 1;
					st->harts =
					    oob_xrealloc(st->harts, nn * sizeof(*st->harts));
					memset(st->harts + st->nharts, 0,
					       (nn - st->nharts) * sizeof(*st->harts));
					st->nharts = nn;
				}
				st->hart = (uint16_t)v;
				h = &st->harts[v];
				pc = h->pc;
				cyc = h->cycle;
				priv = g_priv = h->priv;
				continue;
			case 0xc4:
			case 0xc5:
			case 0xc6:
			case 0xc7:
				priv = op & 3;
				continue;
			case OOBT_OP_SYNC: {
				if (n) /* a sync point starts a batch, in every reader */
					goto full;
				if (npend || has_pend_insn || priv != g_priv) {
					d->why = "SYNC after a prefix without its record";
					goto bad;
				}
				const uint8_t *e = sync_read(st, p, hard, &d->why);
				if (!e) {
					if (d->why)
						goto bad;
					if (at_end)
						goto truncated;
					goto more;
				}
				p = gstart = e;
				h = &st->harts[st->hart];
				pc = h->pc;
				cyc = h->cycle;
				priv = g_priv = h->priv;
				maddr = g_maddr = 0;
				continue;
			}
			case OOBT_OP_END:
				VARINT(p, v);
				if (at_end && p > hard)
					goto truncated;
				if (npend || has_pend_insn) {
					d->why = "END after a prefix without its record";
					goto bad;
				}
				if (v != st->total + (n - n0)) {
					d->why = "END record count differs from the records read";
					d->code = -EINVAL;
					goto bad;
				}
				gstart = p;
				st->ended = 1;
				status = ST_END;
				goto out;
			case OOBT_OP_X_REG:
			case OOBT_OP_X_FREG:
			case OOBT_OP_X_CSR:
			case OOBT_OP_X_LOAD:
			case OOBT_OP_X_STORE:
			case OOBT_OP_X_TRAP:
			case OOBT_OP_X_EVENT:
			case OOBT_OP_X_ANY:
				if (npend >= OOBT_X_PER_RECORD) {
					d->why = "more than 1024 extras for one record";
					goto bad;
				}
				if (nx + npend + 1 > TRACE_X_MAX)
					goto full;
				x = &r->x[nx + npend];
				memset(x, 0, sizeof(*x));
				break;
			default:
				d->why = "unknown operation";
				goto bad;
			}
			switch (op) {
			case OOBT_OP_X_REG:
			case OOBT_OP_X_FREG:
				x->kind = op == OOBT_OP_X_REG ? TRACE_X_REG : TRACE_X_FREG;
				x->num = *p++;
				VARINT(p, v);
				x->val = (uint64_t)oobt_unzz(v);
				break;
			case OOBT_OP_X_CSR:
				x->kind = TRACE_X_CSR;
				VARINT(p, v);
				VARINT(p, v2);
				if (v > 0xffff) {
					d->why = "CSR number over 65535";
					goto bad;
				}
				x->num = (uint16_t)v;
				x->val = (uint64_t)oobt_unzz(v2);
				break;
			case OOBT_OP_X_LOAD:
			case OOBT_OP_X_STORE:
				x->kind = op == OOBT_OP_X_LOAD ? TRACE_X_LOAD : TRACE_X_STORE;
				x->size = *p++;
				VARINT(p, v);
				VARINT(p, v2);
				maddr += (uint64_t)oobt_unzz(v);
				x->addr = maddr;
				x->val = (uint64_t)oobt_unzz(v2);
				break;
			case OOBT_OP_X_TRAP:
				x->kind = TRACE_X_TRAP;
				VARINT(p, v);
				VARINT(p, v2);
				x->val = (uint64_t)oobt_unzz(v);
				x->addr = (uint64_t)oobt_unzz(v2);
				break;
			case OOBT_OP_X_ANY:
				x->kind = *p++;
				x->size = *p++;
				VARINT(p, v);
				if (x->kind < TRACE_X_REG || x->kind > TRACE_X_TRAP ||
				    x->kind == TRACE_X_EVENT || v > 0xffff) {
					d->why = "bad kind or number in an extra";
					goto bad;
				}
				x->num = (uint16_t)v;
				VARINT(p, v);
				VARINT(p, v2);
				x->addr = (uint64_t)oobt_unzz(v);
				x->val = (uint64_t)oobt_unzz(v2);
				break;
			default: /* EVENT */
				x->kind = TRACE_X_EVENT;
				VARINT(p, v);
				if (v > OOBT_EVENT_MAX ||
				    pend_text + v + 1 > OOBT_TEXT_PER_RECORD) {
					d->why = "event text too long";
					goto bad;
				}
				if (p + v > hard) {
					if (at_end) {
						d->why = "truncated event text";
						goto bad;
					}
					goto more;
				}
				/* the batch ends before its text budget is spent; an
				 * empty batch takes one record's text (< TEXT_CAP) */
				if (tused + v + 1 > TEXT_BATCH && n)
					goto full;
				if (memchr(p, 0, v)) {
					d->why = "NUL byte in event text";
					goto bad;
				}
				x->text = st->text + tused;
				memcpy(st->text + tused, p, v);
				st->text[tused + v] = '\0';
				tused += v + 1;
				pend_text += v + 1;
				p += v;
				break;
			}
			npend++;
			continue;
		}

		/* A record operation: k records at r->pc[n..n+k). */
		if (at_end && p > hard)
			goto truncated;
		if (fields & TRACE_F_INSN) {
			if (has_pend_insn)
				icache[(pcv[n] >> 1) & imask] = pend_insn;
			/* six lookups whatever k: the arrays have slack, no branch */
			if (!(fields & INSN_SPARSE))
				for (uint32_t i = 0; i < 6; i++)
					insv[n + i] = icache[(pcv[n + i] >> 1) & imask];
		}
		if (fields & TRACE_F_CYCLE) {
			uint64_t c = cyc;
			for (uint32_t i = 0; i < k; i++) {
				VARINT(p, v);
				c += (uint64_t)oobt_unzz(v);
				cycv[n + i] = c;
			}
			if (at_end && p > hard)
				goto truncated;
			cyc = c;
		}
		if (fields & TRACE_F_PRIV)
			memset(privv + n, priv, 8);
		if (fields & INSN_TAGGED) { /* the records are whole: list them */
			for (uint32_t i = 0; i < k; i++) {
				uint32_t si = (pcv[n + i] >> 1) & imask;
				if (itag[si] != pcv[n + i] || (!i && has_pend_insn)) {
					itag[si] = pcv[n + i];
					r->insn_new[r->ninsn_new++] = n + i;
					insv[n + i] = icache[si];
				}
			}
		} else if ((fields & TRACE_F_INSN) && has_pend_insn) {
			r->insn_new[r->ninsn_new++] = n;
			insv[n] = pend_insn;
		}
		if (npend) {
			for (uint32_t j = nx; j < nx + npend; j++)
				r->x[j].idx = n;
			nx += npend;
			npend = 0;
			pend_text = 0;
		}
		has_pend_insn = 0;
		pc = npc;
		n += k;
		gstart = p;
		g_priv = priv;
		g_maddr = maddr;
		g_text = tused;
	}
	if (at_end && p > hard)
		goto truncated;
	goto more;

truncated:
	d->why = "truncated operation";
	goto bad;
bad_varint:
	d->why = "varint longer than 10 bytes";
bad:
	d->where = (uint64_t)(op_at - d->buf);
	if (!d->code)
		d->code = -EINVAL;
	status = n ? ST_FULL : -1;
	goto rollback;
full:
	status = ST_FULL;
	goto rollback;
more:
	status = ST_MORE;
rollback:
	priv = g_priv;
	maddr = g_maddr;
	tused = g_text;
out:
	st->maddr = maddr;
	st->text_used = tused;
	h->pc = pc;
	h->cycle = cyc;
	h->priv = priv;
	st->total += n - n0;
	while (r->ninsn_new && r->insn_new[r->ninsn_new - 1] >= n)
		r->ninsn_new--; /* records given back (an operation cut short) */
	r->b.n = n;
	r->b.nx = nx;
	r->b.hart = st->hart;
	d->consumed = gstart;
	return status;
}

static int decode(struct trace_reader *r, struct oobt_st *st, struct dec *d)
{
	unsigned sparse = r->opts.insn_changes_only ? INSN_SPARSE : 0;
	if (st->itag && (r->fields & TRACE_F_INSN)) /* version 1: not a hot path */
		return decode_impl(r, st, d, r->fields | sparse | INSN_TAGGED);
	switch (r->fields & (TRACE_F_INSN | TRACE_F_CYCLE | TRACE_F_PRIV)) {
	case 0:
		return decode_impl(r, st, d, 0);
	case TRACE_F_INSN:
		if (sparse)
			return decode_impl(r, st, d, TRACE_F_INSN | INSN_SPARSE);
		return decode_impl(r, st, d, TRACE_F_INSN);
	case TRACE_F_INSN | TRACE_F_PRIV:
		return decode_impl(r, st, d, TRACE_F_INSN | TRACE_F_PRIV);
	case TRACE_F_CYCLE:
		return decode_impl(r, st, d, TRACE_F_CYCLE);
	default:
		return decode_impl(r, st, d, r->fields | sparse);
	}
}

/* How messages name offsets: in the decompressed body of a file or a
 * piece of one, or in the file. */
static const char *body_kind(const struct oobt_st *st)
{
	return st->own_body || st->piece ? "decompressed body " : "";
}

static uint64_t body_offset(struct oobt_st *st, const uint8_t *at, const uint8_t *buf)
{
	return st->base + in_offset(st->body) + (uint64_t)(at - buf);
}

/* A piece must start at a sync point: its first operation is SYNC. */
static int piece_start(struct oobt_st *st, struct oob_err *err)
{
	const uint8_t *p;
	long n = in_peek(st->body, &p, 1, err);
	if (n < 0)
		return (int)n;
	if (n == 0 || *p != OOBT_OP_SYNC)
		return oob_err_set(err, -EINVAL,
				   "oobt: no sync point at decompressed body byte %" PRIu64
				   " where its mark puts one",
				   st->base);
	return 0;
}

static int after_end(struct trace_reader *r, struct oobt_st *st, struct oob_err *err)
{
	const uint8_t *p;
	long n = in_peek(st->body, &p, 1, err);
	if (n < 0)
		return (int)n;
	if (n > 0)
		return oob_err_set(err, -EINVAL,
				   "oobt: data after the end marker at %sbyte %" PRIu64,
				   body_kind(st), st->base + in_offset(st->body));
	return 0;
}

static int oobt_next(struct trace_reader *r, struct oob_err *err)
{
	struct oobt_st *st = r->st;
	if (st->cut)
		return 0;
	if (st->ended)
		return after_end(r, st, err);
	if (st->from_sync && !st->synced) {
		int rc = piece_start(st, err);
		if (rc < 0)
			return rc;
	}
	st->text_used = 0;
	for (;;) {
		const uint8_t *buf;
		long avail = in_peek(st->body, &buf, IN_WINDOW, err);
		if (avail < 0)
			return (int)avail;
		struct dec d = {.buf = buf, .hard = buf + avail, .at_end = avail < IN_WINDOW};
		d.soft = d.at_end ? d.hard : d.hard - SLACK;
		int s = decode(r, st, &d);
		uint64_t at = body_offset(st, buf + d.where, buf);
		in_consume(st->body, (size_t)(d.consumed - buf));
		if (s == ST_FULL)
			return 1;
		if (s == ST_END)
			return r->b.n ? 1 : after_end(r, st, err);
		/* An upload cut short ends inside an operation, or before the
		 * end marker: what decoded is the trace (in_opts.tail_may_be_cut). */
		if (d.at_end && (s < 0 ? d.code == -EINVAL : s == ST_MORE) &&
		    in_drop_cut_tail(st->body)) {
			st->cut = 1;
			return r->b.n ? 1 : 0;
		}
		if (s < 0)
			return oob_err_set(err, d.code,
					   "oobt: %s at %sbyte %" PRIu64 " (after %" PRIu64
					   " records)",
					   d.why, body_kind(st), at, st->total);
		/* ST_MORE */
		if (d.at_end && st->piece && d.consumed == d.hard) {
			st->cut = 1; /* a piece ends between operations */
			return r->b.n ? 1 : 0;
		}
		if (d.at_end) {
			if (r->b.n)
				return 1;
			return oob_err_set(err, -EINVAL,
					   "oobt: truncated: no end marker after %" PRIu64
					   " records (%sbyte %" PRIu64 ")",
					   st->total, body_kind(st),
					   st->base + in_offset(st->body));
		}
		if (d.consumed == buf)
			return oob_err_set(err, -EINVAL,
					   "oobt: operations at %sbyte %" PRIu64
					   " produce no record within %u bytes",
					   body_kind(st), st->base + in_offset(st->body),
					   IN_WINDOW);
	}
}

const struct trace_fmt_ops trace_oobt_ops = {oobt_open, oobt_next, oobt_close};
