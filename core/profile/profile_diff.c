#include "profile/profile_diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/oob_mem.h"

/* One keyed weight of one side. */
struct kw {
	char *key;
	double self, total;
};

struct side {
	const struct profile *p;
	enum profile_metric m;
	double whole;
	int sampled;
};

static int kw_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kw *)a)->key, ((const struct kw *)b)->key);
}

/* Sorted by key, equal keys summed. */
static size_t kw_fold(struct kw *v, size_t n)
{
	size_t k = 0;
	qsort(v, n, sizeof(*v), kw_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(v[k - 1].key, v[i].key)) {
			v[k - 1].self += v[i].self;
			v[k - 1].total += v[i].total;
			free(v[i].key);
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

static size_t functions(const struct side *s, struct kw **out)
{
	struct profile_func *f;
	size_t n = profile_functions(s->p, s->m, &f);
	struct kw *v = oob_xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		const struct profile_node fake = {.self_insns = f[i].self_insns,
						  .total_insns = f[i].total_insns,
						  .self_cycles = f[i].self_cycles,
						  .total_cycles = f[i].total_cycles,
						  .calls = f[i].calls};
		v[i] = (struct kw){oob_xstrdup(profile_frame(s->p, f[i].frame)->name),
				   (double)profile_node_self(&fake, s->m),
				   (double)profile_node_total(&fake, s->m)};
	}
	free(f);
	*out = v;
	return kw_fold(v, n);
}

/* Every node with self weight, keyed by its folded path. */
static size_t stacks(const struct side *s, struct kw **out)
{
	size_t nn = profile_nnodes(s->p), k = 0;
	char **path = oob_xcalloc(nn, sizeof(*path));
	struct kw *v = oob_xcalloc(nn + 1, sizeof(*v));
	path[0] = oob_xstrdup("");
	for (size_t i = 1; i < nn; i++) {
		const struct profile_node *n = profile_node(s->p, (uint32_t)i);
		const char *pp = path[n->parent], *name = profile_frame(s->p, n->frame)->name;
		size_t a = strlen(pp), b = strlen(name);
		path[i] = oob_xmalloc(a + b + 2);
		memcpy(path[i], pp, a);
		path[i][a] = a ? ';' : 0;
		memcpy(path[i] + a + (a ? 1 : 0), name, b + 1);
	}
	for (size_t i = 0; i < nn; i++) {
		uint64_t w = profile_node_self(profile_node(s->p, (uint32_t)i), s->m);
		if (w)
			v[k++] = (struct kw){oob_xstrdup(i ? path[i] : "[root]"), (double)w, 0};
	}
	for (size_t i = 0; i < nn; i++)
		free(path[i]);
	free(path);
	*out = v;
	return kw_fold(v, k);
}

/* Standard error of other - base at base share pb (NAN: no bound). */
static double sigma(const struct side *a, const struct side *b, double pa, double pb)
{
	if (a->sampled && b->sampled) {
		double p = (pa * a->whole + pb * b->whole) / (a->whole + b->whole);
		return sqrt(p * (1 - p) * (1 / a->whole + 1 / b->whole));
	}
	if (a->sampled != b->sampled) {
		const struct side *s = a->sampled ? a : b;
		double pe = a->sampled ? pb : pa;
		return sqrt(pe * (1 - pe) / s->whole);
	}
	return NAN;
}

/* P(X = k) for X ~ Binomial(n, p), 0 < p < 1. */
static double binom_pmf(double n, double k, double p)
{
	return exp(lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1) + k * log(p) +
		   (n - k) * log1p(-p));
}

/* P(X >= k) (up) or P(X <= k): summed away from the mode, where the terms
 * only shrink, until they no longer change the sum. */
static double binom_tail(double n, double k, double p, int up)
{
	double sum = 0;
	for (double j = k; j >= 0 && j <= n; j += up ? 1 : -1) {
		double t = binom_pmf(n, j, p);
		sum += t;
		if (t < sum * 1e-17)
			break;
	}
	return sum;
}

/* Whether other - base is what sampling explains: 3 sigma, or where one
 * side is exact, the exact binomial tail beyond the count seen, 0.135 % each
 * way as for 3 sigma. Where few samples make sigma the normal tail is far
 * too thin: one sample of a share of 1e-4 in 200 is no error, nor are 19 of
 * a share of 4.8e-5 in 200,000 (9.6 expected, 3.04 sigma, a tail of 0.47 %:
 * one CI run's _setjmp). Beyond 1e4 for n p (1 - p) the skew is under 1 %
 * and the sum would be long: 3 sigma stands. */
static int within_bound(const struct side *a, const struct side *b, double pa, double pb, double s)
{
	if (fabs(pb - pa) <= 3 * s + 1e-12)
		return 1;
	if (a->sampled == b->sampled)
		return 0;
	double n = a->sampled ? a->whole : b->whole, p = a->sampled ? pb : pa;
	double k = round((a->sampled ? pa : pb) * n);
	if (p <= 0 || p >= 1 || n * p * (1 - p) >= 1e4)
		return 0;
	return binom_tail(n, k, p, k > n * p) >= 0.00135;
}

struct row {
	const char *key;
	double a, b, ta, tb; /* self and total shares */
};

static int row_cmp(const void *x, const void *y)
{
	const struct row *r = x, *s = y;
	double d = fabs(s->b - s->a) - fabs(r->b - r->a);
	return d > 0 ? 1 : d < 0 ? -1 : strcmp(r->key, s->key);
}

/* Merged rows of two sorted keyed lists, as shares, by |delta| desc. */
static size_t merge(struct kw *x, size_t nx, double wx, struct kw *y, size_t ny, double wy,
		    struct row **out)
{
	struct row *r = oob_xcalloc(nx + ny + 1, sizeof(*r));
	size_t i = 0, j = 0, k = 0;
	wx = wx > 0 ? wx : 1;
	wy = wy > 0 ? wy : 1;
	while (i < nx || j < ny) {
		int c = i == nx ? 1 : j == ny ? -1 : strcmp(x[i].key, y[j].key);
		struct row *o = &r[k++];
		o->key = c <= 0 ? x[i].key : y[j].key;
		if (c <= 0) {
			o->a = x[i].self / wx;
			o->ta = x[i].total / wx;
			i++;
		}
		if (c >= 0) {
			o->b = y[j].self / wy;
			o->tb = y[j].total / wy;
			j++;
		}
	}
	qsort(r, k, sizeof(*r), row_cmp);
	*out = r;
	return k;
}

static json_t *side_json(const struct side *s)
{
	const struct profile_stats *st = profile_stats(s->p);
	return json_pack(
	    "{s:s, s:s, s:b, s:f, s:I, s:I, s:I}", "format", st->format ? st->format : "unknown",
	    "metric", s->sampled ? "samples" : profile_metric_name(s->m), "sampled", s->sampled,
	    "total", s->whole, "samples", (json_int_t)st->samples, "failed_walks",
	    (json_int_t)st->failed_walks, "truncated_walks", (json_int_t)st->truncated_walks);
}

/* ---- the differential flame graph ---- */

struct kid {
	const char *name;
	uint32_t na, nb; /* node ids, PROFILE_NONE when absent on that side */
};

static int kid_cmp(const void *x, const void *y)
{
	return strcmp(((const struct kid *)x)->name, ((const struct kid *)y)->name);
}

static json_t *flame(const struct side *a, const struct side *b, uint32_t na, uint32_t nb,
		     const char *name)
{
	double ta =
	    na == PROFILE_NONE ? 0 : (double)profile_node_total(profile_node(a->p, na), a->m);
	double tb =
	    nb == PROFILE_NONE ? 0 : (double)profile_node_total(profile_node(b->p, nb), b->m);
	double sa = a->whole > 0 ? ta / a->whole : 0, sb = b->whole > 0 ? tb / b->whole : 0;
	json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f}", "name", name, "value", tb, "delta",
			      tb - sa * b->whole, "base_share", sa, "other_share", sb);
	size_t n = 0, cap = 0;
	struct kid *k = NULL;
	for (int side = 0; side < 2; side++) {
		const struct profile *p = side ? b->p : a->p;
		uint32_t id = side ? nb : na;
		if (id == PROFILE_NONE)
			continue;
		for (uint32_t c = profile_node(p, id)->first_child; c != PROFILE_NONE;
		     c = profile_node(p, c)->next_sibling) {
			oob_xgrow((void **)&k, &cap, n + 1, sizeof(*k));
			k[n++] = (struct kid){profile_frame(p, profile_node(p, c)->frame)->name,
					      side ? PROFILE_NONE : c, side ? c : PROFILE_NONE};
		}
	}
	if (n) /* k is NULL for a leaf on both sides */
		qsort(k, n, sizeof(*k), kid_cmp);
	json_t *kids = json_array();
	for (size_t i = 0; i < n;) {
		struct kid m = k[i++];
		while (i < n && !strcmp(k[i].name, m.name)) { /* same name on both sides */
			if (k[i].na != PROFILE_NONE && m.na == PROFILE_NONE)
				m.na = k[i].na;
			if (k[i].nb != PROFILE_NONE && m.nb == PROFILE_NONE)
				m.nb = k[i].nb;
			i++;
		}
		json_array_append_new(kids, flame(a, b, m.na, m.nb, m.name));
	}
	free(k);
	json_object_set_new(o, "children", kids);
	return o;
}

/* ---- the whole ---- */

static json_t *rows_json(const struct row *r, size_t n, const struct side *a, const struct side *b,
			 int funcs, size_t *outside)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s, s:f, s:f, s:f}", funcs ? "name" : "stack", r[i].key,
				      "base", r[i].a, "other", r[i].b, "delta", r[i].b - r[i].a);
		if (funcs) {
			json_object_set_new(o, "base_total", json_real(r[i].ta));
			json_object_set_new(o, "other_total", json_real(r[i].tb));
			double s = sigma(a, b, r[i].a, r[i].b);
			if (!isnan(s)) {
				int in = within_bound(a, b, r[i].a, r[i].b, s);
				json_object_set_new(o, "sigma", json_real(s));
				json_object_set_new(o, "within_bound", json_boolean(in));
				*outside += !in;
			}
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

static double tv_error(const struct row *r, size_t n)
{
	double e = 0;
	for (size_t i = 0; i < n; i++)
		e += fabs(r[i].a - r[i].b);
	return e / 2;
}

static json_t *names_by_sign(const struct row *r, size_t n, int sign, size_t top)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n && json_array_size(arr) < top; i++) {
		double d = r[i].b - r[i].a;
		if ((sign > 0 && d > 0) || (sign < 0 && d < 0))
			json_array_append_new(
			    arr, json_pack("{s:s, s:f}", "name", r[i].key, "delta", d));
	}
	return arr;
}

json_t *profile_diff_json(const struct profile *base, const struct profile *other,
			  const struct profile_diff_opts *o)
{
	struct side a = {base, o->metric_base, 0, profile_stats(base)->sampled};
	struct side b = {other, o->metric_other, 0, profile_stats(other)->sampled};
	a.whole = (double)profile_node_total(profile_node(base, 0), a.m);
	b.whole = (double)profile_node_total(profile_node(other, 0), b.m);
	struct kw *fa, *fb, *sa, *sb;
	size_t nfa = functions(&a, &fa), nfb = functions(&b, &fb);
	size_t nsa = stacks(&a, &sa), nsb = stacks(&b, &sb);
	struct row *fr, *sr;
	size_t nf = merge(fa, nfa, a.whole, fb, nfb, b.whole, &fr);
	size_t ns = merge(sa, nsa, a.whole, sb, nsb, b.whole, &sr);
	size_t outside = 0, top = o->top ? o->top : 10;
	json_t *funcs = rows_json(fr, nf, &a, &b, 1, &outside);
	int bounded = a.sampled != b.sampled || (a.sampled && b.sampled);
	json_t *sum =
	    json_pack("{s:f, s:f, s:f, s:I, s:I, s:o, s:o}", "function_error", tv_error(fr, nf),
		      "stack_error", tv_error(sr, ns), "max_function_delta",
		      nf ? fabs(fr[0].b - fr[0].a) : 0.0, "functions", (json_int_t)nf, "stacks",
		      (json_int_t)ns, "over", names_by_sign(fr, nf, 1, top), "under",
		      names_by_sign(fr, nf, -1, top));
	json_object_set_new(sum, "bound", bounded ? json_string("binomial, 3 sigma") : json_null());
	json_object_set_new(sum, "outside_bound",
			    bounded ? json_integer((json_int_t)outside) : json_null());
	json_t *root = json_pack("{s:o, s:o, s:o, s:o}", "base", side_json(&a), "other",
				 side_json(&b), "summary", sum, "functions", funcs);
	if (o->with_stacks)
		json_object_set_new(root, "stacks", rows_json(sr, ns, &a, &b, 0, &outside));
	if (o->with_flame)
		json_object_set_new(root, "flame", flame(&a, &b, 0, 0, "root"));
	for (size_t i = 0; i < nfa; i++)
		free(fa[i].key);
	for (size_t i = 0; i < nfb; i++)
		free(fb[i].key);
	for (size_t i = 0; i < nsa; i++)
		free(sa[i].key);
	for (size_t i = 0; i < nsb; i++)
		free(sb[i].key);
	free(fa), free(fb), free(sa), free(sb), free(fr), free(sr);
	return root;
}
