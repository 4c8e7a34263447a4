/*
 * test_sym: the symbolizer's ELF side against binutils (readelf, objdump) and
 * coreutils (sha256sum) on real binaries: the Spike fixture's prog, init and
 * vmlinux, and the programs tests/tools/gen-sym.sh builds from
 * tests/fixtures/sym (a PIE for RISC-V and for the host, two same-named
 * static functions, a function split into hot and cold parts): build ids,
 * layout, the function table, statics, split functions, labels, PLT stubs.
 * DWARF, address spaces and bad input have their own test_sym_*.c.
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

/* ---- build-id, layout ---- */

static void check_build_id(const char *path, int *ok)
{
	char cmd[4200], want[256], sha[256];
	struct sym_binary *b = symt_open(path);

	*ok = 0;
	if (!b)
		return;
	snprintf(cmd, sizeof(cmd), CROSS "readelf -n '%s'", path);
	if (symt_cmd_find(cmd, "Build ID: ", want, sizeof(want))) {
		*ok = !strcmp(sym_binary_build_id(b), want);
	} else {
		snprintf(cmd, sizeof(cmd), "sha256sum '%s'", path);
		strcpy(want, "sha256:");
		if (symt_cmd_find(cmd, "", sha, sizeof(sha))) {
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

	if (!symt_have(CROSS "readelf") || !symt_have("sha256sum"))
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
	struct sym_binary *b = symt_open(path);
	FILE *p;

	CHECK(b);
	snprintf(cmd, sizeof(cmd), CROSS "readelf -hW '%s'", path);
	symt_cmd_find(cmd, "Machine:", mach, sizeof(mach));
	symt_cmd_find(cmd, "Type:", type, sizeof(type));
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

	if (!symt_have(CROSS "readelf"))
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
	struct sym_binary *b = symt_open(path);

	memset(st, 0, sizeof(*st));
	if (!b || symt_read_syms(path, &g) < 0) {
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
		if (f && f->entry == s->value && symt_is_alias(&g, s->value, f->name))
			st->named++;
		else if (f && f->entry == s->value && dw && symt_same_stem(f->name, s->name))
			st->dwarf_named++;
		else if (f && f->entry == s->value && dw)
			st->folded++;
		else if (dw && symt_same_stem(f->name, s->name))
			st->inside++;
		else if (st->bad++ < 10)
			printf("# %s: symbol %s at %#" PRIx64 " -> %s (entry %#" PRIx64 ")\n", path,
			       s->name, s->value, f ? f->name : "nothing", f ? f->entry : 0);
	}
	printf("# %s: %zu ranges; %ld function symbols: %ld at the entry of a range named by a "
	       "symbol there, %ld of one DWARF names by their stem, %ld of a DWARF function "
	       "folded with them; %ld inside the DWARF function of their stem; %ld wrong\n",
	       symt_base_name(path), sym_binary_nfuncs(b), st->syms, st->named, st->dwarf_named,
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
		if (!symt_have(CROSS "readelf"))                                                   \
			SKIP(CROSS "readelf missing");                                             \
		check_symtab(path, &st);                                                           \
		CHECK_EQ(st.bad, 0);                                                               \
		CHECK(st.syms >= (min_syms));                                                      \
		b = symt_open(path);                                                               \
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
	if (!symt_have(CROSS "readelf") || !symt_have(CROSS "addr2line"))
		SKIP("binutils missing");
	CHECK_EQ(symt_read_syms(path, &g), 0);
	h[0] = find_sym(&g, "helper", 0);
	h[1] = find_sym(&g, "helper", 1);
	CHECK(h[0] && h[1] && !find_sym(&g, "helper", 2));
	CHECK(h[0]->value != h[1]->value);
	b = symt_open(path);
	CHECK(b);
	for (int i = 0; i < 2; i++) {
		f[i] = sym_binary_lookup(b, h[i]->value + h[i]->size - 2);
		CHECK(f[i]);
		CHECK_STR(f[i]->name, "helper");
		CHECK_EQ(f[i]->entry, h[i]->value);
		CHECK(f[i]->flags & SYM_F_DWARF);
		CHECK(!(f[i]->flags & SYM_F_GLOBAL));
		snprintf(cmd, sizeof(cmd), CROSS "addr2line -e '%s' %#" PRIx64, path, h[i]->value);
		CHECK(symt_cmd_find(cmd, "", where[i], sizeof(where[i])));
		where[i][strcspn(where[i], ":")] = '\0';
		CHECK_STR(symt_base_name(f[i]->file), symt_base_name(where[i]));
		CHECK_EQ(f[i]->line, src_line_of(!strcmp(symt_base_name(where[i]), "statics_a.c")
						     ? "tests/fixtures/sym/statics_a.c"
						     : "tests/fixtures/sym/statics_b.c",
						 "static int helper"));
	}
	CHECK(strcmp(symt_base_name(f[0]->file), symt_base_name(f[1]->file)) != 0);
	printf("# helper at %#" PRIx64 " (%s:%u) and %#" PRIx64 " (%s:%u)\n", f[0]->entry,
	       symt_base_name(f[0]->file), f[0]->line, f[1]->entry, symt_base_name(f[1]->file),
	       f[1]->line);
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
	if (!symt_have(CROSS "readelf"))
		SKIP("binutils missing");
	CHECK_EQ(symt_read_syms(dw, &g), 0);
	work = find_sym(&g, "work", 0);
	cold = find_sym(&g, "work.cold", 0);
	CHECK(work && cold);
	b = symt_open(dw);
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

	CHECK_EQ(symt_read_syms(nodw, &g), 0);
	cold = find_sym(&g, "work.cold", 0);
	cp = find_sym(&g, "parse.constprop.0", 0);
	CHECK(cold && cp);
	b = symt_open(nodw);
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
	struct sym_binary *b = symt_open(path);

	*inside = *own = 0;
	CHECK(b);
	CHECK_EQ(symt_read_syms(path, &g), 0);
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
			CHECK(f->entry == enc->value || symt_is_alias(&g, f->entry, f->name));
			(*inside)++;
		} else if (f && f->entry == l->value) {
			CHECK(symt_is_alias(&g, l->value, f->name));
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
	if (!symt_have(CROSS "readelf"))
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
	struct sym_binary *b = symt_open(path);
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
			printf("# %s: %s at %#llx -> %s\n", symt_base_name(path), name, addr,
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
	if (!symt_have(CROSS "objdump") || !symt_have("objdump"))
		SKIP("objdump missing");
	CHECK_EQ(check_plt(CROSS "objdump", rv, &n), 0);
	CHECK_EQ(n, 3); /* .plt, __libc_start_main@plt, printf@plt */
	total += n;
	CHECK_EQ(check_plt("objdump", host, &n), 0);
	CHECK(n >= 1);
	total += n;
	printf("# %ld PLT labels of objdump found as ranges of that name and entry\n", total);
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
	RUN(test_statics);
	RUN(test_split);
	RUN(test_plt);
	RUN(test_labels);
	return OOBTEST_END();
}
