/* lz4par: parallel decompression gives the bytes that were compressed
 * (compressed here with liblz4's one-shot LZ4F_compressFrame), in order,
 * whatever the frame mix; corrupt and truncated input fail naming the
 * offset of the block at fault, after everything before it. */
#include <fcntl.h>
#include <lz4frame.h>
#include <sys/wait.h>

#include "util/in.h"
#include "util/lz4par.h"
#include "util/oob_mem.h"
#include "oobtest.h"

struct mem {
	const uint8_t *p;
	size_t n, pos;
};

/* Hands out the buffer in odd-sized pieces, as a pipe would. */
static long mem_read(void *ctx, uint8_t *dst, size_t n, struct oob_err *err)
{
	struct mem *m = ctx;
	size_t k = m->n - m->pos;
	if (k > n)
		k = n;
	if (k > 777777)
		k = 777777;
	memcpy(dst, m->p + m->pos, k);
	m->pos += k;
	return (long)k;
}

static uint8_t *data_new(size_t n)
{
	uint8_t *d = oob_xmalloc(n);
	for (size_t i = 0; i < n; i++)
		d[i] = (uint8_t)((i * 2654435761u) >> 13 & (i % 5 ? 0x0f : 0xff));
	return d;
}

struct layout {
	size_t frame_off[64], nframes;
};

/* Compresses data as frames of chunk bytes each; sized: declare the
 * content size; bchk: block checksums; bsid: LZ4F block size id. */
static uint8_t *frames(const uint8_t *d, size_t n, size_t chunk, int sized, int bchk,
		       LZ4F_blockSizeID_t bsid, size_t *zn, struct layout *lay)
{
	LZ4F_preferences_t pr;
	memset(&pr, 0, sizeof(pr));
	pr.frameInfo.blockSizeID = bsid;
	pr.frameInfo.blockMode = LZ4F_blockIndependent;
	pr.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	pr.frameInfo.blockChecksumFlag = bchk ? LZ4F_blockChecksumEnabled : LZ4F_noBlockChecksum;
	size_t cap = 0;
	for (size_t off = 0; off < n; off += chunk)
		cap += LZ4F_compressFrameBound(chunk, &pr);
	uint8_t *z = oob_xmalloc(cap);
	*zn = 0;
	if (lay)
		lay->nframes = 0;
	for (size_t off = 0; off < n; off += chunk) {
		size_t k = n - off < chunk ? n - off : chunk;
		pr.frameInfo.contentSize = sized ? k : 0;
		if (lay)
			lay->frame_off[lay->nframes++] = *zn;
		*zn += LZ4F_compressFrame(z + *zn, cap - *zn, d + off, k, &pr);
	}
	return z;
}

/* Reads everything; returns the count or the error, *got filled. */
static long drain(struct lz4par *p, uint8_t *got, size_t cap, size_t *n, struct oob_err *e)
{
	const uint8_t *o;
	long k;
	*n = 0;
	while ((k = lz4par_next(p, &o, e)) > 0) {
		if (*n + (size_t)k <= cap)
			memcpy(got + *n, o, (size_t)k);
		*n += (size_t)k;
	}
	return k;
}

static void frames_of_every_kind_in_order(void)
{
	size_t n = 9 * 1000003, zn1, zn2, zn3;
	uint8_t *d = data_new(n), *got = oob_xmalloc(n);
	/* sized frames, then one frame without a size (sequential), then
	 * sized frames again with a skippable frame between */
	size_t a = 4 * 1000003, b = 2 * 1000003;
	uint8_t *z1 = frames(d, a, 1 << 20, 1, 0, LZ4F_max256KB, &zn1, NULL);
	uint8_t *z2 = frames(d + a, b, b, 0, 1, LZ4F_max64KB, &zn2, NULL);
	uint8_t *z3 = frames(d + a + b, n - a - b, 700000, 1, 1, LZ4F_max4MB, &zn3, NULL);
	static const uint8_t skip[12] = {0x5a, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4};
	size_t zn = zn1 + zn2 + sizeof(skip) + zn3;
	uint8_t *z = oob_xmalloc(zn);
	memcpy(z, z1, zn1);
	memcpy(z + zn1, z2, zn2);
	memcpy(z + zn1 + zn2, skip, sizeof(skip));
	memcpy(z + zn1 + zn2 + sizeof(skip), z3, zn3);
	for (unsigned t = 1; t <= 4; t++) {
		struct mem m = {z, zn, 0};
		struct oob_err e = {0};
		struct lz4par *p = lz4par_new(t, mem_read, &m, NULL, 0, "z", &e);
		CHECK(p);
		size_t got_n;
		long k = drain(p, got, n, &got_n, &e);
		lz4par_free(p);
		CHECK_EQ(k, 0);
		CHECK_EQ(got_n, n);
		CHECK(memcmp(got, d, n) == 0);
	}
	free(z);
	free(z1);
	free(z2);
	free(z3);
	free(got);
	free(d);
}

static void corrupt_block_names_its_offset(void)
{
	size_t n = 4u << 20, zn;
	struct layout lay;
	uint8_t *d = data_new(n), *got = oob_xmalloc(n);
	/* 1 MiB frames of 256 KiB blocks with block checksums */
	uint8_t *z = frames(d, n, 1 << 20, 1, 1, LZ4F_max256KB, &zn, &lay);
	CHECK_EQ(lay.nframes, 4);
	/* the third block of frame 2: walk to it by the block sizes */
	size_t off = lay.frame_off[2];
	off += LZ4F_headerSize(z + off, zn - off);
	for (int blk = 0; blk < 2; blk++) {
		uint32_t bs;
		memcpy(&bs, z + off, 4);
		off += 4 + (bs & 0x7fffffffu) + 4;
	}
	z[off + 4 + 100] ^= 0x21;
	struct mem m = {z, zn, 0};
	struct oob_err e = {0};
	struct lz4par *p = lz4par_new(2, mem_read, &m, NULL, 0, "z", &e);
	CHECK(p);
	size_t got_n;
	long k = drain(p, got, n, &got_n, &e);
	lz4par_free(p);
	CHECK_EQ(k, -EINVAL);
	/* frames 0 and 1 came out first, whole */
	CHECK_EQ(got_n, 2u << 20);
	CHECK(memcmp(got, d, got_n) == 0);
	char want[128];
	snprintf(want, sizeof(want), "compressed byte %zu (decompressed byte %u)", off,
		 (2u << 20) + 2 * (256u << 10));
	if (!strstr(e.msg, want))
		CHECK_STR(e.msg, want);
	free(z);
	free(got);
	free(d);
}

static void truncated_and_garbage(void)
{
	size_t n = 3u << 20, zn;
	struct layout lay;
	uint8_t *d = data_new(n), *got = oob_xmalloc(n);
	uint8_t *z = frames(d, n, 1 << 20, 1, 0, LZ4F_max1MB, &zn, &lay);
	/* cut inside the last frame: two frames, then -EPIPE */
	struct mem m = {z, lay.frame_off[2] + 50, 0};
	struct oob_err e = {0};
	struct lz4par *p = lz4par_new(3, mem_read, &m, NULL, 0, "z", &e);
	size_t got_n;
	CHECK(p);
	long k = drain(p, got, n, &got_n, &e);
	lz4par_free(p);
	CHECK_EQ(k, -EPIPE);
	CHECK_EQ(got_n, 2u << 20);
	CHECK(strstr(e.msg, "truncated LZ4 frame"));
	/* garbage where frame 1 should start */
	memset(z + lay.frame_off[1], 'x', 8);
	m = (struct mem){z, zn, 0};
	p = lz4par_new(2, mem_read, &m, NULL, 0, "z", &e);
	CHECK(p);
	k = drain(p, got, n, &got_n, &e);
	lz4par_free(p);
	CHECK_EQ(k, -EINVAL);
	CHECK_EQ(got_n, 1u << 20);
	char want[96];
	snprintf(want, sizeof(want), "not an LZ4 frame (bad magic number) at compressed byte %zu",
		 lay.frame_off[1]);
	CHECK(strstr(e.msg, want));
	free(z);
	free(got);
	free(d);
}

/* Stopping mid-stream with frames in flight: no hang, no leak. */
static void free_mid_stream(void)
{
	size_t n = 8u << 20, zn;
	uint8_t *d = data_new(n);
	uint8_t *z = frames(d, n, 1 << 20, 1, 0, LZ4F_max1MB, &zn, NULL);
	struct mem m = {z, zn, 0};
	struct oob_err e = {0};
	struct lz4par *p = lz4par_new(2, mem_read, &m, NULL, 0, "z", &e);
	const uint8_t *o;
	CHECK(p);
	CHECK(lz4par_next(p, &o, &e) > 0);
	lz4par_free(p);
	free(z);
	free(d);
}

/* Writes z to a pipe from a child process; returns the read end. */
static int pipe_from(const uint8_t *z, size_t zn, pid_t *pid)
{
	int fds[2];
	if (pipe(fds))
		return -1;
	*pid = fork();
	if (*pid == 0) {
		close(fds[0]);
		for (size_t off = 0; off < zn;) {
			ssize_t k = write(fds[1], z + off, zn - off < 65536 ? zn - off : 65536);
			if (k <= 0)
				_exit(1);
			off += (size_t)k;
		}
		_exit(0);
	}
	close(fds[1]);
	return fds[0];
}

/* Through in: a mapped file and a pipe, 1 and 2 threads, same bytes. */
static void in_stream_threads_file_and_pipe(void)
{
	size_t n = 6 * 1000003, zn;
	uint8_t *d = data_new(n);
	uint8_t *z = frames(d, n, 1 << 20, 1, 0, LZ4F_max4MB, &zn, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/out/lz4par.lz4",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(z, 1, zn, f) == zn);
	fclose(f);
	for (int how = 0; how < 4; how++) {
		struct in_opts o = {.threads = how & 1 ? 2 : 0};
		struct oob_err e = {0};
		pid_t pid = -1;
		struct in_stream *s;
		if (how & 2) {
			int fd = pipe_from(z, zn, &pid);
			CHECK(fd >= 0);
			s = in_open_fd(fd, "pipe", &o, &e);
		} else {
			s = in_open(path, &o, &e);
		}
		CHECK(s && in_is_lz4(s));
		const uint8_t *p;
		long k;
		size_t off = 0;
		int same = 1;
		while ((k = in_peek(s, &p, 333333, &e)) > 0) {
			same &= off + (size_t)k <= n && memcmp(p, d + off, (size_t)k) == 0;
			in_consume(s, (size_t)k);
			off += (size_t)k;
		}
		CHECK_EQ(in_raw_bytes(s), zn);
		in_close(s);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		CHECK_EQ(k, 0);
		CHECK_EQ(off, n);
		CHECK(same);
	}
	unlink(path);
	free(z);
	free(d);
}

int main(void)
{
	OOBTEST_BEGIN("test_lz4par");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/tests/out",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	mkdir(dir, 0755);
	RUN(frames_of_every_kind_in_order);
	RUN(corrupt_block_names_its_offset);
	RUN(truncated_and_garbage);
	RUN(free_mid_stream);
	RUN(in_stream_threads_file_and_pipe);
	return OOBTEST_END();
}
