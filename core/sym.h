/*
 * sym: symbolization with libelf and libdw (DESIGN.md 3.2).
 *
 * A sym_binary is one ELF file (or one perf-PID.map), indexed ONCE when it is
 * opened into a sorted, non-overlapping table of function ranges, from DWARF
 * subprograms (every range of a DW_AT_ranges function, so a function split
 * into hot and cold parts resolves to one entry) with the gaps filled from
 * .symtab/.dynsym function symbols. Lookups binary-search that table; nothing
 * scans DWARF per address (no dwfl_module_addrsym / dwarf_getscopes per pc).
 * A sym_binary is immutable after sym_binary_open and may be shared by any
 * number of threads; sym_binary_srcline and sym_binary_inlines serialize
 * their libdw use internally.
 *
 * Addresses given to sym_binary_* are link-time addresses (as in the ELF).
 * A sym_space maps run-time addresses to (binary, bias) mappings.
 */
#ifndef OOB_SYM_H
#define OOB_SYM_H

#include <stddef.h>
#include <stdint.h>

#include "oob_err.h"

enum {
	SYM_F_DWARF = 1 << 0,  /* range came from a DWARF subprogram */
	SYM_F_SYMTAB = 1 << 1, /* range came from an ELF symbol (or a perf map) */
	SYM_F_GLOBAL = 1 << 2, /* STB_GLOBAL/WEAK symbol, or DW_AT_external */
};

struct sym_func {
	uint64_t lo, hi;   /* this range, [lo, hi), link-time */
	uint64_t entry;	   /* the function's entry: identical for all its ranges */
	const char *name;  /* never NULL (a synthetic "0x..." name if need be) */
	const char *file;  /* declaring source file, or NULL */
	uint32_t line;	   /* declaring line, or 0 */
	uint32_t flags;	   /* SYM_F_* */
};

struct sym_inline {
	const char *name;      /* the inlined function */
	const char *call_file; /* where it was inlined, or NULL */
	uint32_t call_line;
};

struct sym_binary;

/* Opens and indexes an ELF file. Errors: -ENOENT (no file), -EINVAL (not an
 * ELF / corrupt, message says what), -ENOTSUP (ELF class we cannot read). */
struct sym_binary *sym_binary_open(const char *path, struct oob_err *err);
/* Reads a perf-PID.map ("START SIZE name" per line, hex) as a code-less binary.
 * -EINVAL names the first bad line. */
struct sym_binary *sym_perfmap_open(const char *path, struct oob_err *err);
void sym_binary_free(struct sym_binary *b);

const char *sym_binary_path(const struct sym_binary *b);
/* Basename of the path. */
const char *sym_binary_name(const struct sym_binary *b);
/* Lower-case hex GNU build-id, or "sha256:<hex>" of the file when it has none. */
const char *sym_binary_build_id(const struct sym_binary *b);
/* ELF e_machine (243 = RISC-V), 0 for perf maps. */
unsigned sym_binary_machine(const struct sym_binary *b);
/* 1 for ET_DYN (PIE executables and shared libraries). */
int sym_binary_is_pie(const struct sym_binary *b);
int sym_binary_has_dwarf(const struct sym_binary *b);
/* Lowest p_vaddr of the PT_LOAD segments (page-aligned down). */
uint64_t sym_binary_load_base(const struct sym_binary *b);
/* [lo, hi) of executable PT_LOAD segments, link-time. */
void sym_binary_text_range(const struct sym_binary *b, uint64_t *lo, uint64_t *hi);

size_t sym_binary_nfuncs(const struct sym_binary *b);
/* i-th range in address order (borrowed, valid while b lives). */
const struct sym_func *sym_binary_func(const struct sym_binary *b, size_t i);
/* The range containing addr, or NULL. O(log n), no allocation. */
const struct sym_func *sym_binary_lookup(const struct sym_binary *b, uint64_t addr);

/* Copies up to n bytes of file-backed executable code at addr into buf.
 * Returns the number copied (0 if addr is not in such a segment). */
size_t sym_binary_read(const struct sym_binary *b, uint64_t addr, void *buf, size_t n);

/* Source file and line of addr from the DWARF line table. Returns 1 if found,
 * 0 if not. *file is borrowed from b. */
int sym_binary_srcline(const struct sym_binary *b, uint64_t addr, const char **file,
		       unsigned *line);

/* Inline chain at addr, outermost inlined call first, at most max entries.
 * Returns the count (0 when addr is not in inlined code). Strings borrowed. */
int sym_binary_inlines(const struct sym_binary *b, uint64_t addr, struct sym_inline *out,
		       int max);

/* An address space: binaries mapped at run-time addresses. */
struct sym_space;

struct sym_mapping {
	const struct sym_binary *bin; /* borrowed */
	uint64_t lo, hi;	      /* run-time [lo, hi) of its executable text */
	uint64_t bias;		      /* run-time address = link-time address + bias */
};

struct sym_space *sym_space_new(void);
void sym_space_free(struct sym_space *s);
/*
 * Maps b (borrowed; must outlive s) so that its lowest PT_LOAD segment starts
 * at base. base = UINT64_MAX means "at its link address" (non-PIE executables,
 * vmlinux, perf maps). -EINVAL if its text would overlap an existing mapping.
 */
int sym_space_add(struct sym_space *s, const struct sym_binary *b, uint64_t base,
		  struct oob_err *err);
/* The mapping whose text contains pc, or NULL. */
const struct sym_mapping *sym_space_find(const struct sym_space *s, uint64_t pc);
/* Function containing run-time pc, and its mapping; NULL if none. */
const struct sym_func *sym_space_lookup(const struct sym_space *s, uint64_t pc,
					const struct sym_mapping **map);
/* Code bytes at run-time pc (see sym_binary_read). */
size_t sym_space_read(const struct sym_space *s, uint64_t pc, void *buf, size_t n);

#endif
