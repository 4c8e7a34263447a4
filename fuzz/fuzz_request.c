/*
 * fuzz_request: the server's request handling, without a socket. An input
 * is a request as text:
 *
 *   METHOD URL\n            the URL with its query, %-encoded as sent
 *   Name: value\n ...       headers, up to an empty line
 *   body                    the rest
 *
 * served by http_serve_local() through api_hooks(), the same routing,
 * checks and handlers as oobprofd. The server holds a binary
 * (fuzz/elf/bare.elf, id 1), a trace of it (id 1) and a job that ran on them
 * (id 1), so the result routes have something to read; the token is "fuzz-token".
 * Writes pile up in the catalog, so the whole state is rebuilt every
 * RESET_EVERY inputs. Every request must get a response with a status (a
 * 5xx other than 503 is a finding: the server blamed itself for a request).
 * Seeds (fuzz/corpus/request): one request per route, and the hostile ones
 * of issue 21 (%FF in names, %00, two Content-Length headers).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_cache.h"
#include "api_routes.h"
#include "util/oob_log.h"
#include "worker.h"

#ifndef FUZZ_ELF_DIR
#define FUZZ_ELF_DIR "fuzz/elf"
#endif

#define RESET_EVERY 2000
#define MAX_HEADERS 16
#define BODY_MAX    (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fewer mutations per seed in `make check` (fuzz/standalone.c): requests
 * that upload or export cost a millisecond or more. */
extern const unsigned fuzz_standalone_mutations;
const unsigned fuzz_standalone_mutations = 150;

static struct server {
	char dir[64];
	struct settings cfg;
	struct worker_env env;
	struct api_ctx api;
	unsigned served;
} srv;

/* Jobs the fuzzer creates stay queued: running them is the recon target's
 * business, and threads in the background would make runs irreproducible. */
static int no_run(void *ctx, struct job_ctl *ctl)
{
	(void)ctx;
	(void)ctl;
	return 0;
}

static unsigned serve(const char *method, const char *url, const void *body, size_t n)
{
	static const char *const auth[][2] = {{"Authorization", "Bearer fuzz-token"}};
	struct http_local_req in = {method, url, auth, 1, body, n, 0};
	struct http_local_resp out;
	http_serve_local(api_hooks(), &srv.api, BODY_MAX, &in, &out);
	free(out.body);
	return out.status;
}

static void *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 16);
	if (!f || !buf)
		abort();
	*n = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

/* A binary, a trace of it and a job that ran, as a client would make them. */
static void seed_state(void)
{
	static const char trace[] = "core   0: 3 0x0000000080000000 (0x00000297)\n"
				    "core   0: 3 0x0000000080000004 (0x02828613)\n";
	static const char job[] = "{\"trace\": 1, \"binaries\": [1]}";
	size_t n;
	void *elf = read_file(FUZZ_ELF_DIR "/bare.elf", &n);
	unsigned st[3] = {
	    serve("POST", "/api/v1/binaries?name=bare.elf", elf, n),
	    serve("POST", "/api/v1/traces?name=t.log&format=spike", trace, strlen(trace)),
	    serve("POST", "/api/v1/jobs", job, strlen(job))};
	if (st[0] != 201 || st[1] != 201 || st[2] != 201) {
		fprintf(stderr, "fuzz_request: seeding the server: %u %u %u\n", st[0], st[1],
			st[2]);
		abort();
	}
	free(elf);
	struct job_ctl ctl = {.id = 1};
	if (worker_run(&srv.env, &ctl) < 0)
		abort();
}

static void server_open(void)
{
	char path[128];
	struct oob_err err = {0};
	FILE *f;
	snprintf(srv.dir, sizeof(srv.dir), "/tmp/fuzz_request_XXXXXX");
	if (!mkdtemp(srv.dir))
		abort();
	settings_defaults(&srv.cfg);
	snprintf(srv.cfg.data_dir, sizeof(srv.cfg.data_dir), "%s", srv.dir);
	snprintf(path, sizeof(path), "%s/catalog.db", srv.dir);
	srv.env.store = store_open(srv.dir, &err);
	srv.env.cat = srv.env.store ? catalog_open(path, &err) : NULL;
	srv.env.uploads = upload_registry_new(srv.cfg.max_uploads);
	srv.api = (struct api_ctx){.cfg = &srv.cfg,
				   .cat = srv.env.cat,
				   .store = srv.env.store,
				   .pool = job_pool_new(1, no_run, NULL, &err),
				   .uploads = srv.env.uploads,
				   .cache = api_cache_new(srv.cfg.cache_bytes)};
	snprintf(path, sizeof(path), "%s/token", srv.dir);
	if (!srv.env.cat || !srv.api.pool || !(f = fopen(path, "w")))
		abort();
	fputs("fuzz-token\n", f);
	fclose(f);
	if (api_load_token(&srv.api, path, &err) < 0) {
		fprintf(stderr, "fuzz_request: %s\n", err.msg);
		abort();
	}
	seed_state();
}

static void server_close(void)
{
	char cmd[128];
	job_pool_free(srv.api.pool);
	api_cache_free(srv.api.cache);
	upload_registry_free(srv.env.uploads);
	catalog_close(srv.env.cat);
	store_free(srv.env.store);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", srv.dir);
	if (system(cmd) != 0)
		abort();
}

static void at_exit(void)
{
	server_close();
}

/* The request line, the headers and the body of an input (copied, so that
 * each is NUL-terminated); 0 if there is no request line. */
struct request {
	char *text;
	const char *method, *url;
	const char *headers[MAX_HEADERS][2];
	size_t nheaders;
	const char *body;
	size_t nbody;
};

static int split(const uint8_t *data, size_t size, struct request *q)
{
	char *p, *eol, *end;
	*q = (struct request){0};
	q->text = malloc(size + 1);
	memcpy(q->text, data, size);
	q->text[size] = '\0';
	end = q->text + size;
	if (!(eol = memchr(q->text, '\n', size)) ||
	    !(p = memchr(q->text, ' ', (size_t)(eol - q->text))))
		return 0;
	*p = *eol = '\0';
	q->method = q->text;
	q->url = p + 1;
	for (p = eol + 1; p < end && *p != '\n'; p = eol + 1) {
		char *colon;
		if (!(eol = memchr(p, '\n', (size_t)(end - p))))
			eol = end;
		*eol = '\0';
		if ((colon = strchr(p, ':')) && q->nheaders < MAX_HEADERS) {
			*colon = '\0';
			q->headers[q->nheaders][0] = p;
			q->headers[q->nheaders++][1] = colon + 1 + (colon[1] == ' ');
		}
		if (eol == end)
			break;
	}
	q->body = p < end ? p + 1 : end;
	q->nbody = (size_t)(end - q->body);
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct request q;
	struct http_local_resp out;

	if (!srv.dir[0]) {
		oob_log_set_level(OOB_LOG_ERROR);
		server_open();
		atexit(at_exit);
	} else if (srv.served % RESET_EVERY == 0) {
		server_close();
		server_open();
	}
	srv.served++;
	if (split(data, size, &q)) {
		struct http_local_req in = {q.method, q.url,   q.headers,      q.nheaders,
					    q.body,   q.nbody, 1 + size % 8192};
		http_serve_local(api_hooks(), &srv.api, BODY_MAX, &in, &out);
		if (getenv("FUZZ_REQUEST_VERBOSE"))
			fprintf(stderr, "%s %.200s -> %u %.200s\n", q.method, q.url, out.status,
				out.body ? out.body : "");
		if (out.status < 100 || out.status > 599 ||
		    (out.status >= 500 && out.status != 503))
			abort(); /* no response, or the server blamed itself */
		free(out.body);
	}
	free(q.text);
	return 0;
}
