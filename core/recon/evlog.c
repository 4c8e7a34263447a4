#include "util/oob_io.h"
#include "recon/evlog.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_mem.h"
#include "trace/oobt.h"

#define BUF_SIZE    (256 * 1024)
#define HEADER	    32
#define TRAILER_U64 6
#define REC_MAX	    (6 * 10) /* six varints of at most 10 bytes */
#define MAX_HARTS   65536

static const char magic[8] = "OOBEVL2";

struct evlog {
	int fd;
	int anonymous;
	int finished;
	int capped;
	int err_code;
	char err_msg[200];
	uint64_t max_events, count, seen, body;
	uint64_t last_seq; /* of the last event kept, all harts */
	struct evlog_hart *harts;
	size_t nharts, cap_harts;
	struct oob_progress *watch; /* evlog_watch */
	size_t used;
	uint8_t buf[BUF_SIZE];
};

/* ---- little-endian and varints (written as oobt writes them, oobt.h) ---- */

/* Decodes one varint from [*p, end); 0, or -1 when it is cut or too long. */
static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* ---- writing ---- */

static int write_all(int fd, const void *p, size_t n, off_t at)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = pwrite(fd, b, n, at);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EIO;
		b += k, n -= (size_t)k, at += k;
	}
	return 0;
}

static int open_anonymous(struct oob_err *err)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/oobprof-evlog-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return oob_err_set(err, -errno, "stack events: temporary file in %s: %s",
				   dir && *dir ? dir : "/tmp", strerror(errno));
	unlink(path);
	return fd;
}

struct evlog *evlog_new(const char *path, uint64_t max_events, struct oob_err *err)
{
	int fd =
	    path ? open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : open_anonymous(err);
	if (fd < 0 && path)
		oob_err_set(err, -errno, "stack events: %s: %s", path, strerror(errno));
	if (fd < 0)
		return NULL;
	struct evlog *l = oob_xcalloc(1, sizeof(*l));
	l->fd = fd;
	l->anonymous = !path;
	l->max_events = max_events;
	return l;
}

static void fail(struct evlog *l, int code, const char *what)
{
	if (!l->err_code) {
		l->err_code = code;
		snprintf(l->err_msg, sizeof(l->err_msg), "stack events: %s: %s", what,
			 strerror(-code));
	}
}

static void flush_buf(struct evlog *l)
{
	if (!l->used || l->err_code)
		return;
	int rc = write_all(l->fd, l->buf, l->used, (off_t)(HEADER + l->body));
	if (rc < 0)
		fail(l, rc, "writing the log");
	else
		l->body += l->used;
	l->used = 0;
}

/* The hart's slot; grows the table the first time a hart is seen. */
static struct evlog_hart *hart_slot(struct evlog *l, uint16_t hart)
{
	if (hart >= l->nharts) {
		oob_xgrow((void **)&l->harts, &l->cap_harts, (size_t)hart + 1, sizeof(*l->harts));
		memset(l->harts + l->nharts, 0, ((size_t)hart + 1 - l->nharts) * sizeof(*l->harts));
		l->nharts = (size_t)hart + 1;
	}
	return &l->harts[hart];
}

void evlog_record(void *ctx, const struct recon_event *ev)
{
	struct evlog *l = ctx;
	l->seen++;
	if (l->capped || l->err_code || l->finished)
		return;
	if (l->max_events && l->count >= l->max_events) {
		l->capped = 1;
		return;
	}
	struct evlog_hart *h = hart_slot(l, ev->hart);
	if (!h->events) { /* deltas start from 0, as the replay's do */
		h->first_insn = ev->insn;
		h->first_cycle = ev->cycle;
	}
	if (l->used + REC_MAX > BUF_SIZE)
		flush_buf(l);
	uint8_t *p = l->buf + l->used;
	p = oobt_put_varint(p, (uint64_t)ev->hart << 2 | (uint64_t)(ev->calls != 0) << 1 |
				   (ev->kind == RECON_EV_CLOSE));
	p = oobt_put_varint(p, ev->frame);
	p = oobt_put_varint(p, ev->depth);
	p = oobt_put_varint(p, ev->insn - h->last_insn);
	p = oobt_put_varint(p, oobt_zz((int64_t)(ev->cycle - h->last_cycle)));
	p = oobt_put_varint(p, oobt_zz((int64_t)(ev->seq - l->last_seq)));
	l->used = (size_t)(p - l->buf);
	l->last_seq = ev->seq;
	h->last_insn = ev->insn;
	h->last_cycle = ev->cycle;
	if (ev->depth > h->max_depth)
		h->max_depth = ev->depth;
	h->events++;
	l->count++;
}

int evlog_finish(struct evlog *l, struct oob_err *err)
{
	if (l->finished)
		return l->err_code ? oob_err_set(err, l->err_code, "%s", l->err_msg) : 0;
	flush_buf(l);
	l->finished = 1;
	if (l->err_code)
		return oob_err_set(err, l->err_code, "%s", l->err_msg);
	uint8_t head[HEADER] = {0};
	memcpy(head, magic, sizeof(magic));
	oob_put_le64(head + 8, l->body);
	oob_put_le64(head + 16, l->count);
	oob_put_le64(head + 24, (uint64_t)l->nharts | (uint64_t)(l->capped ? 1 : 0) << 32);
	size_t tn = l->nharts * TRAILER_U64 * 8;
	uint8_t *tr = oob_xmalloc(tn ? tn : 1);
	for (size_t i = 0; i < l->nharts; i++) {
		const struct evlog_hart *h = &l->harts[i];
		uint64_t v[TRAILER_U64] = {h->events,	   h->first_insn, h->last_insn,
					   h->first_cycle, h->last_cycle, h->max_depth};
		for (int k = 0; k < TRAILER_U64; k++)
			oob_put_le64(tr + (i * TRAILER_U64 + (size_t)k) * 8, v[k]);
	}
	int rc = write_all(l->fd, tr, tn, (off_t)(HEADER + l->body));
	if (rc == 0)
		rc = write_all(l->fd, head, sizeof(head), 0);
	free(tr);
	if (rc < 0) {
		fail(l, rc, "writing the log");
		return oob_err_set(err, rc, "%s", l->err_msg);
	}
	return 0;
}

/* ---- reading ---- */

static int load_trailer(struct evlog *l, const char *path, struct oob_err *err)
{
	size_t tn = l->nharts * TRAILER_U64 * 8;
	uint8_t *tr = oob_xmalloc(tn ? tn : 1);
	int rc = oob_pread_all(l->fd, tr, tn, (off_t)(HEADER + l->body));
	if (rc < 0) {
		free(tr);
		return oob_err_set(err, -EINVAL, "stack events %s: the hart table is cut", path);
	}
	l->harts = oob_xcalloc(l->nharts ? l->nharts : 1, sizeof(*l->harts));
	l->cap_harts = l->nharts ? l->nharts : 1;
	uint64_t sum = 0;
	for (size_t i = 0; i < l->nharts; i++) {
		const uint8_t *p = tr + i * TRAILER_U64 * 8;
		struct evlog_hart *h = &l->harts[i];
		*h = (struct evlog_hart){oob_get_le64(p),      oob_get_le64(p + 8),
					 oob_get_le64(p + 16), oob_get_le64(p + 24),
					 oob_get_le64(p + 32), oob_get_le64(p + 40)};
		sum += h->events;
	}
	free(tr);
	if (sum != l->count)
		return oob_err_set(err, -EINVAL,
				   "stack events %s: the hart table counts %" PRIu64
				   " events, the header %" PRIu64,
				   path, sum, l->count);
	return 0;
}

struct evlog *evlog_open(const char *path, struct oob_err *err)
{
	uint8_t head[HEADER];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		oob_err_set(err, -errno, "stack events %s: %s", path, strerror(errno));
		return NULL;
	}
	struct evlog *l = oob_xcalloc(1, sizeof(*l));
	l->fd = fd;
	l->finished = 1;
	if (fstat(fd, &st) < 0 || oob_pread_all(fd, head, sizeof(head), 0) < 0 ||
	    memcmp(head, magic, sizeof(magic)) != 0) {
		oob_err_set(err, -EINVAL, "stack events %s: not an oobprof event log", path);
		goto fail;
	}
	l->body = oob_get_le64(head + 8);
	l->count = l->seen = oob_get_le64(head + 16);
	uint64_t w = oob_get_le64(head + 24);
	l->nharts = (size_t)(w & 0xffffffffu);
	l->capped = (int)(w >> 32 & 1);
	if (l->nharts > MAX_HARTS || l->body > (uint64_t)st.st_size ||
	    (uint64_t)st.st_size != HEADER + l->body + (uint64_t)l->nharts * TRAILER_U64 * 8) {
		oob_err_set(err, -EINVAL,
			    "stack events %s: sizes do not add up (file of %lld bytes, body of "
			    "%" PRIu64 ", %zu harts)",
			    path, (long long)st.st_size, l->body, l->nharts);
		goto fail;
	}
	if (load_trailer(l, path, err) == 0)
		return l;
fail:
	evlog_free(l);
	return NULL;
}

void evlog_free(struct evlog *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	free(l->harts);
	free(l);
}

void evlog_watch(struct evlog *l, struct oob_progress *p)
{
	l->watch = p;
}

void evlog_tell(const struct evlog *l, uint64_t *off, uint64_t *count, uint64_t *seq)
{
	*off = l->body + l->used;
	*count = l->count;
	*seq = l->last_seq;
}

uint64_t evlog_count(const struct evlog *l)
{
	return l->count;
}

uint64_t evlog_seen(const struct evlog *l)
{
	return l->seen;
}

uint64_t evlog_body_bytes(const struct evlog *l)
{
	return l->body;
}

int evlog_capped(const struct evlog *l)
{
	return l->capped;
}

unsigned evlog_nharts(const struct evlog *l)
{
	return (unsigned)l->nharts;
}

struct evlog_hart evlog_hart(const struct evlog *l, unsigned hart)
{
	struct evlog_hart none = {0};
	return hart < l->nharts ? l->harts[hart] : none;
}

/* ---- replay ---- */

/* Per-hart state of a replay: the running stamps and the frame stack that
 * the nesting checks compare against. */
struct rstate {
	uint64_t insn, cycle;
	uint32_t *stk;
	size_t n, cap;
};

struct replay {
	struct evlog *l;
	struct rstate *hs;
	uint64_t seq;	 /* of the last event decoded */
	uint64_t off;	 /* body offset of buf[0] */
	uint64_t end;	 /* body offset the replay stops at */
	size_t pos, len; /* decode position and valid bytes in buf */
	struct oob_err *err;
};

/* Makes at least REC_MAX bytes (or the rest of the body) available. */
static int refill(struct replay *r)
{
	struct evlog *l = r->l;
	if (r->len - r->pos >= REC_MAX || r->off + r->len >= l->body)
		return 0;
	memmove(l->buf, l->buf + r->pos, r->len - r->pos);
	r->off += r->pos;
	r->len -= r->pos;
	r->pos = 0;
	uint64_t want = l->body - r->off - r->len;
	size_t n = want < BUF_SIZE - r->len ? (size_t)want : BUF_SIZE - r->len;
	uint64_t at = r->off + r->len;
	int rc = oob_pread_all(l->fd, l->buf + r->len, n, (off_t)(HEADER + at));
	if (rc < 0)
		return oob_err_set(r->err, rc == -EINVAL ? -EINVAL : rc,
				   "stack events: byte %" PRIu64 ": the log is cut", HEADER + at);
	r->len += n;
	/* a replay that stops at a checkpoint reads past it: count what it uses */
	uint64_t used = at >= r->end ? 0 : r->end - at < n ? r->end - at : n;
	if (oob_progress_step(l->watch, used) < 0)
		return oob_err_set(r->err, -ECANCELED, "stack events: the replay was cancelled");
	return 0;
}

static int bad(struct replay *r, uint64_t at, const char *what)
{
	return oob_err_set(r->err, -EINVAL, "stack events: byte %" PRIu64 ": %s", HEADER + at,
			   what);
}

/* Checks the event against the hart's stack and applies it. */
static int nest(struct replay *r, struct rstate *s, const struct recon_event *ev, uint64_t at)
{
	if (ev->kind == RECON_EV_OPEN) {
		if (ev->depth != s->n + 1)
			return bad(r, at, "an open event skips a stack level");
		oob_xgrow((void **)&s->stk, &s->cap, s->n + 1, sizeof(*s->stk));
		s->stk[s->n++] = ev->frame;
		return 0;
	}
	if (ev->depth != s->n || s->n == 0 || s->stk[s->n - 1] != ev->frame)
		return bad(r, at, "a close event does not match the open frame on top");
	s->n--;
	return 0;
}

/* Decodes the event at r->pos into ev; 1 if it belongs to hart (or hart < 0). */
static int decode(struct replay *r, int hart, uint32_t nframes, struct recon_event *ev)
{
	const uint8_t *p = r->l->buf + r->pos, *end = r->l->buf + r->len;
	uint64_t at = r->off + r->pos, v[6];
	for (int i = 0; i < 6; i++)
		if (get_varint(&p, end, &v[i]) < 0)
			return bad(r, at, "a cut or overlong number");
	r->pos = (size_t)(p - r->l->buf);
	if ((v[0] >> 2) >= r->l->nharts || v[1] > UINT32_MAX || v[2] == 0 || v[2] > UINT32_MAX)
		return bad(r, at, "hart, frame or depth out of range");
	if (nframes && v[1] >= nframes)
		return bad(r, at, "a frame id beyond the profile's frames");
	struct rstate *s = &r->hs[v[0] >> 2];
	ev->kind = (v[0] & 1) ? RECON_EV_CLOSE : RECON_EV_OPEN;
	ev->calls = (v[0] >> 1) & 1;
	ev->hart = (uint16_t)(v[0] >> 2);
	ev->frame = (uint32_t)v[1];
	ev->depth = (uint32_t)v[2];
	s->insn += v[3];
	s->cycle += (uint64_t)oobt_unzz(v[4]);
	ev->insn = s->insn;
	ev->cycle = s->cycle;
	r->seq += (uint64_t)oobt_unzz(v[5]);
	ev->seq = r->seq;
	int rc = nest(r, s, ev, at);
	if (rc < 0)
		return rc;
	return hart < 0 || hart == ev->hart;
}

static int replay_loop(struct replay *r, int hart, uint32_t nframes, evlog_fn fn, void *ctx,
		       uint64_t end, uint64_t before)
{
	struct recon_event ev;
	uint64_t n = before;
	int rc;
	r->end = end;
	oob_progress_begin(r->l->watch, end - r->off);
	while ((rc = refill(r)) == 0 && r->off + r->pos < end) {
		if ((rc = decode(r, hart, nframes, &ev)) < 0)
			return rc;
		n++;
		if (rc && (rc = fn(ctx, &ev)) < 0)
			return rc;
	}
	if (rc < 0)
		return rc;
	if (end < r->l->body)
		return r->off + r->pos == end ? 0 : bad(r, r->off + r->pos, "a checkpoint is off");
	if (n != r->l->count)
		return bad(r, r->off + r->pos, "the event count differs from the header's");
	for (size_t i = 0; i < r->l->nharts; i++)
		if (r->hs[i].n)
			return oob_err_set(r->err, -EINVAL,
					   "stack events: hart %zu ends with %zu frames open", i,
					   r->hs[i].n);
	return 0;
}

static int replay_ready(struct evlog *l, struct oob_err *err)
{
	int rc = l->finished ? 0 : evlog_finish(l, err);
	if (rc < 0)
		return rc;
	/* a log read back knows only what it kept: the run saw more */
	if (l->capped && l->seen > l->count)
		return oob_err_set(err, -EFBIG,
				   "stack events: the log was capped at %" PRIu64 " of %" PRIu64
				   " events",
				   l->count, l->seen);
	if (l->capped)
		return oob_err_set(err, -EFBIG,
				   "stack events: the log was capped at %" PRIu64
				   " events (the run had more)",
				   l->count);
	return 0;
}

static void replay_free(struct replay *r)
{
	for (size_t i = 0; i < r->l->nharts; i++)
		free(r->hs[i].stk);
	free(r->hs);
}

int evlog_replay(struct evlog *l, int hart, uint32_t nframes, evlog_fn fn, void *ctx,
		 struct oob_err *err)
{
	int rc = replay_ready(l, err);
	if (rc < 0)
		return rc;
	struct replay r = {.l = l, .err = err};
	r.hs = oob_xcalloc(l->nharts ? l->nharts : 1, sizeof(*r.hs));
	rc = replay_loop(&r, hart, nframes, fn, ctx, l->body, 0);
	replay_free(&r);
	return rc;
}

/* Sets a hart's decoder state to rs's and replays its open frames. */
static int resume_hart(struct replay *r, unsigned i, const struct evlog_resume_hart *rh, int hart,
		       uint32_t nframes, evlog_fn fn, void *ctx)
{
	struct rstate *s = &r->hs[i];
	s->insn = rh->insn;
	s->cycle = rh->cycle;
	for (uint32_t d = 0; d < rh->depth; d++) {
		if (nframes && rh->frames[d] >= nframes)
			return oob_err_set(r->err, -EINVAL,
					   "stack events: a checkpoint's frame is beyond the "
					   "profile's frames");
		oob_xgrow((void **)&s->stk, &s->cap, s->n + 1, sizeof(*s->stk));
		s->stk[s->n++] = rh->frames[d];
		struct recon_event ev = {.kind = RECON_EV_OPEN,
					 .hart = (uint16_t)i,
					 .frame = rh->frames[d],
					 .depth = d + 1,
					 .insn = rh->insn,
					 .cycle = rh->cycle,
					 .seq = rh->seq};
		int rc = hart < 0 || hart == (int)i ? fn(ctx, &ev) : 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

int evlog_replay_from(struct evlog *l, const struct evlog_resume *rs, int hart, uint32_t nframes,
		      evlog_fn fn, void *ctx, struct oob_err *err)
{
	int rc = replay_ready(l, err);
	if (rc < 0)
		return rc;
	uint64_t end = rs->end ? rs->end : l->body;
	if (rs->off > end || end > l->body || rs->count > l->count || rs->nharts > l->nharts)
		return oob_err_set(
		    err, -EINVAL, "stack events: a checkpoint (byte %" PRIu64 ") is beyond the log",
		    HEADER + rs->off);
	struct replay r = {.l = l, .err = err, .seq = rs->seq, .off = rs->off};
	r.hs = oob_xcalloc(l->nharts ? l->nharts : 1, sizeof(*r.hs));
	for (unsigned i = 0; rc == 0 && i < rs->nharts; i++)
		rc = resume_hart(&r, i, &rs->h[i], hart, nframes, fn, ctx);
	if (rc == 0)
		rc = replay_loop(&r, hart, nframes, fn, ctx, end, rs->count);
	replay_free(&r);
	return rc;
}
