/*
 * http_impl: what http.c and http_local.c share: the server, a request,
 * and the request's steps that both libmicrohttpd's callbacks and
 * http_serve_local drive.
 */
#ifndef OOB_HTTP_IMPL_H
#define OOB_HTTP_IMPL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "http.h"

#define MAX_HEADERS 8

/* The compute threads: deferred requests in FIFO order under one mutex and
 * condition variable. Each runs its handler with its connection suspended
 * and resumes it; at stop the queue is drained before the threads end. */
struct compute {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct http_req *head, *tail;
	pthread_t *threads;
	unsigned nthreads;
	int stopping;
};

/* A request served without a socket (http_serve_local): its query arguments
 * and headers as name/value pairs with their decoded lengths. */
struct local_kv {
	char *key, *value;
	size_t nkey, nvalue;
};

struct local_req {
	struct local_kv *args, *hdrs;
	size_t nargs, nhdrs;
	struct http_local_resp *out;
};

struct http_server {
	struct MHD_Daemon *d;
	struct http_hooks hooks;
	void *ctx;
	size_t max_buffered;
	size_t max_header; /* request line + headers, answered 431 beyond */
	unsigned upload_timeout_s;
	unsigned port;
	struct compute pool;
};

struct http_req {
	struct http_server *srv;
	struct MHD_Connection *conn;
	const char *method, *path;
	int mode;
	int ended;	    /* end() ran: the body (if any) was received in full */
	int failed;	    /* a chunk was refused: drop the rest of the body */
	uint64_t discarded; /* body bytes dropped after a refusal */
	char *buf;
	size_t nbuf, cap;
	struct MHD_Response *resp; /* built by http_respond*, queued by on_access */
	unsigned status;
	int queued;
	void *data;
	char *hdr[MAX_HEADERS][2];
	int nhdr;
	void (*deferred)(void *ctx, struct http_req *r); /* see http_defer */
	int *detached;		 /* set while deferred runs on a compute thread: see http_detach */
	struct http_req *next;	 /* in the compute queue */
	struct local_req *local; /* set instead of conn by http_serve_local */
	char *err_body;		 /* the last error body, for raw_refuse */
	int raw_sent;		 /* raw_refuse wrote the response itself */
};

/* A request's steps: its headers are in (routes it), a piece of its body,
 * the body is complete, and its end. */
void http_req_begin(struct http_req *r);
enum MHD_Result http_req_on_body(struct http_req *r, const char *data, size_t n);
int http_req_end(struct http_req *r);
void http_req_free(struct http_req *r);

/* http_local.c: a local request's argument or header (nocase) key, or NULL;
 * the first response's body kept for http_serve_local's caller. */
const char *http_local_lookup(const struct local_kv *kv, size_t n, const char *key, int nocase);
void http_local_keep_body(struct http_req *r, const void *body, size_t n);

#endif
