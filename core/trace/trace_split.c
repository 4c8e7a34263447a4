/*
 * One trace file cut into pieces that threads decode on their own
 * (trace_split.h). The file is read with pread; a piece is a byte range of it
 * (raw records) or a run of LZ4 frames, found from the frames' headers and
 * block sizes without decompressing anything.
 */
#include "trace/trace_split_impl.h"

#include <fcntl.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/lz4par.h"
#include "util/oob_mem.h"

#define LZ4_MAGIC  0x184D2204u
#define SKIP_MAGIC 0x184D2A50u

int split_nosplit(struct oob_err *err, const char *path, const char *why)
{
	return oob_err_set(err, -ENOTSUP, "%s: read sequentially: %s", path, why);
}

struct split_piece *split_piece_add(struct trace_split *s)
{
	if (s->np == s->pcap) {
		s->pcap = s->pcap ? 2 * s->pcap : 64;
		s->p = oob_xrealloc(s->p, s->pcap * sizeof(*s->p));
	}
	memset(&s->p[s->np], 0, sizeof(*s->p));
	return &s->p[s->np++];
}

/* Reads n bytes at off into buf: 0 or a negative errno. The file is
 * read, not mapped: a page fault every few pages of a mapping cost more than
 * the copy (in a virtual machine several times more: 2 threads ran 0.78x the
 * speed of one mapped, 1.5x read), and a file that shrinks under a mapping
 * raises SIGBUS. */
int split_read_at(const struct trace_split *s, uint8_t *buf, size_t n, uint64_t off,
		  struct oob_err *err)
{
	while (n) {
		ssize_t got = pread(s->fd, buf, n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return oob_err_set(err, got ? -errno : -EIO,
					   "%s: cannot read at byte %" PRIu64 ": %s", s->name, off,
					   got ? strerror(errno) : "the file shrank");
		buf += got;
		n -= (size_t)got;
		off += (uint64_t)got;
	}
	return 0;
}

/* The end of the frame's blocks at z (after its hs-byte header with flags
 * flg) in *end: 0, or -ENOTSUP when they do not fit in the file, or a read
 * error. */
static int frame_end(const struct trace_split *s, uint64_t z, size_t hs, uint8_t flg, uint64_t *end,
		     struct oob_err *err)
{
	const uint64_t bchk = flg >> 4 & 1 ? 4 : 0, cchk = flg >> 2 & 1 ? 4 : 0;
	uint64_t off = z + hs;
	for (;;) {
		uint8_t b[4];
		if (off + 4 > s->size)
			return split_nosplit(err, s->name, "a truncated LZ4 frame");
		int rc = split_read_at(s, b, 4, off, err);
		if (rc < 0)
			return rc;
		uint32_t bs = le32(b);
		uint64_t len = bs ? (bs & 0x7fffffffu) + bchk : cchk;
		if ((bs & 0x7fffffffu) > LZ4PAR_FRAME_MAX || off + 4 + len > s->size)
			return split_nosplit(err, s->name, "a truncated or corrupt LZ4 frame");
		off += 4 + len;
		if (!bs) {
			*end = off;
			return 0;
		}
	}
}

static void frame_add(struct trace_split *s, const struct split_frame *f)
{
	if (s->nf == s->fcap) {
		s->fcap = s->fcap ? 2 * s->fcap : 256;
		s->f = oob_xrealloc(s->f, s->fcap * sizeof(*s->f));
	}
	s->f[s->nf++] = *f;
}

/* Lists the file's frames: -ENOTSUP unless every one declares its size. */
static int list_frames(struct trace_split *s, struct oob_err *err)
{
	uint64_t z = s->oobt ? s->data_off : 0, d = 0;
	while (z < s->size) {
		uint8_t h[LZ4F_HEADER_SIZE_MAX];
		size_t n = s->size - z < sizeof(h) ? (size_t)(s->size - z) : sizeof(h);
		if (n < 8)
			return split_nosplit(err, s->name, "a truncated LZ4 frame");
		int rc = split_read_at(s, h, n, z, err);
		if (rc < 0)
			return rc;
		uint32_t magic = le32(h);
		if ((magic & 0xfffffff0u) == SKIP_MAGIC) {
			if (s->oobt && (rc = split_oobt_skippable(s, z, le32(h + 4), err)) < 0)
				return rc;
			z += 8 + (uint64_t)le32(h + 4);
			continue;
		}
		size_t hs = LZ4F_headerSize(h, n);
		if (magic != LZ4_MAGIC || LZ4F_isError(hs) || s->size - z < hs + 4)
			return split_nosplit(err, s->name, "not a sequence of LZ4 frames");
		if (!(h[4] >> 3 & 1) || le64(h + 6) > LZ4PAR_FRAME_MAX)
			return split_nosplit(err, s->name, "an LZ4 frame without its content size");
		uint64_t end = 0;
		if ((rc = frame_end(s, z, hs, h[4], &end, err)) < 0)
			return rc;
		frame_add(s, &(struct split_frame){z, end - z, d, le64(h + 6), s->mark_sync > 0,
						   s->mark_sync ? s->mark_sync - 1 : 0});
		s->mark_sync = 0;
		d += le64(h + 6);
		z = end;
	}
	if (s->oobt)
		return split_oobt_check(s, err);
	if (d < s->data_off || (d - s->data_off) % s->lay.rec_bytes)
		return split_nosplit(err, s->name, "the last record is not whole");
	return 0;
}

/* Pieces of whole frames, each starting where a frame's content starts a
 * record (our writer aligns them; others may allow fewer cuts). */
static void cut_frames(struct trace_split *s, uint64_t want_bytes)
{
	const uint64_t rb = s->lay.rec_bytes;
	struct split_piece *cur = NULL;
	for (size_t k = 0; k < s->nf; k++) {
		const struct split_frame *f = &s->f[k];
		if (f->doff + f->dlen <= s->data_off)
			continue; /* the header line's frame */
		uint64_t from = f->doff > s->data_off ? f->doff : s->data_off;
		int aligned = (from - s->data_off) % rb == 0;
		if (!cur || (aligned && cur->nrec * rb >= want_bytes)) {
			if (cur && !aligned)
				continue;
			cur = split_piece_add(s);
			cur->f0 = k;
			cur->off = f->zoff;
			cur->skip = from - f->doff;
		}
		cur->nf++;
		cur->len = f->zoff + f->zlen - cur->off;
		uint64_t pstart = s->f[cur->f0].doff + cur->skip;
		cur->nrec = (f->doff + f->dlen - pstart) / rb;
	}
}

static void cut_raw(struct trace_split *s, uint64_t want_rec)
{
	const uint64_t rb = s->lay.rec_bytes, total = (s->size - s->data_off) / rb;
	for (uint64_t r = 0; r < total; r += want_rec) {
		struct split_piece *p = split_piece_add(s);
		p->nrec = total - r < want_rec ? total - r : want_rec;
		p->off = s->data_off + r * rb;
		p->len = p->nrec * rb;
	}
}

/* The format and layout, by the sequential reader's own detection. */
static int probe(struct trace_split *s, const char *path, const struct trace_opts *opts,
		 struct oob_err *err)
{
	struct trace_reader *r = trace_open(path, opts, err);
	if (!r)
		return err ? err->code : -EINVAL;
	uint8_t m[4] = {0};
	int rc = 0;
	enum trace_format f = trace_reader_format(r);
	if (f == TRACE_FMT_OOBT)
		rc = split_oobt_probe(s, opts, err);
	else if (f != TRACE_FMT_TRACERV_BIN)
		rc = split_nosplit(err, path, "neither TracerV binary nor oobt");
	else if (s->size >= 4 && (rc = split_read_at(s, m, 4, 0, err)) < 0)
		;
	else if (in_is_lz4(r->in) != (le32(m) == LZ4_MAGIC))
		rc = split_nosplit(err, path, "LZ4 data after a plain start");
	if (!rc && f == TRACE_FMT_TRACERV_BIN) {
		s->lz4 = in_is_lz4(r->in);
		s->data_off = in_offset(r->in);
		s->hart = r->opts.hart;
		trace_tracerv_layout_of(r, &s->lay);
	}
	trace_close(r);
	return rc;
}

static int open_file(struct trace_split *s, const char *path, struct oob_err *err)
{
	struct stat st;
	if ((s->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
		return split_nosplit(err, path, "not a regular file with data");
	s->size = (uint64_t)st.st_size;
	return 0;
}

static int cut(struct trace_split *s, uint64_t records_per_piece, struct oob_err *err)
{
	if (s->oobt)
		return split_oobt_cut(s, records_per_piece ? records_per_piece : 1, err);
	uint64_t per = records_per_piece / s->lay.slots;
	per = per ? per : 1;
	if (s->lz4)
		cut_frames(s, per * s->lay.rec_bytes);
	else
		cut_raw(s, per);
	return 0;
}

struct trace_split *trace_split_open(const char *path, const struct trace_opts *opts,
				     uint64_t records_per_piece, struct oob_err *err)
{
	struct trace_opts none = {0};
	const struct trace_opts *o = opts ? opts : &none;
	if (o->in.more || o->in.max_bytes || o->in.tail_may_be_cut || o->base_clock ||
	    (o->format != TRACE_FMT_AUTO && o->format != TRACE_FMT_TRACERV_BIN &&
	     o->format != TRACE_FMT_OOBT)) {
		oob_err_set(err, -ENOTSUP, "%s: read sequentially: a stream, a cap or a format",
			    path);
		return NULL;
	}
	struct trace_split *s = oob_xcalloc(1, sizeof(*s));
	s->fd = -1;
	s->name = oob_xstrdup(path);
	int rc = open_file(s, path, err);
	if (!rc)
		rc = probe(s, path, o, err);
	if (!rc && (s->lz4 || s->oobt))
		rc = list_frames(s, err);
	else if (!rc && (s->size - s->data_off) % s->lay.rec_bytes)
		rc = split_nosplit(err, path, "the last record is not whole");
	if (!rc)
		rc = cut(s, records_per_piece, err);
	if (rc) {
		trace_split_close(s);
		return NULL;
	}
	return s;
}

void trace_split_close(struct trace_split *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	free(s->f);
	free(s->p);
	free(s->name);
	free(s);
}

size_t trace_split_pieces(const struct trace_split *s)
{
	return s->np;
}

uint64_t trace_split_raw_bytes(const struct trace_split *s)
{
	return s->size;
}

uint64_t trace_split_raw_end(const struct trace_split *s, size_t k)
{
	return k < s->np ? s->p[k].off + s->p[k].len : s->size;
}

uint16_t trace_split_hart(const struct trace_split *s)
{
	return s->hart;
}

uint64_t trace_split_first(const struct trace_split *s, size_t k)
{
	uint64_t n = 0;
	if (s->oobt)
		return k < s->np ? s->p[k].first : 0;
	if (k < s->np)
		n = s->lz4 ? (s->f[s->p[k].f0].doff + s->p[k].skip - s->data_off) / s->lay.rec_bytes
			   : (s->p[k].off - s->data_off) / s->lay.rec_bytes;
	return n * s->lay.slots;
}

void trace_split_cur_start(const struct trace_split *s, size_t k, struct trace_split_cur *c)
{
	const struct split_piece *p = &s->p[k];
	if (!c->pc) {
		c->pc = oob_xmalloc((TRACE_BATCH_MAX + 8) * sizeof(*c->pc));
		c->cycle = oob_xmalloc((TRACE_BATCH_MAX + 8) * sizeof(*c->cycle));
	}
	trace_close(c->tr);
	c->tr = NULL;
	c->piece = k;
	c->frame = p->f0;
	c->p = NULL;
	c->left = 0;
	c->off = p->off;
	c->end = p->off + p->len;
}

/* Room for keep bytes of a partial record (at c->p) and want more. */
static void raw_room(struct trace_split_cur *c, size_t keep, size_t want)
{
	if (keep + want > c->rawcap) {
		uint8_t *n = oob_xmalloc(keep + want);
		if (keep)
			memcpy(n, c->p, keep);
		free(c->raw);
		c->raw = n;
		c->rawcap = keep + want;
	} else if (keep) {
		memmove(c->raw, c->p, keep);
	}
}

/* The next bytes of a raw piece, a batch's worth after the partial record
 * left: 0, 1 = nothing left, or a negative errno. */
static int read_next(const struct trace_split *s, struct trace_split_cur *c, struct oob_err *err)
{
	if (c->off >= c->end)
		return 1;
	size_t keep = c->left, want = TRACE_BATCH_MAX / s->lay.slots * s->lay.rec_bytes;
	if (want > c->end - c->off)
		want = (size_t)(c->end - c->off);
	raw_room(c, keep, want);
	int rc = split_read_at(s, c->raw + keep, want, c->off, err);
	if (rc < 0)
		return rc;
	c->off += want;
	c->p = c->raw;
	c->left = keep + want;
	return 0;
}

int split_inflate(const struct trace_split *s, struct trace_split_cur *c, size_t k, uint8_t *dst,
		  size_t cap, struct oob_err *err)
{
	const struct split_frame *f = &s->f[k];
	if (!c->dctx &&
	    LZ4F_isError(LZ4F_createDecompressionContext((LZ4F_dctx **)&c->dctx, LZ4F_VERSION)))
		return oob_err_set(err, -ENOMEM, "lz4: cannot create a decompression context");
	if (f->zlen > c->zcap) {
		free(c->z);
		c->zcap = (size_t)f->zlen;
		c->z = oob_xmalloc(c->zcap);
	}
	int rc = split_read_at(s, c->z, (size_t)f->zlen, f->zoff, err);
	if (rc < 0)
		return rc;
	size_t src = (size_t)f->zlen, dst_n = cap;
	LZ4F_resetDecompressionContext(c->dctx);
	size_t r = LZ4F_decompress(c->dctx, dst, &dst_n, c->z, &src, NULL);
	if (LZ4F_isError(r) || r != 0 || dst_n != f->dlen || src != f->zlen)
		return oob_err_set(err, -EINVAL,
				   "%s: corrupt LZ4 frame at byte %" PRIu64
				   " (content byte %" PRIu64 "): %s",
				   s->name, f->zoff, f->doff,
				   LZ4F_isError(r) ? LZ4F_getErrorName(r)
						   : "its content is not its declared size");
	return 0;
}

/* The next frame's content after the partial record left: 0, 1 = no frame
 * left, or a negative errno. */
static int inflate_next(const struct trace_split *s, struct trace_split_cur *c, struct oob_err *err)
{
	const struct split_piece *p = &s->p[c->piece];
	if (c->frame >= p->f0 + p->nf)
		return 1;
	const struct split_frame *f = &s->f[c->frame];
	size_t keep = c->left, skip = c->frame == p->f0 ? (size_t)p->skip : 0;
	raw_room(c, keep, (size_t)f->dlen);
	int rc = split_inflate(s, c, c->frame, c->raw + keep, (size_t)f->dlen, err);
	if (rc < 0)
		return rc;
	c->frame++;
	if (skip) /* the header line: only in the first frame, before any record */
		memmove(c->raw + keep, c->raw + keep + skip, (size_t)f->dlen - skip);
	c->p = c->raw;
	c->left = keep + (size_t)f->dlen - skip;
	return 0;
}

long trace_split_cur_next(const struct trace_split *s, struct trace_split_cur *c,
			  struct oob_err *err)
{
	if (s->oobt)
		return split_oobt_next(s, c, err);
	const size_t rb = s->lay.rec_bytes, most = TRACE_BATCH_MAX / s->lay.slots;
	for (;;) {
		while (c->left < rb) {
			int rc = s->lz4 ? inflate_next(s, c, err) : read_next(s, c, err);
			if (rc < 0)
				return rc;
			if (rc)
				break;
		}
		size_t nrec = c->left / rb < most ? c->left / rb : most;
		if (!nrec)
			return 0;
		uint32_t n = trace_tracerv_decode(c->p, nrec, c->pc, c->cycle, &s->lay);
		c->p += nrec * rb;
		c->left -= nrec * rb;
		c->b =
		    (struct trace_batch){.n = n, .hart = s->hart, .pc = c->pc, .cycle = c->cycle};
		if (n)
			return n;
	}
}

void trace_split_cur_free(struct trace_split_cur *c)
{
	trace_close(c->tr);
	free(c->pc);
	free(c->cycle);
	free(c->raw);
	free(c->z);
	LZ4F_freeDecompressionContext(c->dctx);
	memset(c, 0, sizeof(*c));
}
