/*
 * sym_impl: the private layout of struct sym_binary, shared by the sym_*.c
 * files (sym_table.c: function table and perf maps; sym_elf.c: ELF reading;
 * sym_dwarf.c: DWARF subprograms, lines, inlines; sym_space.c: address
 * spaces). Nothing here is part of the contract in sym.h.
 */
#ifndef OOB_SYM_IMPL_H
#define OOB_SYM_IMPL_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "util/oob_mem.h"
#include "sym/sym.h"

/* How firmly a candidate names its range; a higher tier wins an address. */
enum sym_tier {
	SYM_TIER_LABEL = 1,  /* size-0 untyped label in code: fills gaps only */
	SYM_TIER_SYMBOL = 2, /* ELF function symbol, PLT stub, perf map line */
	SYM_TIER_DWARF = 3,  /* DWARF subprogram */
};

/*
 * A candidate range for the function table, before overlaps are resolved.
 * Preference where candidates overlap: the higher tier, then the later start
 * (the inner of nested ranges), then the smaller range, then the higher
 * quality (symbol binding and name), then the lower rank (input order); see
 * cand_better in sym_table.c.
 */
struct sym_cand {
	uint64_t lo, hi, entry;
	const char *name, *file;
	uint32_t line, flags;
	uint8_t tier;	  /* enum sym_tier */
	uint32_t quality; /* higher wins among equal ranges */
	uint32_t rank;	  /* input order: lower wins at the end */
};

struct sym_cands {
	struct sym_cand *v;
	size_t n, cap;
};

/* A file-backed executable segment, for sym_binary_read. */
struct sym_seg {
	uint64_t vaddr, filesz, offset;
};

/* One address range of a DWARF compile unit. */
struct sym_curange {
	uint64_t lo, hi;
	uint32_t cu; /* index into sym_binary.cus */
};

struct sym_inltab; /* per-CU inline table, built lazily by sym_dwarf.c */

struct sym_cu {
	Dwarf_Off off; /* offset of the CU DIE in .debug_info */
	struct sym_inltab *inl;
};

struct sym_binary {
	char *path;
	const char *name; /* inside path */
	char *build_id;	  /* malloc'ed */
	unsigned machine;
	int pie;
	uint64_t entry; /* e_entry, link-time; 0 for perf maps */
	uint64_t load_base, text_lo, text_hi;

	int fd; /* -1 for perf maps */
	Elf *elf;
	Dwarf *dw; /* NULL without usable DWARF */
	const unsigned char *image;
	size_t image_size;
	unsigned char *own_image; /* an embedded ELF's bytes (malloc'ed), or NULL */
	struct sym_seg *segs;
	size_t nsegs;

	struct sym_func *funcs;
	uint64_t *los; /* funcs[i].lo, packed for the binary search */
	size_t nfuncs;

	struct sym_curange *curanges; /* sorted by lo */
	size_t ncuranges;
	struct sym_cu *cus;
	size_t ncus;

	pthread_mutex_t dw_lock; /* serializes libdw use after open */
	struct oob_arena *arena; /* names we had to copy or format */
};

/* Allocates a binary with empty tables and the path copied; never NULL. */
struct sym_binary *sym_bin_alloc(const char *path);

void sym_cands_push(struct sym_cands *c, const struct sym_cand *x);

/*
 * Resolves overlaps among c (which it reorders) and installs the resulting
 * sorted, non-overlapping table into b. Candidates without a name get a
 * synthetic "0x<entry>" one.
 */
void sym_tab_build(struct sym_binary *b, struct sym_cands *c);

/* "sha256:<hex>" of n bytes (caller frees). */
char *sym_sha256_id(const void *data, size_t n);

/*
 * Adds the DWARF subprograms of b->dw to c and fills b->cus / b->curanges.
 * Corrupt DWARF stops the walk of that unit with a warning; never fails.
 */
void sym_dwarf_index(struct sym_binary *b, struct sym_cands *c);

/* Frees the lazily built per-CU tables. */
void sym_dwarf_free(struct sym_binary *b);

#endif
