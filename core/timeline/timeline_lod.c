/* timeline_lod: the bucketed timeline (timeline_lod.h; the layout in
 * docs/formats/TLOD.md). */
#include "util/oob_io.h"
#include "timeline/timeline_lod.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_mem.h"

#define HEADER	   64
#define HART_BYTES 24
#define ROW	   24
#define TAIL	   8
#define MAX_LEVELS 40
#define MAX_HARTS  65536
#define WBUF	   256 /* rows a writer holds per hart and level */
#define RBUF	   4096

static const char magic[8] = "OOBLOD1", tail_magic[8] = "OOBLODE";

/* One bucket of one hart as stored. */
struct row {
	int64_t a;
	uint64_t busy;
	uint32_t n;
	uint8_t state, cont;
};

struct extent {
	uint64_t start, end, b0;
	unsigned levels;
	uint64_t b[MAX_LEVELS], nb[MAX_LEVELS];
};

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* The levels of a run [start, end) from the finest bucket b0. */
static void extent_levels(struct extent *x)
{
	uint64_t len = x->end - x->start, b = x->b0;
	x->levels = 0;
	for (;;) {
		uint64_t nb = len ? ceil_div(len, b) : 1;
		x->b[x->levels] = b;
		x->nb[x->levels++] = nb;
		if (nb <= 1 || x->levels == MAX_LEVELS)
			break;
		b = b > UINT64_MAX / TIMELINE_LOD_FACTOR ? UINT64_MAX : b * TIMELINE_LOD_FACTOR;
	}
}

static uint64_t finest(uint64_t len)
{
	return len ? ceil_div(len, TIMELINE_LOD_BUCKETS) : 1;
}

static void extent_init(struct extent *x, uint64_t start, uint64_t end)
{
	x->start = start;
	x->end = end > start ? end : start;
	x->b0 = finest(x->end - x->start);
	extent_levels(x);
}

static uint64_t rows_per_hart(const struct extent *x)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < x->levels; k++)
		n += x->nb[k];
	return n;
}

static void row_encode(uint8_t *p, const struct row *r)
{
	oob_put_le64(p, (uint64_t)r->a);
	oob_put_le64(p + 8, r->busy);
	for (int i = 0; i < 4; i++)
		p[16 + i] = (uint8_t)(r->n >> (8 * i));
	p[20] = r->state;
	p[21] = r->cont;
	p[22] = p[23] = 0;
}

static void row_decode(const uint8_t *p, struct row *r)
{
	r->a = (int64_t)oob_get_le64(p);
	r->busy = oob_get_le64(p + 8);
	r->n =
	    (uint32_t)p[16] | (uint32_t)p[17] << 8 | (uint32_t)p[18] << 16 | (uint32_t)p[19] << 24;
	r->state = p[20];
	r->cont = p[21];
}

/* ---- writing ---- */

struct hent {
	int64_t a;
	uint8_t state;
	uint64_t dur;
};

/* The bucket of one level being filled, and rows not yet written. */
struct wlev {
	uint64_t i; /* its index */
	int have;
	struct hent *e;
	size_t ne, cap;
	uint32_t n;
	uint8_t cont;
	uint8_t buf[WBUF * ROW];
	size_t nbuf;
	uint64_t buf_i0;
};

struct whart {
	unsigned hart;
	uint64_t first, last;
	uint64_t row0; /* file offset of its level 0 */
	struct wlev *lv;
};

struct writer {
	int fd, rc;
	struct extent x;
	struct whart *h;
	unsigned nh;
	int *slot; /* hart -> index into h, or -1 */
	unsigned nslot;
};

static uint64_t level_off(const struct writer *w, const struct whart *h, unsigned k)
{
	uint64_t off = h->row0;
	for (unsigned j = 0; j < k; j++)
		off += w->x.nb[j] * ROW;
	return off;
}

static void wlev_flush(struct writer *w, struct whart *h, unsigned k)
{
	struct wlev *v = &h->lv[k];
	if (v->nbuf && w->rc == 0)
		w->rc = oob_pwrite_all(w->fd, v->buf, v->nbuf * ROW,
				       level_off(w, h, k) + v->buf_i0 * ROW);
	v->nbuf = 0;
}

/* The (process, privilege) covering most of the bucket; ties as the header
 * says. */
static const struct hent *dominant(const struct wlev *v)
{
	const struct hent *best = NULL;
	for (size_t i = 0; i < v->ne; i++) {
		const struct hent *e = &v->e[i];
		if (!best || e->dur > best->dur ||
		    (e->dur == best->dur &&
		     (e->a < best->a || (e->a == best->a && e->state < best->state))))
			best = e;
	}
	return best;
}

static void bucket_close(struct writer *w, struct whart *h, unsigned k)
{
	struct wlev *v = &h->lv[k];
	if (!v->have)
		return;
	const struct hent *d = dominant(v);
	struct row r = {.a = d->a, .busy = d->dur, .n = v->n, .state = d->state, .cont = v->cont};
	if (v->nbuf && (v->nbuf == WBUF || v->buf_i0 + v->nbuf != v->i))
		wlev_flush(w, h, k);
	if (!v->nbuf)
		v->buf_i0 = v->i;
	row_encode(v->buf + v->nbuf++ * ROW, &r);
	v->have = 0;
	v->ne = 0;
}

static void bucket_add(struct wlev *v, const struct timeline_span *s, uint64_t dur)
{
	for (size_t i = 0; i < v->ne; i++)
		if (v->e[i].a == s->a && v->e[i].state == s->state) {
			v->e[i].dur += dur;
			return;
		}
	oob_xgrow((void **)&v->e, &v->cap, v->ne + 1, sizeof(*v->e));
	v->e[v->ne++] = (struct hent){.a = s->a, .state = s->state, .dur = dur};
}

static void on_span(void *ctx, unsigned hart, const struct timeline_span *s)
{
	struct writer *w = ctx;
	if (hart >= w->nslot || w->slot[hart] < 0)
		return;
	struct whart *h = &w->h[w->slot[hart]];
	uint64_t s0 = s->start > w->x.start ? s->start : w->x.start;
	uint64_t e = s->end < w->x.end ? s->end : w->x.end;
	for (unsigned k = 0; k < w->x.levels; k++) {
		struct wlev *v = &h->lv[k];
		uint64_t b = w->x.b[k];
		for (uint64_t t = s0; t < e;) {
			uint64_t i = (t - w->x.start) / b;
			uint64_t bs = w->x.start + i * b;
			uint64_t be = b > w->x.end - bs ? w->x.end : bs + b;
			if (!v->have || v->i != i) {
				bucket_close(w, h, k);
				v->have = 1;
				v->i = i;
				v->n = 0;
				v->cont = s->start < bs; /* began in an earlier bucket */
			}
			uint64_t seg = e < be ? e : be;
			bucket_add(v, s, seg - t);
			v->n++;
			t = seg;
		}
	}
}

static int header_write(struct writer *w, int cycles)
{
	size_t n = HEADER + (size_t)w->nh * HART_BYTES;
	uint8_t *b = oob_xcalloc(1, n);
	memcpy(b, magic, 8);
	oob_put_le64(b + 8, cycles ? 1 : 0);
	oob_put_le64(b + 16, w->x.start);
	oob_put_le64(b + 24, w->x.end);
	oob_put_le64(b + 32, w->x.b0);
	oob_put_le64(b + 40, TIMELINE_LOD_FACTOR);
	oob_put_le64(b + 48, w->x.levels);
	oob_put_le64(b + 56, w->nh);
	for (unsigned i = 0; i < w->nh; i++) {
		oob_put_le64(b + HEADER + i * HART_BYTES, w->h[i].hart);
		oob_put_le64(b + HEADER + i * HART_BYTES + 8, w->h[i].first);
		oob_put_le64(b + HEADER + i * HART_BYTES + 16, w->h[i].last);
	}
	int rc = oob_pwrite_all(w->fd, b, n, 0);
	free(b);
	return rc;
}

/* The harts' extents, from the index or from a replay that merges all. */
static int harts_extent(struct evlog *log, struct evidx *ix, const struct profile *p,
			struct writer *w, struct oob_err *err)
{
	uint64_t start = 0, end = 0;
	if (ix) {
		for (unsigned i = 0; i < evidx_nharts(ix); i++) {
			uint64_t first, last, events;
			if (evidx_hart_events(ix, i, &first, &last, &events) < 0 || !events)
				continue;
			w->h = oob_xrealloc(w->h, (w->nh + 1) * sizeof(*w->h));
			w->h[w->nh++] = (struct whart){.hart = i, .first = first, .last = last};
			start = w->nh == 1 || first < start ? first : start;
			end = last > end ? last : end;
		}
	} else {
		struct timeline *t;
		struct timeline_opts o = {.min_dur = UINT64_MAX, .hart = -1};
		int rc = timeline_harts(log, p, &o, &t, err);
		if (rc < 0)
			return rc;
		w->h = oob_xcalloc(t->nharts ? t->nharts : 1, sizeof(*w->h));
		for (size_t i = 0; i < t->nharts; i++) {
			const struct timeline_spans *s = &t->harts[i].spans;
			w->h[w->nh++] =
			    (struct whart){.hart = t->harts[i].hart,
					   .first = s->n ? s->v[0].start : t->start,
					   .last = s->n ? s->v[s->n - 1].end : t->start};
		}
		start = t->start;
		end = t->end;
		timeline_free(t);
	}
	extent_init(&w->x, start, end);
	return 0;
}

static int writer_setup(struct writer *w, int cycles, struct oob_err *err)
{
	if (w->nh > MAX_HARTS)
		return oob_err_set(err, -E2BIG, "timeline summaries: %u harts", w->nh);
	uint64_t per = rows_per_hart(&w->x) * ROW;
	for (unsigned i = 0; i < w->nh; i++) {
		w->h[i].row0 = HEADER + (uint64_t)w->nh * HART_BYTES + i * per;
		w->h[i].lv = oob_xcalloc(w->x.levels, sizeof(*w->h[i].lv));
		if (w->h[i].hart >= w->nslot)
			w->nslot = w->h[i].hart + 1;
	}
	w->slot = oob_xmalloc((w->nslot ? w->nslot : 1) * sizeof(*w->slot));
	for (unsigned i = 0; i < w->nslot; i++)
		w->slot[i] = -1;
	for (unsigned i = 0; i < w->nh; i++)
		w->slot[w->h[i].hart] = (int)i;
	uint64_t size = HEADER + (uint64_t)w->nh * (HART_BYTES + per);
	int rc = ftruncate(w->fd, 0) < 0 || ftruncate(w->fd, (off_t)size) < 0 ? -errno : 0;
	if (rc == 0)
		rc = header_write(w, cycles);
	if (rc == 0)
		rc = oob_pwrite_all(w->fd, tail_magic, TAIL, size);
	return rc < 0 ? oob_err_set(err, rc, "timeline summaries: %s", strerror(-rc)) : 0;
}

static void writer_free(struct writer *w)
{
	for (unsigned i = 0; i < w->nh; i++) {
		for (unsigned k = 0; w->h[i].lv && k < w->x.levels; k++)
			free(w->h[i].lv[k].e);
		free(w->h[i].lv);
	}
	free(w->h);
	free(w->slot);
}

static int build_fd(int fd, struct evlog *log, struct evidx *ix, const struct profile *p,
		    struct oob_err *err)
{
	struct writer w = {.fd = fd};
	if (ix && evidx_cycles(ix) != profile_has_cycles(p))
		ix = NULL;
	int rc = harts_extent(log, ix, p, &w, err);
	if (rc == 0)
		rc = writer_setup(&w, profile_has_cycles(p), err);
	if (rc == 0)
		rc = timeline_harts_each(log, p, on_span, &w, err);
	for (unsigned i = 0; rc == 0 && i < w.nh; i++)
		for (unsigned k = 0; k < w.x.levels; k++) {
			bucket_close(&w, &w.h[i], k);
			wlev_flush(&w, &w.h[i], k);
		}
	if (rc == 0 && w.rc < 0)
		rc = oob_err_set(err, w.rc, "timeline summaries: %s", strerror(-w.rc));
	writer_free(&w);
	return rc;
}

int timeline_lod_build(struct evlog *log, struct evidx *ix, const struct profile *p,
		       const char *path, struct oob_err *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	int rc = build_fd(fd, log, ix, p, err);
	if (close(fd) < 0 && rc == 0)
		rc = oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	return rc;
}

/* ---- reading ---- */

struct timeline_lod {
	int fd, cycles;
	struct extent x;
	struct whart *h; /* hart, first, last, row0 */
	unsigned nh;
};

static int bad(struct oob_err *err, const char *what)
{
	return oob_err_set(err, -EINVAL, "timeline summaries: %s", what);
}

static int header_read(struct timeline_lod *l, struct oob_err *err)
{
	uint8_t b[HEADER], t[TAIL];
	struct stat st;
	if (fstat(l->fd, &st) < 0)
		return oob_err_set(err, -errno, "timeline summaries: %s", strerror(errno));
	uint64_t size = (uint64_t)st.st_size;
	if (size < HEADER + TAIL || oob_pread_all(l->fd, b, HEADER, 0) < 0 || memcmp(b, magic, 8))
		return bad(err, "not an OOBLOD1 file");
	uint64_t flags = oob_get_le64(b + 8), nh = oob_get_le64(b + 56);
	l->x.start = oob_get_le64(b + 16);
	l->x.end = oob_get_le64(b + 24);
	l->x.b0 = oob_get_le64(b + 32);
	if (flags > 1 || oob_get_le64(b + 40) != TIMELINE_LOD_FACTOR || l->x.end < l->x.start ||
	    !l->x.b0 || nh > MAX_HARTS)
		return bad(err, "header out of range");
	l->cycles = (int)flags;
	extent_levels(&l->x);
	if (oob_get_le64(b + 48) != l->x.levels || l->x.b0 != finest(l->x.end - l->x.start))
		return bad(err, "levels do not match the extent");
	uint64_t per = rows_per_hart(&l->x) * ROW;
	if (per > size || nh * (HART_BYTES + per) != size - HEADER - TAIL)
		return bad(err, "size does not match the header");
	if (oob_pread_all(l->fd, t, TAIL, size - TAIL) < 0 || memcmp(t, tail_magic, 8))
		return bad(err, "cut (no end mark)");
	l->nh = (unsigned)nh;
	l->h = oob_xcalloc(nh ? nh : 1, sizeof(*l->h));
	uint8_t *hb = oob_xmalloc(nh ? nh * HART_BYTES : 1);
	int rc = oob_pread_all(l->fd, hb, nh * HART_BYTES, HEADER);
	for (unsigned i = 0; rc == 0 && i < nh; i++) {
		struct whart *h = &l->h[i];
		h->hart = (unsigned)oob_get_le64(hb + i * HART_BYTES);
		h->first = oob_get_le64(hb + i * HART_BYTES + 8);
		h->last = oob_get_le64(hb + i * HART_BYTES + 16);
		h->row0 = HEADER + nh * HART_BYTES + i * per;
		if (oob_get_le64(hb + i * HART_BYTES) >= MAX_HARTS || h->first > h->last ||
		    h->first < l->x.start || h->last > l->x.end ||
		    (i && h->hart <= l->h[i - 1].hart))
			rc = -EINVAL;
	}
	free(hb);
	return rc < 0 ? bad(err, "hart table out of range") : 0;
}

static struct timeline_lod *lod_from_fd(int fd, struct oob_err *err)
{
	struct timeline_lod *l = oob_xcalloc(1, sizeof(*l));
	l->fd = fd;
	if (header_read(l, err) < 0) {
		timeline_lod_free(l);
		return NULL;
	}
	return l;
}

struct timeline_lod *timeline_lod_open(const char *path, struct oob_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
		return NULL;
	}
	return lod_from_fd(fd, err);
}

struct timeline_lod *timeline_lod_new(struct evlog *log, struct evidx *ix, const struct profile *p,
				      struct oob_err *err)
{
	FILE *f = tmpfile();
	if (!f) {
		oob_err_set(err, -errno, "timeline summaries: temporary file: %s", strerror(errno));
		return NULL;
	}
	int fd = dup(fileno(f));
	fclose(f);
	if (fd < 0) {
		oob_err_set(err, -errno, "timeline summaries: %s", strerror(errno));
		return NULL;
	}
	if (build_fd(fd, log, ix, p, err) < 0) {
		close(fd);
		return NULL;
	}
	return lod_from_fd(fd, err);
}

void timeline_lod_free(struct timeline_lod *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	free(l->h);
	free(l);
}

int timeline_lod_cycles(const struct timeline_lod *l)
{
	return l->cycles;
}

uint64_t timeline_lod_finest(const struct timeline_lod *l)
{
	return l->x.b0;
}

/* Rows [i0, i1) of a hart's level k, joined into out's intervals. */
struct qrun {
	const struct profile *p;
	struct timeline_spans *out;
	uint64_t merged;
};

static int row_take(struct timeline_lod *l, const struct whart *h, uint64_t b, uint64_t i,
		    const struct row *r, struct qrun *q, struct oob_err *err)
{
	if (!r->n)
		return 0;
	uint64_t bs = l->x.start + i * b;
	uint64_t be = b > l->x.end - bs ? l->x.end : bs + b;
	uint64_t s = bs > h->first ? bs : h->first, e = be < h->last ? be : h->last;
	if (r->state > 1 || r->cont > 1 || e <= s || r->busy > e - s || r->busy == 0 ||
	    (r->a != TIMELINE_NONE && (r->a < 0 || (uint64_t)r->a >= profile_nprocesses(q->p))))
		return oob_err_set(err, -EINVAL,
				   "timeline summaries: hart %u bucket %llu is out of range",
				   h->hart, (unsigned long long)i);
	struct timeline_spans *o = q->out;
	struct timeline_span *last = o->n ? &o->v[o->n - 1] : NULL;
	if (last && last->end == s && last->a == r->a && last->state == r->state) {
		last->end = e;
		last->busy += r->busy;
		last->n += r->n - r->cont;
		q->merged += r->n - r->cont;
		return 0;
	}
	oob_xgrow((void **)&o->v, &o->cap, o->n + 1, sizeof(*o->v));
	o->v[o->n++] = (struct timeline_span){
	    .start = s, .end = e, .a = r->a, .busy = r->busy, .n = r->n, .state = r->state};
	q->merged += r->n - 1;
	return 0;
}

static int hart_query(struct timeline_lod *l, const struct whart *h, unsigned k, uint64_t i0,
		      uint64_t i1, struct qrun *q, struct oob_err *err)
{
	uint64_t off = h->row0;
	for (unsigned j = 0; j < k; j++)
		off += l->x.nb[j] * ROW;
	uint8_t *buf = oob_xmalloc(RBUF * ROW);
	int rc = 0;
	for (uint64_t i = i0; rc == 0 && i < i1;) {
		size_t n = i1 - i < RBUF ? (size_t)(i1 - i) : RBUF;
		if (oob_pread_all(l->fd, buf, n * ROW, off + i * ROW) < 0) {
			rc = bad(err, "cut rows");
			break;
		}
		for (size_t j = 0; rc == 0 && j < n; j++) {
			struct row r;
			row_decode(buf + j * ROW, &r);
			rc = row_take(l, h, l->x.b[k], i + j, &r, q, err);
		}
		i += n;
	}
	free(buf);
	return rc;
}

static unsigned level_for(const struct timeline_lod *l, uint64_t min_dur)
{
	unsigned k = 0;
	while (k + 1 < l->x.levels && l->x.b[k + 1] <= min_dur)
		k++;
	return k;
}

int timeline_lod_query(struct timeline_lod *l, const struct profile *p,
		       const struct timeline_opts *o, struct timeline **out, struct oob_err *err)
{
	struct timeline *t = oob_xcalloc(1, sizeof(*t));
	unsigned k = level_for(l, o->min_dur);
	uint64_t b = l->x.b[k];
	uint64_t from = o->from > l->x.start ? o->from : l->x.start;
	uint64_t to = o->to && o->to < l->x.end ? o->to : l->x.end;
	uint64_t i0 = (from - l->x.start) / b, i1 = 0;
	if (from < to)
		i1 = ceil_div(to - l->x.start, b);
	t->cycles = l->cycles;
	t->start = l->x.start;
	t->end = l->x.end;
	t->bucket = b;
	t->harts = oob_xcalloc(l->nh ? l->nh : 1, sizeof(*t->harts));
	int rc = 0;
	for (unsigned i = 0; rc == 0 && i < l->nh; i++) {
		if (o->hart >= 0 && (unsigned)o->hart != l->h[i].hart)
			continue;
		struct timeline_hart *th = &t->harts[t->nharts++];
		struct qrun q = {.p = p, .out = &th->spans};
		th->hart = l->h[i].hart;
		if (i0 < i1)
			rc = hart_query(l, &l->h[i], k, i0, i1, &q, err);
		t->merged += q.merged;
	}
	if (rc < 0) {
		timeline_free(t);
		return rc;
	}
	*out = t;
	return 0;
}
