/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cm_cost: instructions per connection inside the provider, with no device.
 * A client IA and a server IA in one process, the real provider code
 * (libofxcore) against the verbs fake, each IA with its own progress
 * engine as ia_open starts it.  The fake's rdma_cm only queues what a test
 * hands it; here a small network model wired into its ops answers for the
 * peer: resolve_addr and resolve_route resolve, connect puts a request on
 * the server's listener, accept answers the client, establish (the RTU)
 * reaches the server, the first disconnect of a pair reaches the peer and
 * the peer's answer comes back, and a p2p SEND RTR lands in the receive
 * the server posted for it.  Events reach each IA's progress thread through
 * an eventfd behind its event channel, as the kernel's ucma fd does.
 *
 * The RTR lands before the RTU (ESTABLISHED) in that model, as on the host
 * its SEND is queued first.  `late` (argument 1) makes it land after: the
 * server's first look into its recv CQ finds nothing, and the RTR's CQE
 * comes with the completion event of the CQ's next arm, seen by a poll only
 * once the event is taken (ibv_get_cq_event), as a device's RTR arriving
 * while the server watches its channel.  The client runs as with `on`.
 *
 * Per connection, the call sequence of Debian's dtestcm -w: the client
 * thread runs dat_ep_create, dat_ep_connect (48 bytes), waits ESTABLISHED,
 * dat_ep_disconnect, waits DISCONNECTED, dat_ep_free; the server thread
 * dat_ep_create, waits the CR, dat_cr_accept (48 bytes), waits ESTABLISHED
 * and DISCONNECTED, dat_ep_free.  Waits are dat_evd_wait (blocking).
 *
 * One run makes N connections (argument 2, default 10) with p2p off, on or
 * late (on, the RTR after ESTABLISHED; argument 1).  Threads start in a fixed order, so callgrind numbers them
 * the same way every run: 1 main, 2 the client IA's progress thread, 3 the
 * server's, 4 the client, 5 the server.  test/bench/cm-cost runs it under
 * callgrind with --separate-threads=yes for two values of N and sums the
 * self cost of the functions compiled from dapl-provider/ per side; the
 * difference of the two runs cancels set-up and teardown (a client request
 * dump would hold the calling thread only).  The program checks that every
 * connection went through (exit status 1 otherwise).
 *
 * `cm_cost mem N` (4 < N <= 16) measures memory instead, with the EPs of
 * dapltest-scripts/bench's scale part (send and receive depth 8): both
 * threads make 4 connections, then N - 4 more, and keep them all up; main
 * prints the heap the N - 4 hold per connection (mallinfo2 uordblks +
 * hblkhd, as the scale part counts), the fake's objects in it (QPs,
 * cm_ids), the provider's rest, and the provider's own allocations of one
 * client and one server EP (the EP, its rings and receive segments).  The
 * connections are then ended and freed as in the other modes.  Not under
 * ASan, whose allocator mallinfo2 does not see.
 */
#include "fake_verbs.h"

#include <CUnit/CUnit.h>

#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "log.h"
#include "progress.h"
#include "pz.h"
#include "sp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define QUAL 4000
#define WAIT_US (30 * 1000000)	/* bounds a broken provider only */
#define PAIRS 16
#define QPS 64

static atomic_int failures;

#define FAIL(what)                                                                  \
	do {                                                                        \
		fprintf(stderr, "cm_cost: %s:%d: %s\n", __FILE__, __LINE__, what); \
		atomic_fetch_add(&failures, 1);                                     \
	} while (0)
#define CHECK(cond)                      \
	do {                             \
		if (!(cond)) {           \
			FAIL(#cond);     \
			return;          \
		}                        \
	} while (0)

/* ---- the network model ------------------------------------------------------ */

/* A connection as the wire sees it: the two ids, their QPs, who hung up first. */
struct pair {
	struct rdma_cm_id *cli, *srv;
	uint32_t cli_qpn, srv_qpn;
	struct rdma_cm_id *disc_first;
	bool disc_done;
	/* late: the RTR on its way, its CQ's event fired (rtr_fired) or not yet */
	struct ibv_cq *rtr_cq;
	struct ibv_wc rtr_wc;
	bool rtr_fired;
};

static bool bench_late;

/*
 * The first receive posted on a QP: the RTR's (the bench posts none of its
 * own).  Keyed by QP number, which the fake never reuses (a QP's address
 * may be): the QP is only looked at while its number is a live pair's.
 */
struct first_recv {
	uint32_t qpn;
	struct ibv_qp *qp;
	uint64_t wr_id;
};

static struct {
	pthread_mutex_t lock;	/* a leaf: taken inside the provider's calls */
	struct pair pairs[PAIRS];
	struct first_recv recvs[QPS];
	unsigned int nrecvs;
	struct rdma_cm_id *listen_id;
	struct sockaddr_in cli_addr;
	struct ofx_verbs_ops fake;	/* the fake's own ops, called through */
} net = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* net.lock held: the channel's fd is readable while it has events. */
static struct rdma_cm_event *net_queue(struct rdma_cm_id *id, enum rdma_cm_event_type type,
				       const void *pdata, int len)
{
	struct rdma_cm_event *ev = fake_cm_queue(id, type, 0, pdata, len);
	uint64_t one = 1;

	if (write(id->channel->fd, &one, sizeof(one)) != sizeof(one))
		FAIL("eventfd write");
	return ev;
}

static struct pair *pair_of(struct rdma_cm_id *id)
{
	for (int i = 0; i < PAIRS; i++)
		if (id && (net.pairs[i].cli == id || net.pairs[i].srv == id))
			return &net.pairs[i];
	return NULL;
}

static struct pair *pair_of_qpn(uint32_t cli_qpn)
{
	for (int i = 0; i < PAIRS; i++)
		if (net.pairs[i].cli && net.pairs[i].cli_qpn == cli_qpn)
			return &net.pairs[i];
	return NULL;
}

/* ucma's fd: the events are taken under the lock that queues them, so none is missed. */
static int net_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	uint64_t n;
	int ret, err;

	pthread_mutex_lock(&net.lock);
	ret = net.fake.get_cm_event(ch, ev);
	err = errno;
	if (ret && read(ch->fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		FAIL("eventfd read");
	pthread_mutex_unlock(&net.lock);
	errno = err;
	return ret;
}

static int net_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			    int timeout_ms)
{
	int ret = net.fake.resolve_addr(id, src, dst, timeout_ms);

	pthread_mutex_lock(&net.lock);
	net_queue(id, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, 0);
	pthread_mutex_unlock(&net.lock);
	return ret;
}

static int net_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int ret = net.fake.resolve_route(id, timeout_ms);

	pthread_mutex_lock(&net.lock);
	net_queue(id, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, 0);
	pthread_mutex_unlock(&net.lock);
	return ret;
}

/* The REQ: a new id on the server's listener, carrying the client's data and depths. */
static int net_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	int ret = net.fake.connect(id, param);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *srv;
	struct pair *p = NULL;

	pthread_mutex_lock(&net.lock);
	for (int i = 0; i < PAIRS && !p; i++)
		if (!net.pairs[i].cli && !net.pairs[i].srv)
			p = &net.pairs[i];
	if (!p) {
		FAIL("no free pair");
		goto out;
	}
	CU_ASSERT_FATAL(fake_cm_create_id(net.listen_id->channel, &srv, net.listen_id->context,
					  net.listen_id->ps) == 0);
	fake_cm_set_peer(srv, &net.cli_addr);
	*p = (struct pair){ .cli = id, .srv = srv, .cli_qpn = param->qp_num };
	ev = net_queue(srv, RDMA_CM_EVENT_CONNECT_REQUEST, param->private_data,
		       param->private_data_len);
	ev->listen_id = net.listen_id;
	ev->param.conn.initiator_depth = param->initiator_depth;
	ev->param.conn.responder_resources = param->responder_resources;
out:
	pthread_mutex_unlock(&net.lock);
	return ret;
}

/* The REP reaches the client (which drives its QP and sends the RTU: establish). */
static int net_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	int ret = net.fake.accept(id, param);
	struct rdma_cm_event *ev;
	struct pair *p;

	pthread_mutex_lock(&net.lock);
	p = pair_of(id);
	if (!p) {
		FAIL("accept of an unknown id");
	} else {
		p->srv_qpn = param->qp_num;
		ev = net_queue(p->cli, RDMA_CM_EVENT_CONNECT_RESPONSE, param->private_data,
			       param->private_data_len);
		ev->param.conn.initiator_depth = param->initiator_depth;
		ev->param.conn.responder_resources = param->responder_resources;
	}
	pthread_mutex_unlock(&net.lock);
	return ret;
}

static int net_establish(struct rdma_cm_id *id)
{
	int ret = net.fake.establish(id);
	struct pair *p;

	pthread_mutex_lock(&net.lock);
	p = pair_of(id);
	if (p && p->srv)
		net_queue(p->srv, RDMA_CM_EVENT_ESTABLISHED, NULL, 0);
	else
		FAIL("establish of an unknown id");
	pthread_mutex_unlock(&net.lock);
	return ret;
}

/* The DREQ reaches the peer; the peer's answer (its own disconnect) the first side. */
static int net_disconnect(struct rdma_cm_id *id)
{
	int ret = net.fake.disconnect(id);
	struct pair *p;

	pthread_mutex_lock(&net.lock);
	p = pair_of(id);
	if (p && !p->disc_first) {
		p->disc_first = id;
		net_queue(id == p->cli ? p->srv : p->cli, RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
	} else if (p && !p->disc_done && p->disc_first != id) {
		p->disc_done = true;
		net_queue(p->disc_first, RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
	}
	pthread_mutex_unlock(&net.lock);
	return ret;
}

static int net_destroy_id(struct rdma_cm_id *id)
{
	struct pair *p;

	pthread_mutex_lock(&net.lock);
	p = pair_of(id);
	if (p) {
		if (p->cli == id)
			p->cli = NULL;
		else
			p->srv = NULL;
	}
	pthread_mutex_unlock(&net.lock);
	return net.fake.destroy_id(id);
}

static int net_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	bool seen = false;

	pthread_mutex_lock(&net.lock);
	for (unsigned int i = 0; i < net.nrecvs && i < QPS; i++)
		seen |= net.recvs[i].qpn == qp->qp_num;
	if (!seen)
		net.recvs[net.nrecvs++ % QPS] =
			(struct first_recv){ .qpn = qp->qp_num, .qp = qp, .wr_id = wr->wr_id };
	pthread_mutex_unlock(&net.lock);
	return net.fake.post_recv(qp, wr, bad);
}

/* The client's only sends are RTRs: a SEND one completes the server's receive. */
static int net_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int ret = net.fake.post_send(qp, wr, bad);
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };
	struct ibv_qp *peer = NULL;
	struct pair *p;

	if (ret || wr->opcode != IBV_WR_SEND)
		return ret;
	pthread_mutex_lock(&net.lock);
	p = pair_of_qpn(qp->qp_num);
	for (unsigned int i = 0; p && i < net.nrecvs && i < QPS; i++)
		if (net.recvs[i].qpn == p->srv_qpn) {
			peer = net.recvs[i].qp;
			wc.wr_id = net.recvs[i].wr_id;
		}
	pthread_mutex_unlock(&net.lock);
	if (!peer) {
		FAIL("an RTR without the peer's receive");
		return ret;
	}
	wc.qp_num = peer->qp_num;
	if (bench_late) {
		pthread_mutex_lock(&net.lock);
		p->rtr_cq = peer->recv_cq;
		p->rtr_wc = wc;
		p->rtr_fired = false;
		pthread_mutex_unlock(&net.lock);
		return ret;
	}
	fake_cq_push_cq(peer->recv_cq, &wc);
	return ret;
}

/* late: the arm of a CQ an RTR is on its way to fires at once (net_get_cq_event). */
static int net_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	int ret = net.fake.req_notify_cq(cq, solicited_only);

	pthread_mutex_lock(&net.lock);
	for (int i = 0; i < PAIRS; i++)
		if (net.pairs[i].rtr_cq == cq && !net.pairs[i].rtr_fired)
			net.pairs[i].rtr_fired = fake_cq_fire(cq);
	pthread_mutex_unlock(&net.lock);
	return ret;
}

/* late: the event taken, the RTR's CQE is there to poll. */
static int net_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **ctx)
{
	int ret = net.fake.get_cq_event(ch, cq, ctx);
	int err = errno;

	pthread_mutex_lock(&net.lock);
	for (int i = 0; !ret && i < PAIRS; i++)
		if (net.pairs[i].rtr_cq == *cq && net.pairs[i].rtr_fired) {
			fake_cq_push_cq(*cq, &net.pairs[i].rtr_wc);
			net.pairs[i].rtr_cq = NULL;
		}
	pthread_mutex_unlock(&net.lock);
	errno = err;
	return ret;
}

static void net_install(void)
{
	net.fake = fake_verbs.ops;
	fake_verbs.ops.get_cm_event = net_get_cm_event;
	fake_verbs.ops.resolve_addr = net_resolve_addr;
	fake_verbs.ops.resolve_route = net_resolve_route;
	fake_verbs.ops.connect = net_connect;
	fake_verbs.ops.accept = net_accept;
	fake_verbs.ops.establish = net_establish;
	fake_verbs.ops.disconnect = net_disconnect;
	fake_verbs.ops.destroy_id = net_destroy_id;
	fake_verbs.ops.post_recv = net_post_recv;
	fake_verbs.ops.post_send = net_post_send;
	fake_verbs.ops.req_notify_cq = net_req_notify_cq;
	fake_verbs.ops.get_cq_event = net_get_cq_event;
}

/* ---- the two sides ------------------------------------------------------------ */

struct side {
	struct ofx_ia ia;
	struct rdma_event_channel ch;
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE dto_evd, conn_evd, cr_evd;
	DAT_PSP_HANDLE psp;
	pthread_t thread;
};

static struct side cli, srv;
static unsigned char pdata[48];

/* What ia_open does for the CM: a channel with an fd, watched by the IA's progress engine. */
static void side_init(struct side *s, const char *name, uint32_t addr)
{
	struct sockaddr_in self = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(addr) };

	fake_cm_ia_init(&s->ia, OFX_TRANSPORT_ROCE);
	memcpy(&s->ia.addr, &self, sizeof(self));
	s->ch.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	CHECK(s->ch.fd >= 0);
	s->ia.cm_channel = &s->ch;
	CHECK(ofx_progress_start(&s->ia.progress, name) == 0);
	CHECK(ofx_progress_add_fd(s->ia.progress, s->ch.fd, ofx_cm_process_events, &s->ia) == 0);
	CHECK(ofx_pz_create(&s->ia, &s->pz) == DAT_SUCCESS);
	CHECK(ofx_evd_create(&s->ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &s->dto_evd) ==
	      DAT_SUCCESS);
	CHECK(ofx_evd_create(&s->ia, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
			     &s->conn_evd) == DAT_SUCCESS);
}

static void side_fini(struct side *s)
{
	if (s->psp)
		CHECK(ofx_psp_free(s->psp) == DAT_SUCCESS);
	if (s->cr_evd)
		CHECK(ofx_evd_free(s->cr_evd) == DAT_SUCCESS);
	CHECK(ofx_evd_free(s->conn_evd) == DAT_SUCCESS);
	CHECK(ofx_evd_free(s->dto_evd) == DAT_SUCCESS);
	CHECK(ofx_pz_free(s->pz) == DAT_SUCCESS);
	ofx_progress_stop(s->ia.progress);
	s->ia.progress = NULL;
	fake_ia_fini(&s->ia);
	close(s->ch.fd);
}

static void set_p2p(struct side *s, bool on)
{
	s->ia.cfg.p2p = on ? OFX_ON : OFX_OFF;
	s->ia.p2p_default = on;
}

static bool bench_mem;

static DAT_EP_HANDLE ep_new(struct side *s)
{
	DAT_EP_ATTR attr = fake_rc_ep_attr;
	DAT_EP_HANDLE ep = DAT_HANDLE_NULL;

	/* the queue depths of dapltest-scripts/bench's scale part */
	if (bench_mem)
		attr.max_recv_dtos = attr.max_request_dtos = 8;

	if (ofx_ep_create(&s->ia, s->pz, s->dto_evd, s->dto_evd, s->conn_evd, &attr, &ep) !=
	    DAT_SUCCESS)
		FAIL("dat_ep_create");
	return ep;
}

/* The next event on `evd`: `want` and, for connection events, naming `ep`. */
static bool wait_event(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER want, DAT_EP_HANDLE ep,
		       DAT_EVENT *ev)
{
	DAT_COUNT nmore;

	if (ofx_evd_wait(evd, WAIT_US, 1, ev, &nmore) != DAT_SUCCESS) {
		FAIL("dat_evd_wait");
		return false;
	}
	if (ev->event_number != want ||
	    (ep && ev->event_data.connect_event_data.ep_handle != ep)) {
		fprintf(stderr, "cm_cost: event 0x%x, wanted 0x%x\n", ev->event_number, want);
		FAIL("unexpected event");
		return false;
	}
	return true;
}

/* Each side's thread runs `todo` connections per round the main thread starts. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int round, done;
	unsigned int srv_up, cli_up;	/* connections ESTABLISHED on each side */
	int todo;
	bool stop;
} run = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/*
 * The client hangs up once the server has its ESTABLISHED too, as dtestcm's
 * bursts give it time to: a DREQ right behind the RTU can reach a p2p
 * server's CM queue before the RTR it already holds in its CQ is taken.
 */
static void up_wait(bool client)
{
	pthread_mutex_lock(&run.lock);
	if (client)
		run.cli_up++;
	else
		run.srv_up++;
	pthread_cond_broadcast(&run.cond);
	while (client && run.srv_up < run.cli_up && !atomic_load(&failures))
		pthread_cond_wait(&run.cond, &run.lock);
	pthread_mutex_unlock(&run.lock);
}

static void client_one(void)
{
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0xc0000202) };
	DAT_EP_HANDLE ep = ep_new(&cli);
	DAT_EVENT ev;

	CHECK(ep != DAT_HANDLE_NULL);
	CHECK(ofx_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&peer, QUAL, 20 * 1000000, sizeof(pdata),
			     pdata, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG) == DAT_SUCCESS);
	if (wait_event(cli.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev)) {
		CHECK(ev.event_data.connect_event_data.private_data_size == sizeof(pdata));
		up_wait(true);
		CHECK(ofx_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS);
		wait_event(cli.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, ep, &ev);
	}
	CHECK(ofx_ep_free(ep) == DAT_SUCCESS);
}

static void server_one(void)
{
	DAT_EP_HANDLE ep = ep_new(&srv);
	DAT_EVENT ev;

	CHECK(ep != DAT_HANDLE_NULL);
	if (wait_event(srv.cr_evd, DAT_CONNECTION_REQUEST_EVENT, NULL, &ev)) {
		DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;

		CHECK(ofx_cr_accept(cr, ep, sizeof(pdata), pdata) == DAT_SUCCESS);
		if (wait_event(srv.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev)) {
			up_wait(false);
			wait_event(srv.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, ep, &ev);
		}
	}
	CHECK(ofx_ep_free(ep) == DAT_SUCCESS);
}

/* ---- memory mode: connections held between two rounds -------------------------- */

#define MEM_WARM 4	/* connections made before the measured ones */

static int mem_round;			/* 1: make and hold, 2: end and free */
static DAT_EP_HANDLE held[2][PAIRS];	/* [0] client, [1] server, in connect order */
static int nheld[2], nfreed[2];

static void client_hold(void)
{
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(0xc0000202) };
	DAT_EP_HANDLE ep = ep_new(&cli);
	DAT_EVENT ev;

	CHECK(ep != DAT_HANDLE_NULL);
	held[0][nheld[0]++] = ep;
	CHECK(ofx_ep_connect(ep, (DAT_IA_ADDRESS_PTR)&peer, QUAL, 20 * 1000000, sizeof(pdata),
			     pdata, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG) == DAT_SUCCESS);
	if (wait_event(cli.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
		up_wait(true);
}

static void server_hold(void)
{
	DAT_EP_HANDLE ep = ep_new(&srv);
	DAT_EVENT ev;

	CHECK(ep != DAT_HANDLE_NULL);
	held[1][nheld[1]++] = ep;
	if (wait_event(srv.cr_evd, DAT_CONNECTION_REQUEST_EVENT, NULL, &ev)) {
		DAT_CR_HANDLE cr = ev.event_data.cr_arrival_event_data.cr_handle;

		CHECK(ofx_cr_accept(cr, ep, sizeof(pdata), pdata) == DAT_SUCCESS);
		if (wait_event(srv.conn_evd, DAT_CONNECTION_EVENT_ESTABLISHED, ep, &ev))
			up_wait(false);
	}
}

static void client_release(void)
{
	DAT_EP_HANDLE ep = held[0][nfreed[0]++];
	DAT_EVENT ev;

	CHECK(ofx_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG) == DAT_SUCCESS);
	wait_event(cli.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, ep, &ev);
	CHECK(ofx_ep_free(ep) == DAT_SUCCESS);
}

static void server_release(void)
{
	DAT_EP_HANDLE ep = held[1][nfreed[1]++];
	DAT_EVENT ev;

	wait_event(srv.conn_evd, DAT_CONNECTION_EVENT_DISCONNECTED, ep, &ev);
	CHECK(ofx_ep_free(ep) == DAT_SUCCESS);
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* A heap block as mallinfo2 counts it: what malloc_usable_size sees and its size word. */
static size_t chunk(void *p)
{
	return p ? malloc_usable_size(p) + sizeof(size_t) : 0;
}

/* What the provider allocated for one EP itself (see ep.h). */
static size_t ep_own_bytes(DAT_EP_HANDLE h)
{
	struct ofx_ep *ep = ofx_ep_from_handle(h);

	return chunk(ep) + chunk(ep->send_ring.slots) + chunk(ep->recv_ring.slots) +
	       chunk(ep->recv_sges) + chunk(ep->lastwqe);
}

static void mem_report(size_t heap0, size_t fake0, int n)
{
	double heap = (double)(heap_in_use() - heap0) / n;
	double fake = (double)(atomic_load(&fake_verbs.obj_bytes) - fake0) / n;

	printf("sizeof(struct ofx_ep) %zu\n", sizeof(struct ofx_ep));
	printf("heap per connection (client + server EP; %d more held): %.0f B\n", n, heap);
	printf("  the fake's QPs and cm_ids                  %.0f B\n", fake);
	printf("  the provider's                             %.0f B\n", heap - fake);
	printf("  of it, one client EP's own allocations     %zu B\n", ep_own_bytes(held[0][0]));
	printf("  of it, one server EP's own allocations     %zu B\n", ep_own_bytes(held[1][0]));
}

static void *side_thread(void *arg)
{
	void (*one)(void) = arg;
	unsigned int seen = 0;

	for (;;) {
		int n;

		pthread_mutex_lock(&run.lock);
		while (run.round == seen && !run.stop)
			pthread_cond_wait(&run.cond, &run.lock);
		if (run.stop) {
			pthread_mutex_unlock(&run.lock);
			return NULL;
		}
		seen = run.round;
		n = run.todo;
		pthread_mutex_unlock(&run.lock);
		for (int i = 0; i < n && !atomic_load(&failures); i++) {
			if (!bench_mem)
				one();
			else if (one == client_one)
				mem_round == 1 ? client_hold() : client_release();
			else
				mem_round == 1 ? server_hold() : server_release();
		}
		pthread_mutex_lock(&run.lock);
		run.done++;
		pthread_cond_broadcast(&run.cond);
		pthread_mutex_unlock(&run.lock);
	}
}

static void round_run(int n)
{
	pthread_mutex_lock(&run.lock);
	run.todo = n;
	run.done = 0;
	run.round++;
	pthread_cond_broadcast(&run.cond);
	while (run.done < 2)
		pthread_cond_wait(&run.cond, &run.lock);
	pthread_mutex_unlock(&run.lock);
}

static bool bench_p2p;
static int bench_n = 10;

static void bench_run(void)
{
	fake_verbs_install();
	if (bench_mem)	/* one DTO EVD for 16 depth-8 EPs a side */
		fake_verbs.cq_max = 1024;
	net_install();
	memset(pdata, 0x5a, sizeof(pdata));
	net.cli_addr = (struct sockaddr_in){ .sin_family = AF_INET,
					     .sin_addr.s_addr = htonl(0xc0000201) };
	/* thread 2, then 3 (callgrind's numbers, which test/bench/cm-cost reads) */
	side_init(&cli, "cli", 0xc0000201);
	side_init(&srv, "srv", 0xc0000202);
	CHECK(!failures);
	CHECK(ofx_evd_create(&srv.ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &srv.cr_evd) ==
	      DAT_SUCCESS);
	CHECK(ofx_psp_create(&srv.ia, QUAL, srv.cr_evd, DAT_PSP_CONSUMER_FLAG, &srv.psp) ==
	      DAT_SUCCESS);
	net.listen_id = fake_cm.last_id;
	/* threads 4 and 5 */
	CHECK(pthread_create(&cli.thread, NULL, side_thread, client_one) == 0);
	CHECK(pthread_create(&srv.thread, NULL, side_thread, server_one) == 0);

	set_p2p(&cli, bench_p2p);
	set_p2p(&srv, bench_p2p);
	if (bench_mem) {
		/* the first connections' one-time costs (a thread's first malloc) cancel */
		size_t heap0, fake0;

		mem_round = 1;
		round_run(MEM_WARM);
		heap0 = heap_in_use();
		fake0 = atomic_load(&fake_verbs.obj_bytes);
		round_run(bench_n - MEM_WARM);
		if (!atomic_load(&failures))
			mem_report(heap0, fake0, bench_n - MEM_WARM);
		mem_round = 2;
	}
	round_run(bench_n);

	pthread_mutex_lock(&run.lock);
	run.stop = true;
	pthread_cond_broadcast(&run.cond);
	pthread_mutex_unlock(&run.lock);
	pthread_join(cli.thread, NULL);
	pthread_join(srv.thread, NULL);
	side_fini(&srv);
	side_fini(&cli);
	ofx_verbs_set(NULL);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	CU_ASSERT_EQUAL(fake_cm.nevents, 0);
	CU_ASSERT_EQUAL(fake_verbs.qps + fake_verbs.cqs + fake_verbs.pds, 0);
	/* every connection was made and ended on both sides */
	CU_ASSERT_EQUAL(fake_cm.connects, bench_n);
	CU_ASSERT_EQUAL(fake_cm.nsends, bench_p2p ? bench_n : 0);	/* the RTRs */
	CU_ASSERT_EQUAL(fake_cm.accepts, fake_cm.connects);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 2 * fake_cm.connects);
}

int main(int argc, char **argv)
{
	CU_pSuite suite;
	int bad;

	if (argc > 1) {
		bench_late = !strcmp(argv[1], "late");
		bench_p2p = bench_late || !strcmp(argv[1], "on");
		bench_mem = !strcmp(argv[1], "mem");
	}
	if (argc > 2)
		bench_n = atoi(argv[2]);
	if ((argc > 1 && !bench_p2p && !bench_mem && strcmp(argv[1], "off")) || bench_n <= 0 ||
	    bench_n > (bench_mem ? PAIRS : 100000) || (bench_mem && bench_n <= MEM_WARM)) {
		fprintf(stderr, "usage: cm_cost [off|on|late [N]] | cm_cost mem [%d < N <= %d]\n",
			MEM_WARM, PAIRS);
		return 2;
	}
	if (getenv("CM_COST_DEBUG"))	/* the provider's debug log on stderr */
		ofx_log_level = OFX_LOG_DEBUG;
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	suite = CU_add_suite("cm_cost", NULL, NULL);
	if (!suite || !CU_add_test(suite, "bench", bench_run) ||
	    CU_run_test(suite, CU_get_test(suite, "bench")) != CUE_SUCCESS)
		return 1;
	bad = atomic_load(&failures) + (int)CU_get_number_of_failures();
	CU_cleanup_registry();
	if (bad)
		fprintf(stderr, "cm_cost: %d failed checks\n", bad);
	return bad ? 1 : 0;
}
