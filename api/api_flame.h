/*
 * api_flame: a profile as d3-flame-graph JSON.
 *
 *   {"name": "all", "value": 1234, "children": [
 *      {"name": "main", "value": 1000, "self": 10, "calls": 1,
 *       "cycles": 2100, "libtype": "user", "file": "prog.c", "line": 12,
 *       "children": [...]}, ...],
 *    "metric": "instructions", "partial": false, "nodes": 57, "merged": 0}
 *
 * value is the node's total under the chosen metric (d3-flame-graph derives
 * self time as value minus the children's values); self is its own weight;
 * calls the times that context was entered; cycles its total cycles;
 * libtype "kernel", "user", "marker" ([trap: ecall]...), "process" (a
 * process root) or "inline" for DWARF inline frames; file and line are
 * present when known. With metric "calls", the weight of a node is its
 * entry count, so value is the number of calls made in that subtree.
 *
 * Filters and bounds:
 * - pid N: only the subtrees of the root frames of the processes whose pid
 *   is N (-1: the tasks whose pid is unknown), so the root's value is what
 *   those processes ran; everything outside them is left out.
 * - priv "user" or "kernel": only the weight of user (resp. kernel and
 *   marker) frames counts; inline frames count as their caller; subtrees
 *   left without weight are dropped.
 * - max_nodes N (> 0): at most N nodes; the nodes with the smallest values
 *   are merged into their parents (the parent keeps its value, so the merged
 *   weight shows as the parent's self). "merged" says how many were. The
 *   API applies API_FLAME_DEFAULT_MAX_NODES when the request names none, so
 *   that a document (and the JSON tree built for it) stays a few MB; 0 asks
 *   for every node.
 * - depth is bounded at API_FLAME_MAX_DEPTH the same way, so the document
 *   stays printable by recursive JSON writers.
 *
 * Pure function over an immutable profile: thread-safe.
 */
#ifndef OOB_API_FLAME_H
#define OOB_API_FLAME_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/oob_err.h"
#include "profile/profile.h"

struct api_build;

#define API_FLAME_MAX_DEPTH 1024
/* max_nodes when a request gives none: every flame graph of the test
 * fixtures is whole under it (the largest has 12,934 nodes), and the JSON of
 * 20,000 nodes is about 3 MB. The viewer asks for 4,000. */
#define API_FLAME_DEFAULT_MAX_NODES 20000

enum api_priv { API_PRIV_ALL = 0, API_PRIV_USER, API_PRIV_KERNEL };

struct api_flame_opts {
	enum profile_metric metric;
	enum api_priv priv;
	size_t max_nodes; /* 0 = no bound */
	int by_pid;	  /* 1: only the processes of pid (above) */
	int64_t pid;
};

/* Parses "all", "user"/"u", "kernel"/"k"/"supervisor"/"s"; -EINVAL else. */
int api_flame_parse_priv(const char *s, enum api_priv *out);

/* Parses a pid ("17", or "-1" for the tasks whose pid is unknown), checks
 * that p has such a process with a known root frame and sets o->by_pid and
 * o->pid. -EINVAL for a malformed number; -ENOENT when p has no processes,
 * none with that pid, or its root frames were not stored (each message says
 * which). */
int api_flame_parse_pid(const struct profile *p, const char *s, struct api_flame_opts *o,
			struct oob_err *e);

/* The flame graph of p (new reference; never NULL); partial is reported as
 * the document's "partial" flag. */
json_t *api_flame_build(const struct profile *p, int partial, const struct api_flame_opts *o);

/* The same, serialized (compact JSON, malloc'd; *len its length), for
 * api_cache_serve: arg is a struct api_flame_render. NULL if it cannot be
 * serialized. */
struct api_flame_render {
	const struct profile *p;
	int partial;
	const struct api_flame_opts *o;
};
char *api_flame_render(void *arg, struct api_build *b, size_t *len);

/* p's folded stacks (profile_write_folded) as a malloc'd text (*len its
 * length), for api_cache_render's builds; NULL on failure. */
char *api_flame_folded(const struct profile *p, enum profile_metric m, int annotate, size_t *len);

/* The per-function table (profile_functions' rows and order: by self weight
 * of o->metric, descending) of the part of p that o's pid and priv filters
 * keep: the numbers of the flame graph of the same options summed by frame,
 * recursion counted once in totals. max_nodes does not apply. *out is
 * malloc'd (caller frees); returns the number of rows. */
size_t api_flame_functions(const struct profile *p, const struct api_flame_opts *o,
			   struct profile_func **out);

/* libtype of a frame kind, as above. */
const char *api_flame_libtype(unsigned kind);

#endif
