#include "api_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/oob_mem.h"

struct api_blob {
	atomic_uint refs; /* the entry's list holds one while listed */
	char key[128];
	char *data;
	size_t len;
	int building, failed;
	int fd; /* a body in a file (api_build.fd), else -1 */
	/* Listed for one more request only: the error of a build whose
	 * requester had gone (answered 202), or a body in a file. */
	int once;
	struct api_build b;
	struct timespec started, finished;
	struct api_blob *next;
};

struct api_cache_ref {
	struct api_blob *blobs; /* newest first */
	unsigned nblobs;
	int64_t job;
	int64_t mtime_ns;
	int64_t size;
	struct result *r;
	unsigned refs; /* the table's own reference counts as one */
	int in_table;
	int loading, failed;
	struct oob_err err; /* why the load failed */
	uint64_t used;
};

struct api_cache {
	pthread_mutex_t lock;
	pthread_cond_t ready; /* a load or a build finished */
	struct api_cache_ref *slot[API_CACHE_SLOTS];
	uint64_t tick, budget;
	int closing; /* api_cache_close: builds start cancelled */
};

struct api_cache *api_cache_new(uint64_t budget)
{
	struct api_cache *c = oob_xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->ready, NULL);
	c->budget = budget ? budget : API_CACHE_DEFAULT_BYTES;
	return c;
}

static void api_blob_put(struct api_blob *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
		free(b->data);
		if (b->fd >= 0)
			close(b->fd);
		free(b);
	}
}

static void unref_locked(struct api_cache_ref *e)
{
	if (--e->refs)
		return;
	while (e->blobs) {
		struct api_blob *b = e->blobs;
		e->blobs = b->next;
		api_blob_put(b);
	}
	result_free(e->r);
	free(e);
}

void api_cache_free(struct api_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i])
			unref_locked(c->slot[i]);
	pthread_cond_destroy(&c->ready);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static int file_version(const char *path, int64_t *mtime_ns, int64_t *size)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -errno;
	*mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	*size = (int64_t)st.st_size;
	return 0;
}

static uint64_t entry_bytes(const struct api_cache_ref *e)
{
	uint64_t n = (uint64_t)e->size;
	for (const struct api_blob *b = e->blobs; b; b = b->next)
		n += b->fd < 0 ? b->len : 0; /* a file's body is on disk */
	return n;
}

static void drop_slot_locked(struct api_cache *c, int i)
{
	c->slot[i]->in_table = 0;
	unref_locked(c->slot[i]);
	c->slot[i] = NULL;
}

static int slot_of_locked(struct api_cache *c, const struct api_cache_ref *e)
{
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i] == e)
			return i;
	return -1;
}

/* Drops least recently used entries until the table fits the budget; an
 * entry over the budget on its own goes too (its holders keep it alive). */
static void fit_budget_locked(struct api_cache *c)
{
	for (;;) {
		uint64_t total = 0;
		int lru = -1;
		for (int i = 0; i < API_CACHE_SLOTS; i++) {
			if (!c->slot[i])
				continue;
			total += entry_bytes(c->slot[i]);
			if (!c->slot[i]->loading &&
			    (lru < 0 || c->slot[i]->used < c->slot[lru]->used))
				lru = i;
		}
		if (total <= c->budget || lru < 0)
			return;
		drop_slot_locked(c, lru);
	}
}

uint64_t api_cache_bytes(struct api_cache *c)
{
	uint64_t total = 0;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i])
			total += entry_bytes(c->slot[i]);
	pthread_mutex_unlock(&c->lock);
	return total;
}

/* A slot for a new entry: a free one, else the least recently used. */
static int victim_locked(struct api_cache *c)
{
	int best = 0;
	for (int i = 0; i < API_CACHE_SLOTS; i++) {
		if (!c->slot[i])
			return i;
		if (c->slot[i]->used < c->slot[best]->used)
			best = i;
	}
	drop_slot_locked(c, best);
	return best;
}

static struct api_cache_ref *find_locked(struct api_cache *c, int64_t job, int64_t mt, int64_t size)
{
	for (int i = 0; i < API_CACHE_SLOTS; i++) {
		struct api_cache_ref *e = c->slot[i];
		if (!e || e->job != job)
			continue;
		if (e->mtime_ns == mt && e->size == size) {
			e->refs++;
			e->used = ++c->tick;
			return e;
		}
		drop_slot_locked(c, i); /* a stale version */
	}
	return NULL;
}

/* Waits for e's load; the caller holds a reference. NULL (reference
 * released, err filled) if it failed. */
static struct api_cache_ref *await_load_locked(struct api_cache *c, struct api_cache_ref *e,
					       struct oob_err *err)
{
	while (e->loading)
		pthread_cond_wait(&c->ready, &c->lock);
	if (!e->failed)
		return e;
	if (err)
		*err = e->err;
	unref_locked(e);
	return NULL;
}

struct api_cache_ref *api_cache_get(struct api_cache *c, int64_t job, const char *path,
				    const struct result **r, struct oob_err *err)
{
	int64_t mt = 0, size = 0;
	int rc = file_version(path, &mt, &size);
	if (rc < 0) {
		oob_err_set(err, rc, "result of job %lld: %s", (long long)job, strerror(-rc));
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	struct api_cache_ref *e = find_locked(c, job, mt, size);
	if (e) {
		e = await_load_locked(c, e, err);
		pthread_mutex_unlock(&c->lock);
		if (e)
			*r = e->r;
		return e;
	}
	/* Ours to load; later requests find it loading and wait. */
	e = oob_xcalloc(1, sizeof(*e));
	e->job = job;
	e->mtime_ns = mt;
	e->size = size;
	e->loading = 1;
	e->refs = 2; /* the table's and the caller's */
	e->in_table = 1;
	e->used = ++c->tick;
	c->slot[victim_locked(c)] = e;
	pthread_mutex_unlock(&c->lock);

	struct oob_err lerr = {0};
	struct result *loaded = result_load(path, &lerr);
	pthread_mutex_lock(&c->lock);
	e->loading = 0;
	e->r = loaded;
	if (!loaded) {
		e->failed = 1;
		e->err = lerr;
		int i = slot_of_locked(c, e);
		if (i >= 0)
			drop_slot_locked(c, i); /* the next request tries again */
	} else {
		fit_budget_locked(c);
	}
	pthread_cond_broadcast(&c->ready);
	e = await_load_locked(c, e, err);
	pthread_mutex_unlock(&c->lock);
	if (e)
		*r = e->r;
	return e;
}

void api_cache_put(struct api_cache *c, struct api_cache_ref *ref)
{
	if (!ref)
		return;
	pthread_mutex_lock(&c->lock);
	unref_locked(ref);
	pthread_mutex_unlock(&c->lock);
}

static void cancel_builds_locked(struct api_cache_ref *e)
{
	for (struct api_blob *b = e->blobs; b; b = b->next)
		if (b->building)
			atomic_store(&b->b.progress.cancel, 1);
}

void api_cache_forget(struct api_cache *c, int64_t job)
{
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i] && c->slot[i]->job == job) {
			cancel_builds_locked(c->slot[i]);
			drop_slot_locked(c, i);
		}
	pthread_mutex_unlock(&c->lock);
}

void api_cache_close(struct api_cache *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = 1;
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i])
			cancel_builds_locked(c->slot[i]);
	pthread_mutex_unlock(&c->lock);
}

static void unlink_blob_locked(struct api_cache_ref *e, struct api_blob *b)
{
	for (struct api_blob **p = &e->blobs; *p; p = &(*p)->next)
		if (*p == b) {
			*p = b->next;
			e->nblobs--;
			api_blob_put(b);
			return;
		}
}

static struct api_blob *find_blob_locked(struct api_cache_ref *e, const char *key)
{
	for (struct api_blob *b = e->blobs; b; b = b->next)
		if (!strcmp(b->key, key))
			return b;
	return NULL;
}

static struct api_blob *new_blob(unsigned refs)
{
	struct api_blob *b = oob_xcalloc(1, sizeof(*b));
	atomic_init(&b->refs, refs);
	b->fd = b->b.fd = -1;
	return b;
}

/* Lists a new blob first (the list's reference), dropping the oldest
 * finished ones beyond API_CACHE_RENDERED. */
static struct api_blob *add_blob_locked(struct api_cache_ref *e, const char *key)
{
	struct api_blob *b = new_blob(1);
	snprintf(b->key, sizeof(b->key), "%s", key);
	b->next = e->blobs;
	e->blobs = b;
	e->nblobs++;
	while (e->nblobs > API_CACHE_RENDERED) {
		struct api_blob *old = NULL;
		for (struct api_blob *x = e->blobs; x; x = x->next)
			if (!x->building)
				old = x;
		if (!old)
			break;
		unlink_blob_locked(e, old);
	}
	return b;
}

static void release_blob(void *cls)
{
	api_blob_put(cls);
}

/* Responds with b's body, sent without a copy, or with its build's error;
 * takes over the reference. */
static void respond_blob(struct http_req *r, struct api_blob *b, const char *ctype)
{
	if (!b->failed && b->fd < 0) {
		http_respond_shared(r, 200, ctype, b->data, b->len, release_blob, b);
		return;
	}
	int fd = b->fd >= 0 ? dup(b->fd) : -1;
	if (fd >= 0)
		http_respond_fd(r, 200, ctype, fd, b->len); /* read with offsets: shareable */
	else if (!b->failed)
		http_respond_error(r, 500, "internal", "the view's file: %s", strerror(errno));
	else if (b->b.err.code)
		http_respond_oob_err(r, &b->b.err);
	else
		http_respond_error(r, 500, "internal", "the view could not be built");
	api_blob_put(b);
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* 202: the build goes on; its progress so far. */
static void respond_building(struct http_req *r, struct api_blob *b)
{
	uint64_t total = atomic_load(&b->b.progress.total);
	uint64_t done = atomic_load(&b->b.progress.done);
	http_add_header(r, "Retry-After", "1");
	http_add_header(r, "Preference-Applied", "respond-async");
	http_respond_json(r, 202,
			  json_pack("{s:s, s:I, s:I, s:s, s:f}", "state", "building", "done",
				    (json_int_t)done, "total", (json_int_t)total, "unit",
				    "bytes of stack events", "elapsed",
				    seconds_since(&b->started)));
}

/* The Prefer header's respond-async and wait (RFC 7240): -1 when the
 * request does not ask for an asynchronous answer (or cannot have one),
 * else the milliseconds it will wait. */
static long async_wait_ms(struct http_req *r)
{
	const char *p = http_req_header(r, "Prefer");
	if (!p || !strstr(p, "respond-async") || !http_req_detachable(r))
		return -1;
	const char *w = strstr(p, "wait=");
	if (!w)
		return API_CACHE_ASYNC_WAIT_MS;
	long s = strtol(w + 5, NULL, 10);
	return s < 0 ? 0 : s > 3600 ? 3600000 : s * 1000;
}

/* Waits for b's build, at most ms milliseconds (< 0: until it ends). */
static void await_build_locked(struct api_cache *c, struct api_blob *b, long ms)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (b->building)
		if (ms < 0)
			pthread_cond_wait(&c->ready, &c->lock);
		else if (pthread_cond_timedwait(&c->ready, &c->lock, &until) != 0)
			return;
}

/* The request that runs a build, answered 202 from inside it once its wait
 * is over: an oob_progress tick, on the building thread between reads. */
struct builder {
	struct http_req *r;
	struct api_blob *b;
	long wait_ms;
	int detached;
};

static void builder_tick(void *ctx)
{
	struct builder *w = ctx;
	if (w->detached || seconds_since(&w->b->started) * 1000 < (double)w->wait_ms)
		return;
	respond_building(w->r, w->b);
	w->detached = http_detach(w->r) == 0;
}

/* Runs b's build (b listed and building) and publishes its body or error. */
static void run_build(struct api_cache *c, struct api_cache_ref *ref, struct api_blob *b,
		      const struct builder *w, api_build_fn build, void *arg)
{
	size_t len = 0;
	char *data = build(arg, &b->b, &len);
	pthread_mutex_lock(&c->lock);
	clock_gettime(CLOCK_MONOTONIC, &b->finished);
	b->building = 0;
	b->data = data;
	b->fd = data ? -1 : b->b.fd;
	b->len = data || b->fd >= 0 ? len : 0;
	b->failed = !data && b->fd < 0;
	if (b->failed || b->fd >= 0) {
		/* kept for the request that polls for it, else for no one (a
		 * failed build is tried again) */
		b->once = w->detached;
		if (!b->once)
			unlink_blob_locked(ref, b);
	} else if (ref->in_table) {
		fit_budget_locked(c);
	}
	pthread_cond_broadcast(&c->ready);
	pthread_mutex_unlock(&c->lock);
}

/* Another request builds b, or did: wait (at most wait_ms) and answer. */
static void serve_listed_locked(struct api_cache *c, struct http_req *r, struct api_cache_ref *ref,
				struct api_blob *b, long wait_ms, const char *ctype)
{
	atomic_fetch_add(&b->refs, 1);
	await_build_locked(c, b, wait_ms);
	ref->used = ++c->tick;
	int building = b->building;
	if (b->once && !building)
		unlink_blob_locked(ref, b);
	pthread_mutex_unlock(&c->lock);
	if (!building) {
		respond_blob(r, b, ctype);
		return;
	}
	respond_building(r, b);
	api_blob_put(b);
}

/* Drops the one-shot blobs nobody came for within API_CACHE_ONCE_S: a body
 * in a file holds disk space until then. */
static void sweep_once_locked(struct api_cache_ref *ref)
{
	struct api_blob *b = ref->blobs, *next;
	for (; b; b = next) {
		next = b->next;
		if (b->once && seconds_since(&b->finished) > API_CACHE_ONCE_S)
			unlink_blob_locked(ref, b);
	}
}

void api_cache_serve(struct api_cache *c, struct http_req *r, struct api_cache_ref *ref,
		     const char *key, api_build_fn build, void *arg, const char *ctype)
{
	long wait_ms = async_wait_ms(r);
	int listed = strlen(key) < sizeof(ref->blobs->key);
	struct api_blob *b;
	pthread_mutex_lock(&c->lock);
	sweep_once_locked(ref);
	if (listed && (b = find_blob_locked(ref, key))) {
		serve_listed_locked(c, r, ref, b, wait_ms, ctype);
		return;
	}
	/* Ours to build; a key too long to keep is built and not kept. */
	b = listed ? add_blob_locked(ref, key) : new_blob(0);
	b->building = 1;
	atomic_store(&b->b.progress.cancel, c->closing);
	clock_gettime(CLOCK_MONOTONIC, &b->started);
	atomic_fetch_add(&b->refs, 1); /* ours */
	pthread_mutex_unlock(&c->lock);

	struct builder w = {r, b, wait_ms, 0};
	if (wait_ms >= 0) {
		b->b.progress.tick = builder_tick;
		b->b.progress.tick_ctx = &w;
	}
	run_build(c, ref, b, &w, build, arg);
	if (w.detached)
		api_blob_put(b);
	else
		respond_blob(r, b, ctype);
}
