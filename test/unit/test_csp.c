/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DAT 2.0 common connect (csp.h) through the shared fake (fake_verbs.h):
 * the initiator's REQ, the waiting side matching and accepting it, refused
 * requests, retries until the consumer's timeout, bad arguments, and CSPs or
 * EPs that go away while an EP waits.  The collision rule itself is in
 * test_cm.c; here only what it adds for IPv6 and mixed families.
 */
#include "unit.h"
#include "fake_verbs.h"

#include "cm.h"
#include "csp.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "pdata.h"
#include "progress.h"
#include "pz.h"
#include "sp.h"
#include "status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

static struct ofx_ia ia;
static DAT_PZ_HANDLE pz;
static DAT_EVD_HANDLE dto_evd;

/* One common-connect participant: its connection EVD, EP and CSP on the IA. */
struct side {
	DAT_EVD_HANDLE conn_evd;
	DAT_EP_HANDLE ep;
	struct ofx_ep *e;
	DAT_CSP_HANDLE csp;
	struct ofx_sp *sp;
	uint16_t port;
};

static struct sockaddr_in sin4(uint32_t ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };

	s.sin_addr.s_addr = htonl(ip);
	return s;
}

#define SELF_IP 0xc0000201u	/* fake_cm_ia_init's address, 192.0.2.1 */
#define ABOVE_IP 0xc0000202u	/* a peer we initiate towards */
#define BELOW_IP 0x0a000001u	/* a peer that initiates towards us */

static void setup(enum ofx_transport transport)
{
	fake_verbs_install();
	fake_cm_ia_init(&ia, transport);
	CU_ASSERT_FATAL(ofx_pz_create(&ia, &pz) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd) ==
			DAT_SUCCESS);
}

static void teardown(void)
{
	CU_ASSERT_EQUAL(ofx_evd_free(dto_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(pz), DAT_SUCCESS);
	fake_cm_ia_fini(&ia);
}

/* An EP and, with a port, a CSP on <IA address>:port, both on one connection EVD. */
static void side_open(struct side *s, uint16_t port)
{
	struct sockaddr_in addr = sin4(SELF_IP, port);

	memset(s, 0, sizeof(*s));
	s->port = port;
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
				       &s->conn_evd) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_ep_create(&ia, pz, dto_evd, dto_evd, s->conn_evd, &fake_rc_ep_attr,
				      &s->ep) == DAT_SUCCESS);
	s->e = ofx_ep_from_handle(s->ep);
	if (!port)
		return;
	CU_ASSERT_FATAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&addr, s->conn_evd,
				       &s->csp) == DAT_SUCCESS);
	s->sp = ofx_sp_lookup(s->csp, OFX_OBJ_CSP);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s->sp);
}

static void side_free_csp(struct side *s)
{
	if (s->csp)
		CU_ASSERT_EQUAL(ofx_csp_free(s->csp), DAT_SUCCESS);
	s->csp = NULL;
	s->sp = NULL;
}

static void side_close(struct side *s)
{
	if (s->ep)
		CU_ASSERT_EQUAL(ofx_ep_free(s->ep), DAT_SUCCESS);
	side_free_csp(s);
	CU_ASSERT_EQUAL(ofx_evd_free(s->conn_evd), DAT_SUCCESS);
}

static DAT_RETURN common_connect(struct side *s, uint32_t ip, uint16_t port, DAT_TIMEOUT timeout,
				 const char *pdata)
{
	struct sockaddr_in remote = sin4(ip, port);
	int len = pdata ? (int)strlen(pdata) : 0;

	return ofx_ep_common_connect(s->ep, (DAT_IA_ADDRESS_PTR)&remote, timeout, len,
				     (DAT_PVOID)pdata);
}

static DAT_EP_STATE dat_state(const struct side *s)
{
	DAT_EP_STATE state = 0;
	DAT_BOOLEAN in, out;

	CU_ASSERT_EQUAL(ofx_ep_get_status(s->ep, &state, &in, &out), DAT_SUCCESS);
	return state;
}

/* The next connection event of `s` (0 if none); its private data as a string in `data`. */
static DAT_EVENT_NUMBER next_event(const struct side *s, char *data, size_t max)
{
	DAT_EVENT ev;
	const DAT_CONNECTION_EVENT_DATA *cd = &ev.event_data.connect_event_data;

	if (ofx_evd_dequeue(s->conn_evd, &ev) != DAT_SUCCESS)
		return 0;
	CU_ASSERT_PTR_EQUAL(cd->ep_handle, s->ep);
	if (data) {
		CU_ASSERT_FATAL((size_t)cd->private_data_size < max);
		memcpy(data, cd->private_data, cd->private_data_size);
		data[cd->private_data_size] = '\0';
	}
	return ev.event_number;
}

/* The initiator's address and route resolved: its REQ has left. */
static struct rdma_cm_id *req_sent(struct side *s)
{
	struct rdma_cm_id *id = s->e->cm_id;

	CU_ASSERT_PTR_NOT_NULL_FATAL(id);
	fake_cm_queue(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0);
	fake_cm_queue(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_cm.connects, 1);
	return id;
}

/* A REQ from ip (any source port) on the CSP of `s`, carrying `pdata` and our trailer. */
static struct rdma_cm_id *csp_request(struct side *s, uint32_t ip, const void *pdata, int len)
{
	struct sockaddr_in src = sin4(ip, 40000);
	struct rdma_cm_id *id = fake_cm_queue_request(s->sp->listen_id, pdata, len, 4, 4);

	fake_cm_set_peer(id, &src);
	fake_cm_deliver(&ia);
	return id;
}

/* A common-connect REQ as a peer with CSP port `port` sends it (RoCE area). */
static int peer_req(uint16_t port, const char *data, unsigned char *out, size_t max)
{
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_CSP, .csp_port = port };

	return ofx_pdata_encode(&hdr, data, strlen(data), 56, out, max);
}

/* b waits on its CSP (5001) for the peer BELOW_IP:5000; `req` gets that peer's REQ. */
static int waiting_side(struct side *b, unsigned char *req, size_t max)
{
	setup(OFX_TRANSPORT_ROCE);
	side_open(b, 5001);
	CU_ASSERT_EQUAL(common_connect(b, BELOW_IP, 5000, DAT_TIMEOUT_INFINITE, NULL),
			DAT_SUCCESS);
	return peer_req(5000, "x", req, max);
}

static bool rejected_with_stock_header(void)
{
	uint32_t hdr;

	if (fake_cm.pdata_len != OFX_REJ_HDR_LEN)
		return false;
	memcpy(&hdr, fake_cm.pdata, sizeof(hdr));
	return ntohl(hdr) == OFX_REJ_HDR;
}

/* ---- the collision rule beyond IPv4 -------------------------------------- */

static void test_family_decides_before_the_address(void)
{
	struct sockaddr_in v4 = sin4(0xffffffffu, 65535);
	struct sockaddr_in6 lo = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr_in6 hi = lo;

	hi.sin6_addr.s6_addr[15] = 1;
	/* AF_INET sorts below AF_INET6, whatever the bytes */
	CU_ASSERT_TRUE(ofx_csp_initiates((struct sockaddr *)&v4, (struct sockaddr *)&lo));
	CU_ASSERT_FALSE(ofx_csp_initiates((struct sockaddr *)&lo, (struct sockaddr *)&v4));
	/* IPv6: all 16 bytes count */
	CU_ASSERT_TRUE(ofx_csp_initiates((struct sockaddr *)&lo, (struct sockaddr *)&hi));
	CU_ASSERT_FALSE(ofx_csp_initiates((struct sockaddr *)&hi, (struct sockaddr *)&lo));
}

/* ---- create, query, bad arguments ------------------------------------------ */

static void test_csp_query_reports_its_address(void)
{
	struct side a;
	DAT_CSP_PARAM param;
	const struct sockaddr_in *addr;

	setup(OFX_TRANSPORT_ROCE);
	side_open(&a, 5000);
	CU_ASSERT_EQUAL(fake_cm.listens, 1);
	CU_ASSERT_EQUAL(ofx_csp_query(a.csp, DAT_CSP_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(param.evd_handle, a.conn_evd);
	CU_ASSERT_PTR_EQUAL(param.ia_handle, ofx_ia_dat_handle(&ia));
	CU_ASSERT_PTR_NULL(param.comm);
	addr = (const struct sockaddr_in *)param.address_ptr;
	CU_ASSERT_EQUAL(addr->sin_family, AF_INET);
	CU_ASSERT_EQUAL(ntohl(addr->sin_addr.s_addr), SELF_IP);
	CU_ASSERT_EQUAL(ntohs(addr->sin_port), 5000);
	CU_ASSERT_EQUAL(ofx_csp_query(a.csp, ~(DAT_CSP_PARAM_MASK)0, &param), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_csp_query(a.csp, DAT_CSP_FIELD_ALL, NULL), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_csp_query(a.ep, DAT_CSP_FIELD_ALL, &param)),
			DAT_INVALID_HANDLE);
	side_close(&a);
	/* freed: the handle is no longer a CSP */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_csp_free(a.csp)), DAT_INVALID_HANDLE);
	teardown();
}

static void test_csp_on_ipv6_reports_its_port(void)
{
	struct sockaddr_in6 self = { .sin6_family = AF_INET6 };
	struct sockaddr_in6 addr;
	DAT_EVD_HANDLE evd;
	DAT_CSP_HANDLE csp;
	DAT_CSP_PARAM param;

	setup(OFX_TRANSPORT_ROCE);
	inet_pton(AF_INET6, "2001:db8::1", &self.sin6_addr);
	memcpy(&ia.addr, &self, sizeof(self));
	addr = self;
	addr.sin6_port = htons(7000);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &evd) ==
			DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&addr, evd, &csp),
			      DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_csp_query(csp, DAT_CSP_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.address_ptr->sa_family, AF_INET6);
	CU_ASSERT_EQUAL(ntohs(((struct sockaddr_in6 *)param.address_ptr)->sin6_port), 7000);
	CU_ASSERT_EQUAL(memcmp(&((struct sockaddr_in6 *)param.address_ptr)->sin6_addr,
			       &self.sin6_addr, 16), 0);
	CU_ASSERT_EQUAL(ofx_csp_free(csp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(evd), DAT_SUCCESS);
	teardown();
}

static void test_csp_create_checks_its_arguments(void)
{
	struct sockaddr_in good = sin4(SELF_IP, 5000), other = sin4(ABOVE_IP, 5000);
	struct sockaddr_in no_port = sin4(SELF_IP, 0);
	struct sockaddr unix_addr = { .sa_family = AF_UNIX };
	DAT_EVD_HANDLE conn_evd;
	DAT_CSP_HANDLE csp = NULL;

	setup(OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
				       &conn_evd) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_csp_create(NULL, NULL, (DAT_IA_ADDRESS_PTR)&good,
						    conn_evd, &csp)), DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, NULL, conn_evd, &csp), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, &unix_addr, conn_evd, &csp), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&no_port, conn_evd, &csp),
			OFX_INVALID_ARG(3));
	/* a CSP listens on its own IA's address only */
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&other, conn_evd, &csp),
			OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED));
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&good, NULL, &csp),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN));
	/* a DTO EVD cannot take connection events */
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&good, dto_evd, &csp),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN));
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&good, conn_evd, NULL),
			OFX_INVALID_ARG(5));
	CU_ASSERT_EQUAL(fake_cm.listens, 0);
	/* the port taken by someone else, and any other bind failure */
	fake_cm.bind_errno = EADDRINUSE;
	CU_ASSERT_EQUAL(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&good, conn_evd, &csp),
			OFX_DAT_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE));
	fake_cm.bind_errno = ENOMEM;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_csp_create(&ia, NULL, (DAT_IA_ADDRESS_PTR)&good, conn_evd,
						    &csp)), DAT_INSUFFICIENT_RESOURCES);
	CU_ASSERT_PTR_NULL(csp);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	CU_ASSERT_EQUAL(ofx_evd_free(conn_evd), DAT_SUCCESS);
	teardown();
}

static void test_common_connect_checks_its_arguments(void)
{
	struct sockaddr_in no_port = sin4(ABOVE_IP, 0), remote = sin4(ABOVE_IP, 6000);
	struct sockaddr unix_addr = { .sa_family = AF_UNIX };
	char big[64];
	struct side a;

	setup(OFX_TRANSPORT_ROCE);
	side_open(&a, 5000);
	memset(big, 'x', sizeof(big));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_ep_common_connect(a.csp, (DAT_IA_ADDRESS_PTR)&remote,
							   DAT_TIMEOUT_INFINITE, 0, NULL)),
			DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, NULL, DAT_TIMEOUT_INFINITE, 0, NULL),
			OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, &unix_addr, DAT_TIMEOUT_INFINITE, 0, NULL),
			OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, (DAT_IA_ADDRESS_PTR)&no_port,
					      DAT_TIMEOUT_INFINITE, 0, NULL), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, (DAT_IA_ADDRESS_PTR)&remote, 0, 0, NULL),
			OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, (DAT_IA_ADDRESS_PTR)&remote,
					      DAT_TIMEOUT_INFINITE, -1, NULL), OFX_INVALID_ARG(4));
	/* RoCE: 56 bytes of REQ area, 12 of them our trailer with the CSP port */
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, (DAT_IA_ADDRESS_PTR)&remote,
					      DAT_TIMEOUT_INFINITE, 45, big), OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, (DAT_IA_ADDRESS_PTR)&remote,
					      DAT_TIMEOUT_INFINITE, 3, NULL), OFX_INVALID_ARG(5));
	CU_ASSERT_EQUAL(fake_cm.ids, 1);	/* the listener: nothing started */
	CU_ASSERT_EQUAL(dat_state(&a), DAT_EP_STATE_UNCONNECTED);

	/* the largest that fits goes out whole */
	CU_ASSERT_EQUAL(ofx_ep_common_connect(a.ep, (DAT_IA_ADDRESS_PTR)&remote,
					      DAT_TIMEOUT_INFINITE, 44, big), DAT_SUCCESS);
	req_sent(&a);
	CU_ASSERT_EQUAL(fake_cm.pdata_len, 56);
	CU_ASSERT_EQUAL(memcmp(fake_cm.pdata, big, 44), 0);
	/* once started, a second call is refused */
	CU_ASSERT_EQUAL(common_connect(&a, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	side_close(&a);
	teardown();
}

static void test_common_connect_needs_its_csp(void)
{
	struct side a, b, c = { 0 }, lone;
	struct ofx_pdata_hdr hdr;
	DAT_EP_HANDLE no_evd;

	setup(OFX_TRANSPORT_ROCE);
	side_open(&lone, 0);
	/* no CSP on the IA at all */
	CU_ASSERT_EQUAL(common_connect(&lone, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE));
	/* two CSPs, neither on the EP's connection EVD: which one is ambiguous */
	side_open(&a, 5000);
	side_open(&b, 5001);
	CU_ASSERT_EQUAL(common_connect(&lone, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE));
	/* an EP without a connection EVD cannot report the outcome */
	CU_ASSERT_FATAL(ofx_ep_create(&ia, pz, dto_evd, dto_evd, DAT_HANDLE_NULL, &fake_rc_ep_attr,
				      &no_evd) == DAT_SUCCESS);
	c.ep = no_evd;
	CU_ASSERT_EQUAL(common_connect(&c, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_EVD_CONNECT));
	CU_ASSERT_EQUAL(ofx_ep_free(no_evd), DAT_SUCCESS);
	/* the CSP on the EP's own EVD is chosen: b's port is in b's REQ */
	CU_ASSERT_EQUAL(common_connect(&b, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(b.e->csp, b.sp);
	CU_ASSERT_EQUAL(fake_cm.connects, 0);
	req_sent(&b);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(fake_cm.pdata, fake_cm.pdata_len, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.csp_port, 5001);
	side_close(&lone);
	side_close(&a);
	side_close(&b);
	teardown();
}

/* ---- the initiator ---------------------------------------------------------- */

static void initiator_req(enum ofx_transport transport, bool p2p, uint8_t want_flags,
			  int want_len)
{
	struct ofx_pdata_hdr hdr;
	struct side a;

	setup(transport);
	ia.p2p_default = p2p;	/* what ia_open derives from p2p= and the device */
	side_open(&a, 5000);
	CU_ASSERT_EQUAL(common_connect(&a, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, "ab"),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(dat_state(&a), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	CU_ASSERT_TRUE(a.e->csp_initiator);
	CU_ASSERT_EQUAL(fake_cm.resolve_addrs, 1);
	CU_ASSERT_EQUAL(ntohs(((struct sockaddr_in *)&a.e->remote_addr)->sin_port), 6000);
	req_sent(&a);
	CU_ASSERT_EQUAL(fake_cm.pdata_len, want_len);
	CU_ASSERT_EQUAL(memcmp(fake_cm.pdata, "ab", 2), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(fake_cm.pdata, fake_cm.pdata_len, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, want_flags);
	CU_ASSERT_EQUAL(hdr.csp_port, 5000);
	CU_ASSERT_EQUAL(hdr.consumer_len, 2);
	CU_ASSERT_EQUAL(next_event(&a, NULL, 0), 0);
	side_close(&a);
	teardown();
}

static void test_initiator_req_carries_csp_port_on_roce(void)
{
	/* padded to the IB REQ area; no p2p asked */
	initiator_req(OFX_TRANSPORT_ROCE, false, OFX_PDATA_F_CSP, 56);
}

static void test_initiator_req_carries_csp_port_on_iwarp(void)
{
	/* exact length on iWARP, and p2p asked along */
	initiator_req(OFX_TRANSPORT_IWARP, true, OFX_PDATA_F_CSP | OFX_PDATA_F_P2P, 2 + 12);
}

/* ---- both sides in one IA ---------------------------------------------------- */

static void test_waiting_side_accepts_and_both_get_the_other_data(void)
{
	struct side a, b;
	struct ofx_pdata_hdr hdr;
	struct rdma_cm_id *a_id, *b_id;
	unsigned char req[256], rep[256];
	int req_len, rep_len;
	char data[64];

	setup(OFX_TRANSPORT_ROCE);
	/* same address, a's port is lower: a initiates, b waits */
	side_open(&a, 5000);
	side_open(&b, 5001);
	CU_ASSERT_EQUAL(common_connect(&b, SELF_IP, 5000, DAT_TIMEOUT_INFINITE, "bee"),
			DAT_SUCCESS);
	CU_ASSERT_FALSE(b.e->csp_initiator);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	CU_ASSERT_EQUAL(fake_cm.resolve_addrs, 0);	/* the waiting side sends nothing */
	CU_ASSERT_EQUAL(common_connect(&a, SELF_IP, 5001, DAT_TIMEOUT_INFINITE, "ay"),
			DAT_SUCCESS);
	CU_ASSERT_TRUE(a.e->csp_initiator);
	a_id = req_sent(&a);
	req_len = fake_cm.pdata_len;
	memcpy(req, fake_cm.pdata, req_len);

	/* a's REQ reaches b's CSP */
	b_id = csp_request(&b, SELF_IP, req, req_len);
	CU_ASSERT_EQUAL(fake_cm.rejects, 0);
	CU_ASSERT_EQUAL_FATAL(fake_cm.accepts, 1);
	CU_ASSERT_PTR_EQUAL(b.e->cm_id, b_id);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_COMPLETION_PENDING);
	CU_ASSERT_EQUAL(b.e->qp->state, IBV_QPS_RTS);
	/* the REP: b's bytes and our trailer marking the reply */
	rep_len = fake_cm.pdata_len;
	memcpy(rep, fake_cm.pdata, rep_len);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(rep, rep_len, &hdr), 0);
	CU_ASSERT_TRUE(hdr.flags & OFX_PDATA_F_REPLY);
	CU_ASSERT_EQUAL(hdr.consumer_len, 3);
	CU_ASSERT_EQUAL(memcmp(rep, "bee", 3), 0);

	fake_cm_queue(a_id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep, rep_len);
	fake_cm_queue(b_id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_event(&a, data, sizeof(data)), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_STRING_EQUAL(data, "bee");
	CU_ASSERT_EQUAL(next_event(&b, data, sizeof(data)), DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_STRING_EQUAL(data, "ay");
	CU_ASSERT_EQUAL(dat_state(&a), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_EQUAL(b.e->remote_qual, 5000);
	side_close(&a);
	side_close(&b);
	teardown();
}

/* A REQ that no waiting EP matches is refused with stock's header; a matching one is taken. */
static void test_requests_no_ep_waits_for_are_refused(void)
{
	struct side b;
	unsigned char req[64];
	int n;

	setup(OFX_TRANSPORT_ROCE);
	side_open(&b, 5001);
	/* nobody waits yet */
	n = peer_req(5000, "x", req, sizeof(req));
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	CU_ASSERT_TRUE(rejected_with_stock_header());
	CU_ASSERT_EQUAL(fake_cm.ids, 1);	/* the refused id is gone */

	CU_ASSERT_EQUAL(common_connect(&b, BELOW_IP, 5000, DAT_TIMEOUT_INFINITE, NULL),
			DAT_SUCCESS);
	CU_ASSERT_FALSE(b.e->csp_initiator);
	/* plain data without our trailer: not a common connect */
	csp_request(&b, BELOW_IP, "plain", 5);
	CU_ASSERT_EQUAL(fake_cm.rejects, 2);
	/* the right host, another CSP port */
	n = peer_req(5002, "x", req, sizeof(req));
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.rejects, 3);
	/* the right port, another host */
	n = peer_req(5000, "x", req, sizeof(req));
	csp_request(&b, BELOW_IP + 1, req, n);
	CU_ASSERT_EQUAL(fake_cm.rejects, 4);
	CU_ASSERT_EQUAL(fake_cm.accepts, 0);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_ACTIVE_CONNECTION_PENDING);
	/* still waiting: the right one is accepted */
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.accepts, 1);
	CU_ASSERT_EQUAL(fake_cm.rejects, 4);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_COMPLETION_PENDING);
	side_close(&b);
	teardown();
}

/* rdma_accept failing ends the wait with UNREACHABLE; the request is refused. */
static void test_waiting_side_accept_failure_is_unreachable(void)
{
	struct side b;
	unsigned char req[64];
	int n;

	n = waiting_side(&b, req, sizeof(req));
	fake_cm.accept_errno = ENOMEM;
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.accepts, 1);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	CU_ASSERT_TRUE(rejected_with_stock_header());
	CU_ASSERT_EQUAL(next_event(&b, NULL, 0), DAT_CONNECTION_EVENT_UNREACHABLE);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_PTR_NULL(b.e->cm_id);
	CU_ASSERT_PTR_NULL(b.e->csp);
	CU_ASSERT_EQUAL(b.e->qp->state, IBV_QPS_RESET);
	CU_ASSERT_EQUAL(fake_cm.ids, 1);
	side_close(&b);
	teardown();
}

/* ---- retries ------------------------------------------------------------------- */

/* The peer's CSP refused (its EP not there yet): a fresh attempt after csp_retry_ms. */
static void test_refused_req_is_retried_after_csp_retry_ms(void)
{
	uint32_t rej = htonl(OFX_REJ_HDR);
	struct rdma_cm_id *id;
	struct side a;
	uint64_t t0;

	setup(OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	ia.cfg.csp_retry_ms = 20;
	side_open(&a, 5000);
	CU_ASSERT_EQUAL(common_connect(&a, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			DAT_SUCCESS);
	id = req_sent(&a);
	/* the retry's address resolution fails: its outcome is an event to wait for */
	fake_cm.resolve_addr_errno = ENETUNREACH;
	t0 = ofx_now_ns();
	fake_cm_queue(id, RDMA_CM_EVENT_REJECTED, OFX_REJ_CONSUMER, &rej, sizeof(rej));
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(fake_conn_event_wait(a.conn_evd, a.ep), DAT_CONNECTION_EVENT_UNREACHABLE);
	CU_ASSERT_TRUE(ofx_now_ns() - t0 >= 20 * 1000000ull);
	CU_ASSERT_EQUAL(fake_cm.resolve_addrs, 2);	/* the first and the retry */
	CU_ASSERT_EQUAL(dat_state(&a), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_PTR_NULL(a.e->cm_id);
	CU_ASSERT_EQUAL(fake_cm.ids, 1);	/* both attempts' ids are gone */
	side_close(&a);
	teardown();
}

/*
 * An attempt failing with `event`/`status` is retried; nothing answers the
 * retry, and the consumer's timeout ends it with `want`.
 */
/* How the attempts of retried_until_timeout ended, as the EP counted them. */
struct tally_want {
	unsigned int csp_refused, no_listener, other;
	int last_status;
};

static void retried_until_timeout(enum ofx_transport transport, enum rdma_cm_event_type event,
				  int status, DAT_EVENT_NUMBER want, struct tally_want tally)
{
	struct rdma_cm_id *id;
	struct side a;

	setup(transport);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	/* timers fire by deadline: the retry long before the timeout */
	ia.cfg.csp_retry_ms = 1;
	side_open(&a, 5000);
	CU_ASSERT_EQUAL(common_connect(&a, ABOVE_IP, 6000, 200 * 1000, NULL), DAT_SUCCESS);
	if (transport == OFX_TRANSPORT_IWARP) {
		/* iWARP: rdma_connect's own errno (`status`), else nobody listening */
		fake_cm.connect_errno = status ? status : ECONNREFUSED;
		req_sent(&a);
	} else {
		id = req_sent(&a);
		fake_cm_queue(id, event, status, NULL, 0);
		fake_cm_deliver(&ia);
	}
	CU_ASSERT_EQUAL(fake_conn_event_wait(a.conn_evd, a.ep), want);
	CU_ASSERT_EQUAL(fake_cm.resolve_addrs, 2);
	CU_ASSERT_EQUAL(fake_cm.connects, 1);	/* the retry's REQ never got a route */
	/* the give-up log line's figures: one attempt answered, of this kind */
	CU_ASSERT_EQUAL(a.e->csp_tally.attempts, 1);
	CU_ASSERT_EQUAL(a.e->csp_tally.csp_refused, tally.csp_refused);
	CU_ASSERT_EQUAL(a.e->csp_tally.no_listener, tally.no_listener);
	CU_ASSERT_EQUAL(a.e->csp_tally.other, tally.other);
	CU_ASSERT_EQUAL(a.e->csp_tally.last_status, tally.last_status);
	CU_ASSERT_EQUAL(dat_state(&a), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_PTR_NULL(a.e->cm_id);
	/* the timer destroys the id after posting the event: teardown counts the ids */
	CU_ASSERT_EQUAL(next_event(&a, NULL, 0), 0);	/* once */
	side_close(&a);
	teardown();
}

static void test_no_listener_retried_then_unreachable(void)
{
	retried_until_timeout(OFX_TRANSPORT_ROCE, RDMA_CM_EVENT_REJECTED, OFX_REJ_NO_LISTENER,
			      DAT_CONNECTION_EVENT_UNREACHABLE,
			      (struct tally_want){ .no_listener = 1, .last_status = OFX_REJ_NO_LISTENER });
}

static void test_iwarp_refused_connect_retried_then_unreachable(void)
{
	retried_until_timeout(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_REJECTED, 0,
			      DAT_CONNECTION_EVENT_UNREACHABLE,
			      (struct tally_want){ .no_listener = 1, .last_status = -ECONNREFUSED });
}

/* a local port the host's TCP held (EADDRINUSE) is retried on a new id, as any other failure */
static void test_iwarp_taken_local_port_retried_then_timed_out(void)
{
	retried_until_timeout(OFX_TRANSPORT_IWARP, RDMA_CM_EVENT_CONNECT_ERROR, EADDRINUSE,
			      DAT_CONNECTION_EVENT_TIMED_OUT,
			      (struct tally_want){ .other = 1, .last_status = -EADDRINUSE });
}

static void test_consumer_refusal_retried_then_timed_out(void)
{
	retried_until_timeout(OFX_TRANSPORT_ROCE, RDMA_CM_EVENT_REJECTED, OFX_REJ_CONSUMER,
			      DAT_CONNECTION_EVENT_TIMED_OUT,
			      (struct tally_want){ .csp_refused = 1, .last_status = OFX_REJ_CONSUMER });
}

static void test_unreachable_retried_then_timed_out(void)
{
	retried_until_timeout(OFX_TRANSPORT_ROCE, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT,
			      DAT_CONNECTION_EVENT_TIMED_OUT,
			      (struct tally_want){ .other = 1, .last_status = -ETIMEDOUT });
}

/* ---- the CSP or the EP goes away ------------------------------------------------ */

/* Waiting EPs keep their timers: TIMED_OUT; a later REQ finds nobody. */
static void test_csp_free_leaves_waiting_eps_to_their_timeout(void)
{
	struct side b;

	setup(OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	side_open(&b, 5001);
	CU_ASSERT_EQUAL(common_connect(&b, BELOW_IP, 5000, 50 * 1000, NULL), DAT_SUCCESS);
	side_free_csp(&b);
	CU_ASSERT_PTR_NULL(b.e->csp);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);	/* the listener went with it */
	CU_ASSERT_EQUAL(fake_conn_event_wait(b.conn_evd, b.ep), DAT_CONNECTION_EVENT_TIMED_OUT);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_DISCONNECTED);
	side_close(&b);
	teardown();
}

/* An initiator whose CSP is freed stops retrying: the next refusal is final. */
static void test_csp_free_ends_the_initiator_retries(void)
{
	struct rdma_cm_id *id;
	struct side a;

	setup(OFX_TRANSPORT_ROCE);
	side_open(&a, 5000);
	CU_ASSERT_EQUAL(common_connect(&a, ABOVE_IP, 6000, DAT_TIMEOUT_INFINITE, NULL),
			DAT_SUCCESS);
	id = req_sent(&a);
	side_free_csp(&a);
	CU_ASSERT_PTR_NULL(a.e->csp);
	fake_cm_queue(id, RDMA_CM_EVENT_REJECTED, OFX_REJ_NO_LISTENER, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_event(&a, NULL, 0), DAT_CONNECTION_EVENT_NON_PEER_REJECTED);
	CU_ASSERT_EQUAL(dat_state(&a), DAT_EP_STATE_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(a.ep), DAT_SUCCESS);
	side_close(&a);
	teardown();
}

/* A connection made through a CSP outlives it; reset and free do not touch it. */
static void test_csp_free_after_the_connection_is_made(void)
{
	struct side b;
	unsigned char req[64];
	int n;

	n = waiting_side(&b, req, sizeof(req));
	fake_cm_queue(csp_request(&b, BELOW_IP, req, n), RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_event(&b, NULL, 0), DAT_CONNECTION_EVENT_ESTABLISHED);
	side_free_csp(&b);
	CU_ASSERT_PTR_NULL(b.e->csp);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_CONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(b.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	fake_cm_queue(b.e->cm_id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0);
	fake_cm_deliver(&ia);
	CU_ASSERT_EQUAL(next_event(&b, NULL, 0), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(b.ep), DAT_SUCCESS);
	side_close(&b);
	teardown();
}

/*
 * dat_ep_reset is refused while the EP waits, and leaves it waiting; after a
 * disconnect it takes the EP off the CSP.
 */
static void test_reset_of_a_waiting_ep(void)
{
	struct side b;
	unsigned char req[64];
	int n;

	n = waiting_side(&b, req, sizeof(req));
	CU_ASSERT_EQUAL(ofx_ep_reset(b.ep),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	CU_ASSERT_PTR_EQUAL(b.e->csp, b.sp);
	CU_ASSERT_EQUAL(ofx_ep_disconnect(b.ep, DAT_CLOSE_ABRUPT_FLAG), DAT_SUCCESS);
	CU_ASSERT_EQUAL(next_event(&b, NULL, 0), DAT_CONNECTION_EVENT_DISCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_reset(b.ep), DAT_SUCCESS);
	CU_ASSERT_PTR_NULL(b.e->csp);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_UNCONNECTED);
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.accepts, 0);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	/* and it can wait again */
	CU_ASSERT_EQUAL(common_connect(&b, BELOW_IP, 5000, DAT_TIMEOUT_INFINITE, NULL),
			DAT_SUCCESS);
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.accepts, 1);
	side_close(&b);
	teardown();
}

/* A waiting EP freed: the CSP forgets it, its peer's REQ is refused. */
static void test_free_of_a_waiting_ep(void)
{
	struct side b;
	unsigned char req[64];
	int n;

	n = waiting_side(&b, req, sizeof(req));
	CU_ASSERT_EQUAL(ofx_ep_free(b.ep), DAT_SUCCESS);
	b.ep = NULL;
	CU_ASSERT_TRUE(ofx_list_empty(&b.sp->csp_eps));
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.accepts, 0);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	side_close(&b);
	teardown();
}

/* A waiting EP that timed out takes no REQ. */
static void test_timed_out_waiting_ep_takes_no_request(void)
{
	struct side b;
	unsigned char req[64];
	int n;

	setup(OFX_TRANSPORT_ROCE);
	CU_ASSERT_FATAL(ofx_progress_start(&ia.progress, "unit") == 0);
	side_open(&b, 5001);
	CU_ASSERT_EQUAL(common_connect(&b, BELOW_IP, 5000, 1000, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_conn_event_wait(b.conn_evd, b.ep), DAT_CONNECTION_EVENT_TIMED_OUT);
	n = peer_req(5000, "x", req, sizeof(req));
	csp_request(&b, BELOW_IP, req, n);
	CU_ASSERT_EQUAL(fake_cm.accepts, 0);
	CU_ASSERT_EQUAL(fake_cm.rejects, 1);
	CU_ASSERT_EQUAL(dat_state(&b), DAT_EP_STATE_DISCONNECTED);
	side_close(&b);
	teardown();
}

CU_TestInfo ofx_test_csp[] = {
	{ "collision rule: family first, then all IPv6 bytes",
	  test_family_decides_before_the_address },
	{ "csp query reports its address, evd and ia", test_csp_query_reports_its_address },
	{ "csp on IPv6 reports its port", test_csp_on_ipv6_reports_its_port },
	{ "csp create checks its arguments", test_csp_create_checks_its_arguments },
	{ "common connect checks its arguments", test_common_connect_checks_its_arguments },
	{ "common connect needs its csp and a connection evd", test_common_connect_needs_its_csp },
	{ "initiator REQ carries the CSP port (RoCE)", test_initiator_req_carries_csp_port_on_roce },
	{ "initiator REQ carries the CSP port (iWARP, p2p)",
	  test_initiator_req_carries_csp_port_on_iwarp },
	{ "waiting side accepts; both get the other's data",
	  test_waiting_side_accepts_and_both_get_the_other_data },
	{ "requests no EP waits for are refused", test_requests_no_ep_waits_for_are_refused },
	{ "waiting side's failed accept is UNREACHABLE",
	  test_waiting_side_accept_failure_is_unreachable },
	{ "refused REQ is retried after csp_retry_ms", test_refused_req_is_retried_after_csp_retry_ms },
	{ "no listener: retried, then UNREACHABLE", test_no_listener_retried_then_unreachable },
	{ "iWARP refused connect: retried, then UNREACHABLE",
	  test_iwarp_refused_connect_retried_then_unreachable },
	{ "iWARP: a taken local port is retried, then TIMED_OUT",
	  test_iwarp_taken_local_port_retried_then_timed_out },
	{ "consumer refusal: retried, then TIMED_OUT", test_consumer_refusal_retried_then_timed_out },
	{ "UNREACHABLE: retried, then TIMED_OUT", test_unreachable_retried_then_timed_out },
	{ "csp free leaves waiting EPs to their timeout",
	  test_csp_free_leaves_waiting_eps_to_their_timeout },
	{ "csp free ends the initiator's retries", test_csp_free_ends_the_initiator_retries },
	{ "csp free after the connection is made", test_csp_free_after_the_connection_is_made },
	{ "reset of a waiting EP", test_reset_of_a_waiting_ep },
	{ "free of a waiting EP", test_free_of_a_waiting_ep },
	{ "a timed-out waiting EP takes no request", test_timed_out_waiting_ep_takes_no_request },
	CU_TEST_INFO_NULL,
};
