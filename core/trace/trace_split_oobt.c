/*
 * trace_split for oobt (trace_split.h): the body's LZ4 frames are cut where
 * a sync mark says the next frame starts with SYNC (docs/formats/OOBT.md),
 * and a piece is read by an oobt reader of its own over its frames'
 * content, decompressed after a copy of the file's header that says the
 * body is plain.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"
#include "trace/trace_split_impl.h"

int split_oobt_probe(struct trace_split *s, const struct trace_opts *opts, struct oob_err *err)
{
	uint8_t h[OOBT_HEADER_SIZE];
	struct oobt_header oh;
	int rc;
	if (s->size < sizeof(h))
		return split_nosplit(err, s->name, "an oobt file shorter than its header");
	if ((rc = split_read_at(s, h, sizeof(h), 0, err)) < 0 ||
	    (rc = oobt_header_decode(h, sizeof(h), &oh, err)) < 0)
		return rc;
	if (oh.version < 2 || oh.compression != OOBT_COMP_LZ4)
		return split_nosplit(err, s->name, "oobt without sync points (version 1 or plain)");
	s->oobt = 1;
	s->data_off = oh.header_size;
	memcpy(s->hdr, h, sizeof(h));
	s->hdr[10] = OOBT_HEADER_SIZE; /* the fields it knows, then the body */
	s->hdr[11] = 0;
	s->hdr[32] = OOBT_COMP_NONE;
	s->topts = *opts;
	s->topts.format = TRACE_FMT_OOBT;
	return 0;
}

int split_oobt_skippable(struct trace_split *s, uint64_t z, uint32_t n, struct oob_err *err)
{
	uint8_t m[OOBT_MARK_SIZE];
	if (n != OOBT_MARK_SIZE || z + 8 + n > s->size)
		return 0; /* not ours */
	int rc = split_read_at(s, m, sizeof(m), z + 8, err);
	if (rc < 0)
		return rc;
	uint64_t records = le64(m + 4);
	if (!memcmp(m, OOBT_MARK_SYNC, 4)) {
		s->mark_sync = records + 1;
	} else if (!memcmp(m, OOBT_MARK_END, 4)) {
		s->mark_end = 1;
		s->total = records;
		s->hart = (uint16_t)(m[12] | m[13] << 8);
		if (s->hart == OOBT_MANY_HARTS)
			return split_nosplit(err, s->name, "oobt of several harts");
	}
	return 0;
}

int split_oobt_check(struct trace_split *s, struct oob_err *err)
{
	if (!s->mark_end)
		return split_nosplit(err, s->name,
				     "oobt without its trailer (cut short, or not our writer's)");
	for (size_t k = 1; k < s->nf; k++)
		if (s->f[k].sync && s->f[k].first < s->f[k - 1].first)
			return split_nosplit(err, s->name, "oobt sync marks out of order");
	return 0;
}

int split_oobt_cut(struct trace_split *s, uint64_t want, struct oob_err *err)
{
	struct split_piece *cur = NULL;
	for (size_t k = 0; k < s->nf; k++) {
		const struct split_frame *f = &s->f[k];
		if (!cur || (f->sync && f->first - cur->first >= want)) {
			cur = split_piece_add(s);
			cur->f0 = k;
			cur->off = f->zoff;
			cur->first = f->sync ? f->first : 0;
		}
		cur->nf++;
		cur->len = f->zoff + f->zlen - cur->off;
		cur->dlen += f->dlen;
	}
	/* pieces much longer than the chunks asked for (tiny test chunks)
	 * would not be the cut wanted: copying records to chunks makes it.
	 * Our writer's sync points are 4 default chunks apart, and it syncs
	 * at the first batch end past its interval: a batch of slack. */
	for (size_t k = 0; k < s->np; k++) {
		uint64_t end = k + 1 < s->np ? s->p[k + 1].first : s->total;
		if (end - s->p[k].first > 4 * want + TRACE_BATCH_MAX)
			return split_nosplit(err, s->name,
					     "oobt sync points further apart than four chunks");
	}
	return 0;
}

/* Room for a piece's content: a block of liblz4's largest after it, so
 * that it decodes in place (split_inflate). */
enum { BLOCK_ROOM = 4 << 20 };

/* The piece's frames decompressed after the header (kept for the join's
 * re-run of the piece its speculative run just read), and its reader. */
static int piece_open(const struct trace_split *s, struct trace_split_cur *c, struct oob_err *err)
{
	const struct split_piece *p = &s->p[c->piece];
	size_t n = OOBT_HEADER_SIZE + (size_t)p->dlen;
	if (c->loaded != c->piece + 1) {
		if (n + BLOCK_ROOM > c->rawcap) {
			free(c->raw);
			c->rawcap = n + BLOCK_ROOM;
			c->raw = oob_xmalloc(c->rawcap);
		}
		c->loaded = 0;
		memcpy(c->raw, s->hdr, OOBT_HEADER_SIZE);
		for (size_t k = p->f0, at = OOBT_HEADER_SIZE; k < p->f0 + p->nf;
		     at += (size_t)s->f[k++].dlen) {
			int rc = split_inflate(s, c, k, c->raw + at, c->rawcap - at, err);
			if (rc < 0)
				return rc;
		}
		memset(c->raw + n, 0, IN_PAD);
		c->loaded = c->piece + 1;
	}
	struct trace_opts o = s->topts;
	o.oobt_piece.on = 1;
	o.oobt_piece.first = p->first;
	o.oobt_piece.offset = s->f[p->f0].doff;
	c->tr = trace_open_stream(in_open_mem_in_place(c->raw, n, s->name), &o, err);
	return c->tr ? 0 : (err ? err->code : -EINVAL);
}

long split_oobt_next(const struct trace_split *s, struct trace_split_cur *c, struct oob_err *err)
{
	const struct trace_batch *b;
	int rc;
	if (!c->tr && (rc = piece_open(s, c, err)) < 0)
		return rc;
	if ((rc = trace_next(c->tr, &b, err)) <= 0)
		return rc;
	c->b = *b;
	return b->n;
}
