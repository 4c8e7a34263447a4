/*
 * The SVG flame graph: flamegraph.pl's picture (Brendan Gregg), drawn from
 * the calling-context tree instead of folded text. Root at the bottom, one
 * row per depth, each frame as wide as its total weight, children in name
 * order from the left edge of their parent. A frame narrower than 0.1 pixel
 * is not drawn (nor are its callees); its weight stays in its parent's.
 * Every drawn frame carries its exact total and self weight (data-t,
 * data-s) and a tooltip; a little script zooms into a clicked frame.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "export/export_impl.h"
#include "util/oob_mem.h"

#define ROW	  16	/* pixels per frame row */
#define PAD	  10	/* left and right margins */
#define TOP	  42	/* room for the title */
#define MIN_PX	  0.1	/* narrower frames are left out */
#define CHAR_PX	  7.0	/* average width of a 12 px Verdana character */
#define DEFAULT_W 1200u /* the image's width when none is asked */
#define MAX_ROWS  2048	/* deeper frames are not drawn (the title says so) */

struct svg {
	const struct profile *p;
	enum profile_metric m;
	FILE *f;
	double scale; /* pixels per weight unit */
	uint64_t total;
	unsigned base; /* the y of the bottom row */
	int cut;       /* frames deeper than MAX_ROWS were left out */
	int annotate;
};

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			/* Control bytes are not XML. */
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
}

/* flamegraph.pl's palettes: warm hues for user code, by a hash of the name
 * so that a function keeps its colour across graphs; kernel code orange-ish
 * as in its "--color=java" kernel frames; markers grey; processes blue. */
static void colour(const struct profile_frame *fr, char *buf, size_t n)
{
	unsigned h = 2166136261u;
	for (const char *s = fr->name; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	unsigned a = h % 55, b = (h >> 8) % 80;
	switch (fr->kind) {
	case PROFILE_FRAME_KERNEL:
		snprintf(buf, n, "rgb(%u,%u,%u)", 200 + a % 55, 110 + b, 40);
		break;
	case PROFILE_FRAME_MARKER:
		snprintf(buf, n, "rgb(%u,%u,%u)", 160 + a / 2, 160 + a / 2, 160 + a / 2);
		break;
	case PROFILE_FRAME_PROCESS:
		snprintf(buf, n, "rgb(%u,%u,%u)", 80 + a, 130 + b / 2, 230);
		break;
	case PROFILE_FRAME_INLINE:
		snprintf(buf, n, "rgb(%u,%u,%u)", 90 + a, 190 + b / 2, 90 + a);
		break;
	case PROFILE_FRAME_FIRMWARE:
		snprintf(buf, n, "rgb(%u,%u,%u)", 150 + a, 110 + b / 2, 200);
		break;
	default:
		snprintf(buf, n, "rgb(%u,%u,%u)", 205 + a, 80 + b * 2, 55 + b / 2);
	}
}

static int by_name(const void *a, const void *b, void *ctx)
{
	const struct profile *p = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(profile_frame(p, profile_node(p, x)->frame)->name,
		       profile_frame(p, profile_node(p, y)->frame)->name);
	return c ? c : (x > y) - (x < y);
}

static void frame(struct svg *s, uint32_t id, double x, unsigned depth, double width)
{
	const struct profile_node *nd = profile_node(s->p, id);
	const struct profile_frame *fr = profile_frame(s->p, nd->frame);
	uint64_t t = profile_node_total(nd, s->m), self = profile_node_self(nd, s->m);
	char fill[32];
	colour(fr, fill, sizeof(fill));
	int kernel = s->annotate && fr->kind == PROFILE_FRAME_KERNEL;
	fprintf(s->f, "<g class=\"f\" data-t=\"%llu\" data-s=\"%llu\" data-d=\"%u\"><title>",
		(unsigned long long)t, (unsigned long long)self, depth);
	xml_text(s->f, fr->name);
	fprintf(s->f, "%s (%llu %s, %.2f%%)</title>", kernel ? "_[k]" : "", (unsigned long long)t,
		profile_metric_name(s->m), 100.0 * (double)t / (double)s->total);
	unsigned y = s->base - depth * ROW;
	fprintf(s->f,
		"<rect x=\"%.3f\" y=\"%u\" width=\"%.3f\" height=\"%u\" fill=\"%s\" rx=\"2\"/>",
		PAD + x, y, width, ROW - 1, fill);
	size_t fit = width > 3 * CHAR_PX ? (size_t)((width - 6) / CHAR_PX) : 0;
	fprintf(s->f, "<text x=\"%.3f\" y=\"%u\">", PAD + x + 3, y + ROW - 4);
	if (fit >= strlen(fr->name)) {
		xml_text(s->f, fr->name);
	} else if (fit > 2) {
		char *cut = oob_xstrdup(fr->name);
		cut[fit - 2] = '\0';
		xml_text(s->f, cut);
		fputs("..", s->f);
		free(cut);
	}
	fputs("</text></g>\n", s->f);
}

/* Draws the children of node id (drawn at depth - 1, from x) and theirs. */
static void children(struct svg *s, uint32_t id, double x, unsigned depth)
{
	size_t n = 0;
	for (uint32_t c = profile_node(s->p, id)->first_child; c != PROFILE_NONE;
	     c = profile_node(s->p, c)->next_sibling)
		n++;
	if (!n)
		return;
	uint32_t *v = oob_xmalloc(n * sizeof(*v));
	n = 0;
	for (uint32_t c = profile_node(s->p, id)->first_child; c != PROFILE_NONE;
	     c = profile_node(s->p, c)->next_sibling)
		v[n++] = c;
	qsort_r(v, n, sizeof(*v), by_name, (void *)s->p);
	for (size_t i = 0; i < n; i++) {
		double w = (double)profile_node_total(profile_node(s->p, v[i]), s->m) * s->scale;
		if (w >= MIN_PX && depth < MAX_ROWS) {
			frame(s, v[i], x, depth, w);
			children(s, v[i], x, depth + 1);
		}
		x += w;
	}
	free(v);
}

/* The script: a click zooms into a frame (its ancestors stay, full width);
 * a click on "all" or Escape resets. Frames hold their geometry in the
 * rect; the original is kept in data attributes on first zoom. */
static const char script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "var gs=[].slice.call(document.querySelectorAll('g.f')),W=%u,P=%u;\n"
    "gs.forEach(function(g){var r=g.querySelector('rect');g.ox=+r.getAttribute('x');"
    "g.ow=+r.getAttribute('width');g.onclick=function(){zoom(g)};});\n"
    "function label(g,w){var t=g.querySelector('text'),n=g.querySelector('title')"
    ".textContent.replace(/ \\([^(]*\\)$/,''),k=Math.floor((w-6)/7);"
    "t.textContent=w<21?'':(n.length<=k?n:n.slice(0,k-2)+'..');}\n"
    "function zoom(z){var x0=z.ox,w0=z.ow,s=(W-2*P)/w0,d=+z.getAttribute('data-d');"
    "gs.forEach(function(g){var r=g.querySelector('rect'),t=g.querySelector('text'),"
    "gd=+g.getAttribute('data-d'),in_=gd>=d&&g.ox>=x0-1e-6&&g.ox+g.ow<=x0+w0+1e-6,"
    "up=gd<d&&g.ox<=x0+1e-6&&g.ox+g.ow>=x0+w0-1e-6,show=in_||up;"
    "g.style.display=show?'':'none';if(!show)return;"
    "var x=in_?P+(g.ox-x0)*s:P,w=in_?g.ow*s:W-2*P;r.setAttribute('x',x);"
    "r.setAttribute('width',w);t.setAttribute('x',x+3);label(g,w);});}\n"
    "document.addEventListener('keydown',function(e){if(e.key==='Escape')zoom(gs[0]);});\n"
    "]]></script>\n";

/* The rows the drawing needs: the deepest frame at least MIN_PX wide. */
static unsigned rows_needed(struct svg *s, uint32_t id, unsigned depth)
{
	unsigned deepest = depth;
	for (uint32_t c = profile_node(s->p, id)->first_child; c != PROFILE_NONE;
	     c = profile_node(s->p, c)->next_sibling) {
		double w = (double)profile_node_total(profile_node(s->p, c), s->m) * s->scale;
		unsigned d = depth;
		if (w >= MIN_PX && depth + 1 < MAX_ROWS)
			d = rows_needed(s, c, depth + 1);
		else if (w >= MIN_PX)
			s->cut = 1;
		deepest = d > deepest ? d : deepest;
	}
	return deepest;
}

int export_svg(const struct profile *p, const struct export_opts *o, FILE *out, struct oob_err *err)
{
	unsigned width = o->width ? o->width : DEFAULT_W;
	const struct profile_node *root = profile_node(p, 0);
	struct svg s = {.p = p, .m = o->metric, .f = out, .annotate = o->annotate};
	s.total = profile_node_total(root, o->metric);
	if (!s.total)
		return oob_err_set(err, -EINVAL, "flame graph: the profile has no %s",
				   profile_metric_name(o->metric));
	s.scale = (double)(width - 2 * PAD) / (double)s.total;
	unsigned rows = rows_needed(&s, 0, 0) + 1, height = TOP + rows * ROW + PAD;
	s.base = TOP + (rows - 1) * ROW; /* the y of the bottom row, "all" */
	fprintf(out,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>text{font-family:Verdana,sans-serif;font-size:12px;fill:#000;"
		"pointer-events:none}g.f:hover rect{stroke:#000;stroke-width:0.5}"
		"g.f{cursor:pointer}</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text x=\"%u\" y=\"24\" style=\"font-size:17px\" text-anchor=\"middle\">",
		width, height, width, height, width / 2);
	xml_text(out, o->name ? o->name : "Flame Graph");
	fprintf(out, " (%s, %s)%s</text>\n", profile_metric_name(o->metric), export_tool_name(),
		s.cut ? ": frames deeper than 2048 not drawn" : "");
	fprintf(out,
		"<g class=\"f\" data-t=\"%llu\" data-s=\"%llu\" data-d=\"0\"><title>all "
		"(%llu %s, 100%%)</title><rect x=\"%u\" y=\"%u\" width=\"%u\" height=\"%u\" "
		"fill=\"rgb(230,230,230)\" rx=\"2\"/><text x=\"%u\" y=\"%u\">all</text></g>\n",
		(unsigned long long)s.total, (unsigned long long)profile_node_self(root, o->metric),
		(unsigned long long)s.total, profile_metric_name(o->metric), PAD, s.base,
		width - 2 * PAD, ROW - 1, PAD + 3, s.base + ROW - 4);
	children(&s, 0, 0, 1);
	fprintf(out, script, width, PAD);
	fputs("</svg>\n", out);
	return 0;
}
