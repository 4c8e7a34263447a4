/*
 * cli_annot: oobprof annotate FUNC, the per-line and per-instruction counts
 * of a function (profile/annot.h), as text or as the API's JSON.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli_go.h"
#include "cli_impl.h"
#include "profile/annot.h"

static uint64_t num(const json_t *o, const char *k)
{
	return (uint64_t)json_integer_value(json_object_get(o, k));
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static void counts(const json_t *o, int cyc)
{
	printf("%14" PRIu64, num(o, "instructions"));
	if (cyc)
		printf(" %14" PRIu64, num(o, "cycles"));
	printf(" %10" PRIu64, num(o, "calls"));
}

static void header(int cyc, const char *what)
{
	printf("%14s", "instructions");
	if (cyc)
		printf(" %14s", "cycles");
	printf(" %10s  %s\n", "calls", what);
}

static void print_fn(const json_t *f, int disasm, int cyc)
{
	const json_t *rows = json_object_get(f, disasm ? "insns" : "lines"), *r;
	size_t i;
	printf("%s (%s, %s):", str(f, "name"), str(f, "binary"), str(f, "addr"));
	printf(" %" PRIu64 " instructions", num(f, "instructions"));
	if (cyc)
		printf(", %" PRIu64 " cycles", num(f, "cycles"));
	printf(", %" PRIu64 " calls made\n", num(f, "calls"));
	header(cyc, disasm ? "address     instruction  (line)" : "line");
	json_array_foreach(rows, i, r)
	{
		counts(r, cyc);
		const char *file = str(r, "file"), *base = strrchr(file, '/');
		base = base ? base + 1 : file;
		if (disasm)
			printf("  %-10s  %-32s  (%s:%" PRIu64 ")\n", str(r, "addr"), str(r, "asm"),
			       base, num(r, "line"));
		else
			printf("  %s:%-6" PRIu64 " %s\n", base, num(r, "line"), str(r, "text"));
	}
}

int cli_cmd_annotate(struct cli *c, int argc, char **argv)
{
	const char *fn = argv[optind++];
	if (optind >= argc) {
		fprintf(stderr, "oobprof annotate: no trace given ('oobprof annotate --help' for "
				"usage)\n");
		return 2;
	}
	if (c->ro.inline_frames) {
		/* inline frames take instructions from their function's contexts,
		 * which the per-pc rows are counted under */
		fprintf(stderr, "oobprof annotate: --inline is not for annotate: each "
				"instruction's inline chain is shown with it\n");
		return 2;
	}
	c->ro.pcs = 1;
	struct profile *p = cli_reconstruct(c, argc, argv);
	if (!p)
		return 1;
	struct oob_err err = {0};
	json_t *doc =
	    annot_json(p, fn, c->annot_disasm ? ANNOT_DISASM : ANNOT_SOURCE, NULL, 0, &err);
	profile_free(p);
	if (!doc) {
		fprintf(stderr, "oobprof annotate: %s\n", err.msg);
		return 1;
	}
	if (cli_out_begin(c->out) < 0) {
		json_decref(doc);
		return 1;
	}
	const char *why = json_string_value(json_object_get(doc, "disasm_error"));
	if (why)
		fprintf(stderr, "oobprof annotate: no instruction text: %s\n", why);
	int rc = 0;
	if (c->json) {
		rc = json_dumpf(doc, stdout, JSON_INDENT(1)) < 0;
		putchar('\n');
	} else {
		const json_t *f;
		size_t i;
		int cyc = json_is_true(json_object_get(doc, "cycles"));
		json_array_foreach(json_object_get(doc, "functions"), i, f)
		{
			if (i)
				putchar('\n');
			print_fn(f, c->annot_disasm, cyc);
		}
	}
	json_decref(doc);
	return rc || fflush(stdout) ? 1 : 0;
}
