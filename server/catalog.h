/*
 * catalog: what the server knows about binaries, traces, jobs and results.
 *
 * The one storage interface: nothing else in oobprofd talks SQL. Two
 * backends (catalog_db.c) behind one set of functions and one numbered list
 * of migrations (catalog.c): SQLite (DATA/catalog.db, the embedded default:
 * WAL mode, foreign keys on, a busy timeout, the version in PRAGMA
 * user_version) and PostgreSQL (several oobprofd nodes sharing one catalog
 * and job queue; the version in the table oob_schema). Both are migrated in
 * code at catalog_open.
 *
 * IDs are integers handed out by the database (AUTOINCREMENT: never reused,
 * even after a delete), shown to API clients as JSON numbers.
 *
 * Rows come back as plain structs with fixed-size text fields, owned by the
 * caller: no allocation to release, except the arrays of the _list calls
 * (free() them). Text that does not fit is truncated, which the API prevents
 * by bounding what it accepts (names 128 bytes, job specs 8 KiB).
 *
 * Thread-safety: a catalog is one connection behind a mutex; every call is
 * atomic (a transaction where it writes more than one row) and any thread may
 * call any function.
 */
#ifndef OOB_CATALOG_H
#define OOB_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "util/oob_err.h"

#define CATALOG_NAME_MAX       128
#define CATALOG_SPEC_MAX       8192
#define CATALOG_SCHEMA_VERSION 4
/* A job whose process died this often while it ran fails (no crash loop). */
#define CATALOG_MAX_CRASHES 2

struct catalog;

struct catalog_binary {
	int64_t id;
	char name[CATALOG_NAME_MAX];
	char sha256[65];
	char blob[128]; /* path relative to the data folder */
	uint64_t size;
	char build_id[80];
	unsigned machine; /* ELF e_machine */
	uint64_t nfuncs;
	int has_dwarf, pie;
	int64_t created; /* unix seconds */
};

/* Trace states: "ready" (complete, validated), "streaming" (upload open),
 * "incomplete" (a streamed upload that ended early: client gone or server
 * restarted; the bytes received are kept), "invalid" (a streamed upload whose
 * content turned out not to be a trace; error says why). The names are those
 * of the database and of the API. */
enum catalog_trace_state {
	CATALOG_TRACE_ANY = -1, /* catalog_trace_list: no filter; never a trace's state */
	CATALOG_TRACE_READY,
	CATALOG_TRACE_STREAMING,
	CATALOG_TRACE_INCOMPLETE,
	CATALOG_TRACE_INVALID,
};

/* Job states: queued -> running -> done | failed | cancelled. */
enum catalog_job_state {
	CATALOG_JOB_QUEUED,
	CATALOG_JOB_RUNNING,
	CATALOG_JOB_DONE,
	CATALOG_JOB_FAILED,
	CATALOG_JOB_CANCELLED,
};

/* The name of a state ("ready", "queued", ...); NULL if s is not a state. */
const char *catalog_trace_state_name(enum catalog_trace_state s);
const char *catalog_job_state_name(enum catalog_job_state s);
/* The state of a name: 0, or -EINVAL if name is none (*out unchanged). */
int catalog_trace_state_parse(const char *name, enum catalog_trace_state *out);
int catalog_job_state_parse(const char *name, enum catalog_job_state *out);

struct catalog_trace {
	int64_t id;
	char name[CATALOG_NAME_MAX];
	char sha256[65]; /* empty while streaming */
	char blob[128];
	uint64_t size;
	char format[32];       /* trace_format_name, "auto" while unknown */
	char description[256]; /* trace_reader_describe */
	int lz4;
	uint64_t records; /* instructions (records) read when it was validated */
	enum catalog_trace_state state;
	char error[512];
	int64_t created;
	char node[64]; /* the node it was uploaded to (catalog_set_node) */
};

struct catalog_job {
	int64_t id;
	int64_t trace_id;
	int64_t events_id;	     /* 0: none */
	char spec[CATALOG_SPEC_MAX]; /* the normalized request JSON */
	enum catalog_job_state state;
	int error_code; /* negative errno of a failed job */
	char error[512];
	uint64_t bytes, total_bytes, insns; /* last progress recorded */
	int64_t created, started, finished;
	unsigned runs;	  /* times it was started (> 1 after a crash recovery) */
	unsigned crashes; /* processes that died while it ran (catalog_job_crashed) */
	int has_result, partial;
};

struct catalog_job_binary {
	int64_t id;
	uint64_t base; /* UINT64_MAX = link address */
};

struct catalog_result {
	int64_t job_id;
	char profile[128]; /* relative paths of the result files */
	char folded[128];
	char events[128];      /* the stack events (evlog.h); "" if the run kept none */
	uint64_t events_bytes; /* its size */
	int partial;
	char stats[4096]; /* JSON object: the profile's statistics */
	int64_t created;
};

/* Opens the catalog and migrates it to CATALOG_SCHEMA_VERSION. `where` is
 * PostgreSQL when it starts with "postgresql:" or "postgres:": a URI
 * ("postgresql://user@host/db"), or libpq key=value pairs after the colon
 * ("postgres:host=/run/postgresql dbname=oobprof"; nothing after it: libpq's
 * PG* environment); else the path of a SQLite file, created if need be. -EIO with the database's
 * message; -ENOTSUP if it was written by a newer oobprofd. */
struct catalog *catalog_open(const char *where, struct oob_err *err);
void catalog_close(struct catalog *c);
/* The schema version of the open database; -1 if it cannot be read. */
int catalog_schema_version(struct catalog *c);
/* What the catalog is, for /health: "sqlite:PATH" or
 * "postgresql:USER@HOST/DB" (never a password). */
const char *catalog_where(const struct catalog *c);
/* 1 if other nodes may share it (PostgreSQL), 0 for SQLite. */
int catalog_is_shared(const struct catalog *c);

/* Inserts b (b->id and b->created are set). */
int catalog_binary_add(struct catalog *c, struct catalog_binary *b, struct oob_err *err);
/* -ENOENT if there is no such id. */
int catalog_binary_get(struct catalog *c, int64_t id, struct catalog_binary *out,
		       struct oob_err *err);
/* The oldest binary with this content; -ENOENT if none. */
int catalog_binary_find(struct catalog *c, const char *sha256, struct catalog_binary *out,
			struct oob_err *err);
/* Up to limit binaries with id > after, ascending; *out malloc'd. */
int catalog_binary_list(struct catalog *c, int64_t after, size_t limit, struct catalog_binary **out,
			size_t *n, struct oob_err *err);

int catalog_trace_add(struct catalog *c, struct catalog_trace *t, struct oob_err *err);
int catalog_trace_get(struct catalog *c, int64_t id, struct catalog_trace *out,
		      struct oob_err *err);
/* The oldest ready trace with this content; -ENOENT if none. */
int catalog_trace_find(struct catalog *c, const char *sha256, struct catalog_trace *out,
		       struct oob_err *err);
/* Like catalog_binary_list; name filters when not NULL, state when not
 * CATALOG_TRACE_ANY. */
int catalog_trace_list(struct catalog *c, int64_t after, size_t limit, const char *name,
		       enum catalog_trace_state state, struct catalog_trace **out, size_t *n,
		       struct oob_err *err);
/* Rewrites every field but id, name and created. -ENOENT if gone. */
int catalog_trace_update(struct catalog *c, const struct catalog_trace *t, struct oob_err *err);
/* Start-up: streams that were open when the process died become
 * "incomplete". Returns how many, or a negative errno. */
int catalog_trace_close_streams(struct catalog *c, struct oob_err *err);

/* What deleting an input took with it (catalog_inputs.c). */
struct catalog_deleted {
	char blob[128];	 /* the input's file, relative to the data folder */
	int blob_unused; /* no other trace or binary names it: remove the file */
	int64_t *jobs;	 /* finished jobs deleted with it (with_jobs); malloc'd */
	size_t njobs;
};

/* Deletes a trace or a binary, in one transaction. -ENOENT if there is no
 * such row; -EBUSY (naming the jobs) if a queued or running job uses it, if
 * the trace is still streaming, or if finished jobs use it and with_jobs is
 * 0; with_jobs deletes those finished jobs too (their result rows; their
 * folders are the caller's). Fills *out (catalog_deleted_clear frees it). */
int catalog_trace_delete(struct catalog *c, int64_t id, int with_jobs, struct catalog_deleted *out,
			 struct oob_err *err);
int catalog_binary_delete(struct catalog *c, int64_t id, int with_jobs, struct catalog_deleted *out,
			  struct oob_err *err);
void catalog_deleted_clear(struct catalog_deleted *d);

/*
 * Inserts a queued job referring to its trace, events and binaries (checked
 * by foreign keys: -ENOENT naming the missing id). j->id, created are set.
 */
int catalog_job_add(struct catalog *c, struct catalog_job *j, const struct catalog_job_binary *bins,
		    size_t nbins, struct oob_err *err);
int catalog_job_get(struct catalog *c, int64_t id, struct catalog_job *out, struct oob_err *err);
int catalog_job_list(struct catalog *c, int64_t after, size_t limit, struct catalog_job **out,
		     size_t *n, struct oob_err *err);
/* The binaries of a job in request order; *out malloc'd. */
int catalog_job_binaries(struct catalog *c, int64_t id, struct catalog_job_binary **out, size_t *n,
			 struct oob_err *err);
/*
 * Moves a job from state `from` to `to` (e.g. queued -> running), stamping
 * started/finished and counting runs as fits. -ENOENT if no such job,
 * -EBUSY if it is not in state `from` (someone else moved it first).
 */
int catalog_job_transition(struct catalog *c, int64_t id, enum catalog_job_state from,
			   enum catalog_job_state to, struct oob_err *err);
/* Records progress (bytes read of total, instructions). */
int catalog_job_progress(struct catalog *c, int64_t id, uint64_t bytes, uint64_t total,
			 uint64_t insns, struct oob_err *err);
/*
 * Ends a running job in one transaction: state (done/failed/cancelled), the
 * error of a failed job (code, msg; NULL otherwise), and its result row when
 * r is not NULL (replacing a partial one). -EBUSY if it was not running.
 */
int catalog_job_finish(struct catalog *c, int64_t id, enum catalog_job_state state, int code,
		       const char *msg, const struct catalog_result *r, struct oob_err *err);
/* Stores a partial result of a running job (a snapshot of a stream). */
int catalog_result_put(struct catalog *c, const struct catalog_result *r, struct oob_err *err);
/* -ENOENT if the job has no result (yet). */
int catalog_result_get(struct catalog *c, int64_t job_id, struct catalog_result *out,
		       struct oob_err *err);
/* Deletes a job that is not queued or running, with its result row. -ENOENT,
 * -EBUSY (still active). */
int catalog_job_delete(struct catalog *c, int64_t id, struct oob_err *err);
/*
 * A process died while job id was "running", or "queued" because it died
 * while starting (its worker was killed by a signal, say): counts the crash
 * and, at CATALOG_MAX_CRASHES, fails the job
 * with a message ending in `why`; else queues it again. Returns 1 if the job
 * is queued again (run it), 0 if not, or a negative errno.
 */
int catalog_job_crashed(struct catalog *c, int64_t id, const char *why, struct oob_err *err);
/*
 * Start-up recovery: jobs left "running" by a crash count that crash (see
 * catalog_job_crashed) and go back to "queued", or fail at the limit;
 * returns in *ids (malloc'd) every queued job, oldest first, for re-queueing.
 */
int catalog_job_recover(struct catalog *c, int64_t **ids, size_t *n, struct oob_err *err);
/* Number of jobs in a state. */
int64_t catalog_job_count(struct catalog *c, enum catalog_job_state state);

/*
 * Several nodes on one catalog (catalog_queue.c). A node names itself once
 * (catalog_set_node, before any other call): new traces record it (their
 * stream lives on it), start-up recovery (catalog_job_recover,
 * catalog_trace_close_streams) then touches only its own jobs and streams,
 * and its leases carry it. "" (the default) is one node owning everything.
 */
int catalog_set_node(struct catalog *c, const char *node, struct oob_err *err);
const char *catalog_node(const struct catalog *c);
/* Claims the oldest queued job that no live lease holds, for lease_s
 * seconds: 1 (*id set), 0 if there is none, or a negative errno. */
int catalog_job_claim(struct catalog *c, unsigned lease_s, int64_t *id, struct oob_err *err);
/* Extends the lease of every queued or running job this node holds to
 * now + lease_s. Returns how many. */
int catalog_job_renew(struct catalog *c, unsigned lease_s, struct oob_err *err);
/* Any node's: running jobs whose lease lapsed (their node died) count a
 * crash (catalog_job_crashed) and are queued again, unleased. Returns how
 * many were counted. */
int catalog_job_reap(struct catalog *c, struct oob_err *err);
/* Clean stop: the queued jobs this node claimed but did not start go back
 * to any node. Returns how many. */
int catalog_job_release(struct catalog *c, struct oob_err *err);
/* A cancel asked at one node for a job another node holds: flags it if it
 * is queued or running. Returns 1 if flagged, 0 if the job is neither. */
int catalog_job_request_cancel(struct catalog *c, int64_t id, struct oob_err *err);
/* The flagged jobs this node holds (queued or running); *ids malloc'd. */
int catalog_job_cancels(struct catalog *c, int64_t **ids, size_t *n, struct oob_err *err);
/* The lease of a job ("" and 0: none). */
int catalog_job_lease(struct catalog *c, int64_t id, char *node, size_t n, int64_t *expires,
		      struct oob_err *err);

#endif
