/*
 * The places of CPython 3.11's eval loop a pc-only trace shows (pyplan.h):
 * the eval function's range from the symbol table, the opcode_targets table
 * (a static array of the eval function: no symbol; the one run of 256
 * aligned pointers into the eval function among the ELF's allocated data,
 * as tests/tools/pydispatch.py finds it) and three C labels from DWARF
 * (DW_TAG_label in the eval function's compilation unit, at a pc inside
 * the eval function: other functions have labels named error too).
 */
#include "py/pyplan.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#define EVAL_FN "_PyEval_EvalFrameDefault"

static int find_symbol(Elf *e, const char *name, uint64_t *lo, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t k = 0; d && k < sh.sh_size / sh.sh_entsize; k++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(d, (int)k, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    (n = elf_strptr(e, sh.sh_link, s.st_name)) && strcmp(n, name) == 0) {
				*lo = s.st_value;
				*size = s.st_size;
				return 0;
			}
		}
	}
	return -1;
}

/* The one run of 256 8-byte words pointing into [lo, hi) in allocated
 * PROGBITS sections; 0 if none, -1 if several. */
static int find_targets(Elf *e, uint64_t lo, uint64_t hi, uint64_t *t)
{
	int found = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_ALLOC) || sh.sh_addr % 8)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		size_t n = d->d_size / 8, run = 0;
		for (size_t k = 0; k < n; k++) {
			uint64_t w;
			memcpy(&w, (const char *)d->d_buf + k * 8, 8);
			run = w >= lo && w < hi ? run + 1 : 0;
			if (run == 256) {
				if (found++)
					return -1;
				memcpy(t, (const char *)d->d_buf + (k - 255) * 8, 256 * 8);
			}
		}
	}
	return found;
}

struct want {
	const char *name;
	uint64_t *pc;
};

static void find_labels(Dwarf_Die *die, struct want *w, size_t nw, uint64_t lo, uint64_t hi)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return;
	do {
		if (dwarf_tag(&child) == DW_TAG_label) {
			const char *n = dwarf_diename(&child);
			Dwarf_Addr a;
			for (size_t k = 0; n && k < nw; k++)
				if (!*w[k].pc && strcmp(n, w[k].name) == 0 &&
				    dwarf_lowpc(&child, &a) == 0 && a >= lo && a < hi)
					*w[k].pc = a;
		}
		find_labels(&child, w, nw, lo, hi);
	} while (dwarf_siblingof(&child, &child) == 0);
}

int pyeval_find(const char *elf, uint64_t bias, struct pyeval *out, struct oob_err *err)
{
	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	int fd = open(elf, O_RDONLY);
	if (fd < 0)
		return oob_err_set(err, -errno, "%s: %s", elf, strerror(errno));
	int rc = -ENOENT;
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Dwarf *dw = e ? dwarf_begin_elf(e, DWARF_C_READ, NULL) : NULL;
	uint64_t lo, size;
	Dwarf_Die cu;
	if (!e || find_symbol(e, EVAL_FN, &lo, &size) < 0) {
		oob_err_set(err, rc, "%s: no %s (not CPython, or stripped)", elf, EVAL_FN);
		goto out;
	}
	out->lo = lo;
	out->hi = lo + size;
	int nt = find_targets(e, lo, lo + size, out->targets);
	if (nt != 1) {
		oob_err_set(err, rc,
			    "%s: %s opcode_targets tables (CPython without computed gotos?)", elf,
			    nt ? "several" : "no");
		goto out;
	}
	if (!dw || !dwarf_addrdie(dw, lo, &cu)) {
		oob_err_set(err, rc, "%s: no DWARF for %s", elf, EVAL_FN);
		goto out;
	}
	struct want w[] = {{"start_frame", &out->start_frame},
			   {"error", &out->error},
			   {"exit_unwind", &out->exit_unwind}};
	find_labels(&cu, w, sizeof(w) / sizeof(w[0]), lo, lo + size);
	for (size_t k = 0; k < sizeof(w) / sizeof(w[0]); k++)
		if (!*w[k].pc) {
			oob_err_set(err, rc, "%s: no DWARF label %s in %s (not CPython 3.11?)", elf,
				    w[k].name, EVAL_FN);
			goto out;
		}
	out->lo += bias;
	out->hi += bias;
	out->start_frame += bias;
	out->error += bias;
	out->exit_unwind += bias;
	for (int k = 0; k < 256; k++)
		out->targets[k] += bias;
	rc = 0;
out:
	if (dw)
		dwarf_end(dw);
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}
