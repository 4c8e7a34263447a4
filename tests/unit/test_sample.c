/* test_sample: the sampled-stack readers on small inputs whose counts are
 * known by construction, their detection, and their errors. */
#include <stdlib.h>
#include <string.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "sample/sample.h"
#include "trace/trace_formats.h"

static struct profile *read_str(const char *s, struct oob_err *e)
{
	struct profile *p = NULL;
	sample_read_mem(s, strlen(s), "t", NULL, &p, e);
	return p;
}

/* Self weight of the function named name (summed over its frames). */
static uint64_t self_of(const struct profile *p, const char *name)
{
	uint64_t w = 0;
	for (size_t i = 1; i < profile_nnodes(p); i++) {
		const struct profile_node *n = profile_node(p, (uint32_t)i);
		if (!strcmp(profile_frame(p, n->frame)->name, name))
			w += n->self_insns;
	}
	return w;
}

static void detect(void)
{
	static const struct {
		const char *text;
		enum trace_format f;
	} v[] = {
	    {"# uniprof\n0x1000\n0x2000\n1\n\n", TRACE_FMT_UNIPROF},
	    {"0x80000000\n1\n", TRACE_FMT_UNIPROF},
	    {"t  5039 13852.188092:     250000 cpu-clock: \n\t    1141 spin+0x1b (/t)\n",
	     TRACE_FMT_PERF_SCRIPT},
	    {"t  5039/5039  13852.188092: cpu-clock: \n\t    1141 spin (/t)\n",
	     TRACE_FMT_PERF_SCRIPT},
	    {"main;foo;bar 12\nmain 3\n", TRACE_FMT_FOLDED},
	    {"\x1f\x8b\x08\x00", TRACE_FMT_PPROF},
	    {"core   0: 0x0000000080000000 (0x00000297) auipc t0, 0x0\n", TRACE_FMT_SPIKE},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const struct trace_format_row *r = trace_format_detect(
		    (const uint8_t *)v[i].text, strlen(v[i].text), TRACE_FORMATS_ALL);
		CHECK(r != NULL);
		CHECK_STR(r->name, trace_format_name(v[i].f));
	}
}

/* 3 complete walks, 1 failed, 1 cut by the end of the file. */
static void uniprof_counts(void)
{
	struct oob_err e = {0};
	struct profile *p = read_str("# comment\n0x10\n0x20\n1\n\n0x10\n0x20\n1\n\n0x30\n1\n\n"
				     "0x40\n0\n\n0x10\n0x20\n",
				     &e);
	CHECK(p != NULL);
	const struct profile_stats *s = profile_stats(p);
	CHECK_EQ(s->samples, 5);
	CHECK_EQ(s->failed_walks, 1);
	CHECK_EQ(s->truncated_walks, 1);
	CHECK_EQ(s->sampled, 1);
	CHECK_EQ(profile_node(p, 0)->total_insns, 5);
	CHECK_EQ(self_of(p, "0x10"), 3);
	CHECK_EQ(self_of(p, "0x30"), 1);
	CHECK_EQ(self_of(p, "0x40"), 1);
	CHECK_EQ(self_of(p, "[walk failed]"), 0);
	profile_free(p);
}

static void folded_weights(void)
{
	struct oob_err e = {0};
	struct profile *p =
	    read_str("main;a;b 10\nmain;a 5\nmain;sys_read_[k] 2\n\nmain;a;b 1\n", &e);
	CHECK(p != NULL);
	CHECK_EQ(profile_node(p, 0)->total_insns, 18);
	CHECK_EQ(self_of(p, "b"), 11);
	CHECK_EQ(self_of(p, "a"), 5);
	CHECK_EQ(self_of(p, "sys_read"), 2);
	CHECK_EQ(profile_stats(p)->samples, 18);
	profile_free(p);
}

static void perf_names(void)
{
	struct oob_err e = {0};
	struct profile *p =
	    read_str("t 1 1.0: 1 cpu-clock: \n\t 1141 spin+0x1b (/t)\n\t 11a4 "
		     "main+0x12 (/t)\n\nt 1 2.0: 1 cpu-clock: \n\t ffffffff81000e06 "
		     "asm_irq+0x6 ([kernel.kallsyms])\n\t 1141 spin+0x1b (/t)\n\t "
		     "11a4 main+0x12 (/t)\n\t 0 [unknown] ([unknown])\n",
		     &e);
	CHECK(p != NULL);
	CHECK_EQ(profile_stats(p)->samples, 2);
	CHECK_EQ(self_of(p, "spin"), 1);
	CHECK_EQ(self_of(p, "asm_irq"), 1);
	int kernel = 0;
	for (size_t i = 0; i < profile_nframes(p); i++)
		if (!strcmp(profile_frame(p, (uint32_t)i)->name, "asm_irq"))
			kernel = profile_frame(p, (uint32_t)i)->kind == PROFILE_FRAME_KERNEL;
	CHECK(kernel);
	profile_free(p);
}

/* The path of frame names from the root to the node of the innermost
 * frame named leaf, outermost first, ';'-separated. */
static void path_of(const struct profile *p, const char *leaf, char *out, size_t cap)
{
	out[0] = 0;
	for (uint32_t i = 1; i < profile_nnodes(p); i++) {
		if (strcmp(profile_frame(p, profile_node(p, i)->frame)->name, leaf))
			continue;
		const char *names[16];
		size_t n = 0;
		for (uint32_t k = i; k && n < 16; k = profile_node(p, k)->parent)
			names[n++] = profile_frame(p, profile_node(p, k)->frame)->name;
		while (n--) {
			strncat(out, names[n], cap - strlen(out) - 1);
			if (n)
				strncat(out, ";", cap - strlen(out) - 1);
		}
		return;
	}
}

/* oobprof sample's "# trap [...]" line joins a kernel stack to the user one
 * below it: a marker frame between them; before any address, a comment. */
static void uniprof_trap(void)
{
	struct oob_err e = {0};
	struct profile *p = read_str("# trap [irq: timer]\n0xffffffff80001000\n0xffffffff80002000\n"
				     "# trap [trap: ecall]\n0x1000\n0x2000\n1\n\n",
				     &e);
	char path[256];
	CHECK(p != NULL);
	path_of(p, "0xffffffff80001000", path, sizeof(path));
	CHECK_STR(path, "0x2000;0x1000;[trap: ecall];0xffffffff80002000;0xffffffff80001000");
	for (size_t i = 0; i < profile_nframes(p); i++)
		if (!strcmp(profile_frame(p, (uint32_t)i)->name, "[trap: ecall]"))
			CHECK_EQ(profile_frame(p, (uint32_t)i)->kind, PROFILE_FRAME_MARKER);
	CHECK_EQ(self_of(p, "[irq: timer]"), 0);
	CHECK_EQ(profile_stats(p)->samples, 1);
	profile_free(p);
}

static void errors(void)
{
	static const struct {
		const char *text, *msg;
	} v[] = {
	    {"0x10\n0x20\nbogus\n", "line 3: expected 0x<address>"},
	    {"t 1 1.0: cpu-clock:\n\t 1141 spin (/t)\n\nt 1 2.0: cpu-clock:\n\nx",
	     "line 4: sample "
	     "without a callchain"},
	    {"a;b 1\na;b\n", "line 2: expected \"frame;frame;... COUNT\""},
	    {"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "gzip: cut short"},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct oob_err e = {0};
		struct profile *p = read_str(v[i].text, &e);
		if (i == 3) { /* binary: strlen stops early, give the length */
			sample_read_mem(v[i].text, 10, "t", NULL, &p, &e);
		}
		CHECK(p == NULL);
		CHECK(strstr(e.msg, v[i].msg) != NULL);
	}
}

int main(void)
{
	OOBTEST_BEGIN("test_sample");
	RUN(detect);
	RUN(uniprof_counts);
	RUN(folded_weights);
	RUN(perf_names);
	RUN(uniprof_trap);
	RUN(errors);
	return OOBTEST_END();
}
