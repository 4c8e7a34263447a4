/* in: buffered reads, LZ4 frames (checked against the lz4 command's own
 * compression of the same file), growing files, caps and corrupt input. */
#include <fcntl.h>
#include <lz4frame.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "util/in.h"
#include "util/oob_mem.h"
#include "oobtest.h"

/* Reads s to the end in pieces of varying size and compares with want. */
static const char *same_bytes(struct in_stream *s, const uint8_t *want, size_t n)
{
	static char why[256];
	struct oob_err e = {0};
	size_t off = 0;
	for (unsigned step = 1;; step = step * 7 % 1000003 + 1) {
		const uint8_t *p;
		size_t ask = step % IN_WINDOW + 1;
		long k = in_peek(s, &p, ask, &e);
		if (k < 0) {
			snprintf(why, sizeof(why), "peek: %.200s", e.msg);
			return why;
		}
		if (k == 0)
			break;
		if ((size_t)k < ask && off + (size_t)k != n)
			return "short peek before the end";
		if (off + (size_t)k > n || memcmp(p, want + off, (size_t)k) != 0) {
			snprintf(why, sizeof(why), "bytes differ at %zu", off);
			return why;
		}
		size_t take = (size_t)k - (step % 3 ? 0 : (size_t)k / 2);
		in_consume(s, take);
		off += take;
		if (in_offset(s) != off)
			return "in_offset is wrong";
	}
	if (off != n) {
		snprintf(why, sizeof(why), "read %zu of %zu bytes", off, n);
		return why;
	}
	return NULL;
}

static void plain_and_lz4_give_the_same_bytes(void)
{
	const char *plain = oobtest_gen("readers/rdprog.qemu.log");
	const char *lz = oobtest_gen("readers/rdprog.qemu.log.lz4");
	if (!plain || !lz)
		SKIP("fixtures not generated (gen-readers.sh)");
	size_t n;
	uint8_t *want = oobtest_slurp(plain, &n);
	struct oob_err e = {0};
	struct in_stream *s = in_open(plain, NULL, &e);
	CHECK(s && !in_is_lz4(s));
	const char *why = same_bytes(s, want, n);
	CHECK(in_raw_bytes(s) == n);
	in_close(s);
	if (why)
		CHECK_STR(why, "same bytes (plain)");
	s = in_open(lz, NULL, &e);
	CHECK(s && in_is_lz4(s));
	why = same_bytes(s, want, n);
	struct stat st;
	CHECK(stat(lz, &st) == 0 && in_raw_bytes(s) == (uint64_t)st.st_size);
	in_close(s);
	if (why)
		CHECK_STR(why, "same bytes (lz4)");
	free(want);
}

/* Counts lines and bytes with in_getline; the truth is the file itself. */
static void getline_counts_lines(void)
{
	const char *plain = oobtest_gen("readers/spike.log");
	const char *lz = oobtest_gen("readers/spike.log.lz4");
	if (!plain || !lz)
		SKIP("fixtures not generated (gen-readers.sh)");
	size_t n;
	uint8_t *want = oobtest_slurp(plain, &n);
	uint64_t lines = 0, sum = 0;
	for (size_t i = 0; i < n; i++)
		lines += want[i] == '\n';
	for (int z = 0; z < 2; z++) {
		struct oob_err e = {0};
		struct in_stream *s = in_open(z ? lz : plain, NULL, &e);
		const char *line;
		long k;
		uint64_t got = 0, off = 0;
		int ok = 1;
		while ((k = in_getline(s, &line, &e)) >= 0) {
			ok &= memcmp(line, want + off, (size_t)k) == 0 && line[k] == '\0' &&
			      want[off + (size_t)k] == '\n';
			off += (uint64_t)k + 1;
			got++;
			sum += (uint64_t)k;
		}
		CHECK_EQ(k, -1);
		CHECK(ok);
		CHECK_EQ(got, lines);
		CHECK_EQ(in_lineno(s), lines);
		CHECK_EQ(in_offset(s), n);
		CHECK_EQ(got, 1915006); /* the fixture's README */
		in_close(s);
	}
	free(want);
}

static void getline_edge_cases(void)
{
	const char *text = "a\r\n\nlast";
	struct oob_err e = {0};
	struct in_stream *s = in_open_mem(text, strlen(text), "m", &e);
	const char *l;
	CHECK_EQ(in_getline(s, &l, &e), 1);
	CHECK_STR(l, "a");
	CHECK_EQ(in_getline(s, &l, &e), 0);
	CHECK_EQ(in_getline(s, &l, &e), 4);
	CHECK_STR(l, "last");
	CHECK_EQ(in_lineno(s), 3);
	CHECK_EQ(in_getline(s, &l, &e), -1);
	in_close(s);
	/* a line longer than the window names its number */
	size_t n = 2 * IN_WINDOW;
	char *big = oob_xmalloc(n);
	memset(big, 'y', n);
	memcpy(big, "ok\nok\n", 6);
	s = in_open_mem(big, n, "big", &e);
	CHECK_EQ(in_getline(s, &l, &e), 2);
	CHECK_EQ(in_getline(s, &l, &e), 2);
	CHECK_EQ(in_getline(s, &l, &e), -EINVAL);
	CHECK(strstr(e.msg, "big: line 3 is longer than"));
	CHECK_EQ(in_getline(s, &l, &e), -EINVAL); /* sticky */
	in_close(s);
	free(big);
}

/* Compresses with liblz4's frame API into memory (several frames). */
static uint8_t *lz4_frames(const uint8_t *p, size_t n, int frames, size_t *zn)
{
	size_t cap = (size_t)frames * LZ4F_compressFrameBound(n, NULL) + 64, off = 0;
	uint8_t *z = oob_xmalloc(cap);
	for (int f = 0; f < frames; f++) {
		size_t a = n * (size_t)f / (size_t)frames, b = n * (size_t)(f + 1) / (size_t)frames;
		LZ4F_preferences_t pr;
		memset(&pr, 0, sizeof(pr));
		pr.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
		off += LZ4F_compressFrame(z + off, cap - off, p + a, b - a, &pr);
	}
	*zn = off;
	return z;
}

static void lz4_frames_caps_and_corruption(void)
{
	size_t n = 3 * IN_WINDOW + 12345, zn;
	uint8_t *data = oob_xmalloc(n);
	for (size_t i = 0; i < n; i++)
		data[i] = (uint8_t)((i * 2654435761u) >> 13 & (i % 7 ? 0x0f : 0xff));
	uint8_t *z = lz4_frames(data, n, 3, &zn);
	struct oob_err e = {0};
	struct in_stream *s = in_open_mem(z, zn, "z", &e);
	CHECK(s && in_is_lz4(s));
	const char *why = same_bytes(s, data, n);
	in_close(s);
	if (why)
		CHECK_STR(why, "concatenated frames");
	/* decompressed-size cap */
	struct in_opts o = {.max_bytes = IN_WINDOW};
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/out/in-cap.lz4",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(z, 1, zn, f) == zn);
	fclose(f);
	s = in_open(path, &o, &e);
	const uint8_t *p;
	long k;
	while ((k = in_peek(s, &p, IN_WINDOW, &e)) > 0)
		in_consume(s, (size_t)k);
	CHECK_EQ(k, -EFBIG);
	CHECK(strstr(e.msg, "once decompressed"));
	in_close(s);
	unlink(path);
	/* truncated frame */
	s = in_open_mem(z, zn - 3, "z", &e);
	while ((k = in_peek(s, &p, IN_WINDOW, &e)) > 0)
		in_consume(s, (size_t)k);
	CHECK_EQ(k, -EINVAL);
	CHECK(strstr(e.msg, "LZ4"));
	in_close(s);
	/* flipped bytes: an error (checksums), never a crash */
	for (size_t at = 7; at < zn; at += zn / 37 + 1) {
		z[at] ^= 0x5a;
		s = in_open_mem(z, zn, "z", &e);
		uint64_t got = 0;
		while ((k = in_peek(s, &p, IN_WINDOW, &e)) > 0) {
			in_consume(s, (size_t)k);
			got += (uint64_t)k;
		}
		/* frame and content checksums catch every flip */
		CHECK_EQ(k, -EINVAL);
		CHECK(strstr(e.msg, "LZ4") && strstr(e.msg, "byte"));
		in_close(s);
		z[at] ^= 0x5a;
	}
	free(z);
	free(data);
}

/* A file of whole pages whose last line has no '\n', and a line longer
 * than the window that the buffer holds whole with its '\n': refused, as
 * in.h promises, however the bytes were read. */
static void getline_page_end_and_overlong(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/out/in-pages.txt",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 4 * page;
	char *text = oob_xmalloc(n);
	memset(text, 'a', n);
	for (size_t i = 99; i < n; i += 100)
		text[i] = '\n';
	text[n - 1] = 'z'; /* the last line is unterminated */
	FILE *f = fopen(path, "wb");
	CHECK(f && fwrite(text, 1, n, f) == n);
	fclose(f);
	struct oob_err e = {0};
	struct in_stream *s = in_open(path, NULL, &e);
	CHECK(s);
	const char *l;
	long k;
	uint64_t lines = 0, bytes = 0;
	while ((k = in_getline(s, &l, &e)) >= 0) {
		lines++;
		bytes += (uint64_t)k + 1;
		if ((size_t)k != strlen(l))
			break;
	}
	CHECK_EQ(k, -1);
	CHECK_EQ(lines, n / 100 + 1);
	CHECK_EQ(bytes, n + 1);
	CHECK(in_line_unterminated(s));
	CHECK_EQ(l[0], 'a');
	in_close(s);
	free(text);
	/* longer than the window, with a '\n' after it: refused */
	size_t m = IN_WINDOW + 10;
	text = oob_xmalloc(m);
	memset(text, 'b', m);
	text[m - 1] = '\n';
	f = fopen(path, "wb");
	CHECK(f && fwrite(text, 1, m, f) == m);
	fclose(f);
	s = in_open(path, NULL, &e);
	CHECK(s);
	CHECK_EQ(in_getline(s, &l, &e), -EINVAL);
	CHECK(strstr(e.msg, "line 1 is longer than"));
	in_close(s);
	free(text);
	unlink(path);
}

static void open_errors(void)
{
	struct oob_err e = {0};
	CHECK(!in_open("/nonexistent/trace", NULL, &e));
	CHECK_EQ(e.code, -ENOENT);
	CHECK(strstr(e.msg, "/nonexistent/trace"));
	struct in_stream *s = in_open_mem("", 0, "empty", &e);
	const uint8_t *p;
	CHECK(s && in_peek(s, &p, 10, &e) == 0);
	CHECK_STR(in_name(s), "empty");
	in_close(s);
}

struct follow {
	pid_t child;
	int calls, done;
};

/* more(): waits while the writer lives; then one last read, then the end. */
static int more_cb(void *ctx)
{
	struct follow *f = ctx;
	f->calls++;
	if (f->done)
		return 0;
	int st;
	if (waitpid(f->child, &st, WNOHANG) == f->child)
		f->done = 1; /* read once more: the last bytes may be new */
	else
		usleep(2000);
	return 1;
}

static void follows_a_growing_file(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/out/in-grow.txt",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	enum { CHUNKS = 20, LINES = 500 };
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char line[64];
		for (int c = 0; c < CHUNKS; c++) {
			for (int i = 0; i < LINES; i++) {
				int k = snprintf(line, sizeof(line), "chunk %d line %d\n", c, i);
				if (write(fd, line, (size_t)k) != k)
					_exit(1);
			}
			usleep(3000);
		}
		_exit(0);
	}
	close(fd);
	struct follow fl = {.child = pid};
	struct in_opts o = {.more = more_cb, .more_ctx = &fl};
	struct oob_err e = {0};
	struct in_stream *s = in_open(path, &o, &e);
	CHECK(s);
	const char *l;
	long k;
	uint64_t lines = 0;
	int ordered = 1;
	while ((k = in_getline(s, &l, &e)) >= 0) {
		char want[64];
		snprintf(want, sizeof(want), "chunk %d line %d", (int)(lines / LINES),
			 (int)(lines % LINES));
		ordered &= strcmp(l, want) == 0;
		lines++;
	}
	in_close(s);
	if (!fl.done)
		waitpid(pid, NULL, 0);
	CHECK_EQ(k, -1);
	CHECK(ordered);
	CHECK_EQ(lines, CHUNKS * LINES);
	CHECK(fl.calls > 1); /* it did wait for the writer */
	unlink(path);
}

static int cancel_cb(void *ctx)
{
	return -ECANCELED;
}

static void more_can_cancel(void)
{
	struct oob_err e = {0};
	char path[512];
	snprintf(path, sizeof(path), "%s/tests/out/in-cancel.txt",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	FILE *f = fopen(path, "w");
	CHECK(f);
	fputs("one line\n", f);
	fclose(f);
	struct in_opts o = {.more = cancel_cb};
	struct in_stream *s = in_open(path, &o, &e);
	const char *l;
	CHECK(s);
	CHECK_EQ(in_getline(s, &l, &e), 8);
	CHECK_EQ(in_getline(s, &l, &e), -ECANCELED);
	CHECK(strstr(e.msg, "abandoned at byte 9"));
	in_close(s);
	unlink(path);
}

int main(void)
{
	OOBTEST_BEGIN("test_in");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/tests/out",
		 getenv("OOB_BUILDDIR") ? getenv("OOB_BUILDDIR") : ".");
	mkdir(dir, 0755);
	RUN(plain_and_lz4_give_the_same_bytes);
	RUN(getline_counts_lines);
	RUN(getline_edge_cases);
	RUN(lz4_frames_caps_and_corruption);
	RUN(getline_page_end_and_overlong);
	RUN(open_errors);
	RUN(follows_a_growing_file);
	RUN(more_can_cancel);
	return OOBTEST_END();
}
