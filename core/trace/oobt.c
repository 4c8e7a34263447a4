#include "trace/oobt.h"

#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	put_u16(p, (uint16_t)v);
	put_u16(p + 2, (uint16_t)(v >> 16));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t)v);
	put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void oobt_header_encode(const struct oobt_header *h, uint8_t out[OOBT_HEADER_SIZE])
{
	memset(out, 0, OOBT_HEADER_SIZE);
	memcpy(out, OOBT_MAGIC, OOBT_MAGIC_LEN);
	put_u16(out + 8, OOBT_VERSION);
	put_u16(out + 10, OOBT_HEADER_SIZE);
	put_u32(out + 12, h->fields);
	put_u64(out + 16, h->clock_num);
	put_u64(out + 24, h->clock_den);
	out[32] = h->compression;
	out[33] = h->icache_log2;
	put_u16(out + 34, h->source_format);
}

int oobt_header_decode(const uint8_t *p, size_t n, struct oobt_header *h, struct oob_err *err)
{
	if (n < OOBT_MAGIC_LEN || memcmp(p, OOBT_MAGIC, OOBT_MAGIC_LEN) != 0)
		return oob_err_set(err, -EINVAL, "oobt: bad magic at byte 0");
	if (n < OOBT_HEADER_SIZE)
		return oob_err_set(err, -EINVAL, "oobt: header truncated at byte %zu (48 expected)",
				   n);
	h->version = (uint16_t)get_le(p + 8, 2);
	h->header_size = (uint16_t)get_le(p + 10, 2);
	h->fields = (uint32_t)get_le(p + 12, 4);
	h->clock_num = get_le(p + 16, 8);
	h->clock_den = get_le(p + 24, 8);
	h->compression = p[32];
	h->icache_log2 = p[33];
	h->source_format = (uint16_t)get_le(p + 34, 2);
	if (h->version == 0 || h->version > OOBT_VERSION)
		return oob_err_set(err, -ENOTSUP,
				   "oobt: version %u at byte 8 is not supported (this reader: %d)",
				   h->version, OOBT_VERSION);
	if (h->header_size < OOBT_HEADER_SIZE || h->header_size > OOBT_HEADER_MAX)
		return oob_err_set(err, -EINVAL,
				   "oobt: header size %u at byte 10 (48..%d expected)",
				   h->header_size, OOBT_HEADER_MAX);
	if (h->fields & ~0x3fu)
		return oob_err_set(err, -EINVAL, "oobt: unknown field bits 0x%x at byte 12",
				   h->fields);
	if (!h->clock_num || !h->clock_den)
		return oob_err_set(err, -EINVAL, "oobt: clock ratio %llu/%llu at byte 16 is zero",
				   (unsigned long long)h->clock_num,
				   (unsigned long long)h->clock_den);
	if (h->compression > OOBT_COMP_LZ4)
		return oob_err_set(err, -EINVAL,
				   "oobt: compression %u at byte 32 (0 or 1 expected)",
				   h->compression);
	if (h->icache_log2 < OOBT_ICACHE_MIN || h->icache_log2 > OOBT_ICACHE_MAX)
		return oob_err_set(
		    err, -EINVAL,
		    "oobt: instruction cache size 2^%u at byte 33 (2^%d..2^%d expected)",
		    h->icache_log2, OOBT_ICACHE_MIN, OOBT_ICACHE_MAX);
	return 0;
}

struct hart_state {
	uint64_t pc, cycle;
	uint8_t priv;
};

/* A RUN being accumulated: its records are final, but its opcode byte can only
 * be written once we know how many records join it. */
struct pending_run {
	unsigned k;
	unsigned bits;
	uint64_t cdelta[6];
};

struct oobt_enc {
	unsigned fields;
	unsigned icache_log2;
	uint32_t *icache;
	uint64_t *itag; /* the pc each slot's bits were last sent for */
	uint32_t imask;
	struct hart_state *harts;
	size_t nharts;
	uint16_t hart;
	int started;
	int many; /* records of more than one hart */
	uint64_t maddr;
	uint64_t records;
	struct pending_run run;
	uint8_t *buf;
	size_t len, cap;
};

/* No slot's bits were sent for any pc (a pc is even: all ones is none). */
static void forget_pcs(struct oobt_enc *e)
{
	memset(e->itag, 0xff, ((size_t)e->imask + 1) * sizeof(*e->itag));
}

struct oobt_enc *oobt_enc_new(unsigned fields, unsigned icache_log2)
{
	struct oobt_enc *e = oob_xcalloc(1, sizeof(*e));
	if (!icache_log2)
		icache_log2 = OOBT_ICACHE_DEFAULT;
	if (icache_log2 < OOBT_ICACHE_MIN)
		icache_log2 = OOBT_ICACHE_MIN;
	if (icache_log2 > OOBT_ICACHE_MAX)
		icache_log2 = OOBT_ICACHE_MAX;
	e->fields = fields & 0x3f;
	e->icache_log2 = icache_log2;
	e->imask = (1u << icache_log2) - 1;
	if (fields & TRACE_F_INSN) {
		e->icache = oob_xcalloc((size_t)e->imask + 1, sizeof(uint32_t));
		e->itag = oob_xmalloc(((size_t)e->imask + 1) * sizeof(*e->itag));
		forget_pcs(e);
	}
	e->nharts = 1;
	e->harts = oob_xcalloc(1, sizeof(*e->harts));
	e->cap = 64 * 1024;
	e->buf = oob_xmalloc(e->cap);
	return e;
}

void oobt_enc_free(struct oobt_enc *e)
{
	if (!e)
		return;
	free(e->icache);
	free(e->itag);
	free(e->harts);
	free(e->buf);
	free(e);
}

unsigned oobt_enc_icache_log2(const struct oobt_enc *e)
{
	return e->icache_log2;
}

/* Makes room for n more bytes and returns where they go. */
static uint8_t *reserve(struct oobt_enc *e, size_t n)
{
	if (e->len + n > e->cap) {
		void *p = e->buf;
		oob_xgrow(&p, &e->cap, e->len + n, 1);
		e->buf = p;
	}
	return e->buf + e->len;
}

static void flush_run(struct oobt_enc *e)
{
	struct pending_run *r = &e->run;
	if (!r->k)
		return;
	uint8_t *p = reserve(e, 1 + 6 * 10);
	*p++ = (uint8_t)((1u << r->k) | r->bits);
	if (e->fields & TRACE_F_CYCLE)
		for (unsigned i = 0; i < r->k; i++)
			p = oobt_put_varint(p, r->cdelta[i]);
	e->len = (size_t)(p - e->buf);
	r->k = r->bits = 0;
}

static void switch_hart(struct oobt_enc *e, uint16_t hart)
{
	flush_run(e);
	if (hart >= e->nharts) {
		size_t n = (size_t)hart + 1;
		e->harts = oob_xrealloc(e->harts, n * sizeof(*e->harts));
		memset(e->harts + e->nharts, 0, (n - e->nharts) * sizeof(*e->harts));
		e->nharts = n;
	}
	uint8_t *p = reserve(e, 11);
	*p++ = OOBT_OP_HART;
	p = oobt_put_varint(p, hart);
	e->len = (size_t)(p - e->buf);
	e->hart = hart;
}

static int put_extra(struct oobt_enc *e, const struct trace_extra *x, struct oob_err *err)
{
	size_t tlen = x->kind == TRACE_X_EVENT && x->text ? strlen(x->text) : 0;
	if (tlen > OOBT_EVENT_MAX)
		return oob_err_set(err, -EINVAL, "oobt: event text of %zu bytes (at most %d)", tlen,
				   OOBT_EVENT_MAX);
	uint8_t *p = reserve(e, 40 + tlen), *p0 = p;
	int compact_fields = x->size == 0 && x->addr == 0;
	switch (x->kind) {
	case TRACE_X_REG:
	case TRACE_X_FREG:
		if (!compact_fields || x->num > 255)
			goto any;
		*p++ = x->kind == TRACE_X_REG ? OOBT_OP_X_REG : OOBT_OP_X_FREG;
		*p++ = (uint8_t)x->num;
		p = oobt_put_varint(p, oobt_zz((int64_t)x->val));
		break;
	case TRACE_X_CSR:
		if (!compact_fields)
			goto any;
		*p++ = OOBT_OP_X_CSR;
		p = oobt_put_varint(p, x->num);
		p = oobt_put_varint(p, oobt_zz((int64_t)x->val));
		break;
	case TRACE_X_LOAD:
	case TRACE_X_STORE:
		if (x->num)
			goto any;
		*p++ = x->kind == TRACE_X_LOAD ? OOBT_OP_X_LOAD : OOBT_OP_X_STORE;
		*p++ = x->size;
		p = oobt_put_varint(p, oobt_zz((int64_t)(x->addr - e->maddr)));
		p = oobt_put_varint(p, oobt_zz((int64_t)x->val));
		e->maddr = x->addr;
		break;
	case TRACE_X_TRAP:
		if (x->size || x->num)
			goto any;
		*p++ = OOBT_OP_X_TRAP;
		p = oobt_put_varint(p, oobt_zz((int64_t)x->val));
		p = oobt_put_varint(p, oobt_zz((int64_t)x->addr));
		break;
	case TRACE_X_EVENT:
		if (x->size || x->num || x->addr || x->val)
			return oob_err_set(err, -EINVAL, "oobt: event extra with numeric fields");
		*p++ = OOBT_OP_X_EVENT;
		p = oobt_put_varint(p, tlen);
		if (tlen)
			memcpy(p, x->text, tlen);
		p += tlen;
		break;
	default:
	any:
		if (x->kind < TRACE_X_REG || x->kind > TRACE_X_TRAP || x->kind == TRACE_X_EVENT)
			return oob_err_set(err, -EINVAL, "oobt: extra of unknown kind %u", x->kind);
		p = p0;
		*p++ = OOBT_OP_X_ANY;
		*p++ = x->kind;
		*p++ = x->size;
		p = oobt_put_varint(p, x->num);
		p = oobt_put_varint(p, oobt_zz((int64_t)x->addr));
		p = oobt_put_varint(p, oobt_zz((int64_t)x->val));
		break;
	}
	e->len = (size_t)(p - e->buf);
	return 0;
}

static void put_insn(struct oobt_enc *e, uint32_t insn)
{
	uint8_t *p = reserve(e, 5);
	if (insn <= 0xffff) {
		*p++ = OOBT_OP_INSN16;
		p[0] = (uint8_t)insn;
		p[1] = (uint8_t)(insn >> 8);
		p += 2;
	} else {
		*p++ = OOBT_OP_INSN32;
		put_u32(p, insn);
		p += 4;
	}
	e->len = (size_t)(p - e->buf);
}

/* The record itself, after its prefixes: joins the pending RUN when it is a
 * sequential step, else a jump of its own. */
static void put_step(struct oobt_enc *e, struct hart_state *h, uint64_t pc, uint64_t cdelta,
		     int prefixed)
{
	uint64_t d = pc - h->pc;
	if ((d == 2 || d == 4) && !prefixed && e->run.k && e->run.k < 6) {
		e->run.bits |= (unsigned)(d == 4) << e->run.k;
		e->run.cdelta[e->run.k++] = cdelta;
		return;
	}
	flush_run(e);
	if (d == 2 || d == 4) {
		e->run.k = 1;
		e->run.bits = d == 4;
		e->run.cdelta[0] = cdelta;
		return;
	}
	uint8_t *p = reserve(e, 21);
	int64_t sd = (int64_t)d;
	if (!(sd & 1) && sd >= -64 && sd <= 62) {
		*p++ = (uint8_t)(OOBT_OP_SJUMP + (sd / 2 + 32));
	} else {
		*p++ = OOBT_OP_JUMP;
		p = oobt_put_varint(p, oobt_zz(sd));
	}
	if (e->fields & TRACE_F_CYCLE)
		p = oobt_put_varint(p, cdelta);
	e->len = (size_t)(p - e->buf);
}

static int check_batch(const struct trace_batch *b, unsigned fields, struct oob_err *err)
{
	uint32_t last = 0;
	if (b->n > TRACE_BATCH_MAX)
		return oob_err_set(err, -EINVAL, "oobt: batch of %u records (at most %d)", b->n,
				   TRACE_BATCH_MAX);
	if (((fields & TRACE_F_CYCLE) && !b->cycle) || ((fields & TRACE_F_INSN) && !b->insn) ||
	    ((fields & TRACE_F_PRIV) && !b->priv))
		return oob_err_set(err, -EINVAL,
				   "oobt: batch lacks a field the writer was told of");
	for (uint32_t i = 0; i < b->nx; i++) {
		if (b->x[i].idx >= b->n || b->x[i].idx < last)
			return oob_err_set(
			    err, -EINVAL,
			    "oobt: extra %u has record index %u (sorted, < %u expected)", i,
			    b->x[i].idx, b->n);
		last = b->x[i].idx;
	}
	return 0;
}

int oobt_enc_put(struct oobt_enc *e, const struct trace_batch *b, struct oob_err *err)
{
	int rc = check_batch(b, e->fields, err);
	if (rc)
		return rc;
	if (!e->started || b->hart != e->hart) {
		e->many |= e->started;
		switch_hart(e, b->hart);
	}
	e->started = 1;
	struct hart_state *h = &e->harts[e->hart];
	uint32_t xi = 0;
	for (uint32_t i = 0; i < b->n; i++) {
		uint64_t pc = b->pc[i];
		int prefixed = 0;
		if ((e->fields & TRACE_F_PRIV) && b->priv[i] != h->priv) {
			if (b->priv[i] > 3)
				return oob_err_set(err, -EINVAL,
						   "oobt: record %u has priv %u (0..3)", i,
						   b->priv[i]);
			flush_run(e);
			*reserve(e, 1) = (uint8_t)(OOBT_OP_PRIV | b->priv[i]);
			e->len++;
			h->priv = b->priv[i];
		}
		uint32_t x0 = xi;
		while (xi < b->nx && b->x[xi].idx == i)
			xi++;
		if (xi - x0 > OOBT_X_PER_RECORD)
			return oob_err_set(err, -EINVAL,
					   "oobt: record %u has %u extras (at most %d)", i, xi - x0,
					   OOBT_X_PER_RECORD);
		if (xi > x0) {
			flush_run(e);
			prefixed = 1;
			size_t text = 0;
			for (uint32_t j = x0; j < xi; j++) {
				if ((rc = put_extra(e, &b->x[j], err)))
					return rc;
				if (b->x[j].kind == TRACE_X_EVENT && b->x[j].text)
					text += strlen(b->x[j].text) + 1;
			}
			if (text > OOBT_TEXT_PER_RECORD)
				return oob_err_set(err, -EINVAL,
						   "oobt: record %u has %zu bytes of event text", i,
						   text);
		}
		if (e->fields & TRACE_F_INSN) {
			/* also when the slot's bits were sent for another pc: a reader
			 * that keeps bits per pc learns them from INSN alone (the
			 * same bits may be new for this pc) */
			uint32_t si = (pc >> 1) & e->imask;
			if (e->icache[si] != b->insn[i] || e->itag[si] != pc) {
				flush_run(e);
				put_insn(e, b->insn[i]);
				e->icache[si] = b->insn[i];
				e->itag[si] = pc;
				prefixed = 1;
			}
		}
		uint64_t cd = 0;
		if (e->fields & TRACE_F_CYCLE) {
			cd = oobt_zz((int64_t)(b->cycle[i] - h->cycle));
			h->cycle = b->cycle[i];
		}
		put_step(e, h, pc, cd, prefixed);
		h->pc = pc;
		e->records++;
	}
	return 0;
}

void oobt_enc_finish(struct oobt_enc *e)
{
	flush_run(e);
	uint8_t *p = reserve(e, 11);
	*p++ = OOBT_OP_END;
	p = oobt_put_varint(p, e->records);
	e->len = (size_t)(p - e->buf);
}

const uint8_t *oobt_enc_data(const struct oobt_enc *e, size_t *n)
{
	*n = e->len;
	return e->buf;
}

void oobt_enc_drain(struct oobt_enc *e)
{
	e->len = 0;
}

uint64_t oobt_enc_records(const struct oobt_enc *e)
{
	return e->records;
}

uint16_t oobt_enc_hart(const struct oobt_enc *e)
{
	return e->many ? OOBT_MANY_HARTS : e->hart;
}

size_t oobt_enc_sync(struct oobt_enc *e)
{
	flush_run(e);
	size_t at = e->len;
	uint8_t *p = reserve(e, 1 + 3 * 10 + e->nharts * 21);
	*p++ = OOBT_OP_SYNC;
	p = oobt_put_varint(p, e->records);
	p = oobt_put_varint(p, e->nharts);
	for (size_t k = 0; k < e->nharts; k++) {
		p = oobt_put_varint(p, e->harts[k].pc);
		p = oobt_put_varint(p, e->harts[k].cycle);
		*p++ = e->harts[k].priv;
	}
	p = oobt_put_varint(p, e->hart);
	e->len = (size_t)(p - e->buf);
	if (e->icache) {
		memset(e->icache, 0, ((size_t)e->imask + 1) * sizeof(*e->icache));
		forget_pcs(e);
	}
	e->maddr = 0;
	return at;
}

void oobt_mark_encode(const char tag[4], uint64_t records, uint16_t hart,
		      uint8_t out[8 + OOBT_MARK_SIZE])
{
	put_u32(out, OOBT_MARK_MAGIC);
	put_u32(out + 4, OOBT_MARK_SIZE);
	memcpy(out + 8, tag, 4);
	put_u64(out + 12, records);
	put_u16(out + 20, hart);
	put_u16(out + 22, 0);
}
