/*
 * lz4par: see lz4par.h.
 *
 * DESIGN. A ring of NJ = 2 * threads + 2 job slots, indexed by sequence
 * number modulo NJ, under one mutex:
 *   - the reader thread fills slot w (a whole frame to decompress, a
 *     compressed chunk of a sequential frame, the end, or an error) and
 *     waits while NJ jobs are not yet released by the consumer;
 *   - workers take FRAME jobs in sequence order (next_work) and mark them
 *     done;
 *   - the consumer takes job c when it is done, and releases it on its next
 *     call (the bytes it returned stay valid until then).
 * So frames come out in file order whatever order workers finish in, and
 * at most NJ frames (in + out buffers) exist at once.
 */
#include "util/lz4par.h"

#include <errno.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

enum { LZ4_MAGIC = 0x184D2204, SKIP_MAGIC = 0x184D2A50, CHUNK = 1u << 20 };

enum job_kind { JOB_FRAME, JOB_RAW, JOB_END, JOB_ERR };

struct job {
	enum job_kind kind;
	int ready, done;
	uint8_t *in;
	size_t nin, in_cap, hs; /* FRAME: hs = header size */
	uint8_t *out;
	size_t nout, out_cap;
	uint64_t zoff; /* compressed offset of in[0] */
	/* a failed FRAME: where (compressed; decompressed within the frame) */
	int failed;
	uint64_t err_zoff, err_dlocal;
	char why[160];
	struct oob_err err; /* JOB_ERR */
};

struct lz4par {
	pthread_mutex_t mu;
	pthread_cond_t cv_space, cv_work, cv_done;
	struct job *jobs;
	unsigned nj, nthreads;
	uint64_t w, next_work, c; /* sequence numbers: written, taken, consumed */
	int stop, have_cur, reader_started;
	pthread_t reader, *workers;
	unsigned nstarted;
	char *name;
	/* the reader thread's state */
	lz4par_read_fn rd;
	void *rd_ctx;
	uint8_t *rbuf;
	size_t rpos, rlen, rcap;
	uint64_t rzoff; /* compressed offset of rbuf[rpos] */
	int reof;
	/* the consumer's state */
	LZ4F_dctx *dctx; /* sequential frames (JOB_RAW) */
	uint8_t *sbuf;
	size_t ipos;   /* JOB_RAW: input consumed */
	uint64_t dpos; /* decompressed bytes delivered */
	struct oob_err sticky;
};

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* ---- the reader thread ---- */

/* Makes n bytes available at rbuf + rpos, or as many as remain. Returns the
 * number available or a negative errno (err filled). */
static long need(struct lz4par *p, size_t n, struct oob_err *err)
{
	while (p->rlen - p->rpos < n && !p->reof) {
		if (p->rpos && p->rcap - p->rlen < CHUNK) {
			memmove(p->rbuf, p->rbuf + p->rpos, p->rlen - p->rpos);
			p->rlen -= p->rpos;
			p->rpos = 0;
		}
		if (p->rcap - p->rlen < CHUNK) {
			size_t want = p->rlen + (n > CHUNK ? n : CHUNK);
			p->rcap = want > 2 * p->rcap ? want : 2 * p->rcap;
			p->rbuf = oob_xrealloc(p->rbuf, p->rcap);
		}
		long k = p->rd(p->rd_ctx, p->rbuf + p->rlen, p->rcap - p->rlen, err);
		if (k < 0)
			return k;
		if (k == 0)
			p->reof = 1;
		p->rlen += (size_t)k;
	}
	size_t have = p->rlen - p->rpos;
	return (long)(have < n ? have : n);
}

/* Waits for a free slot; NULL when stopping. */
static struct job *slot_get(struct lz4par *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->stop && p->w - p->c >= p->nj)
		pthread_cond_wait(&p->cv_space, &p->mu);
	struct job *j = p->stop ? NULL : &p->jobs[p->w % p->nj];
	pthread_mutex_unlock(&p->mu);
	return j;
}

static void slot_put(struct lz4par *p, struct job *j)
{
	pthread_mutex_lock(&p->mu);
	j->ready = 1;
	j->done = j->kind != JOB_FRAME;
	j->failed = 0;
	p->w++;
	pthread_cond_broadcast(j->done ? &p->cv_done : &p->cv_work);
	pthread_mutex_unlock(&p->mu);
}

/* Hands rbuf[rpos, rpos + n) on as a job of kind k; 0 or -1 (stopping). */
static int emit(struct lz4par *p, enum job_kind k, size_t n, size_t hs, uint64_t content)
{
	struct job *j = slot_get(p);
	if (!j)
		return -1;
	if (j->in_cap < n) {
		free(j->in);
		j->in_cap = n;
		j->in = oob_xmalloc(n);
	}
	memcpy(j->in, p->rbuf + p->rpos, n);
	j->kind = k;
	j->nin = n;
	j->hs = hs;
	j->zoff = p->rzoff;
	j->nout = (size_t)content;
	p->rpos += n;
	p->rzoff += n;
	slot_put(p, j);
	return 0;
}

static void emit_err(struct lz4par *p, enum job_kind k, const struct oob_err *e)
{
	struct job *j = slot_get(p);
	if (!j)
		return;
	j->kind = k;
	j->nin = 0;
	if (e)
		j->err = *e;
	slot_put(p, j);
}

static int bad(struct lz4par *p, int code, struct oob_err *e, const char *why, uint64_t at)
{
	return oob_err_set(e, code, "%s: %s at compressed byte %" PRIu64, p->name, why, at);
}

/* Walks the blocks of the frame at rpos whose header is hs bytes. With
 * whole, they are accumulated in rbuf and *size is the frame's size; else
 * each block is emitted as it comes (a sequential frame). 0, -1 (stopping)
 * or a negative errno. */
static int walk_blocks(struct lz4par *p, size_t hs, int whole, size_t *size, struct oob_err *e)
{
	const uint8_t flg = p->rbuf[p->rpos + 4], bd = p->rbuf[p->rpos + 5];
	const size_t bchk = flg >> 4 & 1 ? 4 : 0, cchk = flg >> 2 & 1 ? 4 : 0;
	const unsigned bsid = bd >> 4 & 7;
	if (bsid < 4)
		return bad(p, -EINVAL, e, "invalid LZ4 block size id in the frame", p->rzoff);
	const size_t bmax = (size_t)1 << (8 + 2 * bsid);
	size_t off = hs;
	if (!whole) {
		if (emit(p, JOB_RAW, hs, 0, 0))
			return -1;
		off = 0;
	}
	for (;;) {
		long k = need(p, off + 4, e);
		if (k < 0)
			return (int)k;
		if ((size_t)k < off + 4)
			return bad(p, -EPIPE, e, "truncated LZ4 frame", p->rzoff + (uint64_t)k);
		uint32_t bs = le32(p->rbuf + p->rpos + off);
		size_t len = bs ? (bs & 0x7fffffffu) + bchk : cchk;
		if ((bs & 0x7fffffffu) > bmax)
			return bad(p, -EINVAL, e, "corrupt LZ4 block size", p->rzoff + off);
		k = need(p, off + 4 + len, e);
		if (k < 0)
			return (int)k;
		if ((size_t)k < off + 4 + len)
			return bad(p, -EPIPE, e, "truncated LZ4 frame", p->rzoff + (uint64_t)k);
		off += 4 + len;
		if (whole && off > 2 * (size_t)LZ4PAR_FRAME_MAX + CHUNK)
			return bad(p, -EINVAL, e, "LZ4 frame larger than its content size allows",
				   p->rzoff);
		if (!whole) {
			if (emit(p, JOB_RAW, off, 0, 0))
				return -1;
			off = 0;
		}
		if (!bs)
			break;
	}
	*size = off;
	return 0;
}

/* One frame (or skippable frame) at rpos. 1 = done, 0 = the end, -1 =
 * stopping, or a negative errno. */
static int next_frame(struct lz4par *p, struct oob_err *e)
{
	long k = need(p, 4, e);
	if (k <= 0)
		return (int)k;
	if (k < 4)
		return bad(p, -EPIPE, e, "truncated LZ4 frame", p->rzoff);
	uint32_t magic = le32(p->rbuf + p->rpos);
	if ((magic & 0xfffffff0u) == SKIP_MAGIC) {
		if ((k = need(p, 8, e)) < 0)
			return (int)k;
		uint64_t n = 8 + (uint64_t)le32(p->rbuf + p->rpos + 4);
		if ((k = need(p, n, e)) < 0)
			return (int)k;
		if ((uint64_t)k < n)
			return bad(p, -EPIPE, e, "truncated skippable LZ4 frame", p->rzoff);
		p->rpos += n;
		p->rzoff += n;
		return 1;
	}
	if (magic != LZ4_MAGIC)
		return bad(p, -EINVAL, e, "not an LZ4 frame (bad magic number)", p->rzoff);
	if ((k = need(p, LZ4F_HEADER_SIZE_MAX, e)) < 0)
		return (int)k;
	size_t hs = LZ4F_headerSize(p->rbuf + p->rpos, (size_t)k);
	if (LZ4F_isError(hs))
		return bad(p, -EINVAL, e, "corrupt LZ4 frame header", p->rzoff);
	if ((size_t)k < hs)
		return bad(p, -EPIPE, e, "truncated LZ4 frame header", p->rzoff);
	const uint8_t flg = p->rbuf[p->rpos + 4];
	uint64_t content = flg >> 3 & 1 ? le64(p->rbuf + p->rpos + 6) : UINT64_MAX;
	int whole = content <= LZ4PAR_FRAME_MAX;
	size_t size = 0;
	int rc = walk_blocks(p, hs, whole, &size, e);
	if (rc)
		return rc;
	if (whole && emit(p, JOB_FRAME, size, hs, content))
		return -1;
	return 1;
}

static void *reader_main(void *arg)
{
	struct lz4par *p = arg;
	struct oob_err e;
	int rc;
	oob_err_clear(&e);
	while ((rc = next_frame(p, &e)) > 0)
		;
	if (rc == 0)
		emit_err(p, JOB_END, NULL);
	else if (rc < -1)
		emit_err(p, JOB_ERR, &e);
	return NULL;
}

/* ---- workers ---- */

/* Feeds one piece of the frame to the context; 0 or -1 (why filled). */
static int feed(LZ4F_dctx *d, struct job *j, size_t from, size_t to)
{
	const uint8_t *src = j->in + from;
	size_t left = to - from;
	while (left) {
		size_t s = left, dsz = j->out_cap - j->nout;
		size_t r = LZ4F_decompress(d, j->out + j->nout, &dsz, src, &s, NULL);
		if (LZ4F_isError(r) || (!s && !dsz)) {
			snprintf(j->why, sizeof(j->why), "%s",
				 LZ4F_isError(r) ? LZ4F_getErrorName(r)
						 : "more content than the frame declares");
			j->err_zoff = j->zoff + from;
			j->err_dlocal = j->nout;
			return -1;
		}
		j->nout += dsz;
		src += s;
		left -= s;
	}
	return 0;
}

/* Decompresses a whole frame block by block, so that a failure names its
 * block. */
static void decompress_frame(LZ4F_dctx *d, struct job *j)
{
	size_t content = j->nout, off = j->hs;
	const size_t bchk = j->in[4] >> 4 & 1 ? 4 : 0;
	if (j->out_cap < content || !j->out) {
		free(j->out);
		j->out_cap = content ? content : 1;
		j->out = oob_xmalloc(j->out_cap);
	}
	j->nout = 0;
	LZ4F_resetDecompressionContext(d);
	if (feed(d, j, 0, off))
		goto fail;
	while (off < j->nin) {
		uint32_t bs = le32(j->in + off);
		size_t end = bs ? off + 4 + (bs & 0x7fffffffu) + bchk : j->nin;
		if (feed(d, j, off, end))
			goto fail;
		off = end;
	}
	if (j->nout != content) {
		snprintf(j->why, sizeof(j->why), "%zu bytes decompressed, %zu declared", j->nout,
			 content);
		j->err_zoff = j->zoff;
		j->err_dlocal = j->nout;
		goto fail;
	}
	return;
fail:
	j->failed = 1;
}

static void *worker_main(void *arg)
{
	struct lz4par *p = arg;
	LZ4F_dctx *d = NULL;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
		d = NULL;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop) {
			/* jobs before the consumer's are consumed (RAW ones go
			 * by without workers) and their slots may hold newer
			 * jobs: skip them, after every wait too */
			if (p->next_work < p->c)
				p->next_work = p->c;
			if (p->next_work == p->w)
				pthread_cond_wait(&p->cv_work, &p->mu);
			else if (p->jobs[p->next_work % p->nj].kind == JOB_FRAME)
				break;
			else
				p->next_work++; /* not a worker's job */
		}
		if (p->stop)
			break;
		struct job *j = &p->jobs[p->next_work++ % p->nj];
		pthread_mutex_unlock(&p->mu);
		if (d) {
			decompress_frame(d, j);
		} else {
			j->failed = 1;
			j->err_zoff = j->zoff;
			snprintf(j->why, sizeof(j->why), "cannot create an LZ4 context");
		}
		pthread_mutex_lock(&p->mu);
		j->done = 1;
		pthread_cond_broadcast(&p->cv_done);
	}
	pthread_mutex_unlock(&p->mu);
	LZ4F_freeDecompressionContext(d);
	return NULL;
}

/* ---- the consumer ---- */

static long fail(struct lz4par *p, const struct oob_err *e, struct oob_err *err)
{
	p->sticky = *e;
	if (err)
		*err = *e;
	return e->code;
}

/* A sequential frame's chunk through the consumer's own context. */
static long raw_next(struct lz4par *p, struct job *j, const uint8_t **out, struct oob_err *err)
{
	while (p->ipos < j->nin) {
		size_t s = j->nin - p->ipos, dsz = CHUNK;
		size_t r = LZ4F_decompress(p->dctx, p->sbuf, &dsz, j->in + p->ipos, &s, NULL);
		if (LZ4F_isError(r) || (!s && !dsz)) {
			struct oob_err e;
			oob_err_set(&e, -EINVAL,
				    "%s: corrupt LZ4 data near compressed byte %" PRIu64
				    " (decompressed byte %" PRIu64 "): %s",
				    p->name, j->zoff + p->ipos, p->dpos,
				    LZ4F_isError(r) ? LZ4F_getErrorName(r) : "decoder stalled");
			return fail(p, &e, err);
		}
		p->ipos += s;
		if (dsz) {
			*out = p->sbuf;
			return (long)dsz;
		}
	}
	return -1; /* chunk used up */
}

long lz4par_next(struct lz4par *p, const uint8_t **out, struct oob_err *err)
{
	if (p->sticky.code)
		return fail(p, &p->sticky, err);
	for (;;) {
		pthread_mutex_lock(&p->mu);
		struct job *j = &p->jobs[p->c % p->nj];
		if (p->have_cur && j->kind != JOB_RAW) {
			/* the frame returned last time is used: release it */
			p->have_cur = 0;
			p->c++;
			pthread_cond_broadcast(&p->cv_space);
			j = &p->jobs[p->c % p->nj];
		}
		while (!(p->c < p->w && j->done))
			pthread_cond_wait(&p->cv_done, &p->mu);
		pthread_mutex_unlock(&p->mu);
		if (j->kind == JOB_END)
			return 0;
		if (j->kind == JOB_ERR)
			return fail(p, &j->err, err);
		if (j->kind == JOB_FRAME) {
			if (j->failed) {
				struct oob_err e;
				oob_err_set(&e, -EINVAL,
					    "%s: corrupt LZ4 block at compressed byte %" PRIu64
					    " (decompressed byte %" PRIu64 "): %s",
					    p->name, j->err_zoff, p->dpos + j->err_dlocal, j->why);
				return fail(p, &e, err);
			}
			p->have_cur = 1;
			p->dpos += j->nout;
			if (!j->nout)
				continue;
			*out = j->out;
			return (long)j->nout;
		}
		if (!p->have_cur) {
			p->have_cur = 1;
			p->ipos = 0;
		}
		long k = raw_next(p, j, out, err);
		if (k != -1) {
			if (k > 0)
				p->dpos += (uint64_t)k;
			return k;
		}
		pthread_mutex_lock(&p->mu); /* the chunk is used up */
		p->have_cur = 0;
		p->c++;
		pthread_cond_broadcast(&p->cv_space);
		pthread_mutex_unlock(&p->mu);
	}
}

/* ---- setup ---- */

struct lz4par *lz4par_new(unsigned threads, lz4par_read_fn rd, void *ctx, const uint8_t *first,
			  size_t nfirst, const char *name, struct oob_err *err)
{
	struct lz4par *p = oob_xcalloc(1, sizeof(*p));
	if (threads < 1)
		threads = 1;
	if (threads > 64)
		threads = 64;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_space, NULL);
	pthread_cond_init(&p->cv_work, NULL);
	pthread_cond_init(&p->cv_done, NULL);
	p->nthreads = threads;
	p->nj = 2 * threads + 2;
	p->jobs = oob_xcalloc(p->nj, sizeof(*p->jobs));
	p->name = oob_xstrdup(name ? name : "input");
	p->rd = rd;
	p->rd_ctx = ctx;
	p->rcap = nfirst + CHUNK;
	p->rbuf = oob_xmalloc(p->rcap);
	if (nfirst)
		memcpy(p->rbuf, first, nfirst);
	p->rlen = nfirst;
	p->sbuf = oob_xmalloc(CHUNK);
	p->workers = oob_xcalloc(threads, sizeof(*p->workers));
	if (LZ4F_isError(LZ4F_createDecompressionContext(&p->dctx, LZ4F_VERSION))) {
		oob_err_set(err, -ENOMEM, "%s: cannot create an LZ4 context", p->name);
		lz4par_free(p);
		return NULL;
	}
	for (; p->nstarted < threads; p->nstarted++)
		if (pthread_create(&p->workers[p->nstarted], NULL, worker_main, p))
			break;
	int rc = p->nstarted ? pthread_create(&p->reader, NULL, reader_main, p) : EAGAIN;
	if (rc) {
		oob_err_set(err, -rc, "%s: cannot start LZ4 decompression threads", p->name);
		lz4par_free(p);
		return NULL;
	}
	p->reader_started = 1;
	return p;
}

void lz4par_free(struct lz4par *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = 1;
	pthread_cond_broadcast(&p->cv_space);
	pthread_cond_broadcast(&p->cv_work);
	pthread_mutex_unlock(&p->mu);
	if (p->reader_started)
		pthread_join(p->reader, NULL);
	for (unsigned k = 0; k < p->nstarted; k++)
		pthread_join(p->workers[k], NULL);
	for (unsigned k = 0; k < p->nj; k++) {
		free(p->jobs[k].in);
		free(p->jobs[k].out);
	}
	LZ4F_freeDecompressionContext(p->dctx);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv_space);
	pthread_cond_destroy(&p->cv_work);
	pthread_cond_destroy(&p->cv_done);
	free(p->jobs);
	free(p->workers);
	free(p->rbuf);
	free(p->sbuf);
	free(p->name);
	free(p);
}
