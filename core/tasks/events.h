/*
 * events: sideband process events (DESIGN.md 3.3), JSON Lines, one object
 * per line:
 *
 *   {"event": "switch", "hart": 0, "seq": 1200, "pid": 42}
 *   {"event": "fork",   "hart": 0, "seq": 900,  "pid": 1, "child": 42}
 *   {"event": "exec",   "hart": 0, "seq": 1000, "pid": 42, "path": "/prog"}
 *   {"event": "exit",   "hart": 0, "cycle": 5e6, "pid": 42}
 *   {"event": "map",    "hart": 0, "seq": 0, "pid": 42, "path": "libc.so.6",
 *    "base": "0x4002832000", "size": 1630208}
 *
 * "type" is accepted for "event"; "tid" for "pid" in switch. A map names its
 * binary by "path" (matched by base name against the ELFs given) or
 * "build_id" (hex), and its load base: the address its lowest PT_LOAD
 * segment is mapped at (a number or a "0x..." string); "size" is optional. "seq" is the
 * index of the hart's instruction before which the event takes effect;
 * "cycle" is a cycle of the hart (the event applies before the first
 * instruction at or after it). Loaded whole (sideband files are small) and
 * sorted per hart. Not thread-safe.
 */
#ifndef OOB_EVENTS_H
#define OOB_EVENTS_H

#include <stdint.h>

#include "util/oob_err.h"

enum events_kind { EVENTS_SWITCH = 1, EVENTS_FORK, EVENTS_EXEC, EVENTS_EXIT, EVENTS_MAP };

struct events_ev {
	uint8_t kind;	  /* enum events_kind */
	uint8_t by_cycle; /* at is a cycle, else an instruction index */
	uint16_t hart;
	uint64_t at;
	int64_t pid, child;
	const char *path;     /* exec, map; NULL otherwise */
	const char *build_id; /* map by build id, or NULL */
	uint64_t base, size;  /* map */
	uint64_t line;	      /* for messages */
};

struct events;

/* Reads and checks the file: -EINVAL names the first bad line and why. */
struct events *events_load(const char *path, struct oob_err *err);
void events_free(struct events *ev);
/* The next event of hart not yet taken, or NULL. Borrowed. */
const struct events_ev *events_peek(const struct events *ev, unsigned hart);
void events_take(struct events *ev, unsigned hart);

#endif
