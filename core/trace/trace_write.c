/* Kept free of the rest of liboobprof (see docs/formats/OOBT.md): the QEMU plugin
 * compiles this file with oobt.c, oob_err.c and oob_mem.c only. */
#include "trace/trace_write.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_mem.h"
#include "trace/oobt.h"

/* Also the content of each LZ4 frame: big enough that the frames compress
 * about as well as one stream, small enough to spread over threads. */
enum { OUT_CHUNK = 4 << 20 };
/* oobt: a sync point ends a frame before this much is left of OUT_CHUNK, so
 * that frames end at sync points (a batch's operations are rarely more);
 * one that is more is cut where the frame fills, which only costs a sync
 * point. */
enum { OUT_SYNC_MARGIN = 1 << 20 };

struct trace_writer {
	struct trace_write_opts o;
	struct out_file out;
	int failed;
	/* output staging: bytes to compress (lz4) or to write */
	uint8_t *stage;
	size_t nstage;
	size_t stage_max; /* OUT_CHUNK, or whole tracerv-bin records of it */
	LZ4F_cctx *cctx;
	LZ4F_preferences_t prefs;
	uint64_t frames; /* LZ4 frames written */
	uint8_t *zbuf;
	size_t zcap;
	/* oobt */
	struct oobt_enc *enc;
	uint64_t synced; /* records before the last sync point */
	/* tracerv-bin */
	unsigned width, words, vbit;
	uint64_t rec[8];
	unsigned nslots;
	uint64_t seq;
	int hart_known;
	uint16_t hart;
};

static const char *out_name(const struct trace_writer *w)
{
	return w->out.tmp ? w->out.tmp : w->out.path;
}

static int write_all(struct trace_writer *w, const uint8_t *p, size_t n, struct oob_err *err)
{
	while (n) {
		ssize_t k = write(w->out.fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int e = k < 0 ? errno : EIO;
			return oob_err_set(err, -e, "writing %s: %s", out_name(w), strerror(e));
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The staged bytes as one LZ4 frame that declares its content size and
 * depends on no other: readers decompress frames on several threads
 * (lz4par.h); the checksums are liblz4's. */
static int lz4_frame(struct trace_writer *w, struct oob_err *err)
{
	size_t z[3];
	w->prefs.frameInfo.contentSize = w->nstage;
	z[0] = LZ4F_compressBegin(w->cctx, w->zbuf, w->zcap, &w->prefs);
	if (LZ4F_isError(z[0]))
		goto fail;
	z[1] =
	    LZ4F_compressUpdate(w->cctx, w->zbuf + z[0], w->zcap - z[0], w->stage, w->nstage, NULL);
	if (LZ4F_isError(z[1])) {
		z[0] = z[1];
		goto fail;
	}
	z[2] = LZ4F_compressEnd(w->cctx, w->zbuf + z[0] + z[1], w->zcap - z[0] - z[1], NULL);
	if (LZ4F_isError(z[2])) {
		z[0] = z[2];
		goto fail;
	}
	w->frames++;
	return write_all(w, w->zbuf, z[0] + z[1] + z[2], err);
fail:
	return oob_err_set(err, -EIO, "lz4 compression of %s: %s", out_name(w),
			   LZ4F_getErrorName(z[0]));
}

/* Sends the staged bytes on: through the LZ4 frame compressor or straight. */
static int flush_stage(struct trace_writer *w, struct oob_err *err)
{
	if (!w->nstage)
		return 0;
	int rc;
	if (w->cctx) {
		rc = lz4_frame(w, err);
	} else {
		rc = write_all(w, w->stage, w->nstage, err);
	}
	w->nstage = 0;
	return rc;
}

static int emit(struct trace_writer *w, const void *p, size_t n, struct oob_err *err)
{
	const uint8_t *b = p;
	while (n) {
		size_t k = w->stage_max - w->nstage < n ? w->stage_max - w->nstage : n;
		memcpy(w->stage + w->nstage, b, k);
		w->nstage += k;
		b += k;
		n -= k;
		if (w->nstage == w->stage_max) {
			int rc = flush_stage(w, err);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int start_lz4(struct trace_writer *w, struct oob_err *err)
{
	LZ4F_preferences_t *prefs = &w->prefs;
	memset(prefs, 0, sizeof(*prefs));
	prefs->frameInfo.blockSizeID = LZ4F_max4MB;
	prefs->frameInfo.blockMode = LZ4F_blockIndependent;
	prefs->frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	if (LZ4F_isError(LZ4F_createCompressionContext(&w->cctx, LZ4F_VERSION)))
		return oob_err_set(err, -ENOMEM, "lz4: cannot create a compression context");
	w->zcap = LZ4F_HEADER_SIZE_MAX + LZ4F_compressBound(OUT_CHUNK, prefs);
	w->zbuf = oob_xmalloc(w->zcap);
	return 0;
}

static int check_opts(struct trace_writer *w, struct oob_err *err)
{
	struct trace_write_opts *o = &w->o;
	if (o->format != TRACE_FMT_OOBT && o->format != TRACE_FMT_TRACERV_BIN)
		return oob_err_set(err, -ENOTSUP, "trace_write: format %d cannot be written",
				   (int)o->format);
	if (!o->clock_num || !o->clock_den)
		o->clock_num = o->clock_den = 1;
	if (o->format == TRACE_FMT_OOBT)
		return 0;
	w->width = o->tracerv.width ? o->tracerv.width : 1;
	w->words = o->tracerv.words ? o->tracerv.words : 1 + (w->width > 7 ? 7 : w->width);
	w->vbit = o->tracerv.valid_bit ? o->tracerv.valid_bit : 63;
	if (w->width < 1 || w->width > 7 || w->words < 2 || w->words > 8 ||
	    w->width > w->words - 1 || (w->vbit != 40 && w->vbit != 63))
		return oob_err_set(
		    err, -EINVAL, "tracerv-bin: impossible layout width %u, %u words, valid bit %u",
		    w->width, w->words, w->vbit);
	return 0;
}

static int write_header(struct trace_writer *w, struct oob_err *err)
{
	struct trace_write_opts *o = &w->o;
	if (o->format == TRACE_FMT_OOBT) {
		struct oobt_header h = {
		    .fields = o->fields & 0x3f,
		    .clock_num = o->clock_num,
		    .clock_den = o->clock_den,
		    .compression = o->oobt_plain ? OOBT_COMP_NONE : OOBT_COMP_LZ4,
		    .icache_log2 = (uint8_t)oobt_enc_icache_log2(w->enc),
		    .source_format = (uint16_t)o->source,
		};
		uint8_t hb[OOBT_HEADER_SIZE];
		oobt_header_encode(&h, hb);
		int rc = write_all(w, hb, sizeof(hb), err);
		if (rc || o->oobt_plain)
			return rc;
		return start_lz4(w, err);
	}
	if (o->lz4) {
		int rc = start_lz4(w, err);
		if (rc)
			return rc;
	}
	/* The header's m/d is the tile's frequency relative to the base clock,
	 * the inverse of our tile-to-base cycle ratio. */
	char line[512];
	int n = snprintf(
	    line, sizeof(line),
	    "# Clock Domain: %s, Relative Frequency: %" PRIu64 "/%" PRIu64 " of Base Clock\n",
	    o->clock_domain ? o->clock_domain : "baseClock", o->clock_den, o->clock_num);
	if (n < 0 || (size_t)n >= sizeof(line))
		return oob_err_set(err, -EINVAL, "tracerv-bin: clock domain name too long");
	/* LZ4: the line in a frame of its own and frames of whole records, so
	 * that a reader can start decoding at any frame (trace_split.h) */
	w->stage_max = OUT_CHUNK / (w->words * 8) * (w->words * 8);
	int rc = emit(w, line, (size_t)n, err);
	return rc || !o->lz4 ? rc : flush_stage(w, err);
}

/* ---- output files (out_file, trace_write.h) ---- */

/* "-", a pipe or a device: written straight through (no temporary file to
 * rename over it, no fsync, never truncated or removed). 1 if so, 0 for a
 * regular file or a new one, <0 on error. A symbolic link to a regular file
 * is followed: its target is replaced, the link stays. */
static int open_direct(struct out_file *o, const char *path, struct stat *st, struct oob_err *err)
{
	int dash = strcmp(path, "-") == 0;
	if (!dash && lstat(path, st) == 0 && S_ISLNK(st->st_mode)) {
		char *real = realpath(path, NULL);
		if (!real)
			return oob_err_set(err, errno == ENOENT ? -ENOENT : -errno,
					   "%s: a symbolic link to nothing: not replaced", path);
		free(o->path);
		o->path = oob_xstrdup(real);
		free(real);
	}
	if (!dash && (stat(o->path, st) != 0 || S_ISREG(st->st_mode)))
		return 0;
	o->fd = dash ? dup(STDOUT_FILENO) : open(path, O_WRONLY | O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		return oob_err_set(err, -e, "cannot open %s: %s", path, strerror(e));
	}
	return 1;
}

int out_file_open(struct out_file *o, const char *path, struct oob_err *err)
{
	struct stat st = {0};
	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = oob_xstrdup(path);
	int d = open_direct(o, path, &st, err);
	if (d) {
		if (d < 0)
			out_file_abort(o);
		return d < 0 ? d : 0;
	}
	size_t n = strlen(o->path) + 16;
	o->tmp = oob_xmalloc(n);
	snprintf(o->tmp, n, "%s.tmp.XXXXXX", o->path);
	o->fd = mkstemp(o->tmp);
	if (o->fd < 0) {
		int e = errno;
		oob_err_set(err, -e, "cannot create %s: %s", o->tmp, strerror(e));
		free(o->tmp);
		o->tmp = NULL;
		out_file_abort(o);
		return -e;
	}
	/* mkstemp makes the file private; the output is ordinary data, and a
	 * file replaced keeps its mode. */
	(void)fchmod(o->fd, S_ISREG(st.st_mode) ? st.st_mode & 07777 : 0644);
	return 0;
}

FILE *out_file_stream(struct out_file *o, struct oob_err *err)
{
	if (!o->f && !(o->f = fdopen(o->fd, "wb"))) {
		int e = errno;
		oob_err_set(err, -e, "%s: %s", o->path, strerror(e));
		return NULL;
	}
	return o->f;
}

/* The folder of path, fsynced so that the rename is durable (best effort). */
static void sync_dir(const char *path)
{
	char *dir = oob_xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir] = '\0';
	int fd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

int out_file_commit(struct out_file *o, struct oob_err *err)
{
	int e = 0;
	if (o->f && (fflush(o->f) != 0 || ferror(o->f)))
		e = errno ? errno : EIO;
	if (!e && o->tmp && fsync(o->f ? fileno(o->f) : o->fd) != 0)
		e = errno;
	if ((o->f ? fclose(o->f) : close(o->fd)) != 0 && !e)
		e = errno;
	o->f = NULL;
	o->fd = -1;
	if (!e && o->tmp && rename(o->tmp, o->path) != 0)
		e = errno;
	if (e) {
		oob_err_set(err, -e, "%s %s: %s", o->tmp ? "writing" : "flushing",
			    o->tmp ? o->tmp : o->path, strerror(e));
		out_file_abort(o);
		return -e;
	}
	if (o->tmp)
		sync_dir(o->path);
	free(o->tmp);
	o->tmp = NULL;
	out_file_abort(o);
	return 0;
}

void out_file_abort(struct out_file *o)
{
	if (o->f)
		fclose(o->f);
	else if (o->fd >= 0)
		close(o->fd);
	if (o->tmp) /* only ever the file we made: never o->path */
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

struct trace_writer *trace_writer_open(const char *path, const struct trace_write_opts *opts,
				       struct oob_err *err)
{
	struct trace_writer *w = oob_xcalloc(1, sizeof(*w));
	w->out.fd = -1;
	if (opts)
		w->o = *opts;
	else
		w->o.format = TRACE_FMT_OOBT;
	if (check_opts(w, err) || out_file_open(&w->out, path, err))
		goto fail;
	w->stage = oob_xmalloc(OUT_CHUNK);
	w->stage_max = OUT_CHUNK;
	if (w->o.format == TRACE_FMT_OOBT)
		w->enc = oobt_enc_new(w->o.fields, w->o.oobt_icache_log2);
	if (write_header(w, err))
		goto fail;
	return w;
fail:
	trace_writer_abort(w);
	return NULL;
}

static int put_mark(struct trace_writer *w, const char *tag, struct oob_err *err)
{
	uint8_t m[8 + OOBT_MARK_SIZE];
	oobt_mark_encode(tag, oobt_enc_records(w->enc), oobt_enc_hart(w->enc), m);
	return write_all(w, m, sizeof(m), err);
}

/* A sync point between batches: the frame ends before it, a mark says where
 * it is, and the next frame starts with SYNC (docs/formats/OOBT.md). */
static int sync_oobt(struct trace_writer *w, struct oob_err *err)
{
	size_t cut = oobt_enc_sync(w->enc), n;
	const uint8_t *p = oobt_enc_data(w->enc, &n);
	int rc = emit(w, p, cut, err);
	if (!rc)
		rc = flush_stage(w, err);
	if (!rc)
		rc = put_mark(w, OOBT_MARK_SYNC, err);
	if (!rc)
		rc = emit(w, p + cut, n - cut, err);
	oobt_enc_drain(w->enc);
	w->synced = oobt_enc_records(w->enc);
	return rc;
}

static int put_oobt(struct trace_writer *w, const struct trace_batch *b, struct oob_err *err)
{
	int rc = oobt_enc_put(w->enc, b, err);
	if (rc)
		return rc;
	size_t n;
	const uint8_t *p = oobt_enc_data(w->enc, &n);
	uint64_t every = w->o.oobt_sync_records ? w->o.oobt_sync_records : OOBT_SYNC_RECORDS;
	/* several harts: trace_split cuts one hart's stream only, and a sync
	 * point costs a few KiB (the instruction cache starts over) */
	if (w->cctx && oobt_enc_hart(w->enc) != OOBT_MANY_HARTS &&
	    (oobt_enc_records(w->enc) - w->synced >= every ||
	     w->nstage + n >= OUT_CHUNK - OUT_SYNC_MARGIN))
		return sync_oobt(w, err);
	if (n < 256 * 1024)
		return 0;
	rc = emit(w, p, n, err);
	oobt_enc_drain(w->enc);
	return rc;
}

static int flush_record(struct trace_writer *w, struct oob_err *err)
{
	if (!w->nslots)
		return 0;
	int rc = emit(w, w->rec, (size_t)w->words * 8, err);
	memset(w->rec, 0, sizeof(w->rec));
	w->nslots = 0;
	return rc;
}

static int put_tracerv(struct trace_writer *w, const struct trace_batch *b, struct oob_err *err)
{
	if (w->hart_known && b->hart != w->hart)
		return oob_err_set(err, -EINVAL,
				   "tracerv-bin holds one hart: got hart %u after hart %u (write "
				   "one file per hart)",
				   b->hart, w->hart);
	w->hart_known = 1;
	w->hart = b->hart;
	for (uint32_t i = 0; i < b->n; i++, w->seq++) {
		uint64_t pc = b->pc[i];
		uint64_t cyc = b->cycle ? b->cycle[i] : b->seq + i;
		int64_t s = (int64_t)(pc << 24) >> 24;
		if ((uint64_t)s != pc)
			return oob_err_set(err, -EINVAL,
					   "tracerv-bin: pc 0x%" PRIx64 " of record %" PRIu64
					   " is not a 40-bit address",
					   pc, w->seq);
		if (w->nslots && (w->rec[0] != cyc || w->nslots == w->width)) {
			int rc = flush_record(w, err);
			if (rc)
				return rc;
		}
		w->rec[0] = cyc;
		w->rec[1 + w->nslots++] = (pc & ((1ull << 40) - 1)) | 1ull << w->vbit;
	}
	return 0;
}

int trace_writer_put(struct trace_writer *w, const struct trace_batch *b, struct oob_err *err)
{
	if (w->failed)
		return oob_err_set(err, -EINVAL, "trace_write: writer already failed");
	if (!b->n)
		return 0;
	int rc = w->enc ? put_oobt(w, b, err) : put_tracerv(w, b, err);
	if (rc)
		w->failed = 1;
	return rc;
}

static int finish(struct trace_writer *w, struct oob_err *err)
{
	int rc;
	if (w->enc) {
		size_t n;
		oobt_enc_finish(w->enc);
		const uint8_t *p = oobt_enc_data(w->enc, &n);
		if ((rc = emit(w, p, n, err)))
			return rc;
	} else if ((rc = flush_record(w, err))) {
		return rc;
	}
	if ((rc = flush_stage(w, err)))
		return rc;
	if (w->cctx && !w->frames && (rc = lz4_frame(w, err))) /* an empty trace */
		return rc;
	if (w->cctx && w->enc && (rc = put_mark(w, OOBT_MARK_END, err)))
		return rc;
	return out_file_commit(&w->out, err);
}

int trace_writer_close(struct trace_writer *w, struct oob_err *err)
{
	if (!w)
		return 0;
	int rc = w->failed ? oob_err_set(err, -EINVAL,
					 "trace_write: writer had failed; %s not "
					 "written",
					 w->out.path)
			   : finish(w, err);
	trace_writer_abort(w);
	return rc;
}

void trace_writer_abort(struct trace_writer *w)
{
	if (!w)
		return;
	out_file_abort(&w->out);
	LZ4F_freeCompressionContext(w->cctx);
	oobt_enc_free(w->enc);
	free(w->zbuf);
	free(w->stage);
	free(w);
}
