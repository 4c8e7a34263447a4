/*
 * symtest: ground truth for the symbolizer tests (test_sym*.c), read from
 * binutils (readelf) and the shell, and the probe addresses they share.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/rv.h"
#include "symtest.h"

int symt_have(const char *tool)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	return system(cmd) == 0;
}

/* First line of `cmd` output matching prefix, copied after the prefix. */
int symt_cmd_find(const char *cmd, const char *prefix, char *out, size_t n)
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

const char *symt_base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

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
int symt_read_syms(const char *path, struct gsyms *g)
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

int symt_same_stem(const char *a, const char *b)
{
	size_t n = stem_len(a);
	return n == stem_len(b) && !strncmp(a, b, n);
}

/* Some symbol at value named name? (aliases share an address) */
int symt_is_alias(const struct gsyms *g, uint64_t value, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].value == value && !strcmp(g->v[i].name, name))
			return 1;
	return 0;
}

struct sym_binary *symt_open(const char *path)
{
	struct oob_err err = {0};
	struct sym_binary *b = sym_binary_open(path, &err);
	if (!b)
		printf("# %s: %s\n", path, err.msg);
	return b;
}

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
size_t symt_pick_addrs(const struct sym_binary *b, uint64_t *out, size_t max)
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

char *symt_write_tmp(const char *content, size_t n)
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
