/* test_trace_split: a trace file cut into pieces (trace_split.h) decodes,
 * piece after piece and batch after batch, to exactly the instructions it
 * was written from: TracerV raw records written here byte by byte (width
 * 2, invalid slots), our writer's TracerV LZ4 frames (several frames, cut
 * at record boundaries), and our writer's oobt cut at its sync points
 * (bits, privilege, traps); what cannot be cut is refused with -ENOTSUP,
 * a file cut short or a sync mark that lies is an error. */
#include <lz4frame.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oobtest.h"
#include "trace/oobt.h"
#include "util/oob_mem.h"
#include "trace/trace_split.h"
#include "trace/trace_write.h"

#define NINS 400000u
static const char HDR[] = "# Clock Domain: baseClock, Relative Frequency: 1/1 of Base Clock\n";

static uint64_t pcs[NINS], cycles[NINS];

/* The instructions: canonical addresses of both halves, growing cycles. */
static void make_truth(void)
{
	uint64_t x = 88172645463325252ull;
	for (uint32_t i = 0; i < NINS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t a = (x & 0xfffffffffeull);
		pcs[i] = a >> 39 & 1 ? a | 0xffffff0000000000ull : a;
		cycles[i] = 1000 + i / 2;
	}
}

/* Every piece decoded in order, compared with the first n instructions;
 * each piece's first number is exact (every slot before it valid) or
 * above. */
static void check_pieces(const struct trace_split *s, uint32_t n, int all_valid)
{
	struct trace_split_cur c = {0};
	struct oob_err e = {0};
	uint32_t at = 0;
	long m;
	for (size_t k = 0; k < trace_split_pieces(s); k++) {
		if (all_valid)
			CHECK_EQ(trace_split_first(s, k), at);
		else
			CHECK(trace_split_first(s, k) >= at);
		trace_split_cur_start(s, k, &c);
		while ((m = trace_split_cur_next(s, &c, &e)) > 0) {
			CHECK(m <= TRACE_BATCH_MAX && at + (uint64_t)m <= n);
			for (long i = 0; i < m; i++, at++) {
				CHECK_EQ(c.pc[i], pcs[at]);
				CHECK_EQ(c.cycle[i], cycles[at]);
			}
		}
		CHECK_EQ(m, 0);
	}
	CHECK_EQ(at, n);
	trace_split_cur_free(&c);
}

static void put64(FILE *f, uint64_t v)
{
	fwrite(&v, 8, 1, f); /* little-endian hosts (trace_tracerv.c) */
}

/* Width 2, 3 words, valid bit 63: every 7th record has its second slot
 * invalid. */
static uint32_t write_raw(const char *path, size_t extra)
{
	FILE *f = fopen(path, "wb");
	uint32_t i = 0;
	fputs(HDR, f);
	for (uint32_t r = 0; i < NINS; r++) {
		int two = r % 7 != 6 && i + 1 < NINS;
		put64(f, cycles[i]);
		put64(f, (pcs[i] & 0xffffffffffull) | 1ull << 63);
		put64(f, two ? (pcs[i + 1] & 0xffffffffffull) | 1ull << 63 : 0);
		for (uint32_t k = i; k < i + 1u + two; k++)
			cycles[k] = cycles[i];
		i += 1u + two;
	}
	for (size_t k = 0; k < extra; k++)
		fputc(0, f);
	fclose(f);
	return i;
}

static void raw_width2(void)
{
	const char *path = oobtest_out("split", "w2.bin");
	struct oob_err e = {0};
	make_truth();
	uint32_t n = write_raw(path, 0);
	struct trace_opts o = {.format = TRACE_FMT_TRACERV_BIN,
			       .tracerv = {.width = 2, .words = 3, .valid_bit = 63}};
	struct trace_split *s = trace_split_open(path, &o, 1000, &e);
	CHECK(s != NULL);
	CHECK(trace_split_pieces(s) > 100);
	check_pieces(s, n, 0);
	trace_split_close(s);
}

static void raw_cut_tail(void)
{
	const char *path = oobtest_out("split", "cut.bin");
	struct oob_err e = {0};
	make_truth();
	write_raw(path, 5);
	struct trace_split *s = trace_split_open(path, NULL, 1000, &e);
	CHECK(s == NULL);
	CHECK_EQ(e.code, -ENOTSUP);
}

static void lz4_writer_frames(void)
{
	const char *path = oobtest_out("split", "w1.bin.lz4");
	struct oob_err e = {0};
	struct trace_write_opts wo = {
	    .format = TRACE_FMT_TRACERV_BIN, .fields = TRACE_F_CYCLE, .lz4 = 1};
	make_truth();
	struct trace_writer *w = trace_writer_open(path, &wo, &e);
	CHECK(w != NULL);
	for (uint32_t i = 0; i < NINS; i += TRACE_BATCH_MAX) {
		uint32_t m = NINS - i < TRACE_BATCH_MAX ? NINS - i : TRACE_BATCH_MAX;
		struct trace_batch b = {.n = m, .pc = pcs + i, .cycle = cycles + i, .seq = i};
		CHECK(trace_writer_put(w, &b, &e) == 0);
	}
	CHECK(trace_writer_close(w, &e) == 0);
	/* 6.4 MB of records: a header frame and two of records */
	struct trace_split *s = trace_split_open(path, NULL, 100000, &e);
	CHECK(s != NULL);
	CHECK(trace_split_pieces(s) >= 2);
	check_pieces(s, NINS, 1);
	trace_split_close(s);
}

/* One frame without its content size (as `lz4` writes): not cut. */
static void lz4_one_frame(void)
{
	const char *raw = oobtest_out("split", "w2.bin"), *path = oobtest_out("split", "one.lz4");
	struct oob_err e = {0};
	struct stat st;
	make_truth();
	write_raw(raw, 0);
	CHECK(stat(raw, &st) == 0);
	FILE *f = fopen(raw, "rb");
	uint8_t *in = oob_xmalloc((size_t)st.st_size);
	CHECK(fread(in, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
	fclose(f);
	size_t cap = LZ4F_compressFrameBound((size_t)st.st_size, NULL);
	uint8_t *out = oob_xmalloc(cap);
	size_t z = LZ4F_compressFrame(out, cap, in, (size_t)st.st_size, NULL);
	CHECK(!LZ4F_isError(z));
	f = fopen(path, "wb");
	fwrite(out, 1, z, f);
	fclose(f);
	free(in);
	free(out);
	struct trace_split *s = trace_split_open(path, NULL, 1000, &e);
	CHECK(s == NULL);
	CHECK_EQ(e.code, -ENOTSUP);
}

/* Decodes every piece; the first error's code (and e), or 0. */
static long read_all(const struct trace_split *s, struct oob_err *e)
{
	struct trace_split_cur c = {0};
	long m = 0;
	for (size_t k = 0; k < trace_split_pieces(s) && m >= 0; k++) {
		trace_split_cur_start(s, k, &c);
		while ((m = trace_split_cur_next(s, &c, e)) > 0)
			;
	}
	trace_split_cur_free(&c);
	return m;
}

/* A file cut short after it was split (a user truncating it, a disk
 * freeing it): the read that finds it short fails and says where, raw and
 * LZ4 alike (a mapped file raised SIGBUS here). */
static void shrunk_after_open(void)
{
	const char *raw = oobtest_out("split", "shrink.bin"),
		   *lz = oobtest_out("split", "w1.bin.lz4");
	struct oob_err e = {0};
	struct stat st;
	make_truth();
	write_raw(raw, 0);
	struct trace_opts o = {.format = TRACE_FMT_TRACERV_BIN,
			       .tracerv = {.width = 2, .words = 3, .valid_bit = 63}};
	struct trace_split *s = trace_split_open(raw, &o, 1000, &e);
	CHECK(s != NULL);
	CHECK(stat(raw, &st) == 0);
	CHECK(truncate(raw, st.st_size / 2) == 0);
	CHECK_EQ(read_all(s, &e), -EIO);
	CHECK(strstr(e.msg, "shrank") != NULL && strstr(e.msg, "at byte ") != NULL);
	trace_split_close(s);

	lz4_writer_frames(); /* writes w1.bin.lz4 */
	s = trace_split_open(lz, NULL, 100000, &e);
	CHECK(s != NULL);
	CHECK(stat(lz, &st) == 0);
	CHECK(truncate(lz, st.st_size / 2) == 0);
	CHECK_EQ(read_all(s, &e), -EIO);
	CHECK(strstr(e.msg, "at byte ") != NULL);
	trace_split_close(s);
}

static uint8_t privs[NINS];
static uint32_t insns[NINS];

/* oobt with priv, bits and a trap every 997th record, in batches of up
 * to TRACE_BATCH_MAX of hart `hart` (hart 1 from record `two` on). */
static void write_oobt(const char *path, uint64_t sync_every, int plain, uint32_t two)
{
	struct oob_err e = {0};
	struct trace_write_opts wo = {.format = TRACE_FMT_OOBT,
				      .fields = TRACE_F_CYCLE | TRACE_F_INSN | TRACE_F_PRIV,
				      .oobt_sync_records = sync_every,
				      .oobt_plain = plain};
	static struct trace_extra x[TRACE_BATCH_MAX];
	make_truth();
	for (uint32_t i = 0; i < NINS; i++) {
		privs[i] = (uint8_t)(i / 1000 % 2 * 3);
		insns[i] = (uint32_t)(pcs[i] * 2654435761u) | 3;
	}
	struct trace_writer *w = trace_writer_open(path, &wo, &e);
	CHECK(w != NULL);
	for (uint32_t i = 0; i < NINS;) {
		uint32_t m = NINS - i < TRACE_BATCH_MAX ? NINS - i : TRACE_BATCH_MAX, nx = 0;
		if (i < two && i + m > two)
			m = two - i;
		for (uint32_t k = 0; k < m; k++)
			if ((i + k) % 997 == 0)
				x[nx++] = (struct trace_extra){
				    .idx = k, .kind = TRACE_X_TRAP, .val = 8, .addr = i + k};
		struct trace_batch b = {.n = m,
					.hart = i >= two,
					.pc = pcs + i,
					.cycle = cycles + i,
					.insn = insns + i,
					.priv = privs + i,
					.x = x,
					.nx = nx,
					.seq = i};
		CHECK(trace_writer_put(w, &b, &e) == 0);
		i += m;
	}
	CHECK(trace_writer_close(w, &e) == 0);
}

/* Records [*at, *at + b->n) as written; *at moves past them. */
static void check_oobt_batch(const struct trace_batch *b, uint32_t *atp)
{
	uint32_t nx = 0, at = *atp;
	*atp += b->n;
	CHECK(at + (uint64_t)b->n <= NINS);
	for (uint32_t i = 0; i < b->n; i++) {
		CHECK_EQ(b->pc[i], pcs[at + i]);
		CHECK_EQ(b->cycle[i], cycles[at + i]);
		CHECK_EQ(b->priv[i], privs[at + i]);
		CHECK_EQ(b->insn[i], insns[at + i]);
		if ((at + i) % 997 == 0) {
			CHECK(nx < b->nx && b->x[nx].idx == i && b->x[nx].addr == at + i);
			nx++;
		}
	}
	CHECK_EQ(b->nx, nx);
}

/* oobt cut at its sync points: the sequential reader and every piece's
 * read the instructions written, each piece's first number exact. */
static void oobt_pieces(void)
{
	const char *path = oobtest_out("split", "sync.oobt");
	struct oob_err e = {0};
	write_oobt(path, 5000, 0, NINS);
	struct trace_reader *r = trace_open(path, NULL, &e);
	const struct trace_batch *b;
	uint32_t at = 0;
	CHECK(r != NULL);
	while (trace_next(r, &b, &e) > 0)
		check_oobt_batch(b, &at);
	CHECK_EQ(at, NINS);
	trace_close(r);

	struct trace_split *s = trace_split_open(path, NULL, 20000, &e);
	CHECK(s != NULL);
	CHECK(trace_split_pieces(s) >= 10);
	struct trace_split_cur c = {0};
	long m;
	at = 0;
	for (size_t k = 0; k < trace_split_pieces(s); k++) {
		CHECK_EQ(trace_split_first(s, k), at);
		trace_split_cur_start(s, k, &c);
		while ((m = trace_split_cur_next(s, &c, &e)) > 0)
			check_oobt_batch(&c.b, &at);
		CHECK_EQ(m, 0);
	}
	CHECK_EQ(at, NINS);
	trace_split_cur_free(&c);
	trace_split_close(s);
	/* sync points 4096+ records apart are not cut into 1000-record pieces */
	CHECK(trace_split_open(path, NULL, 1000, &e) == NULL && e.code == -ENOTSUP);
}

/* What cannot be cut: two harts, a plain body; a sync mark that lies is
 * found by the piece's reader. */
static void oobt_refused(void)
{
	const char *path = oobtest_out("split", "bad.oobt");
	struct oob_err e = {0};
	write_oobt(path, 5000, 0, NINS / 2);
	CHECK(trace_split_open(path, NULL, 20000, &e) == NULL && e.code == -ENOTSUP);
	CHECK(strstr(e.msg, "several harts") != NULL);
	write_oobt(path, 5000, 1, NINS);
	CHECK(trace_split_open(path, NULL, 20000, &e) == NULL && e.code == -ENOTSUP);

	write_oobt(path, 5000, 0, NINS);
	struct stat st;
	CHECK(stat(path, &st) == 0);
	FILE *f = fopen(path, "r+b");
	uint8_t *d = oob_xmalloc((size_t)st.st_size);
	CHECK(fread(d, 1, (size_t)st.st_size, f) == (size_t)st.st_size);
	uint8_t *mk = memmem(d, (size_t)st.st_size, OOBT_MARK_SYNC, 4);
	CHECK(mk != NULL);
	mk[4] ^= 1; /* the records before the first sync point, off by one */
	CHECK(fseek(f, mk - d + 4, SEEK_SET) == 0 && fputc(mk[4], f) != EOF);
	fclose(f);
	free(d);
	struct trace_split *s = trace_split_open(path, NULL, 5000, &e); /* a piece a sync */
	CHECK(s != NULL);
	CHECK_EQ(read_all(s, &e), -EINVAL);
	CHECK(strstr(e.msg, "differs from its sync mark") != NULL);
	trace_split_close(s);
}

int main(void)
{
	OOBTEST_BEGIN("test_trace_split");
	RUN(raw_width2);
	RUN(raw_cut_tail);
	RUN(lz4_writer_frames);
	RUN(lz4_one_frame);
	RUN(shrunk_after_open);
	RUN(oobt_pieces);
	RUN(oobt_refused);
	return OOBTEST_END();
}
