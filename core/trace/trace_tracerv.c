/* TracerV readers: output_format 1 (binary, three historical layouts) and
 * output_format 0 (text). See TRACERV.md.
 *
 * The binary decoder is the hottest loop of the project: one load per word,
 * one sign extension, and the valid bit added to the output index instead of a
 * branch, so that a record costs a few instructions. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace_impl.h"

enum { GUESS_BYTES = 8192 };

struct tv_st {
	unsigned words, slots, vbit;
	size_t rec_bytes;
	size_t hexw; /* text: address digits of the last line (FireSim: 16) */
};

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v; /* little-endian hosts only; configure targets x86-64/arm64 */
}

/* Canonical address from the 40 address bits of a slot. */
static inline uint64_t sext40(uint64_t x)
{
	return (uint64_t)((int64_t)(x << 24) >> 24);
}

struct cand {
	unsigned words, vbit;
	unsigned nrec, hard, soft;
};

/* Checks one layout against the first records: hard = impossible values,
 * soft = suspicious ones (an invalid slot that is not zero). */
static void check_layout(const uint8_t *p, size_t n, struct cand *c)
{
	size_t rb = (size_t)c->words * 8, lim = n < GUESS_BYTES ? n : GUESS_BYTES;
	uint64_t prev = 0;
	c->nrec = (unsigned)(lim / rb);
	c->hard = c->soft = 0;
	for (unsigned i = 0; i < c->nrec; i++, p += rb) {
		uint64_t cyc = load64(p);
		unsigned valid = 0;
		c->hard += (cyc >> 48) != 0 || cyc < prev;
		prev = cyc;
		for (unsigned s = 1; s < c->words; s++) {
			uint64_t x = load64(p + 8 * s), v = x >> c->vbit & 1;
			uint64_t high = (x & ~(1ull << c->vbit)) >> 40;
			if (v) {
				valid++;
				c->hard += high != 0 || (x & 1);
			} else {
				c->hard += high != 0;
				c->soft += x != 0;
			}
		}
		c->hard += !valid;
	}
}

/* Best layout among those allowed by want (0 fields = any). Returns the
 * number of records that support it, 0 if none fits; *unique tells whether
 * no other layout fits as well. */
static unsigned guess(const uint8_t *p, size_t n, const struct trace_tracerv_opts *want,
		      struct trace_tracerv_opts *out, int *unique)
{
	static const unsigned vbits[2] = {63, 40};
	struct cand best = {0}, c;
	int ties = 0;
	for (unsigned w = 2; w <= 8; w++) {
		for (unsigned v = 0; v < 2; v++) {
			if ((want->words && want->words != w) ||
			    (want->valid_bit && want->valid_bit != vbits[v]) ||
			    (want->width && want->width > w - 1))
				continue;
			c.words = w;
			c.vbit = vbits[v];
			check_layout(p, n, &c);
			if (!c.nrec || c.hard)
				continue;
			if (!best.nrec || c.soft < best.soft) {
				best = c;
				ties = 0;
			} else if (c.soft == best.soft) {
				ties++;
			}
		}
	}
	if (!best.nrec)
		return 0;
	out->words = best.words;
	out->valid_bit = best.vbit;
	out->width = want->width ? want->width : best.words - 1;
	*unique = !ties && best.soft == 0;
	return best.nrec;
}

unsigned trace_tracerv_guess(const uint8_t *p, size_t n, struct trace_tracerv_opts *out)
{
	struct trace_tracerv_opts any = {0};
	int unique = 0; /* guess leaves it unset when nothing fits */
	unsigned k = guess(p, n, &any, out, &unique);
	return unique ? k : 0;
}

static int layout_from_opts(struct tv_st *st, const struct trace_tracerv_opts *o,
			    struct oob_err *err)
{
	unsigned w = o->width, words = o->words, vb = o->valid_bit;
	if (!words)
		words = 1 + (w > 7 ? 7 : w);
	if (w < 1 || w > 7 || words < 2 || words > 8 || w > words - 1 || (vb != 40 && vb != 63))
		return oob_err_set(err, -EINVAL,
				   "tracerv-bin: impossible layout (width %u, %u words, valid bit "
				   "%u): width 1..7, words 2..8 and > width, valid bit 40 or 63",
				   w, words, vb);
	st->words = words;
	st->slots = w;
	st->vbit = vb;
	st->rec_bytes = (size_t)words * 8;
	return 0;
}

static int tvbin_open(struct trace_reader *r, struct oob_err *err)
{
	struct tv_st *st = oob_xcalloc(1, sizeof(*st));
	struct trace_tracerv_opts lay = r->opts.tracerv;
	const uint8_t *p;
	r->st = st;
	int hdr = trace_clock_header(r, err);
	if (hdr < 0)
		return hdr;
	if ((lay.width && lay.width > 7) || (lay.words && (lay.words < 2 || lay.words > 8)) ||
	    (lay.valid_bit && lay.valid_bit != 40 && lay.valid_bit != 63))
		return layout_from_opts(st, &lay, err);
	if (!lay.width || !lay.valid_bit) {
		long n = in_peek(r->in, &p, GUESS_BYTES, err);
		int unique;
		if (n < 0)
			return (int)n;
		if (n == 0) {
			lay.width = lay.width ? lay.width : 1;
			lay.valid_bit = lay.valid_bit ? lay.valid_bit : 63;
		} else if (!guess(p, (size_t)n, &r->opts.tracerv, &lay, &unique)) {
			return oob_err_set(
			    err, -EINVAL,
			    "tracerv-bin: no record layout (2..8 words, valid bit 40 "
			    "or 63) fits the first %ld bytes after byte %" PRIu64
			    ": give width and valid bit",
			    n, in_offset(r->in));
		}
	}
	int rc = layout_from_opts(st, &lay, err);
	if (rc)
		return rc;
	r->fields = TRACE_F_CYCLE;
	snprintf(r->desc, sizeof(r->desc),
		 "tracerv-bin: %zu-byte records, width %u, valid bit %u, clock %" PRIu64 "/%" PRIu64
		 "%s",
		 st->rec_bytes, st->slots, st->vbit, r->clk_num, r->clk_den,
		 hdr ? "" : ", no header line");
	return 0;
}

static void tv_close(struct trace_reader *r)
{
	free(r->st);
	r->st = NULL;
}

typedef uint64_t v2u64 __attribute__((vector_size(16)));

/* Decodes nrec whole records; returns the number of valid slots written.
 * Two records at a time when both are valid (the common case): the sign
 * extension as vector and/xor/sub (GCC/Clang vector extension), two
 * stores per array. */
static uint32_t decode_w1(const uint8_t *p, size_t nrec, uint64_t *pc, uint64_t *cyc, unsigned vbit)
{
	uint32_t n = 0;
	size_t i = 0;
#if defined(__clang__) || __GNUC__ >= 12 /* __builtin_shufflevector */
	const uint64_t m40 = (1ull << 40) - 1, b39 = 1ull << 39;
	const v2u64 vm40 = {m40, m40}, vb39 = {b39, b39};
	for (; i + 2 <= nrec; i += 2, p += 32) {
		uint64_t x0 = load64(p + 8), x1 = load64(p + 24);
		if ((x0 & x1) >> vbit & 1) {
			v2u64 r0, r1;
			memcpy(&r0, p, sizeof(r0)); /* {cycle, slot} of record i */
			memcpy(&r1, p + 16, sizeof(r1));
			v2u64 c = __builtin_shufflevector(r0, r1, 0, 2);
			v2u64 x = __builtin_shufflevector(r0, r1, 1, 3);
			x = ((x & vm40) ^ vb39) - vb39;
			memcpy(pc + n, &x, sizeof(x));
			memcpy(cyc + n, &c, sizeof(c));
			n += 2;
			continue;
		}
		pc[n] = sext40(x0);
		cyc[n] = load64(p);
		n += (uint32_t)(x0 >> vbit & 1);
		pc[n] = sext40(x1);
		cyc[n] = load64(p + 16);
		n += (uint32_t)(x1 >> vbit & 1);
	}
#endif
	for (; i < nrec; i++, p += 16) {
		uint64_t c = load64(p), x = load64(p + 8);
		pc[n] = sext40(x);
		cyc[n] = c;
		n += (uint32_t)(x >> vbit & 1);
	}
	return n;
}

static uint32_t decode_wn(const uint8_t *p, size_t nrec, uint64_t *pc, uint64_t *cyc,
			  const struct tv_st *st)
{
	uint32_t n = 0;
	const unsigned slots = st->slots, vbit = st->vbit;
	const size_t rb = st->rec_bytes;
	for (size_t i = 0; i < nrec; i++, p += rb) {
		uint64_t c = load64(p);
		for (unsigned s = 1; s <= slots; s++) {
			uint64_t x = load64(p + 8 * s);
			pc[n] = sext40(x);
			cyc[n] = c;
			n += (uint32_t)(x >> vbit & 1);
		}
	}
	return n;
}

uint32_t trace_tracerv_decode(const uint8_t *p, size_t nrec, uint64_t *pc, uint64_t *cyc,
			      const struct trace_tracerv_layout *lay)
{
	if (lay->slots == 1)
		return decode_w1(p, nrec, pc, cyc, lay->vbit);
	struct tv_st st = {.words = (unsigned)(lay->rec_bytes / 8),
			   .slots = lay->slots,
			   .vbit = lay->vbit,
			   .rec_bytes = lay->rec_bytes};
	return decode_wn(p, nrec, pc, cyc, &st);
}

void trace_tracerv_layout_of(const struct trace_reader *r, struct trace_tracerv_layout *out)
{
	const struct tv_st *st = r->st;
	*out = (struct trace_tracerv_layout){st->slots, st->rec_bytes, st->vbit};
}

static int tvbin_next(struct trace_reader *r, struct oob_err *err)
{
	struct tv_st *st = r->st;
	struct trace_batch *b = &r->b;
	b->hart = r->opts.hart;
	while (b->n + st->slots <= TRACE_BATCH_MAX) {
		const uint8_t *p;
		size_t room = (TRACE_BATCH_MAX - b->n) / st->slots;
		long avail = in_peek(r->in, &p, room * st->rec_bytes, err);
		if (avail < 0)
			return (int)avail;
		size_t nrec = (size_t)avail / st->rec_bytes;
		if (nrec > room)
			nrec = room;
		if (!nrec) {
			if (!avail || b->n)
				break;
			if (in_drop_cut_tail(r->in)) {
				in_consume(r->in, (size_t)avail);
				break;
			}
			return oob_err_set(err, -EINVAL,
					   "tracerv-bin: truncated record at byte %" PRIu64
					   " (%ld of %zu bytes)",
					   in_offset(r->in), avail, st->rec_bytes);
		}
		if (st->slots == 1)
			b->n += decode_w1(p, nrec, r->pc + b->n, r->cycle + b->n, st->vbit);
		else
			b->n += decode_wn(p, nrec, r->pc + b->n, r->cycle + b->n, st);
		in_consume(r->in, nrec * st->rec_bytes);
	}
	return b->n ? 1 : 0;
}

const struct trace_fmt_ops trace_tracerv_bin_ops = {tvbin_open, tvbin_next, tv_close};

static int tvtext_open(struct trace_reader *r, struct oob_err *err)
{
	r->st = oob_xcalloc(1, sizeof(struct tv_st));
	int hdr = trace_clock_header(r, err);
	if (hdr < 0)
		return hdr;
	r->fields = TRACE_F_CYCLE;
	snprintf(r->desc, sizeof(r->desc), "tracerv-text: clock %" PRIu64 "/%" PRIu64 "%s",
		 r->clk_num, r->clk_den, hdr ? "" : ", no header line");
	return 0;
}

static int tvtext_next(struct trace_reader *r, struct oob_err *err)
{
	struct tv_st *st = r->st;
	struct trace_batch *b = &r->b;
	b->hart = r->opts.hart;
	while (b->n < TRACE_BATCH_MAX) {
		const char *line;
		long n = in_getline(r->in, &line, err);
		if (n == -1)
			break;
		if (n < 0)
			return (int)n;
		const char *s = line, *e = line + n, *hex = NULL;
		uint64_t cyc, q, a;
		if (n == 0)
			continue;
		int bad = TRACE_LIT(&s, e, "Cycle:") ||
			  (trace_skip_spaces(&s, e), trace_dec(&s, e, &cyc)) ||
			  TRACE_LIT(&s, e, " I") || trace_dec(&s, e, &q) || TRACE_LIT(&s, e, ":") ||
			  (trace_skip_spaces(&s, e), hex = s, trace_hex(&s, e, &a)) ||
			  (trace_skip_spaces(&s, e), s != e);
		size_t w = bad ? 0 : trace_hex_digits(hex, e);
		/* A last line without '\n' is whole only with every field: the
		 * address as wide as the line before's (FireSim: 16 digits). */
		if (in_line_unterminated(r->in) && (bad || w < (st->hexw ? st->hexw : 16))) {
			int rc = trace_line_cut(r->in, "tracerv-text", line, n,
						bad ? "a field is missing" : "the address is short",
						err);
			if (rc < 0)
				return rc;
			break; /* dropped: the stream ends here */
		}
		st->hexw = w;
		if (bad) {
			char ex[256];
			trace_excerpt(line, (size_t)n, ex, sizeof(ex));
			return oob_err_set(
			    err, -EINVAL,
			    "tracerv-text: line %" PRIu64
			    ": expected \"Cycle: <decimal> I<slot>: <hex address>\", got "
			    "\"%s\"",
			    in_lineno(r->in), ex);
		}
		r->pc[b->n] = sext40(a);
		r->cycle[b->n++] = cyc;
	}
	return b->n ? 1 : 0;
}

const struct trace_fmt_ops trace_tracerv_text_ops = {tvtext_open, tvtext_next, tv_close};
