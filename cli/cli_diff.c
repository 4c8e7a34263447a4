/*
 * cli_diff: `oobprof diff BASE OTHER`, two profiles compared by normalized
 * shares (profile/profile_diff.h).
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>

#include "cli_go.h"
#include "cli_impl.h"
#include "profile/profile_diff.h"

/* The profile of one file, read with the shared options. */
static struct profile *one(struct cli *c, char *path)
{
	char *argv[] = {path, NULL};
	int save = optind;
	optind = 0;
	struct profile *p = cli_reconstruct(c, 1, argv);
	optind = save;
	return p;
}

static void text(json_t *j, size_t n)
{
	json_t *s = json_object_get(j, "summary"), *b = json_object_get(j, "base"),
	       *o = json_object_get(j, "other");
	printf("base:  %s, %.0f %s\nother: %s, %.0f %s\n",
	       json_string_value(json_object_get(b, "format")),
	       json_number_value(json_object_get(b, "total")),
	       json_string_value(json_object_get(b, "metric")),
	       json_string_value(json_object_get(o, "format")),
	       json_number_value(json_object_get(o, "total")),
	       json_string_value(json_object_get(o, "metric")));
	printf("function share error (sum |a-b|/2): %.4f%%\nstack share error: %.4f%%\n",
	       100 * json_number_value(json_object_get(s, "function_error")),
	       100 * json_number_value(json_object_get(s, "stack_error")));
	json_t *out = json_object_get(s, "outside_bound");
	if (json_is_integer(out))
		printf("functions outside 3 sigma of the binomial error: %lld of %lld\n",
		       (long long)json_integer_value(out),
		       (long long)json_integer_value(json_object_get(s, "functions")));
	printf("%9s %9s %9s %9s  function\n", "base%", "other%", "delta%", "sigma%");
	json_t *f = json_object_get(j, "functions");
	for (size_t i = 0; i < json_array_size(f) && (!n || i < n); i++) {
		json_t *r = json_array_get(f, i), *sg = json_object_get(r, "sigma");
		printf("%8.3f%% %8.3f%% %+8.3f%% ",
		       100 * json_number_value(json_object_get(r, "base")),
		       100 * json_number_value(json_object_get(r, "other")),
		       100 * json_number_value(json_object_get(r, "delta")));
		if (sg)
			printf("%8.3f%%%s", 100 * json_number_value(sg),
			       json_is_true(json_object_get(r, "within_bound")) ? " " : "!");
		else
			printf("%9s ", "-");
		printf(" %s\n", json_string_value(json_object_get(r, "name")));
	}
}

int cli_cmd_diff(struct cli *c, int argc, char **argv)
{
	if (argc - optind != 2) {
		fprintf(stderr, "oobprof diff: give exactly two files, BASE and OTHER\n");
		return 2;
	}
	struct profile *a = one(c, argv[optind]), *b = a ? one(c, argv[optind + 1]) : NULL;
	int rc = 1;
	if (!a || !b || cli_out_begin(c->out) < 0)
		goto out;
	struct profile_diff_opts o = {
	    .metric_base = profile_stats(a)->sampled ? PROFILE_INSNS : c->metric,
	    .metric_other = profile_stats(b)->sampled ? PROFILE_INSNS : c->metric,
	    .with_stacks = c->json,
	};
	json_t *j = profile_diff_json(a, b, &o);
	if (c->json) {
		rc = json_dumpf(j, stdout, JSON_INDENT(1)) < 0 ? 1 : 0;
		putchar('\n');
	} else {
		text(j, (size_t)c->top_n);
		rc = 0;
	}
	json_decref(j);
	rc = rc || fflush(stdout) ? 1 : 0;
out:
	profile_free(a);
	profile_free(b);
	return rc;
}
