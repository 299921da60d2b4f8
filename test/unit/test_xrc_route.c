/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "verbs.h"
#include "xrc_route.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

/*
 * The XRC carrier's table of IB paths (xrc_route.h) on hand-made ids: no
 * rdma_cm behind them, only what librdmacm fills in (the peer's address,
 * ibaddr at ADDR_RESOLVED, route.path_rec at ROUTE_RESOLVED).  The carrier
 * over the XRC model is in test_xrc.c.
 */

struct tid {
	struct rdma_cm_id id;
	struct ibv_sa_path_rec path;
	struct xrc_route_use use;
};

/* An id of port space `ps` whose address towards `node` (10.0.0.1 + node) is resolved. */
static void tid_init(struct tid *t, enum rdma_port_space ps, int node)
{
	memset(t, 0, sizeof(*t));
	t->id.ps = ps;
	t->id.route.addr.dst_sin.sin_family = AF_INET;
	t->id.route.addr.dst_sin.sin_addr.s_addr = htonl(0x0a000001u + (uint32_t)node);
	t->id.route.addr.addr.ibaddr.sgid.raw[15] = 0x99;
	t->id.route.addr.addr.ibaddr.dgid.raw[15] = (uint8_t)node;
}

/* Its route resolved: the SA's path between the GIDs its address gave. */
static void tid_route(struct tid *t, uint16_t dlid)
{
	t->path.sgid = t->id.route.addr.addr.ibaddr.sgid;
	t->path.dgid = t->id.route.addr.addr.ibaddr.dgid;
	t->path.dlid = htobe16(dlid);
	t->path.numb_path = 1;
	t->id.route.path_rec = &t->path;
	t->id.route.num_paths = 1;
}

/* `t` finds no path, resolves it (`dlid`) and the table keeps it. */
static void resolve(struct xrc_routes *rt, struct tid *t, uint16_t dlid)
{
	struct ofx_list woken;

	ofx_list_init(&woken);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &t->id, &t->use), XRC_ROUTE_RESOLVE);
	CU_ASSERT_TRUE(t->use.owner);
	tid_route(t, dlid);
	xrc_route_resolved(rt, &t->id, &t->use, &woken);
	CU_ASSERT_TRUE(ofx_list_empty(&woken));
}

/* `t` is given the kept path: its DLID. */
static int given(struct xrc_routes *rt, struct tid *t)
{
	if (xrc_route_lookup(rt, &t->id, &t->use) != XRC_ROUTE_SET)
		return -1;
	return be16toh(t->use.path.path.dlid);
}

static void test_ib_path_packs_the_wire_path_record(void)
{
	struct tid t;
	struct ibv_path_data d;
	const struct ibv_path_record *r = &d.path;

	tid_init(&t, RDMA_PS_UDP, 1);
	memset(&d, 0xa5, sizeof(d));
	CU_ASSERT_EQUAL(ofx_verbs_ib_path(&t.id, &d), -ENODATA);
	tid_route(&t, 0x1234);
	t.path.slid = htobe16(0x42);
	t.path.flow_label = htobe32(0xabcde);
	t.path.hop_limit = 0x40;
	t.path.traffic_class = 0x1c;
	t.path.reversible = 1;
	t.path.pkey = htobe16(0x8001);
	t.path.sl = 5;
	t.path.mtu_selector = 2;
	t.path.mtu = IBV_MTU_4096;
	t.path.rate_selector = 2;
	t.path.rate = 16;
	t.path.packet_life_time_selector = 2;
	t.path.packet_life_time = 18;
	t.path.preference = 0x2b;	/* librdmacm's path flags, not a preference */
	CU_ASSERT_EQUAL(ofx_verbs_ib_path(&t.id, &d), 0);
	/* the one entry ucma_set_ib_path takes */
	CU_ASSERT_EQUAL(d.flags, IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY |
					 IBV_PATH_FLAG_BIDIRECTIONAL);
	CU_ASSERT_EQUAL(d.reserved, 0);
	CU_ASSERT_EQUAL(r->service_id, 0);
	CU_ASSERT_EQUAL(memcmp(&r->dgid, &t.path.dgid, sizeof(r->dgid)), 0);
	CU_ASSERT_EQUAL(memcmp(&r->sgid, &t.path.sgid, sizeof(r->sgid)), 0);
	CU_ASSERT_EQUAL(be16toh(r->dlid), 0x1234);
	CU_ASSERT_EQUAL(be16toh(r->slid), 0x42);
	/* PathRecord: raw traffic 31, reserved 30:28, flow label 27:8, hop limit 7:0 */
	CU_ASSERT_EQUAL(be32toh(r->flowlabel_hoplimit), 0xabcde40u);
	CU_ASSERT_EQUAL(r->tclass, 0x1c);
	CU_ASSERT_EQUAL(r->reversible_numpath, 0x81);
	CU_ASSERT_EQUAL(be16toh(r->pkey), 0x8001);
	CU_ASSERT_EQUAL(be16toh(r->qosclass_sl), 5);
	/* selector 7:6, value 5:0 */
	CU_ASSERT_EQUAL(r->mtu, 0x80 | IBV_MTU_4096);
	CU_ASSERT_EQUAL(r->rate, 0x80 | 16);
	CU_ASSERT_EQUAL(r->packetlifetime, 0x80 | 18);
	CU_ASSERT_EQUAL(r->preference, 0);
	for (size_t i = 0; i < sizeof(r->reserved); i++)
		CU_ASSERT_EQUAL(r->reserved[i], 0);
}

static void test_a_path_is_kept_per_port_space_and_node(void)
{
	struct xrc_routes *rt = xrc_routes_new(8);
	struct tid a, b, c, d;
	struct ofx_list woken;

	ofx_list_init(&woken);
	tid_init(&a, RDMA_PS_UDP, 1);
	resolve(rt, &a, 11);
	/* another process of node 1 answers on another port: the same path */
	tid_init(&b, RDMA_PS_UDP, 1);
	b.id.route.addr.dst_sin.sin_port = htons(4000);
	CU_ASSERT_EQUAL(given(rt, &b), 11);
	CU_ASSERT_NOT_EQUAL(b.use.gen, 0);
	/* the INI connection's port space, and node 2, are asked on their own */
	tid_init(&c, RDMA_PS_IB, 1);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &c.id, &c.use), XRC_ROUTE_RESOLVE);
	tid_init(&d, RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &d.id, &d.use), XRC_ROUTE_RESOLVE);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 3);
	xrc_route_leave(rt, &c.use, &woken);
	xrc_route_leave(rt, &d.use, &woken);
	CU_ASSERT_TRUE(ofx_list_empty(&woken));
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 1);
	xrc_routes_free(rt);
}

/* Requests behind a resolution take its path, or its failure. */
static void test_waiters_get_the_owners_path_or_its_failure(void)
{
	struct xrc_routes *rt = xrc_routes_new(8);
	struct tid o, w[2];
	struct ofx_list woken;
	int n = 0;

	ofx_list_init(&woken);
	tid_init(&o, RDMA_PS_UDP, 1);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &o.id, &o.use), XRC_ROUTE_RESOLVE);
	for (int i = 0; i < 2; i++) {
		tid_init(&w[i], RDMA_PS_UDP, 1);
		CU_ASSERT_EQUAL(xrc_route_lookup(rt, &w[i].id, &w[i].use), XRC_ROUTE_WAIT);
	}
	tid_route(&o, 21);
	xrc_route_resolved(rt, &o.id, &o.use, &woken);
	while (!ofx_list_empty(&woken)) {
		struct xrc_route_use *u = container_of(woken.next, struct xrc_route_use, wait_link);
		struct tid *t = container_of(u, struct tid, use);

		ofx_list_del(&u->wait_link);
		CU_ASSERT_FALSE(u->failed);
		CU_ASSERT_EQUAL(given(rt, t), 21);
		n++;
	}
	CU_ASSERT_EQUAL(n, 2);

	/* an owner that fails (ROUTE_ERROR) fails them; nothing is kept */
	tid_init(&o, RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &o.id, &o.use), XRC_ROUTE_RESOLVE);
	tid_init(&w[0], RDMA_PS_UDP, 2);
	tid_init(&w[1], RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &w[0].id, &w[0].use), XRC_ROUTE_WAIT);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &w[1].id, &w[1].use), XRC_ROUTE_WAIT);
	/* one waiter gives up on its own: it just leaves */
	xrc_route_leave(rt, &w[1].use, &woken);
	CU_ASSERT_TRUE(ofx_list_empty(&woken));
	xrc_route_leave(rt, &o.use, &woken);
	CU_ASSERT_PTR_EQUAL(woken.next, &w[0].use.wait_link);
	CU_ASSERT_PTR_EQUAL(woken.next->next, &woken);
	CU_ASSERT_TRUE(w[0].use.failed);
	CU_ASSERT_PTR_NULL(w[0].use.route);
	ofx_list_del(&w[0].use.wait_link);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 1);
	xrc_routes_free(rt);
}

static void test_a_full_table_evicts_the_least_recently_used_path(void)
{
	struct xrc_routes *rt = xrc_routes_new(2);
	struct tid t[4], u;
	struct ofx_list woken;

	ofx_list_init(&woken);
	for (int i = 0; i < 2; i++) {
		tid_init(&t[i], RDMA_PS_UDP, i + 1);
		resolve(rt, &t[i], (uint16_t)(31 + i));
	}
	tid_init(&u, RDMA_PS_UDP, 1);
	CU_ASSERT_EQUAL(given(rt, &u), 31);	/* node 1 used last */
	tid_init(&t[2], RDMA_PS_UDP, 3);
	resolve(rt, &t[2], 33);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 2);
	CU_ASSERT_EQUAL(given(rt, &u), 31);
	tid_init(&u, RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(given(rt, &u), -1);	/* node 2 went */
	xrc_route_leave(rt, &u.use, &woken);	/* it took a slot to resolve: given back */

	/* every slot resolving: a new peer resolves without a slot */
	xrc_routes_free(rt);
	rt = xrc_routes_new(1);
	tid_init(&t[0], RDMA_PS_UDP, 1);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &t[0].id, &t[0].use), XRC_ROUTE_RESOLVE);
	tid_init(&t[3], RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &t[3].id, &t[3].use), XRC_ROUTE_RESOLVE);
	CU_ASSERT_PTR_NULL(t[3].use.route);
	CU_ASSERT_FALSE(t[3].use.owner);
	xrc_route_leave(rt, &t[3].use, &woken);	/* a no-op */
	xrc_route_leave(rt, &t[0].use, &woken);
	CU_ASSERT_TRUE(ofx_list_empty(&woken));
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 0);
	xrc_routes_free(rt);
}

static void test_stale_and_moved_paths_are_dropped(void)
{
	struct xrc_routes *rt = xrc_routes_new(8);
	struct tid a, b, c, old;

	tid_init(&a, RDMA_PS_UDP, 1);
	resolve(rt, &a, 41);
	tid_init(&b, RDMA_PS_UDP, 1);
	CU_ASSERT_EQUAL(given(rt, &b), 41);
	old = b;
	/* b got no answer over it: gone, and the next one asks */
	xrc_route_stale(rt, &b.use);
	CU_ASSERT_EQUAL(b.use.gen, 0);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 0);
	tid_init(&c, RDMA_PS_UDP, 1);
	resolve(rt, &c, 42);
	/* a late report about the old path spares the new one */
	xrc_route_stale(rt, &old.use);
	CU_ASSERT_EQUAL(given(rt, &b), 42);
	/* the peer's address now names another GID: resolved again */
	tid_init(&c, RDMA_PS_UDP, 1);
	c.id.route.addr.addr.ibaddr.dgid.raw[0] = 0xfe;
	resolve(rt, &c, 43);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 1);
	xrc_routes_free(rt);
}

/* A flush forgets what is ready; what was being resolved then is its owner's alone. */
static void test_a_flush_keeps_nothing_resolved_across_it(void)
{
	struct xrc_routes *rt = xrc_routes_new(8);
	struct tid a, o, w, n;
	struct ofx_list woken;

	ofx_list_init(&woken);
	tid_init(&a, RDMA_PS_UDP, 1);
	resolve(rt, &a, 51);
	tid_init(&o, RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &o.id, &o.use), XRC_ROUTE_RESOLVE);
	tid_init(&w, RDMA_PS_UDP, 2);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &w.id, &w.use), XRC_ROUTE_WAIT);
	xrc_routes_flush(rt);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 1);	/* the resolving one */
	tid_route(&o, 52);
	xrc_route_resolved(rt, &o.id, &o.use, &woken);
	CU_ASSERT_EQUAL(xrc_routes_count(rt), 0);
	/* its waiter looks again, unharmed: it resolves itself */
	CU_ASSERT_PTR_EQUAL(woken.next, &w.use.wait_link);
	CU_ASSERT_FALSE(w.use.failed);
	ofx_list_del(&w.use.wait_link);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &w.id, &w.use), XRC_ROUTE_RESOLVE);
	CU_ASSERT_TRUE(w.use.owner);
	tid_init(&n, RDMA_PS_UDP, 1);
	CU_ASSERT_EQUAL(xrc_route_lookup(rt, &n.id, &n.use), XRC_ROUTE_RESOLVE);
	/* freed with resolving entries: nothing is left (ASan) */
	xrc_routes_free(rt);
}

CU_TestInfo ofx_test_xrc_route[] = {
	{ "ib path packs the wire path record", test_ib_path_packs_the_wire_path_record },
	{ "a path is kept per port space and node", test_a_path_is_kept_per_port_space_and_node },
	{ "waiters get the owner's path or its failure",
	  test_waiters_get_the_owners_path_or_its_failure },
	{ "a full table evicts the least recently used path",
	  test_a_full_table_evicts_the_least_recently_used_path },
	{ "stale and moved paths are dropped", test_stale_and_moved_paths_are_dropped },
	{ "a flush keeps nothing resolved across it", test_a_flush_keeps_nothing_resolved_across_it },
	CU_TEST_INFO_NULL,
};
