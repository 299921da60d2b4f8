/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "cm.h"
#include "config.h"
#include "cr.h"
#include "ep.h"
#include "ep_conn.h"
#include "evd.h"
#include "ia.h"
#include "pdata.h"
#include "progress.h"
#include "pz.h"
#include "sp.h"
#include "status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

/*
 * The EP connection life cycle, driven through the DAT calls and rdma_cm
 * events of the shared fake (fake_verbs.h): active and passive connections,
 * rejects, unreachable peers, the connect timeout, disconnects from either
 * side, reset, broken connections and p2p with each RTR type.  Each test
 * checks the DAT state, the connection event with its fields, and the calls
 * that reached rdma_cm and the QP.
 */

static struct ofx_ia ia;

struct fixture {
	DAT_PZ_HANDLE pz;
	DAT_EVD_HANDLE dto_evd, conn_evd, cr_evd;
	DAT_EP_HANDLE ep;
	struct ofx_ep *e;
	struct sockaddr_in peer;
};

static void setup(struct fixture *f, enum ofx_transport transport)
{
	memset(f, 0, sizeof(*f));
	fake_verbs_install();
	fake_cm_ia_init(&ia, transport);
	f->peer.sin_family = AF_INET;
	f->peer.sin_addr.s_addr = htonl(0xc0000202);

	CU_ASSERT_FATAL(ofx_pz_create(&ia, &f->pz) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				       &f->dto_evd) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
				       &f->conn_evd) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
				       &f->cr_evd) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_ep_create(&ia, f->pz, f->dto_evd, f->dto_evd, f->conn_evd,
				      &fake_rc_ep_attr, &f->ep) == DAT_SUCCESS);
	f->e = ofx_ep_from_handle(f->ep);
}

static void teardown(struct fixture *f)
{
	CU_ASSERT_EQUAL(ofx_ep_free(f->ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(f->cr_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(f->conn_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(f->dto_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(f->pz), DAT_SUCCESS);
	fake_cm_ia_fini(&ia);
}

static DAT_EP_STATE dat_state(const struct fixture *f)
{
	DAT_EP_STATE state = 0;
	DAT_BOOLEAN in, out;

	CU_ASSERT_EQUAL(ofx_ep_get_status(f->ep, &state, &in, &out), DAT_SUCCESS);
	return state;
}

/* The next connection event: its number, and its private data in `data`. */
static DAT_EVENT_NUMBER next_conn_event(const struct fixture *f, void *data, int *len_p)
{
	DAT_EVENT ev;

	if (ofx_evd_dequeue(f->conn_evd, &ev) != DAT_SUCCESS)
		return 0;
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, f->ep);
	if (len_p) {
		*len_p = ev.event_data.connect_event_data.private_data_size;
		if (*len_p)
			memcpy(data, ev.event_data.connect_event_data.private_data, *len_p);
	}
	return ev.event_number;
}

static void expect_no_event(const struct fixture *f)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f->conn_evd, &ev)), DAT_QUEUE_EMPTY);
}

static DAT_RETURN connect_to_peer(struct fixture *f, DAT_TIMEOUT timeout, const void *pdata,
				  int len)
{
	return ofx_ep_connect(f->ep, (DAT_IA_ADDRESS_PTR)&f->peer, 4000, timeout, len,
			      (DAT_PVOID)pdata, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
}

/* dat_ep_connect accepted: the id that resolves the address. */
static struct rdma_cm_id *connect_started(struct fixture *f, const void *pdata, int len)
{
	CU_ASSERT_EQUAL_FATAL(connect_to_peer(f, DAT_TIMEOUT_INFINITE, pdata, len), DAT_SUCCESS);
	CU_ASSERT_EQUAL(dat_state(f), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	CU_ASSERT_PTR_NOT_NULL_FATAL(f->e->cm_id);
	return f->e->cm_id;
}

/* Connect, then address and route resolved: the REQ has left. */
static struct rdma_cm_id *req_sent(struct fixture *f, const void *pdata, int len)
{
	struct rdma_cm_id *id = connect_started(f, pdata, len);

	fake_cm_queue(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	fake_cm_queue(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_cm.resolve_addrs, 1);
	CU_ASSERT_EQUAL(fake_cm.resolve_routes, 1);
	CU_ASSERT_EQUAL(fake_cm.connects, 1);
	CU_ASSERT_EQUAL(f->e->qp->state, IBV_QPS_INIT);
	return id;
}

/* An active connection up with a REP of `rep` bytes. */
static void connect_up(struct fixture *f, const void *rep, int rep_len)
{
	struct rdma_cm_id *id = req_sent(f, "req", 3);

	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep, rep_len);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL_FATAL(next_conn_event(f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
}

/* ---- the table ---------------------------------------------------------- */

static void test_moves_outside_the_table_are_refused(void)
{
	/* a sample of what the code does */
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_UNCONNECTED, OFX_EP_ACTIVE_PENDING));
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_ACTIVE_PENDING, OFX_EP_CONNECTED));
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_COMPLETION_PENDING, OFX_EP_RTR_WAIT));
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_RTR_WAIT, OFX_EP_CONNECTED));
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_CONNECTED, OFX_EP_DISCONNECT_PENDING));
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_DISCONNECTED, OFX_EP_UNCONNECTED));
	CU_ASSERT_TRUE(ofx_ep_conn_move_allowed(OFX_EP_CONNECTED, OFX_EP_CONNECTED));
	/* and what it must never do */
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_UNCONNECTED, OFX_EP_CONNECTED));
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_DISCONNECTED, OFX_EP_CONNECTED));
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_CONNECTED, OFX_EP_ACTIVE_PENDING));
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_DISCONNECT_PENDING, OFX_EP_CONNECTED));
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_RESERVED, OFX_EP_CONNECTED));
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_RTR_WAIT, OFX_EP_DISCONNECT_PENDING));
	CU_ASSERT_FALSE(ofx_ep_conn_move_allowed(OFX_EP_CONNECTED, (enum ofx_ep_state)99));
}

static void test_data_path_flag_follows_the_state(void)
{
	struct ofx_ep *ep = fake_ep_new(4);
	static const struct {
		enum ofx_ep_state state;
		bool may_send;
	} rows[] = {
		{ OFX_EP_UNCONNECTED, false },	   { OFX_EP_RESERVED, false },
		{ OFX_EP_PASSIVE_PENDING, false }, { OFX_EP_TENTATIVE_PENDING, false },
		{ OFX_EP_ACTIVE_PENDING, false },  { OFX_EP_COMPLETION_PENDING, false },
		{ OFX_EP_RTR_WAIT, false },	   { OFX_EP_CONNECTED, true },
		{ OFX_EP_DISCONNECT_PENDING, true }, { OFX_EP_DISCONNECTED, true },
	};

	for (size_t i = 0; i < OFX_ARRAY_SIZE(rows); i++) {
		test_ep_force_state(ep, rows[i].state);
		CU_ASSERT_EQUAL(ofx_ep_conn_may_send(ep), rows[i].may_send);
	}
	fake_ep_delete(ep);
}

/* ---- active side ---------------------------------------------------------- */

static void test_active_connect_reports_the_rep_data(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	char data[64];
	int len = -1;

	setup(&f, OFX_TRANSPORT_ROCE);
	id = req_sent(&f, "hello", 5);
	/* RoCE, p2p auto: the REQ is the consumer's bytes alone */
	CU_ASSERT_EQUAL(fake_cm.pdata_len, 5);
	CU_ASSERT_EQUAL(memcmp(fake_cm.pdata, "hello", 5), 0);
	CU_ASSERT_FALSE(ofx_ep_conn_may_send(f.e));
	expect_no_event(&f);

	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, "world!", 6);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, data, &len), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(len, 6);
	CU_ASSERT_EQUAL(memcmp(data, "world!", 6), 0);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_TRUE(ofx_ep_conn_may_send(f.e));
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_RTS);
	CU_ASSERT_EQUAL(fake_cm.establishes, 1);
	CU_ASSERT_EQUAL(fake_cm.nsends, 0);	/* no RTR without p2p */
	/* a second connect is refused while connected */
	CU_ASSERT_EQUAL(connect_to_peer(&f, DAT_TIMEOUT_INFINITE, NULL, 0),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED));
	teardown(&f);
}

static void test_consumer_reject_is_peer_rejected_with_its_data(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	unsigned char rej[6] = { 0x02, 0x00, 0x02, 0x00, 'n', 'o' };
	char data[64];
	int len = -1;

	setup(&f, OFX_TRANSPORT_ROCE);
	id = req_sent(&f, NULL, 0);
	fake_cm_queue(id, RDMA_CM_EVENT_REJECTED, OFX_REJ_CONSUMER, rej, sizeof(rej));
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, data, &len), DAT_CONNECTION_EVENT_PEER_REJECTED);
	CU_ASSERT_EQUAL(len, 2);	/* stock's header stripped */
	CU_ASSERT_EQUAL(memcmp(data, "no", 2), 0);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_PTR_NULL(f.e->cm_id);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);	/* destroyed after its event was acked */
	teardown(&f);
}

static void test_no_listener_is_non_peer_rejected(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	int len = -1;

	setup(&f, OFX_TRANSPORT_ROCE);
	id = req_sent(&f, NULL, 0);
	fake_cm_queue(id, RDMA_CM_EVENT_REJECTED, OFX_REJ_NO_LISTENER, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, &len), DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	CU_ASSERT_EQUAL(len, 0);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	teardown(&f);
}

/* iWARP: the refused TCP connect comes from rdma_connect itself. */
static void iwarp_tcp_refusal(int connect_errno, DAT_EVENT_NUMBER want)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_IWARP);
	fake_cm.connect_errno = connect_errno;
	req_sent(&f, NULL, 0);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), want);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	teardown(&f);
}

static void test_iwarp_refused_connect_is_non_peer_rejected(void)
{
	iwarp_tcp_refusal(ECONNREFUSED, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
}

/* a listener closing while the SYN came in: no connection existed, never BROKEN */
static void test_iwarp_reset_connect_is_non_peer_rejected(void)
{
	iwarp_tcp_refusal(ECONNRESET, DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
}

/* the local TCP port rdma_cm picked is taken: no connection existed, never BROKEN */
static void test_iwarp_taken_local_port_is_unreachable(void)
{
	iwarp_tcp_refusal(EADDRINUSE, DAT_CONNECTION_EVENT_UNREACHABLE);
}

/*
 * Address or route resolution timing out is retried cm_retries times, then
 * UNREACHABLE; a retry that cannot start (`retry_errno`) ends it at once.
 */
static void resolution_retried(bool route, int retry_errno)
{
	enum rdma_cm_event_type err = route ? RDMA_CM_EVENT_ROUTE_ERROR : RDMA_CM_EVENT_ADDR_ERROR;
	struct fixture f;
	struct rdma_cm_id *id;

	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.cm_retries = 2;
	id = connect_started(&f, NULL, 0);
	if (route) {
		fake_cm_queue(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
		fake_cm_deliver(&ia);
		fake_cm.resolve_route_errno = retry_errno;
	} else {
		fake_cm.resolve_addr_errno = retry_errno;
	}
	for (int i = 0; i < (retry_errno ? 1 : 3); i++)
		fake_cm_queue(id, err, -ETIMEDOUT, NULL, 0);
	fake_cm_deliver(&ia);
	/* the first and two retries, or the first and the retry that failed */
	CU_ASSERT_EQUAL(route ? fake_cm.resolve_routes : fake_cm.resolve_addrs,
			retry_errno ? 2 : 3);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_UNREACHABLE);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.connects, 0);
	teardown(&f);
}

static void test_resolution_retries_then_unreachable(void)
{
	resolution_retried(false, 0);
}

static void test_route_error_retried_then_unreachable(void)
{
	resolution_retried(true, 0);
}

static void test_failed_route_retry_is_unreachable(void)
{
	resolution_retried(true, ENOMEM);
}

/* The consumer's timeout ends an attempt nobody answers. */
static void test_connect_timeout_is_timed_out(void)
{
	struct fixture f;
	DAT_EVENT ev;
	DAT_COUNT nmore;

	setup(&f, OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	CU_ASSERT_EQUAL_FATAL(connect_to_peer(&f, 1000, NULL, 0), DAT_SUCCESS);
	/* woken by the event; the deadline only bounds a broken provider */
	CU_ASSERT_EQUAL(ofx_evd_wait(f.conn_evd, 30 * 1000000, 1, &ev, &nmore), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_TIMED_OUT);
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, f.ep);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_PTR_NULL(f.e->cm_id);
	teardown(&f);
}

/* ---- established connections --------------------------------------------- */

static void test_graceful_disconnect_then_reset(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	uint32_t old_qp_num;

	setup(&f, OFX_TRANSPORT_ROCE);
	connect_up(&f, NULL, 0);
	id = f.e->cm_id;
	/* reset needs the connection to be over */
	CU_ASSERT_EQUAL(ofx_ep_reset(f.ep),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECT_PENDING);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);	/* outstanding work flushes */
	expect_no_event(&f);

	fake_cm_queue(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* we asked: no second DREQ */

	/* reset: a fresh QP, the id gone, ready to connect again */
	old_qp_num = f.e->qp->qp_num;
	CU_ASSERT_EQUAL(ofx_ep_reset(f.ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_UNCONNECTED);
	CU_ASSERT_PTR_NULL(f.e->cm_id);
	CU_ASSERT_PTR_NOT_NULL(f.e->qp);
	CU_ASSERT_NOT_EQUAL(f.e->qp->qp_num, old_qp_num);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_RESET);
	CU_ASSERT_EQUAL(fake_verbs.qps, 1);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	CU_ASSERT_FALSE(ofx_ep_conn_may_send(f.e));
	CU_ASSERT_EQUAL(connect_to_peer(&f, DAT_TIMEOUT_INFINITE, NULL, 0), DAT_SUCCESS);
	teardown(&f);
}

/*
 * iWARP: a graceful disconnect leaves the QP to the stream's close (ERROR
 * now would drop sends siw handed to TCP but not yet sent); the QP flushes
 * at DISCONNECTED.  An abrupt one flushes at once.
 */
static void test_iwarp_graceful_disconnect_flushes_after_the_close(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_IWARP);
	connect_up(&f, NULL, 0);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);
	CU_ASSERT_NOT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	fake_cm_queue(f.e->cm_id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_DISCONNECTED);
	teardown(&f);

	setup(&f, OFX_TRANSPORT_IWARP);
	connect_up(&f, NULL, 0);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	teardown(&f);
}

static void test_peer_disconnect_is_answered_and_reported(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_ROCE);
	connect_up(&f, NULL, 0);
	fake_cm_queue(f.e->cm_id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* our DREP */
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	/* a disconnect after the fact is a no-op, not an error */
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	expect_no_event(&f);
	teardown(&f);
}

static void test_completion_error_breaks_the_connection(void)
{
	struct fixture f;
	struct ibv_wc wc = { .status = IBV_WC_REM_ACCESS_ERR };

	setup(&f, OFX_TRANSPORT_ROCE);
	connect_up(&f, NULL, 0);
	ofx_ep_dto_notify(f.e, &wc);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* the peer is told */
	/* a flush after that says nothing more */
	wc.status = IBV_WC_WR_FLUSH_ERR;
	ofx_ep_dto_notify(f.e, &wc);
	expect_no_event(&f);
	teardown(&f);
}

/* Disconnect while the REQ is out: ended here, reported at once. */
static void test_disconnect_while_connecting(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_ROCE);
	req_sent(&f, NULL, 0);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	teardown(&f);
}

/* Abrupt: the DREP is waited for disc_timeout_ms at most. */
static void test_abrupt_disconnect_without_drep(void)
{
	struct fixture f;
	struct rdma_cm_id *id;

	setup(&f, OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	ia.cfg.disc_timeout_ms = 10;
	connect_up(&f, NULL, 0);
	id = f.e->cm_id;
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	/* the late DREP changes nothing */
	fake_cm_queue(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	expect_no_event(&f);
	teardown(&f);
}

/* A graceful wait cut short: a second graceful call is refused, an abrupt one ends it. */
static void test_abrupt_disconnect_ends_a_graceful_wait(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	connect_up(&f, NULL, 0);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_GRACEFUL_FLAG),
			OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_NO_SUBTYPE));
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECT_PENDING);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* one DREQ */
	teardown(&f);
}

static void test_device_removal_breaks_the_connection(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_ROCE);
	connect_up(&f, NULL, 0);
	fake_cm_queue(f.e->cm_id, RDMA_CM_EVENT_ADDR_CHANGE, 0, NULL, 0);	/* ignored */
	fake_cm_deliver(&ia);
	expect_no_event(&f);
	fake_cm_queue(f.e->cm_id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	teardown(&f);
}

/* An event on an id nobody owns is dropped. */
static void test_event_on_an_unowned_id_is_dropped(void)
{
	struct fixture f;
	struct rdma_cm_id *stray;

	setup(&f, OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(fake_cm_create_id(ia.cm_channel, &stray, NULL, RDMA_PS_TCP) == 0);
	fake_cm_queue(stray, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	expect_no_event(&f);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 0);
	fake_cm_destroy_id(stray);
	teardown(&f);
}

/* ---- p2p, active side ---------------------------------------------------------- */

static int rep_with_p2p(enum ofx_rtr_type rtr, unsigned char *out, size_t max)
{
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_REPLY | OFX_PDATA_F_P2P, .rtr = rtr };

	return ofx_pdata_encode(&hdr, "ok", 2, 0, out, max);
}

static void active_p2p_rtr(enum ofx_rtr_type rtr, enum ibv_wr_opcode opcode, int num_sge)
{
	struct fixture f;
	struct ofx_pdata_hdr hdr;
	struct rdma_cm_id *id;
	unsigned char rep[64];
	char data[64];
	int n, len = -1;

	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;	/* what ia_open derives from it */
	id = req_sent(&f, "abc", 3);
	/* the REQ asks for p2p in our trailer, after the consumer's bytes */
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(fake_cm.pdata, fake_cm.pdata_len, &hdr), 0);
	CU_ASSERT_TRUE(hdr.flags & OFX_PDATA_F_P2P);
	CU_ASSERT_FALSE(hdr.flags & OFX_PDATA_F_REPLY);
	CU_ASSERT_EQUAL(hdr.consumer_len, 3);
	CU_ASSERT_EQUAL(memcmp(fake_cm.pdata, "abc", 3), 0);

	n = rep_with_p2p(rtr, rep, sizeof(rep));
	CU_ASSERT_FATAL(n > 0);
	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep, n);
	fake_cm_deliver(&ia);
	/* the RTR went out before the consumer heard of the connection */
	CU_ASSERT_EQUAL_FATAL(fake_cm.nsends, 1);
	CU_ASSERT_EQUAL(fake_cm.sends[0].opcode, opcode);
	CU_ASSERT_EQUAL(fake_cm.sends[0].num_sge, num_sge);
	CU_ASSERT_EQUAL(fake_cm.sends[0].len, 0);
	CU_ASSERT_EQUAL(fake_cm.sends[0].wr_id, (uintptr_t)&f.e->rtr_cookie);
	CU_ASSERT_EQUAL(next_conn_event(&f, data, &len), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(len, 2);	/* the consumer sees its bytes, not our trailer */
	CU_ASSERT_EQUAL(memcmp(data, "ok", 2), 0);
	CU_ASSERT_TRUE(f.e->p2p);
	teardown(&f);
}

static void test_active_p2p_send_rtr(void)
{
	active_p2p_rtr(OFX_RTR_SEND, IBV_WR_SEND, 0);
}

static void test_active_p2p_write_rtr(void)
{
	active_p2p_rtr(OFX_RTR_WRITE, IBV_WR_RDMA_WRITE, 0);
}

/* one empty segment: siw matches the response against the first SGE */
static void test_active_p2p_read_rtr(void)
{
	active_p2p_rtr(OFX_RTR_READ, IBV_WR_RDMA_READ, 1);
}

/* A stock peer answers without our trailer: no RTR, plain connection. */
static void test_active_p2p_refused_by_a_stock_peer(void)
{
	struct fixture f;
	struct rdma_cm_id *id;

	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;	/* what ia_open derives from it */
	id = req_sent(&f, NULL, 0);
	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_cm.nsends, 0);
	CU_ASSERT_FALSE(f.e->p2p);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	teardown(&f);
}

/*
 * The fixture's EP made again with `nudge` as ia_open derives rtr_nudge
 * (auto: on for siw), which the EP's queues count; the progress engine runs
 * the nudges' timer.
 */
static void nudging_ep(struct fixture *f, bool nudge)
{
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	CU_ASSERT_EQUAL_FATAL(ofx_ep_free(f->ep), DAT_SUCCESS);
	ia.rtr_nudge = nudge;
	CU_ASSERT_FATAL(ofx_ep_create(&ia, f->pz, f->dto_evd, f->dto_evd, f->conn_evd,
				      &fake_rc_ep_attr, &f->ep) == DAT_SUCCESS);
	f->e = ofx_ep_from_handle(f->ep);
}

/* An active p2p connection up (RoCE: the REP drives it), SEND RTR sent, with or without nudges. */
static void p2p_connect_up(struct fixture *f, bool nudge)
{
	struct rdma_cm_id *id;
	unsigned char rep[64];
	int n;

	setup(f, OFX_TRANSPORT_ROCE);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;	/* what ia_open derives from it */
	nudging_ep(f, nudge);
	id = req_sent(f, NULL, 0);
	n = rep_with_p2p(OFX_RTR_SEND, rep, sizeof(rep));
	CU_ASSERT_FATAL(n > 0);
	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep, n);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL_FATAL(fake_cm.nsends, 1);
	CU_ASSERT_EQUAL(fake_cm.sends[0].opcode, IBV_WR_SEND);
}

/* Nudges sent so far (the EP lock orders us after the progress thread's). */
static unsigned int nudges_sent(struct fixture *f)
{
	unsigned int n;

	pthread_mutex_lock(&f->e->lock);
	n = f->e->rtr_nudges;
	pthread_mutex_unlock(&f->e->lock);
	return n;
}

/*
 * The EP's next nudge, now: taken off the timer list and run here, or, if
 * the progress thread fired it first, waited for.  false: none was armed.
 */
static bool next_nudge_now(struct fixture *f)
{
	struct ofx_timer *t = &f->e->rtr_timer;

	if (ofx_progress_timer_cancel_armed(ia.progress, t)) {
		t->fn(t->arg);
		return true;
	}
	/* fired meanwhile (a busy host) or never armed: the barrier tells which */
	ofx_progress_barrier(ia.progress);
	return atomic_load(&t->armed) || nudges_sent(f) > 0;
}

/*
 * Runs the EP's nudges to the end: four were posted, from fake_cm.sends[first]
 * on, each a zero-length unsignaled RDMA write under the EP's nudge cookie.
 */
static void expect_four_nudges(struct fixture *f, int first)
{
	int i;

	for (i = 0; i < 8 && nudges_sent(f) < 4; i++)
		CU_ASSERT_TRUE_FATAL(next_nudge_now(f));
	CU_ASSERT_EQUAL(nudges_sent(f), 4);
	CU_ASSERT_FALSE(atomic_load(&f->e->rtr_timer.armed));
	CU_ASSERT_EQUAL_FATAL(fake_cm.nsends, first + 4);
	for (i = first; i < first + 4; i++) {
		CU_ASSERT_EQUAL(fake_cm.sends[i].opcode, IBV_WR_RDMA_WRITE);
		CU_ASSERT_EQUAL(fake_cm.sends[i].num_sge, 0);
		CU_ASSERT_EQUAL(fake_cm.sends[i].send_flags, 0);	/* unsignaled */
		/* the EP's own, never an event; not the RTR's: a failed one is told apart */
		CU_ASSERT_EQUAL(fake_cm.sends[i].wr_id, (uintptr_t)&f->e->nudge_cookie);
	}
}

/*
 * siw leaves an RTR that reaches the passive side during its accept's
 * socket hand-over unread until more bytes come: the active side follows
 * it with zero-length RDMA writes, four in all, the first 5 ms after the RTR.
 */
static void test_active_rtr_is_followed_by_nudges(void)
{
	struct fixture f;
	uint64_t now;

	p2p_connect_up(&f, true);
	/* one EVD for both queues: 4 receives + the RTR's, 4 requests + the RTR + its nudge */
	CU_ASSERT_EQUAL(ofx_evd_from_handle(f.dto_evd)->cq_reserved, 5 + 6);
	now = ofx_now_ns();
	CU_ASSERT_TRUE_FATAL(atomic_load(&f.e->rtr_timer.armed));
	/* the first gap is 5 ms: due within it from now */
	CU_ASSERT_TRUE(f.e->rtr_timer.deadline_ns <= now + 5000000ull);
	expect_four_nudges(&f, 1);	/* after the RTR */
	expect_no_event(&f);
	teardown(&f);
}

/* A connection that ended sends no more nudges; a device that needs none gets none. */
static void test_nudges_end_with_the_connection(void)
{
	struct fixture f;

	p2p_connect_up(&f, true);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(f.ep, DAT_CLOSE_GRACEFUL_FLAG), DAT_SUCCESS);
	/* the timer may still fire: it finds the connection over and stops */
	if (next_nudge_now(&f))
		CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	CU_ASSERT_EQUAL(fake_cm.nsends, 1);
	CU_ASSERT_EQUAL(nudges_sent(&f), 0);
	fake_cm_queue(f.e->cm_id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_DISCONNECTED);
	teardown(&f);

	p2p_connect_up(&f, false);
	CU_ASSERT_EQUAL(ofx_evd_from_handle(f.dto_evd)->cq_reserved, 5 + 5);
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	teardown(&f);
}

/*
 * Without p2p the active consumer's first message is what can land in
 * siw's accept window: the nudges follow a p2p-off connection's
 * ESTABLISHED too, and send nothing before it.
 */
static void test_p2p_off_connection_is_nudged(void)
{
	struct fixture f;
	struct rdma_cm_id *id;

	setup(&f, OFX_TRANSPORT_IWARP);
	ia.cfg.p2p = OFX_OFF;
	nudging_ep(&f, true);
	id = req_sent(&f, NULL, 0);
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	fake_cm_queue(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_FALSE(f.e->p2p);
	CU_ASSERT_EQUAL(fake_cm.nsends, 0);	/* no RTR */
	expect_four_nudges(&f, 0);
	expect_no_event(&f);
	teardown(&f);
}

/* The completion a device writes for one of the EP's own writes that failed. */
static struct ibv_wc own_write_failed(const struct fixture *f, const struct ofx_cookie *ck)
{
	return (struct ibv_wc){ .wr_id = (uintptr_t)ck, .status = IBV_WC_LOC_QP_OP_ERR,
				.opcode = IBV_WC_RDMA_WRITE, .qp_num = f->e->qp->qp_num };
}

/*
 * siw fails a nudge that crosses the peer's close (its stream reset) and
 * raises QP_FATAL: that is the provider's write, not the consumer's, and no
 * reason for BROKEN or an async error; the close's DISCONNECTED ends the
 * connection.  The RTR's own failure still breaks it.
 */
static void test_failed_nudge_is_not_broken(void)
{
	struct fixture f;
	struct ibv_wc wc;

	p2p_connect_up(&f, true);
	CU_ASSERT_TRUE_FATAL(next_nudge_now(&f));
	CU_ASSERT_EQUAL_FATAL(nudges_sent(&f), 1);
	wc = own_write_failed(&f, &f.e->nudge_cookie);
	fake_cq_push(ofx_evd_from_handle(f.dto_evd), &wc);
	/* the async handler's question drains the request EVD to answer it */
	CU_ASSERT_TRUE(ofx_ep_fatal_was_nudge(f.e));
	CU_ASSERT_EQUAL(fake_cq_pending(ofx_evd_from_handle(f.dto_evd)), 0);
	expect_no_event(&f);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 0);
	/* no nudge after a failed one: the QP is in error */
	if (next_nudge_now(&f))
		CU_ASSERT_EQUAL(nudges_sent(&f), 1);
	CU_ASSERT_EQUAL(fake_cm.nsends, 2);
	fake_cm_queue(f.e->cm_id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_DISCONNECTED);
	teardown(&f);

	p2p_connect_up(&f, true);
	wc = own_write_failed(&f, &f.e->rtr_cookie);
	wc.opcode = IBV_WC_SEND;
	fake_cq_push(ofx_evd_from_handle(f.dto_evd), &wc);
	CU_ASSERT_FALSE(ofx_ep_fatal_was_nudge(f.e));
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_BROKEN);
	teardown(&f);
}

/* ---- more of the active side ---------------------------------------------- */

/* An event that ends the attempt: `event` with `status` gives `want`. */
static void attempt_ends(enum ofx_transport transport, enum rdma_cm_event_type event,
			 int status, const void *pdata, int len, DAT_EVENT_NUMBER want)
{
	struct fixture f;
	struct rdma_cm_id *id;
	char data[64];
	int got = -1;

	setup(&f, transport);
	id = req_sent(&f, NULL, 0);
	fake_cm_queue(id, event, status, pdata, len);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, data, &got), want);
	if (want == DAT_CONNECTION_EVENT_PEER_REJECTED) {
		CU_ASSERT_EQUAL(got, len - OFX_REJ_HDR_LEN);
		CU_ASSERT_EQUAL(memcmp(data, (const char *)pdata + OFX_REJ_HDR_LEN, got), 0);
	} else {
		CU_ASSERT_EQUAL(got, 0);
	}
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_PTR_NULL(f.e->cm_id);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	expect_no_event(&f);
	teardown(&f);
}

static void test_unreachable_while_connecting(void)
{
	attempt_ends(OFX_TRANSPORT_ROCE, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL, 0,
		     DAT_CONNECTION_EVENT_UNREACHABLE);
}

static void test_connect_error_while_connecting(void)
{
	attempt_ends(OFX_TRANSPORT_ROCE, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, NULL, 0,
		     DAT_CONNECTION_EVENT_UNREACHABLE);
}

static const unsigned char stock_rej[] = { 0x02, 0x00, 0x02, 0x00, 'n', 'o', 'p', 'e' };

/* iWARP has no reject reasons: stock's header marks the consumer's reject. */
static void test_iwarp_reject_with_stock_header_is_peer_rejected(void)
{
	attempt_ends(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_REJECTED, -ECONNRESET, stock_rej,
		     sizeof(stock_rej), DAT_CONNECTION_EVENT_PEER_REJECTED);
	attempt_ends(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_REJECTED, -ECONNREFUSED, stock_rej,
		     sizeof(stock_rej), DAT_CONNECTION_EVENT_PEER_REJECTED);
}

static void test_iwarp_reject_without_the_header_is_non_peer(void)
{
	static const unsigned char other[] = { 0x01, 0x02, 0x03, 0x04, 'x' };

	attempt_ends(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_REJECTED, -ECONNRESET, other,
		     sizeof(other), DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	/* too short to carry the header */
	attempt_ends(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_REJECTED, -ECONNRESET, stock_rej, 3,
		     DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	/* another status: not an MPA reject */
	attempt_ends(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_REJECTED, -ETIMEDOUT, stock_rej,
		     sizeof(stock_rej), DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
}

/* iWARP: the kernel moved the QP, ESTABLISHED carries the REP's data. */
static void test_iwarp_active_established_carries_the_rep(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	char data[64];
	int len = -1;

	setup(&f, OFX_TRANSPORT_IWARP);
	id = req_sent(&f, "req", 3);
	CU_ASSERT_EQUAL(fake_cm.pdata_len, 3);	/* iWARP: exact length, no padding */
	fake_cm_queue(id, RDMA_CM_EVENT_ADDR_CHANGE, 0, NULL, 0);	/* ignored */
	fake_cm_deliver(&ia);
	expect_no_event(&f);
	fake_cm_queue(id, RDMA_CM_EVENT_ESTABLISHED, 0, "rep", 3);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, data, &len), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(len, 3);
	CU_ASSERT_EQUAL(memcmp(data, "rep", 3), 0);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_INIT);	/* not driven by us */
	CU_ASSERT_EQUAL(fake_cm.establishes, 0);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	teardown(&f);
}

/* rdma_resolve_route refused after the address: the attempt ends, the id goes. */
static void test_route_call_failure_ends_the_attempt(void)
{
	struct fixture f;
	struct rdma_cm_id *id;

	setup(&f, OFX_TRANSPORT_ROCE);
	id = connect_started(&f, NULL, 0);
	fake_cm.resolve_route_errno = ENOMEM;
	fake_cm_queue(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.connects, 0);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	teardown(&f);
}

/* rdma_resolve_addr refused: dat_ep_connect fails, the EP stays usable. */
static void test_addr_call_failure_fails_the_connect(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_ROCE);
	fake_cm.resolve_addr_errno = ENETUNREACH;
	CU_ASSERT_EQUAL(connect_to_peer(&f, DAT_TIMEOUT_INFINITE, NULL, 0),
			OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE));
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_UNCONNECTED);
	CU_ASSERT_PTR_NULL(f.e->cm_id);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	expect_no_event(&f);
	fake_cm.resolve_addr_errno = 0;
	CU_ASSERT_EQUAL(connect_to_peer(&f, DAT_TIMEOUT_INFINITE, NULL, 0), DAT_SUCCESS);
	teardown(&f);
}

static void test_tos_option_is_set_on_the_id(void)
{
	struct fixture f;

	setup(&f, OFX_TRANSPORT_ROCE);
	connect_started(&f, NULL, 0);
	CU_ASSERT_EQUAL(fake_cm.set_options, 0);	/* tos 0: left alone */
	teardown(&f);

	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.tos = 0x48;
	connect_started(&f, NULL, 0);
	CU_ASSERT_EQUAL(fake_cm.set_options, 1);
	CU_ASSERT_EQUAL(fake_cm.tos, 0x48);
	teardown(&f);
}

/* A QP that refuses a move fails the step that needed it. */
static enum ibv_qp_state refused_state;

static int modify_qp_refusing(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if ((mask & IBV_QP_STATE) && attr->qp_state == refused_state)
		return EINVAL;
	if (mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

static void test_rep_with_a_failing_qp_breaks_the_attempt(void)
{
	struct fixture f;
	struct rdma_cm_id *id;

	setup(&f, OFX_TRANSPORT_ROCE);
	id = req_sent(&f, NULL, 0);
	refused_state = IBV_QPS_RTR;
	fake_verbs.ops.modify_qp = modify_qp_refusing;
	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(fake_cm.establishes, 0);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* the peer that sent the REP is told */
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	teardown(&f);
}

static int post_send_failing(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	*bad = wr;
	return ENOMEM;
}

/* The RTR cannot be posted: the consumer never sees ESTABLISHED. */
static void test_rtr_post_failure_breaks_the_attempt(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	unsigned char rep[64];
	int n;

	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;
	id = req_sent(&f, NULL, 0);
	fake_verbs.ops.post_send = post_send_failing;
	n = rep_with_p2p(OFX_RTR_WRITE, rep, sizeof(rep));
	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep, n);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(fake_cm.establishes, 0);
	teardown(&f);
}

/* A REP whose trailer fails its check is plain consumer data: no p2p. */
static void test_rep_with_a_malformed_trailer_is_plain_data(void)
{
	struct fixture f;
	struct rdma_cm_id *id;
	unsigned char rep[64];
	char data[64];
	int n, len = -1;

	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;
	id = req_sent(&f, NULL, 0);
	n = rep_with_p2p(OFX_RTR_SEND, rep, sizeof(rep));
	rep[n - 1] ^= 0xff;	/* the check word */
	fake_cm_queue(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep, n);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, data, &len), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(len, n);
	CU_ASSERT_EQUAL(memcmp(data, rep, n), 0);
	CU_ASSERT_FALSE(f.e->p2p);
	CU_ASSERT_EQUAL(fake_cm.nsends, 0);
	teardown(&f);
}

/* ---- private data limits ------------------------------------------------------- */

static void pdata_limits(enum ofx_transport transport, bool p2p, int req_max, int rep_max,
			 int rep_hdr_max)
{
	char big[256];
	struct fixture f;

	setup(&f, transport);
	ia.p2p_default = p2p;
	memset(big, 'z', sizeof(big));
	CU_ASSERT_EQUAL(ofx_cm_max_pdata(&ia), req_max);
	CU_ASSERT_EQUAL(ofx_cm_max_accept_pdata(&ia, false), rep_max);
	CU_ASSERT_EQUAL(ofx_cm_max_accept_pdata(&ia, true), rep_hdr_max);
	CU_ASSERT_EQUAL(connect_to_peer(&f, DAT_TIMEOUT_INFINITE, big, req_max + 1),
			OFX_INVALID_ARG(5));
	req_sent(&f, big, req_max);
	CU_ASSERT_EQUAL(memcmp(fake_cm.pdata, big, req_max), 0);
	CU_ASSERT_EQUAL(fake_cm.pdata_len, p2p ? req_max + OFX_PDATA_HDR_LEN : req_max);
	teardown(&f);
}

/* IB/RoCE: a 56-byte REQ area and stock's 160-byte accept cap. */
static void test_pdata_limits_on_roce(void)
{
	pdata_limits(OFX_TRANSPORT_ROCE, false, 56, 160, 160);
	pdata_limits(OFX_TRANSPORT_ROCE, true, 48, 160, 160);
}

/* iWARP: 248 bytes both ways (MPA v2), less our trailer when it is sent. */
static void test_pdata_limits_on_iwarp(void)
{
	pdata_limits(OFX_TRANSPORT_IWARP, false, 248, 248, 240);
	pdata_limits(OFX_TRANSPORT_IWARP, true, 240, 248, 240);
}

/* ---- passive side ---------------------------------------------------------- */

struct passive {
	DAT_PSP_HANDLE psp;
	struct rdma_cm_id *id;	/* the request's */
	DAT_CR_HANDLE cr;
	struct rdma_cm_id *listen_id;	/* the PSP's */
};

/* A PSP, and a request arriving on it with `pdata`. */
static void request_arrives(struct fixture *f, struct passive *p, const void *pdata, int len)
{
	struct rdma_cm_id *listen_id;
	DAT_EVENT ev;

	CU_ASSERT_FATAL(ofx_psp_create(&ia, 4000, f->cr_evd, DAT_PSP_CONSUMER_FLAG, &p->psp) ==
			DAT_SUCCESS);
	listen_id = fake_cm.last_id;
	p->listen_id = listen_id;
	CU_ASSERT_EQUAL(fake_cm.listens, 1);
	p->id = fake_cm_queue_request(listen_id, pdata, len, 4, 4);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(f->cr_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	p->cr = ev.event_data.cr_arrival_event_data.cr_handle;
}

static void passive_done(struct passive *p)
{
	CU_ASSERT_EQUAL(ofx_psp_free(p->psp), DAT_SUCCESS);
}

/* RoCE: a request without private data, accepted on the fixture's EP. */
static void accepted(struct fixture *f, struct passive *p)
{
	setup(f, OFX_TRANSPORT_ROCE);
	request_arrives(f, p, NULL, 0);
	CU_ASSERT_EQUAL(ofx_cr_accept(p->cr, f->ep, 0, NULL), DAT_SUCCESS);
}

/*
 * The peer's address as the CR and, after the accept, the EP report it: an
 * IPv4 peer accepted on an EP whose storage last held an IPv6 address
 * shows no byte of the old one (both store the address zero padded to a
 * sockaddr_in6, cm.h ofx_cm_addr_set).
 */
static void test_accept_reports_the_peer_address_zero_padded(void)
{
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(5555) };
	struct sockaddr_in6 old = { .sin6_family = AF_INET6, .sin6_port = htons(1) };
	unsigned char zero[sizeof(struct sockaddr_storage)] = { 0 };
	DAT_CR_PARAM crp;
	DAT_EP_PARAM epp;
	struct fixture f;
	struct passive p;

	setup(&f, OFX_TRANSPORT_ROCE);
	memset(&old.sin6_addr, 0xee, sizeof(old.sin6_addr));
	memcpy(&f.e->remote_addr, &old, sizeof(old));
	peer.sin_addr.s_addr = htonl(0xc0a80002);
	CU_ASSERT_FATAL(ofx_psp_create(&ia, 4000, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &p.psp) ==
			DAT_SUCCESS);
	p.listen_id = fake_cm.last_id;
	p.id = fake_cm_queue_request(p.listen_id, NULL, 0, 4, 4);
	fake_cm_set_peer(p.id, &peer);
	fake_cm_deliver(&ia);
	{
		DAT_EVENT ev;

		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(f.cr_evd, &ev), DAT_SUCCESS);
		p.cr = ev.event_data.cr_arrival_event_data.cr_handle;
	}
	CU_ASSERT_EQUAL_FATAL(ofx_cr_query(p.cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(crp.remote_ia_address_ptr, &peer, sizeof(peer)), 0);
	CU_ASSERT_EQUAL(memcmp((unsigned char *)crp.remote_ia_address_ptr + sizeof(peer), zero,
			       sizeof(struct sockaddr_storage) - sizeof(peer)), 0);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(ofx_ep_query(f.ep, DAT_EP_FIELD_ALL, &epp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(memcmp(epp.remote_ia_address_ptr, &peer, sizeof(peer)), 0);
	CU_ASSERT_EQUAL(memcmp((unsigned char *)epp.remote_ia_address_ptr + sizeof(peer), zero,
			       sizeof(struct sockaddr_storage) - sizeof(peer)), 0);
	passive_done(&p);
	teardown(&f);
}

static void test_passive_accept_then_established(void)
{
	struct fixture f;
	struct passive p;

	setup(&f, OFX_TRANSPORT_ROCE);
	request_arrives(&f, &p, "hi", 2);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 3, "rep"), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_cm.accepts, 1);
	/* a request without our trailer gets the consumer's bytes alone */
	CU_ASSERT_EQUAL(fake_cm.pdata_len, 3);
	CU_ASSERT_EQUAL(memcmp(fake_cm.pdata, "rep", 3), 0);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_COMPLETION_PENDING);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_RTS);
	CU_ASSERT_PTR_EQUAL(f.e->cm_id, p.id);
	CU_ASSERT_FALSE(ofx_ep_conn_may_send(f.e));
	expect_no_event(&f);

	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_TRUE(ofx_ep_conn_may_send(f.e));
	passive_done(&p);
	teardown(&f);
}

static void test_passive_accept_that_fails_is_reported(void)
{
	struct fixture f;
	struct passive p;

	accepted(&f, &p);
	fake_cm_queue(p.id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL),
			DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	passive_done(&p);
	teardown(&f);
}

static int req_with_p2p(enum ofx_rtr_type rtr, unsigned char *out, size_t max)
{
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_P2P, .rtr = rtr };

	return ofx_pdata_encode(&hdr, "q", 1, 0, out, max);
}

/* iWARP: a p2p request with a SEND RTR arrives and is accepted on f->ep. */
static void send_rtr_request_accepted(struct fixture *f, struct passive *p)
{
	unsigned char req[64];
	int n;

	setup(f, OFX_TRANSPORT_IWARP);
	n = req_with_p2p(OFX_RTR_SEND, req, sizeof(req));
	CU_ASSERT_FATAL(n > 0);
	request_arrives(f, p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p->cr, f->ep, 0, NULL), DAT_SUCCESS);
}

/*
 * A passive SEND-RTR EP is CONNECTED only when both rdma_cm's ESTABLISHED
 * and the peer's RTR have arrived; `rtr_first` picks the order.
 */
static void passive_send_rtr(bool rtr_first)
{
	struct fixture f;
	struct passive p;
	struct ofx_pdata_hdr hdr;
	struct ibv_wc rtr = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };

	send_rtr_request_accepted(&f, &p);
	/* the REP grants p2p with the initiator's RTR type */
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(fake_cm.pdata, fake_cm.pdata_len, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags & (OFX_PDATA_F_P2P | OFX_PDATA_F_REPLY),
			OFX_PDATA_F_P2P | OFX_PDATA_F_REPLY);
	CU_ASSERT_EQUAL(hdr.rtr, OFX_RTR_SEND);
	CU_ASSERT_TRUE(f.e->p2p);
	/* iWARP: the kernel drives the QP; we moved it to INIT only */
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_INIT);

	rtr.wr_id = (uintptr_t)&f.e->rtr_cookie;
	if (rtr_first) {
		ofx_ep_dto_notify(f.e, &rtr);
		expect_no_event(&f);
		CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_COMPLETION_PENDING);
	}
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	if (!rtr_first) {
		/* up, but the peer may not have its receives yet: wait for the RTR */
		expect_no_event(&f);
		CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_COMPLETION_PENDING);
		CU_ASSERT_EQUAL(f.e->state, OFX_EP_RTR_WAIT);
		CU_ASSERT_FALSE(ofx_ep_conn_may_send(f.e));
		ofx_ep_dto_notify(f.e, &rtr);
	}
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_TRUE(ofx_ep_conn_may_send(f.e));
	expect_no_event(&f);	/* once */
	passive_done(&p);
	teardown(&f);
}

static void test_passive_p2p_established_then_rtr(void)
{
	passive_send_rtr(false);
}

static void test_passive_p2p_rtr_then_established(void)
{
	passive_send_rtr(true);
}

/* iWARP, progress thread running: a SEND-RTR request accepted, nothing after. */
static struct ofx_evd *p2p_send_accepted(struct fixture *f, struct passive *p)
{
	unsigned char req[64];
	int n;

	setup(f, OFX_TRANSPORT_IWARP);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	n = req_with_p2p(OFX_RTR_SEND, req, sizeof(req));
	CU_ASSERT_FATAL(n > 0);
	request_arrives(f, p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p->cr, f->ep, 0, NULL), DAT_SUCCESS);
	/* nothing of the wait before the CM's ESTABLISHED: no timer, no watch, no arm */
	CU_ASSERT_FALSE(atomic_load(&f->e->rtr_timer.armed));
	CU_ASSERT_FALSE(f->e->rtr_watch);
	CU_ASSERT_EQUAL(f->e->recv_evd->channel_watchers, 0);
	CU_ASSERT_FALSE(fake_cq_armed(f->e->recv_evd->cq));
	return f->e->recv_evd;
}

static void rtr_push(struct fixture *f, struct ofx_evd *recv)
{
	struct ibv_wc rtr = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV };

	rtr.wr_id = (uintptr_t)&f->e->rtr_cookie;
	rtr.qp_num = f->e->qp->qp_num;
	fake_cq_push(recv, &rtr);
}

/*
 * Nobody polls the recv CQ (the consumer waits for ESTABLISHED) and the RTR
 * is not in yet at the CM's ESTABLISHED: the progress thread's first look
 * finds the CQ empty and watches its completion channel, and the RTR's
 * completion wakes it; the watch lasts until the RTR is in and not after.
 */
static void test_passive_rtr_completion_wakes_the_progress_thread(void)
{
	struct fixture f;
	struct passive p;
	struct ofx_evd *recv = p2p_send_accepted(&f, &p);

	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	/* the first look runs in the CM handler, here: its watch is set when this returns */
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(f.e->state, OFX_EP_RTR_WAIT);
	CU_ASSERT_TRUE(f.e->rtr_watch);
	CU_ASSERT_EQUAL(recv->channel_watchers, 1);
	CU_ASSERT_TRUE(recv->channel_watched);
	CU_ASSERT_TRUE(fake_cq_armed(recv->cq));
	CU_ASSERT_TRUE(atomic_load(&f.e->rtr_timer.armed));	/* now the deadline */
	expect_no_event(&f);

	rtr_push(&f, recv);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_FALSE(f.e->rtr_watch);
	CU_ASSERT_EQUAL(recv->channel_watchers, 0);
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	/* the watch itself goes at the handler's next run or with the EVD (teardown) */
	passive_done(&p);
	teardown(&f);
}

/*
 * The usual order: the RTR completed before the CM's ESTABLISHED, unpolled.
 * The progress thread's first look after ESTABLISHED drains it: connected
 * with no channel watch and no arm of the CQ at all.
 */
static void test_passive_rtr_before_established_needs_no_watch(void)
{
	struct fixture f;
	struct passive p;
	struct ofx_evd *recv = p2p_send_accepted(&f, &p);

	rtr_push(&f, recv);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	ofx_progress_barrier(ia.progress);
	CU_ASSERT_FALSE(f.e->rtr_watch);
	CU_ASSERT_EQUAL(recv->channel_watchers, 0);
	CU_ASSERT_FALSE(fake_cq_armed(recv->cq));
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	CU_ASSERT_EQUAL(recv->count, 0);	/* the RTR is never a DTO event */
	expect_no_event(&f);
	passive_done(&p);
	teardown(&f);
}

/*
 * The first look into the recv CQ is the CM handler's own, under the EP
 * lock: no timer and no progress engine are needed for an RTR already in
 * the CQ (there is none here), the ESTABLISHED is posted by the time the CM
 * event is handled, and the EP never waited for its RTR (no RTR_WAIT, so
 * no deadline was set).
 */
static void test_passive_rtr_first_look_is_the_cm_handlers(void)
{
	struct fixture f;
	struct passive p;
	struct ofx_evd *recv;

	send_rtr_request_accepted(&f, &p);
	recv = f.e->recv_evd;
	rtr_push(&f, recv);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	CU_ASSERT_FALSE(f.e->rtr_watch);
	CU_ASSERT_EQUAL(recv->channel_watchers, 0);
	CU_ASSERT_EQUAL(recv->count, 0);	/* the RTR is never a DTO event */
	CU_ASSERT_EQUAL(f.e->rtr_deadline_ns, 0);
	CU_ASSERT_EQUAL(atomic_load(&ia.stats.rtr_received), 1);
	expect_no_event(&f);
	passive_done(&p);
	teardown(&f);
}

/* iWARP: a p2p request with `rtr` accepted, and the CM's ESTABLISHED delivered. */
static void p2p_accepted_up(struct fixture *f, struct passive *p, enum ofx_rtr_type rtr)
{
	unsigned char req[64];
	int n;

	setup(f, OFX_TRANSPORT_IWARP);
	n = req_with_p2p(rtr, req, sizeof(req));
	request_arrives(f, p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p->cr, f->ep, 0, NULL), DAT_SUCCESS);
	fake_cm_queue(p->id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
}

/* WRITE and READ RTRs need no receive: ESTABLISHED alone connects. */
static void test_passive_p2p_write_rtr_needs_no_receive(void)
{
	struct fixture f;
	struct passive p;

	p2p_accepted_up(&f, &p, OFX_RTR_WRITE);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	passive_done(&p);
	teardown(&f);
}

/*
 * A read RTR needs one outstanding read each way even when the consumer's
 * EPs asked for none (siw refuses it with IRD 0): the REQ's initiator depth
 * and the REP's responder resources are raised to 1, and only then.
 */
static void test_read_rtr_gets_a_read_depth(void)
{
	struct fixture f;
	struct passive p;
	unsigned char req[64];
	int n;

	setup(&f, OFX_TRANSPORT_IWARP);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;
	ia.cfg.rtr = OFX_RTR_READ;
	f.e->attr.max_rdma_read_out = 0;
	f.e->attr.max_rdma_read_in = 0;
	req_sent(&f, "abc", 3);
	CU_ASSERT_EQUAL(fake_cm.conn.initiator_depth, 1);
	CU_ASSERT_EQUAL(fake_cm.conn.responder_resources, 0);
	teardown(&f);

	setup(&f, OFX_TRANSPORT_IWARP);
	ia.cfg.p2p = OFX_ON;
	ia.p2p_default = true;
	f.e->attr.max_rdma_read_in = 0;
	n = req_with_p2p(OFX_RTR_READ, req, sizeof(req));
	request_arrives(&f, &p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_TRUE(f.e->p2p);
	CU_ASSERT_EQUAL(fake_cm.conn.responder_resources, 1);
	passive_done(&p);
	teardown(&f);

	/* without p2p the consumer's zero stands */
	setup(&f, OFX_TRANSPORT_ROCE);
	ia.cfg.rtr = OFX_RTR_READ;
	f.e->attr.max_rdma_read_out = 0;
	req_sent(&f, "abc", 3);
	CU_ASSERT_EQUAL(fake_cm.conn.initiator_depth, 0);
	teardown(&f);
}

/*
 * The peer gave up and the kernel moved the request on, but its event has
 * not arrived: the request id refuses its first step (EINVAL).  The accept
 * fails as for a dead request, not as a bad parameter; the EP stays usable.
 */
/* The next request on the fixture's PSP is accepted on f->ep. */
static void next_request_accepted(struct fixture *f, struct passive *p)
{
	DAT_EVENT ev;

	p->id = fake_cm_queue_request(ofx_sp_lookup(p->psp, OFX_OBJ_PSP)->listen_id, NULL, 0, 4,
				      4);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(f->cr_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, f->ep, 0, NULL),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(dat_state(f), DAT_EP_STATE_COMPLETION_PENDING);
}

/*
 * A request arrives and its accept meets a peer gone (`*knob` = `err`, a
 * fake_cm errno): DAT_INVALID_STATE, `accepts` rdma_accept calls and
 * `rejects` REJs made, the EP back in UNCONNECTED, no event.
 */
static void accept_meets_a_peer_gone(struct fixture *f, struct passive *p, int *knob, int err,
				     int accepts, int rejects)
{
	request_arrives(f, p, NULL, 0);
	*knob = err;
	CU_ASSERT_EQUAL(ofx_cr_accept(p->cr, f->ep, 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE));
	*knob = 0;
	CU_ASSERT_EQUAL(fake_cm.accepts, accepts);
	CU_ASSERT_EQUAL(fake_cm.rejects, rejects);
	CU_ASSERT_EQUAL(dat_state(f), DAT_EP_STATE_UNCONNECTED);
	expect_no_event(f);
}

static void test_request_gone_under_the_accept(void)
{
	struct fixture f;
	struct passive p;

	setup(&f, OFX_TRANSPORT_ROCE);
	accept_meets_a_peer_gone(&f, &p, &fake_cm.init_qp_attr_errno, EINVAL, 0, 1);
	passive_done(&p);
	teardown(&f);
}

/*
 * A responder whose device mis-answers queued zero-length reads (siw)
 * grants a write RTR when a read RTR is asked: the REP says so, and the
 * initiator posts what the REP names.
 */
static void test_siw_grants_a_write_rtr_for_a_read(void)
{
	struct ofx_pdata_hdr hdr;
	struct fixture f;
	struct passive p;
	unsigned char req[64];
	int n;

	setup(&f, OFX_TRANSPORT_IWARP);
	ia.read_rtr_unsafe = true;
	n = req_with_p2p(OFX_RTR_READ, req, sizeof(req));
	request_arrives(&f, &p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_TRUE(f.e->p2p);
	CU_ASSERT_EQUAL(f.e->rtr, OFX_RTR_WRITE);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(fake_cm.pdata, fake_cm.pdata_len, &hdr), 0);
	CU_ASSERT_TRUE(hdr.flags & OFX_PDATA_F_P2P);
	CU_ASSERT_EQUAL(hdr.rtr, OFX_RTR_WRITE);
	passive_done(&p);
	teardown(&f);

	/* any other device grants the read it was asked for */
	setup(&f, OFX_TRANSPORT_IWARP);
	n = req_with_p2p(OFX_RTR_READ, req, sizeof(req));
	request_arrives(&f, &p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(f.e->rtr, OFX_RTR_READ);
	passive_done(&p);
	teardown(&f);
}

/*
 * iWARP: the MPA reply goes out in rdma_accept, on the request's stream,
 * which the peer's kernel already reset (siw's active side gives up after
 * 10 s without the reply): a peer gone, DAT_INVALID_STATE as for a dead
 * request, with no REJ on the finished id; the EP takes the next request.
 */
static void test_accept_on_a_reset_stream_is_a_peer_gone(void)
{
	struct fixture f;
	struct passive p;

	setup(&f, OFX_TRANSPORT_IWARP);
	accept_meets_a_peer_gone(&f, &p, &fake_cm.accept_errno, ECONNRESET, 1, 0);
	CU_ASSERT_PTR_NULL(f.e->cm_id);

	next_request_accepted(&f, &p);
	passive_done(&p);
	teardown(&f);
}

/* The peer gives up before the consumer accepts: the accept fails, the EP stays usable. */
static void test_request_abandoned_before_accept(void)
{
	struct fixture f;
	struct passive p;

	setup(&f, OFX_TRANSPORT_ROCE);
	request_arrives(&f, &p, NULL, 0);
	fake_cm_queue(p.id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE));
	CU_ASSERT_EQUAL(fake_cm.accepts, 0);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	expect_no_event(&f);
	passive_done(&p);
	teardown(&f);
}

/*
 * rdma_accept (or a QP move before it) failing: the request is refused, and
 * the EP is back where it was, ready for the next one.
 */
static void accept_fails(bool qp_refuses)
{
	struct fixture f;
	struct passive p;
	typeof(fake_verbs.ops.modify_qp) fake_modify_qp;

	setup(&f, OFX_TRANSPORT_ROCE);
	request_arrives(&f, &p, "hi", 2);
	fake_modify_qp = fake_verbs.ops.modify_qp;
	if (qp_refuses) {
		refused_state = IBV_QPS_RTS;
		fake_verbs.ops.modify_qp = modify_qp_refusing;
	} else {
		fake_cm.accept_errno = ENOMEM;
	}
	CU_ASSERT_NOT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_cm.accepts, qp_refuses ? 0 : 1);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_UNCONNECTED);
	CU_ASSERT_PTR_NULL(f.e->cm_id);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_RESET);
	expect_no_event(&f);

	/* the next request is accepted on the same EP */
	fake_verbs.ops.modify_qp = fake_modify_qp;
	fake_cm.accept_errno = 0;
	next_request_accepted(&f, &p);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_RTS);
	passive_done(&p);
	teardown(&f);
}

static void test_accept_call_failure_leaves_the_ep_usable(void)
{
	accept_fails(false);
}

static void test_accept_qp_failure_leaves_the_ep_usable(void)
{
	accept_fails(true);
}

/* A request whose trailer is malformed is plain data: the CR has all of it, the REP is raw. */
static void test_request_with_a_malformed_trailer(void)
{
	struct fixture f;
	struct passive p;
	unsigned char req[64];
	DAT_CR_PARAM param;
	int n;

	setup(&f, OFX_TRANSPORT_ROCE);
	n = req_with_p2p(OFX_RTR_SEND, req, sizeof(req));
	req[n - 1] ^= 0xff;	/* the check word */
	request_arrives(&f, &p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_query(p.cr, DAT_CR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.private_data_size, n);
	CU_ASSERT_EQUAL(memcmp(param.private_data, req, n), 0);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 2, "ok"), DAT_SUCCESS);
	CU_ASSERT_FALSE(f.e->p2p);
	CU_ASSERT_EQUAL(fake_cm.pdata_len, 2);
	passive_done(&p);
	teardown(&f);
}

/*
 * Accepted, then the peer hangs up before ESTABLISHED (it died before its
 * RTU): the accept did not complete.  Other events are ignored.
 */
static void test_disconnect_before_established(void)
{
	struct fixture f;
	struct passive p;

	accepted(&f, &p);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ADDR_CHANGE, 0, NULL, 0);
	fake_cm_deliver(&ia);
	expect_no_event(&f);
	fake_cm_queue(p.id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_conn_event(&f, NULL, NULL),
			DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	expect_no_event(&f);	/* once */
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	passive_done(&p);
	teardown(&f);
}

/*
 * Holds the progress thread in a timer callback from hold() to let_go():
 * events the test queues meanwhile wait for their handlers, as when the
 * thread is busy elsewhere.
 */
struct progress_hold {
	struct ofx_timer timer;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inside, released;
};

static void progress_held(void *arg)
{
	struct progress_hold *h = arg;

	pthread_mutex_lock(&h->lock);
	h->inside = true;
	pthread_cond_broadcast(&h->cond);
	while (!h->released)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

static void hold(struct progress_hold *h)
{
	memset(h, 0, sizeof(*h));
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	ofx_progress_timer_arm(ia.progress, &h->timer, 0, progress_held, h);
	pthread_mutex_lock(&h->lock);
	while (!h->inside)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

static void let_go(struct progress_hold *h)
{
	pthread_mutex_lock(&h->lock);
	h->released = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	ofx_progress_barrier(ia.progress);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
}

/* A receive of `ep` posted with `user` (held by an EP not yet connected). */
static void post_recv_of(DAT_EP_HANDLE ep, uint64_t user)
{
	DAT_LMR_TRIPLET iov = { .segment_length = 64 };

	CU_ASSERT_EQUAL(ofx_ep_post_recv(ep, 1, &iov, (DAT_DTO_COOKIE){ .as_64 = user },
					 DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
}

static struct ibv_wc recv_wc(uint64_t wr_id, const struct ofx_ep *ep, enum ibv_wc_status st,
			     uint32_t len)
{
	return (struct ibv_wc){ .wr_id = wr_id, .status = st, .opcode = IBV_WC_RECV,
				.byte_len = len, .qp_num = ep->qp->qp_num };
}

/* The next DTO event of `evd` is a receive of `ep` with `user` and `len` bytes. */
static void expect_recv(DAT_EVD_HANDLE evd, DAT_EP_HANDLE ep, uint64_t user, uint32_t len)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(ev.event_data.dto_completion_event_data.ep_handle, ep);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, user);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, len);
}

/*
 * iWARP with the progress thread running: a p2p SEND-RTR request accepted
 * on f->ep, a consumer receive (0x55) posted before; returns its wr_id.
 */
static uint64_t p2p_send_rtr_accepted(struct fixture *f, struct passive *p)
{
	unsigned char req[64];
	int n;

	setup(f, OFX_TRANSPORT_IWARP);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	post_recv_of(f->ep, 0x55);
	n = req_with_p2p(OFX_RTR_SEND, req, sizeof(req));
	request_arrives(f, p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p->cr, f->ep, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_TRUE(f->e->p2p);
	/* nothing watches the CQ before the rdma_cm ESTABLISHED (rtr_wait_start) */
	CU_ASSERT_FALSE(f->e->rtr_watch);
	/* the held receive went in after the RTR's */
	CU_ASSERT_NOT_EQUAL(fake_verbs.last_recv_wr_id, (uintptr_t)&f->e->rtr_cookie);
	return fake_verbs.last_recv_wr_id;
}

/*
 * A second EP of the fixture's EVDs, accepted without p2p on the same PSP
 * and up, with a receive (0x77) live; returns its wr_id.
 */
static uint64_t plain_neighbour_up(struct fixture *f, struct passive *p, DAT_EP_HANDLE *ep_p)
{
	struct rdma_cm_id *id;
	DAT_EVENT ev;

	CU_ASSERT_FATAL(ofx_ep_create(&ia, f->pz, f->dto_evd, f->dto_evd, f->conn_evd,
				      &fake_rc_ep_attr, ep_p) == DAT_SUCCESS);
	id = fake_cm_queue_request(p->listen_id, NULL, 0, 4, 4);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(f->cr_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, *ep_p, 0,
				      NULL), DAT_SUCCESS);
	fake_cm_queue(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f->conn_evd, *ep_p),
			DAT_CONNECTION_EVENT_ESTABLISHED);
	post_recv_of(*ep_p, 0x77);
	return fake_verbs.last_recv_wr_id;
}

/*
 * The client sent its RTR and a message and hung up at once: the RTR's
 * completion is in the recv CQ, its channel handler not run yet, when
 * rdma_cm's ESTABLISHED and DISCONNECTED come in one batch.  The connection
 * was up: ESTABLISHED, then DISCONNECTED, and the message is delivered.
 * With `shared`, another EP's completion comes first in the same CQ and
 * reaches its consumer too.
 */
static void peer_gone_after_its_rtr(bool shared)
{
	struct fixture f;
	struct passive p;
	struct progress_hold h;
	struct ibv_wc wc;
	DAT_EP_HANDLE other = NULL;
	uint64_t mine, theirs = 0;

	mine = p2p_send_rtr_accepted(&f, &p);
	if (shared)
		theirs = plain_neighbour_up(&f, &p, &other);
	hold(&h);
	if (shared) {
		wc = recv_wc(theirs, ofx_ep_from_handle(other), IBV_WC_SUCCESS, 3);
		fake_cq_push(f.e->recv_evd, &wc);
	}
	wc = recv_wc((uintptr_t)&f.e->rtr_cookie, f.e, IBV_WC_SUCCESS, 0);
	fake_cq_push(f.e->recv_evd, &wc);
	wc = recv_wc(mine, f.e, IBV_WC_SUCCESS, 5);
	fake_cq_push(f.e->recv_evd, &wc);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_queue(p.id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	let_go(&h);

	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_no_event(&f);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* the DREQ answered once */
	CU_ASSERT_FALSE(f.e->rtr_watch);
	if (shared)
		expect_recv(f.dto_evd, other, 0x77, 3);
	expect_recv(f.dto_evd, f.ep, 0x55, 5);
	if (shared)
		CU_ASSERT_EQUAL(ofx_ep_free(other), DAT_SUCCESS);
	passive_done(&p);
	teardown(&f);
}

static void test_peer_gone_after_its_rtr(void)
{
	peer_gone_after_its_rtr(false);
}

static void test_peer_gone_after_its_rtr_shared_cq(void)
{
	peer_gone_after_its_rtr(true);
}

/*
 * The CM handler's look under the EP lock finds another EP's failed receive
 * ahead of the RTR in the shared CQ: that completion reaches its consumer
 * with its status, its follow-up (the neighbour BROKEN) runs once the lock
 * is dropped, before this EP's own look, which then finds the RTR.
 */
static void test_passive_rtr_behind_a_failed_neighbour(void)
{
	struct fixture f;
	struct passive p;
	struct ibv_wc wc;
	DAT_EP_HANDLE other = NULL;
	DAT_EVENT ev;
	uint64_t theirs;

	p2p_send_rtr_accepted(&f, &p);
	theirs = plain_neighbour_up(&f, &p, &other);
	wc = recv_wc(theirs, ofx_ep_from_handle(other), IBV_WC_LOC_LEN_ERR, 0);
	fake_cq_push(f.e->recv_evd, &wc);
	wc = recv_wc((uintptr_t)&f.e->rtr_cookie, f.e, IBV_WC_SUCCESS, 0);
	fake_cq_push(f.e->recv_evd, &wc);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);

	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, other), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(f.dto_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(ev.event_data.dto_completion_event_data.ep_handle, other);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x77);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_ERR_LOCAL_LENGTH);
	expect_no_event(&f);
	CU_ASSERT_EQUAL(ofx_ep_free(other), DAT_SUCCESS);
	passive_done(&p);
	teardown(&f);
}

/*
 * An RTR that completed in error sits in the CQ at the CM's ESTABLISHED:
 * the connection, up at the CM, is BROKEN (the peer is told through the
 * DREQ), as it would be had the RTR failed while the EP waited for it.
 */
static void test_passive_failed_rtr_at_established_is_broken(void)
{
	struct fixture f;
	struct passive p;
	struct ibv_wc wc;

	p2p_send_rtr_accepted(&f, &p);
	wc = recv_wc((uintptr_t)&f.e->rtr_cookie, f.e, IBV_WC_LOC_LEN_ERR, 0);
	fake_cq_push(f.e->recv_evd, &wc);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);

	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	CU_ASSERT_EQUAL(atomic_load(&ia.stats.rtr_received), 0);
	passive_done(&p);
	teardown(&f);
}

/* A consumer's dat_evd_dequeue on another thread, with what it got. */
struct consumer_drain {
	DAT_EVD_HANDLE evd;
	DAT_EVENT ev;
	DAT_RETURN ret;
};

static void *consumer_drain_main(void *arg)
{
	struct consumer_drain *d = arg;

	d->ret = ofx_evd_dequeue(d->evd, &d->ev);
	return NULL;
}

/* Spins (30 s at most: a busy machine) until `done(arg)`; the caller asserts the state. */
static void await_state(bool (*done)(void *arg), void *arg)
{
	uint64_t deadline = ofx_now_ns() + 30 * 1000000000ull;

	while (!done(arg) && ofx_now_ns() < deadline)
		sched_yield();
}

/* The drain polled the whole batch and runs its owners' notify ops. */
static bool drain_in_notify(void *arg)
{
	struct ofx_evd *evd = arg;

	return atomic_load(&evd->notify_inflight) != 0 && fake_cq_pending(evd) == 0;
}

/* The progress thread took the timer off its list (and counted its run: progress.c). */
static bool timer_fired(void *arg)
{
	return !atomic_load(&((struct ofx_timer *)arg)->armed);
}

/*
 * The RTR and a message came, then (with `deadline` false) the peer hung
 * up; but a consumer's drain of the shared recv EVD polled them and has
 * not handed the RTR over yet: it waits in the notify of a neighbour's
 * failed receive, polled first, on the neighbour's lock.  The RTR wait's
 * look meanwhile (rtr_timer's after the DISCONNECTED, or with `deadline`
 * the CM handler's first look, past rtr_timeout_ms) finds the CQ empty; the RTR came all the same, so it
 * reports nothing and the handover decides: ESTABLISHED (then
 * DISCONNECTED), not ACCEPT_COMPLETION_ERROR or BROKEN.
 */
static void rtr_in_a_consumer_drain(bool deadline)
{
	struct fixture f;
	struct passive p;
	struct progress_hold h;
	struct consumer_drain d = { 0 };
	struct ofx_evd *recv;
	struct ofx_ep *o;
	struct ibv_wc wc;
	DAT_EP_HANDLE other = NULL;
	DAT_EVENT ev;
	uint64_t mine, theirs;
	pthread_t t;

	mine = p2p_send_rtr_accepted(&f, &p);
	theirs = plain_neighbour_up(&f, &p, &other);
	o = ofx_ep_from_handle(other);
	recv = f.e->recv_evd;
	if (deadline)
		ia.cfg.rtr_timeout_ms = 0;	/* the first look is past the deadline */
	/* an error status needs its owner's notify (ofx_dto_settle) */
	wc = recv_wc(theirs, o, IBV_WC_LOC_LEN_ERR, 0);
	fake_cq_push(recv, &wc);
	wc = recv_wc((uintptr_t)&f.e->rtr_cookie, f.e, IBV_WC_SUCCESS, 0);
	fake_cq_push(recv, &wc);
	wc = recv_wc(mine, f.e, IBV_WC_SUCCESS, 5);
	fake_cq_push(recv, &wc);

	pthread_mutex_lock(&o->lock);
	d.evd = f.dto_evd;
	CU_ASSERT_FATAL(pthread_create(&t, NULL, consumer_drain_main, &d) == 0);
	await_state(drain_in_notify, recv);
	CU_ASSERT_FATAL(drain_in_notify(recv));

	hold(&h);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	if (!deadline)
		fake_cm_queue(p.id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(f.e->state, OFX_EP_RTR_WAIT);
	/*
	 * The deadline's look ran in the CM handler (here: fake_cm_deliver)
	 * and armed nothing; the hang-up's is rtr_timer, run once let go.
	 */
	CU_ASSERT_EQUAL(atomic_load(&f.e->rtr_timer.armed), !deadline);
	let_go(&h);
	if (!deadline) {
		await_state(timer_fired, &f.e->rtr_timer);
		ofx_progress_barrier(ia.progress);	/* rtr_timer_run is over */
	}
	CU_ASSERT_FALSE(atomic_load(&f.e->rtr_timer.armed));
	pthread_mutex_unlock(&o->lock);
	CU_ASSERT_EQUAL(pthread_join(t, NULL), 0);

	/* the consumer got the neighbour's receive with its status */
	CU_ASSERT_EQUAL(d.ret, DAT_SUCCESS);
	CU_ASSERT_EQUAL(d.ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(d.ev.event_data.dto_completion_event_data.ep_handle, other);
	CU_ASSERT_EQUAL(d.ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x77);
	CU_ASSERT_EQUAL(d.ev.event_data.dto_completion_event_data.status,
			DAT_DTO_ERR_LOCAL_LENGTH);
	/* the notify ops in their order: the neighbour's, then the RTR's */
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, other), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_ESTABLISHED);
	if (!deadline)
		CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep),
				DAT_CONNECTION_EVENT_DISCONNECTED);
	expect_no_event(&f);
	CU_ASSERT_EQUAL(dat_state(&f),
			deadline ? DAT_EP_STATE_CONNECTED : DAT_EP_STATE_DISCONNECTED);
	/* the DREQ answered (when the peer hung up) and the neighbour's */
	CU_ASSERT_EQUAL(fake_cm.disconnects, deadline ? 1 : 2);
	CU_ASSERT_FALSE(f.e->rtr_watch);
	expect_recv(f.dto_evd, f.ep, 0x55, 5);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f.dto_evd, &ev)), DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(ofx_ep_free(other), DAT_SUCCESS);
	passive_done(&p);
	teardown(&f);
}

static void test_peer_gone_with_its_rtr_in_a_consumer_drain(void)
{
	rtr_in_a_consumer_drain(false);
}

static void test_rtr_deadline_with_the_rtr_in_a_consumer_drain(void)
{
	rtr_in_a_consumer_drain(true);
}

/*
 * Up at the CM, the RTR not yet here, and the stream closes: the RTR never
 * came (not in the CQ; flushed later), so the accept did not complete.
 */
static void test_disconnect_while_waiting_for_the_rtr(void)
{
	struct fixture f;
	struct passive p;
	struct ibv_wc wc;
	DAT_EVENT ev;

	p2p_send_rtr_accepted(&f, &p);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(f.e->state, OFX_EP_RTR_WAIT);
	expect_no_event(&f);
	fake_cm_queue(p.id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep),
			DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(f.e->qp->state, IBV_QPS_ERR);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);
	/* the error-state QP flushes the RTR's receive: no second event, no DTO event */
	wc = recv_wc((uintptr_t)&f.e->rtr_cookie, f.e, IBV_WC_WR_FLUSH_ERR, 0);
	fake_cq_push(f.e->recv_evd, &wc);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f.dto_evd, &ev)), DAT_QUEUE_EMPTY);
	expect_no_event(&f);
	/* the EP is reusable */
	CU_ASSERT_EQUAL(ofx_ep_reset(f.ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_UNCONNECTED);
	passive_done(&p);
	teardown(&f);
}

/* A SEND RTR that never comes: rtr_timeout_ms, then BROKEN. */
static void test_passive_p2p_rtr_that_never_comes(void)
{
	struct fixture f;
	struct passive p;
	unsigned char req[64];
	int n;

	setup(&f, OFX_TRANSPORT_IWARP);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	ia.cfg.rtr_timeout_ms = 20;
	n = req_with_p2p(OFX_RTR_SEND, req, sizeof(req));
	request_arrives(&f, &p, req, n);
	CU_ASSERT_EQUAL(ofx_cr_accept(p.cr, f.ep, 0, NULL), DAT_SUCCESS);
	fake_cm_queue(p.id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_conn_event_wait(f.conn_evd, f.ep), DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_EQUAL(dat_state(&f), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(fake_cm.disconnects, 1);	/* the peer is told */
	passive_done(&p);
	teardown(&f);
}

CU_TestInfo ofx_test_ep_conn[] = {
	{ "accept reports the peer address zero padded, none of the old one",
	  test_accept_reports_the_peer_address_zero_padded },
	{ "moves outside the table are refused", test_moves_outside_the_table_are_refused },
	{ "the data path flag follows the state", test_data_path_flag_follows_the_state },
	{ "active connect reports the REP's data", test_active_connect_reports_the_rep_data },
	{ "consumer reject: PEER_REJECTED with its data",
	  test_consumer_reject_is_peer_rejected_with_its_data },
	{ "no listener: NON_PEER_REJECTED", test_no_listener_is_non_peer_rejected },
	{ "iWARP refused TCP connect: NON_PEER_REJECTED",
	  test_iwarp_refused_connect_is_non_peer_rejected },
	{ "iWARP reset TCP connect: NON_PEER_REJECTED",
	  test_iwarp_reset_connect_is_non_peer_rejected },
	{ "iWARP: a taken local port is UNREACHABLE, not BROKEN",
	  test_iwarp_taken_local_port_is_unreachable },
	{ "resolution retried, then UNREACHABLE", test_resolution_retries_then_unreachable },
	{ "connect timeout: TIMED_OUT", test_connect_timeout_is_timed_out },
	{ "graceful disconnect, then reset", test_graceful_disconnect_then_reset },
	{ "iWARP graceful disconnect flushes after the close",
	  test_iwarp_graceful_disconnect_flushes_after_the_close },
	{ "peer disconnect is answered and reported",
	  test_peer_disconnect_is_answered_and_reported },
	{ "completion error breaks the connection", test_completion_error_breaks_the_connection },
	{ "disconnect while connecting", test_disconnect_while_connecting },
	{ "p2p active: SEND RTR first on the wire", test_active_p2p_send_rtr },
	{ "p2p active on siw: the RTR is followed by four zero-length write nudges",
	  test_active_rtr_is_followed_by_nudges },
	{ "p2p active: nudges end with the connection, none where not needed",
	  test_nudges_end_with_the_connection },
	{ "siw: a p2p-off active connection is nudged too, from its ESTABLISHED",
	  test_p2p_off_connection_is_nudged },
	{ "p2p active: a failed nudge is no BROKEN and no async error, a failed RTR is",
	  test_failed_nudge_is_not_broken },
	{ "p2p active: WRITE RTR first on the wire", test_active_p2p_write_rtr },
	{ "p2p active: READ RTR with one empty segment", test_active_p2p_read_rtr },
	{ "p2p active: a stock peer gets no RTR", test_active_p2p_refused_by_a_stock_peer },
	{ "passive accept, then ESTABLISHED", test_passive_accept_then_established },
	{ "passive accept that fails is reported", test_passive_accept_that_fails_is_reported },
	{ "p2p passive: ESTABLISHED, then the RTR", test_passive_p2p_established_then_rtr },
	{ "p2p passive: the RTR, then ESTABLISHED", test_passive_p2p_rtr_then_established },
	{ "p2p passive: the RTR's completion wakes the progress thread",
	  test_passive_rtr_completion_wakes_the_progress_thread },
	{ "p2p passive: an RTR before ESTABLISHED needs no channel watch",
	  test_passive_rtr_before_established_needs_no_watch },
	{ "p2p passive: the CM handler takes an RTR already in the CQ",
	  test_passive_rtr_first_look_is_the_cm_handlers },
	{ "p2p passive: WRITE RTR needs no receive", test_passive_p2p_write_rtr_needs_no_receive },
	{ "p2p: a read RTR gets a read depth", test_read_rtr_gets_a_read_depth },
	{ "p2p: siw grants a write RTR for a read", test_siw_grants_a_write_rtr_for_a_read },
	{ "UNREACHABLE while connecting", test_unreachable_while_connecting },
	{ "CONNECT_ERROR while connecting: UNREACHABLE", test_connect_error_while_connecting },
	{ "iWARP reject with stock's header: PEER_REJECTED",
	  test_iwarp_reject_with_stock_header_is_peer_rejected },
	{ "iWARP reject without it: NON_PEER_REJECTED",
	  test_iwarp_reject_without_the_header_is_non_peer },
	{ "iWARP active ESTABLISHED carries the REP", test_iwarp_active_established_carries_the_rep },
	{ "route error retried, then UNREACHABLE", test_route_error_retried_then_unreachable },
	{ "a route retry that cannot start: UNREACHABLE", test_failed_route_retry_is_unreachable },
	{ "rdma_resolve_route refused ends the attempt", test_route_call_failure_ends_the_attempt },
	{ "rdma_resolve_addr refused fails the connect", test_addr_call_failure_fails_the_connect },
	{ "the TOS option is set on the id", test_tos_option_is_set_on_the_id },
	{ "REP with a failing QP breaks the attempt", test_rep_with_a_failing_qp_breaks_the_attempt },
	{ "RTR that cannot be posted breaks the attempt", test_rtr_post_failure_breaks_the_attempt },
	{ "REP with a malformed trailer is plain data",
	  test_rep_with_a_malformed_trailer_is_plain_data },
	{ "private data limits on IB/RoCE", test_pdata_limits_on_roce },
	{ "private data limits on iWARP", test_pdata_limits_on_iwarp },
	{ "abrupt disconnect without DREP: disc timer", test_abrupt_disconnect_without_drep },
	{ "abrupt disconnect ends a graceful wait", test_abrupt_disconnect_ends_a_graceful_wait },
	{ "DEVICE_REMOVAL breaks the connection", test_device_removal_breaks_the_connection },
	{ "event on an unowned id is dropped", test_event_on_an_unowned_id_is_dropped },
	{ "request abandoned before accept", test_request_abandoned_before_accept },
	{ "passive: the request moved on under the accept", test_request_gone_under_the_accept },
	{ "rdma_accept failure leaves the EP usable", test_accept_call_failure_leaves_the_ep_usable },
	{ "QP failure in accept leaves the EP usable", test_accept_qp_failure_leaves_the_ep_usable },
	{ "request with a malformed trailer is plain data", test_request_with_a_malformed_trailer },
	{ "peer disconnect before ESTABLISHED", test_disconnect_before_established },
	{ "p2p passive: the stream closes before the RTR", test_disconnect_while_waiting_for_the_rtr },
	{ "accept on a stream the peer reset: peer gone, no REJ",
	  test_accept_on_a_reset_stream_is_a_peer_gone },
	{ "p2p passive: the peer hangs up after its RTR", test_peer_gone_after_its_rtr },
	{ "p2p passive: ... with another EP's completion in the CQ",
	  test_peer_gone_after_its_rtr_shared_cq },
	{ "p2p passive: a neighbour's failed receive ahead of the RTR, its follow-up unlocked",
	  test_passive_rtr_behind_a_failed_neighbour },
	{ "p2p passive: a failed RTR in the CQ at ESTABLISHED is BROKEN",
	  test_passive_failed_rtr_at_established_is_broken },
	{ "p2p passive: ... its RTR still in a consumer's drain",
	  test_peer_gone_with_its_rtr_in_a_consumer_drain },
	{ "p2p passive: the RTR deadline with the RTR in a consumer's drain",
	  test_rtr_deadline_with_the_rtr_in_a_consumer_drain },
	{ "p2p passive: an RTR that never comes is BROKEN", test_passive_p2p_rtr_that_never_comes },
	CU_TEST_INFO_NULL,
};
