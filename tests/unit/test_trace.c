/* Trace readers and writers against real traces and their ground truth
 * (tracetest.h); oobt's own cases are in test_oobt.c. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "trace/fireperf.h"
#include "util/oob_mem.h"
#include "trace/oobt.h"
#include "oobtest.h"
#include "trace/trace.h"
#include "trace/trace_write.h"
#include "tracetest.h"

/* Opens a generated fixture, checks format and truth. */
static const char *check_file(const char *file, const char *truth_name, enum trace_format fmt,
			      const struct trace_opts *opts, struct tracet_sums *s)
{
	static char why[600];
	char rel[256];
	struct tracet_truth t;
	struct oob_err e = {0};
	snprintf(rel, sizeof(rel), "readers/%s", file);
	const char *path = oobtest_gen(rel);
	if (!path || tracet_truth_load(truth_name, &t))
		return "SKIP";
	struct trace_reader *r = trace_open(path, opts, &e);
	if (!r) {
		snprintf(why, sizeof(why), "open: %s", e.msg);
		return why;
	}
	if (trace_reader_format(r) != fmt) {
		snprintf(why, sizeof(why), "detected %s",
			 trace_format_name(trace_reader_format(r)));
		trace_close(r);
		return why;
	}
	int rc = tracet_sum(r, t.fields, s, &e);
	trace_close(r);
	if (rc < 0) {
		snprintf(why, sizeof(why), "read: %s", e.msg);
		return why;
	}
	return tracet_against(s, &t);
}

#define CHECK_FILE(file, truth, fmt, opts, s)                                                      \
	do {                                                                                       \
		const char *w_ = check_file(file, truth, fmt, opts, s);                            \
		if (w_ && strcmp(w_, "SKIP") == 0)                                                 \
			SKIP("fixture %s not generated (see gen-readers.sh)", file);               \
		if (w_) {                                                                          \
			snprintf(oobtest_why, sizeof(oobtest_why), "%s:%d: %.80s: %.600s",         \
				 __FILE__, __LINE__, file, w_);                                    \
			oobtest_failed_case = 1;                                                   \
			return;                                                                    \
		}                                                                                  \
	} while (0)

static void spike_commit_log_matches_truth(void)
{
	struct tracet_sums s;
	struct tracet_truth t;
	CHECK_FILE("spike.log", "spike", TRACE_FMT_SPIKE, NULL, &s);
	CHECK(tracet_truth_load("spike", &t) == 0);
	CHECK_EQ(s.priv[0], tracet_get(&t, "priv0"));
	CHECK_EQ(s.priv[1], tracet_get(&t, "priv1"));
	CHECK_EQ(s.priv[0], 501611); /* the fixture's README */
	CHECK_EQ(s.priv[1], 1413395);
	CHECK_EQ(s.csr_satp, tracet_get(&t, "satp_writes"));
	CHECK_EQ(s.csr_satp, 10);
	for (int k = 1; k <= 5; k++) {
		char key[16];
		snprintf(key, sizeof(key), "kind%d", k);
		CHECK_EQ(s.kinds[k], tracet_get(&t, key));
	}
}

static void spike_lz4_matches_truth(void)
{
	struct tracet_sums s;
	CHECK_FILE("spike.log.lz4", "spike", TRACE_FMT_SPIKE, NULL, &s);
}

static void spike_two_harts_batch_per_hart(void)
{
	struct tracet_sums s;
	CHECK_FILE("spike-2core.log", "spike-2core", TRACE_FMT_SPIKE, NULL, &s);
	CHECK(s.harts[0] > 0 && s.harts[1] > 0);
	CHECK(s.batches >= 200); /* a batch ends at every hart switch (every 1000 lines) */
}

static void spike_l_lines_without_commits(void)
{
	struct tracet_sums s;
	CHECK_FILE("spike-l.log", "spike-l", TRACE_FMT_SPIKE, NULL, &s);
	CHECK(s.kinds[TRACE_X_TRAP] > 500);
}

static void qemu_user_log_matches_truth(void)
{
	struct tracet_sums s;
	CHECK_FILE("rdprog.qemu.log", "rdprog", TRACE_FMT_QEMU, NULL, &s);
	CHECK(s.harts[1] > 0); /* the second thread */
	CHECK_EQ(s.priv[0], s.n);
}

static void qemu_user_lz4_matches_truth(void)
{
	struct tracet_sums s;
	CHECK_FILE("rdprog.qemu.log.lz4", "rdprog", TRACE_FMT_QEMU, NULL, &s);
}

static void qemu_system_log_priv_and_traps(void)
{
	struct tracet_sums s;
	struct tracet_truth t;
	CHECK_FILE("bare.qemu.log", "bare", TRACE_FMT_QEMU, NULL, &s);
	CHECK(tracet_truth_load("bare", &t) == 0);
	CHECK_EQ(s.priv[0], tracet_get(&t, "priv0"));
	CHECK_EQ(s.priv[1], tracet_get(&t, "priv1"));
	CHECK_EQ(s.priv[3], tracet_get(&t, "priv3"));
	CHECK(s.priv[0] && s.priv[1] && s.priv[3]);
	CHECK_EQ(s.kinds[TRACE_X_TRAP], 3); /* two ecalls and an illegal instruction */
}

static const char *const tv_files[] = {"tv-old8-v40", "tv-c-v40-w1",   "tv-c-v40-w2",
				       "tv-c-v63-w1", "tv-c-v63-w2",   "tv-c-v63-w3",
				       "tv-c-v63-w7", "tv-wide12-v63", "tv-nohdr-v63-w1"};

static void tracerv_bin_every_layout(void)
{
	for (size_t i = 0; i < sizeof(tv_files) / sizeof(tv_files[0]); i++) {
		char file[128], rel[160];
		struct tracet_sums s;
		struct tracet_truth t;
		struct oob_err e;
		snprintf(file, sizeof(file), "%s.bin", tv_files[i]);
		CHECK_FILE(file, tv_files[i], TRACE_FMT_TRACERV_BIN, NULL, &s);
		CHECK(tracet_truth_load(tv_files[i], &t) == 0);
		snprintf(rel, sizeof(rel), "readers/%s", file);
		struct trace_reader *r = trace_open(oobtest_gen(rel), NULL, &e);
		CHECK(r);
		uint64_t num, den;
		trace_reader_clock_ratio(r, &num, &den);
		CHECK_EQ(num, tracet_get(&t, "clock_num"));
		CHECK_EQ(den, tracet_get(&t, "clock_den"));
		char want[64];
		snprintf(want, sizeof(want), "%llu-byte records",
			 (unsigned long long)tracet_get(&t, "words") * 8);
		CHECK(strstr(trace_reader_describe(r), want));
		snprintf(want, sizeof(want), "valid bit %llu",
			 (unsigned long long)tracet_get(&t, "valid_bit"));
		CHECK(strstr(trace_reader_describe(r), want));
		CHECK_EQ(trace_reader_fields(r), TRACE_F_CYCLE);
		trace_close(r);
	}
}

static void tracerv_bin_lz4_and_text(void)
{
	struct tracet_sums s;
	CHECK_FILE("tv-c-v63-w2.bin.lz4", "tv-c-v63-w2", TRACE_FMT_TRACERV_BIN, NULL, &s);
	CHECK_FILE("tv-text.txt", "tv-text", TRACE_FMT_TRACERV_TEXT, NULL, &s);
	CHECK_FILE("tv-text.txt.lz4", "tv-text", TRACE_FMT_TRACERV_TEXT, NULL, &s);
}

static void tracerv_layout_override(void)
{
	struct tracet_sums s;
	struct trace_opts o = {.format = TRACE_FMT_TRACERV_BIN,
			       .tracerv = {.width = 3, .words = 4, .valid_bit = 63},
			       .hart = 0};
	CHECK_FILE("tv-c-v63-w3.bin", "tv-c-v63-w3", TRACE_FMT_TRACERV_BIN, &o, &s);
	/* the 8-word layout of FireSim <= 1.17, named explicitly */
	struct trace_opts o8 = {.tracerv = {.width = 7, .words = 8, .valid_bit = 40}};
	CHECK_FILE("tv-old8-v40.bin", "tv-old8-v40", TRACE_FMT_TRACERV_BIN, &o8, &s);
	/* an impossible layout is refused with a message */
	struct trace_opts bad = {.format = TRACE_FMT_TRACERV_BIN, .tracerv = {.width = 9}};
	struct oob_err e = {0};
	const char *p = oobtest_gen("readers/tv-c-v63-w1.bin");
	if (!p)
		SKIP("no fixture");
	CHECK(!trace_open(p, &bad, &e));
	CHECK(strstr(e.msg, "impossible layout"));
	/* hart of a single-hart file */
	struct trace_opts h = {.hart = 5};
	struct trace_reader *r = trace_open(p, &h, &e);
	const struct trace_batch *b;
	CHECK(r && trace_next(r, &b, &e) == 1 && b->hart == 5);
	trace_close(r);
}

/* Width-1 records with invalid slots anywhere (pairs, singles, at batch
 * and buffer ends), valid bit 63 and 40, kernel and user addresses: the
 * reader keeps exactly the valid slots, sign-extended, with their cycles
 * (the truth computed here record by record). */
static void tracerv_w1_invalid_slots(void)
{
	enum { NREC = 3 * TRACE_BATCH_MAX + 7 };
	static const unsigned vbits[2] = {63, 40};
	for (int v = 0; v < 2; v++) {
		uint64_t *raw = oob_xmalloc(NREC * 16), *want = oob_xmalloc(NREC * 8);
		uint64_t *wcyc = oob_xmalloc(NREC * 8), nwant = 0, x = 88172645463325252ull;
		for (size_t i = 0; i < NREC; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			uint64_t addr = (x & 0xfffffffffeull) | (i % 5 == 0 ? 1ull << 39 : 0);
			int valid = (x >> 45) % 7 != 0 && i % 1000 != 999;
			raw[2 * i] = 1000 + 3 * i;
			raw[2 * i + 1] = addr | (valid ? 1ull << vbits[v] : 0);
			if (valid) {
				want[nwant] = addr >> 39 ? addr | 0xffffff0000000000ull : addr;
				wcyc[nwant++] = 1000 + 3 * i;
			}
		}
		struct trace_opts o = {.format = TRACE_FMT_TRACERV_BIN,
				       .tracerv = {.width = 1, .words = 2, .valid_bit = vbits[v]}};
		struct oob_err e = {0};
		struct trace_reader *r =
		    trace_open_stream(in_open_mem(raw, NREC * 16, "w1", &e), &o, &e);
		CHECK(r);
		const struct trace_batch *b;
		uint64_t k = 0, bad = 0;
		while (trace_next(r, &b, &e) > 0)
			for (uint32_t i = 0; i < b->n; i++, k++)
				bad += k >= nwant || b->pc[i] != want[k] || b->cycle[i] != wcyc[k];
		trace_close(r);
		free(raw);
		free(want);
		free(wcyc);
		CHECK_EQ(k, nwant);
		CHECK_EQ(bad, 0);
	}
}

static void tracerv_truncated_record(void)
{
	size_t n;
	const char *p = oobtest_gen("readers/tv-c-v63-w1.bin");
	struct tracet_truth t;
	if (!p || tracet_truth_load("tv-c-v63-w1", &t))
		SKIP("no fixture");
	uint8_t *buf = oobtest_slurp(p, &n);
	CHECK(buf && n > 100);
	const char *nl = memchr(buf, '\n', n);
	size_t hdr = (size_t)(nl - (char *)buf) + 1;
	struct oob_err e = {0};
	struct in_stream *s = in_open_mem(buf, n - 5, "cut.bin", &e);
	struct trace_reader *r = trace_open_stream(s, NULL, &e);
	CHECK(r);
	struct tracet_sums sm;
	int rc = tracet_sum(r, "pc,cycle", &sm, &e);
	trace_close(r);
	CHECK(rc == -EINVAL);
	CHECK_EQ(sm.n, tracet_get(&t, "records") - 1); /* width 1: one record per instruction */
	char want[64];
	snprintf(want, sizeof(want), "truncated record at byte %zu (11 of 16 bytes)",
		 hdr + (tracet_get(&t, "records") - 1) * 16);
	CHECK(strstr(e.msg, want));
	CHECK(strstr(e.msg, "cut.bin"));
	free(buf);
}

/* A reader over a pipe fed with the file by a child process: the read()
 * path, where trace_open maps the file. */
static struct trace_reader *open_piped(const char *path, const struct trace_opts *o, pid_t *pid,
				       struct oob_err *e)
{
	int fds[2];
	if (pipe(fds))
		return NULL;
	if ((*pid = fork()) == 0) {
		int fd = open(path, O_RDONLY);
		char buf[65536];
		ssize_t k;
		close(fds[0]);
		while (fd >= 0 && (k = read(fd, buf, sizeof(buf))) > 0)
			if (write(fds[1], buf, (size_t)k) != k)
				_exit(1);
		_exit(0);
	}
	close(fds[1]);
	struct in_stream *s = in_open_fd(fds[0], path, o ? &o->in : NULL, e);
	return s ? trace_open_stream(s, o, e) : NULL;
}

/* Mapped file against pipe, LZ4 on 2 threads against the plain file: the
 * same records, extras and end. */
static void mapped_piped_and_parallel_agree(void)
{
	struct oob_err e = {0};
	for (size_t i = 0; i < tracet_nfixtures; i++) {
		char rel[160];
		snprintf(rel, sizeof(rel), "readers/%s", tracet_fixtures[i].file);
		const char *p = oobtest_gen(rel);
		if (!p)
			continue;
		pid_t pid;
		struct trace_reader *a = trace_open(p, NULL, &e),
				    *b = open_piped(p, NULL, &pid, &e);
		CHECK(a && b);
		const char *why = tracet_same_records(a, b);
		trace_close(a);
		trace_close(b);
		waitpid(pid, NULL, 0);
		if (why)
			CHECK_STR(why, tracet_fixtures[i].file);
	}
	/* our writers' LZ4 (oobt body, tracerv-bin --lz4), 2 threads, mapped
	 * and piped, against the plain source */
	const char *src = oobtest_gen("readers/tv-c-v63-w2.bin");
	if (!src)
		SKIP("no fixture");
	struct trace_write_opts wo[2] = {{.format = TRACE_FMT_OOBT},
					 {.format = TRACE_FMT_TRACERV_BIN,
					  .lz4 = 1,
					  .tracerv = {.width = 2, .words = 3, .valid_bit = 63}}};
	const char *out[2] = {tracet_tmp("par.oobt"), tracet_tmp("par.bin.lz4")};
	for (int k = 0; k < 2; k++) {
		CHECK_EQ(tracet_convert(src, out[k], &wo[k], &e), 0);
		struct trace_opts o = {.in = {.threads = 2}};
		for (int piped = 0; piped < 2; piped++) {
			pid_t pid = -1;
			struct trace_reader *a = trace_open(src, NULL, &e);
			struct trace_reader *b =
			    piped ? open_piped(out[k], &o, &pid, &e) : trace_open(out[k], &o, &e);
			CHECK(a && b);
			const char *why = tracet_same_records(a, b);
			trace_close(a);
			trace_close(b);
			if (pid > 0)
				waitpid(pid, NULL, 0);
			if (why)
				CHECK_STR(why, out[k]);
		}
		unlink(out[k]);
	}
}

/* A cut last record: the same records and the same error, offset named,
 * from a mapped file and from a pipe. */
static void tracerv_truncated_file_and_pipe(void)
{
	size_t n;
	const char *p = oobtest_gen("readers/tv-c-v63-w1.bin");
	struct tracet_truth t;
	if (!p || tracet_truth_load("tv-c-v63-w1", &t))
		SKIP("no fixture");
	uint8_t *buf = oobtest_slurp(p, &n);
	CHECK(buf && n > 100);
	const char *nl = memchr(buf, '\n', n);
	size_t hdr = (size_t)(nl - (char *)buf) + 1;
	const char *cut = tracet_tmp("cut.bin");
	FILE *f = fopen(cut, "wb");
	CHECK(f && fwrite(buf, 1, n - 5, f) == n - 5);
	fclose(f);
	char want[64];
	snprintf(want, sizeof(want), "truncated record at byte %zu (11 of 16 bytes)",
		 hdr + (tracet_get(&t, "records") - 1) * 16);
	for (int piped = 0; piped < 2; piped++) {
		struct oob_err e = {0};
		pid_t pid = -1;
		struct trace_reader *r =
		    piped ? open_piped(cut, NULL, &pid, &e) : trace_open(cut, NULL, &e);
		CHECK(r);
		struct tracet_sums sm;
		int rc = tracet_sum(r, "pc,cycle", &sm, &e);
		trace_close(r);
		if (pid > 0)
			waitpid(pid, NULL, 0);
		CHECK(rc == -EINVAL);
		CHECK_EQ(sm.n, tracet_get(&t, "records") - 1);
		CHECK(strstr(e.msg, want));
	}
	unlink(cut);
	free(buf);
}

static void roundtrip_tracerv_bin_layouts(void)
{
	const char *in = oobtest_gen("readers/tv-c-v63-w2.bin");
	struct tracet_truth t;
	struct oob_err e = {0};
	if (!in || tracet_truth_load("tv-c-v63-w2", &t))
		SKIP("no fixture");
	struct trace_tracerv_opts lays[] = {{0, 0, 0}, {3, 4, 40}, {7, 8, 40}, {2, 3, 63}};
	for (int lz = 0; lz < 2; lz++) {
		for (size_t i = 0; i < sizeof(lays) / sizeof(lays[0]); i++) {
			const char *out = tracet_tmp("rt.bin");
			struct trace_write_opts wo = {
			    .format = TRACE_FMT_TRACERV_BIN, .tracerv = lays[i], .lz4 = lz};
			CHECK_EQ(tracet_convert(in, out, &wo, &e), 0);
			struct trace_reader *r = trace_open(out, NULL, &e);
			CHECK(r);
			uint64_t num, den;
			trace_reader_clock_ratio(r, &num, &den);
			CHECK_EQ(num, tracet_get(&t, "clock_num"));
			CHECK_EQ(den, tracet_get(&t, "clock_den"));
			struct tracet_sums s;
			CHECK_EQ(tracet_sum(r, "pc,cycle", &s, &e), 0);
			trace_close(r);
			CHECK_EQ(s.n, tracet_get(&t, "records"));
			CHECK_EQ(s.h, tracet_get(&t, "hash"));
			unlink(out);
		}
	}
}

/* Spike prints "core N: >>>>  SYMBOL" before the first instruction of a
 * function it has a symbol for, and "tval2"/"tinst" after a hypervisor
 * trap's "tval": none is an instruction. The same log with and without them
 * gives the same records (commit and -l logs alike); a trap's cause and
 * tval still reach the next record. */
static void spike_symbol_and_trap_lines_are_skipped(void)
{
	static const char *const logs[2][2] = {
	    {"core   0: 3 0x0000000080000000 (0x00000297) x5  0x0000000080000000\n"
	     "core   0: 3 0x0000000080000004 (0x00a0006f)\n"
	     "core   0: exception trap_load_page_fault, epc 0x0000000080000014\n"
	     "core   0:           tval 0x0000000000001000\n"
	     "core   0: 3 0x0000000080000100 (0x00000013)\n",
	     "core   0: >>>>  _start\n"
	     "core   0: 3 0x0000000080000000 (0x00000297) x5  0x0000000080000000\n"
	     "core   0: 3 0x0000000080000004 (0x00a0006f)\n"
	     "core   0: exception trap_load_page_fault, epc 0x0000000080000014\n"
	     "core   0:           tval 0x0000000000001000\n"
	     "core   0:           tval2 0x0000000000000000\n"
	     "core   0:           tinst 0x0000000000000000\n"
	     "core   0: >>>>  handle_exception\n"
	     "core   0: 3 0x0000000080000100 (0x00000013)\n"},
	    {"core   0: 0x0000000080000000 (0x00000297) auipc   t0, 0x0\n"
	     "core   0: 0x0000000080000004 (0x00a0006f) j       pc + 0xa\n",
	     "core   0: >>>>  _start\n"
	     "core   0: 0x0000000080000000 (0x00000297) auipc   t0, 0x0\n"
	     "core   0: >>>>  main\n"
	     "core   0: 0x0000000080000004 (0x00a0006f) j       pc + 0xa\n"},
	};
	for (int k = 0; k < 2; k++) {
		uint64_t pcs[2][8], causes[2] = {0, 0}, tvals[2] = {0, 0};
		uint32_t n[2] = {0, 0};
		for (int v = 0; v < 2; v++) {
			struct oob_err e = {0};
			struct trace_reader *r =
			    tracet_open_bytes(logs[k][v], strlen(logs[k][v]), &e);
			CHECK(r);
			if (!r)
				return;
			const struct trace_batch *b;
			int rc;
			while ((rc = trace_next(r, &b, &e)) > 0) {
				for (uint32_t i = 0; i < b->n && n[v] < 8; i++)
					pcs[v][n[v]++] = b->pc[i];
				for (uint32_t j = 0; j < b->nx; j++)
					if (b->x[j].kind == TRACE_X_TRAP) {
						causes[v] = b->x[j].val;
						tvals[v] = b->x[j].addr;
					}
			}
			CHECK_EQ(rc, 0);
			trace_close(r);
		}
		CHECK_EQ(n[0], k ? 2u : 3u);
		CHECK_EQ(n[1], n[0]);
		CHECK(memcmp(pcs[0], pcs[1], n[0] * sizeof(uint64_t)) == 0);
		CHECK_EQ(causes[1], causes[0]);
		CHECK_EQ(tvals[1], tvals[0]);
		if (!k) {
			CHECK_EQ(causes[1], 13u);
			CHECK_EQ(tvals[1], 0x1000u);
		}
	}
	struct oob_err e = {0};
	uint64_t got;
	const char *bad = "core   0: 3 0x0000000080000000 (0x00000297)\n"
			  "core   0:           tinst zz\n";
	struct trace_reader *r = tracet_open_bytes(bad, strlen(bad), &e);
	CHECK(r);
	CHECK_EQ(tracet_drain(r, &got, &e), -EINVAL);
	CHECK(strstr(e.msg, "line 2") && strstr(e.msg, "tinst"));
	trace_close(r);
}

static void text_garbage_names_the_line(void)
{
	struct oob_err e = {0};
	uint64_t got;
	const char *spk = "core   0: 1 0x0000000000010000 (0x00001141) x2  0x10\n"
			  "core   0: 1 0x0000000000010002 (0xe406) mem 0x8 0x0000000000000001\n"
			  "core   0: 1 0x0000000000010004 (0x1234)\n"
			  "core   0: 1 0x00000000000zz006 (0x1234)\n";
	struct trace_reader *r = tracet_open_bytes(spk, strlen(spk), &e);
	CHECK(r);
	CHECK_EQ(tracet_drain(r, &got, &e), -EINVAL);
	CHECK_EQ(got, 3);
	CHECK(strstr(e.msg, "spike: line 4: expected"));
	trace_close(r);
	const char *q =
	    "Trace 0: 0x7f0000000100 [0000000000000000/0000000000010000/00207600/00000201] _start\n"
	    "Linking TBs 0x7f00 [0000000000010000] index 0 -> 0x7f01 [0000000000010004]\n";
	r = tracet_open_bytes(q, strlen(q), &e);
	CHECK(r);
	CHECK_EQ(tracet_drain(r, &got, &e), -EINVAL);
	CHECK(strstr(e.msg, "line 2") && strstr(e.msg, "nochain"));
	trace_close(r);
	const char *tv = "# Clock Domain: x, Relative Frequency: 1/1 of Base Clock\n"
			 "Cycle: 0000000000000001 I0: 0000000000010000\n"
			 "Cycle: 00000000000000x2 I0: 0000000000010004\n";
	r = tracet_open_bytes(tv, strlen(tv), &e);
	CHECK(r);
	CHECK_EQ(tracet_drain(r, &got, &e), -EINVAL);
	CHECK_EQ(got, 1);
	CHECK(strstr(e.msg, "tracerv-text: line 3"));
	trace_close(r);
	const char *hdr =
	    "# Clock Domain: x, Relative Frequency: 1/0 of Base Clock\nCycle: 1 I0: 10\n";
	CHECK(!tracet_open_bytes(hdr, strlen(hdr), &e) && strstr(e.msg, "line 1"));
}

/* "Stopped execution" before a pc, then another pc: QEMU user mode took a
 * signal there, and the record that ran instead starts a trap; then the
 * stopped pc itself: nothing happened. */
static void qemu_stopped_then_elsewhere_is_a_trap(void)
{
#define QT(pc) "Trace 0: 0x7f0000000100 [0000000000000000/" pc "/00207600/00000201]\n"
#define QS(pc) "Stopped execution of TB chain before 0x7f0000000100 [" pc "]\n"
	const char *q = QT("0000000000010000") QT("0000000000010004") QS("0000000000010004")
	    QT("0000000000020000") QT("0000000000020004") QS("0000000000020004")
		QT("0000000000020004");
#undef QT
#undef QS
	struct oob_err e = {0};
	struct trace_reader *r = tracet_open_bytes(q, strlen(q), &e);
	const struct trace_batch *b;
	CHECK(r);
	CHECK_EQ(trace_next(r, &b, &e), 1);
	CHECK_EQ(b->n, 3);
	CHECK(b->pc[0] == 0x10000 && b->pc[1] == 0x20000 && b->pc[2] == 0x20004);
	CHECK_EQ(b->nx, 1);
	CHECK(b->x[0].kind == TRACE_X_TRAP && b->x[0].idx == 1 &&
	      b->x[0].val == TRACE_CAUSE_UNSAID);
	trace_close(r);
}

static void unknown_and_empty_input(void)
{
	struct oob_err e = {0};
	const uint8_t junk[] = {0x00, 0x01, 0x02, 0xfe, 'h', 'i'};
	CHECK(!tracet_open_bytes(junk, sizeof(junk), &e));
	CHECK(strstr(e.msg, "unknown trace format (first bytes: 00 01 02 fe 68 69"));
	CHECK_EQ(e.code, -EINVAL);
	CHECK(!tracet_open_bytes("", 0, &e));
	CHECK(strstr(e.msg, "empty"));
	const char *text = "hello world\nthis is not a trace\n";
	CHECK(!tracet_open_bytes(text, strlen(text), &e) && strstr(e.msg, "hello world"));
}

static void overlong_line_is_an_error(void)
{
	size_t n = IN_WINDOW + 100;
	char *big = oob_xmalloc(n);
	memset(big, 'x', n);
	memcpy(big, "core   0: 1 0x0000000000010000 (0x00001141) ", 44);
	big[n - 1] = '\n';
	struct oob_err e = {0};
	uint64_t got;
	struct trace_reader *r = tracet_open_bytes(big, n, &e);
	CHECK(r);
	CHECK(tracet_drain(r, &got, &e) < 0);
	CHECK(strstr(e.msg, "line 1 is longer than"));
	trace_close(r);
	free(big);
}

static void detect_from_first_bytes(void)
{
	static const struct {
		const char *text;
		enum trace_format f;
	} cases[] = {
	    {"core   0: 3 0x0000000080000000 (0x00000297) x5  0x0000000080000000\n",
	     TRACE_FMT_SPIKE},
	    {"core   1: 0x0000000080000000 (0x00000297) auipc t0, 0x0\n", TRACE_FMT_SPIKE},
	    {"Trace 0: 0x7f0000000100 [0000000000000000/0000000000010000/00207600/00000201] x\n",
	     TRACE_FMT_QEMU},
	    {"----------------\nIN: _start\n0x0000000000010574:  022000ef  jal ra,34\n\n"
	     "Trace 0: 0x7f0000000100 [0/10574/0/0]\n",
	     TRACE_FMT_QEMU},
	    {"# Clock Domain: a, Relative Frequency: 1/1 of Base Clock\nCycle: 0000000000000001 "
	     "I0: "
	     "0000000080000000\n",
	     TRACE_FMT_TRACERV_TEXT},
	    {"# Clock Domain: a, Relative Frequency: 1/1 of Base Clock\nIndent: 1, Start label: "
	     "main, At cycle: 5\n",
	     TRACE_FMT_FIREPERF},
	    {"# Clock Domain: a, Relative Frequency: 1/1 of Base Clock\nWARN: STACK ZEROED x\n",
	     TRACE_FMT_FIREPERF},
	    {"# Clock Domain: a, Relative Frequency: 1/1 of Base Clock\n", TRACE_FMT_TRACERV_BIN},
	    {"\x89OOBT\r\n\x1a\x01", TRACE_FMT_OOBT},
	    {"\x04\x22\x4d\x18", TRACE_FMT_AUTO},
	    {"random words\n", TRACE_FMT_AUTO},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		CHECK_EQ(trace_detect((const uint8_t *)cases[i].text, strlen(cases[i].text)),
			 cases[i].f);
	/* binary TracerV without a header: only when the layout is clear */
	uint64_t recs[64];
	for (int i = 0; i < 32; i++) {
		recs[2 * i] = 100 + (uint64_t)i * 3;
		recs[2 * i + 1] = (0x80000000ull + 4 * (uint64_t)i) | 1ull << 63;
	}
	CHECK_EQ(trace_detect((const uint8_t *)recs, sizeof(recs)), TRACE_FMT_TRACERV_BIN);
	CHECK_EQ(trace_detect((const uint8_t *)recs, 16 * 8), TRACE_FMT_AUTO); /* too few */
}

static void format_names_round_trip(void)
{
	for (int f = TRACE_FMT_AUTO; f <= TRACE_FMT_OOBT; f++) {
		enum trace_format g;
		CHECK_EQ(trace_format_parse(trace_format_name((enum trace_format)f), &g), 0);
		CHECK_EQ(g, f);
	}
	enum trace_format g;
	CHECK_EQ(trace_format_parse("perf", &g), -EINVAL);
	CHECK_STR(trace_format_name((enum trace_format)99), "unknown");
}

/* The table's shape: a row per enum value at index value - 1, names unique,
 * ops exactly for the formats trace_open reads. */
static void format_table_rows(void)
{
	size_t n;
	const struct trace_format_row *t = trace_formats(&n);
	CHECK_EQ(n, TRACE_FMT_END - 1);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ(t[i].fmt, i + 1);
		CHECK(trace_format_row(t[i].fmt) == &t[i]);
		CHECK(trace_format_find(t[i].name) == &t[i]);
		CHECK(t[i].description && t[i].description[0] && t[i].extensions);
		CHECK_EQ(!!t[i].ops, t[i].fmt <= TRACE_FMT_OOBT);
	}
	CHECK(!trace_format_row(TRACE_FMT_AUTO) && !trace_format_row(TRACE_FMT_END));
	CHECK(!trace_format_find("auto") && !trace_format_find(NULL));
	/* the upload kinds have names but trace_open does not read them */
	enum trace_format g = TRACE_FMT_OOBT;
	CHECK_EQ(trace_format_parse("events", &g), -EINVAL);
	CHECK_EQ(trace_format_parse("gotrace", &g), -EINVAL);
	CHECK_EQ(trace_format_parse("pycode", &g), -EINVAL);
	CHECK_EQ(g, TRACE_FMT_OOBT);
	CHECK_STR(trace_format_name(TRACE_FMT_GOTRACE), "gotrace");
	char buf[256];
	CHECK_STR(trace_format_list(buf, sizeof(buf), TRACE_FORMATS_READ, " or "),
		  "auto, tracerv-bin, tracerv-text, fireperf, spike, qemu or oobt");
	CHECK_STR(trace_format_list(buf, sizeof(buf), TRACE_FORMATS_ALL, ", "),
		  "auto, tracerv-bin, tracerv-text, fireperf, spike, qemu, oobt, events, gotrace, "
		  "uniprof, perf-script, folded, pprof, pycode");
	CHECK_STR(trace_format_list(buf, 12, TRACE_FORMATS_ALL, ", "), "auto, trace");
}

/* On every fixture whose format is known from how it was made, the probe of
 * that format is strictly the most confident one (so no probe claims
 * another format's files, and no tie is left to table order), and files
 * of no format get TRACE_PROBE_NO from every probe. */
static void probes_refuse_other_formats(void)
{
	static const struct {
		const char *gen, *shared; /* one of the two */
		enum trace_format f;	  /* TRACE_FMT_AUTO: none */
	} files[] = {
	    {"readers/spike.log", NULL, TRACE_FMT_SPIKE},
	    {"readers/spike.log.lz4", NULL, TRACE_FMT_SPIKE},
	    {"readers/spike-2core.log", NULL, TRACE_FMT_SPIKE},
	    {"readers/spike-l.log", NULL, TRACE_FMT_SPIKE},
	    {"readers/rdprog.qemu.log", NULL, TRACE_FMT_QEMU},
	    {"readers/rdprog.qemu.log.lz4", NULL, TRACE_FMT_QEMU},
	    {"readers/bare.qemu.log", NULL, TRACE_FMT_QEMU},
	    {NULL, "fixtures/go-traces/demo-go1.19.8-linux-riscv64-qemu-exec-log-first400.txt",
	     TRACE_FMT_QEMU},
	    {"readers/tv-old8-v40.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v40-w1.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v40-w2.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v63-w1.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v63-w2.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v63-w2.bin.lz4", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v63-w3.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-c-v63-w7.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-wide12-v63.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-nohdr-v63-w1.bin", NULL, TRACE_FMT_TRACERV_BIN},
	    {"readers/tv-text.txt", NULL, TRACE_FMT_TRACERV_TEXT},
	    {"readers/tv-text.txt.lz4", NULL, TRACE_FMT_TRACERV_TEXT},
	    {"readers/fireperf.txt", NULL, TRACE_FMT_FIREPERF},
	    {"go/demo.oobt", NULL, TRACE_FMT_OOBT},
	    {"go/demo-sleep.oobt", NULL, TRACE_FMT_OOBT},
	    {"go/demo.trace", NULL, TRACE_FMT_GOTRACE},
	    {"go/user_task_region_1_19_good.lz4", NULL, TRACE_FMT_GOTRACE},
	    {NULL, "fixtures/go-traces/demo-go1.19.8-linux-riscv64-qemu.trace", TRACE_FMT_GOTRACE},
	    {NULL, "fixtures/go-traces/go125-sync.converted.bin", TRACE_FMT_GOTRACE},
	    {"readers/rdprog", NULL, TRACE_FMT_AUTO}, /* an ELF */
	    {"readers/spike.truth", NULL, TRACE_FMT_AUTO},
	    {NULL, "fixtures/go-traces/README.md", TRACE_FMT_AUTO},
	};
	size_t nrows, seen = 0;
	const struct trace_format_row *rows = trace_formats(&nrows);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *path =
		    files[i].gen ? oobtest_gen(files[i].gen) : oobtest_shared(files[i].shared);
		const char *name = files[i].gen ? files[i].gen : files[i].shared;
		struct oob_err e = {0};
		const uint8_t *p;
		if (!path)
			continue;
		struct in_stream *s = in_open(path, NULL, &e);
		long n = s ? in_peek(s, &p, 64 * 1024, &e) : -1;
		if (n <= 0) {
			fprintf(stderr, "%s: %s\n", name, e.msg);
			in_close(s);
			CHECK(n > 0);
		}
		unsigned want = 0, other = 0;
		const char *rival = "";
		for (size_t k = 0; k < nrows; k++) {
			unsigned c = rows[k].probe ? rows[k].probe(p, (size_t)n) : 0;
			if (rows[k].fmt == files[i].f) {
				want = c;
			} else if (c >= other) {
				other = c;
				rival = rows[k].name;
			}
		}
		const struct trace_format_row *r =
		    trace_format_detect(p, (size_t)n, TRACE_FORMATS_ALL);
		in_close(s);
		if (files[i].f == TRACE_FMT_AUTO ? other != 0 : want <= other)
			fprintf(stderr, "%s: %s %u, %s %u\n", name, trace_format_name(files[i].f),
				want, rival, other);
		CHECK(files[i].f == TRACE_FMT_AUTO ? other == 0 && !r
						   : want > other && r && r->fmt == files[i].f);
		seen++;
	}
	if (!seen)
		SKIP("no fixture");
}

static void fireperf_log_matches_truth(void)
{
	const char *p = oobtest_gen("readers/fireperf.txt");
	struct tracet_truth t;
	struct oob_err e = {0};
	if (!p || tracet_truth_load("fireperf", &t))
		SKIP("no fixture");
	struct in_stream *s = in_open(p, NULL, &e);
	struct fireperf_reader *r = fireperf_open_stream(s, &e);
	CHECK(r);
	const struct fireperf_event *ev;
	uint64_t n[4] = {0}, h = TRACET_FNV0, last_line = 0;
	int rc;
	while ((rc = fireperf_next(r, &ev, &e)) > 0) {
		n[ev->kind & 3]++;
		if (ev->kind != FIREPERF_ZERO) {
			h = tracet_fnv(h, ev->cycle);
			CHECK(ev->label[0] && ev->indent > 0);
		}
		CHECK(ev->line > last_line);
		last_line = ev->line;
	}
	fireperf_close(r);
	CHECK_EQ(rc, 0);
	CHECK_EQ(n[FIREPERF_START], tracet_get(&t, "starts"));
	CHECK_EQ(n[FIREPERF_END], tracet_get(&t, "ends"));
	CHECK_EQ(n[FIREPERF_ZERO], tracet_get(&t, "zeroed"));
	CHECK_EQ(h, tracet_get(&t, "cycle_hash"));
	/* trace_open knows the format but has no instructions for it */
	struct trace_reader *tr = trace_open(p, NULL, &e);
	const struct trace_batch *b;
	CHECK(tr && trace_reader_format(tr) == TRACE_FMT_FIREPERF);
	CHECK_EQ(trace_next(tr, &b, &e), -ENOTSUP);
	trace_close(tr);
}

static void fireperf_lines(void)
{
	struct oob_err e = {0};
	const char *log = "# Clock Domain: t, Relative Frequency: 1/1 of Base Clock\n\n"
			  "Indent: 1, Start label: ns::f(int, char), At cycle: 10\n"
			  "WARN: STACK ZEROED WHEN WE WERE LOOKING FOR LABEL: g, iaddr 0x10\n"
			  "WARN: is_callsite was: 0, is_fn_entry was: 1\n"
			  "Indent: 1, End label: ns::f(int, char), End cycle: 20\n"
			  "Indent: x, End label: f, End cycle: 20\n";
	struct fireperf_reader *r =
	    fireperf_open_stream(in_open_mem(log, strlen(log), "fp", &e), &e);
	const struct fireperf_event *ev;
	CHECK(r);
	CHECK(fireperf_next(r, &ev, &e) == 1 && ev->kind == FIREPERF_START && ev->line == 3);
	CHECK_STR(ev->label, "ns::f(int, char)");
	CHECK_EQ(ev->cycle, 10);
	CHECK(fireperf_next(r, &ev, &e) == 1 && ev->kind == FIREPERF_ZERO);
	CHECK(fireperf_next(r, &ev, &e) == 1 && ev->kind == FIREPERF_END && ev->cycle == 20);
	CHECK_EQ(fireperf_next(r, &ev, &e), -EINVAL);
	CHECK(strstr(e.msg, "line 7"));
	fireperf_close(r);
	const char *bad = "Cycle: 1 I0: 10\n";
	CHECK(!fireperf_open_stream(in_open_mem(bad, strlen(bad), "fp", &e), &e));
	CHECK(strstr(e.msg, "line 1"));
}

static int leftover_tmp(const char *path)
{
	char dir[512], base[256];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	snprintf(base, sizeof(base), "%s.tmp.", slash + 1);
	*slash = '\0';
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;
	while (d && (de = readdir(d)))
		n += strncmp(de->d_name, base, strlen(base)) == 0;
	if (d)
		closedir(d);
	return n;
}

static void writer_is_atomic_and_strict(void)
{
	struct oob_err e = {0};
	const char *out = tracet_tmp("atomic.oobt");
	uint64_t pc[3] = {0x10000, 0x10002, 0xffffffff80000000ull};
	uint8_t priv[3] = {0, 0, 5};
	struct trace_batch b = {.n = 2, .pc = pc, .priv = priv};
	unlink(out);
	struct trace_write_opts wo = {.format = TRACE_FMT_OOBT, .fields = TRACE_F_PRIV};
	struct trace_writer *w = trace_writer_open(out, &wo, &e);
	CHECK(w);
	CHECK_EQ(trace_writer_put(w, &b, &e), 0);
	CHECK(access(out, F_OK) != 0); /* nothing at the path before close */
	CHECK_EQ(leftover_tmp(out), 1);
	trace_writer_abort(w);
	CHECK(access(out, F_OK) != 0);
	CHECK_EQ(leftover_tmp(out), 0);
	/* priv 5 cannot be stored */
	w = trace_writer_open(out, &wo, &e);
	b.n = 3;
	CHECK_EQ(trace_writer_put(w, &b, &e), -EINVAL);
	CHECK(strstr(e.msg, "priv 5"));
	CHECK(trace_writer_close(w, &e) < 0);
	CHECK(access(out, F_OK) != 0 && leftover_tmp(out) == 0);
	/* tracerv-bin: 40-bit pcs only, one hart per file */
	struct trace_write_opts tv = {.format = TRACE_FMT_TRACERV_BIN};
	uint64_t wide[1] = {0x0000123456789abcull};
	struct trace_batch bw = {.n = 1, .pc = wide};
	w = trace_writer_open(out, &tv, &e);
	CHECK_EQ(trace_writer_put(w, &bw, &e), -EINVAL);
	CHECK(strstr(e.msg, "not a 40-bit address"));
	trace_writer_abort(w);
	w = trace_writer_open(out, &tv, &e);
	b.n = 2;
	CHECK_EQ(trace_writer_put(w, &b, &e), 0);
	b.hart = 1;
	CHECK_EQ(trace_writer_put(w, &b, &e), -EINVAL);
	CHECK(strstr(e.msg, "one hart"));
	trace_writer_abort(w);
	struct trace_write_opts badlay = {.format = TRACE_FMT_TRACERV_BIN, .tracerv = {.width = 8}};
	CHECK(!trace_writer_open(out, &badlay, &e) && strstr(e.msg, "impossible layout"));
	CHECK(!trace_writer_open("/nonexistent-dir/x.oobt", &wo, &e) && e.code == -ENOENT);
}

/* Spike lines with many fields: batches end early instead of overflowing. */
static void extras_bound_per_batch(void)
{
	enum { LINES = 3000, FIELDS = 12 };
	size_t cap = (size_t)LINES * (60 + FIELDS * 24), len = 0;
	char *log = oob_xmalloc(cap);
	for (int i = 0; i < LINES; i++) {
		len += (size_t)snprintf(log + len, cap - len, "core   0: 1 0x%016x (0x00001141)",
					0x10000 + 2 * i);
		for (int j = 0; j < FIELDS; j++)
			len += (size_t)snprintf(log + len, cap - len, " x%d 0x%x", j + 1, i);
		log[len++] = '\n';
	}
	struct oob_err e = {0};
	struct trace_reader *r = tracet_open_bytes(log, len, &e);
	CHECK(r);
	const struct trace_batch *b;
	uint64_t n = 0, nx = 0, batches = 0;
	int rc;
	while ((rc = trace_next(r, &b, &e)) > 0) {
		CHECK(b->nx <= TRACE_X_MAX);
		n += b->n;
		nx += b->nx;
		batches++;
	}
	CHECK_EQ(rc, 0);
	CHECK_EQ(n, LINES);
	CHECK_EQ(nx, LINES * FIELDS);
	CHECK(batches >= (LINES * FIELDS + TRACE_X_MAX - 1) / TRACE_X_MAX);
	trace_close(r);
	free(log);
}

int main(void)
{
	OOBTEST_BEGIN("test_trace");
	RUN(spike_commit_log_matches_truth);
	RUN(spike_lz4_matches_truth);
	RUN(spike_two_harts_batch_per_hart);
	RUN(spike_l_lines_without_commits);
	RUN(spike_symbol_and_trap_lines_are_skipped);
	RUN(qemu_user_log_matches_truth);
	RUN(qemu_user_lz4_matches_truth);
	RUN(qemu_system_log_priv_and_traps);
	RUN(qemu_stopped_then_elsewhere_is_a_trap);
	RUN(tracerv_bin_every_layout);
	RUN(tracerv_bin_lz4_and_text);
	RUN(tracerv_layout_override);
	RUN(tracerv_truncated_record);
	RUN(tracerv_w1_invalid_slots);
	RUN(mapped_piped_and_parallel_agree);
	RUN(tracerv_truncated_file_and_pipe);
	RUN(roundtrip_tracerv_bin_layouts);
	RUN(text_garbage_names_the_line);
	RUN(unknown_and_empty_input);
	RUN(overlong_line_is_an_error);
	RUN(detect_from_first_bytes);
	RUN(format_names_round_trip);
	RUN(format_table_rows);
	RUN(probes_refuse_other_formats);
	RUN(fireperf_log_matches_truth);
	RUN(fireperf_lines);
	RUN(writer_is_atomic_and_strict);
	RUN(extras_bound_per_batch);
	return OOBTEST_END();
}
