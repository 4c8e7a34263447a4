/*
 * pycode: the code map of a CPython program (docs/formats/PYCODE.md, made on
 * the host by tests/tools/pycode.py): per code object its qualified name,
 * file, first line, and the structure of its bytecode a pc-only trace can
 * follow: base opcode and successors of each instruction, exception table,
 * the calls whose callee is known statically; and the interpreter's
 * quickened opcodes with the base opcode each stands for.
 */
#ifndef OOB_PYCODE_H
#define OOB_PYCODE_H

#include <stdint.h>

#include "util/oob_err.h"

#define PYCODE_NONE UINT32_MAX

/* What a quickened opcode's dispatch may run (pycode.py "op" K). */
enum pycode_kind {
	PYCODE_ONE = 0, /* one instruction */
	PYCODE_TWO,	/* may also run the next one without a dispatch */
	PYCODE_AGAIN,	/* may dispatch the same instruction again (adaptive) */
	PYCODE_THREE,	/* may also run the next two (PRECALL_NO_KW_LIST_APPEND
			   skips its CALL and the POP_TOP after it) */
};

struct pycode_insn {
	uint32_t off; /* code units */
	uint16_t op;  /* base opcode */
	uint16_t nsucc;
	uint32_t succ[2]; /* instruction indices */
};

struct pycode_exc {
	uint32_t start, end, target; /* code units; end exclusive */
};

struct pycode_call {
	uint32_t off;  /* code units of the PRECALL or CALL */
	uint32_t code; /* the callee */
};

struct pycode_obj {
	char *name; /* "py:QUALNAME (FILE:LINE)", FILE the basename */
	char *qualname;
	struct pycode_insn *in;
	uint32_t nin;
	struct pycode_exc *exc;
	uint32_t nexc;
	struct pycode_call *calls;
	uint32_t ncalls;
};

struct pycode {
	struct pycode_obj *v;
	uint32_t n;
	uint16_t deopt[256]; /* quickened -> base opcode */
	uint8_t kind[256];   /* enum pycode_kind */
};

/* Reads a code map; 0 or a negative errno (err says where the file is bad). */
int pycode_load(const char *path, struct pycode **out, struct oob_err *err);
void pycode_free(struct pycode *m);

/* Index of the instruction at code unit off of o, or PYCODE_NONE. */
uint32_t pycode_at(const struct pycode_obj *o, uint32_t off);
/* The handler of an exception raised at instruction k: an instruction
 * index, or PYCODE_NONE (the frame is left). */
uint32_t pycode_handler(const struct pycode_obj *o, uint32_t k);
/* The code object the call at instruction k calls, known statically, or
 * PYCODE_NONE. */
uint32_t pycode_callee(const struct pycode_obj *o, uint32_t k);

#endif
