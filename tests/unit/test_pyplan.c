/* pyplan: the follower's rules (RECONSTRUCTION.md 17) on a small code map
 * written here and made-up label addresses, each case's plan derived by hand
 * from the rules: frame starts and ends at the right dispatches, code
 * objects decided by their opcodes, by the caller's call site, by where
 * an exception leaves; a finalizer's frame inside a return; an instruction
 * that runs three; a specialized form's miss; code the map lacks; bad maps refused. The real
 * interpreter and pyprog.py are test_python.sh's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "oobtest.h"
#include "py/pycode.h"
#include "py/pyplan.h"

/* f and g run the same opcodes; main calls f then g (its call sites name
 * them); h raises and handles it; k calls r, which raises and has no
 * handler, inside k's handler range. Offsets are instruction indices. */
static const char MAP[] = "pycode 1\n"
			  "code f a.py 1 3\n"
			  "i 0 151 1\ni 1 100 2\ni 2 83 -\n"
			  "code g a.py 5 3\n"
			  "i 0 151 1\ni 1 100 2\ni 2 83 -\n"
			  "code main a.py 9 11\n"
			  "i 0 151 1\ni 1 116 2\ni 2 166 3\ni 3 171 4\ni 4 1 5\n"
			  "i 5 116 6\ni 6 166 7\ni 7 171 8\ni 8 1 9\ni 9 100 10\ni 10 83 -\n"
			  "c 2 0\nc 3 0\nc 6 1\nc 7 1\n"
			  "code h a.py 20 8\n"
			  "i 0 151 1\ni 1 100 2\ni 2 130 -\ni 3 35 4\ni 4 1 5\ni 5 89 6\n"
			  "i 6 100 7\ni 7 83 -\nx 1 3 3\n"
			  "code k a.py 30 12\n"
			  "i 0 151 1\ni 1 116 2\ni 2 166 3\ni 3 171 4\ni 4 1 5\ni 5 100 6\n"
			  "i 6 83 -\ni 7 35 8\ni 8 1 9\ni 9 89 10\ni 10 100 11\ni 11 83 -\n"
			  "x 1 5 7\nc 2 5\nc 3 5\n"
			  "code r a.py 40 3\n"
			  "i 0 151 1\ni 1 100 2\ni 2 130 -\n";

#define LO    0x1000u
#define START 0x1100u
#define ERR   0x1200u
#define EXIT  0x1300u
#define D(op) (0x2000u + 0x10u * (op))

static struct pyeval eval_places(void)
{
	struct pyeval ev = {
	    .lo = LO, .hi = 0x4000, .start_frame = START, .error = ERR, .exit_unwind = EXIT};
	for (int q = 0; q < 256; q++)
		ev.targets[q] = D(q);
	return ev;
}

static struct pycode *load(const char *text)
{
	const char *p = oobtest_out("pyplan", "map");
	FILE *f = fopen(p, "w");
	if (!f)
		return NULL;
	fputs(text, f);
	fclose(f);
	struct pycode *m = NULL;
	struct oob_err err = {0};
	return pycode_load(p, &m, &err) == 0 ? m : NULL;
}

static struct pyplan *follow(const struct pyeval *ev, const struct pycode *m, const uint64_t *pc,
			     size_t n)
{
	struct pyfollow *f = pyfollow_new(ev, m);
	for (size_t i = 0; i < n; i++)
		pyfollow_pc(f, i, pc[i]);
	return pyfollow_finish(f);
}

static const char *name_at(const struct pyplan *p, size_t e)
{
	return p->ev[e].name == PYPLAN_NONE ? "-" : p->names[p->ev[e].name];
}

/* Inline calls: each callee is pushed at its first dispatch and popped at
 * its caller's next one; f and g, the same opcodes, are told apart by
 * main's call sites; main's own end is the eval function's return (no
 * event). */
static void inline_calls(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load(MAP);
	CHECK(m);
	const uint64_t pc[] = {LO,     START,  D(151), D(116), D(166), D(171), START,
			       D(151), D(100), D(83),  D(1),   D(116), D(166), D(171),
			       START,  D(151), D(100), D(83),  D(1),   D(100), D(83)};
	struct pyplan *p = follow(&ev, m, pc, sizeof(pc) / sizeof(pc[0]));
	CHECK_EQ(p->nev, 5);
	const uint64_t seq[] = {2, 7, 10, 15, 18};
	const uint32_t pop[] = {0, 0, 1, 0, 1};
	const char *name[] = {"py:main (a.py:9)", "py:f (a.py:1)", "-", "py:g (a.py:5)", "-"};
	for (size_t e = 0; e < 5 && e < p->nev; e++) {
		CHECK_EQ(p->ev[e].seq, seq[e]);
		CHECK_EQ(p->ev[e].npop, pop[e]);
		CHECK_STR(name_at(p, e), name[e]);
	}
	CHECK_EQ(p->st.frames, 3);
	CHECK_EQ(p->st.by_opcodes, 1);
	CHECK_EQ(p->st.by_call_site, 2);
	CHECK_EQ(p->st.ambiguous + p->st.unknown, 0);
	pyplan_free(p);
	pycode_free(m);
}

/* Without main's call sites f and g stay ambiguous, named with both. */
static void same_opcodes_ambiguous(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load(MAP);
	CHECK(m);
	const uint64_t pc[] = {LO, START, D(151), D(100), D(83)};
	struct pyplan *p = follow(&ev, m, pc, 5);
	CHECK_EQ(p->nev, 1);
	CHECK_STR(name_at(p, 0), "py:? (f (a.py:1) | g (a.py:5))");
	CHECK_EQ(p->st.ambiguous, 1);
	pyplan_free(p);
	pycode_free(m);
}

/* A raise handled in its own frame: the next dispatch is at the handler
 * (the error label that follows RAISE_VARARGS is the same exception). */
static void raise_handled(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load(MAP);
	CHECK(m);
	const uint64_t pc[] = {LO,    START, D(151), D(100), D(130), ERR,
			       D(35), D(1),  D(89),  D(100), D(83)};
	struct pyplan *p = follow(&ev, m, pc, sizeof(pc) / sizeof(pc[0]));
	CHECK_EQ(p->nev, 1);
	CHECK_STR(name_at(p, 0), "py:h (a.py:20)");
	CHECK_EQ(p->st.by_opcodes, 1);
	CHECK_EQ(p->st.unknown, 0);
	pyplan_free(p);
	pycode_free(m);
}

/* r raises with no handler and leaves by exit_unwind (so it is r, not h,
 * whose raise is handled); k, its caller, handles it at the CALL: r is
 * popped at k's handler's first dispatch. */
static void raise_through_caller(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load(MAP);
	CHECK(m);
	const uint64_t pc[] = {LO,     START, D(151), D(116), D(166), D(171), START, D(151), D(100),
			       D(130), ERR,   EXIT,   ERR,    D(35),  D(1),   D(89), D(100), D(83)};
	struct pyplan *p = follow(&ev, m, pc, sizeof(pc) / sizeof(pc[0]));
	CHECK_EQ(p->nev, 3);
	if (p->nev == 3) {
		CHECK_STR(name_at(p, 0), "py:k (a.py:30)");
		CHECK_STR(name_at(p, 1), "py:r (a.py:40)");
		CHECK_EQ(p->ev[2].seq, 13);
		CHECK_EQ(p->ev[2].npop, 1);
		CHECK_STR(name_at(p, 2), "-");
	}
	CHECK_EQ(p->st.by_opcodes, 2);
	pyplan_free(p);
	pycode_free(m);
}

/* f returns to main, and freeing its locals runs a finalizer: an eval call
 * (a frame of f's or g's opcodes) inside f's RETURN_VALUE. f is popped at
 * main's next dispatch, after the finalizer's frame, not at the
 * finalizer's first dispatch. */
static void finalizer_in_return(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load(MAP);
	CHECK(m);
	const uint64_t pc[] = {LO,    START, D(151), D(116), D(166), D(171), START, D(151), D(100),
			       D(83), LO,    START,  D(151), D(100), D(83),  D(1),  D(116)};
	struct pyplan *p = follow(&ev, m, pc, sizeof(pc) / sizeof(pc[0]));
	CHECK_EQ(p->nev, 4);
	const uint64_t seq[] = {2, 7, 12, 15};
	const uint32_t pop[] = {0, 0, 0, 1};
	for (size_t e = 0; e < 4 && e < p->nev; e++) {
		CHECK_EQ(p->ev[e].seq, seq[e]);
		CHECK_EQ(p->ev[e].npop, pop[e]);
	}
	if (p->nev == 4)
		CHECK_STR(name_at(p, 1), "py:f (a.py:1)");
	pyplan_free(p);
	pycode_free(m);
}

/* names.append(x) specialized: PRECALL_NO_KW_LIST_APPEND (here quickened
 * opcode 200, kind 3) runs the PRECALL, its CALL and the POP_TOP after it
 * with one dispatch; the frame's next dispatch is the LOAD_CONST. */
static void list_append_runs_three(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load("pycode 1\nop 200 166 3\n"
				"code app a.py 1 9\n"
				"i 0 151 1\ni 1 124 2\ni 2 160 3\ni 3 124 4\ni 4 166 5\n"
				"i 5 171 6\ni 6 1 7\ni 7 100 8\ni 8 83 -\n");
	CHECK(m);
	const uint64_t pc[] = {LO, START, D(151), D(124), D(160), D(124), D(200), D(100), D(83)};
	struct pyplan *p = follow(&ev, m, pc, sizeof(pc) / sizeof(pc[0]));
	CHECK_EQ(p->nev, 1);
	if (p->nev == 1)
		CHECK_STR(name_at(p, 0), "py:app (a.py:1)");
	CHECK_EQ(p->st.by_opcodes, 1);
	CHECK_EQ(p->st.unknown, 0);
	pyplan_free(p);
	pycode_free(m);
}

/* A specialized form that misses (here PRECALL's quickened form 201):
 * DEOPT_IF re-dispatches the same instruction as its base opcode. */
static void miss_dispatches_base(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load("pycode 1\nop 201 166 0\n"
				"code m a.py 1 7\n"
				"i 0 151 1\ni 1 100 2\ni 2 166 3\ni 3 171 4\ni 4 1 5\n"
				"i 5 100 6\ni 6 83 -\n");
	CHECK(m);
	const uint64_t pc[] = {LO,     START,  D(151), D(100), D(201),
			       D(166), D(171), D(1),   D(100), D(83)};
	struct pyplan *p = follow(&ev, m, pc, sizeof(pc) / sizeof(pc[0]));
	CHECK_EQ(p->nev, 1);
	if (p->nev == 1)
		CHECK_STR(name_at(p, 0), "py:m (a.py:1)");
	CHECK_EQ(p->st.unknown, 0);
	pyplan_free(p);
	pycode_free(m);
}

/* A frame of code the map lacks: py:?, counted. Dispatches outside any
 * frame (before the trace's first frame start) plan nothing. */
static void unknown_code(void)
{
	struct pyeval ev = eval_places();
	struct pycode *m = load(MAP);
	CHECK(m);
	const uint64_t pc[] = {D(100), D(83), LO, START, D(9), D(83)};
	struct pyplan *p = follow(&ev, m, pc, 6);
	CHECK_EQ(p->nev, 1);
	CHECK_EQ(p->ev[0].seq, 4);
	CHECK_STR(name_at(p, 0), "py:?");
	CHECK_EQ(p->st.unknown, 1);
	CHECK_EQ(p->st.frames, 1);
	pyplan_free(p);
	pycode_free(m);
}

static void bad_maps(void)
{
	static const char *const bad[] = {
	    "not a map\n",
	    "pycode 1\ncode f a.py 1 2\ni 0 151 5\ni 1 83 -\n", /* successor at no instruction */
	    "pycode 1\ncode f a.py 1 3\ni 0 151 1\ni 1 83 -\n", /* fewer instructions than said */
	    "pycode 1\ncode f a.py 1 1\ni 0 83 -\nc 0 7\n",	/* a callee that is not there */
	    "pycode 1\ncode f a.py 1 1\ni 0 83 -\nx 0 1 3\n",	/* a handler at no instruction */
	    "pycode 1\nop 300 1 0\n",				/* an opcode out of range */
	    "pycode 1\ncode f a.py 1 4000000000\n",		/* absurdly many instructions */
	    "pycode 1\ncode f a.py 1 16777216\ni 0 83 -\n",	/* many said, one given */
	    "pycode 1\n",					/* nothing */
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		const char *p = oobtest_out("pyplan", "bad");
		FILE *f = fopen(p, "w");
		CHECK(f);
		fputs(bad[k], f);
		fclose(f);
		struct pycode *m = NULL;
		struct oob_err err = {0};
		CHECK_EQ(pycode_load(p, &m, &err), -EINVAL);
		CHECK(m == NULL && err.msg[0]);
	}
	struct pycode *m = NULL;
	struct oob_err err = {0};
	CHECK_EQ(pycode_load("/nonexistent/map", &m, &err), -ENOENT);
}

int main(void)
{
	OOBTEST_BEGIN("test_pyplan");
	RUN(inline_calls);
	RUN(same_opcodes_ambiguous);
	RUN(raise_handled);
	RUN(raise_through_caller);
	RUN(finalizer_in_return);
	RUN(list_append_runs_three);
	RUN(miss_dispatches_base);
	RUN(unknown_code);
	RUN(bad_maps);
	return OOBTEST_END();
}
