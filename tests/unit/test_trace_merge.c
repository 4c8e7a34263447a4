/* trace_merge: several single-hart files read in cycle order. The expected
 * order is computed here by sorting every record by (cycle, file, position),
 * independently of the merge's cutting of batches. */
#include <errno.h>

#include "util/oob_mem.h"
#include "oobtest.h"
#include "trace/trace_merge.h"
#include "trace/trace_write.h"

/* One record as the test made it. */
struct rec {
	uint64_t pc, cycle;
	uint32_t file, pos;
	int has_x; /* an extra (a register write) rides on it */
};

/* Makes file f's records: n of them, cycles rising by 0..3 (equal cycles
 * inside a file and across files), every 7th with an extra. */
static void make_records(struct rec *r, uint32_t f, uint32_t n, uint64_t *state)
{
	uint64_t c = 100;
	for (uint32_t i = 0; i < n; i++) {
		*state = *state * 6364136223846793005ull + 1442695040888963407ull;
		c += (*state >> 33) % 4;
		r[i] = (struct rec){.pc = 0x80000000ull + 0x1000000ull * f + 4 * i,
				    .cycle = c,
				    .file = f,
				    .pos = i,
				    .has_x = i % 7 == 3};
	}
}

/* Writes records as an oobt file (pc, cycle, register extras), in batches of
 * 1000 so that the merge must cut across the reader's batches. */
static int write_file(const char *path, const struct rec *r, uint32_t n, unsigned fields,
		      struct oob_err *e)
{
	struct trace_write_opts wo = {.format = TRACE_FMT_OOBT, .fields = fields};
	struct trace_writer *w = trace_writer_open(path, &wo, e);
	if (!w)
		return -1;
	uint64_t *pc = oob_xcalloc(n, 8), *cyc = oob_xcalloc(n, 8);
	struct trace_extra *x = oob_xcalloc(n, sizeof(*x));
	int rc = 0;
	for (uint32_t done = 0; done < n && !rc;) {
		uint32_t k = n - done < 1000 ? n - done : 1000, nx = 0;
		for (uint32_t i = 0; i < k; i++) {
			pc[i] = r[done + i].pc;
			cyc[i] = r[done + i].cycle;
			if (r[done + i].has_x)
				x[nx++] = (struct trace_extra){.idx = i,
							       .kind = TRACE_X_REG,
							       .num = 10,
							       .val = r[done + i].pc};
		}
		struct trace_batch b = {.n = k,
					.pc = pc,
					.cycle = fields & TRACE_F_CYCLE ? cyc : NULL,
					.x = x,
					.nx = fields & TRACE_F_REGS ? nx : 0};
		rc = trace_writer_put(w, &b, e);
		done += k;
	}
	free(pc);
	free(cyc);
	free(x);
	if (rc) {
		trace_writer_abort(w);
		return rc;
	}
	return trace_writer_close(w, e);
}

static int by_time(const void *pa, const void *pb)
{
	const struct rec *a = pa, *b = pb;
	if (a->cycle != b->cycle)
		return a->cycle < b->cycle ? -1 : 1;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	return (a->pos > b->pos) - (a->pos < b->pos);
}

enum { NFILES = 3, NREC = 9000 };

/* Moves every file's records to the front of all[]; returns how many. */
static size_t pack(struct rec *all)
{
	size_t n = 0;
	for (uint32_t f = 0; f < NFILES; f++)
		for (uint32_t i = 0; i < NREC - 1000 * f; i++)
			all[n++] = all[f * NREC + i];
	return n;
}

/* Writes NFILES files; fills all[] with every record (file f's from
 * f * NREC on) and paths/opts. */
static int make_files(struct rec *all, const char **paths, struct trace_opts *opts, unsigned fields,
		      struct oob_err *e)
{
	uint64_t state = 42;
	for (uint32_t f = 0; f < NFILES; f++) {
		static const char *const names[NFILES] = {"a.oobt", "b.oobt", "c.oobt"};
		paths[f] = oobtest_out("merge", names[f]);
		make_records(all + f * NREC, f, NREC - 1000 * f, &state);
		if (write_file(paths[f], all + f * NREC, NREC - 1000 * f, fields, e) < 0)
			return -1;
		opts[f] = (struct trace_opts){.hart = (uint16_t)(f + 4)};
	}
	return 0;
}

/* Reads the merge and compares record by record with want[0..n). */
static void check_order(struct trace_merge *m, const struct rec *want, size_t n, int with_x)
{
	const struct trace_batch *b;
	struct oob_err e = {0};
	size_t k = 0, nx = 0;
	int rc;
	while ((rc = trace_merge_next(m, &b, &e)) > 0) {
		CHECK_EQ(b->seq, k);
		CHECK(b->n > 0 && k + b->n <= n);
		uint32_t xi = 0;
		for (uint32_t i = 0; i < b->n; i++, k++) {
			const struct rec *w = &want[k];
			CHECK_EQ(b->hart, w->file + 4);
			CHECK_EQ(b->pc[i], w->pc);
			CHECK_EQ(b->cycle ? b->cycle[i] : w->cycle, w->cycle);
			if (!with_x || !w->has_x)
				continue;
			/* the extra is on this record of the view, re-indexed */
			CHECK(xi < b->nx && b->x[xi].idx == i && b->x[xi].val == w->pc);
			xi++;
			nx++;
		}
		CHECK_EQ(xi, b->nx);
	}
	CHECK_EQ(rc, 0);
	CHECK_EQ(k, n);
	CHECK(!with_x || nx > 1000);
}

static void interleaves_by_cycle(void)
{
	struct rec *all = oob_xcalloc(NFILES * NREC, sizeof(*all));
	const char *paths[NFILES];
	struct trace_opts opts[NFILES];
	struct oob_err e = {0};
	CHECK(make_files(all, paths, opts, TRACE_F_CYCLE | TRACE_F_REGS, &e) == 0);
	size_t n = pack(all);
	qsort(all, n, sizeof(*all), by_time);
	struct trace_merge *m = trace_merge_open(paths, opts, NFILES, &e);
	CHECK(m);
	CHECK(trace_merge_by_cycle(m));
	CHECK_EQ(trace_merge_fields(m) & (TRACE_F_CYCLE | TRACE_F_REGS),
		 TRACE_F_CYCLE | TRACE_F_REGS);
	CHECK_EQ(trace_merge_format(m), TRACE_FMT_OOBT);
	check_order(m, all, n, 1);
	CHECK(trace_merge_raw_bytes(m) > 0);
	trace_merge_close(m);
	free(all);
}

/* Without cycles there is no common time: one file after the other. */
static void without_cycles_one_after_another(void)
{
	struct rec *all = oob_xcalloc(NFILES * NREC, sizeof(*all));
	const char *paths[NFILES];
	struct trace_opts opts[NFILES];
	struct oob_err e = {0};
	CHECK(make_files(all, paths, opts, TRACE_F_REGS, &e) == 0);
	size_t n = pack(all);
	struct trace_merge *m = trace_merge_open(paths, opts, NFILES, &e);
	CHECK(m);
	CHECK(!trace_merge_by_cycle(m));
	CHECK_EQ(trace_merge_fields(m) & TRACE_F_CYCLE, 0);
	check_order(m, all, n, 1);
	trace_merge_close(m);
	free(all);
}

/* A missing file is refused by name, and so is a cut one, when it is read. */
static void bad_files(void)
{
	struct rec *all = oob_xcalloc(NFILES * NREC, sizeof(*all));
	const char *paths[NFILES];
	struct trace_opts opts[NFILES];
	struct oob_err e = {0}, cut = {0};
	int made = make_files(all, paths, opts, TRACE_F_CYCLE, &e) == 0;
	free(all);
	CHECK(made);
	const char *missing[2] = {paths[0], "/nonexistent/TRACEFILE-C1"};
	struct trace_merge *m = trace_merge_open(missing, opts, 2, &e);
	CHECK(!m && e.code == -ENOENT && strstr(e.msg, "/nonexistent/TRACEFILE-C1"));
	struct stat st;
	CHECK(stat(paths[1], &st) == 0 && truncate(paths[1], st.st_size / 2) == 0);
	m = trace_merge_open(paths, opts, NFILES, &e);
	CHECK(m);
	const struct trace_batch *b;
	int rc;
	while ((rc = trace_merge_next(m, &b, &cut)) > 0)
		;
	trace_merge_close(m);
	CHECK(rc < 0 && strstr(cut.msg, paths[1]));
}

int main(void)
{
	OOBTEST_BEGIN("test_trace_merge");
	RUN(interleaves_by_cycle);
	RUN(without_cycles_one_after_another);
	RUN(bad_files);
	return OOBTEST_END();
}
