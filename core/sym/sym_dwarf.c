/*
 * DWARF side of sym: the subprogram walk done once at open, source lines,
 * and inline chains from per-CU tables built on first use. Everything after
 * open runs under b->dw_lock: libdw caches lazily and is not thread-safe.
 */
#include "sym/sym_impl.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_log.h"

/* DIE nesting we follow; real code stays far below, hostile input does not. */
#define SYM_DIE_DEPTH_MAX 128
/* Longest inline chain we report (addr2line has no limit; 64 is plenty). */
#define SYM_INLINE_CHAIN_MAX 64

struct sym_inlnode {
	const char *name, *call_file;
	uint32_t call_line;
	int32_t parent; /* enclosing inlined call, -1 for none */
};

/* [lo, hi) whose innermost inlined call is nodes[node]. */
struct sym_inlseg {
	uint64_t lo, hi;
	uint32_t node;
};

struct sym_inltab {
	struct sym_inlnode *nodes;
	size_t nnodes, capnodes;
	struct sym_inlseg *segs;
	size_t nsegs;
};

static const char *die_name(Dwarf_Die *die)
{
	static const unsigned attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
	Dwarf_Attribute a;

	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		const char *s =
		    dwarf_attr_integrate(die, attrs[i], &a) ? dwarf_formstring(&a) : NULL;
		if (s && *s)
			return s;
	}
	return NULL;
}

static int die_flag(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute a;
	bool v = false;

	return dwarf_attr_integrate(die, name, &a) && dwarf_formflag(&a, &v) == 0 && v;
}

static void add_subprogram(struct sym_binary *b, struct sym_cands *c, Dwarf_Die *die)
{
	struct sym_cand x = {.flags = SYM_F_DWARF, .tier = SYM_TIER_DWARF};
	Dwarf_Addr base, lo, hi, entry = 0;
	ptrdiff_t off = 0;
	size_t first = c->n;
	int has_entry, line = 0, inside = 0;

	if (dwarf_hasattr(die, DW_AT_declaration))
		return;
	x.name = die_name(die);
	x.file = dwarf_decl_file(die);
	if (dwarf_decl_line(die, &line) == 0 && line > 0)
		x.line = (uint32_t)line;
	if (die_flag(die, DW_AT_external))
		x.flags |= SYM_F_GLOBAL;
	has_entry = dwarf_entrypc(die, &entry) == 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (c->n == first && !has_entry)
			entry = lo;
		inside |= entry >= lo && entry < hi;
		x.lo = lo;
		x.hi = hi;
		sym_cands_push(c, &x);
	}
	/* The entry must lie in the function; otherwise trust the first range. */
	for (size_t i = first; i < c->n; i++)
		c->v[i].entry = inside ? entry : c->v[first].lo;
}

/* Subprograms with code live at CU level and in namespaces; GNU C nested
 * functions (inside a subprogram) are left to their local symbols (inner.0). */
static void walk_subprograms(struct sym_binary *b, struct sym_cands *c, Dwarf_Die *parent,
			     int depth)
{
	Dwarf_Die d;

	if (depth > SYM_DIE_DEPTH_MAX || dwarf_child(parent, &d) != 0)
		return;
	do {
		switch (dwarf_tag(&d)) {
		case DW_TAG_subprogram:
			add_subprogram(b, c, &d);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
			walk_subprograms(b, c, &d, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
}

static void add_cu(struct sym_binary *b, Dwarf_Die *cudie, size_t *capcu, size_t *caprange)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	uint32_t idx = (uint32_t)b->ncus;

	oob_xgrow((void **)&b->cus, capcu, b->ncus + 1, sizeof(*b->cus));
	b->cus[b->ncus++] = (struct sym_cu){.off = dwarf_dieoffset(cudie)};
	while ((off = dwarf_ranges(cudie, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo)
			continue;
		oob_xgrow((void **)&b->curanges, caprange, b->ncuranges + 1, sizeof(*b->curanges));
		b->curanges[b->ncuranges++] = (struct sym_curange){lo, hi, idx};
	}
}

/*
 * GNU as describes each function-typed label of an assembly file as a
 * subprogram, with a high_pc that can run past the end of the symbol into the
 * next function (measured on vmlinux: __memmove's covers __memset's first
 * instruction). Those subprograms add nothing the symbol table lacks, so such
 * units contribute their line table only.
 */
static int from_gas(Dwarf_Die *cudie)
{
	Dwarf_Attribute a;
	const char *p = dwarf_attr(cudie, DW_AT_producer, &a) ? dwarf_formstring(&a) : NULL;

	return p && !strncmp(p, "GNU AS", 6);
}

static int cmp_curange(const void *pa, const void *pb)
{
	const struct sym_curange *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->cu < b->cu ? -1 : a->cu > b->cu;
}

void sym_dwarf_index(struct sym_binary *b, struct sym_cands *c)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	Dwarf_Half version;
	uint8_t type;
	size_t capcu = 0, caprange = 0;
	int rc;

	while ((rc = dwarf_get_units(b->dw, cu, &cu, &version, &type, &cudie, &subdie)) == 0) {
		if (type != DW_UT_compile && type != DW_UT_partial)
			continue;
		add_cu(b, &cudie, &capcu, &caprange);
		if (!from_gas(&cudie))
			walk_subprograms(b, c, &cudie, 0);
	}
	if (rc < 0)
		OOB_WARN("%s: DWARF units after #%zu unreadable: %s", b->path, b->ncus,
			 dwarf_errmsg(-1));
	if (b->ncuranges)
		qsort(b->curanges, b->ncuranges, sizeof(*b->curanges), cmp_curange);
}

void sym_dwarf_free(struct sym_binary *b)
{
	for (size_t i = 0; i < b->ncus; i++) {
		struct sym_inltab *t = b->cus[i].inl;
		if (!t)
			continue;
		free(t->nodes);
		free(t->segs);
		free(t);
	}
}

/* Index of the CU covering addr, or -1. Ranges of distinct CUs do not overlap. */
static long find_cu(const struct sym_binary *b, uint64_t addr)
{
	size_t lo = 0, hi = b->ncuranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (b->curanges[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= b->curanges[lo - 1].hi)
		return -1;
	return b->curanges[lo - 1].cu;
}

static int cu_die(struct sym_binary *b, uint64_t addr, Dwarf_Die *cudie, long *idx)
{
	*idx = find_cu(b, addr);
	if (*idx >= 0)
		return dwarf_offdie(b->dw, b->cus[*idx].off, cudie) != NULL;
	/* No CU range table (an old producer): fall back to .debug_aranges. */
	return dwarf_addrdie(b->dw, addr, cudie) != NULL;
}

int sym_binary_srcline(const struct sym_binary *cb, uint64_t addr, const char **file,
		       unsigned *line)
{
	struct sym_binary *b = (struct sym_binary *)cb; /* only libdw's caches change */
	Dwarf_Die cudie;
	Dwarf_Line *l;
	const char *f;
	long idx;
	int found = 0, ln = 0;

	if (!b->dw)
		return 0;
	pthread_mutex_lock(&b->dw_lock);
	if (!cu_die(b, addr, &cudie, &idx) || !(l = dwarf_getsrc_die(&cudie, addr)))
		goto out;
	f = dwarf_linesrc(l, NULL, NULL);
	if (!f || dwarf_lineno(l, &ln) != 0 || ln <= 0)
		goto out;
	*file = f;
	*line = (unsigned)ln;
	found = 1;
out:
	pthread_mutex_unlock(&b->dw_lock);
	return found;
}

/* Building a CU's inline table: pieces are the ranges of each inlined call. */
struct inl_piece {
	uint64_t lo, hi;
	uint32_t node, depth;
};

struct inl_build {
	struct sym_inltab *t;
	Dwarf_Files *files;
	size_t nfiles;
	struct inl_piece *pieces;
	size_t npieces, cap;
};

static uint32_t inl_node(struct inl_build *ib, Dwarf_Die *die, int32_t parent)
{
	struct sym_inltab *t = ib->t;
	struct sym_inlnode *n;
	Dwarf_Attribute a;
	Dwarf_Word w;

	oob_xgrow((void **)&t->nodes, &t->capnodes, t->nnodes + 1, sizeof(*t->nodes));
	n = &t->nodes[t->nnodes];
	*n = (struct sym_inlnode){.name = die_name(die), .parent = parent};
	if (!n->name)
		n->name = "??";
	if (dwarf_attr(die, DW_AT_call_file, &a) && dwarf_formudata(&a, &w) == 0 && ib->files &&
	    w < ib->nfiles)
		n->call_file = dwarf_filesrc(ib->files, w, NULL, NULL);
	if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0)
		n->call_line = (uint32_t)w;
	return (uint32_t)t->nnodes++;
}

static void inl_walk(struct inl_build *ib, Dwarf_Die *parent, int32_t pnode, int depth)
{
	Dwarf_Die d;

	if (depth > SYM_DIE_DEPTH_MAX || dwarf_child(parent, &d) != 0)
		return;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;
		uint32_t node;
		switch (dwarf_tag(&d)) {
		case DW_TAG_inlined_subroutine:
			node = inl_node(ib, &d, pnode);
			while ((off = dwarf_ranges(&d, off, &base, &lo, &hi)) > 0) {
				if (hi <= lo)
					continue;
				oob_xgrow((void **)&ib->pieces, &ib->cap, ib->npieces + 1,
					  sizeof(*ib->pieces));
				ib->pieces[ib->npieces++] =
				    (struct inl_piece){lo, hi, node, (uint32_t)depth};
			}
			inl_walk(ib, &d, (int32_t)node, depth + 1);
			break;
		case DW_TAG_subprogram: /* abstract instances have no code */
			if (!dwarf_hasattr(&d, DW_AT_inline) &&
			    !dwarf_hasattr(&d, DW_AT_declaration))
				inl_walk(ib, &d, -1, depth + 1);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			inl_walk(ib, &d, pnode, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
}

static int cmp_piece(const void *pa, const void *pb)
{
	const struct inl_piece *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi > b->hi ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

static void inl_emit(struct sym_inltab *t, size_t *cap, uint64_t lo, uint64_t hi, uint32_t node)
{
	struct sym_inlseg *last = t->nsegs ? &t->segs[t->nsegs - 1] : NULL;

	if (lo >= hi)
		return;
	if (last && last->node == node && last->hi == lo) {
		last->hi = hi;
		return;
	}
	oob_xgrow((void **)&t->segs, cap, t->nsegs + 1, sizeof(*t->segs));
	t->segs[t->nsegs++] = (struct sym_inlseg){lo, hi, node};
}

/*
 * Inlined ranges nest (a call inlined into an inlined body lies inside it),
 * so one pass over the pieces sorted outer-first with a stack of open pieces
 * yields, for every address, its innermost inlined call. Pieces that poke out
 * of their enclosing one (sloppy producers) are clipped to it.
 */
static void inl_flatten(struct sym_inltab *t, struct inl_piece *p, size_t n)
{
	struct inl_piece *stack = oob_xmalloc((n + 1) * sizeof(*stack));
	size_t sp = 0, cap = 0;
	uint64_t pos = 0;

	if (n)
		qsort(p, n, sizeof(*p), cmp_piece);
	for (size_t i = 0; i <= n; i++) {
		uint64_t next = i < n ? p[i].lo : UINT64_MAX;
		while (sp && stack[sp - 1].hi <= next) {
			inl_emit(t, &cap, pos, stack[sp - 1].hi, stack[sp - 1].node);
			if (stack[sp - 1].hi > pos)
				pos = stack[sp - 1].hi;
			sp--;
		}
		if (i == n)
			break;
		if (sp) {
			inl_emit(t, &cap, pos, next, stack[sp - 1].node);
			if (p[i].hi > stack[sp - 1].hi)
				p[i].hi = stack[sp - 1].hi;
		}
		pos = next;
		stack[sp++] = p[i];
	}
	free(stack);
}

static struct sym_inltab *inl_build(Dwarf_Die *cudie)
{
	struct inl_build ib = {.t = oob_xcalloc(1, sizeof(struct sym_inltab))};

	if (dwarf_getsrcfiles(cudie, &ib.files, &ib.nfiles) != 0)
		ib.files = NULL;
	inl_walk(&ib, cudie, -1, 0);
	inl_flatten(ib.t, ib.pieces, ib.npieces);
	free(ib.pieces);
	return ib.t;
}

static const struct sym_inlseg *inl_find(const struct sym_inltab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nsegs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->segs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= t->segs[lo - 1].hi)
		return NULL;
	return &t->segs[lo - 1];
}

int sym_binary_inlines(const struct sym_binary *cb, uint64_t addr, struct sym_inline *out, int max)
{
	struct sym_binary *b = (struct sym_binary *)cb; /* lazily built tables only */
	const struct sym_inlnode *chain[SYM_INLINE_CHAIN_MAX];
	const struct sym_inlseg *seg;
	Dwarf_Die cudie;
	long idx;
	int n = 0, k = 0;

	if (!b->dw || max <= 0)
		return 0;
	pthread_mutex_lock(&b->dw_lock);
	idx = find_cu(b, addr);
	if (idx < 0 || !dwarf_offdie(b->dw, b->cus[idx].off, &cudie))
		goto out;
	if (!b->cus[idx].inl)
		b->cus[idx].inl = inl_build(&cudie);
	seg = inl_find(b->cus[idx].inl, addr);
	for (int32_t i = seg ? (int32_t)seg->node : -1; i >= 0 && n < SYM_INLINE_CHAIN_MAX;
	     i = b->cus[idx].inl->nodes[i].parent)
		chain[n++] = &b->cus[idx].inl->nodes[i];
	for (k = 0; k < n && k < max; k++)
		out[k] = (struct sym_inline){chain[n - 1 - k]->name, chain[n - 1 - k]->call_file,
					     chain[n - 1 - k]->call_line};
out:
	pthread_mutex_unlock(&b->dw_lock);
	return k;
}
