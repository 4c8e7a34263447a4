#include "util/oob_io.h"
#include "recon/evidx.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace/oobt.h"
#include "util/oob_mem.h"

#define HEADER	    32
#define TAIL	    32
#define HART_U64    7
#define BUF_SIZE    (256 * 1024)
#define VARINT_MAX  10
#define MAX_HARTS   65536
#define TAG_BLOCK   1 /* records without cycles */
#define TAG_BLOCK_C 2 /* records with cycles, varint deltas (OOBIDX1; read only) */
#define TAG_CKP	    3
#define TAG_BLOCK_P 4 /* records with cycles, bit-packed deltas */
#define F_CYCLES    1u
#define F_SEEN	    2u /* a batch was seen (F_CYCLES means something) */

static const char magic[8] = "OOBIDX2", tail_magic[8] = "OOBIDXE";

/* ---- writing ---- */

struct whart {
	uint64_t events, insn, cycle, seq; /* last event's stamps */
	uint64_t first_cycle, first_seq;
	uint64_t records, tlast, last_rec_cycle;
	uint32_t *stk;
	size_t n, cap;
};

struct evidx_writer {
	int fd, err;
	struct evlog *log;
	uint64_t every, next_ckp, records, body;
	unsigned flags;
	struct whart *h;
	size_t nh;
	uint64_t *dir; /* checkpoints' file offsets */
	size_t ndir, cap_dir;
	size_t used;
	uint8_t *buf;
	uint64_t delta[TRACE_BATCH_MAX];
	uint8_t scratch[BUF_SIZE];
};

struct evidx_writer *evidx_writer_new(const char *path, struct evlog *log, uint64_t every,
				      struct oob_err *err)
{
	int fd;
	if (path) {
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	} else {
		const char *dir = getenv("TMPDIR");
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s/oobprof-evidx-XXXXXX", dir && *dir ? dir : "/tmp");
		if ((fd = mkostemp(tmp, O_CLOEXEC)) >= 0)
			unlink(tmp);
	}
	if (fd < 0) {
		oob_err_set(err, -errno, "event index %s: %s", path ? path : "(temporary)",
			    strerror(errno));
		return NULL;
	}
	struct evidx_writer *w = oob_xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->log = log;
	w->every = every ? every : EVIDX_EVERY_DEFAULT;
	w->buf = oob_xmalloc(BUF_SIZE);
	return w;
}

static struct whart *whart_get(struct evidx_writer *w, unsigned hart)
{
	if (hart >= w->nh) {
		w->h = oob_xrealloc(w->h, ((size_t)hart + 1) * sizeof(*w->h));
		memset(w->h + w->nh, 0, ((size_t)hart + 1 - w->nh) * sizeof(*w->h));
		w->nh = (size_t)hart + 1;
	}
	return &w->h[hart];
}

static void wflush(struct evidx_writer *w)
{
	if (!w->used || w->err)
		return;
	int rc = oob_pwrite_all(w->fd, w->buf, w->used, HEADER + w->body);
	if (rc < 0)
		w->err = rc;
	else
		w->body += w->used;
	w->used = 0;
}

/* Appends n bytes (at most BUF_SIZE) to the body. */
static void wput(struct evidx_writer *w, const uint8_t *p, size_t n)
{
	if (w->used + n > BUF_SIZE)
		wflush(w);
	memcpy(w->buf + w->used, p, n);
	w->used += n;
}

void evidx_event(void *ctx, const struct recon_event *ev)
{
	struct evidx_writer *w = ctx;
	struct whart *h = whart_get(w, ev->hart);
	if (!h->events) {
		h->first_cycle = ev->cycle;
		h->first_seq = ev->seq;
	}
	h->events++;
	h->insn = ev->insn;
	h->cycle = ev->cycle;
	h->seq = ev->seq;
	if (ev->kind == RECON_EV_OPEN) {
		oob_xgrow((void **)&h->stk, &h->cap, h->n + 1, sizeof(*h->stk));
		h->stk[h->n++] = ev->frame;
	} else if (h->n) {
		h->n--;
	}
	evlog_record(w->log, ev);
}

/* A checkpoint: written whole (tag, length, payload) so a scan skips it. */
static void checkpoint(struct evidx_writer *w)
{
	uint64_t off, count, seq;
	evlog_tell(w->log, &off, &count, &seq);
	uint8_t *p = w->scratch, *end = w->scratch + sizeof(w->scratch);
	p = oobt_put_varint(p, off);
	p = oobt_put_varint(p, count);
	p = oobt_put_varint(p, seq);
	p = oobt_put_varint(p, w->nh);
	for (size_t i = 0; i < w->nh; i++) {
		const struct whart *h = &w->h[i];
		uint64_t v[7] = {h->events, h->insn, h->cycle, h->seq, h->records, h->tlast, h->n};
		if ((size_t)(end - p) < (7 + h->n) * VARINT_MAX) {
			w->err = w->err ? w->err : -E2BIG; /* stacks too deep to keep */
			return;
		}
		for (int k = 0; k < 7; k++)
			p = oobt_put_varint(p, v[k]);
		for (size_t d = 0; d < h->n; d++)
			p = oobt_put_varint(p, h->stk[d]);
	}
	uint8_t head[2 * VARINT_MAX], *q = head;
	q = oobt_put_varint(q, TAG_CKP);
	q = oobt_put_varint(q, (uint64_t)(p - w->scratch));
	wput(w, head, (size_t)(q - head));
	oob_xgrow((void **)&w->dir, &w->cap_dir, w->ndir + 1, sizeof(*w->dir));
	w->dir[w->ndir++] = HEADER + w->body + w->used;
	wput(w, w->scratch, (size_t)(p - w->scratch));
}

static unsigned bits_of(uint64_t v)
{
	return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

/* The width that packs d[0..n) smallest, the values wider than it going to
 * the exception list at about 2 + their varint bytes each: a stall among
 * single-cycle steps costs one exception, not a wider slot for all. */
static unsigned pack_width(const uint64_t *d, uint32_t n)
{
	uint64_t count[65] = {0}, bytes[65] = {0};
	for (uint32_t i = 0; i < n; i++) {
		unsigned b = bits_of(d[i]);
		count[b]++;
		bytes[b] += 2 + (b + 6) / 7;
	}
	uint64_t best = UINT64_MAX, wider = 0;
	unsigned k = 64;
	for (int w = 64; w >= 0; w--) {
		uint64_t cost = ((uint64_t)n * (unsigned)w + 7) / 8 + wider;
		if (cost <= best) {
			best = cost;
			k = (unsigned)w;
		}
		wider += bytes[w];
	}
	return k;
}

/* LSB-first bits into bytes; fewer than 8 bits pending between calls. */
struct bitw {
	uint8_t *p;
	uint64_t acc;
	unsigned nbits;
};

static void put_bits(struct bitw *bw, uint64_t v, unsigned k)
{
	bw->acc |= v << bw->nbits;
	for (bw->nbits += k; bw->nbits >= 8; bw->nbits -= 8, bw->acc >>= 8)
		*bw->p++ = (uint8_t)bw->acc;
}

/* A block's cycles (TAG_BLOCK_P, docs/formats/EVIDX.md): first and largest
 * cycle, then the n - 1 deltas (cycle - previous; zigzagged when one is
 * negative) packed at k bits, LSB first, those wider than k as exceptions
 * (index gap, value) before them. */
static uint8_t *put_cycles(struct evidx_writer *w, uint8_t *p, const uint64_t *cyc, uint32_t n)
{
	uint64_t max = cyc[0];
	int zz = 0;
	for (uint32_t i = 1; i < n; i++) {
		zz |= cyc[i] < cyc[i - 1];
		max = cyc[i] > max ? cyc[i] : max;
	}
	for (uint32_t i = 1; i < n; i++)
		w->delta[i - 1] =
		    zz ? oobt_zz((int64_t)(cyc[i] - cyc[i - 1])) : cyc[i] - cyc[i - 1];
	unsigned k = pack_width(w->delta, n - 1);
	uint64_t ne = 0, lim = k == 64 ? UINT64_MAX : (1ull << k) - 1;
	for (uint32_t i = 0; i + 1 < n; i++)
		ne += w->delta[i] > lim;
	p = oobt_put_varint(p, cyc[0]);
	p = oobt_put_varint(p, max);
	p = oobt_put_varint(p, (uint64_t)k << 1 | (uint64_t)zz);
	p = oobt_put_varint(p, ne);
	for (uint32_t i = 0, last = 0; i + 1 < n; i++)
		if (w->delta[i] > lim) {
			p = oobt_put_varint(p, i - last);
			p = oobt_put_varint(p, w->delta[i]);
			last = i + 1;
		}
	struct bitw bw = {p, 0, 0};
	for (uint32_t i = 0; i + 1 < n; i++) {
		uint64_t v = w->delta[i] > lim ? 0 : w->delta[i];
		if (k > 56) { /* the accumulator holds 7 pending bits + 57 */
			put_bits(&bw, v & 0xffffffffu, 32);
			put_bits(&bw, v >> 32, k - 32);
		} else {
			put_bits(&bw, v, k);
		}
	}
	if (bw.nbits)
		*bw.p++ = (uint8_t)bw.acc;
	return bw.p;
}

void evidx_batch(void *ctx, const struct trace_batch *b, uint64_t gseq)
{
	struct evidx_writer *w = ctx;
	if (w->err || !b->n)
		return;
	if (w->records >= w->next_ckp) {
		checkpoint(w);
		w->next_ckp = w->records + w->every;
	}
	struct whart *h = whart_get(w, b->hart);
	if (!(w->flags & F_SEEN))
		w->flags = F_SEEN | (b->cycle ? F_CYCLES : 0);
	else if (!b->cycle)
		w->flags &= ~F_CYCLES;
	/* payload first (cycles), then the block's head before it */
	uint8_t *p = w->scratch;
	if (b->cycle) {
		p = put_cycles(w, p, b->cycle, b->n);
		h->tlast = h->last_rec_cycle = b->cycle[b->n - 1];
	} else {
		h->tlast = gseq + b->n - 1;
	}
	uint8_t head[6 * VARINT_MAX], *q = head;
	q = oobt_put_varint(q, b->cycle ? TAG_BLOCK_P : TAG_BLOCK);
	q = oobt_put_varint(q, (uint64_t)(p - w->scratch));
	q = oobt_put_varint(q, b->hart);
	q = oobt_put_varint(q, b->n);
	q = oobt_put_varint(q, h->records);
	q = oobt_put_varint(q, gseq);
	wput(w, head, (size_t)(q - head));
	wput(w, w->scratch, (size_t)(p - w->scratch));
	h->records += b->n;
	w->records += b->n;
}

int evidx_writer_finish(struct evidx_writer *w, struct oob_err *err)
{
	wflush(w);
	size_t tn = w->nh * HART_U64 * 8 + w->ndir * 8 + TAIL;
	uint8_t *t = oob_xcalloc(1, tn), *p = t;
	for (size_t i = 0; i < w->nh; i++, p += HART_U64 * 8) {
		const struct whart *h = &w->h[i];
		uint64_t v[HART_U64] = {h->events, h->first_cycle, h->first_seq,     h->cycle,
					h->seq,	   h->records,	   h->last_rec_cycle};
		for (int k = 0; k < HART_U64; k++)
			oob_put_le64(p + 8 * k, v[k]);
	}
	for (size_t i = 0; i < w->ndir; i++, p += 8)
		oob_put_le64(p, w->dir[i]);
	oob_put_le64(p, w->ndir);
	oob_put_le64(p + 8, HEADER + w->body);
	oob_put_le64(p + 16, w->nh);
	memcpy(p + 24, tail_magic, 8);
	uint8_t head[HEADER] = {0};
	memcpy(head, magic, 8);
	oob_put_le64(head + 8, w->body);
	oob_put_le64(head + 16, w->every);
	oob_put_le64(head + 24, w->flags);
	int rc = w->err;
	if (rc == 0)
		rc = oob_pwrite_all(w->fd, t, tn, HEADER + w->body);
	if (rc == 0)
		rc = oob_pwrite_all(w->fd, head, HEADER, 0);
	free(t);
	if (rc < 0)
		return oob_err_set(err, rc, "event index: writing: %s", strerror(-rc));
	return 0;
}

int evidx_writer_fd(struct evidx_writer *w);
int evidx_writer_fd(struct evidx_writer *w)
{
	return w->fd;
}

void evidx_writer_free(struct evidx_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nh; i++)
		free(w->h[i].stk);
	free(w->h);
	free(w->dir);
	free(w->buf);
	free(w);
}
