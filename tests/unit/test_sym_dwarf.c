/*
 * test_sym_dwarf: the symbolizer's DWARF names, lines and inline chains against
 * addr2line -a -i -f on the same real binaries as test_sym, and the same
 * lookups from four threads at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/oob_log.h"
#include "oobtest.h"
#include "symtest.h"
#include "sym/rv.h"
#include "sym/sym.h"

/* ---- DWARF: names, lines, inline chains against addr2line -a -i -f ---- */

struct a2l_pair {
	char func[256], file[512];
	unsigned line;
};

struct a2l {
	uint64_t addr;
	int n;
	struct a2l_pair p[24];
};

struct dwstats {
	long addrs, lines_ok, lines_bad, lines_none, lines_llvm, chains_ok, chains_bad, inlined,
	    names_ok, names_bad, deepest;
};

static void parse_loc(const char *s, struct a2l_pair *p)
{
	const char *colon = strrchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	snprintf(p->file, sizeof(p->file), "%.*s", (int)n, s);
	p->line = colon && colon[1] != '?' ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
}

/* Runs addr2line over addrs; fills r (same order). 0 on success. */
static int run_addr2line(const char *tool, const char *path, const uint64_t *addrs, size_t n,
			 struct a2l *r)
{
	char in[] = "/tmp/test_sym_a2l_XXXXXX", cmd[8300], line[4096];
	int fd = mkstemp(in), cur = -1, half = 0;
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL, *p;

	if (!f)
		return -1;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%#" PRIx64 "\n", addrs[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s -a -i -f -e '%s' < %s", tool, path, in);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0x", 2) && !half) {
			if (++cur >= (int)n)
				break;
			r[cur].addr = strtoull(line, NULL, 16);
			r[cur].n = 0;
			continue;
		}
		if (cur < 0 || r[cur].n >= 24)
			continue;
		if (!half) {
			snprintf(r[cur].p[r[cur].n].func, sizeof(r[cur].p[0].func), "%s", line);
			half = 1;
		} else {
			char *d = strstr(line, " (discriminator");
			if (d)
				*d = '\0';
			parse_loc(line, &r[cur].p[r[cur].n++]);
			half = 0;
		}
	}
	if (p)
		pclose(p);
	unlink(in);
	return cur + 1 == (int)n ? 0 : -1;
}

static int same_file(const char *ours, const char *theirs)
{
	return ours && theirs && !strcmp(symt_base_name(ours), symt_base_name(theirs));
}

static int line_equal(const struct sym_binary *b, const struct a2l *r, int *none)
{
	const char *file = NULL;
	unsigned line = 0;
	int have_line = sym_binary_srcline(b, r->addr, &file, &line);

	*none = !have_line && (r->p[0].line == 0 || !strcmp(r->p[0].file, "??"));
	return *none || (have_line && same_file(file, r->p[0].file) && line == r->p[0].line);
}

/* 1 if the line matched; 0 leaves the address for the second opinion. */
static int compare_dwarf(const struct sym_binary *b, const struct a2l *r, struct dwstats *st)
{
	struct sym_inline in[24];
	const struct sym_func *f = sym_binary_lookup(b, r->addr);
	int n = sym_binary_inlines(b, r->addr, in, 24), ok, none, line_ok;

	st->addrs++;
	/* line table: addr2line's first location */
	line_ok = line_equal(b, r, &none);
	if (line_ok && none)
		st->lines_none++;
	else if (line_ok)
		st->lines_ok++;
	/* inline chain: pair k names inline N-1-k and sits at the call site of N-k */
	ok = r->n == n + 1;
	for (int k = 0; ok && k < n; k++)
		ok = !strcmp(r->p[k].func, in[n - 1 - k].name) &&
		     same_file(in[n - 1 - k].call_file, r->p[k + 1].file) &&
		     in[n - 1 - k].call_line == r->p[k + 1].line;
	if (n)
		st->inlined++;
	if (n > st->deepest)
		st->deepest = n;
	if (ok)
		st->chains_ok++;
	else if (st->chains_bad++ < 10)
		printf("# %#" PRIx64
		       ": %d inlines (innermost %s), addr2line %d frames (first %s)\n",
		       r->addr, n, n ? in[n - 1].name : "-", r->n, r->p[0].func);
	/* the outermost function's name */
	if (f && r->n && !strcmp(f->name, r->p[r->n - 1].func))
		st->names_ok++;
	else if (st->names_bad++ < 10)
		printf("# %#" PRIx64 ": function %s, addr2line %s\n", r->addr, f ? f->name : "-",
		       r->n ? r->p[r->n - 1].func : "-");
	return line_ok;
}

/*
 * binutils 2.40 sometimes names the CU's primary file where the DWARF 5 line
 * table names a header (out-of-line copies of static inline functions). Where
 * it disagrees with us, llvm-addr2line (a separate DWARF reader) decides.
 */
static void second_opinion(const struct sym_binary *b, const char *path, const uint64_t *addrs,
			   size_t n, struct dwstats *st)
{
	struct a2l *r = calloc(n ? n : 1, sizeof(*r));

	if (n && symt_have("llvm-addr2line") &&
	    run_addr2line("llvm-addr2line", path, addrs, n, r) == 0) {
		for (size_t i = 0; i < n; i++) {
			int none;
			if (line_equal(b, &r[i], &none) && !none) {
				st->lines_llvm++;
				continue;
			}
			if (st->lines_bad++ < 10)
				printf("# %#" PRIx64 ": line differs from addr2line and "
				       "llvm-addr2line (%s:%u)\n",
				       addrs[i], r[i].p[0].file, r[i].p[0].line);
		}
	} else {
		st->lines_bad += (long)n;
	}
	free(r);
}

static void check_dwarf(const char *tool, const char *path, size_t max, struct dwstats *st)
{
	struct sym_binary *b = symt_open(path);
	uint64_t *addrs = calloc(max, sizeof(*addrs));
	struct a2l *r = calloc(max, sizeof(*r));
	size_t n = b ? symt_pick_addrs(b, addrs, max) : 0;

	uint64_t *retry = calloc(max, sizeof(*retry));
	size_t nretry = 0;

	memset(st, 0, sizeof(*st));
	if (n && run_addr2line(tool, path, addrs, n, r) == 0)
		for (size_t k = 0; k < n; k++)
			if (!compare_dwarf(b, &r[k], st))
				retry[nretry++] = addrs[k];
	second_opinion(b, path, retry, nretry, st);
	printf("# %s: %ld addresses: lines %ld equal (+%ld equal to llvm-addr2line's where "
	       "binutils differs), %ld both without, %ld differ; inline chains %ld equal (%ld "
	       "inlined, up to %ld deep), %ld differ; function names %ld equal, %ld differ\n",
	       symt_base_name(path), st->addrs, st->lines_ok, st->lines_llvm, st->lines_none,
	       st->lines_bad, st->chains_ok, st->inlined, st->deepest, st->chains_bad, st->names_ok,
	       st->names_bad);
	free(retry);
	free(addrs);
	free(r);
	sym_binary_free(b);
}

#define DWARF_CASE(fn, tool, rel, max, min_inlined)                                                \
	static void fn(void)                                                                       \
	{                                                                                          \
		struct dwstats st;                                                                 \
		const char *path = oobtest_gen(rel);                                               \
		if (!path)                                                                         \
			SKIP("%s absent", rel);                                                    \
		if (!symt_have(tool))                                                              \
			SKIP("%s missing", tool);                                                  \
		check_dwarf(tool, path, max, &st);                                                 \
		CHECK(st.addrs > 0);                                                               \
		CHECK_EQ(st.lines_bad, 0);                                                         \
		CHECK_EQ(st.chains_bad, 0);                                                        \
		CHECK_EQ(st.names_bad, 0);                                                         \
		CHECK(st.inlined >= (min_inlined));                                                \
	}

DWARF_CASE(test_dwarf_vmlinux, CROSS "addr2line", "vmlinux", 4000, 300)
DWARF_CASE(test_dwarf_pie, CROSS "addr2line", "sym/pie", 100, 1)
DWARF_CASE(test_dwarf_pie_host, "addr2line", "sym/pie-host", 100, 1)
DWARF_CASE(test_dwarf_statics, CROSS "addr2line", "sym/statics", 100, 0)
DWARF_CASE(test_dwarf_split, CROSS "addr2line", "sym/split", 100, 0)

/* ---- threads ---- */

struct tcase {
	uint64_t addr;
	const struct sym_func *f;
	const char *file;
	unsigned line;
	int ninl;
	const char *inner;
};

struct tjob {
	const struct sym_binary *b;
	const struct tcase *c;
	size_t n, start;
	long bad;
};

static void *worker(void *arg)
{
	struct tjob *j = arg;

	for (size_t k = 0; k < 3 * j->n; k++) {
		const struct tcase *c = &j->c[(j->start + k * 7) % j->n];
		struct sym_inline in[16];
		const char *file = NULL;
		unsigned line = 0;
		int ninl = sym_binary_inlines(j->b, c->addr, in, 16);
		sym_binary_srcline(j->b, c->addr, &file, &line);
		if (sym_binary_lookup(j->b, c->addr) != c->f || file != c->file ||
		    line != c->line || ninl != c->ninl || (ninl && in[ninl - 1].name != c->inner))
			j->bad++;
	}
	return NULL;
}

/* Lookups, lines and inline chains from 4 threads at once equal one thread's. */
static void test_threads(void)
{
	const char *path = oobtest_gen("vmlinux");
	struct sym_binary *b;
	struct tcase *c;
	struct tjob jobs[4];
	pthread_t t[4];
	uint64_t *addrs;
	size_t n;
	long bad = 0;

	if (!path)
		SKIP("vmlinux absent");
	b = symt_open(path);
	CHECK(b);
	addrs = calloc(2000, sizeof(*addrs));
	c = calloc(2000, sizeof(*c));
	/* a fresh binary: the inline tables get built while the threads race */
	n = symt_pick_addrs(b, addrs, 2000);
	sym_binary_free(b);
	b = symt_open(path);
	CHECK(b);
	for (size_t i = 0; i < n; i++) {
		c[i].addr = addrs[i];
		c[i].f = sym_binary_lookup(b, addrs[i]);
	}
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct tjob){b, c, n, (size_t)i * 500, 0};
	}
	/* reference: computed by a first single pass on another handle */
	{
		struct sym_binary *r = symt_open(path);
		CHECK(r);
		for (size_t i = 0; i < n; i++) {
			struct sym_inline in[16];
			const char *file = NULL;
			unsigned line = 0;
			sym_binary_srcline(r, addrs[i], &file, &line);
			c[i].line = line;
			c[i].ninl = sym_binary_inlines(r, addrs[i], in, 16);
			/* strings are per handle: translate through b once, single-threaded */
			(void)file;
		}
		sym_binary_free(r);
	}
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, &jobs[i]);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		bad += jobs[i].bad;
	}
	/* the threads compared pointers into b: fill them from b now and rerun */
	for (size_t i = 0; i < n; i++) {
		struct sym_inline in[16];
		const char *file = NULL;
		unsigned line = 0;
		int ninl;
		sym_binary_srcline(b, addrs[i], &file, &line);
		ninl = sym_binary_inlines(b, addrs[i], in, 16);
		CHECK_EQ(line, c[i].line);
		CHECK_EQ(ninl, c[i].ninl);
		c[i].file = file;
		c[i].inner = ninl ? in[ninl - 1].name : NULL;
	}
	bad = 0;
	for (int i = 0; i < 4; i++) {
		jobs[i].bad = 0;
		pthread_create(&t[i], NULL, worker, &jobs[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		bad += jobs[i].bad;
	}
	CHECK_EQ(bad, 0);
	printf("# 4 threads x %zu addresses x 3 passes agree with one thread\n", n);
	free(addrs);
	free(c);
	sym_binary_free(b);
}

int main(void)
{
	OOBTEST_BEGIN("test_sym_dwarf");
	RUN(test_dwarf_pie);
	RUN(test_dwarf_pie_host);
	RUN(test_dwarf_statics);
	RUN(test_dwarf_split);
	RUN(test_dwarf_vmlinux);
	RUN(test_threads);
	return OOBTEST_END();
}
