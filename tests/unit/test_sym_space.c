/*
 * test_sym_space: address spaces (binaries at load bases, a kernel's embedded vDSO)
 * and perf-PID.map JIT maps, against readelf and the files' own bytes.
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
	if (!symt_have(CROSS "readelf"))
		SKIP("binutils missing");
	bp = symt_open(pie);
	bg = symt_open(prog);
	bv = vml ? symt_open(vml) : NULL;
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

	CHECK_EQ(symt_read_syms(pie, &g), 0);
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
	struct sym_binary *bo = symt_open(outer), *bi = symt_open(inner);
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
	char *path = symt_write_tmp(map, sizeof(map) - 1), cmd[128], sha[128], id[160];
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
	CHECK(symt_cmd_find(cmd, "", sha, sizeof(sha)));
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
		path = symt_write_tmp(bad[i].text, n);
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
	path = symt_write_tmp("", 0);
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

int main(void)
{
	OOBTEST_BEGIN("test_sym_space");
	RUN(test_space);
	RUN(test_embedded);
	RUN(test_perfmap);
	RUN(test_perfmap_errors);
	return OOBTEST_END();
}
