/* SPDX-License-Identifier: BSD-2-Clause */
#define OFX_LOG_SUBSYS OFX_SUBSYS_XRC
#include "xrc_route.h"
#include "log.h"
#include "verbs.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

/* The table of xrc_route.h: buckets by key, ready paths on an LRU list. */

#define XRC_ROUTE_BUCKETS 64
#define XRC_ROUTE_KEY_LEN 20

struct xrc_route {
	struct ofx_list bucket_link;	/* in rt->buckets[] */
	struct ofx_list lru_link;	/* ready: in rt->lru, least recently used first */
	uint8_t key[XRC_ROUTE_KEY_LEN];
	bool ready;			/* path valid; else being resolved by its owner */
	bool stale;			/* flushed while resolving: not kept */
	uint64_t gen;			/* tells a path from the one that replaced it */
	struct ibv_path_data path;
	struct ofx_list waiters;	/* struct xrc_route_use, while resolving */
};

struct xrc_routes {
	pthread_mutex_t lock;		/* a leaf: guards everything below */
	unsigned int max, count;
	uint64_t gen;
	unsigned long resolved, reused;	/* logged when the table goes */
	struct ofx_list lru;
	struct ofx_list buckets[XRC_ROUTE_BUCKETS];
};

_Static_assert(sizeof(((struct xrc_route_use *)0)->key) == XRC_ROUTE_KEY_LEN, "route key");

/* Port space (2 bytes), family (2) and the peer's address without port (16). */
static bool key_of(struct rdma_cm_id *id, uint8_t key[XRC_ROUTE_KEY_LEN])
{
	const struct sockaddr *sa = rdma_get_peer_addr(id);
	uint16_t ps = (uint16_t)id->ps, family = sa->sa_family;

	memset(key, 0, XRC_ROUTE_KEY_LEN);
	memcpy(key, &ps, sizeof(ps));
	memcpy(key + 2, &family, sizeof(family));
	if (family == AF_INET)
		memcpy(key + 4, &((const struct sockaddr_in *)sa)->sin_addr, sizeof(struct in_addr));
	else if (family == AF_INET6)
		memcpy(key + 4, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       sizeof(struct in6_addr));
	else
		return false;
	return true;
}

static struct ofx_list *bucket_of(struct xrc_routes *rt, const uint8_t *key)
{
	uint32_t h = 2166136261u;	/* FNV-1a */

	for (int i = 0; i < XRC_ROUTE_KEY_LEN; i++)
		h = (h ^ key[i]) * 16777619u;
	return &rt->buckets[h % XRC_ROUTE_BUCKETS];
}

static struct xrc_route *find(struct xrc_routes *rt, const uint8_t *key)
{
	struct ofx_list *head = bucket_of(rt, key), *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, head) {
		struct xrc_route *r = container_of(pos, struct xrc_route, bucket_link);

		if (!memcmp(r->key, key, XRC_ROUTE_KEY_LEN))
			return r;
	}
	return NULL;
}

static void route_free(struct xrc_routes *rt, struct xrc_route *r)
{
	ofx_list_del(&r->bucket_link);
	ofx_list_del(&r->lru_link);
	rt->count--;
	free(r);
}

/* A resolving entry for `key`, making room from the LRU end; NULL if none can be had. */
static struct xrc_route *route_new(struct xrc_routes *rt, const uint8_t *key)
{
	struct xrc_route *r;

	if (rt->count >= rt->max) {
		if (ofx_list_empty(&rt->lru))
			return NULL;	/* every slot is resolving */
		route_free(rt, container_of(rt->lru.next, struct xrc_route, lru_link));
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	memcpy(r->key, key, XRC_ROUTE_KEY_LEN);
	ofx_list_init(&r->lru_link);
	ofx_list_init(&r->waiters);
	ofx_list_add_tail(bucket_of(rt, key), &r->bucket_link);
	rt->count++;
	return r;
}

/*
 * A ready path still fits an id whose address just resolved: the same
 * local and remote GIDs (librdmacm fills ibaddr at ADDR_RESOLVED).
 */
static bool path_fits(const struct xrc_route *r, struct rdma_cm_id *id)
{
	const struct rdma_ib_addr *ib = &id->route.addr.addr.ibaddr;

	return !memcmp(&r->path.path.sgid, &ib->sgid, sizeof(ib->sgid)) &&
	       !memcmp(&r->path.path.dgid, &ib->dgid, sizeof(ib->dgid));
}

static void give(struct xrc_routes *rt, struct xrc_route *r, struct xrc_route_use *u)
{
	u->path = r->path;
	u->gen = r->gen;
	rt->reused++;
	/* most recently used last */
	ofx_list_del(&r->lru_link);
	ofx_list_add_tail(&rt->lru, &r->lru_link);
}

/* The waiters of `r` go to `woken`, each told whether the resolution failed. */
static void wake_all(struct xrc_route *r, struct ofx_list *woken, bool failed)
{
	struct ofx_list *pos, *tmp;

	ofx_list_for_each_safe(pos, tmp, &r->waiters) {
		struct xrc_route_use *w = container_of(pos, struct xrc_route_use, wait_link);

		ofx_list_del(pos);
		w->route = NULL;
		w->failed = failed;
		ofx_list_add_tail(woken, pos);
	}
}

struct xrc_routes *xrc_routes_new(unsigned int max)
{
	struct xrc_routes *rt = calloc(1, sizeof(*rt));

	if (!rt)
		return NULL;
	pthread_mutex_init(&rt->lock, NULL);
	rt->max = max ? max : 1;
	ofx_list_init(&rt->lru);
	for (int i = 0; i < XRC_ROUTE_BUCKETS; i++)
		ofx_list_init(&rt->buckets[i]);
	return rt;
}

void xrc_routes_free(struct xrc_routes *rt)
{
	if (!rt)
		return;
	ofx_dbg("xrc routes: %lu resolved, %lu reused", rt->resolved, rt->reused);
	for (int i = 0; i < XRC_ROUTE_BUCKETS; i++) {
		struct ofx_list *pos, *tmp;

		ofx_list_for_each_safe(pos, tmp, &rt->buckets[i])
			route_free(rt, container_of(pos, struct xrc_route, bucket_link));
	}
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}

void xrc_routes_flush(struct xrc_routes *rt)
{
	if (!rt)
		return;
	pthread_mutex_lock(&rt->lock);
	for (int i = 0; i < XRC_ROUTE_BUCKETS; i++) {
		struct ofx_list *pos, *tmp;

		ofx_list_for_each_safe(pos, tmp, &rt->buckets[i]) {
			struct xrc_route *r = container_of(pos, struct xrc_route, bucket_link);

			if (r->ready)
				route_free(rt, r);
			else
				r->stale = true;	/* its owner holds it */
		}
	}
	pthread_mutex_unlock(&rt->lock);
}

enum xrc_route_next xrc_route_lookup(struct xrc_routes *rt, struct rdma_cm_id *id,
				     struct xrc_route_use *u)
{
	enum xrc_route_next next = XRC_ROUTE_RESOLVE;
	struct xrc_route *r;

	u->gen = 0;
	u->failed = false;
	if (!rt || !key_of(id, u->key))
		return next;
	pthread_mutex_lock(&rt->lock);
	r = find(rt, u->key);
	if (r && r->ready && !path_fits(r, id)) {
		ofx_dbg("xrc route of port space 0x%x: the address moved, resolving again", id->ps);
		route_free(rt, r);
		r = NULL;
	}
	if (r && r->ready) {
		give(rt, r, u);
		next = XRC_ROUTE_SET;
	} else if (r) {
		u->route = r;
		ofx_list_add_tail(&r->waiters, &u->wait_link);
		next = XRC_ROUTE_WAIT;
	} else {
		u->route = route_new(rt, u->key);
		u->owner = u->route != NULL;
	}
	pthread_mutex_unlock(&rt->lock);
	return next;
}

void xrc_route_resolved(struct xrc_routes *rt, struct rdma_cm_id *id, struct xrc_route_use *u,
			struct ofx_list *woken)
{
	struct xrc_route *r = u->route;

	if (!rt || !r || !u->owner)
		return;
	pthread_mutex_lock(&rt->lock);
	u->route = NULL;
	u->owner = false;
	wake_all(r, woken, false);
	if (r->stale || ofx_verbs_ib_path(id, &r->path)) {
		route_free(rt, r);
	} else {
		r->ready = true;
		r->gen = ++rt->gen;
		rt->resolved++;
		ofx_list_add_tail(&rt->lru, &r->lru_link);
		/* the owner goes over this path too: no answer drops it */
		u->gen = r->gen;
	}
	pthread_mutex_unlock(&rt->lock);
}

void xrc_route_leave(struct xrc_routes *rt, struct xrc_route_use *u, struct ofx_list *woken)
{
	struct xrc_route *r = u->route;

	if (!rt || !r)
		return;
	pthread_mutex_lock(&rt->lock);
	if (u->owner) {
		wake_all(r, woken, true);
		route_free(rt, r);
	} else {
		ofx_list_del(&u->wait_link);
	}
	u->route = NULL;
	u->owner = false;
	pthread_mutex_unlock(&rt->lock);
}

void xrc_route_stale(struct xrc_routes *rt, struct xrc_route_use *u)
{
	struct xrc_route *r;

	if (!rt || !u->gen)
		return;
	pthread_mutex_lock(&rt->lock);
	r = find(rt, u->key);
	if (r && r->ready && r->gen == u->gen)
		route_free(rt, r);
	u->gen = 0;
	pthread_mutex_unlock(&rt->lock);
}

unsigned int xrc_routes_count(struct xrc_routes *rt)
{
	unsigned int n;

	if (!rt)
		return 0;
	pthread_mutex_lock(&rt->lock);
	n = rt->count;
	pthread_mutex_unlock(&rt->lock);
	return n;
}
