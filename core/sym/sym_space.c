/* Address spaces: mappings sorted by run-time address, binary-searched. */
#include "sym/sym_impl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct sym_space {
	struct sym_mapping *maps; /* sorted by lo, non-overlapping */
	size_t n, cap;
};

struct sym_space *sym_space_new(void)
{
	return oob_xcalloc(1, sizeof(struct sym_space));
}

void sym_space_free(struct sym_space *s)
{
	if (!s)
		return;
	free(s->maps);
	free(s);
}

/* Number of mappings whose lo is <= pc. */
static size_t upper(const struct sym_space *s, uint64_t pc)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->maps[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int sym_space_add(struct sym_space *s, const struct sym_binary *b, uint64_t base,
		  struct oob_err *err)
{
	struct sym_mapping m = {.bin = b};
	size_t i;

	/* Unsigned wrap-around makes a bias below the link address work too. */
	m.bias = base == UINT64_MAX ? 0 : base - b->load_base;
	m.lo = b->text_lo + m.bias;
	m.hi = b->text_hi + m.bias;
	if (b->text_lo >= b->text_hi)
		return oob_err_set(err, -EINVAL, "%s: no executable text to map", b->name);
	if (m.hi < m.lo)
		return oob_err_set(err, -EINVAL,
				   "%s: text at base %#" PRIx64 " wraps around the address space",
				   b->name, base);
	i = upper(s, m.lo);
	if ((i > 0 && s->maps[i - 1].hi > m.lo) || (i < s->n && s->maps[i].lo < m.hi)) {
		const struct sym_mapping *o =
		    i > 0 && s->maps[i - 1].hi > m.lo ? &s->maps[i - 1] : &s->maps[i];
		return oob_err_set(err, -EINVAL,
				   "%s: text [%#" PRIx64 ", %#" PRIx64 ") overlaps %s at [%#" PRIx64
				   ", %#" PRIx64 ")",
				   b->name, m.lo, m.hi, o->bin->name, o->lo, o->hi);
	}
	oob_xgrow((void **)&s->maps, &s->cap, s->n + 1, sizeof(*s->maps));
	memmove(&s->maps[i + 1], &s->maps[i], (s->n - i) * sizeof(*s->maps));
	s->maps[i] = m;
	s->n++;
	return 0;
}

const struct sym_mapping *sym_space_find(const struct sym_space *s, uint64_t pc)
{
	size_t i = upper(s, pc);

	return i > 0 && pc < s->maps[i - 1].hi ? &s->maps[i - 1] : NULL;
}

struct sym_space *sym_space_copy(const struct sym_space *s)
{
	struct sym_space *c = sym_space_new();
	oob_xgrow((void **)&c->maps, &c->cap, s->n, sizeof(*c->maps));
	if (s->n)
		memcpy(c->maps, s->maps, s->n * sizeof(*s->maps));
	c->n = s->n;
	return c;
}

void sym_space_unmap(struct sym_space *s, uint64_t lo, uint64_t hi)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->maps[i].hi <= lo || s->maps[i].lo >= hi)
			s->maps[k++] = s->maps[i];
	s->n = k;
}

const struct sym_func *sym_space_lookup(const struct sym_space *s, uint64_t pc,
					const struct sym_mapping **map)
{
	const struct sym_mapping *m = sym_space_find(s, pc);
	const struct sym_func *f = m ? sym_binary_lookup(m->bin, pc - m->bias) : NULL;

	if (map)
		*map = m;
	return f;
}

size_t sym_space_read(const struct sym_space *s, uint64_t pc, void *buf, size_t n)
{
	const struct sym_mapping *m = sym_space_find(s, pc);

	if (!m)
		return 0;
	if (n > m->hi - pc)
		n = (size_t)(m->hi - pc);
	return sym_binary_read(m->bin, pc - m->bias, buf, n);
}
