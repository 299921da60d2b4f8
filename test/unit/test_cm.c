/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection-setup decisions that need no device: which side asks for and
 * grants p2p RTR mode (option precedence), and the DAT 2.0 common-connect
 * collision rule.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <CUnit/CUnit.h>
#include "unit.h"
#include "cm.h"
#include "ep_cm.h"
#include "csp.h"
#include "ep.h"
#include "ia.h"
#include "verbs.h"

static struct ofx_ia ia;
static struct ofx_ep ep;

static void setup(enum ofx_tristate cfg_p2p, enum ofx_transport transport,
		  enum ofx_tristate ep_attr)
{
	memset(&ia, 0, sizeof(ia));
	memset(&ep, 0, sizeof(ep));
	ia.cfg.p2p = cfg_p2p;
	ia.transport = transport;
	/* what ia_open derives from the option and the device */
	ia.p2p_default = cfg_p2p == OFX_ON || (cfg_p2p == OFX_AUTO && transport == OFX_TRANSPORT_IWARP);
	ep.obj.ia = &ia;
	ep.p2p_attr = ep_attr;
}

static void test_auto_asks_only_on_iwarp(void)
{
	setup(OFX_AUTO, OFX_TRANSPORT_ROCE, OFX_AUTO);
	CU_ASSERT_FALSE(ofx_cm_p2p_requested(&ep));
	setup(OFX_AUTO, OFX_TRANSPORT_IB, OFX_AUTO);
	CU_ASSERT_FALSE(ofx_cm_p2p_requested(&ep));
	setup(OFX_AUTO, OFX_TRANSPORT_IWARP, OFX_AUTO);
	CU_ASSERT_TRUE(ofx_cm_p2p_requested(&ep));
}

static void test_ia_option_on_and_off(void)
{
	setup(OFX_ON, OFX_TRANSPORT_ROCE, OFX_AUTO);
	CU_ASSERT_TRUE(ofx_cm_p2p_requested(&ep));
	setup(OFX_OFF, OFX_TRANSPORT_IWARP, OFX_AUTO);
	CU_ASSERT_FALSE(ofx_cm_p2p_requested(&ep));
}

static void test_ep_attribute_wins_over_ia_option(void)
{
	setup(OFX_ON, OFX_TRANSPORT_ROCE, OFX_OFF);
	CU_ASSERT_FALSE(ofx_cm_p2p_requested(&ep));
	CU_ASSERT_FALSE(ofx_cm_p2p_granted(&ep));
	setup(OFX_OFF, OFX_TRANSPORT_ROCE, OFX_ON);
	CU_ASSERT_TRUE(ofx_cm_p2p_requested(&ep));
	CU_ASSERT_TRUE(ofx_cm_p2p_granted(&ep));
}

static void test_passive_follows_unless_switched_off(void)
{
	/* auto on RoCE does not ask, but grants an initiator's request */
	setup(OFX_AUTO, OFX_TRANSPORT_ROCE, OFX_AUTO);
	CU_ASSERT_TRUE(ofx_cm_p2p_granted(&ep));
	setup(OFX_OFF, OFX_TRANSPORT_IWARP, OFX_AUTO);
	CU_ASSERT_FALSE(ofx_cm_p2p_granted(&ep));
}

static struct sockaddr_in sin4(const char *ip, uint16_t port)
{
	struct sockaddr_in s = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, ip, &s.sin_addr);
	return s;
}

static void test_collision_rule_picks_exactly_one_initiator(void)
{
	const char *ips[] = { "192.0.2.1", "192.0.2.2", "10.0.0.1", "192.0.2.1" };
	const uint16_t ports[] = { 51000, 51000, 60000, 51001 };

	for (size_t i = 0; i < 4; i++) {
		for (size_t j = 0; j < 4; j++) {
			struct sockaddr_in a = sin4(ips[i], ports[i]), b = sin4(ips[j], ports[j]);
			bool ab = ofx_csp_initiates((struct sockaddr *)&a, (struct sockaddr *)&b);
			bool ba = ofx_csp_initiates((struct sockaddr *)&b, (struct sockaddr *)&a);

			if (i == j) {
				CU_ASSERT_FALSE(ab || ba);
			} else {
				CU_ASSERT_TRUE(ab != ba); /* exactly one side connects */
			}
		}
	}
}

static void test_collision_rule_orders_address_then_port(void)
{
	struct sockaddr_in a1 = sin4("192.0.2.1", 60000), b1 = sin4("192.0.2.2", 1000);
	struct sockaddr_in p1 = sin4("192.0.2.1", 1000), p2 = sin4("192.0.2.1", 1001);
	struct sockaddr_in hi = sin4("192.0.3.0", 1);

	/* the address decides before the port, in network byte order */
	CU_ASSERT_TRUE(ofx_csp_initiates((struct sockaddr *)&a1, (struct sockaddr *)&b1));
	CU_ASSERT_TRUE(ofx_csp_initiates((struct sockaddr *)&p1, (struct sockaddr *)&p2));
	CU_ASSERT_TRUE(ofx_csp_initiates((struct sockaddr *)&b1, (struct sockaddr *)&hi));
}

/*
 * The QP attributes rdma_cm computes carry the initiator's retry count; a
 * stock peer asks for 7, which rxe takes as "retry forever" (a silent peer
 * would never break the EP).  ofx_cm_qp_modify caps it at 6.
 */
static int model_retry_in;
static int model_retry_out = -1;

static int model_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask)
{
	(void)id;
	attr->retry_cnt = (uint8_t)model_retry_in;
	attr->rnr_retry = 7;
	*mask = IBV_QP_STATE | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
	return 0;
}

static int model_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	(void)qp;
	model_retry_out = (mask & IBV_QP_RETRY_CNT) ? attr->retry_cnt : -1;
	CU_ASSERT_EQUAL(attr->rnr_retry, 7);	/* RNR stays infinite */
	return 0;
}

static void test_retry_count_is_capped_below_infinite(void)
{
	struct ofx_verbs_ops model = ofx_verbs_real;
	struct ibv_qp qp = { .qp_num = 0x42 };
	struct rdma_cm_id id;

	memset(&id, 0, sizeof(id));
	model.init_qp_attr = model_init_qp_attr;
	model.modify_qp = model_modify_qp;
	ofx_verbs_set(&model);
	model_retry_in = 7;
	CU_ASSERT_EQUAL(ofx_cm_qp_modify(&id, &qp, IBV_QPS_RTS), 0);
	CU_ASSERT_EQUAL(model_retry_out, 6);
	model_retry_in = 3;
	CU_ASSERT_EQUAL(ofx_cm_qp_modify(&id, &qp, IBV_QPS_RTS), 0);
	CU_ASSERT_EQUAL(model_retry_out, 3);
	ofx_verbs_set(NULL);
}

/*
 * ofx_cm_addr_set writes only the first sizeof(struct sockaddr_in6) bytes:
 * an IPv4 address after an IPv6 one leaves none of the old bytes there,
 * and the rest of the storage (zero, as the provider keeps it) stays zero.
 */
static void test_addr_set_pads_to_in6_and_keeps_the_rest(void)
{
	struct sockaddr_storage ss, zero;
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(4791),
				   .sin6_flowinfo = 0x12345678, .sin6_scope_id = 7 };
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(1234) };
	const unsigned char *b = (const unsigned char *)&ss;

	memset(&ss, 0, sizeof(ss));
	memset(&zero, 0, sizeof(zero));
	memset(&v6.sin6_addr, 0xab, sizeof(v6.sin6_addr));
	v4.sin_addr.s_addr = htonl(0x0a000001);

	ofx_cm_addr_set(&ss, (const struct sockaddr *)&v6);
	CU_ASSERT_EQUAL(memcmp(&ss, &v6, sizeof(v6)), 0);
	CU_ASSERT_EQUAL(memcmp(b + sizeof(v6), &zero, sizeof(ss) - sizeof(v6)), 0);

	ofx_cm_addr_set(&ss, (const struct sockaddr *)&v4);
	CU_ASSERT_EQUAL(memcmp(&ss, &v4, sizeof(v4)), 0);
	/* nothing of the IPv6 address is left behind the IPv4 one */
	CU_ASSERT_EQUAL(memcmp(b + sizeof(v4), &zero, sizeof(ss) - sizeof(v4)), 0);
}

CU_TestInfo ofx_test_cm[] = {
	{ "p2p auto asks only on iWARP", test_auto_asks_only_on_iwarp },
	{ "p2p=on asks everywhere, p2p=off never", test_ia_option_on_and_off },
	{ "per-EP P2P attribute wins over the IA option", test_ep_attribute_wins_over_ia_option },
	{ "passive side grants unless switched off", test_passive_follows_unless_switched_off },
	{ "collision rule picks exactly one initiator per pair",
	  test_collision_rule_picks_exactly_one_initiator },
	{ "collision rule orders by address, then port", test_collision_rule_orders_address_then_port },
	{ "transport retry count is capped below rxe's infinite 7",
	  test_retry_count_is_capped_below_infinite },
	{ "an address is stored zero padded to a sockaddr_in6, the rest kept",
	  test_addr_set_pads_to_in6_and_keeps_the_rest },
	CU_TEST_INFO_NULL,
};
