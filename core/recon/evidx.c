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
#define TAG_BLOCK_C 2 /* records with cycles */
#define TAG_CKP	    3
#define F_CYCLES    1u
#define F_SEEN	    2u /* a batch was seen (F_CYCLES means something) */

static const char magic[8] = "OOBIDX1", tail_magic[8] = "OOBIDXE";

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
		p = oobt_put_varint(p, b->cycle[0]);
		for (uint32_t i = 1; i < b->n; i++)
			p = oobt_put_varint(p, oobt_zz((int64_t)(b->cycle[i] - b->cycle[i - 1])));
		h->tlast = h->last_rec_cycle = b->cycle[b->n - 1];
	} else {
		h->tlast = gseq + b->n - 1;
	}
	uint8_t head[6 * VARINT_MAX], *q = head;
	q = oobt_put_varint(q, b->cycle ? TAG_BLOCK_C : TAG_BLOCK);
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
