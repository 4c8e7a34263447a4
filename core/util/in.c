#include "util/in.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/lz4par.h"
#include "util/oob_mem.h"

/* The window buffer holds 4 windows so that the unconsumed tail (< 1 window)
 * is moved rarely and every read() asks for at least 3 MiB: measured, big
 * reads beat small cache-sized ones here. */
enum { BUF_CAP = 4 * IN_WINDOW, ZBUF_CAP = IN_WINDOW };

enum in_src { SRC_FD, SRC_MEM, SRC_SUB };

struct in_stream {
	enum in_src src;
	int fd;
	const uint8_t *mem;
	size_t mem_len, mem_pos;
	int borrowed; /* buf is the caller's (in_open_mem_in_place) */
	struct in_stream *under;
	char *name;
	struct in_opts o;
	uint8_t *buf; /* decompressed window: unconsumed bytes are [pos, len) */
	size_t pos, len, cap;
	uint64_t base; /* stream offset of buf[0] */
	/* raw bytes read: written by lz4par's reader thread in parallel mode,
	 * read for progress by the caller's */
	_Atomic uint64_t raw;
	uint64_t lineno;
	uint64_t line_off; /* of the line in_getline returned last */
	int unterminated;  /* ... which ended the stream without its '\n' */
	uint64_t cut_tail; /* cut last records dropped (in_drop_cut_tail) */
	int eof;
	struct oob_err sticky;
	/* LZ4 */
	int lz4;
	LZ4F_dctx *dctx;
	uint8_t *zbuf;
	size_t zpos, zlen;
	size_t hint;	     /* last LZ4F_decompress result: 0 = between frames */
	struct lz4par *par;  /* parallel decompression, else NULL */
	const uint8_t *pcur; /* ... its bytes not yet copied into buf */
	size_t npcur;
	uint64_t zoff;
};

static int fail(struct in_stream *s, struct oob_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Records a sticky error: a stream that failed keeps failing the same way. */
static int fail(struct in_stream *s, struct oob_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	s->sticky.code = code;
	vsnprintf(s->sticky.msg, sizeof(s->sticky.msg), fmt, ap);
	va_end(ap);
	if (err)
		*err = s->sticky;
	return code;
}

static long read_fd(struct in_stream *s, uint8_t *dst, size_t n, struct oob_err *err)
{
	for (;;) {
		ssize_t k = read(s->fd, dst, n);
		if (k > 0)
			return k;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return fail(s, err, -errno, "%s: read error at byte %" PRIu64 ": %s",
				    s->name, s->raw, strerror(errno));
		if (!s->o.more)
			return 0;
		int m = s->o.more(s->o.more_ctx);
		if (m == 0)
			return 0;
		if (m < 0)
			return fail(s, err, m, "%s: input abandoned at byte %" PRIu64, s->name,
				    s->raw);
	}
}

/* Up to n raw (maybe compressed) bytes from the source; 0 at its end. */
static long raw_read(struct in_stream *s, uint8_t *dst, size_t n, struct oob_err *err)
{
	long k = 0;
	if (s->src == SRC_FD) {
		k = read_fd(s, dst, n, err);
	} else if (s->src == SRC_MEM) {
		k = (long)(s->mem_len - s->mem_pos < n ? s->mem_len - s->mem_pos : n);
		memcpy(dst, s->mem + s->mem_pos, (size_t)k);
		s->mem_pos += (size_t)k;
	} else {
		const uint8_t *p = NULL;
		struct oob_err e2;
		k = in_peek(s->under, &p, n, &e2);
		if (k < 0)
			return fail(s, err, (int)k, "%s", e2.msg);
		memcpy(dst, p, (size_t)k);
		in_consume(s->under, (size_t)k);
	}
	if (k > 0)
		s->raw += (uint64_t)k;
	return k;
}

static int lz4_step(struct in_stream *s, size_t space, struct oob_err *err)
{
	if (s->zpos == s->zlen) {
		long k = raw_read(s, s->zbuf, ZBUF_CAP, err);
		if (k < 0)
			return (int)k;
		if (k == 0) {
			if (s->hint && in_drop_cut_tail(s)) {
				s->eof = 1; /* what decompressed so far is the stream */
				return 0;
			}
			if (s->hint)
				return fail(s, err, -EINVAL,
					    "%s: truncated LZ4 frame at compressed byte %" PRIu64
					    " (decompressed byte %" PRIu64 ")",
					    s->name, s->zoff, s->base + s->len);
			s->eof = 1;
			return 0;
		}
		s->zpos = 0;
		s->zlen = (size_t)k;
	}
	size_t dsz = space, ssz = s->zlen - s->zpos;
	size_t r = LZ4F_decompress(s->dctx, s->buf + s->len, &dsz, s->zbuf + s->zpos, &ssz, NULL);
	if (LZ4F_isError(r))
		return fail(s, err, -EINVAL,
			    "%s: corrupt LZ4 data near compressed byte %" PRIu64
			    " (decompressed byte %" PRIu64 "): %s",
			    s->name, s->zoff, s->base + s->len, LZ4F_getErrorName(r));
	if (!dsz && !ssz)
		return fail(s, err, -EINVAL, "%s: LZ4 decoder stalled at compressed byte %" PRIu64,
			    s->name, s->zoff);
	s->zpos += ssz;
	s->zoff += ssz;
	s->len += dsz;
	s->hint = r;
	return 0;
}

/* lz4par's reader thread: the raw bytes, touching nothing the caller's
 * thread reads but the atomic count (errors go to err only). */
static long par_read(void *ctx, uint8_t *dst, size_t n, struct oob_err *err)
{
	struct in_stream *s = ctx;
	long k;
	if (s->src == SRC_MEM) {
		k = (long)(s->mem_len - s->mem_pos < n ? s->mem_len - s->mem_pos : n);
		memcpy(dst, s->mem + s->mem_pos, (size_t)k);
		s->mem_pos += (size_t)k;
	} else if (s->src == SRC_SUB) {
		const uint8_t *p = NULL;
		if ((k = in_peek(s->under, &p, n, err)) < 0)
			return k;
		memcpy(dst, p, (size_t)k);
		in_consume(s->under, (size_t)k);
	} else {
		while ((k = read(s->fd, dst, n)) < 0 && errno == EINTR)
			;
		if (k < 0)
			return oob_err_set(err, -errno, "%s: read error at byte %" PRIu64 ": %s",
					   s->name, (uint64_t)s->raw, strerror(errno));
	}
	s->raw += (uint64_t)k;
	return k;
}

/* Parallel mode: the next decompressed bytes into the window. */
static int par_step(struct in_stream *s, size_t space, struct oob_err *err)
{
	if (!s->npcur) {
		struct oob_err e;
		long k = lz4par_next(s->par, &s->pcur, &e);
		if (k < 0)
			return fail(s, err, (int)k, "%s", e.msg);
		if (k == 0) {
			s->eof = 1;
			return 0;
		}
		s->npcur = (size_t)k;
	}
	size_t n = s->npcur < space ? s->npcur : space;
	memcpy(s->buf + s->len, s->pcur, n);
	s->len += n;
	s->pcur += n;
	s->npcur -= n;
	return 0;
}

/* Makes at least want unconsumed bytes available, or reaches the end. */
static int fill(struct in_stream *s, size_t want, struct oob_err *err)
{
	if (s->sticky.code) {
		if (err)
			*err = s->sticky;
		return s->sticky.code;
	}
	while (s->len - s->pos < want && !s->eof) {
		if (s->cap - s->len < IN_WINDOW + 1 && s->pos) {
			memmove(s->buf, s->buf + s->pos, s->len - s->pos);
			s->base += s->pos;
			s->len -= s->pos;
			s->pos = 0;
		}
		int rc = 0;
		if (s->par) {
			rc = par_step(s, s->cap - s->len, err);
		} else if (s->lz4) {
			rc = lz4_step(s, s->cap - s->len, err);
		} else {
			long k = raw_read(s, s->buf + s->len, s->cap - s->len, err);
			if (k < 0)
				rc = (int)k;
			else if (k == 0)
				s->eof = 1;
			else
				s->len += (size_t)k;
		}
		if (rc)
			return rc;
		if (s->o.max_bytes && s->base + s->len > s->o.max_bytes)
			return fail(s, err, -EFBIG, "%s: more than %" PRIu64 " bytes%s", s->name,
				    s->o.max_bytes, s->lz4 ? " once decompressed" : "");
	}
	return 0;
}

/* Reads the first bytes to tell an LZ4 frame from plain data. */
static int prime(struct in_stream *s, int lz4, struct oob_err *err)
{
	size_t n = 0;
	s->zbuf = oob_xmalloc(ZBUF_CAP);
	while (lz4 != 0 && n < IN_LZ4_MAGIC_LEN) {
		long k = raw_read(s, s->zbuf + n, ZBUF_CAP - n, err);
		if (k < 0)
			return (int)k;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	int is_lz4 = lz4 == 1 || (lz4 < 0 && n >= IN_LZ4_MAGIC_LEN &&
				  memcmp(s->zbuf, IN_LZ4_MAGIC, IN_LZ4_MAGIC_LEN) == 0);
	/* a small plain buffer in memory needs no 4 MiB window (fuzzers) */
	s->cap = BUF_CAP;
	if (!is_lz4 && s->src == SRC_MEM && s->mem_len < BUF_CAP)
		s->cap = s->mem_len + 1;
	s->buf = oob_xmalloc(s->cap + IN_PAD);
	memset(s->buf + s->cap, 0, IN_PAD);
	if (is_lz4 && s->o.threads > 1 && !s->o.more && !s->o.tail_may_be_cut) {
		s->lz4 = 1;
		s->par = lz4par_new(s->o.threads, par_read, s, s->zbuf, n, s->name, err);
		return s->par ? 0 : (err ? err->code : -ENOMEM);
	}
	if (is_lz4) {
		if (LZ4F_isError(LZ4F_createDecompressionContext(&s->dctx, LZ4F_VERSION)))
			return fail(s, err, -ENOMEM, "%s: cannot create an LZ4 context", s->name);
		s->lz4 = 1;
		s->zlen = n;
		s->hint = 1;
		return 0;
	}
	memcpy(s->buf, s->zbuf, n);
	s->len = n;
	free(s->zbuf);
	s->zbuf = NULL;
	return 0;
}

static struct in_stream *new_stream(enum in_src src, const char *name, const struct in_opts *opts)
{
	struct in_stream *s = oob_xcalloc(1, sizeof(*s));
	s->src = src;
	s->fd = -1;
	s->name = oob_xstrdup(name ? name : "input");
	if (opts)
		s->o = *opts;
	return s;
}

static struct in_stream *finish_open(struct in_stream *s, int lz4, struct oob_err *err)
{
	if (prime(s, lz4, err) < 0) {
		in_close(s);
		return NULL;
	}
	return s;
}

struct in_stream *in_open(const char *path, const struct in_opts *opts, struct oob_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		oob_err_set(err, -e, "cannot open %s: %s", path, strerror(e));
		return NULL;
	}
	return in_open_fd(fd, path, opts, err);
}

struct in_stream *in_open_fd(int fd, const char *name, const struct in_opts *opts,
			     struct oob_err *err)
{
	struct in_stream *s = new_stream(SRC_FD, name, opts);
	s->fd = fd;
	return finish_open(s, -1, err);
}

struct in_stream *in_open_mem(const void *buf, size_t n, const char *name, struct oob_err *err)
{
	struct in_stream *s = new_stream(SRC_MEM, name, NULL);
	s->mem = buf;
	s->mem_len = n;
	return finish_open(s, -1, err);
}

struct in_stream *in_open_mem_in_place(uint8_t *buf, size_t n, const char *name)
{
	struct in_stream *s = new_stream(SRC_MEM, name, NULL);
	s->borrowed = 1;
	s->buf = buf;
	s->len = s->cap = s->mem_len = n;
	s->eof = 1;
	return s;
}

struct in_stream *in_open_sub(struct in_stream *under, const char *name, int lz4,
			      const struct in_opts *opts, struct oob_err *err)
{
	struct in_stream *s = new_stream(SRC_SUB, name, opts);
	s->under = under;
	s->o.more = NULL;
	return finish_open(s, lz4, err);
}

void in_close(struct in_stream *s)
{
	if (!s)
		return;
	lz4par_free(s->par); /* first: its reader thread reads the source */
	if (s->fd >= 0)
		close(s->fd);
	LZ4F_freeDecompressionContext(s->dctx);
	free(s->zbuf);
	if (!s->borrowed)
		free(s->buf);
	free(s->name);
	free(s);
}

long in_peek(struct in_stream *s, const uint8_t **p, size_t want, struct oob_err *err)
{
	if (want > IN_WINDOW)
		want = IN_WINDOW;
	int rc = fill(s, want, err);
	if (rc)
		return rc;
	size_t have = s->len - s->pos;
	*p = s->buf + s->pos;
	return (long)(have < want ? have : want);
}

void in_consume(struct in_stream *s, size_t n)
{
	size_t have = s->len - s->pos;
	s->pos += n < have ? n : have;
}

long in_getline(struct in_stream *s, const char **line, struct oob_err *err)
{
	size_t scanned = 0;
	for (;;) {
		uint8_t *start = s->buf + s->pos;
		size_t have = s->len - s->pos;
		/* never look further than the longest line, however much
		 * the buffer holds: too long is too long whatever the reads */
		size_t lim = have < IN_WINDOW + 1 ? have : IN_WINDOW + 1;
		uint8_t *nl = lim > scanned ? memchr(start + scanned, '\n', lim - scanned) : NULL;
		size_t n;
		s->line_off = s->base + s->pos;
		s->unterminated = !nl;
		if (nl) {
			n = (size_t)(nl - start);
			s->pos += n + 1;
		} else if (have > IN_WINDOW) {
			return fail(s, err, -EINVAL, "%s: line %" PRIu64 " is longer than %u bytes",
				    s->name, s->lineno + 1, IN_WINDOW);
		} else if (s->eof && !s->sticky.code) {
			if (!have)
				return -1;
			n = have;
			s->pos += n;
		} else {
			scanned = have;
			int rc = fill(s, have + 1, err);
			if (rc)
				return rc;
			continue;
		}
		if (n && start[n - 1] == '\r')
			n--;
		start[n] = '\0';
		s->lineno++;
		*line = (const char *)start;
		return (long)n;
	}
}

uint64_t in_offset(const struct in_stream *s)
{
	return s->base + s->pos;
}

uint64_t in_lineno(const struct in_stream *s)
{
	return s->lineno;
}

int in_line_unterminated(const struct in_stream *s)
{
	return s->unterminated;
}

int in_drop_cut_tail(struct in_stream *s)
{
	if (!s->o.tail_may_be_cut)
		return 0;
	for (; s; s = s->under) /* a body's cut is its file's */
		s->cut_tail++;
	return 1;
}

uint64_t in_cut_tail(const struct in_stream *s)
{
	return s->cut_tail;
}

uint64_t in_line_offset(const struct in_stream *s)
{
	return s->line_off;
}

uint64_t in_raw_bytes(const struct in_stream *s)
{
	return s->raw;
}

int in_is_lz4(const struct in_stream *s)
{
	return s->lz4;
}

const char *in_name(const struct in_stream *s)
{
	return s->name;
}
