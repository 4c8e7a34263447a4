/*
 * disasm: instruction text for the annotated views, from binutils' objdump
 * (riscv64-linux-gnu-objdump, or $OOB_OBJDUMP). We call the tool rather than
 * link libopcodes: Debian ships libopcodes without its header (binutils-dev
 * is not a runtime dependency), and a disassembler is not ours to write.
 * Without the tool, callers show counts without text.
 */
#ifndef OOB_DISASM_H
#define OOB_DISASM_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

struct disasm_line {
	uint64_t addr; /* link-time address */
	char *text;    /* "jal\tra,105ca <f>" (owned by the disasm result) */
};

struct disasm {
	struct disasm_line *v; /* by address */
	size_t n;
};

/* The objdump command run: $OOB_OBJDUMP if set, else
 * "riscv64-linux-gnu-objdump". Borrowed. */
const char *disasm_tool(void);

/* Disassembles [lo, hi) (link-time) of the ELF at path into *out (caller
 * frees with disasm_free). 0; -ENOENT when the tool cannot be run, -EIO when
 * it fails (the message says which). Thread-safe (a child process each). */
int disasm_range(const char *path, uint64_t lo, uint64_t hi, struct disasm *out,
		 struct oob_err *err);
/* The text at addr, or NULL. */
const char *disasm_at(const struct disasm *d, uint64_t addr);
void disasm_free(struct disasm *d);

#endif
