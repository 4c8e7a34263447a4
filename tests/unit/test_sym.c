/*
 * test_sym: the symbolizer against binutils (readelf, addr2line, objdump) and
 * coreutils (sha256sum) on real binaries: the Spike fixture's prog, init and
 * vmlinux, and the programs tests/tools/gen-sym.sh builds from
 * tests/fixtures/sym (a PIE for RISC-V and for the host, two same-named
 * static functions, a function split into hot and cold parts). Corrupt and
 * hostile inputs must give clean errors.
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
#include "sym/rv.h"
#include "sym/sym.h"

#define CROSS "riscv64-linux-gnu-"

/* ---- helpers: commands, ground-truth parsing ---- */

static int have(const char *tool)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* First line of `cmd` output matching prefix, copied after the prefix. */
static int cmd_find(const char *cmd, const char *prefix, char *out, size_t n)
{
	char line[4096];
	FILE *p = popen(cmd, "r");
	int found = 0;

	while (p && fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, prefix);
		if (found || !s)
			continue;
		snprintf(out, n, "%s", s + strlen(prefix));
		out[strcspn(out, "\n")] = '\0';
		found = 1;
	}
	if (p)
		pclose(p);
	return found;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

struct gsym {
	uint64_t value, size;
	char type[8], bind[8];
	int shndx;
	char name[256];
};

struct gsyms {
	struct gsym *v;
	size_t n;
	uint64_t xsec; /* bit i: section i is executable (i < 64) */
};

/* Sections with the X flag, from readelf -SW. */
static uint64_t exec_sections(const char *path)
{
	char cmd[4200], line[1024];
	uint64_t mask = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), CROSS "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		/* "[Nr] Name Type Address Off Size ES Flg Lk Inf Al"; Flg may be empty */
		char tok[10][128];
		int idx, nt;
		const char *br = strchr(line, '['), *end = br ? strchr(br, ']') : NULL;
		if (!end || sscanf(br + 1, "%d]", &idx) != 1 || idx >= 64)
			continue;
		nt = sscanf(end + 1, "%127s %127s %127s %127s %127s %127s %127s %127s %127s %127s",
			    tok[0], tok[1], tok[2], tok[3], tok[4], tok[5], tok[6], tok[7], tok[8],
			    tok[9]);
		if (nt == 10 && strchr(tok[6], 'X'))
			mask |= (uint64_t)1 << idx;
	}
	if (p)
		pclose(p);
	return mask;
}

/* readelf -sW: every symbol of .symtab and .dynsym. */
static int read_syms(const char *path, struct gsyms *g)
{
	char cmd[4200], line[4096];
	size_t cap = 0;
	FILE *p;

	memset(g, 0, sizeof(*g));
	g->xsec = exec_sections(path);
	snprintf(cmd, sizeof(cmd), CROSS "readelf -sW '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		struct gsym s = {0};
		char ndx[16], vis[16];
		unsigned long long value, size;
		if (sscanf(line, " %*u: %llx %llu %7s %7s %15s %15s %255s", &value, &size, s.type,
			   s.bind, vis, ndx, s.name) != 7)
			continue;
		if (!strcmp(ndx, "UND") || !strcmp(ndx, "ABS") || !strcmp(ndx, "COM"))
			continue;
		s.value = value;
		s.size = size;
		s.shndx = atoi(ndx);
		s.name[strcspn(s.name, "@")] = '\0'; /* dynsym version suffixes */
		if (g->n == cap) {
			cap = cap ? 2 * cap : 1024;
			g->v = realloc(g->v, cap * sizeof(*g->v));
		}
		g->v[g->n++] = s;
	}
	if (p)
		pclose(p);
	return g->n ? 0 : -1;
}

/* The name up to the first '.' (foo.cold, foo.part.0 -> foo). */
static size_t stem_len(const char *s)
{
	return strcspn(s, ".");
}

static int same_stem(const char *a, const char *b)
{
	size_t n = stem_len(a);
	return n == stem_len(b) && !strncmp(a, b, n);
}

/* Some symbol at value named name? (aliases share an address) */
static int is_alias(const struct gsyms *g, uint64_t value, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].value == value && !strcmp(g->v[i].name, name))
			return 1;
	return 0;
}

static struct sym_binary *open_or_null(const char *path)
{
	struct oob_err err = {0};
	struct sym_binary *b = sym_binary_open(path, &err);
	if (!b)
		printf("# %s: %s\n", path, err.msg);
	return b;
}

/* ---- build-id, layout ---- */

static void check_build_id(const char *path, int *ok)
{
	char cmd[4200], want[256], sha[256];
	struct sym_binary *b = open_or_null(path);

	*ok = 0;
	if (!b)
		return;
	snprintf(cmd, sizeof(cmd), CROSS "readelf -n '%s'", path);
	if (cmd_find(cmd, "Build ID: ", want, sizeof(want))) {
		*ok = !strcmp(sym_binary_build_id(b), want);
	} else {
		snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
		strcpy(want, "sha256:");
		if (cmd_find(cmd, "", sha, sizeof(sha))) {
			sha[strcspn(sha, " ")] = '\0';
			strcat(want, sha);
		}
		*ok = !strcmp(sym_binary_build_id(b), want);
	}
	if (!*ok)
		printf("# %s: build id %s, expected %s\n", path, sym_binary_build_id(b), want);
	sym_binary_free(b);
}

static void test_build_id(void)
{
	const char *files[] = {oobtest_shared("fixtures/spike/prog"),
			       oobtest_shared("fixtures/spike/init"),
			       oobtest_gen("vmlinux"),
			       oobtest_gen("sym/pie"),
			       oobtest_gen("sym/pie-host"),
			       oobtest_gen("sym/cti") /* no build-id: sha256 */};
	int n = 0;

	if (!have(CROSS "readelf") || !have("sha256sum"))
		SKIP(CROSS "readelf or sha256sum missing");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		int ok;
		if (!files[i])
			continue;
		check_build_id(files[i], &ok);
		CHECK(ok);
		n++;
	}
	if (n == 0)
		SKIP("no fixtures (../shared absent, gen-sym.sh not run)");
	printf("# build ids of %d files match readelf -n / sha256sum\n", n);
}

/* Machine, type, load base and text range against readelf -hW / -lW. */
static void check_layout(const char *path)
{
	char cmd[4200], line[1024], mach[128] = "", type[64] = "";
	uint64_t minv = UINT64_MAX, tlo = UINT64_MAX, thi = 0, lo, hi;
	struct sym_binary *b = open_or_null(path);
	FILE *p;

	CHECK(b);
	snprintf(cmd, sizeof(cmd), CROSS "readelf -hW '%s'", path);
	cmd_find(cmd, "Machine:", mach, sizeof(mach));
	cmd_find(cmd, "Type:", type, sizeof(type));
	CHECK_EQ(sym_binary_machine(b), strstr(mach, "RISC-V")	  ? 243
					: strstr(mach, "X86-64")  ? 62
					: strstr(mach, "AArch64") ? 183
								  : -1);
	CHECK_EQ(sym_binary_is_pie(b), strstr(type, "DYN") != NULL);
	snprintf(cmd, sizeof(cmd), CROSS "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		unsigned long long off, va, pa, fs, ms;
		char flg[8] = "";
		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx %7[RWE ]", &off, &va, &pa, &fs,
			   &ms, flg) < 6)
			continue;
		if (va < minv)
			minv = va;
		if (strchr(flg, 'E')) {
			tlo = va < tlo ? va : tlo;
			thi = va + ms > thi ? va + ms : thi;
		}
	}
	if (p)
		pclose(p);
	sym_binary_text_range(b, &lo, &hi);
	CHECK_EQ(sym_binary_load_base(b), minv & ~(uint64_t)0xfff);
	CHECK_EQ(lo, tlo);
	CHECK_EQ(hi, thi);
	sym_binary_free(b);
}

static void test_layout(void)
{
	const char *files[] = {oobtest_shared("fixtures/spike/prog"), oobtest_gen("vmlinux"),
			       oobtest_gen("sym/pie"), oobtest_gen("sym/pie-host")};
	int n = 0;

	if (!have(CROSS "readelf"))
		SKIP(CROSS "readelf missing");
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!files[i])
			continue;
		check_layout(files[i]);
		if (oobtest_failed_case)
			return;
		n++;
	}
	if (n == 0)
		SKIP("no fixtures");
}

/* ---- function table against readelf -s ---- */

struct symstats {
	long syms, named, dwarf_named, folded, inside, bad;
};

/*
 * Every function symbol (and sized untyped symbol in code) resolves to a range
 * whose entry is its address (named by a symbol there, by DWARF after the same
 * stem -- foo for foo.constprop.0 --, or, where identical code was folded, by
 * DWARF after another function sharing the bytes), or lies inside a DWARF
 * function of its stem (foo.cold). Nothing else is accepted.
 */
static void check_symtab(const char *path, struct symstats *st)
{
	struct gsyms g;
	struct sym_binary *b = open_or_null(path);

	memset(st, 0, sizeof(*st));
	if (!b || read_syms(path, &g) < 0) {
		st->bad = 1;
		sym_binary_free(b);
		return;
	}
	for (size_t i = 0; i < g.n; i++) {
		const struct gsym *s = &g.v[i];
		const struct sym_func *f;
		int code = s->shndx < 64 && ((g.xsec >> s->shndx) & 1), dw;
		if (strcmp(s->type, "FUNC") && strcmp(s->type, "IFUNC") &&
		    !(!strcmp(s->type, "NOTYPE") && s->size && code && s->name[0] != '$'))
			continue;
		if (!code || !s->name[0])
			continue;
		st->syms++;
		f = sym_binary_lookup(b, s->value);
		dw = f && (f->flags & SYM_F_DWARF);
		if (f && f->entry == s->value && is_alias(&g, s->value, f->name))
			st->named++;
		else if (f && f->entry == s->value && dw && same_stem(f->name, s->name))
			st->dwarf_named++;
		else if (f && f->entry == s->value && dw)
			st->folded++;
		else if (dw && same_stem(f->name, s->name))
			st->inside++;
		else if (st->bad++ < 10)
			printf("# %s: symbol %s at %#" PRIx64 " -> %s (entry %#" PRIx64 ")\n", path,
			       s->name, s->value, f ? f->name : "nothing", f ? f->entry : 0);
	}
	printf("# %s: %zu ranges; %ld function symbols: %ld at the entry of a range named by a "
	       "symbol there, %ld of one DWARF names by their stem, %ld of a DWARF function "
	       "folded with them; %ld inside the DWARF function of their stem; %ld wrong\n",
	       base_name(path), sym_binary_nfuncs(b), st->syms, st->named, st->dwarf_named,
	       st->folded, st->inside, st->bad);
	free(g.v);
	sym_binary_free(b);
}

/* The table itself: sorted, non-overlapping, entries shared by all ranges of a function. */
static int check_table_shape(const struct sym_binary *b)
{
	for (size_t i = 0; i < sym_binary_nfuncs(b); i++) {
		const struct sym_func *f = sym_binary_func(b, i);
		if (f->lo >= f->hi || !f->name || !f->name[0])
			return 0;
		if (i && sym_binary_func(b, i - 1)->hi > f->lo)
			return 0;
		if (sym_binary_lookup(b, f->lo) != f || sym_binary_lookup(b, f->hi - 1) != f)
			return 0;
	}
	return sym_binary_func(b, sym_binary_nfuncs(b)) == NULL;
}

#define SYMTAB_CASE(fn, getter, rel, min_syms)                                                     \
	static void fn(void)                                                                       \
	{                                                                                          \
		struct symstats st;                                                                \
		struct sym_binary *b;                                                              \
		const char *path = getter(rel);                                                    \
		if (!path)                                                                         \
			SKIP("%s absent", rel);                                                    \
		if (!have(CROSS "readelf"))                                                        \
			SKIP(CROSS "readelf missing");                                             \
		check_symtab(path, &st);                                                           \
		CHECK_EQ(st.bad, 0);                                                               \
		CHECK(st.syms >= (min_syms));                                                      \
		b = open_or_null(path);                                                            \
		CHECK(b);                                                                          \
		CHECK(check_table_shape(b));                                                       \
		sym_binary_free(b);                                                                \
	}

SYMTAB_CASE(test_symtab_prog, oobtest_shared, "fixtures/spike/prog", 700)
SYMTAB_CASE(test_symtab_init, oobtest_shared, "fixtures/spike/init", 700)
SYMTAB_CASE(test_symtab_vmlinux, oobtest_gen, "vmlinux", 10000)
SYMTAB_CASE(test_symtab_pie, oobtest_gen, "sym/pie", 8)
SYMTAB_CASE(test_symtab_pie_host, oobtest_gen, "sym/pie-host", 8)
SYMTAB_CASE(test_symtab_split_nodw, oobtest_gen, "sym/split-nodw", 700)

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

/* The address k instructions into f (RISC-V), or k/n of the way (others). */
static uint64_t nth_insn(const struct sym_binary *b, const struct sym_func *f, uint64_t k,
			 uint64_t n)
{
	uint64_t a = f->lo;

	if (sym_binary_machine(b) != 243)
		return f->lo + (f->hi - f->lo) * k / n;
	for (; k > 0; k--) {
		uint8_t lo[2];
		if (sym_binary_read(b, a, lo, 2) != 2 ||
		    a + rv_insn_len(lo[0] | lo[1] << 8) >= f->hi)
			break;
		a += rv_insn_len(lo[0] | lo[1] << 8);
	}
	return a;
}

/*
 * Addresses to probe, at most max: in large binaries one instruction (chosen
 * by a fixed hash) of every k-th DWARF function, in small ones the first
 * max/functions instructions of each.
 */
static size_t pick_addrs(const struct sym_binary *b, uint64_t *out, size_t max)
{
	size_t n = 0, ndw = 0, nf = sym_binary_nfuncs(b), j = 0, step, per;

	for (size_t i = 0; i < nf; i++)
		ndw += (sym_binary_func(b, i)->flags & SYM_F_DWARF) != 0;
	if (!ndw)
		return 0;
	step = ndw / max + 1;
	per = ndw >= max ? 1 : max / ndw;
	for (size_t i = 0; i < nf && n < max; i++) {
		const struct sym_func *f = sym_binary_func(b, i);
		if (!(f->flags & SYM_F_DWARF) || j++ % step)
			continue;
		if (per == 1)
			out[n++] = nth_insn(b, f, (i * 2654435761u) % 97, 97);
		for (size_t k = 0; per > 1 && k < per && n < max; k++)
			out[n++] = nth_insn(b, f, k, per);
	}
	return n;
}

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
	return ours && theirs && !strcmp(base_name(ours), base_name(theirs));
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

	if (n && have("llvm-addr2line") &&
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
	struct sym_binary *b = open_or_null(path);
	uint64_t *addrs = calloc(max, sizeof(*addrs));
	struct a2l *r = calloc(max, sizeof(*r));
	size_t n = b ? pick_addrs(b, addrs, max) : 0;

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
	       base_name(path), st->addrs, st->lines_ok, st->lines_llvm, st->lines_none,
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
		if (!have(tool))                                                                   \
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

/* ---- same-named statics, split functions ---- */

/* Line of the first line of the source file containing needle, or 0. */
static unsigned src_line_of(const char *rel, const char *needle)
{
	char line[1024];
	unsigned n = 0, found = 0;
	FILE *f = fopen(oobtest_src(rel), "r");

	while (f && fgets(line, sizeof(line), f) && !found) {
		n++;
		if (strstr(line, needle))
			found = n;
	}
	if (f)
		fclose(f);
	return found;
}

static const struct gsym *find_sym(const struct gsyms *g, const char *name, size_t nth)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->v[i].name, name) && !strcmp(g->v[i].type, "FUNC") && nth-- == 0)
			return &g->v[i];
	return NULL;
}

/* Two `static int helper` (statics_a.c, statics_b.c): two entries, two files. */
static void test_statics(void)
{
	const char *path = oobtest_gen("sym/statics");
	const struct gsym *h[2];
	const struct sym_func *f[2];
	struct sym_binary *b;
	struct gsyms g;
	char cmd[4200], where[2][512];

	if (!path)
		SKIP("sym/statics absent");
	if (!have(CROSS "readelf") || !have(CROSS "addr2line"))
		SKIP("binutils missing");
	CHECK_EQ(read_syms(path, &g), 0);
	h[0] = find_sym(&g, "helper", 0);
	h[1] = find_sym(&g, "helper", 1);
	CHECK(h[0] && h[1] && !find_sym(&g, "helper", 2));
	CHECK(h[0]->value != h[1]->value);
	b = open_or_null(path);
	CHECK(b);
	for (int i = 0; i < 2; i++) {
		f[i] = sym_binary_lookup(b, h[i]->value + h[i]->size - 2);
		CHECK(f[i]);
		CHECK_STR(f[i]->name, "helper");
		CHECK_EQ(f[i]->entry, h[i]->value);
		CHECK(f[i]->flags & SYM_F_DWARF);
		CHECK(!(f[i]->flags & SYM_F_GLOBAL));
		snprintf(cmd, sizeof(cmd), CROSS "addr2line -e '%s' %#" PRIx64, path, h[i]->value);
		CHECK(cmd_find(cmd, "", where[i], sizeof(where[i])));
		where[i][strcspn(where[i], ":")] = '\0';
		CHECK_STR(base_name(f[i]->file), base_name(where[i]));
		CHECK_EQ(f[i]->line, src_line_of(!strcmp(base_name(where[i]), "statics_a.c")
						     ? "tests/fixtures/sym/statics_a.c"
						     : "tests/fixtures/sym/statics_b.c",
						 "static int helper"));
	}
	CHECK(strcmp(base_name(f[0]->file), base_name(f[1]->file)) != 0);
	printf("# helper at %#" PRIx64 " (%s:%u) and %#" PRIx64 " (%s:%u)\n", f[0]->entry,
	       base_name(f[0]->file), f[0]->line, f[1]->entry, base_name(f[1]->file), f[1]->line);
	free(g.v);
	sym_binary_free(b);
}

/*
 * work() split into work and work.cold: with DWARF both parts are work,
 * entered at work's symbol; without, work.cold and parse.constprop.0 keep
 * their own names and entries.
 */
static void test_split(void)
{
	const char *dw = oobtest_gen("sym/split"), *nodw = oobtest_gen("sym/split-nodw");
	const struct gsym *work, *cold, *cp;
	const struct sym_func *f;
	struct sym_binary *b;
	struct gsyms g;
	size_t parts = 0;

	if (!dw || !nodw)
		SKIP("sym/split absent");
	if (!have(CROSS "readelf"))
		SKIP("binutils missing");
	CHECK_EQ(read_syms(dw, &g), 0);
	work = find_sym(&g, "work", 0);
	cold = find_sym(&g, "work.cold", 0);
	CHECK(work && cold);
	b = open_or_null(dw);
	CHECK(b);
	CHECK(sym_binary_has_dwarf(b));
	f = sym_binary_lookup(b, cold->value);
	CHECK(f);
	CHECK_STR(f->name, "work");
	CHECK_EQ(f->entry, work->value);
	CHECK(f->flags & SYM_F_DWARF);
	for (size_t i = 0; i < sym_binary_nfuncs(b); i++)
		parts += sym_binary_func(b, i)->entry == work->value;
	CHECK_EQ(parts, 2);
	sym_binary_free(b);
	free(g.v);

	CHECK_EQ(read_syms(nodw, &g), 0);
	cold = find_sym(&g, "work.cold", 0);
	cp = find_sym(&g, "parse.constprop.0", 0);
	CHECK(cold && cp);
	b = open_or_null(nodw);
	CHECK(b);
	CHECK(!sym_binary_has_dwarf(b));
	f = sym_binary_lookup(b, cold->value + 2);
	CHECK(f);
	CHECK_STR(f->name, "work.cold");
	CHECK_EQ(f->entry, cold->value);
	CHECK_EQ(f->flags & (SYM_F_DWARF | SYM_F_SYMTAB), SYM_F_SYMTAB);
	f = sym_binary_lookup(b, cp->value);
	CHECK(f);
	CHECK_STR(f->name, "parse.constprop.0");
	sym_binary_free(b);
	free(g.v);
}

/* ---- untyped labels of size 0 in code ---- */

/*
 * A label inside a sized symbol (the kernel's ret_from_syscall inside
 * handle_exception) does not split it; one outside any (crt1's load_gp) names
 * its code up to the next symbol. Ground truth: readelf's symbol sizes.
 */
static void check_labels(const char *path, long *inside, long *own)
{
	struct gsyms g;
	struct sym_binary *b = open_or_null(path);

	*inside = *own = 0;
	CHECK(b);
	CHECK_EQ(read_syms(path, &g), 0);
	for (size_t i = 0; i < g.n; i++) {
		const struct gsym *l = &g.v[i], *enc = NULL;
		const struct sym_func *f;
		if (strcmp(l->type, "NOTYPE") || l->size || l->shndx >= 64 ||
		    !((g.xsec >> l->shndx) & 1) || l->name[0] == '$' || strstr(l->name, ".L"))
			continue;
		for (size_t j = 0; j < g.n && !enc; j++)
			if (g.v[j].size && g.v[j].shndx == l->shndx && g.v[j].value <= l->value &&
			    l->value < g.v[j].value + g.v[j].size)
				enc = &g.v[j];
		f = sym_binary_lookup(b, l->value);
		if (f && (f->flags & SYM_F_DWARF))
			continue; /* inside compiled code: DWARF decides */
		if (enc) {
			CHECK(f && f->lo <= l->value && f->entry <= l->value);
			CHECK(f->entry == enc->value || is_alias(&g, f->entry, f->name));
			(*inside)++;
		} else if (f && f->entry == l->value) {
			CHECK(is_alias(&g, l->value, f->name));
			(*own)++;
		}
	}
	free(g.v);
	sym_binary_free(b);
}

static void test_labels(void)
{
	const char *pie = oobtest_gen("sym/pie"), *vml = oobtest_gen("vmlinux");
	long inside, own;

	if (!pie)
		SKIP("sym/pie absent");
	if (!have(CROSS "readelf"))
		SKIP("binutils missing");
	check_labels(pie, &inside, &own);
	if (oobtest_failed_case)
		return;
	CHECK(own >= 1); /* load_gp */
	printf("# pie: %ld labels inside sized symbols, %ld naming their own code\n", inside, own);
	if (!vml)
		return;
	check_labels(vml, &inside, &own);
	if (oobtest_failed_case)
		return;
	CHECK(inside >= 10); /* entry.S: ret_from_syscall, restore_all, ... */
	printf("# vmlinux: %ld labels inside sized symbols, %ld naming their own code\n", inside,
	       own);
}

/* ---- PLT stubs ---- */

/* objdump's "<name@plt>:" and "<.plt>:" labels = our ranges there. */
static int check_plt(const char *tool, const char *path, long *n)
{
	char cmd[4200], line[1024];
	struct sym_binary *b = open_or_null(path);
	FILE *p;
	int bad = 0;

	*n = 0;
	if (!b)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s -d -j .plt '%s'", tool, path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		char name[512];
		unsigned long long addr;
		const struct sym_func *f;
		size_t len;
		if (sscanf(line, "%llx <%511[^>]>:", &addr, name) != 2)
			continue;
		len = strlen(name);
		if (strcmp(name, ".plt") && (len < 5 || strcmp(name + len - 4, "@plt")))
			continue; /* x86's "printf@plt-0x10" labels the header by offset */
		f = sym_binary_lookup(b, addr);
		(*n)++;
		if (!f || f->entry != addr || strcmp(f->name, name)) {
			printf("# %s: %s at %#llx -> %s\n", base_name(path), name, addr,
			       f ? f->name : "nothing");
			bad++;
		}
	}
	if (p)
		pclose(p);
	sym_binary_free(b);
	return bad;
}

static void test_plt(void)
{
	const char *rv = oobtest_gen("sym/pie"), *host = oobtest_gen("sym/pie-host");
	long n = 0, total = 0;

	if (!rv || !host)
		SKIP("sym/pie absent");
	if (!have(CROSS "objdump") || !have("objdump"))
		SKIP("objdump missing");
	CHECK_EQ(check_plt(CROSS "objdump", rv, &n), 0);
	CHECK_EQ(n, 3); /* .plt, __libc_start_main@plt, printf@plt */
	total += n;
	CHECK_EQ(check_plt("objdump", host, &n), 0);
	CHECK(n >= 1);
	total += n;
	printf("# %ld PLT labels of objdump found as ranges of that name and entry\n", total);
}

/* ---- address spaces ---- */

/* File bytes at link-time addr, located through readelf -lW's LOAD rows. */
static size_t file_bytes(const char *path, uint64_t addr, uint8_t *buf, size_t n)
{
	char cmd[4200], line[1024];
	FILE *p, *f;
	long off = -1;

	snprintf(cmd, sizeof(cmd), CROSS "readelf -lW '%s'", path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p)) {
		unsigned long long o, va, pa, fs;
		if (sscanf(line, " LOAD %llx %llx %llx %llx", &o, &va, &pa, &fs) == 4 &&
		    addr >= va && addr + n <= va + fs)
			off = (long)(o + (addr - va));
	}
	if (p)
		pclose(p);
	f = off >= 0 ? fopen(path, "rb") : NULL;
	if (!f)
		return 0;
	n = fseek(f, off, SEEK_SET) == 0 ? fread(buf, 1, n, f) : 0;
	fclose(f);
	return n;
}

#define PIE_BASE 0x4000000000ull /* where qemu-user puts a PIE main */

static void test_space(void)
{
	const char *pie = oobtest_gen("sym/pie"), *prog = oobtest_shared("fixtures/spike/prog");
	const char *vml = oobtest_gen("vmlinux");
	struct sym_binary *bp = NULL, *bg = NULL, *bv = NULL;
	struct sym_space *s = NULL;
	struct oob_err err = {0};
	const struct sym_mapping *m;
	struct gsyms g = {0};
	long checked = 0;

	if (!pie || !prog)
		SKIP("sym/pie or the Spike prog absent");
	if (!have(CROSS "readelf"))
		SKIP("binutils missing");
	bp = open_or_null(pie);
	bg = open_or_null(prog);
	bv = vml ? open_or_null(vml) : NULL;
	s = sym_space_new();
	CHECK(bp && bg);
	CHECK(sym_binary_is_pie(bp));
	CHECK_EQ(sym_space_add(s, bp, PIE_BASE, &err), 0);
	CHECK_EQ(sym_space_add(s, bg, UINT64_MAX, &err), 0);
	if (bv)
		CHECK_EQ(sym_space_add(s, bv, UINT64_MAX, &err), 0);
	/* overlaps are refused, with both names in the message */
	CHECK_EQ(sym_space_add(s, bp, PIE_BASE + 0x10, &err), -EINVAL);
	CHECK(strstr(err.msg, "overlaps") && strstr(err.msg, "pie"));
	CHECK_EQ(sym_space_add(s, bp, 0x10000, &err), -EINVAL);
	CHECK(strstr(err.msg, "prog"));

	CHECK_EQ(read_syms(pie, &g), 0);
	for (size_t i = 0; i < g.n; i++) {
		uint64_t run = PIE_BASE + g.v[i].value - sym_binary_load_base(bp);
		uint8_t a[4], b[4];
		const struct sym_func *f;
		if (strcmp(g.v[i].type, "FUNC") || !g.v[i].size)
			continue;
		f = sym_space_lookup(s, run, &m);
		CHECK(f && m && m->bin == bp);
		CHECK_EQ(m->bias, PIE_BASE - sym_binary_load_base(bp));
		CHECK(f->entry + m->bias == run || (f->flags & SYM_F_DWARF));
		CHECK_EQ(sym_space_read(s, run, a, 4), 4);
		CHECK_EQ(file_bytes(pie, g.v[i].value, b, 4), 4);
		CHECK(!memcmp(a, b, 4));
		checked++;
	}
	CHECK(checked >= 3);
	/* prog at its link address; gaps map to nothing */
	CHECK(sym_space_lookup(s, 0x105f4, &m) && m->bin == bg && m->bias == 0);
	CHECK(!sym_space_find(s, PIE_BASE - 1));
	CHECK(!sym_space_find(s, 0xffff));
	CHECK(!sym_space_lookup(s, 0, &m) && !m);
	if (bv) {
		const struct sym_func *f = sym_space_lookup(s, 0xffffffff80002830ull, &m);
		CHECK(f && m->bin == bv);
		CHECK_STR(f->name, "handle_exception");
	}
	printf("# %ld PIE functions found at base %#llx, code bytes equal to the file's\n", checked,
	       PIE_BASE);
	free(g.v);
	sym_space_free(s);
	sym_binary_free(bv);
	sym_binary_free(bg);
	sym_binary_free(bp);
}

/* ---- perf maps ---- */

static char *write_tmp(const char *content, size_t n)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_sym_XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	if (write(fd, content, n) != (ssize_t)n) {
		close(fd);
		return NULL;
	}
	close(fd);
	return path;
}

/* An ELF image inside another (a kernel's vDSO): its functions and bytes
 * are those of the inner file opened on its own, and stay when the outer
 * one is freed; a binary without the symbols has none. */
static void test_embedded(void)
{
	const char *outer = oobtest_gen("sym/embed"), *inner = oobtest_gen("sym/recon");
	struct oob_err err = {0};
	uint32_t a = 0, b = 1;

	if (!outer || !inner)
		SKIP("sym/embed or sym/recon absent (gen-sym)");
	struct sym_binary *bo = open_or_null(outer), *bi = open_or_null(inner);
	struct sym_binary *be =
	    bo ? sym_binary_open_embedded(bo, "vdso_start", "vdso_end", &err) : NULL;
	struct sym_binary *none =
	    bi ? sym_binary_open_embedded(bi, "vdso_start", "vdso_end", &err) : NULL;
	sym_binary_free(bo);
	uint64_t e = bi ? sym_binary_find_func(bi, "handler") : 0;
	int ok = be && bi && !none && !err.code && e &&
		 sym_binary_nfuncs(be) == sym_binary_nfuncs(bi) &&
		 sym_binary_find_func(be, "sigmain") == sym_binary_find_func(bi, "sigmain") &&
		 sym_binary_find_func(be, "handler") == e && sym_binary_read(be, e, &a, 4) == 4 &&
		 sym_binary_read(bi, e, &b, 4) == 4 && a == b &&
		 strstr(sym_binary_path(be), "embed:vdso_start");
	sym_binary_free(be);
	sym_binary_free(bi);
	sym_binary_free(none);
	CHECK(ok);
}

static void test_perfmap(void)
{
	static const char map[] = "7f0000001000 40 py::main:/app/x.py\n"
				  "0x7f0000001040 0x20 JIT compiled func with spaces\n"
				  "\n"
				  "7f0000002000 100 outer\n"
				  "7f0000002010 10 inner\r\n"
				  "7f0000003000 10 old\n"
				  "7f0000003000 10 new\n"
				  "  7F0000004000\t8\tTabbed name";
	static const struct {
		uint64_t lo, hi;
		const char *name;
	} want[] = {{0x7f0000001000, 0x7f0000001040, "py::main:/app/x.py"},
		    {0x7f0000001040, 0x7f0000001060, "JIT compiled func with spaces"},
		    {0x7f0000002000, 0x7f0000002010, "outer"},
		    {0x7f0000002010, 0x7f0000002020, "inner"},
		    {0x7f0000002020, 0x7f0000002100, "outer"},
		    {0x7f0000003000, 0x7f0000003010, "new"},
		    {0x7f0000004000, 0x7f0000004008, "Tabbed name"}};
	struct oob_err err = {0};
	char *path = write_tmp(map, sizeof(map) - 1), cmd[128], sha[128], id[160];
	struct sym_binary *b = path ? sym_perfmap_open(path, &err) : NULL;
	struct sym_space *s = sym_space_new();
	const struct sym_mapping *m;
	const char *file;
	unsigned line;
	uint8_t buf[4];

	CHECK(b);
	CHECK_EQ(sym_binary_nfuncs(b), 7);
	for (size_t i = 0; i < 7; i++) {
		const struct sym_func *f = sym_binary_func(b, i);
		CHECK_EQ(f->lo, want[i].lo);
		CHECK_EQ(f->hi, want[i].hi);
		CHECK_STR(f->name, want[i].name);
		CHECK_EQ(f->flags, SYM_F_SYMTAB);
		CHECK(sym_binary_lookup(b, want[i].hi - 1) == f);
	}
	CHECK_EQ(sym_binary_lookup(b, 0x7f0000002050)->entry, 0x7f0000002000);
	CHECK(!sym_binary_lookup(b, 0x7f0000001060));
	CHECK(!sym_binary_lookup(b, 0x7f0000000fff));
	snprintf(cmd, sizeof(cmd), "sha256sum %s", path);
	CHECK(cmd_find(cmd, "", sha, sizeof(sha)));
	sha[strcspn(sha, " ")] = '\0';
	snprintf(id, sizeof(id), "sha256:%s", sha);
	CHECK_STR(sym_binary_build_id(b), id);
	CHECK_EQ(sym_binary_machine(b), 0);
	CHECK(!sym_binary_has_dwarf(b));
	CHECK_EQ(sym_binary_srcline(b, 0x7f0000001000, &file, &line), 0);
	CHECK_EQ(sym_binary_read(b, 0x7f0000001000, buf, 4), 0);
	CHECK_EQ(sym_space_add(s, b, UINT64_MAX, &err), 0);
	CHECK_STR(sym_space_lookup(s, 0x7f0000001044, &m)->name, "JIT compiled func with spaces");
	sym_space_free(s);
	sym_binary_free(b);
	unlink(path);
}

static void test_perfmap_errors(void)
{
	static const struct {
		const char *text;
		const char *where;
	} bad[] = {
	    {"zz 10 name\n", "line 1:"},
	    {"1000 10\n", "line 1:"},
	    {"1000 10 fine\n\n1000 xyz name\n", "line 3:"},
	    {"ffffffffffffff00 1000 wraps\n", "line 1:"},
	    {"1000 10 ok\n12345678901234567 1 too long\n", "line 2:"},
	    {"1000 10 a\n-1000 10 negative\n", "line 2:"},
	    {"1000 10 nul\0inside\n", "line 1:"},
	};
	struct oob_err err = {0};
	struct sym_binary *b;
	struct sym_space *s;
	char *path;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(bad[i].text);
		if (i == 6)
			n = sizeof("1000 10 nul\0inside\n") - 1;
		path = write_tmp(bad[i].text, n);
		CHECK(path);
		oob_err_clear(&err);
		b = sym_perfmap_open(path, &err);
		unlink(path);
		CHECK(!b);
		CHECK_EQ(err.code, -EINVAL);
		if (!strstr(err.msg, bad[i].where))
			printf("# case %zu: %s\n", i, err.msg);
		CHECK(strstr(err.msg, bad[i].where));
	}
	CHECK(!sym_perfmap_open("/nonexistent/perf-1.map", &err));
	CHECK_EQ(err.code, -ENOENT);
	CHECK(!sym_perfmap_open("/tmp", &err));
	CHECK_EQ(err.code, -EINVAL);
	/* empty: a binary without functions, which cannot be mapped */
	path = write_tmp("", 0);
	CHECK(path);
	b = sym_perfmap_open(path, &err);
	unlink(path);
	CHECK(b);
	CHECK_EQ(sym_binary_nfuncs(b), 0);
	CHECK(!sym_binary_lookup(b, 0));
	s = sym_space_new();
	CHECK_EQ(sym_space_add(s, b, UINT64_MAX, &err), -EINVAL);
	sym_space_free(s);
	sym_binary_free(b);
}

/* ---- bad input ---- */

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)rng_state;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long sz;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)sz);
		*n = buf ? fread(buf, 1, (size_t)sz, f) : 0;
	}
	fclose(f);
	return buf;
}

/* Opens bytes as an ELF: NULL with a message, or a binary that survives use. */
static int try_elf(const uint8_t *bytes, size_t n, int *opened)
{
	struct oob_err err = {0};
	char *path = write_tmp((const char *)bytes, n);
	struct sym_binary *b = path ? sym_binary_open(path, &err) : NULL;

	if (path)
		unlink(path);
	*opened = b != NULL;
	if (!b)
		return err.code < 0 && err.msg[0] ? 0 : -1;
	for (size_t i = 0; i < sym_binary_nfuncs(b) && i < 64; i++) {
		const struct sym_func *f = sym_binary_func(b, i);
		struct sym_inline in[8];
		const char *file;
		unsigned line;
		uint8_t buf[8];
		if (sym_binary_lookup(b, f->lo) != f)
			return -1;
		sym_binary_srcline(b, f->lo, &file, &line);
		sym_binary_inlines(b, f->lo, in, 8);
		sym_binary_read(b, f->lo, buf, sizeof(buf));
	}
	sym_binary_free(b);
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8); /* the fixtures are little-endian, like this host */
}

static void test_corrupt(void)
{
	const char *path = oobtest_gen("sym/pie");
	size_t n = 0, cuts[] = {0, 1, 4, 16, 52, 63, 64, 65, 100, 0x100, 0x1000, 0, 0, 0};
	uint8_t *orig = path ? slurp(path, &n) : NULL, *buf;
	struct oob_err err = {0};
	int opened, nopened = 0, ntried = 0;
	uint64_t phoff;

	if (!orig)
		SKIP("sym/pie absent");
	oob_log_set_level(OOB_LOG_ERROR); /* corrupt DWARF warns once per variant */
	buf = malloc(n + 4096);
	/* truncated */
	cuts[11] = n / 4;
	cuts[12] = n / 2;
	cuts[13] = n - 1;
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		CHECK_EQ(try_elf(orig, cuts[i], &opened), 0);
		nopened += opened;
		ntried++;
	}
	/* garbage, magic followed by garbage, a text file */
	for (size_t i = 0; i < 4096; i++)
		buf[i] = (uint8_t)rng();
	CHECK_EQ(try_elf(buf, 4096, &opened), 0);
	CHECK(!opened);
	memcpy(buf, "\177ELF\2\1\1", 7);
	CHECK_EQ(try_elf(buf, 4096, &opened), 0);
	CHECK_EQ(try_elf((const uint8_t *)"hello\n", 6, &opened), 0);
	CHECK(!opened);
	/* hostile header fields: offsets and counts out of range */
	static const struct {
		size_t off, width;
		uint64_t value;
	} pokes[] = {
	    {0x04, 1, 3},	   /* EI_CLASS */
	    {0x05, 1, 2},	   /* EI_DATA: big-endian */
	    {0x20, 8, ~0ull >> 4}, /* e_phoff */
	    {0x28, 8, ~0ull >> 4}, /* e_shoff */
	    {0x38, 2, 0xffff},	   /* e_phnum */
	    {0x3c, 2, 0xffff},	   /* e_shnum */
	    {0x3e, 2, 0xfffe},	   /* e_shstrndx */
	    {0x36, 2, 1},	   /* e_phentsize */
	    {0x3a, 2, 7},	   /* e_shentsize */
	};
	for (size_t i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
		memcpy(buf, orig, n);
		if (pokes[i].width == 8)
			put64(buf + pokes[i].off, pokes[i].value);
		else
			memcpy(buf + pokes[i].off, &pokes[i].value, pokes[i].width);
		CHECK_EQ(try_elf(buf, n, &opened), 0);
		nopened += opened;
		ntried++;
	}
	/* every program header's offset and size, then every section's, made huge */
	memcpy(&phoff, orig + 0x20, 8);
	for (int field = 0; field < 2; field++) {
		for (size_t ph = 0; ph < 16 && phoff + (ph + 1) * 56 <= n; ph++) {
			memcpy(buf, orig, n);
			put64(buf + phoff + ph * 56 + (field ? 0x20 : 0x08), ~0ull >> 8);
			CHECK_EQ(try_elf(buf, n, &opened), 0);
			nopened += opened;
			ntried++;
		}
	}
	/* random byte flips */
	for (int round = 0; round < 1500; round++) {
		memcpy(buf, orig, n);
		for (int k = 1 + (int)(rng() % 8); k > 0; k--)
			buf[rng() % n] = (uint8_t)rng();
		CHECK_EQ(try_elf(buf, n, &opened), 0);
		nopened += opened;
		ntried++;
	}
	CHECK(!sym_binary_open("/nonexistent/elf", &err));
	CHECK_EQ(err.code, -ENOENT);
	CHECK(!sym_binary_open("/tmp", &err));
	CHECK_EQ(err.code, -EINVAL);
	oob_log_set_level(OOB_LOG_WARN);
	printf("# %d corrupt variants: %d opened and used, %d refused with a message\n", ntried,
	       nopened, ntried - nopened);
	free(buf);
	free(orig);
}

/* Messages of the refusals say what is wrong. */
static void test_corrupt_messages(void)
{
	const char *path = oobtest_gen("sym/pie");
	size_t n = 0;
	uint8_t *orig = path ? slurp(path, &n) : NULL;
	struct oob_err err = {0};
	char *tmp;
	uint64_t phoff;

	if (!orig)
		SKIP("sym/pie absent");
	tmp = write_tmp("not an elf", 10);
	CHECK(tmp);
	CHECK(!sym_binary_open(tmp, &err));
	unlink(tmp);
	CHECK_EQ(err.code, -EINVAL);
	CHECK(strstr(err.msg, "not an ELF file"));
	/* a PT_LOAD whose file bytes lie past the end */
	memcpy(&phoff, orig + 0x20, 8);
	for (size_t ph = 0; phoff + (ph + 1) * 56 <= n; ph++) {
		uint32_t type;
		memcpy(&type, orig + phoff + ph * 56, 4);
		if (type != 1 /* PT_LOAD */)
			continue;
		put64(orig + phoff + ph * 56 + 0x08, n * 2); /* p_offset */
		break;
	}
	tmp = write_tmp((const char *)orig, n);
	CHECK(tmp);
	CHECK(!sym_binary_open(tmp, &err));
	unlink(tmp);
	CHECK_EQ(err.code, -EINVAL);
	CHECK(strstr(err.msg, "beyond the end of the file"));
	free(orig);
}

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
	b = open_or_null(path);
	CHECK(b);
	addrs = calloc(2000, sizeof(*addrs));
	c = calloc(2000, sizeof(*c));
	/* a fresh binary: the inline tables get built while the threads race */
	n = pick_addrs(b, addrs, 2000);
	sym_binary_free(b);
	b = open_or_null(path);
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
		struct sym_binary *r = open_or_null(path);
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
	OOBTEST_BEGIN("test_sym");
	RUN(test_build_id);
	RUN(test_layout);
	RUN(test_symtab_prog);
	RUN(test_symtab_init);
	RUN(test_symtab_pie);
	RUN(test_symtab_pie_host);
	RUN(test_symtab_split_nodw);
	RUN(test_symtab_vmlinux);
	RUN(test_dwarf_pie);
	RUN(test_dwarf_pie_host);
	RUN(test_dwarf_statics);
	RUN(test_dwarf_split);
	RUN(test_dwarf_vmlinux);
	RUN(test_statics);
	RUN(test_split);
	RUN(test_plt);
	RUN(test_labels);
	RUN(test_space);
	RUN(test_embedded);
	RUN(test_perfmap);
	RUN(test_perfmap_errors);
	RUN(test_corrupt);
	RUN(test_corrupt_messages);
	RUN(test_threads);
	return OOBTEST_END();
}
