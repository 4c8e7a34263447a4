/* Struct layouts from DWARF, for reading kernel objects out of the trace. */
#include <dwarf.h>
#include <string.h>

#include "sym/sym_impl.h"

/* Size in bytes of a member's type (following typedefs and qualifiers). */
static uint64_t type_size(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die t = *die;
	for (int hops = 0; hops < 16; hops++) {
		Dwarf_Word sz;
		if (dwarf_attr(&t, DW_AT_byte_size, &a) && dwarf_formudata(&a, &sz) == 0)
			return sz;
		if (dwarf_tag(&t) == DW_TAG_array_type) {
			Dwarf_Die sub;
			Dwarf_Word count;
			if (dwarf_child(&t, &sub) == 0 && dwarf_attr(&sub, DW_AT_count, &a) &&
			    dwarf_formudata(&a, &count) == 0) {
				Dwarf_Die el;
				if (!dwarf_attr(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, &el))
					return 0;
				return count * type_size(&el);
			}
			if (dwarf_child(&t, &sub) == 0 && dwarf_attr(&sub, DW_AT_upper_bound, &a) &&
			    dwarf_formudata(&a, &count) == 0) {
				Dwarf_Die el;
				if (!dwarf_attr(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, &el))
					return 0;
				return (count + 1) * type_size(&el);
			}
		}
		if (!dwarf_attr(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
			return 0;
	}
	return 0;
}

/* Searches the members of struct die for name, descending into anonymous
 * members; base accumulates their offsets. */
static int find_member(Dwarf_Die *st, const char *name, uint64_t base, uint64_t *off,
		       uint64_t *size, int depth)
{
	Dwarf_Die m;
	if (depth > 8 || dwarf_child(st, &m) != 0)
		return -ENOENT;
	do {
		if (dwarf_tag(&m) != DW_TAG_member)
			continue;
		Dwarf_Attribute a;
		Dwarf_Word loc = 0;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a))
			dwarf_formudata(&a, &loc);
		const char *mn = dwarf_diename(&m);
		if (mn && strcmp(mn, name) == 0) {
			*off = base + loc;
			*size = type_size(&m);
			return 0;
		}
		Dwarf_Die t;
		if (!mn && dwarf_attr(&m, DW_AT_type, &a) && dwarf_formref_die(&a, &t) &&
		    find_member(&t, name, base + loc, off, size, depth + 1) == 0)
			return 0;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -ENOENT;
}

/* The first complete definition of struct type in the CU under die. */
static int find_struct(Dwarf_Die *cu, const char *type, Dwarf_Die *out)
{
	Dwarf_Die d;
	if (dwarf_child(cu, &d) != 0)
		return -ENOENT;
	do {
		if (dwarf_tag(&d) == DW_TAG_structure_type &&
		    !dwarf_hasattr(&d, DW_AT_declaration)) {
			const char *n = dwarf_diename(&d);
			if (n && strcmp(n, type) == 0) {
				*out = d;
				return 0;
			}
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return -ENOENT;
}

int sym_binary_member(const struct sym_binary *cb, const char *type, const char *member,
		      uint64_t *offset, uint64_t *size)
{
	struct sym_binary *b = (struct sym_binary *)cb; /* the lock only */
	if (!b->dw)
		return -ENOTSUP;
	int rc = -ENOENT;
	Dwarf_Off off = 0, next;
	size_t hsize;
	pthread_mutex_lock(&b->dw_lock);
	while (rc < 0 && dwarf_nextcu(b->dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, st;
		if (dwarf_offdie(b->dw, off + hsize, &cu) && find_struct(&cu, type, &st) == 0)
			rc = find_member(&st, member, 0, offset, size, 0);
		off = next;
	}
	pthread_mutex_unlock(&b->dw_lock);
	return rc;
}

uint64_t sym_binary_find_func(const struct sym_binary *b, const char *name)
{
	for (size_t i = 0; i < b->nfuncs; i++)
		if (strcmp(b->funcs[i].name, name) == 0)
			return b->funcs[i].entry;
	return 0;
}
