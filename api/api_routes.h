/*
 * api_routes: the HTTP API of oobprofd (DESIGN.md 5, api/openapi.yaml).
 *
 * One table maps (method, path pattern) to a handler; api_hooks() adapts it
 * to the transport (http.h). The table is also what --print-routes prints,
 * and a test checks it against api/openapi.yaml in both directions.
 *
 * Patterns are literal segments and placeholders: {id} matches a positive
 * decimal integer (the catalog's ids), {name} any one segment. A path that
 * matches a pattern under another method gets 405 with an Allow header; one
 * that matches nothing gets 404 (static files are tried last).
 *
 * Authentication: with a token (--token-file), every POST, PUT and DELETE
 * needs "Authorization: Bearer <token>", and with --auth-reads every GET of
 * /api/ too (health excepted, for load balancers). Tokens are compared in
 * constant time (SHA-256 of both, then nettle's memeql_sec).
 *
 * Thread-safety: the context is filled before the server starts and shared
 * read-only by all request threads; the modules it points to are themselves
 * thread-safe.
 */
#ifndef OOB_API_ROUTES_H
#define OOB_API_ROUTES_H

#include <stdint.h>
#include <stdio.h>

#include "catalog.h"
#include "http.h"
#include "job.h"
#include "settings.h"
#include "store.h"
#include "upload.h"

struct api_static;
struct node;
struct api_cache;

struct api_ctx {
	const struct settings *cfg;
	struct catalog *cat;
	struct store *store;
	struct job_pool *pool;
	struct node *node; /* NULL on one node (SQLite): jobs go to pool directly */
	struct upload_registry *uploads;
	struct api_static *statics; /* may be NULL: built-in page only */
	struct api_cache *cache;    /* loaded results, shared by requests */
	uint8_t token_sha[32];	    /* SHA-256 of the token */
	int have_token;
	double started; /* CLOCK_MONOTONIC seconds at start-up */
};

struct api_route;

/* Per request: the matched route, its {id} and {name} values, and the
 * handler's own state. */
struct api_req {
	const struct api_route *route;
	int64_t id;
	char name[128];
	void *state;
};

struct api_route {
	const char *method;
	const char *pattern;
	/* Headers are in: respond, or return HTTP_BODY_BUFFER/STREAM. */
	int (*begin)(struct api_ctx *c, struct http_req *r, struct api_req *q);
	/* Streamed body piece (uploads). */
	int (*chunk)(struct api_ctx *c, struct http_req *r, struct api_req *q, const void *p,
		     size_t n);
	/* Body complete: respond (NULL when begin always responds). */
	void (*end)(struct api_ctx *c, struct http_req *r, struct api_req *q);
	/* Release q->state; complete = 0 if the client went away mid-body. */
	void (*done)(struct api_ctx *c, struct api_req *q, int complete);
	int write; /* needs the token when one is configured */
};

/* The hooks to give http_start, with a struct api_ctx as their ctx. */
const struct http_hooks *api_hooks(void);

/* Prints "METHOD PATTERN" per route, one a line, in table order. */
void api_print_routes(FILE *f);

/* Reads the token file into c (SHA-256 of its first line, whitespace
 * trimmed). -ENOENT, -EACCES, or -EINVAL for an empty token. */
int api_load_token(struct api_ctx *c, const char *path, struct oob_err *err);

#endif
