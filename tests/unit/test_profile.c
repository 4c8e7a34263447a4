/* profile: building from parts, totals, folded output, per-function table,
 * processes JSON round trip. Small hand-built trees whose right answers are
 * worked out in the comments. */
#include <stdlib.h>

#include "oobtest.h"
#include "profile/profile.h"
#include "profile/annot.h"
#include "profile/profile_json.h"

/* root -> main -> fib -> fib, and main -> odd;name (';' in a name) */
static struct profile *tree(void)
{
	static const struct profile_frame frames[] = {
	    {.name = "main", .kind = PROFILE_FRAME_USER, .addr = 0x100},
	    {.name = "fib", .kind = PROFILE_FRAME_USER, .addr = 0x200},
	    {.name = "odd;name", .kind = PROFILE_FRAME_KERNEL, .addr = 0x300},
	};
	static const struct profile_node nodes[] = {
	    {.parent = PROFILE_NONE, .frame = PROFILE_NONE},
	    {.parent = 0, .frame = 0, .calls = 1, .self_insns = 10, .self_cycles = 20},
	    {.parent = 1, .frame = 1, .calls = 2, .self_insns = 5, .self_cycles = 7},
	    {.parent = 2, .frame = 1, .calls = 4, .self_insns = 3, .self_cycles = 3},
	    {.parent = 1, .frame = 2, .calls = 1, .self_insns = 1, .self_cycles = 0},
	};
	struct profile_stats st = {.format = "oobt", .instructions = 19, .cycles = 30};
	return profile_new(nodes, 5, frames, 3, &st, NULL);
}

static void totals_are_derived(void)
{
	struct profile *p = tree();
	CHECK(p != NULL);
	CHECK_EQ(profile_node(p, 0)->total_insns, 19);
	CHECK_EQ(profile_node(p, 1)->total_insns, 19);
	CHECK_EQ(profile_node(p, 2)->total_insns, 8);
	CHECK_EQ(profile_node(p, 1)->total_cycles, 30);
	CHECK_EQ(profile_node(p, 1)->first_child, 2); /* children in creation order */
	CHECK_EQ(profile_node(p, 2)->next_sibling, 4);
	CHECK_STR(profile_stats(p)->format, "oobt");
	profile_free(p);
}

static void bad_parts_are_refused(void)
{
	struct profile_frame f = {.name = "x"};
	struct profile_node n[2] = {{.parent = PROFILE_NONE, .frame = PROFILE_NONE},
				    {.parent = 5, .frame = 0}};
	struct profile_stats st = {0};
	struct oob_err e = {0};
	CHECK(profile_new(n, 2, &f, 1, &st, &e) == NULL);
	CHECK_EQ(e.code, -EINVAL);
	CHECK(strstr(e.msg, "node 1") != NULL);
	n[1].parent = 0;
	n[1].frame = 3;
	CHECK(profile_new(n, 2, &f, 1, &st, &e) == NULL);
	CHECK(strstr(e.msg, "frame 3") != NULL);
}

static void folded_escapes_and_annotates(void)
{
	struct profile *p = tree();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK_EQ(profile_write_folded(p, f, PROFILE_INSNS, 1), 0);
	fclose(f);
	CHECK_STR(buf, "main 10\nmain;fib 5\nmain;fib;fib 3\nmain;odd:name_[k] 1\n");
	free(buf);
	f = open_memstream(&buf, &len);
	CHECK_EQ(profile_write_folded(p, f, PROFILE_CALLS, 0), 0);
	fclose(f);
	CHECK_STR(buf, "main 1\nmain;fib 2\nmain;fib;fib 4\nmain;odd:name 1\n");
	free(buf);
	profile_free(p);
}

static void functions_count_recursion_once(void)
{
	struct profile *p = tree();
	struct profile_func *v;
	size_t n = profile_functions(p, PROFILE_INSNS, &v);
	CHECK_EQ(n, 3);
	CHECK_EQ(v[0].frame, 0); /* main: self 10 sorts first */
	CHECK_EQ(v[1].frame, 1);
	CHECK_EQ(v[1].calls, 6);       /* 2 + 4 entries */
	CHECK_EQ(v[1].self_insns, 8);  /* 5 + 3 */
	CHECK_EQ(v[1].total_insns, 8); /* the inner fib is inside the outer one */
	CHECK_EQ(v[0].total_insns, 19);
	free(v);
	profile_free(p);
}

static void processes_round_trip(void)
{
	struct profile *p = tree();
	struct profile_exec ex = {"/prog", 42};
	const uint64_t satps[2] = {0x80002000000803d5ull, 0x80003000000803ccull};
	struct profile_process pr[2] = {
	    {.pid = 1, .ppid = -1, .comm = "init", .insns_user = 7, .insns_kernel = 9},
	    {.pid = 18,
	     .ppid = 1,
	     .comm = "prog",
	     .execs = &ex,
	     .nexecs = 1,
	     .end = 99,
	     .satps = satps,
	     .nsatps = 2}};
	profile_set_processes(p, pr, 2, "derived", 3);
	json_t *j = profile_processes_json(p);
	/* children are derived from ppid */
	json_t *kids =
	    json_object_get(json_array_get(json_object_get(j, "processes"), 0), "children");
	CHECK_EQ(json_array_size(kids), 1);
	CHECK_EQ(json_integer_value(json_array_get(kids, 0)), 18);
	struct profile *q = tree();
	CHECK_EQ(profile_processes_from_json(q, j, NULL), 0);
	CHECK_EQ(profile_nprocesses(q), 2);
	CHECK_STR(profile_process(q, 1)->execs[0].path, "/prog");
	CHECK_EQ(profile_process(q, 1)->execs[0].when, 42);
	CHECK_EQ(profile_process(q, 0)->insns_kernel, 9);
	CHECK_EQ(profile_switches(q), 3);
	CHECK_STR(profile_process_source(q), "derived");
	/* satp values need all 64 bits: hex strings, not JSON numbers */
	CHECK_EQ(profile_process(q, 1)->nsatps, 2);
	CHECK_EQ(profile_process(q, 1)->satps[1], satps[1]);
	CHECK_EQ(profile_process(q, 0)->nsatps, 0);
	json_t *spaces =
	    json_object_get(json_array_get(json_object_get(j, "processes"), 1), "address_spaces");
	CHECK_STR(json_string_value(json_array_get(spaces, 1)), "0x80003000000803cc");
	json_array_set_new(spaces, 0, json_string("0x8zz"));
	CHECK_EQ(profile_processes_from_json(q, j, NULL), -EINVAL);
	json_array_set_new(spaces, 0, json_string("0x80002000000803d5"));
	json_object_set_new(json_array_get(json_object_get(j, "processes"), 1), "pid",
			    json_string("x"));
	struct oob_err e = {0};
	CHECK_EQ(profile_processes_from_json(q, j, &e), -EINVAL);
	json_decref(j);
	profile_free(q);
	profile_free(p);
}

/* Per-pc counts of tree()'s fib (frame 1, nodes 2 and 3: recursive) at
 * three pcs, stored and read back, then annotated by line: line 7 gets
 * 2 + 1 (node 2) + 3 (node 3) = 6 instructions, line 8 gets 2; one call
 * at site 1 made 4 calls (numbers are made up, not a real run). */
static void pcs_round_trip_and_annotate(void)
{
	struct profile *p = tree();
	json_t *doc = json_pack(
	    "{s:[[s,s,i,i,s,n,s,i,[]], [s,s,i,i,s,n,s,i,[]], [s,s,i,i,s,n,s,i,[[s,n,i]]]],"
	    " s:[[i,i,i,i,i], [i,i,i,i,i], [i,i,i,i,i], [i,i,i,i,i]]}",
	    "sites", "0x200", "0x200", 1, 1, "/bin/p", "fib.c", 7, "0x204", "0x204", 1, 1, "/bin/p",
	    "fib.c", 7, "0x208", "0x208", 1, 1, "/bin/p", "fib.c", 8, "sq", 5, "rows", 2, 0, 2, 4,
	    0, 2, 1, 1, 1, 4, 3, 0, 3, 3, 0, 2, 2, 2, 2, 0);
	CHECK_EQ(profile_pcs_from_json(p, doc, NULL), 0);
	CHECK_EQ(profile_npcs(p), 4);
	CHECK_STR(profile_site(p, 2)->inl[0].name, "sq");
	json_t *back = profile_pcs_json(p);
	CHECK(json_equal(back, doc));
	struct oob_err e = {0};
	json_t *a = annot_json(p, "fib", ANNOT_SOURCE, NULL, 0, &e);
	CHECK(a != NULL);
	json_t *f = json_array_get(json_object_get(a, "functions"), 0);
	CHECK_EQ(json_integer_value(json_object_get(f, "instructions")), 8);
	CHECK_EQ(json_integer_value(json_object_get(f, "calls")), 4);
	json_t *l7 = json_array_get(json_object_get(f, "lines"), 0);
	json_t *l8 = json_array_get(json_object_get(f, "lines"), 1);
	CHECK_EQ(json_integer_value(json_object_get(l7, "line")), 7);
	CHECK_EQ(json_integer_value(json_object_get(l7, "instructions")), 6);
	CHECK_EQ(json_integer_value(json_object_get(l8, "instructions")), 2);
	CHECK(annot_json(p, "main", ANNOT_SOURCE, NULL, 0, &e) == NULL);
	CHECK_EQ(e.code, -ENOENT);
	json_decref(a);
	json_decref(back);
	/* out of range: a node, a site, a frame; a chain longer than kept */
	json_array_set_new(json_array_get(json_object_get(doc, "rows"), 0), 0, json_integer(5));
	CHECK_EQ(profile_pcs_from_json(p, doc, &e), -EINVAL);
	CHECK(strstr(e.msg, "row 0") != NULL);
	json_array_set_new(json_array_get(json_object_get(doc, "rows"), 0), 0, json_integer(2));
	json_array_set_new(json_array_get(json_object_get(doc, "rows"), 1), 1, json_integer(3));
	CHECK_EQ(profile_pcs_from_json(p, doc, &e), -EINVAL);
	json_array_set_new(json_array_get(json_object_get(doc, "rows"), 1), 1, json_integer(1));
	json_array_set_new(json_array_get(json_object_get(doc, "sites"), 0), 3, json_integer(3));
	CHECK_EQ(profile_pcs_from_json(p, doc, &e), -EINVAL);
	CHECK(strstr(e.msg, "site 0") != NULL);
	json_decref(doc);
	/* a profile without per-pc counts */
	struct profile *q = tree();
	CHECK(annot_json(q, "fib", ANNOT_SOURCE, NULL, 0, &e) == NULL);
	CHECK_EQ(e.code, -ENODATA);
	CHECK(profile_pcs_json(q) == NULL);
	profile_free(q);
	profile_free(p);
}

/* Rows kept per hart (fib's site 0 under node 2 on harts 0 and 1) and the
 * entries per hart: stored and read back as they were; annotate sums the
 * harts (2 + 5 at line 7); what is out of range is refused. */
static void pcs_per_hart(void)
{
	struct profile *p = tree();
	json_t *doc = json_pack("{s:[[s,s,i,i,s,n,s,i,[]]], s:[[i,i,i,i,i,i], [i,i,i,i,i,i]],"
				" s:[[i,i,i], [i,i,i]]}",
				"sites", "0x200", "0x200", 1, 1, "/bin/p", "fib.c", 7, "rows", 2, 0,
				2, 0, 0, 0, 2, 0, 5, 0, 0, 1, "hart_calls", 2, 0, 3, 2, 1, 4);
	CHECK_EQ(profile_pcs_from_json(p, doc, NULL), 0);
	CHECK_EQ(profile_npcs(p), 2);
	CHECK_EQ(profile_pc(p, 0)->hart, 0);
	CHECK_EQ(profile_pc(p, 1)->hart, 1);
	CHECK_EQ(profile_nhart_calls(p), 2);
	CHECK_EQ(profile_hart_calls(p, 1)->hart, 1);
	CHECK_EQ(profile_hart_calls(p, 1)->calls, 4);
	json_t *back = profile_pcs_json(p);
	CHECK(json_equal(back, doc));
	json_decref(back);
	struct oob_err e = {0};
	json_t *a = annot_json(p, "fib", ANNOT_SOURCE, NULL, 0, &e);
	json_t *f = json_array_get(json_object_get(a, "functions"), 0);
	CHECK_EQ(json_integer_value(json_object_get(f, "instructions")), 7);
	json_decref(a);
	/* the root is never entered; a hart past 32 bits; a row of 7 */
	json_t *hc = json_array_get(json_object_get(doc, "hart_calls"), 0);
	json_array_set_new(hc, 0, json_integer(0));
	CHECK_EQ(profile_pcs_from_json(p, doc, &e), -EINVAL);
	CHECK(strstr(e.msg, "hart_calls 0") != NULL);
	json_array_set_new(hc, 0, json_integer(2));
	json_array_set_new(hc, 1, json_integer(1ll << 32));
	CHECK_EQ(profile_pcs_from_json(p, doc, &e), -EINVAL);
	json_array_set_new(hc, 1, json_integer(0));
	json_array_append_new(json_array_get(json_object_get(doc, "rows"), 0), json_integer(0));
	CHECK_EQ(profile_pcs_from_json(p, doc, &e), -EINVAL);
	CHECK(strstr(e.msg, "row 0") != NULL);
	json_decref(doc);
	profile_free(p);
}

int main(void)
{
	OOBTEST_BEGIN("test_profile");
	RUN(totals_are_derived);
	RUN(bad_parts_are_refused);
	RUN(folded_escapes_and_annotates);
	RUN(functions_count_recursion_once);
	RUN(processes_round_trip);
	RUN(pcs_round_trip_and_annotate);
	RUN(pcs_per_hart);
	return OOBTEST_END();
}
