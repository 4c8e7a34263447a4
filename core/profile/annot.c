/*
 * annot: the per-line and per-instruction views over profile_pcs. Rows are
 * summed per site for the frames of the name asked, then per line or per
 * instruction.
 */
#include "profile/annot.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/disasm.h"
#include "util/oob_mem.h"

struct acc {
	uint32_t site;
	uint64_t insns, cycles, calls;
};

int annot_view_parse(const char *s, enum annot_view *out)
{
	if (!strcmp(s, "source"))
		*out = ANNOT_SOURCE;
	else if (!strcmp(s, "disasm"))
		*out = ANNOT_DISASM;
	else
		return -EINVAL;
	return 0;
}

static int cmp_acc(const void *a, const void *b)
{
	const struct acc *x = a, *y = b;
	return x->site < y->site ? -1 : x->site > y->site;
}

/* The sites counted under frame f, summed and in pc order (sites are). */
static struct acc *collect(const struct profile *p, uint32_t f, size_t *n)
{
	struct acc *v = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < profile_npcs(p); i++) {
		const struct profile_pc *r = profile_pc(p, i);
		if (profile_node(p, r->node)->frame != f)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			v = oob_xrealloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = (struct acc){r->site, r->insns, r->cycles, r->calls};
	}
	if (!*n)
		return v;
	qsort(v, *n, sizeof(*v), cmp_acc);
	size_t m = 0;
	for (size_t i = 0; i < *n; i++) {
		if (m && v[m - 1].site == v[i].site) {
			v[m - 1].insns += v[i].insns;
			v[m - 1].cycles += v[i].cycles;
			v[m - 1].calls += v[i].calls;
		} else {
			v[m++] = v[i];
		}
	}
	*n = m;
	return v;
}

static void put_counts(json_t *o, uint64_t insns, uint64_t cycles, uint64_t calls, int has_cycles)
{
	json_object_set_new(o, "instructions", json_integer((json_int_t)insns));
	if (has_cycles)
		json_object_set_new(o, "cycles", json_integer((json_int_t)cycles));
	json_object_set_new(o, "calls", json_integer((json_int_t)calls));
}

static json_t *hex(uint64_t v)
{
	char b[24];
	snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return json_string(b);
}

/* Line `line` of file (1-based), or NULL: the file read whole once per call
 * of the view, lines split in place. */
struct srcfile {
	char *path, *buf;
	char **lines;
	size_t n;
};

static const char *src_text(struct srcfile *sf, const char *path, uint32_t line)
{
	if (!path)
		return NULL;
	if (!sf->path || strcmp(sf->path, path)) {
		free(sf->path);
		free(sf->buf);
		free(sf->lines);
		memset(sf, 0, sizeof(*sf));
		sf->path = oob_xstrdup(path);
		FILE *f = fopen(path, "r");
		size_t cap = 0, len = 0;
		if (!f)
			return NULL;
		char tmp[65536];
		size_t k;
		while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0 && len < (64u << 20)) {
			sf->buf = oob_xrealloc(sf->buf, len + k + 1);
			memcpy(sf->buf + len, tmp, k);
			len += k;
		}
		fclose(f);
		if (!sf->buf)
			return NULL;
		sf->buf[len] = 0;
		for (char *s = sf->buf; s && *s;) {
			if (sf->n == cap) {
				cap = cap ? 2 * cap : 256;
				sf->lines = oob_xrealloc(sf->lines, cap * sizeof(*sf->lines));
			}
			sf->lines[sf->n++] = s;
			if ((s = strchr(s, '\n')))
				*s++ = 0;
		}
	}
	return line >= 1 && line <= sf->n ? sf->lines[line - 1] : NULL;
}

struct line_acc {
	const char *file;
	uint32_t line;
	uint64_t insns, cycles, calls;
};

static int cmp_line(const void *a, const void *b)
{
	const struct line_acc *x = a, *y = b;
	int c = strcmp(x->file ? x->file : "", y->file ? y->file : "");
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

static json_t *source_lines(const struct profile *p, const struct acc *v, size_t n, int cyc)
{
	struct line_acc *l = oob_xcalloc(n ? n : 1, sizeof(*l));
	for (size_t i = 0; i < n; i++) {
		const struct profile_site *s = profile_site(p, v[i].site);
		l[i] = (struct line_acc){s->file, s->line, v[i].insns, v[i].cycles, v[i].calls};
	}
	qsort(l, n, sizeof(*l), cmp_line);
	json_t *a = json_array();
	struct srcfile sf = {0};
	for (size_t i = 0; i < n;) {
		struct line_acc t = l[i];
		size_t j = i + 1;
		for (; j < n && !cmp_line(&l[j], &t); j++) {
			t.insns += l[j].insns;
			t.cycles += l[j].cycles;
			t.calls += l[j].calls;
		}
		json_t *o = json_object();
		json_object_set_new(o, "file", t.file ? json_string(t.file) : json_null());
		json_object_set_new(o, "line", json_integer(t.line));
		put_counts(o, t.insns, t.cycles, t.calls, cyc);
		const char *text = src_text(&sf, t.file, t.line);
		if (text)
			json_object_set_new(o, "text", json_string(text));
		json_array_append_new(a, o);
		i = j;
	}
	free(sf.path);
	free(sf.buf);
	free(sf.lines);
	free(l);
	return a;
}

static json_t *insn_obj(const struct profile_site *s, const struct acc *c, const char *text,
			int cyc)
{
	json_t *o = json_object(), *inl = json_array();
	json_object_set_new(o, "pc", hex(s->pc));
	json_object_set_new(o, "addr", hex(s->link));
	put_counts(o, c ? c->insns : 0, c ? c->cycles : 0, c ? c->calls : 0, cyc);
	json_object_set_new(o, "file", s->file ? json_string(s->file) : json_null());
	json_object_set_new(o, "line", json_integer(s->line));
	for (uint32_t k = 0; k < s->ninl; k++)
		json_array_append_new(inl, json_string(s->inl[k].name));
	json_object_set_new(o, "inlined", inl);
	if (text)
		json_object_set_new(o, "asm", json_string(text));
	return o;
}

struct annot_ctx {
	const struct annot_binary *bins;
	size_t nbins;
};

static const char *binary_path(const struct annot_ctx *a, const struct profile_site *s)
{
	for (size_t i = 0; s->build_id && i < a->nbins; i++)
		if (a->bins[i].build_id && !strcmp(a->bins[i].build_id, s->build_id))
			return a->bins[i].path;
	return s->binary;
}

/* Every instruction objdump lists over the counted range (those it does not
 * list but that ran are kept too), else the counted ones. */
static json_t *disasm_insns(const struct profile *p, const struct acc *v, size_t n, int cyc,
			    json_t *doc, const struct annot_ctx *ax)
{
	json_t *a = json_array();
	const struct profile_site *first = profile_site(p, v[0].site);
	const struct profile_site *last = profile_site(p, v[n - 1].site);
	struct disasm d = {0};
	struct oob_err e = {0};
	const char *path = binary_path(ax, first);
	if (!path)
		oob_err_set(&e, -ENOENT, "no binary is mapped at 0x%" PRIx64, first->pc);
	else if (disasm_range(path, first->link, last->link + 4, &d, &e) == 0)
		json_object_set_new(doc, "disassembler", json_string(disasm_tool()));
	if (e.code && !json_object_get(doc, "disasm_error"))
		json_object_set_new(doc, "disasm_error", json_string(e.msg));
	size_t i = 0;
	for (size_t k = 0; k < d.n; k++) {
		uint64_t at = d.v[k].addr;
		for (; i < n && profile_site(p, v[i].site)->link < at; i++)
			json_array_append_new(
			    a, insn_obj(profile_site(p, v[i].site), &v[i], NULL, cyc));
		if (i < n && profile_site(p, v[i].site)->link == at) {
			json_array_append_new(
			    a, insn_obj(profile_site(p, v[i].site), &v[i], d.v[k].text, cyc));
			i++;
		} else {
			struct profile_site s = {.pc = at - first->link + first->pc, .link = at};
			json_array_append_new(a, insn_obj(&s, NULL, d.v[k].text, cyc));
		}
	}
	for (; i < n; i++)
		json_array_append_new(a, insn_obj(profile_site(p, v[i].site), &v[i], NULL, cyc));
	disasm_free(&d);
	return a;
}

static json_t *function_obj(const struct profile *p, uint32_t f, const struct acc *v, size_t n,
			    enum annot_view view, json_t *doc, const struct annot_ctx *a)
{
	const struct profile_frame *fr = profile_frame(p, f);
	int cyc = profile_has_cycles(p);
	uint64_t t[3] = {0, 0, 0};
	for (size_t i = 0; i < n; i++) {
		t[0] += v[i].insns;
		t[1] += v[i].cycles;
		t[2] += v[i].calls;
	}
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(fr->name));
	json_object_set_new(o, "binary", fr->binary ? json_string(fr->binary) : json_null());
	json_object_set_new(o, "addr", hex(fr->addr));
	put_counts(o, t[0], t[1], t[2], cyc);
	if (view == ANNOT_SOURCE)
		json_object_set_new(o, "lines", source_lines(p, v, n, cyc));
	else
		json_object_set_new(o, "insns", disasm_insns(p, v, n, cyc, doc, a));
	return o;
}

json_t *annot_json(const struct profile *p, const char *fn, enum annot_view v,
		   const struct annot_binary *bins, size_t nbins, struct oob_err *err)
{
	struct annot_ctx a = {bins, nbins};
	if (!profile_npcs(p)) {
		oob_err_set(err, -ENODATA, "the profile has no per-pc counts (run with them)");
		return NULL;
	}
	json_t *doc = json_object(), *fns = json_array();
	json_object_set_new(doc, "function", json_string(fn));
	json_object_set_new(doc, "view", json_string(v == ANNOT_SOURCE ? "source" : "disasm"));
	json_object_set_new(doc, "cycles", json_boolean(profile_has_cycles(p)));
	json_object_set_new(doc, "disassembler", json_null());
	for (uint32_t f = 0; f < profile_nframes(p); f++) {
		if (strcmp(profile_frame(p, f)->name, fn))
			continue;
		size_t n;
		struct acc *acc = collect(p, f, &n);
		if (n)
			json_array_append_new(fns, function_obj(p, f, acc, n, v, doc, &a));
		free(acc);
	}
	json_object_set_new(doc, "functions", fns);
	if (!json_array_size(fns)) {
		json_decref(doc);
		oob_err_set(err, -ENOENT, "no instructions ran in a function named '%s'", fn);
		return NULL;
	}
	return doc;
}
