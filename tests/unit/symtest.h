/* symtest: shared by the symbolizer tests (test_sym*.c). */
#ifndef OOB_SYMTEST_H
#define OOB_SYMTEST_H

#include <stddef.h>
#include <stdint.h>

#include "sym/sym.h"

#define CROSS "riscv64-linux-gnu-"

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

/* Is tool on PATH? */
int symt_have(const char *tool);
/* First line of `cmd` output matching prefix, copied after the prefix. */
int symt_cmd_find(const char *cmd, const char *prefix, char *out, size_t n);
const char *symt_base_name(const char *p);
/* readelf -sW: every symbol of .symtab and .dynsym. */
int symt_read_syms(const char *path, struct gsyms *g);
/* The same name up to the first '.' (foo.cold, foo.part.0 -> foo)? */
int symt_same_stem(const char *a, const char *b);
/* Some symbol at value named name? (aliases share an address) */
int symt_is_alias(const struct gsyms *g, uint64_t value, const char *name);
/* sym_binary_open, or NULL with the error printed as a TAP comment. */
struct sym_binary *symt_open(const char *path);
/* At most max addresses to probe, spread over the DWARF functions. */
size_t symt_pick_addrs(const struct sym_binary *b, uint64_t *out, size_t max);
/* A temporary file holding content; its path is static storage. */
char *symt_write_tmp(const char *content, size_t n);

#endif
