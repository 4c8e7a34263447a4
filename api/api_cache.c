#include "api_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/oob_mem.h"

struct api_blob {
	atomic_uint refs; /* the entry's list holds one while listed */
	char key[128];
	char *data;
	size_t len;
	int building, failed;
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
};

struct api_cache *api_cache_new(uint64_t budget)
{
	struct api_cache *c = oob_xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->ready, NULL);
	c->budget = budget ? budget : API_CACHE_DEFAULT_BYTES;
	return c;
}

void api_blob_put(struct api_blob *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1) {
		free(b->data);
		free(b);
	}
}

const char *api_blob_data(const struct api_blob *b, size_t *len)
{
	*len = b->len;
	return b->data;
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
		n += b->len;
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

void api_cache_forget(struct api_cache *c, int64_t job)
{
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < API_CACHE_SLOTS; i++)
		if (c->slot[i] && c->slot[i]->job == job)
			drop_slot_locked(c, i);
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

/* Lists a new blob first (the list's reference), dropping the oldest
 * finished ones beyond API_CACHE_RENDERED. */
static struct api_blob *add_blob_locked(struct api_cache_ref *e, const char *key)
{
	struct api_blob *b = oob_xcalloc(1, sizeof(*b));
	snprintf(b->key, sizeof(b->key), "%s", key);
	atomic_init(&b->refs, 1);
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

struct api_blob *api_cache_render(struct api_cache *c, struct api_cache_ref *ref, const char *key,
				  char *(*build)(void *arg, size_t *len), void *arg)
{
	if (strlen(key) >= sizeof(ref->blobs->key)) {
		struct api_blob *b = oob_xcalloc(1, sizeof(*b));
		atomic_init(&b->refs, 1);
		if ((b->data = build(arg, &b->len)))
			return b;
		free(b);
		return NULL;
	}
	pthread_mutex_lock(&c->lock);
	struct api_blob *b = find_blob_locked(ref, key);
	if (b) {
		atomic_fetch_add(&b->refs, 1);
		while (b->building)
			pthread_cond_wait(&c->ready, &c->lock);
		ref->used = ++c->tick;
		pthread_mutex_unlock(&c->lock);
		if (!b->failed)
			return b;
		api_blob_put(b);
		return NULL;
	}
	b = add_blob_locked(ref, key);
	b->building = 1;
	atomic_fetch_add(&b->refs, 1); /* the caller's */
	pthread_mutex_unlock(&c->lock);

	size_t len = 0;
	char *data = build(arg, &len);
	pthread_mutex_lock(&c->lock);
	b->building = 0;
	b->data = data;
	b->len = data ? len : 0;
	if (!data) {
		b->failed = 1;
		unlink_blob_locked(ref, b);
	} else if (ref->in_table) {
		fit_budget_locked(c);
	}
	pthread_cond_broadcast(&c->ready);
	pthread_mutex_unlock(&c->lock);
	if (data)
		return b;
	api_blob_put(b);
	return NULL;
}

static void release_blob(void *cls)
{
	api_blob_put(cls);
}

void api_cache_respond(struct http_req *r, struct api_blob *b, const char *ctype)
{
	http_respond_shared(r, 200, ctype, b->data, b->len, release_blob, b);
}

char *api_cache_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			 size_t *len)
{
	char *copy = NULL;
	pthread_mutex_lock(&c->lock);
	struct api_blob *b = find_blob_locked(ref, key);
	if (b && b->data) {
		copy = oob_xmalloc(b->len + 1);
		memcpy(copy, b->data, b->len);
		copy[b->len] = '\0';
		*len = b->len;
	}
	pthread_mutex_unlock(&c->lock);
	return copy;
}

void api_cache_keep_rendered(struct api_cache *c, struct api_cache_ref *ref, const char *key,
			     const char *body, size_t len)
{
	if (strlen(key) >= sizeof(ref->blobs->key))
		return;
	char *copy = oob_xmalloc(len + 1);
	memcpy(copy, body, len);
	copy[len] = '\0';
	pthread_mutex_lock(&c->lock);
	struct api_blob *old = find_blob_locked(ref, key);
	if (old && !old->building)
		unlink_blob_locked(ref, old);
	struct api_blob *b = add_blob_locked(ref, key);
	b->data = copy;
	b->len = len;
	if (ref->in_table)
		fit_budget_locked(c);
	pthread_mutex_unlock(&c->lock);
}
