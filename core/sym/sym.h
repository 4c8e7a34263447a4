/*
 * sym: symbolization with libelf and libdw (DESIGN.md 3.2).
 *
 * A sym_binary is one ELF file (or one perf-PID.map), indexed ONCE when it is
 * opened into a sorted, non-overlapping table of function ranges, from DWARF
 * subprograms (every range of a DW_AT_ranges function, so a function split
 * into hot and cold parts resolves to one entry) with the gaps filled from
 * .symtab/.dynsym function symbols (STT_FUNC, STT_GNU_IFUNC, and sized
 * STT_NOTYPE symbols in code: assembly entry points such as the kernel's
 * handle_exception), and PLT stubs named "name@plt" / ".plt" as objdump
 * names them (RISC-V and x86-64 layouts). Lookups binary-search that table;
 * nothing scans DWARF per address (no dwfl_module_addrsym / dwarf_getscopes
 * per pc).
 *
 * Where candidate ranges overlap, an address goes to a DWARF subprogram before
 * a symbol, then to the range that starts later (the inner of nested ranges;
 * of two partly overlapping ones, the one whose start is an entry), then to
 * the smaller one, then to the better symbol name (typed, global, without a
 * leading underscore). A symbol of size 0 extends to the next symbol of its
 * section. Subprograms GNU as makes for assembly labels are ignored (their
 * high_pc runs into the next function; the symbols say the same, correctly).
 * The same name in several files (static functions) stays several functions,
 * with distinct entries; without DWARF, gcc's split parts (foo.cold,
 * foo.part.0, foo.constprop.0, foo.isra.0) keep their own names and entries.
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

#include "util/oob_err.h"

enum {
	SYM_F_DWARF = 1 << 0,  /* range came from a DWARF subprogram */
	SYM_F_SYMTAB = 1 << 1, /* range came from an ELF symbol (or a perf map) */
	SYM_F_GLOBAL = 1 << 2, /* STB_GLOBAL/WEAK symbol, or DW_AT_external */
};

struct sym_func {
	uint64_t lo, hi;  /* this range, [lo, hi), link-time */
	uint64_t entry;	  /* the function's entry: identical for all its ranges */
	const char *name; /* never NULL (a synthetic "0x..." name if need be) */
	const char *file; /* declaring source file, or NULL */
	uint32_t line;	  /* declaring line, or 0 */
	uint32_t flags;	  /* SYM_F_* */
};

struct sym_inline {
	const char *name;      /* the inlined function */
	const char *call_file; /* where it was inlined, or NULL */
	uint32_t call_line;
};

struct sym_binary;

/* Opens and indexes an ELF file (any class and machine). Returns a binary the
 * caller frees with sym_binary_free, or NULL: -ENOENT (no file; other open
 * errors as -errno), -EINVAL (not a regular file, not an ELF, corrupt headers
 * or segments: the message says what and where), -ENOTSUP (unknown ELF
 * class). Unreadable DWARF is not an error: the binary then has symbols only
 * (logged as a warning). Thread-safe (distinct binaries). */
struct sym_binary *sym_binary_open(const char *path, struct oob_err *err);
/* Reads a perf-PID.map ("START SIZE name" per line: hex with or without 0x,
 * blanks or tabs between the fields, the name is the rest of the line and may
 * contain spaces; blank lines are skipped) as a code-less binary: machine 0,
 * no DWARF, build-id "sha256:<hex>" of the file, text range = the hull of its
 * entries. Among equal ranges the later line wins (a JIT reusing an address).
 * Errors: -errno of open, -EINVAL naming the first bad line ("line N: ..."),
 * -EFBIG over 1 GiB. */
struct sym_binary *sym_perfmap_open(const char *path, struct oob_err *err);
/* An ELF image embedded in outer, between its .symtab symbols start and end
 * (a kernel's vDSO: vdso_start, vdso_end), opened and indexed as a binary
 * of its own, named "<outer path>:<start>". NULL if outer has no such
 * symbols (err untouched), or, with err set, -EINVAL if the bytes are not in
 * outer's file or not an ELF. The image is copied: outer may be freed first. */
struct sym_binary *sym_binary_open_embedded(const struct sym_binary *outer, const char *start,
					    const char *end, struct oob_err *err);
void sym_binary_free(struct sym_binary *b);

/* Accessors: strings are borrowed from b. */
const char *sym_binary_path(const struct sym_binary *b);
/* Basename of the path. */
const char *sym_binary_name(const struct sym_binary *b);
/* Lower-case hex GNU build-id, or "sha256:<hex>" of the file when it has none. */
const char *sym_binary_build_id(const struct sym_binary *b);
/* ELF e_machine (243 = RISC-V), 0 for perf maps. */
unsigned sym_binary_machine(const struct sym_binary *b);
/* 1 for ET_DYN (PIE executables and shared libraries). */
int sym_binary_is_pie(const struct sym_binary *b);
/* The ELF header's entry point (link-time; 0 for perf maps): where a
 * program, or the interpreter that loads it, starts after execve. */
uint64_t sym_binary_entry(const struct sym_binary *b);
/* 1 if .debug_info is present and libdw could read it. */
int sym_binary_has_dwarf(const struct sym_binary *b);
/* Lowest p_vaddr of the PT_LOAD segments, aligned down to 4 KiB (0 without
 * segments); a perf map's lowest address. */
uint64_t sym_binary_load_base(const struct sym_binary *b);
/* [lo, hi): the hull of the executable PT_LOAD segments (p_memsz), link-time;
 * [0, 0) when there is none. */
void sym_binary_text_range(const struct sym_binary *b, uint64_t *lo, uint64_t *hi);

size_t sym_binary_nfuncs(const struct sym_binary *b);
/* i-th range in address order (borrowed, valid while b lives). */
const struct sym_func *sym_binary_func(const struct sym_binary *b, size_t i);
/* The range containing addr, or NULL. O(log n), no allocation, no lock. */
const struct sym_func *sym_binary_lookup(const struct sym_binary *b, uint64_t addr);

/* Copies up to n bytes of file-backed executable code at addr into buf
 * (never past the end of the segment's file bytes). Returns the number
 * copied (0 if addr is not in such a segment). No allocation, no lock. */
size_t sym_binary_read(const struct sym_binary *b, uint64_t addr, void *buf, size_t n);

/* Source file and line of addr from the DWARF line table of its compile unit
 * (the row with the highest address <= addr in its sequence, as addr2line).
 * Returns 1 if found, 0 if not (no DWARF, no unit, line 0). *file is the path
 * as the line table gives it (relative to the unit's directory, or absolute),
 * borrowed from b. Takes b's libdw lock. */
int sym_binary_srcline(const struct sym_binary *b, uint64_t addr, const char **file,
		       unsigned *line);

/* Inline chain at addr, outermost inlined call first: entry i is a function
 * inlined into entry i-1 (entry 0 into the function that sym_binary_lookup
 * returns), called at call_file:call_line. When the chain is longer than max
 * the innermost entries are dropped. Returns the count written (0 when addr is
 * not in inlined code). Strings borrowed from b. The unit's table is built
 * on the first query that lands in it, then binary-searched. Takes b's libdw
 * lock. */
int sym_binary_inlines(const struct sym_binary *b, uint64_t addr, struct sym_inline *out, int max);

/*
 * Layout of a struct from DWARF: the byte offset of member (searched through
 * anonymous nested members too, e.g. task_struct's pid) and its size in
 * bytes. Returns 0, -ENOENT if the struct or member is not described,
 * -ENOTSUP without DWARF. Scans the DWARF once per call: cache the answer.
 * Thread-safe (serialized with the other libdw users of b).
 */
int sym_binary_member(const struct sym_binary *b, const char *type, const char *member,
		      uint64_t *offset, uint64_t *size);

/* Entry (link-time) of the function named name, 0 if none. Linear: for setup. */
uint64_t sym_binary_find_func(const struct sym_binary *b, const char *name);

/* An address space: binaries mapped at run-time addresses, kept sorted.
 * sym_space_add must not run concurrently with anything else on the same
 * space; finds and lookups may run from any number of threads. */
struct sym_space;

struct sym_mapping {
	const struct sym_binary *bin; /* borrowed */
	uint64_t lo, hi;	      /* run-time [lo, hi) of its executable text */
	uint64_t bias;		      /* run-time address = link-time address + bias */
};

/* Never NULL (aborts on OOM). */
struct sym_space *sym_space_new(void);
void sym_space_free(struct sym_space *s);
/*
 * Maps b (borrowed; must outlive s) so that its lowest PT_LOAD segment starts
 * at base. base = UINT64_MAX means "at its link address" (non-PIE executables,
 * vmlinux, perf maps); otherwise bias = base - sym_binary_load_base(b).
 * -EINVAL if it has no text, if its text would wrap around or overlap an
 * existing mapping (the message names both).
 */
int sym_space_add(struct sym_space *s, const struct sym_binary *b, uint64_t base,
		  struct oob_err *err);
/* The mapping whose text contains pc, or NULL. O(log n). */
const struct sym_mapping *sym_space_find(const struct sym_space *s, uint64_t pc);
/* A new space with the same mappings (the binaries stay borrowed). */
struct sym_space *sym_space_copy(const struct sym_space *s);
/* Drops the mappings that overlap [lo, hi) (a mapping made over them). */
void sym_space_unmap(struct sym_space *s, uint64_t lo, uint64_t hi);
/* Function containing run-time pc, or NULL. *map (if map is not NULL) gets
 * the mapping containing pc, also when no function does, or NULL. */
const struct sym_func *sym_space_lookup(const struct sym_space *s, uint64_t pc,
					const struct sym_mapping **map);
/* Code bytes at run-time pc (see sym_binary_read). */
size_t sym_space_read(const struct sym_space *s, uint64_t pc, void *buf, size_t n);

#endif
