/*
 * sample: the builder the readers feed, symbolization, and the entry points
 * (format detection, whole-file reads, gzip for pprof).
 */
#include "sample/sample.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "sample/sample_impl.h"
#include "util/oob_mem.h"

#define SAMPLE_MAX_BYTES (1ull << 30)

int sample_format_is(enum trace_format f)
{
	return f == TRACE_FMT_UNIPROF || f == TRACE_FMT_PERF_SCRIPT || f == TRACE_FMT_FOLDED ||
	       f == TRACE_FMT_PPROF;
}

/* ---- the builder ---- */

int sample_builder_init(struct sample_builder *b, const struct sample_opts *o, struct oob_err *err)
{
	memset(b, 0, sizeof(*b));
	frame_table_init(&b->ft);
	cct_init(&b->cct);
	b->space = sym_space_new();
	b->st.sampled = 1;
	size_t nb = (o ? o->nelfs + o->nmaps : 0);
	b->bins = oob_xcalloc(nb + 1, sizeof(*b->bins));
	for (size_t i = 0; i < nb; i++) {
		int map = i >= o->nelfs;
		const char *path = map ? o->maps[i - o->nelfs] : o->elfs[i].path;
		uint64_t base = map ? UINT64_MAX : o->elfs[i].base;
		struct sym_binary *bin =
		    map ? sym_perfmap_open(path, err) : sym_binary_open(path, err);
		if (!bin)
			return oob_err_prefix(err, "%s", path);
		b->bins[b->nbins++] = bin;
		/* A shared object without a base has no run-time place: perf's
		 * DSO-relative addresses find it by name (dso_binary). */
		if (!map && base == SAMPLE_BASE_LINK && sym_binary_is_pie(bin))
			continue;
		if (sym_space_add(b->space, bin, base, err) < 0)
			return err->code;
	}
	return 0;
}

void sample_builder_destroy(struct sample_builder *b)
{
	frame_table_destroy(&b->ft);
	cct_destroy(&b->cct);
	sym_space_free(b->space);
	for (size_t i = 0; i < b->nbins; i++)
		sym_binary_free(b->bins[i]);
	free(b->bins);
	free(b->fbin);
	free(b->faddr);
	free(b->ffile);
	free(b->stk);
}

static void push(struct sample_builder *b, uint32_t frame)
{
	oob_xgrow((void **)&b->stk, &b->cap, b->n + 1, sizeof(*b->stk));
	b->stk[b->n++] = frame;
}

/* Separates a symbolized frame's name from its entry in the interning key:
 * two functions of one name (static ones of two programs) stay two frames,
 * named apart at the end (profile_disambiguate). */
#define KEY_SEP '\x01'

/* The frame (kind, name[0..len)), with its binary, entry and file if new;
 * one per entry when bin is given. */
static uint32_t intern(struct sample_builder *b, unsigned kind, const char *name, size_t len,
		       const char *bin, uint64_t entry, const char *file)
{
	char tmp[512];
	if (len >= sizeof(tmp) - 24)
		len = sizeof(tmp) - 25;
	memcpy(tmp, name, len);
	tmp[len] = 0;
	if (bin)
		snprintf(tmp + len, sizeof(tmp) - len, "%c%" PRIx64, KEY_SEP, entry);
	uint32_t id = frame_named(&b->ft, kind, tmp);
	if (id >= b->fcap) {
		size_t old = b->fcap, cap2 = b->fcap, cap3 = b->fcap;
		oob_xgrow((void **)&b->fbin, &b->fcap, id + 1, sizeof(*b->fbin));
		oob_xgrow((void **)&b->faddr, &cap2, id + 1, sizeof(*b->faddr));
		oob_xgrow((void **)&b->ffile, &cap3, id + 1, sizeof(*b->ffile));
		memset(b->fbin + old, 0, (b->fcap - old) * sizeof(*b->fbin));
		memset(b->faddr + old, 0, (b->fcap - old) * sizeof(*b->faddr));
		memset(b->ffile + old, 0, (b->fcap - old) * sizeof(*b->ffile));
	}
	if (!b->fbin[id] && bin) {
		b->fbin[id] = bin;
		b->faddr[id] = entry;
		b->ffile[id] = file;
	}
	return id;
}

void sample_push_name(struct sample_builder *b, const char *name, size_t len, unsigned kind)
{
	push(b, intern(b, kind, name, len, NULL, 0, NULL));
}

/* The given ELF whose basename is the DSO's, or NULL. */
static const struct sym_binary *dso_binary(const struct sample_builder *b, const char *dso,
					   size_t dlen)
{
	const char *base = dso;
	for (size_t i = 0; i < dlen; i++)
		if (dso[i] == '/')
			base = dso + i + 1;
	size_t blen = dlen - (size_t)(base - dso);
	for (size_t i = 0; i < b->nbins; i++) {
		const char *n = sym_binary_name(b->bins[i]);
		if (sym_binary_machine(b->bins[i]) && strlen(n) == blen && !memcmp(n, base, blen))
			return b->bins[i];
	}
	return NULL;
}

static int kernel_dso(const char *dso, size_t dlen)
{
	return dso && dlen && dso[0] == '[' && dlen >= 7 && !memcmp(dso, "[kernel", 7);
}

void sample_push_addr(struct sample_builder *b, uint64_t addr, const char *name, size_t nlen,
		      const char *dso, size_t dlen)
{
	unsigned kind =
	    (addr >> 63) || kernel_dso(dso, dlen) ? PROFILE_FRAME_KERNEL : PROFILE_FRAME_USER;
	const struct sym_binary *bin = dso ? dso_binary(b, dso, dlen) : NULL;
	const struct sym_func *f = NULL;
	uint64_t bias = 0;
	if (bin) { /* perf prints DSO-relative addresses of user code */
		f = sym_binary_lookup(bin, addr + sym_binary_load_base(bin));
	} else {
		const struct sym_mapping *m = NULL;
		f = sym_space_lookup(b->space, addr, &m);
		bin = m ? m->bin : NULL;
		bias = m ? m->bias : 0;
	}
	if (f) {
		push(b, intern(b, kind, f->name, strlen(f->name), sym_binary_name(bin),
			       f->entry + bias, f->file));
		return;
	}
	if (name && nlen) {
		push(b, intern(b, kind, name, nlen, NULL, 0, NULL));
		return;
	}
	char hex[24];
	int k = snprintf(hex, sizeof(hex), "0x%" PRIx64, addr);
	push(b, intern(b, kind, hex, (size_t)k, NULL, addr, NULL));
}

void sample_end(struct sample_builder *b, uint64_t weight, enum sample_status s)
{
	uint32_t node = CCT_ROOT;
	if (s == SAMPLE_FAILED)
		node = cct_child(&b->cct, node,
				 frame_named(&b->ft, PROFILE_FRAME_MARKER, "[walk failed]"));
	else if (s == SAMPLE_TRUNCATED)
		node = cct_child(&b->cct, node,
				 frame_named(&b->ft, PROFILE_FRAME_MARKER, "[walk truncated]"));
	for (size_t i = b->n; i-- > 0;)
		node = cct_child(&b->cct, node, b->stk[i]);
	b->cct.v[node].insns += weight;
	b->st.samples += weight;
	b->st.failed_walks += s == SAMPLE_FAILED;
	b->st.truncated_walks += s == SAMPLE_TRUNCATED;
	b->n = 0;
}

struct profile *sample_builder_finish(struct sample_builder *b, const char *fmt,
				      struct oob_err *err)
{
	size_t nn = b->cct.n, nf = b->ft.n;
	struct profile_node *nodes = oob_xcalloc(nn, sizeof(*nodes));
	struct profile_frame *frames = oob_xcalloc(nf + 1, sizeof(*frames));
	for (size_t i = 0; i < nn; i++) {
		const struct cct_node *c = &b->cct.v[i];
		nodes[i] = (struct profile_node){
		    .parent = i ? c->parent : PROFILE_NONE,
		    .frame = i ? c->frame : PROFILE_NONE,
		    .self_insns = c->insns,
		};
	}
	char **names = oob_xcalloc(nf + 1, sizeof(*names));
	for (size_t i = 0; i < nf; i++) {
		const struct frame *f = frame_get(&b->ft, (uint32_t)i);
		const char *sep = strchr(f->name, KEY_SEP);
		if (sep) {
			size_t len = (size_t)(sep - f->name);
			names[i] = oob_xmalloc(len + 1);
			memcpy(names[i], f->name, len);
			names[i][len] = 0;
		}
		frames[i] = (struct profile_frame){
		    .name = sep ? names[i] : f->name,
		    .kind = f->kind,
		    .binary = i < b->fcap ? b->fbin[i] : NULL,
		    .file = i < b->fcap ? b->ffile[i] : NULL,
		    .addr = i < b->fcap ? b->faddr[i] : 0,
		};
	}
	b->st.format = fmt;
	struct profile *p = profile_new(nodes, nn, frames, nf, &b->st, err);
	if (p)
		profile_disambiguate(p);
	for (size_t i = 0; i < nf; i++)
		free(names[i]);
	free(names);
	free(nodes);
	free(frames);
	return p;
}

/* ---- entry points ---- */

/* buf[0..n) gunzipped into *out (malloc'd), at most SAMPLE_MAX_BYTES. */
static int gunzip(const uint8_t *buf, size_t n, uint8_t **out, size_t *on, struct oob_err *err)
{
	z_stream z = {0};
	size_t cap = n * 4 + 4096, len = 0;
	uint8_t *o = NULL;
	int zr = Z_OK;
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return oob_err_set(err, -ENOMEM, "zlib cannot start");
	z.next_in = (Bytef *)buf;
	z.avail_in = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
	while (zr != Z_STREAM_END) {
		if (len == cap || !o) {
			if (cap > SAMPLE_MAX_BYTES) {
				inflateEnd(&z);
				free(o);
				return oob_err_set(err, -EFBIG, "over 1 GiB once decompressed");
			}
			cap = o ? cap * 2 : cap;
			o = oob_xrealloc(o, cap);
		}
		z.next_out = o + len;
		z.avail_out = (uInt)(cap - len);
		zr = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
		if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && len == cap)) {
			size_t at = (size_t)z.total_in;
			inflateEnd(&z);
			free(o);
			return oob_err_set(err, -EINVAL, "gzip: %s at compressed byte %zu",
					   zr == Z_BUF_ERROR ? "cut short" : "corrupt data", at);
		}
	}
	inflateEnd(&z);
	*out = o;
	*on = len;
	return 0;
}

static int read_fmt(struct sample_builder *b, enum trace_format f, const uint8_t *buf, size_t n,
		    struct oob_err *err)
{
	uint8_t *raw = NULL;
	size_t rn = 0;
	int rc;
	switch (f) {
	case TRACE_FMT_UNIPROF:
		return sample_read_uniprof(b, (const char *)buf, n, err);
	case TRACE_FMT_PERF_SCRIPT:
		return sample_read_perf(b, (const char *)buf, n, err);
	case TRACE_FMT_FOLDED:
		return sample_read_folded(b, (const char *)buf, n, err);
	case TRACE_FMT_PPROF:
		if (n >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
			if ((rc = gunzip(buf, n, &raw, &rn, err)) < 0)
				return rc;
			rc = sample_read_pprof(b, raw, rn, err);
			free(raw);
			return rc;
		}
		return sample_read_pprof(b, buf, n, err);
	default:
		return oob_err_set(err, -EINVAL,
				   "not a sampled format (uniprof, perf-script, folded or pprof)");
	}
}

int sample_read_mem(const void *buf, size_t n, const char *name, const struct sample_opts *o,
		    struct profile **out, struct oob_err *err)
{
	struct sample_builder b;
	enum trace_format f = o ? o->format : TRACE_FMT_AUTO;
	*out = NULL;
	if (f == TRACE_FMT_AUTO) {
		const struct trace_format_row *r = trace_format_detect(buf, n, TRACE_FORMATS_ALL);
		f = r ? r->fmt : TRACE_FMT_AUTO;
	}
	int rc = sample_builder_init(&b, o, err);
	if (rc == 0 && (rc = read_fmt(&b, f, buf, n, err)) == 0) {
		b.st.raw_bytes = n;
		if (!(*out = sample_builder_finish(&b, trace_format_name(f), err)))
			rc = err->code;
	}
	sample_builder_destroy(&b);
	if (rc < 0)
		oob_err_prefix(err, "%s", name);
	return rc;
}

/* The whole file (sampled files are small next to traces). */
static int slurp(const char *path, uint8_t **buf, size_t *n, size_t max, struct oob_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		int bad = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		close(fd);
		return oob_err_set(err, bad, "%s: %s", path,
				   bad == -EFBIG ? "over 1 GiB" : "not a regular file");
	}
	size_t want = max < (size_t)st.st_size ? max : (size_t)st.st_size, got = 0;
	*buf = oob_xmalloc(want + 1);
	while (got < want) {
		ssize_t k = read(fd, *buf + got, want - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	(*buf)[got] = '\0'; /* the text readers' strtoull stops here, not past the end */
	*n = got;
	return 0;
}

enum trace_format sample_detect_file(const char *path)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	/* Only a regular file can be looked at and read again: a pipe's bytes
	 * read here would be lost to the trace reader. */
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return TRACE_FMT_AUTO;
	}
	buf = oob_xmalloc(65536);
	ssize_t k = read(fd, buf, 65536);
	close(fd);
	n = k > 0 ? (size_t)k : 0;
	const struct trace_format_row *r = trace_format_detect(buf, n, TRACE_FORMATS_ALL);
	free(buf);
	return r && sample_format_is(r->fmt) ? r->fmt : TRACE_FMT_AUTO;
}

int sample_read(const char *path, const struct sample_opts *o, struct profile **out,
		struct oob_err *err)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	*out = NULL;
	int rc = slurp(path, &buf, &n, SAMPLE_MAX_BYTES, err);
	if (rc == 0)
		rc = sample_read_mem(buf, n, path, o, out, err);
	free(buf);
	return rc;
}
