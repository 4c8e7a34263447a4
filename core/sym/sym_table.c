/* The function table (built once, searched lock-free), perf maps, accessors. */
#include "sym/sym_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_log.h"

/* perf maps are text written by a JIT; anything this large is not one. */
#define SYM_PERFMAP_MAX ((size_t)1 << 30)

struct sym_binary *sym_bin_alloc(const char *path)
{
	struct sym_binary *b = oob_xcalloc(1, sizeof(*b));
	const char *slash;

	b->path = oob_xstrdup(path);
	slash = strrchr(b->path, '/');
	b->name = slash ? slash + 1 : b->path;
	b->fd = -1;
	b->arena = oob_arena_new();
	pthread_mutex_init(&b->dw_lock, NULL);
	return b;
}

void sym_binary_free(struct sym_binary *b)
{
	if (!b)
		return;
	sym_dwarf_free(b);
	if (b->dw)
		dwarf_end(b->dw);
	if (b->elf)
		elf_end(b->elf);
	if (b->fd >= 0)
		close(b->fd);
	free(b->own_image);
	pthread_mutex_destroy(&b->dw_lock);
	free(b->segs);
	free(b->funcs);
	free(b->los);
	free(b->curanges);
	free(b->cus);
	free(b->build_id);
	free(b->path);
	oob_arena_free(b->arena);
	free(b);
}

void sym_cands_push(struct sym_cands *c, const struct sym_cand *x)
{
	if (x->hi <= x->lo)
		return;
	oob_xgrow((void **)&c->v, &c->cap, c->n + 1, sizeof(*c->v));
	c->v[c->n] = *x;
	c->v[c->n].rank = (uint32_t)c->n;
	c->n++;
}

char *sym_sha256_id(const void *data, size_t n)
{
	struct sha256_ctx ctx;
	uint8_t d[SHA256_DIGEST_SIZE];
	char *s = oob_xmalloc(sizeof("sha256:") + 2 * sizeof(d));
	char *p = s + strlen(strcpy(s, "sha256:"));

	sha256_init(&ctx);
	sha256_update(&ctx, n, data);
	sha256_digest(&ctx, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		p += sprintf(p, "%02x", d[i]);
	return s;
}

/* 1 if a should win over b where both cover an address. A total order. */
static int cand_better(const struct sym_cand *a, const struct sym_cand *b)
{
	uint64_t as = a->hi - a->lo, bs = b->hi - b->lo;

	if (a->tier != b->tier)
		return a->tier > b->tier;
	/* Nested: the inner range starts later. Partial overlap: the earlier
	 * range's end is the doubtful one (gas-made DWARF for assembly functions
	 * runs 4 bytes into the next), its neighbour's start is a real entry. */
	if (a->lo != b->lo)
		return a->lo > b->lo;
	if (as != bs)
		return as < bs;
	if (a->quality != b->quality)
		return a->quality > b->quality;
	return a->rank < b->rank;
}

/* A binary heap of candidate indices, best candidate on top. */
struct cand_heap {
	const struct sym_cand *c;
	uint32_t *v;
	size_t n;
};

static void heap_swap(struct cand_heap *h, size_t i, size_t j)
{
	uint32_t t = h->v[i];
	h->v[i] = h->v[j];
	h->v[j] = t;
}

static void heap_push(struct cand_heap *h, uint32_t x)
{
	size_t i = h->n++;

	h->v[i] = x;
	while (i > 0 && cand_better(&h->c[h->v[i]], &h->c[h->v[(i - 1) / 2]])) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct cand_heap *h)
{
	size_t i = 0;

	h->v[0] = h->v[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && cand_better(&h->c[h->v[l]], &h->c[h->v[m]]))
			m = l;
		if (r < h->n && cand_better(&h->c[h->v[r]], &h->c[h->v[m]]))
			m = r;
		if (m == i)
			return;
		heap_swap(h, i, m);
		i = m;
	}
}

static int cmp_cand_lo(const void *pa, const void *pb)
{
	const struct sym_cand *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
	return a < b ? -1 : a > b;
}

static void emit(struct sym_binary *b, const struct sym_cand *c, uint64_t lo, uint64_t hi)
{
	struct sym_func *f = &b->funcs[b->nfuncs++];
	char buf[32];

	f->lo = lo;
	f->hi = hi;
	f->entry = c->entry;
	f->name = c->name;
	if (!f->name || !*f->name) {
		snprintf(buf, sizeof(buf), "0x%" PRIx64, c->entry);
		f->name = oob_arena_strdup(b->arena, buf);
	}
	f->file = c->file;
	f->line = c->line;
	f->flags = c->flags;
}

/*
 * A sweep over the sorted range boundaries: at each elementary interval the
 * best active candidate (heap top, expired ones dropped lazily) owns it, and
 * consecutive intervals owned by the same candidate become one range.
 */
void sym_tab_build(struct sym_binary *b, struct sym_cands *c)
{
	size_t n = c->n, npts = 0, j = 0;
	uint64_t *pts = oob_xmalloc((2 * n + 1) * sizeof(*pts));
	struct cand_heap h = {c->v, oob_xmalloc((n + 1) * sizeof(uint32_t)), 0};
	uint32_t last = UINT32_MAX;

	if (n)
		qsort(c->v, n, sizeof(*c->v), cmp_cand_lo);
	for (size_t i = 0; i < n; i++) {
		pts[npts++] = c->v[i].lo;
		pts[npts++] = c->v[i].hi;
	}
	if (npts)
		qsort(pts, npts, sizeof(*pts), cmp_u64);
	b->funcs = oob_xmalloc((npts + 1) * sizeof(*b->funcs));
	b->nfuncs = 0;
	for (size_t k = 0; k + 1 < npts; k++) {
		if (pts[k] == pts[k + 1])
			continue;
		while (j < n && c->v[j].lo <= pts[k])
			heap_push(&h, (uint32_t)j++);
		while (h.n && c->v[h.v[0]].hi <= pts[k])
			heap_pop(&h);
		if (!h.n)
			continue;
		if (h.v[0] == last && b->funcs[b->nfuncs - 1].hi == pts[k])
			b->funcs[b->nfuncs - 1].hi = pts[k + 1];
		else
			emit(b, &c->v[h.v[0]], pts[k], pts[k + 1]);
		last = h.v[0];
	}
	b->los = oob_xmalloc((b->nfuncs + 1) * sizeof(*b->los));
	for (size_t i = 0; i < b->nfuncs; i++)
		b->los[i] = b->funcs[i].lo;
	free(h.v);
	free(pts);
}

size_t sym_binary_nfuncs(const struct sym_binary *b)
{
	return b->nfuncs;
}

const struct sym_func *sym_binary_func(const struct sym_binary *b, size_t i)
{
	return i < b->nfuncs ? &b->funcs[i] : NULL;
}

const struct sym_func *sym_binary_lookup(const struct sym_binary *b, uint64_t addr)
{
	size_t lo = 0, hi = b->nfuncs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->los[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= b->funcs[lo - 1].hi)
		return NULL;
	return &b->funcs[lo - 1];
}

const char *sym_binary_path(const struct sym_binary *b)
{
	return b->path;
}

const char *sym_binary_name(const struct sym_binary *b)
{
	return b->name;
}

const char *sym_binary_build_id(const struct sym_binary *b)
{
	return b->build_id;
}

unsigned sym_binary_machine(const struct sym_binary *b)
{
	return b->machine;
}

int sym_binary_is_pie(const struct sym_binary *b)
{
	return b->pie;
}

uint64_t sym_binary_entry(const struct sym_binary *b)
{
	return b->entry;
}

int sym_binary_has_dwarf(const struct sym_binary *b)
{
	return b->dw != NULL;
}

uint64_t sym_binary_load_base(const struct sym_binary *b)
{
	return b->load_base;
}

void sym_binary_text_range(const struct sym_binary *b, uint64_t *lo, uint64_t *hi)
{
	*lo = b->text_lo;
	*hi = b->text_hi;
}

/* Whole file into memory, bounded; -errno with err filled. */
static int slurp(const char *path, char **out, size_t *len, struct oob_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = oob_err_set(err, -EINVAL, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > SYM_PERFMAP_MAX) {
		rc = oob_err_set(err, -EFBIG, "%s: %lld bytes, over the %zu-byte perf map limit",
				 path, (long long)st.st_size, SYM_PERFMAP_MAX);
		goto out;
	}
	buf = oob_xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r <= 0) {
			rc = oob_err_set(err, r < 0 ? -errno : -EIO, "%s: short read at byte %zu",
					 path, got);
			goto out;
		}
		got += (size_t)r;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}

/* A hex number with an optional 0x; advances *p. 0 on success. */
static int parse_hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	int digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (*v = 0; s < end; s++, digits++) {
		int d = *s >= '0' && *s <= '9'	 ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						 : -1;
		if (d < 0)
			break;
		if (digits == 16)
			return -1;
		*v = *v << 4 | (uint64_t)d;
	}
	*p = s;
	return digits ? 0 : -1;
}

static const char *skip_blanks(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/* One "START SIZE name" line in [s, end), no newline. */
static int perfmap_line(struct sym_binary *b, struct sym_cands *c, const char *s, const char *end,
			size_t lineno, struct oob_err *err)
{
	struct sym_cand x = {0};
	uint64_t start, size;
	const char *p = skip_blanks(s, end);

	while (end > p && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (p == end)
		return 0;
	if (parse_hex(&p, end, &start) || p == end || (*p != ' ' && *p != '\t'))
		return oob_err_set(err, -EINVAL, "%s: line %zu: expected a hex start address",
				   b->path, lineno);
	p = skip_blanks(p, end);
	if (parse_hex(&p, end, &size) || p == end || (*p != ' ' && *p != '\t'))
		return oob_err_set(err, -EINVAL, "%s: line %zu: expected a hex size then a name",
				   b->path, lineno);
	p = skip_blanks(p, end);
	if (p == end || memchr(p, '\0', (size_t)(end - p)))
		return oob_err_set(err, -EINVAL, "%s: line %zu: missing or bad symbol name",
				   b->path, lineno);
	if (start + size < start)
		return oob_err_set(err, -EINVAL, "%s: line %zu: range wraps around", b->path,
				   lineno);
	x.lo = x.entry = start;
	x.hi = start + size;
	x.name = oob_arena_strndup(b->arena, p, (size_t)(end - p));
	x.flags = SYM_F_SYMTAB;
	x.tier = SYM_TIER_SYMBOL;
	/* A JIT reuses addresses: among equal ranges the later line is current. */
	x.quality = (uint32_t)lineno;
	sym_cands_push(c, &x);
	return 0;
}

static void perfmap_layout(struct sym_binary *b)
{
	if (!b->nfuncs)
		return;
	b->text_lo = b->funcs[0].lo;
	b->text_hi = b->funcs[b->nfuncs - 1].hi;
	b->load_base = b->text_lo;
}

struct sym_binary *sym_perfmap_open(const char *path, struct oob_err *err)
{
	struct sym_binary *b = NULL;
	struct sym_cands c = {0};
	char *buf = NULL;
	size_t len = 0, lineno = 0;

	if (slurp(path, &buf, &len, err) < 0)
		return NULL;
	b = sym_bin_alloc(path);
	for (const char *s = buf, *end = buf + len; s < end; lineno++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		if (perfmap_line(b, &c, s, nl ? nl : end, lineno + 1, err) < 0) {
			sym_binary_free(b);
			b = NULL;
			goto out;
		}
		s = nl ? nl + 1 : end;
	}
	b->build_id = sym_sha256_id(buf, len);
	sym_tab_build(b, &c);
	perfmap_layout(b);
out:
	free(c.v);
	free(buf);
	return b;
}
