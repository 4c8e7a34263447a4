/*
 * The code map's reader (pycode.h). The file is small (a few thousand lines
 * per module) and read once, so a line at a time with sscanf.
 */
#include "py/pycode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

/* CPython's code objects hold at most INT_MAX bytes of bytecode; a map's
 * are real programs' (the largest stdlib function has a few thousand). */
#define PYCODE_MAX_INSNS (1u << 24)

void pycode_free(struct pycode *m)
{
	if (!m)
		return;
	for (uint32_t k = 0; k < m->n; k++) {
		free(m->v[k].name);
		free(m->v[k].qualname);
		free(m->v[k].in);
		free(m->v[k].exc);
		free(m->v[k].calls);
	}
	free(m->v);
	free(m);
}

static int bad(FILE *f, struct oob_err *err, const char *path, unsigned line, const char *why)
{
	fclose(f);
	return oob_err_set(err, -EINVAL, "%s:%u: %s", path, line, why);
}

/* Instruction offsets -> indices, once the code object is complete. */
static int resolve(struct pycode_obj *o)
{
	for (uint32_t k = 0; k < o->nin; k++)
		for (uint16_t s = 0; s < o->in[k].nsucc; s++)
			if ((o->in[k].succ[s] = pycode_at(o, o->in[k].succ[s])) == PYCODE_NONE)
				return -1;
	return 0;
}

static int parse_succ(const char *s, struct pycode_insn *in)
{
	in->nsucc = 0;
	if (strcmp(s, "-") == 0)
		return 0;
	char *end;
	for (;;) {
		if (in->nsucc == 2)
			return -1;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s)
			return -1;
		in->succ[in->nsucc++] = (uint32_t)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

static void set_name(struct pycode_obj *o, const char *q, const char *file, unsigned line)
{
	const char *b = strrchr(file, '/');
	b = b ? b + 1 : file;
	size_t n = strlen(q) + strlen(b) + 32;
	o->name = oob_xmalloc(n);
	snprintf(o->name, n, "py:%s (%s:%u)", q, b, line);
	o->qualname = oob_xstrdup(q);
}

/* What a map must hold once read: the last code object whole, callees and
 * handlers that exist. */
static int check(const struct pycode *m, struct pycode_obj *last, uint32_t want, const char *path,
		 struct oob_err *err)
{
	if (!m->n)
		return oob_err_set(err, -EINVAL, "%s: no code objects", path);
	if (last->nin != want || resolve(last))
		return oob_err_set(err, -EINVAL, "%s: the last code object is incomplete", path);
	for (uint32_t k = 0; k < m->n; k++) {
		const struct pycode_obj *o = &m->v[k];
		for (uint32_t c = 0; c < o->ncalls; c++)
			if (o->calls[c].code >= m->n)
				return oob_err_set(err, -EINVAL,
						   "%s: %s calls code object %u of %u", path,
						   o->name, o->calls[c].code, m->n);
		for (uint32_t c = 0; c < o->nexc; c++)
			if (pycode_at(o, o->exc[c].target) == PYCODE_NONE)
				return oob_err_set(err, -EINVAL,
						   "%s: %s: a handler at no instruction (%u)", path,
						   o->name, o->exc[c].target);
	}
	return 0;
}

int pycode_load(const char *path, struct pycode **out, struct oob_err *err)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f)
		return oob_err_set(err, -errno, "%s: %s", path, strerror(errno));
	struct pycode *m = oob_xcalloc(1, sizeof(*m));
	for (int k = 0; k < 256; k++)
		m->deopt[k] = (uint16_t)k;
	size_t cap = 0, capi = 0, capx = 0, capc = 0;
	char buf[4096], a[1024], b[2048], s[64];
	unsigned line = 0, x, y, z, want = 0;
	struct pycode_obj *o = NULL;
	int rc = 0;
	while (fgets(buf, sizeof(buf), f)) {
		line++;
		if (line == 1) {
			if (strncmp(buf, "pycode 1", 8) != 0) {
				rc = bad(f, err, path, line, "not a code map (pycode 1)");
				goto fail;
			}
			continue;
		}
		if (sscanf(buf, "op %u %u %u", &x, &y, &z) == 3 && x < 256 && y < 256 &&
		    z <= PYCODE_THREE) {
			m->deopt[x] = (uint16_t)y;
			m->kind[x] = (uint8_t)z;
		} else if (sscanf(buf, "code %1023s %2047s %u %u", a, b, &x, &y) == 4 &&
			   y <= PYCODE_MAX_INSNS) {
			if (o && (o->nin != want || resolve(o))) {
				rc =
				    bad(f, err, path, line, "the code object before is incomplete");
				goto fail;
			}
			oob_xgrow((void **)&m->v, &cap, m->n + 1, sizeof(*m->v));
			o = &m->v[m->n++];
			*o = (struct pycode_obj){0};
			set_name(o, a, b, x);
			/* the instructions grow as their lines come: a count
			 * the file does not back costs nothing (uploads are
			 * checked in the server's own process) */
			want = y;
			capi = capx = capc = 0;
		} else if (o && sscanf(buf, "i %u %u %63s", &x, &y, s) == 3 && o->nin < want &&
			   y < 256) {
			oob_xgrow((void **)&o->in, &capi, o->nin + 1, sizeof(*o->in));
			struct pycode_insn *in = &o->in[o->nin];
			*in = (struct pycode_insn){.off = x};
			in->op = (uint16_t)y;
			if (parse_succ(s, in) || (o->nin && o->in[o->nin - 1].off >= x)) {
				rc = bad(f, err, path, line, "bad instruction");
				goto fail;
			}
			o->nin++;
		} else if (o && sscanf(buf, "x %u %u %u", &x, &y, &z) == 3 && x < y) {
			oob_xgrow((void **)&o->exc, &capx, o->nexc + 1, sizeof(*o->exc));
			o->exc[o->nexc++] = (struct pycode_exc){x, y, z};
		} else if (o && sscanf(buf, "c %u %u", &x, &y) == 2) {
			oob_xgrow((void **)&o->calls, &capc, o->ncalls + 1, sizeof(*o->calls));
			o->calls[o->ncalls++] = (struct pycode_call){x, y};
		} else {
			rc = bad(f, err, path, line, "unknown line");
			goto fail;
		}
	}
	fclose(f);
	if ((rc = check(m, o, want, path, err)) < 0) {
		pycode_free(m);
		return rc;
	}
	*out = m;
	return 0;
fail:
	pycode_free(m);
	return rc;
}

uint32_t pycode_at(const struct pycode_obj *o, uint32_t off)
{
	uint32_t lo = 0, hi = o->nin;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (o->in[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < o->nin && o->in[lo].off == off ? lo : PYCODE_NONE;
}

uint32_t pycode_handler(const struct pycode_obj *o, uint32_t k)
{
	uint32_t off = o->in[k].off;
	for (uint32_t e = 0; e < o->nexc; e++)
		if (o->exc[e].start <= off && off < o->exc[e].end)
			return pycode_at(o, o->exc[e].target);
	return PYCODE_NONE;
}

uint32_t pycode_callee(const struct pycode_obj *o, uint32_t k)
{
	for (uint32_t c = 0; c < o->ncalls; c++)
		if (o->calls[c].off == o->in[k].off)
			return o->calls[c].code;
	return PYCODE_NONE;
}
