/* evidx: reading an index (evidx.h; the layout in docs/formats/EVIDX.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_io.h"
#include "recon/evidx.h"
#include "trace/oobt.h"
#include "util/oob_mem.h"

#define HEADER	    32
#define TAIL	    32
#define HART_U64    7
#define CBUF	    (64 * 1024)
#define VARINT_MAX  10
#define MAX_HARTS   65536
#define TAG_BLOCK   1
#define TAG_BLOCK_C 2
#define TAG_CKP	    3
#define TAG_BLOCK_P 4
#define F_CYCLES    1u

/* OOBIDX1 (varint cycle deltas) is still read. */
static const char magic[8] = "OOBIDX2", magic_v1[8] = "OOBIDX1", tail_magic[8] = "OOBIDXE";

struct ckh {
	uint64_t events, insn, cycle, seq, records, tlast;
};

struct ckp {
	uint64_t at, next; /* file offsets of the payload and of what follows */
	uint64_t off, count, seq;
	unsigned nh;
	struct ckh *h;
	uint32_t *depth, **frames; /* per hart */
};

struct ihart {
	uint64_t events, first_cycle, first_seq, last_cycle, last_seq, records, last_rec_cycle;
};

/* A buffered reader of the body, bounded by its end. */
struct cursor {
	int fd;
	uint64_t base, end; /* file offset of buf[0]; end of the body */
	size_t pos, len;
	uint8_t buf[CBUF];
};

struct evidx {
	int fd, noseek;
	unsigned flags;
	uint64_t body_end;
	struct ihart *h;
	unsigned nh;
	struct ckp *c;
	size_t nc;
	struct evlog_resume_hart *rh; /* evidx_seek's answer */
	uint64_t *exc;		      /* a packed block's exceptions: index, value */
	size_t exc_cap;
	struct cursor cur;
};

static void cur_seek(struct cursor *c, uint64_t at)
{
	c->base = at;
	c->pos = c->len = 0;
}

static uint64_t cur_tell(const struct cursor *c)
{
	return c->base + c->pos;
}

/* At least want bytes (or the rest of the body) buffered: 0, or -EINVAL. */
static int cur_fill(struct cursor *c, size_t want)
{
	if (c->len - c->pos >= want || c->base + c->len >= c->end)
		return 0;
	c->base += c->pos;
	memmove(c->buf, c->buf + c->pos, c->len - c->pos);
	c->len -= c->pos;
	c->pos = 0;
	uint64_t rest = c->end - c->base - c->len;
	size_t n = rest < CBUF - c->len ? (size_t)rest : CBUF - c->len;
	int rc = oob_pread_all(c->fd, c->buf + c->len, n, (off_t)(c->base + c->len));
	if (rc < 0)
		return rc;
	c->len += n;
	return 0;
}

static int cur_varint(struct cursor *c, uint64_t *out)
{
	if (cur_fill(c, VARINT_MAX) < 0)
		return -EINVAL;
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64 && c->pos < c->len; shift += 7) {
		uint8_t b = c->buf[c->pos++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

static int cur_skip(struct cursor *c, uint64_t n)
{
	if (n > c->end - cur_tell(c))
		return -EINVAL;
	if (n <= c->len - c->pos)
		c->pos += (size_t)n;
	else
		cur_seek(c, cur_tell(c) + n);
	return 0;
}

static int corrupt(struct oob_err *err, const char *path, const char *what)
{
	return oob_err_set(err, -EINVAL, "event index %s: %s", path, what);
}

/* Reads checkpoint k's payload at c->at. */
static int load_ckp(struct evidx *ix, struct ckp *k, const char *path, struct oob_err *err)
{
	struct cursor *c = &ix->cur;
	uint64_t nh;
	cur_seek(c, k->at);
	if (k->at < HEADER || k->at >= ix->body_end || cur_varint(c, &k->off) < 0 ||
	    cur_varint(c, &k->count) < 0 || cur_varint(c, &k->seq) < 0 || cur_varint(c, &nh) < 0 ||
	    nh > ix->nh)
		return corrupt(err, path, "a checkpoint is cut or out of range");
	k->nh = (unsigned)nh;
	k->h = oob_xcalloc(nh ? nh : 1, sizeof(*k->h));
	k->depth = oob_xcalloc(nh ? nh : 1, sizeof(*k->depth));
	k->frames = oob_xcalloc(nh ? nh : 1, sizeof(*k->frames));
	for (unsigned i = 0; i < k->nh; i++) {
		uint64_t v[7];
		for (int j = 0; j < 7; j++)
			if (cur_varint(c, &v[j]) < 0)
				return corrupt(err, path, "a checkpoint is cut");
		k->h[i] = (struct ckh){v[0], v[1], v[2], v[3], v[4], v[5]};
		if (v[6] > (1u << 20) || v[0] > ix->h[i].events)
			return corrupt(err, path, "a checkpoint's stack is out of range");
		k->depth[i] = (uint32_t)v[6];
		k->frames[i] = oob_xmalloc((v[6] ? v[6] : 1) * sizeof(uint32_t));
		for (uint32_t d = 0; d < k->depth[i]; d++) {
			uint64_t f;
			if (cur_varint(c, &f) < 0 || f > UINT32_MAX)
				return corrupt(err, path, "a checkpoint's stack is cut");
			k->frames[i][d] = (uint32_t)f;
		}
	}
	k->next = cur_tell(c);
	return 0;
}

static int load_tail(struct evidx *ix, const char *path, uint64_t size, struct oob_err *err)
{
	uint8_t t[TAIL];
	if (size < HEADER + TAIL || oob_pread_all(ix->fd, t, TAIL, (off_t)(size - TAIL)) < 0 ||
	    memcmp(t + 24, tail_magic, 8) != 0)
		return corrupt(err, path, "cut (no end marker)");
	uint64_t nc = oob_get_le64(t), tr = oob_get_le64(t + 8), nh = oob_get_le64(t + 16);
	if (tr != ix->body_end || nh > MAX_HARTS || nc > size ||
	    tr + nh * HART_U64 * 8 + nc * 8 + TAIL != size)
		return corrupt(err, path, "sizes do not add up");
	size_t n = (size_t)(nh * HART_U64 * 8 + nc * 8);
	uint8_t *b = oob_xmalloc(n ? n : 1);
	if (oob_pread_all(ix->fd, b, n, (off_t)tr) < 0) {
		free(b);
		return corrupt(err, path, "cut");
	}
	ix->nh = (unsigned)nh;
	ix->h = oob_xcalloc(nh ? nh : 1, sizeof(*ix->h));
	for (unsigned i = 0; i < ix->nh; i++) {
		const uint8_t *p = b + (size_t)i * HART_U64 * 8;
		ix->h[i] =
		    (struct ihart){oob_get_le64(p),	 oob_get_le64(p + 8),  oob_get_le64(p + 16),
				   oob_get_le64(p + 24), oob_get_le64(p + 32), oob_get_le64(p + 40),
				   oob_get_le64(p + 48)};
	}
	ix->nc = (size_t)nc;
	ix->c = oob_xcalloc(nc ? nc : 1, sizeof(*ix->c));
	for (size_t i = 0; i < ix->nc; i++)
		ix->c[i].at = oob_get_le64(b + nh * HART_U64 * 8 + i * 8);
	free(b);
	for (size_t i = 0; i < ix->nc; i++)
		if ((i && ix->c[i].at <= ix->c[i - 1].at) || load_ckp(ix, &ix->c[i], path, err) < 0)
			return err && err->code ? err->code
						: corrupt(err, path, "checkpoints out of order");
	return 0;
}

static struct evidx *open_fd(int fd, const char *path, struct oob_err *err)
{
	struct evidx *ix = oob_xcalloc(1, sizeof(*ix));
	uint8_t head[HEADER];
	struct stat st;
	ix->fd = fd;
	ix->cur.fd = fd;
	if (fstat(fd, &st) < 0 || oob_pread_all(fd, head, HEADER, 0) < 0 ||
	    (memcmp(head, magic, 8) != 0 && memcmp(head, magic_v1, 8) != 0)) {
		corrupt(err, path, "not an oobprof event index (or another version)");
		goto fail;
	}
	uint64_t body = oob_get_le64(head + 8);
	ix->flags = (unsigned)oob_get_le64(head + 24);
	if (body > (uint64_t)st.st_size) {
		corrupt(err, path, "cut (body)");
		goto fail;
	}
	ix->body_end = ix->cur.end = HEADER + body;
	if (load_tail(ix, path, (uint64_t)st.st_size, err) == 0)
		return ix;
fail:
	evidx_free(ix);
	return NULL;
}

struct evidx *evidx_open(const char *path, struct oob_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		oob_err_set(err, -errno, "event index %s: %s", path, strerror(errno));
		return NULL;
	}
	return open_fd(fd, path, err);
}

/* The writer's fd: evidx_writer.c hands it over via this hook. */
int evidx_writer_fd(struct evidx_writer *w);

struct evidx *evidx_writer_open(struct evidx_writer *w, struct oob_err *err)
{
	int fd = dup(evidx_writer_fd(w));
	if (fd < 0) {
		oob_err_set(err, -errno, "event index: %s", strerror(errno));
		return NULL;
	}
	return open_fd(fd, "(temporary)", err);
}

void evidx_free(struct evidx *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->nc; i++) {
		for (unsigned k = 0; ix->c[i].frames && k < ix->c[i].nh; k++)
			free(ix->c[i].frames[k]);
		free(ix->c[i].frames);
		free(ix->c[i].depth);
		free(ix->c[i].h);
	}
	free(ix->c);
	free(ix->h);
	free(ix->rh);
	free(ix->exc);
	if (ix->fd >= 0)
		close(ix->fd);
	free(ix);
}

int evidx_cycles(const struct evidx *ix)
{
	return (ix->flags & F_CYCLES) != 0;
}

unsigned evidx_nharts(const struct evidx *ix)
{
	return ix->nh;
}

void evidx_noseek(struct evidx *ix)
{
	ix->noseek = 1;
}

int evidx_hart_events(const struct evidx *ix, unsigned hart, uint64_t *first, uint64_t *last,
		      uint64_t *events)
{
	const struct ihart *h = hart < ix->nh ? &ix->h[hart] : NULL;
	int cyc = evidx_cycles(ix);
	*first = h ? (cyc ? h->first_cycle : h->first_seq) : 0;
	*last = h ? (cyc ? h->last_cycle : h->last_seq) : 0;
	*events = h ? h->events : 0;
	return 0;
}

/* ---- time to record index ---- */

static int cur_byte(struct cursor *c, uint8_t *b)
{
	if (cur_fill(c, 1) < 0 || c->pos == c->len)
		return -EINVAL;
	*b = c->buf[c->pos++];
	return 0;
}

/* k bits, LSB first, from the cursor; acc/nbits hold what is pending. */
static int cur_bits(struct cursor *c, unsigned k, uint64_t *acc, unsigned *nbits, uint64_t *v)
{
	*v = 0;
	for (unsigned got = 0; got < k;) {
		uint8_t b;
		if (!*nbits) {
			if (cur_byte(c, &b) < 0)
				return -EINVAL;
			*acc = b;
			*nbits = 8;
		}
		unsigned take = k - got < *nbits ? k - got : *nbits;
		*v |= (*acc & ((1u << take) - 1)) << got;
		*acc >>= take;
		*nbits -= take;
		got += take;
	}
	return 0;
}

/* The first record of a packed block (TAG_BLOCK_P, after its head) whose
 * cycle is >= t: 1 and *i, *cy; 0 when every cycle is below t (the block is
 * skipped without decoding its deltas); -EINVAL for a damaged block. */
static int packed_find(struct evidx *ix, uint64_t len, uint64_t n, uint64_t t, uint64_t *i,
		       uint64_t *cy)
{
	struct cursor *c = &ix->cur;
	uint64_t at = cur_tell(c), max, k, ne;
	if (cur_varint(c, cy) < 0 || cur_varint(c, &max) < 0)
		return -EINVAL;
	if (max < t)
		return cur_tell(c) - at > len ? -EINVAL : cur_skip(c, len - (cur_tell(c) - at));
	if (cur_varint(c, &k) < 0 || cur_varint(c, &ne) < 0 || k >> 1 > 64 || ne >= n)
		return -EINVAL;
	int zz = k & 1;
	k >>= 1;
	oob_xgrow((void **)&ix->exc, &ix->exc_cap, 2 * ne + 2, sizeof(*ix->exc));
	for (uint64_t j = 0, pos = 0; j < ne; j++, pos++) {
		uint64_t gap;
		if (cur_varint(c, &gap) < 0 || cur_varint(c, &ix->exc[2 * j + 1]) < 0 ||
		    gap >= n - 1 - pos)
			return -EINVAL;
		ix->exc[2 * j] = pos += gap;
	}
	uint64_t acc = 0, v, e = 0;
	unsigned nbits = 0;
	for (*i = 0; *cy < t;) {
		if (++*i >= n || cur_bits(c, (unsigned)k, &acc, &nbits, &v) < 0)
			return -EINVAL; /* max said a cycle >= t is here */
		if (e < ne && ix->exc[2 * e] == *i - 1)
			v = ix->exc[2 * e++ + 1];
		*cy += zz ? (uint64_t)oobt_unzz(v) : v;
	}
	return 1;
}

/* Scans hart's blocks from the cursor; see evidx_pos. */
static int scan_blocks(struct evidx *ix, unsigned hart, uint64_t t, uint64_t *pos, uint64_t *cyc)
{
	struct cursor *c = &ix->cur;
	const struct ihart *ih = &ix->h[hart];
	while (cur_tell(c) < c->end) {
		uint64_t tag, len, h, n, insn0, seq0, v;
		if (cur_varint(c, &tag) < 0 || cur_varint(c, &len) < 0)
			return -EINVAL;
		if (tag == TAG_CKP) {
			if (cur_skip(c, len) < 0)
				return -EINVAL;
			continue;
		}
		if ((tag != TAG_BLOCK && tag != TAG_BLOCK_C && tag != TAG_BLOCK_P) ||
		    cur_varint(c, &h) < 0 || cur_varint(c, &n) < 0 || cur_varint(c, &insn0) < 0 ||
		    cur_varint(c, &seq0) < 0 || n == 0 || n > (1u << 20))
			return -EINVAL;
		if (h != hart) {
			if (cur_skip(c, len) < 0)
				return -EINVAL;
			continue;
		}
		if (tag == TAG_BLOCK) {
			if (cur_skip(c, len) < 0)
				return -EINVAL;
			if (t <= seq0 + n - 1) {
				*pos = insn0 + (t > seq0 ? t - seq0 : 0);
				*cyc = 0;
				return 0;
			}
			continue;
		}
		if (tag == TAG_BLOCK_P) {
			uint64_t i, cy;
			int found = packed_find(ix, len, n, t, &i, &cy);
			if (found < 0)
				return -EINVAL;
			if (found) {
				*pos = insn0 + i;
				*cyc = cy;
				return 0;
			}
			continue;
		}
		uint64_t at = cur_tell(c), cy = 0;
		for (uint64_t i = 0; i < n; i++) {
			if (cur_varint(c, &v) < 0)
				return -EINVAL;
			cy = i ? cy + (uint64_t)oobt_unzz(v) : v;
			if (cy >= t) {
				*pos = insn0 + i;
				*cyc = cy;
				return 0;
			}
		}
		if (cur_tell(c) - at != len)
			return -EINVAL;
	}
	*pos = ih->records;
	*cyc = evidx_cycles(ix) ? ih->last_rec_cycle : 0;
	return 0;
}

int evidx_pos(struct evidx *ix, unsigned hart, uint64_t t, uint64_t *pos, uint64_t *cycle,
	      struct oob_err *err)
{
	if (hart >= ix->nh) {
		*pos = *cycle = 0;
		return 0;
	}
	/* the last checkpoint before which every record of the hart is < t */
	size_t lo = 0, hi = ix->nc;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct ckp *k = &ix->c[mid];
		int before = hart >= k->nh || !k->h[hart].records || k->h[hart].tlast < t;
		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	cur_seek(&ix->cur, lo ? ix->c[lo - 1].next : HEADER);
	if (scan_blocks(ix, hart, t, pos, cycle) < 0)
		return oob_err_set(err, -EINVAL,
				   "event index: a record block near byte %" PRIu64 " is corrupt",
				   cur_tell(&ix->cur));
	return 0;
}

/* ---- resume points ---- */

static uint64_t ckey(const struct evidx *ix, const struct ckh *h, int by_time)
{
	if (!by_time)
		return h->insn;
	return evidx_cycles(ix) ? h->cycle : h->seq;
}

/* Checkpoint k starts early enough: every hart's last event is at or before
 * its lo. */
static int starts_before(const struct evidx *ix, const struct ckp *k, int hart, int by_time,
			 const uint64_t *lo)
{
	for (unsigned i = 0; i < k->nh; i++)
		if ((hart < 0 || (unsigned)hart == i) && k->h[i].events &&
		    ckey(ix, &k->h[i], by_time) > lo[i])
			return 0;
	return 1;
}

/* Checkpoint k ends late enough: every hart is past its hi or has no more
 * events. */
static int ends_after(const struct evidx *ix, const struct ckp *k, int hart, int by_time,
		      const uint64_t *hi)
{
	for (unsigned i = 0; i < ix->nh; i++) {
		if (hart >= 0 && (unsigned)hart != i)
			continue;
		uint64_t ev = i < k->nh ? k->h[i].events : 0;
		if (ev == ix->h[i].events)
			continue;
		if (!ev || ckey(ix, &k->h[i], by_time) < hi[i])
			return 0;
	}
	return 1;
}

void evidx_seek(struct evidx *ix, int hart, int by_time, const uint64_t *lo, const uint64_t *hi,
		struct evlog_resume *rs)
{
	memset(rs, 0, sizeof(*rs));
	if (ix->noseek)
		return;
	size_t s = 0; /* 1 + the checkpoint to start at; 0: the beginning */
	while (s < ix->nc && starts_before(ix, &ix->c[s], hart, by_time, lo))
		s++;
	for (size_t e = s; e < ix->nc; e++)
		if (ends_after(ix, &ix->c[e], hart, by_time, hi)) {
			rs->end = ix->c[e].off;
			break;
		}
	if (!s)
		return;
	const struct ckp *k = &ix->c[s - 1];
	free(ix->rh);
	ix->rh = oob_xcalloc(k->nh ? k->nh : 1, sizeof(*ix->rh));
	for (unsigned i = 0; i < k->nh; i++)
		ix->rh[i] = (struct evlog_resume_hart){.insn = k->h[i].insn,
						       .cycle = k->h[i].cycle,
						       .seq = k->h[i].seq,
						       .depth = k->depth[i],
						       .frames = k->frames[i]};
	rs->off = k->off;
	rs->count = k->count;
	rs->seq = k->seq;
	rs->nharts = k->nh;
	rs->h = ix->rh;
}
