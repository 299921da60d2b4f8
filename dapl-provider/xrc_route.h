/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_XRC_ROUTE_H
#define OFX_XRC_ROUTE_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>

#include "util.h"

/*
 * The IB paths of the XRC carrier (xrc_cm.c), resolved once and reused.
 *
 * Every control message is a new rdma_cm id (an id connects once:
 * rdma_connect moves it from ROUTE_RESOLVED to CONNECT and nothing moves
 * it back), and on InfiniBand each id's rdma_resolve_route is a PathRecord
 * query to the subnet administrator: at all-to-all scale a query storm.
 * So an IA keeps the primary path it resolved for each (port space, peer
 * address) and gives it to the next id to that peer with
 * rdma_set_option(RDMA_OPTION_IB, RDMA_OPTION_IB_PATH) once its address is
 * resolved (the kernel then reports ROUTE_RESOLVED without asking the SA);
 * address resolution stays per id, a lookup in the kernel's neighbour
 * table, and rdma_set_option needs an id in ADDR_RESOLVED.  Requests that
 * reach ADDR_RESOLVED while the path to their peer is being resolved wait
 * for it instead of asking too: a burst of N messages costs one query.
 *
 * The key is the port space (the SA query names the service ID, port space
 * and port, so QoS may tell the spaces apart) and the peer's address
 * without port (every process of a node answers from the same port; the
 * service ports are ephemeral, no QoS rule can name them).
 *
 * A path is dropped
 *   - when an id's resolved address disagrees with it (the peer's address
 *     now names another GID, or ours moved to another port),
 *   - when a request that was given it got no answer at all (UNREACHABLE
 *     with -ETIMEDOUT: the path may lead nowhere); a REJ or a SIDR REP that
 *     refuses came over the path, which keeps it,
 *   - on xrc_routes_flush: an ADDR_CHANGE of a carrier id, a port event
 *     of the device (ia.c); paths being resolved then are used by the id
 *     that resolved them and not kept,
 *   - when the table is full (the least recently used ready path goes);
 *     with every slot resolving, a new peer resolves without sharing.
 * A resolution that fails (ROUTE_ERROR, or rdma_resolve_route refused)
 * fails its waiters too: each counts a try, and they resolve again.
 *
 * RoCE and iWARP resolve routes locally (no SA): the carrier does not use
 * the table there.  One table per IA; its own lock is a leaf, taken from
 * the progress thread and from the device's async handler (flush).
 */

struct xrc_routes;
struct xrc_route;

/* A request's part in the table (embedded in it; zeroed = none). */
struct xrc_route_use {
	struct xrc_route *route;	/* resolved by it (owner) or waited for */
	bool owner;
	bool failed;			/* woken: the resolution it waited for failed */
	struct ofx_list wait_link;	/* on the route's waiters, then on a woken list */
	uint64_t gen;			/* of the path it was given (0: none) */
	uint8_t key[20];		/* port space and peer address, for xrc_route_stale */
	struct ibv_path_data path;	/* what it was given */
};

/* What a request at ADDR_RESOLVED does next (xrc_route_lookup). */
enum xrc_route_next {
	XRC_ROUTE_SET,		/* set use->path on its id (ofx_verbs_set_ib_path) */
	XRC_ROUTE_RESOLVE,	/* rdma_resolve_route, then xrc_route_resolved */
	XRC_ROUTE_WAIT,		/* parked: woken by the owner's result */
};

/* The table: at most `max` paths; NULL without memory (the carrier then resolves every id). */
struct xrc_routes *xrc_routes_new(unsigned int max);
/* Frees the table (the uses are the caller's: none may be parked). NULL-safe. */
void xrc_routes_free(struct xrc_routes *rt);
/* Forgets every path (see above). */
void xrc_routes_flush(struct xrc_routes *rt);

/* Request `u` of `id` reached ADDR_RESOLVED towards its peer (rdma_get_peer_addr). */
enum xrc_route_next xrc_route_lookup(struct xrc_routes *rt, struct rdma_cm_id *id,
				     struct xrc_route_use *u);
/*
 * The owner's ROUTE_RESOLVED: its path (id->route) is kept; the waiters
 * move to `woken` (struct xrc_route_use by wait_link) to look up again.
 */
void xrc_route_resolved(struct xrc_routes *rt, struct rdma_cm_id *id, struct xrc_route_use *u,
			struct ofx_list *woken);
/*
 * `u` leaves the table: an owner's resolution failed (or it is done), so
 * its waiters move to `woken` with `failed` set; a waiter just stops
 * waiting.  A no-op for a use that neither owns nor waits.
 */
void xrc_route_leave(struct xrc_routes *rt, struct xrc_route_use *u, struct ofx_list *woken);
/* The path `u` was given did not lead to the peer: dropped, unless replaced since. */
void xrc_route_stale(struct xrc_routes *rt, struct xrc_route_use *u);
/* Paths in the table now, ready or resolving (tests, logs). */
unsigned int xrc_routes_count(struct xrc_routes *rt);

#endif
