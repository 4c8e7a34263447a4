/*
 * sampler_trap: the trap frame layout of a RISC-V vmlinux (sampler_trap.h).
 */
#include "sample/sampler_trap.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <string.h>

/* The address of the symbol called name in m, 0 when absent. */
static uint64_t symbol(Dwfl_Module *m, const char *name, uint64_t *size)
{
	int n = dwfl_module_getsymtab(m);
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *s = dwfl_module_getsym_info(m, i, &sym, &addr, NULL, NULL, NULL);
		if (s && !strcmp(s, name) && GELF_ST_TYPE(sym.st_info) != STT_SECTION) {
			if (size)
				*size = sym.st_size;
			return addr;
		}
	}
	return 0;
}

/* The DIE of member name in the aggregate agg. */
static int member(Dwarf_Die *agg, const char *name, Dwarf_Die *out)
{
	if (dwarf_child(agg, out) != 0)
		return -1;
	do {
		const char *n = dwarf_diename(out);
		if (dwarf_tag(out) == DW_TAG_member && n && !strcmp(n, name))
			return 0;
	} while (dwarf_siblingof(out, out) == 0);
	return -1;
}

static int member_offset(Dwarf_Die *agg, const char *name, uint64_t *off)
{
	Dwarf_Die m;
	Dwarf_Attribute a;
	Dwarf_Word w;
	if (member(agg, name, &m) < 0 || !dwarf_attr(&m, DW_AT_data_member_location, &a) ||
	    dwarf_formudata(&a, &w) != 0)
		return -1;
	*off = w;
	return 0;
}

static int read_pt_regs(Dwarf_Die *d, struct sampler_trap_layout *l)
{
	int size = dwarf_bytesize(d);
	if (size <= 0 || member_offset(d, "epc", &l->off_epc) < 0 ||
	    member_offset(d, "ra", &l->off_ra) < 0 || member_offset(d, "sp", &l->off_sp) < 0 ||
	    member_offset(d, "s0", &l->off_s0) < 0 ||
	    member_offset(d, "status", &l->off_status) < 0 ||
	    member_offset(d, "cause", &l->off_cause) < 0)
		return -1;
	l->regs_size = (uint64_t)size;
	return 0;
}

/* THREAD_SIZE, the size of d's type: `extern unsigned long
 * init_stack[THREAD_SIZE / sizeof(unsigned long)]` (linux/sched.h, in every
 * unit that includes it) or union thread_union's stack member. */
static int read_thread_size(Dwarf_Die *d, struct sampler_trap_layout *l)
{
	Dwarf_Die type;
	Dwarf_Attribute a;
	Dwarf_Word size;
	if (!dwarf_attr(d, DW_AT_type, &a) || !dwarf_formref_die(&a, &type) ||
	    dwarf_aggregate_size(&type, &size) != 0 || !size || (size & (size - 1)))
		return -1;
	l->thread_size = size;
	return 0;
}

/* The complete definitions of struct pt_regs and union thread_union, from
 * the first compilation units that have them (top-level DIEs only). */
static void scan_types(Dwarf *dw, struct sampler_trap_layout *l)
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	while ((!l->regs_size || !l->thread_size) &&
	       dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, d;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
			do {
				int tag = dwarf_tag(&d);
				const char *n = dwarf_diename(&d);
				Dwarf_Die m;
				if (!n)
					continue;
				if (tag == DW_TAG_variable && !l->thread_size &&
				    !strcmp(n, "init_stack"))
					read_thread_size(&d, l);
				if (dwarf_hasattr(&d, DW_AT_declaration))
					continue;
				if (tag == DW_TAG_structure_type && !l->regs_size &&
				    !strcmp(n, "pt_regs"))
					read_pt_regs(&d, l);
				else if (tag == DW_TAG_union_type && !l->thread_size &&
					 !strcmp(n, "thread_union") && member(&d, "stack", &m) == 0)
					read_thread_size(&m, l);
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		off = next;
	}
}

int sampler_trap_layout_read(Dwfl_Module *m, struct sampler_trap_layout *l, struct oob_err *err)
{
	const char *name = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	memset(l, 0, sizeof(*l));
	uint64_t size = 0;
	l->entry_lo = symbol(m, "handle_exception", NULL);
	l->entry_hi = symbol(m, "ret_from_fork", NULL);
	l->sched_lo = symbol(m, "__schedule", &size);
	l->sched_hi = l->sched_lo + size;
	if (!l->entry_lo || l->entry_hi <= l->entry_lo)
		return oob_err_set(err, -ENOENT,
				   "%s: no handle_exception and ret_from_fork after it in the "
				   "symbols: traps are not joined",
				   name);
	Dwarf_Addr bias;
	Dwarf *dw = dwfl_module_getdwarf(m, &bias);
	if (!dw)
		return oob_err_set(err, -ENOENT, "%s: no DWARF (%s): traps are not joined", name,
				   dwfl_errmsg(-1));
	scan_types(dw, l);
	if (!l->regs_size || !l->thread_size)
		return oob_err_set(
		    err, -ENOENT, "%s: no %s in the DWARF: traps are not joined", name,
		    l->regs_size ? "init_stack nor union thread_union (THREAD_SIZE)"
				 : "struct pt_regs with epc, ra, sp, s0, status, cause");
	return 0;
}
