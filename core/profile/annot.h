/*
 * annot: perf annotate's two views with exact counts, from a profile's
 * per-pc counts (recon_opts.pcs): for the functions of one name, the
 * instructions, cycles and calls of each source line (the innermost line of
 * each pc, as addr2line gives it) or of each instruction (with objdump's text,
 * disasm.h). The JSON is the API's (GET /api/v1/jobs/{id}/annotate) and the
 * CLI's --json:
 *
 *   {"function", "view": "source"|"disasm", "cycles": bool,
 *    "disassembler": tool or null, "disasm_error": why not, or absent,
 *    "functions": [{"name", "binary", "addr", "instructions", "cycles", "calls",
 *      "lines": [{"file", "line", "instructions", "cycles", "calls", "text"?}],
 *      "insns": [{"pc", "addr", "instructions", "cycles", "calls", "file",
 *                 "line", "inlined": [names, outermost first], "asm"?}]}]}
 *
 * One entry per frame of that name (a static function of several binaries,
 * or one program in several address spaces). "lines" for the source view,
 * "insns" for the disassembly (every instruction objdump lists between the
 * function's first and last counted pc, 0 where none ran). "text" is the
 * source line where the file the DWARF names exists here.
 */
#ifndef OOB_ANNOT_H
#define OOB_ANNOT_H

#include <jansson.h>

#include "profile/profile.h"
#include "util/oob_err.h"

enum annot_view { ANNOT_SOURCE = 0, ANNOT_DISASM };

/* "source" or "disasm": 0, or -EINVAL. */
int annot_view_parse(const char *s, enum annot_view *out);

/* Where a binary is now, by build-id, for the disassembly when the path the
 * run used is gone (the server's jobs run on temporary links). */
struct annot_binary {
	const char *build_id;
	const char *path;
};

/* The view of the functions named fn (caller owns the JSON), or NULL:
 * -ENODATA when p has no per-pc counts, -ENOENT when no counted frame has
 * that name (the message says which). Without objdump the disassembly view
 * still has its counts (disasm_error says why no text). bins (may be NULL)
 * say where binaries are by build-id, else the sites' paths are used.
 * Thread-safe. */
json_t *annot_json(const struct profile *p, const char *fn, enum annot_view v,
		   const struct annot_binary *bins, size_t nbins, struct oob_err *err);

#endif
