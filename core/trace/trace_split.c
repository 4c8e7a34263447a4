/*
 * One trace file cut into pieces that threads decode on their own
 * (trace_split.h). The file is mapped once; a piece is a byte range of it
 * (raw records) or a run of LZ4 frames, found from the frames' headers and
 * block sizes without decompressing anything.
 */
#include "trace/trace_split.h"

#include <fcntl.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/lz4par.h"
#include "util/oob_mem.h"
#include "trace/trace_impl.h"

#define LZ4_MAGIC  0x184D2204u
#define SKIP_MAGIC 0x184D2A50u
#define WALK_DROP  (64ull << 20) /* unmap the frame walk's pages this often */

struct frame {
	uint64_t zoff, zlen; /* compressed bytes in the file */
	uint64_t doff, dlen; /* its content in the decompressed stream */
};

struct piece {
	uint64_t off, len; /* raw: bytes of whole records; LZ4: compressed bytes */
	size_t f0, nf;	   /* LZ4: its frames */
	uint64_t skip;	   /* LZ4: content bytes before its first record */
	uint64_t nrec;	   /* records (of rec_bytes) in it */
};

struct trace_split {
	char *name;
	const uint8_t *map;
	uint64_t size;
	struct trace_tracerv_layout lay;
	uint16_t hart;
	int lz4;
	uint64_t data_off; /* decompressed offset of the first record */
	struct frame *f;
	size_t nf;
	struct piece *p;
	size_t np, pcap;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int nosplit(struct oob_err *err, const char *path, const char *why)
{
	return oob_err_set(err, -ENOTSUP, "%s: read sequentially: %s", path, why);
}

static struct piece *piece_add(struct trace_split *s)
{
	if (s->np == s->pcap) {
		s->pcap = s->pcap ? 2 * s->pcap : 64;
		s->p = oob_xrealloc(s->p, s->pcap * sizeof(*s->p));
	}
	memset(&s->p[s->np], 0, sizeof(*s->p));
	return &s->p[s->np++];
}

/* The end of the frame's blocks at z (after its hs-byte header), 0 if they
 * do not fit in the file or are corrupt. */
static uint64_t frame_end(const struct trace_split *s, uint64_t z, size_t hs)
{
	const uint8_t flg = s->map[z + 4];
	const uint64_t bchk = flg >> 4 & 1 ? 4 : 0, cchk = flg >> 2 & 1 ? 4 : 0;
	uint64_t off = z + hs;
	for (;;) {
		if (off + 4 > s->size)
			return 0;
		uint32_t bs = le32(s->map + off);
		uint64_t len = bs ? (bs & 0x7fffffffu) + bchk : cchk;
		if ((bs & 0x7fffffffu) > LZ4PAR_FRAME_MAX || off + 4 + len > s->size)
			return 0;
		off += 4 + len;
		if (!bs)
			return off;
	}
}

/* Lists the file's frames: -ENOTSUP unless every one declares its size. */
static int list_frames(struct trace_split *s, struct oob_err *err)
{
	uint64_t z = 0, d = 0, dropped = 0;
	size_t cap = 0;
	while (z < s->size) {
		if (s->size - z < 8)
			return nosplit(err, s->name, "a truncated LZ4 frame");
		uint32_t magic = le32(s->map + z);
		if ((magic & 0xfffffff0u) == SKIP_MAGIC) {
			z += 8 + (uint64_t)le32(s->map + z + 4);
			continue;
		}
		size_t hs = LZ4F_headerSize(s->map + z, s->size - z);
		if (magic != LZ4_MAGIC || LZ4F_isError(hs) || s->size - z < hs + 4)
			return nosplit(err, s->name, "not a sequence of LZ4 frames");
		if (!(s->map[z + 4] >> 3 & 1) || le64(s->map + z + 6) > LZ4PAR_FRAME_MAX)
			return nosplit(err, s->name, "an LZ4 frame without its content size");
		uint64_t end = frame_end(s, z, hs);
		if (!end)
			return nosplit(err, s->name, "a truncated or corrupt LZ4 frame");
		if (s->nf == cap) {
			cap = cap ? 2 * cap : 256;
			s->f = oob_xrealloc(s->f, cap * sizeof(*s->f));
		}
		s->f[s->nf++] = (struct frame){z, end - z, d, le64(s->map + z + 6)};
		d += le64(s->map + z + 6);
		z = end;
		if (z - dropped > WALK_DROP) { /* the headers' pages: see trace_split_open */
			uint64_t to = z / WALK_DROP * WALK_DROP;
			madvise((void *)(s->map + dropped), to - dropped, MADV_DONTNEED);
			dropped = to;
		}
	}
	if (d < s->data_off || (d - s->data_off) % s->lay.rec_bytes)
		return nosplit(err, s->name, "the last record is not whole");
	return 0;
}

/* Pieces of whole frames, each starting where a frame's content starts a
 * record (our writer aligns them; others may allow fewer cuts). */
static void cut_frames(struct trace_split *s, uint64_t want_bytes)
{
	const uint64_t rb = s->lay.rec_bytes;
	struct piece *cur = NULL;
	for (size_t k = 0; k < s->nf; k++) {
		const struct frame *f = &s->f[k];
		if (f->doff + f->dlen <= s->data_off)
			continue; /* the header line's frame */
		uint64_t from = f->doff > s->data_off ? f->doff : s->data_off;
		int aligned = (from - s->data_off) % rb == 0;
		if (!cur || (aligned && cur->nrec * rb >= want_bytes)) {
			if (cur && !aligned)
				continue;
			cur = piece_add(s);
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
		struct piece *p = piece_add(s);
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
	int rc = 0;
	if (trace_reader_format(r) != TRACE_FMT_TRACERV_BIN)
		rc = nosplit(err, path, "not TracerV binary");
	else if (in_is_lz4(r->in) != (s->size >= 4 && le32(s->map) == LZ4_MAGIC))
		rc = nosplit(err, path, "LZ4 data after a plain start");
	s->lz4 = in_is_lz4(r->in);
	s->data_off = in_offset(r->in);
	s->hart = r->opts.hart;
	if (!rc)
		trace_tracerv_layout_of(r, &s->lay);
	trace_close(r);
	return rc;
}

static int map_file(struct trace_split *s, const char *path, struct oob_err *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	if (fd < 0)
		return oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		rc = nosplit(err, path, "not a regular file with data");
	} else {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			rc = nosplit(err, path, "it cannot be mapped");
		} else {
			s->map = m;
			s->size = (uint64_t)st.st_size;
			madvise(m, s->size, MADV_SEQUENTIAL);
		}
	}
	close(fd);
	return rc;
}

struct trace_split *trace_split_open(const char *path, const struct trace_opts *opts,
				     uint64_t records_per_piece, struct oob_err *err)
{
	struct trace_opts none = {0};
	const struct trace_opts *o = opts ? opts : &none;
	if (o->in.more || o->in.max_bytes || o->in.tail_may_be_cut || o->base_clock ||
	    (o->format != TRACE_FMT_AUTO && o->format != TRACE_FMT_TRACERV_BIN)) {
		oob_err_set(err, -ENOTSUP, "%s: read sequentially: a stream, a cap or a format",
			    path);
		return NULL;
	}
	struct trace_split *s = oob_xcalloc(1, sizeof(*s));
	s->name = oob_xstrdup(path);
	int rc = map_file(s, path, err);
	if (!rc)
		rc = probe(s, path, o, err);
	if (!rc && s->lz4)
		rc = list_frames(s, err);
	else if (!rc && (s->size - s->data_off) % s->lay.rec_bytes)
		rc = nosplit(err, path, "the last record is not whole");
	if (rc) {
		trace_split_close(s);
		return NULL;
	}
	uint64_t per = records_per_piece / s->lay.slots;
	per = per ? per : 1;
	if (s->lz4)
		cut_frames(s, per * s->lay.rec_bytes);
	else
		cut_raw(s, per);
	/* the walk over the frames' headers mapped a page or more of each
	 * (fault-around): not the process's memory until a piece is read */
	madvise((void *)s->map, s->size, MADV_DONTNEED);
	return s;
}

void trace_split_close(struct trace_split *s)
{
	if (!s)
		return;
	if (s->map)
		munmap((void *)s->map, s->size);
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
	if (k < s->np)
		n = s->lz4 ? (s->f[s->p[k].f0].doff + s->p[k].skip - s->data_off) / s->lay.rec_bytes
			   : (s->p[k].off - s->data_off) / s->lay.rec_bytes;
	return n * s->lay.slots;
}

void trace_split_cur_start(const struct trace_split *s, size_t k, struct trace_split_cur *c)
{
	const struct piece *p = &s->p[k];
	if (!c->pc) {
		c->pc = oob_xmalloc((TRACE_BATCH_MAX + 8) * sizeof(*c->pc));
		c->cycle = oob_xmalloc((TRACE_BATCH_MAX + 8) * sizeof(*c->cycle));
	}
	c->piece = k;
	c->frame = p->f0;
	c->p = s->lz4 ? NULL : s->map + p->off;
	c->left = s->lz4 ? 0 : (size_t)p->len;
}

/* The next frame's content after the partial record left: 0, 1 = no frame
 * left, or a negative errno. */
static int inflate_next(const struct trace_split *s, struct trace_split_cur *c, struct oob_err *err)
{
	const struct piece *p = &s->p[c->piece];
	if (c->frame >= p->f0 + p->nf)
		return 1;
	const struct frame *f = &s->f[c->frame];
	size_t keep = c->left, skip = c->frame == p->f0 ? (size_t)p->skip : 0;
	if (!c->dctx &&
	    LZ4F_isError(LZ4F_createDecompressionContext((LZ4F_dctx **)&c->dctx, LZ4F_VERSION)))
		return oob_err_set(err, -ENOMEM, "lz4: cannot create a decompression context");
	if (keep + f->dlen > c->rawcap) {
		uint8_t *n = oob_xmalloc(keep + (size_t)f->dlen);
		if (keep)
			memcpy(n, c->p, keep);
		free(c->raw);
		c->raw = n;
		c->rawcap = keep + (size_t)f->dlen;
	} else if (keep) {
		memmove(c->raw, c->p, keep);
	}
	size_t src = (size_t)f->zlen, dst = (size_t)f->dlen;
	LZ4F_resetDecompressionContext(c->dctx);
	size_t r = LZ4F_decompress(c->dctx, c->raw + keep, &dst, s->map + f->zoff, &src, NULL);
	if (LZ4F_isError(r) || r != 0 || dst != f->dlen || src != f->zlen)
		return oob_err_set(err, -EINVAL,
				   "%s: corrupt LZ4 frame at byte %" PRIu64
				   " (content byte %" PRIu64 "): %s",
				   s->name, f->zoff, f->doff,
				   LZ4F_isError(r) ? LZ4F_getErrorName(r)
						   : "its content is not its declared size");
	c->frame++;
	if (skip) /* the header line: only in the first frame, before any record */
		memmove(c->raw, c->raw + skip, (size_t)f->dlen - skip);
	c->p = c->raw;
	c->left = keep + (size_t)f->dlen - skip;
	return 0;
}

long trace_split_cur_next(const struct trace_split *s, struct trace_split_cur *c,
			  struct oob_err *err)
{
	const size_t rb = s->lay.rec_bytes, most = TRACE_BATCH_MAX / s->lay.slots;
	for (;;) {
		while (c->left < rb && s->lz4) {
			int rc = inflate_next(s, c, err);
			if (rc < 0)
				return rc;
			if (rc)
				break;
		}
		size_t nrec = c->left / rb < most ? c->left / rb : most;
		if (!nrec) {
			trace_split_drop(s, c->piece);
			return 0;
		}
		uint32_t n = trace_tracerv_decode(c->p, nrec, c->pc, c->cycle, &s->lay);
		c->p += nrec * rb;
		c->left -= nrec * rb;
		if (n)
			return n;
	}
}

void trace_split_drop(const struct trace_split *s, size_t k)
{
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct piece *p = &s->p[k];
	/* whole pages only: the pieces beside may be being read */
	uint64_t a = (p->off + pg - 1) / pg * pg, b = (p->off + p->len) / pg * pg;
	if (b > a)
		madvise((void *)(s->map + a), b - a, MADV_DONTNEED);
}

void trace_split_cur_free(struct trace_split_cur *c)
{
	free(c->pc);
	free(c->cycle);
	free(c->raw);
	LZ4F_freeDecompressionContext(c->dctx);
	memset(c, 0, sizeof(*c));
}
