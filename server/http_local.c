/*
 * Requests served without a socket (http_serve_local): the CLI and the
 * tests route a request through the same handlers as the server's, its
 * query string decoded as libmicrohttpd decodes it.
 */
#include "http.h"
#include "http_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/oob_mem.h"

const char *http_local_lookup(const struct local_kv *kv, size_t n, const char *key, int nocase)
{
	for (size_t i = 0; i < n; i++)
		if (nocase ? !strcasecmp(kv[i].key, key) : !strcmp(kv[i].key, key))
			return kv[i].value;
	return NULL;
}

/* The first response's body, for the caller of http_serve_local. */
void http_local_keep_body(struct http_req *r, const void *body, size_t n)
{
	if (!r->local || http_req_responded(r))
		return;
	struct http_local_resp *o = r->local->out;
	free(o->body);
	o->body = oob_xmalloc(n + 1);
	memcpy(o->body, body, n);
	o->body[n] = '\0';
	o->n = n;
}

static char *dup_n(const char *p, size_t n)
{
	char *s = oob_xmalloc(n + 1);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* One "key=value" (or "key") of a query string, '+' and %XX decoded as
 * libmicrohttpd decodes them. */
static void local_add_arg(struct local_req *l, const char *p, size_t n)
{
	const char *eq = memchr(p, '=', n);
	size_t nk = eq ? (size_t)(eq - p) : n;
	struct local_kv *kv;
	l->args = oob_xrealloc(l->args, (l->nargs + 1) * sizeof(*l->args));
	kv = &l->args[l->nargs++];
	kv->key = dup_n(p, nk);
	kv->value = eq ? dup_n(eq + 1, n - nk - 1) : NULL;
	for (char *q = kv->key; *q; q++)
		*q = *q == '+' ? ' ' : *q;
	kv->nkey = MHD_http_unescape(kv->key);
	if (kv->value) {
		for (char *q = kv->value; *q; q++)
			*q = *q == '+' ? ' ' : *q;
		kv->nvalue = MHD_http_unescape(kv->value);
	}
}

static void local_free(struct local_req *l, char *path)
{
	for (size_t i = 0; i < l->nargs; i++) {
		free(l->args[i].key);
		free(l->args[i].value);
	}
	for (size_t i = 0; i < l->nhdrs; i++) {
		free(l->hdrs[i].key);
		free(l->hdrs[i].value);
	}
	free(l->args);
	free(l->hdrs);
	free(path);
}

static void local_add_header(struct local_req *l, const char *name, const char *value)
{
	l->hdrs = oob_xrealloc(l->hdrs, (l->nhdrs + 1) * sizeof(*l->hdrs));
	l->hdrs[l->nhdrs++] =
	    (struct local_kv){oob_xstrdup(name), oob_xstrdup(value), strlen(name), strlen(value)};
}

void http_serve_local(const struct http_hooks *h, void *ctx, size_t max_buffered,
		      const struct http_local_req *in, struct http_local_resp *out)
{
	struct http_server srv = {.hooks = *h, .ctx = ctx, .max_buffered = max_buffered};
	struct local_req l = {.out = out};
	const char *q = strchr(in->url, '?');
	char *path = dup_n(in->url, q ? (size_t)(q - in->url) : strlen(in->url));
	memset(out, 0, sizeof(*out));
	MHD_http_unescape(path);
	for (const char *p = q ? q + 1 : NULL, *amp; p && *p; p = amp ? amp + 1 : NULL) {
		amp = strchr(p, '&');
		size_t n = amp ? (size_t)(amp - p) : strlen(p);
		if (n)
			local_add_arg(&l, p, n);
	}
	for (size_t i = 0; i < in->nheaders; i++)
		local_add_header(&l, in->headers[i][0], in->headers[i][1]);
	if (in->nbody && !http_local_lookup(l.hdrs, l.nhdrs, MHD_HTTP_HEADER_CONTENT_LENGTH, 1) &&
	    !http_local_lookup(l.hdrs, l.nhdrs, MHD_HTTP_HEADER_TRANSFER_ENCODING, 1)) {
		char len[32];
		snprintf(len, sizeof(len), "%zu", in->nbody);
		local_add_header(&l, MHD_HTTP_HEADER_CONTENT_LENGTH, len);
	}
	struct http_req *r = oob_xcalloc(1, sizeof(*r));
	*r = (struct http_req){.srv = &srv, .method = in->method, .path = path, .local = &l};
	http_req_begin(r);
	/* As libmicrohttpd: a response given with the headers ends the request. */
	if (!http_req_responded(r)) {
		size_t piece = in->piece ? in->piece : in->nbody + 1;
		for (size_t at = 0; at < in->nbody; at += piece) {
			size_t n = in->nbody - at < piece ? in->nbody - at : piece;
			http_req_on_body(r, (const char *)in->body + at, n);
		}
		http_req_end(r);
	}
	http_req_free(r);
	local_free(&l, path);
}
