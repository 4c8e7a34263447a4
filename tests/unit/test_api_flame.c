/* api_flame: the d3-flame-graph document of real profiles, checked against
 * the core's folded stacks of the same profiles (profile_write_folded, a
 * separate implementation), and its bounds and filters. */
#include "api_flame.h"
#include "result.h"
#include "server_testprof.h"

#include <stdint.h>

static char tmpdir[256];
static struct profile *mixed, *spike, *spike_all;
static struct result *rmixed, *rspike, *rspike_all;

struct pw {
	char *path;
	uint64_t w;
};

struct pwlist {
	struct pw *v;
	size_t n, cap;
};

static void pw_add(struct pwlist *l, const char *path, uint64_t w)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n].path = strdup(path);
	l->v[l->n++].w = w;
}

static int pw_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pw *)a)->path, ((const struct pw *)b)->path);
}

/* Sorts and merges equal paths (distinct nodes may print alike), drops 0s. */
static void pw_norm(struct pwlist *l)
{
	qsort(l->v, l->n, sizeof(*l->v), pw_cmp);
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (k && !strcmp(l->v[k - 1].path, l->v[i].path)) {
			l->v[k - 1].w += l->v[i].w;
			free(l->v[i].path);
		} else {
			l->v[k++] = l->v[i];
		}
	}
	l->n = k;
	k = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].w)
			l->v[k++] = l->v[i];
		else
			free(l->v[i].path);
	}
	l->n = k;
}

static void pw_free(struct pwlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
}

static void folded_paths(const char *text, struct pwlist *l)
{
	const char *s = text;
	while (*s) {
		const char *nl = strchr(s, '\n'), *sp;
		size_t n = nl ? (size_t)(nl - s) : strlen(s);
		char *line = strndup(s, n);
		sp = strrchr(line, ' ');
		if (sp) {
			line[sp - line] = '\0';
			pw_add(l, line, strtoull(sp + 1, NULL, 10));
		}
		free(line);
		s += n + (nl ? 1 : 0);
	}
}

/* Self weight per path from the flame graph: value minus children's values. */
static void flame_paths(json_t *node, const char *prefix, struct pwlist *l, int root_unknown)
{
	json_t *kids = json_object_get(node, "children");
	uint64_t kidsum = 0;
	size_t i;
	json_t *k;
	json_array_foreach(kids, i, k)
	{
		kidsum += (uint64_t)json_integer_value(json_object_get(k, "value"));
		const char *name = json_string_value(json_object_get(k, "name"));
		size_t n = strlen(prefix) + strlen(name) + 2;
		char *path = malloc(n);
		snprintf(path, n, "%s%s%s", prefix, *prefix ? ";" : "", name);
		for (char *c = path + strlen(prefix) + (*prefix ? 1 : 0); *c; c++)
			if (*c == ';')
				*c = ':';
		flame_paths(k, path, l, 0);
		free(path);
	}
	uint64_t self = (uint64_t)json_integer_value(json_object_get(node, "value")) - kidsum;
	if (*prefix)
		pw_add(l, prefix, self);
	else if (root_unknown)
		pw_add(l, "[unknown]", self);
}

static size_t count_nodes(json_t *node)
{
	size_t n = 1, i;
	json_t *k;
	json_array_foreach(json_object_get(node, "children"), i, k) n += count_nodes(k);
	return n;
}

static void check_against_folded(struct profile *p, struct result *r, enum profile_metric m)
{
	struct api_flame_opts o = {.metric = m};
	json_t *fg = api_flame_build(result_profile(r), result_partial(r), &o);
	struct pwlist a = {0}, b = {0};
	char *folded = testprof_folded(p, m, 0);
	folded_paths(folded, &a);
	free(folded);
	flame_paths(fg, "", &b, m != PROFILE_CALLS);
	pw_norm(&a);
	pw_norm(&b);
	int same = a.n == b.n;
	for (size_t i = 0; same && i < a.n; i++)
		same = !strcmp(a.v[i].path, b.v[i].path) && a.v[i].w == b.v[i].w;
	if (!same)
		fprintf(stderr, "metric %s: %zu folded paths, %zu flame paths\n",
			profile_metric_name(m), a.n, b.n);
	uint64_t root = (uint64_t)json_integer_value(json_object_get(fg, "value"));
	pw_free(&a);
	pw_free(&b);
	json_decref(fg);
	CHECK(same);
	if (m == PROFILE_INSNS)
		CHECK_EQ(root, profile_stats(p)->instructions);
}

static void flame_equals_core_folded_mixed(void)
{
	if (!mixed)
		SKIP("tests/gen/progs/mixed.oobt not generated");
	check_against_folded(mixed, rmixed, PROFILE_INSNS);
	check_against_folded(mixed, rmixed, PROFILE_CALLS);
}

static void flame_equals_core_folded_spike(void)
{
	if (!spike)
		SKIP("Spike fixture not found");
	check_against_folded(spike, rspike, PROFILE_INSNS);
	check_against_folded(spike, rspike, PROFILE_CALLS);
	if (profile_has_cycles(spike))
		check_against_folded(spike, rspike, PROFILE_CYCLES);
}

/* Finds the node of a path in a graph (names joined by ';'), or NULL. */
static json_t *find_path(json_t *node, const char *path)
{
	if (!*path)
		return node;
	const char *semi = strchr(path, ';');
	size_t n = semi ? (size_t)(semi - path) : strlen(path), i;
	json_t *k;
	json_array_foreach(json_object_get(node, "children"), i, k)
	{
		const char *name = json_string_value(json_object_get(k, "name"));
		if (strlen(name) == n && !strncmp(name, path, n))
			return find_path(k, semi ? semi + 1 : "");
	}
	return NULL;
}

struct walk {
	json_t *full;
	uint64_t min_kept;
	int mismatches;
};

static void compare_kept(json_t *node, const char *prefix, struct walk *w)
{
	json_t *twin = find_path(w->full, prefix);
	uint64_t v = (uint64_t)json_integer_value(json_object_get(node, "value"));
	if (!twin || (uint64_t)json_integer_value(json_object_get(twin, "value")) != v)
		w->mismatches++;
	if (v < w->min_kept)
		w->min_kept = v;
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(node, "children"), i, k)
	{
		char path[8192];
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? ";" : "",
			 json_string_value(json_object_get(k, "name")));
		compare_kept(k, path, w);
	}
}

/* Largest value among the full graph's nodes that the bounded one lacks. */
static uint64_t max_dropped(json_t *full, json_t *bounded, const char *prefix)
{
	uint64_t worst = 0;
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(full, "children"), i, k)
	{
		char path[8192];
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? ";" : "",
			 json_string_value(json_object_get(k, "name")));
		uint64_t v = (uint64_t)json_integer_value(json_object_get(k, "value"));
		uint64_t sub = find_path(bounded, path) ? max_dropped(k, bounded, path) : v;
		if (sub > worst)
			worst = sub;
	}
	return worst;
}

static void max_nodes_merges_the_smallest(void)
{
	struct result *r = rspike ? rspike : rmixed;
	if (!r)
		SKIP("no profile available");
	struct api_flame_opts o = {.metric = PROFILE_INSNS};
	json_t *full = api_flame_build(result_profile(r), result_partial(r), &o);
	size_t nfull = count_nodes(full);
	CHECK(nfull > 60);
	for (size_t bound = 1; bound <= 50; bound += 7) {
		o.max_nodes = bound;
		json_t *b = api_flame_build(result_profile(r), result_partial(r), &o);
		CHECK_EQ(count_nodes(b), bound);
		CHECK_EQ(json_integer_value(json_object_get(b, "nodes")), bound);
		CHECK_EQ(json_integer_value(json_object_get(b, "merged")), nfull - bound);
		struct walk w = {full, UINT64_MAX, 0};
		compare_kept(b, "", &w);
		CHECK_EQ(w.mismatches, 0);
		/* Merged nodes are never bigger than kept ones. */
		CHECK(max_dropped(full, b, "") <= w.min_kept);
		json_decref(b);
	}
	json_decref(full);
}

/* Kernel-only and user-only graphs split the weight as the annotated folded
 * stacks do: leaf "_[k]" or a marker "[...]" is kernel, the rest user. */
static void priv_filters_split_the_weight(void)
{
	if (!spike)
		SKIP("Spike fixture not found");
	char *folded = testprof_folded(spike, PROFILE_INSNS, 1);
	struct pwlist l = {0};
	folded_paths(folded, &l);
	free(folded);
	uint64_t kernel = 0, user = 0, root = profile_node(spike, 0)->self_insns;
	int root_seen = 0;
	for (size_t i = 0; i < l.n; i++) {
		const char *leaf = strrchr(l.v[i].path, ';');
		leaf = leaf ? leaf + 1 : l.v[i].path;
		size_t n = strlen(leaf);
		if (!strcmp(l.v[i].path, "[unknown]") && l.v[i].w == root && !root_seen)
			root_seen = 1; /* the root's own weight: neither */
		else if ((n > 4 && !strcmp(leaf + n - 4, "_[k]")) || leaf[0] == '[')
			kernel += l.v[i].w;
		else
			user += l.v[i].w;
	}
	pw_free(&l);
	CHECK(kernel > 0 && user > 0);
	struct api_flame_opts o = {.metric = PROFILE_INSNS, .priv = API_PRIV_KERNEL};
	json_t *k = api_flame_build(result_profile(rspike), result_partial(rspike), &o);
	o.priv = API_PRIV_USER;
	json_t *u = api_flame_build(result_profile(rspike), result_partial(rspike), &o);
	CHECK_EQ(json_integer_value(json_object_get(k, "value")), kernel);
	CHECK_EQ(json_integer_value(json_object_get(u, "value")), user);
	json_decref(k);
	json_decref(u);
	enum api_priv pv;
	CHECK_EQ(api_flame_parse_priv("kernel", &pv), 0);
	CHECK_EQ(pv, API_PRIV_KERNEL);
	CHECK_EQ(api_flame_parse_priv("hypervisor", &pv), -EINVAL);
}

/* main's frame carries its source file and its declaration line, which we
 * look up in the source with a pattern: an independent reading. */
static void frames_carry_source_and_kind(void)
{
	if (!rmixed)
		SKIP("tests/gen/progs/mixed.oobt not generated");
	FILE *src = fopen(oobtest_src("tests/fixtures/progs/mixed.c"), "r");
	CHECK(src != NULL);
	char line[1024];
	int lineno = 0, main_line = 0;
	while (fgets(line, sizeof(line), src)) {
		lineno++;
		if (!main_line && strncmp(line, "int main(", 9) == 0)
			main_line = lineno;
	}
	fclose(src);
	CHECK(main_line > 0);
	struct api_flame_opts o = {.metric = PROFILE_INSNS};
	json_t *fg = api_flame_build(result_profile(rmixed), result_partial(rmixed), &o), *m = NULL;
	size_t i;
	json_t *k;
	/* main sits below the start-up frames: search the whole tree. */
	json_t *stack[4096];
	size_t sp = 0;
	stack[sp++] = fg;
	while (sp && !m) {
		json_t *n = stack[--sp];
		json_array_foreach(json_object_get(n, "children"), i, k)
		{
			if (!strcmp(json_string_value(json_object_get(k, "name")), "main"))
				m = k;
			else if (sp < 4096)
				stack[sp++] = k;
		}
	}
	CHECK(m != NULL);
	CHECK_STR(json_string_value(json_object_get(m, "libtype")), "user");
	CHECK_EQ(json_integer_value(json_object_get(m, "line")), main_line);
	const char *file = json_string_value(json_object_get(m, "file"));
	CHECK(file && strstr(file, "mixed.c"));
	CHECK_EQ(json_integer_value(json_object_get(m, "calls")), 1);
	CHECK_STR(json_string_value(json_object_get(fg, "libtype")), "root");
	json_decref(fg);
	CHECK_STR(api_flame_libtype(PROFILE_FRAME_MARKER), "marker");
	CHECK_STR(api_flame_libtype(PROFILE_FRAME_PROCESS), "process");
}

/* The whole Spike full-system run (/init forks four children, the last
 * execs /prog): the profile with several processes. NULL when absent. */
static struct profile *spike_full(void)
{
	const char *log = oobtest_gen("readers/spike.log"), *vmlinux = oobtest_gen("vmlinux");
	const char *init = oobtest_shared("fixtures/spike/init");
	const char *prog = oobtest_shared("fixtures/spike/prog");
	if (!log || !vmlinux || !init || !prog)
		return NULL;
	static char b[3][4096];
	snprintf(b[0], sizeof(b[0]), "%s", vmlinux);
	snprintf(b[1], sizeof(b[1]), "%s", init);
	snprintf(b[2], sizeof(b[2]), "%s", prog);
	struct recon_elf e[3] = {
	    {b[0], RECON_BASE_LINK}, {b[1], RECON_BASE_LINK}, {b[2], RECON_BASE_LINK}};
	struct recon_opts o = {.elfs = e, .nelfs = 3};
	struct profile *p = NULL;
	struct oob_err err = {0};
	if (recon_run(&o, &log, 1, &p, &err) < 0) {
		fprintf(stderr, "recon_run(spike full): %s\n", err.msg);
		return NULL;
	}
	return p;
}

static uint64_t root_value(json_t *fg)
{
	return (uint64_t)json_integer_value(json_object_get(fg, "value"));
}

/* The folded paths of p whose first frame is named root, and the paths of
 * a filtered graph: the same weights by two implementations. */
static int same_paths_under(const struct profile *p, const char *root, json_t *fg)
{
	struct pwlist a = {0}, b = {0}, all = {0};
	char *folded = testprof_folded(p, PROFILE_INSNS, 0);
	folded_paths(folded, &all);
	free(folded);
	size_t n = strlen(root);
	for (size_t i = 0; i < all.n; i++)
		if (!strncmp(all.v[i].path, root, n) &&
		    (all.v[i].path[n] == ';' || !all.v[i].path[n]))
			pw_add(&a, all.v[i].path, all.v[i].w);
	flame_paths(fg, "", &b, 0);
	pw_norm(&a);
	pw_norm(&b);
	int same = a.n > 0 && a.n == b.n;
	for (size_t i = 0; same && i < a.n; i++)
		same = !strcmp(a.v[i].path, b.v[i].path) && a.v[i].w == b.v[i].w;
	if (!same)
		fprintf(stderr, "%s: %zu folded paths, %zu flame paths\n", root, a.n, b.n);
	pw_free(&a);
	pw_free(&b);
	pw_free(&all);
	return same;
}

/* Weight at depth 1 outside every process frame, plus the root's own. */
static uint64_t outside_processes(const struct profile *p)
{
	const struct profile_node *root = profile_node(p, 0);
	uint64_t w = root->self_insns;
	for (uint32_t c = root->first_child; c != PROFILE_NONE;
	     c = profile_node(p, c)->next_sibling)
		if (profile_frame(p, profile_node(p, c)->frame)->kind != PROFILE_FRAME_PROCESS)
			w += profile_node(p, c)->total_insns;
	return w;
}

/* ?pid=N: the graph of each process is exactly what the process tracker
 * counted for it (instructions user + kernel, a separate count kept by
 * recon), its paths are the folded stacks under its root frame, and the
 * processes together make the whole graph but for weight outside them. Run
 * on the profile as recon made it and as the server stores and reloads it. */
static void pid_filter_is_the_process(const struct profile *p, int partial)
{
	struct api_flame_opts all = {.metric = PROFILE_INSNS};
	json_t *full = api_flame_build(p, partial, &all);
	uint64_t total = root_value(full), sum = 0;
	json_decref(full);
	CHECK(profile_nprocesses(p) >= 5);
	for (size_t k = 0; k < profile_nprocesses(p); k++) {
		const struct profile_process *pr = profile_process(p, k);
		int first = 1;
		uint64_t want = 0;
		for (size_t j = 0; j < profile_nprocesses(p); j++) {
			const struct profile_process *q = profile_process(p, j);
			if (q->pid == pr->pid) {
				first &= j >= k;
				want += q->insns_user + q->insns_kernel;
			}
		}
		if (!first)
			continue; /* a pid shared with an earlier process: done there */
		char arg[32];
		snprintf(arg, sizeof(arg), "%lld", (long long)pr->pid);
		struct api_flame_opts o = {.metric = PROFILE_INSNS};
		struct oob_err e = {0};
		CHECK_EQ(api_flame_parse_pid(p, arg, &o, &e), 0);
		CHECK(o.by_pid && o.pid == pr->pid);
		json_t *fg = api_flame_build(p, partial, &o);
		uint64_t got = root_value(fg);
		CHECK_EQ(json_integer_value(json_object_get(fg, "pid")), pr->pid);
		int same =
		    pr->pid < 0 || same_paths_under(p, profile_frame(p, pr->frame)->name, fg);
		json_decref(fg);
		if (got != want)
			fprintf(stderr, "pid %lld: graph %llu, process %llu\n", (long long)pr->pid,
				(unsigned long long)got, (unsigned long long)want);
		CHECK_EQ(got, want);
		CHECK(same);
		sum += got;
	}
	CHECK(sum > 0);
	CHECK_EQ(sum, total - outside_processes(p));
}

static void pid_filter_spike_processes(void)
{
	if (!spike_all)
		SKIP("Spike full-system inputs not found (tests/gen/vmlinux, readers/spike.log)");
	pid_filter_is_the_process(spike_all, 0);
	CHECK(rspike_all != NULL);
	pid_filter_is_the_process(result_profile(rspike_all), result_partial(rspike_all));
}

/* Unknown pids and profiles without processes are refused, clearly. */
static void pid_filter_refusals(void)
{
	struct api_flame_opts o = {.metric = PROFILE_INSNS};
	struct oob_err e = {0};
	if (rspike_all) {
		const struct profile *p = result_profile(rspike_all);
		CHECK_EQ(api_flame_parse_pid(p, "424242", &o, &e), -ENOENT);
		CHECK(strstr(e.msg, "no process with pid 424242") != NULL);
		CHECK(!o.by_pid);
		CHECK_EQ(api_flame_parse_pid(p, "seventeen", &o, &e), -EINVAL);
		CHECK_EQ(api_flame_parse_pid(p, "-2", &o, &e), -EINVAL);
		CHECK_EQ(api_flame_parse_pid(p, "", &o, &e), -EINVAL);
	}
	if (!rmixed)
		SKIP("tests/gen/progs/mixed.oobt not generated");
	CHECK_EQ(profile_nprocesses(result_profile(rmixed)), 0);
	CHECK_EQ(api_flame_parse_pid(result_profile(rmixed), "1", &o, &e), -ENOENT);
	CHECK_STR(e.msg, "this profile has no processes");
}

static struct result *to_result(struct profile *p)
{
	if (!p)
		return NULL;
	size_t len;
	char *json = result_json_from_profile(p, 0, &len);
	struct result *r = result_parse(json, len, NULL);
	free(json);
	return r;
}

int main(void)
{
	OOBTEST_BEGIN("test_api_flame");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_api_flame.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	mixed = testprof_mixed(NULL);
	spike = testprof_spike(tmpdir);
	rmixed = to_result(mixed);
	rspike = to_result(spike);
	spike_all = spike_full();
	rspike_all = to_result(spike_all);
	RUN(flame_equals_core_folded_mixed);
	RUN(flame_equals_core_folded_spike);
	RUN(max_nodes_merges_the_smallest);
	RUN(priv_filters_split_the_weight);
	RUN(frames_carry_source_and_kind);
	RUN(pid_filter_spike_processes);
	RUN(pid_filter_refusals);
	result_free(rmixed);
	result_free(rspike);
	result_free(rspike_all);
	profile_free(mixed);
	profile_free(spike);
	profile_free(spike_all);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return OOBTEST_END();
}
