/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "dto.h"
#include "ep.h"
#include "ext.h"
#include "ia.h"
#include "verbs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

/*
 * The IB extension op (handle_extendedop).  The calls are written with the
 * consumer's own dat_ib_* macros, whose dat_extension_op is redirected below
 * to a varargs shim in front of ofx_ext_op(), so every argument arrives with
 * the type a consumer really passes.  No device: the EP is a connected
 * struct with a send ring on a bare IA, and a verbs model captures the WR.
 */

DAT_RETURN ofx_test_ext_call(DAT_HANDLE handle, DAT_EXTENDED_OP op, ...)
{
	DAT_RETURN status;
	va_list args;

	va_start(args, op);
	status = ofx_ext_op(handle, op, args);
	va_end(args);
	return status;
}

#define ext_call ofx_test_ext_call
#define dat_extension_op ofx_test_ext_call

#define RING_SIZE 8
#define MAX_SGE 4

/* ---- a verbs model that records the last send WR ---- */

static struct ofx_verbs_ops model;
static struct ibv_send_wr last_wr;
static struct ibv_sge last_sge[MAX_SGE];
static int posts, post_errno;

static int model_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	if (post_errno) {
		*bad = wr;
		return -post_errno;
	}
	posts++;
	last_wr = *wr;
	memset(last_sge, 0, sizeof(last_sge));
	/* the provider may pass segments on its stack: copy them now, as verbs does */
	if (wr->num_sge > 0 && wr->num_sge <= MAX_SGE)
		memcpy(last_sge, wr->sg_list, wr->num_sge * sizeof(*last_sge));
	last_wr.sg_list = last_sge;
	last_wr.next = NULL;
	return 0;
}

static struct ofx_ia *ia;
static struct ofx_ep *ep;
static struct ibv_qp qp;

static void fixture_up(enum ofx_transport transport, enum ibv_atomic_cap atomic_cap)
{
	model = ofx_verbs_real;
	model.post_send = model_post_send;
	ofx_verbs_set(&model);
	posts = 0;
	post_errno = 0;
	memset(&last_wr, 0, sizeof(last_wr));

	ia = calloc(1, sizeof(*ia));
	ep = calloc(1, sizeof(*ep));
	CU_ASSERT_FATAL(ia && ep);
	ia->obj.type = OFX_OBJ_IA;
	ia->transport = transport;
	ia->dev_attr.atomic_cap = atomic_cap;
	ep->obj.type = OFX_OBJ_EP;
	ep->transport = &ofx_ep_rc_transport;
	ep->recv = &ofx_ep_rq_recv;
	ep->obj.ia = ia;
	test_ep_force_state(ep, OFX_EP_CONNECTED);
	ep->attr.max_request_iov = MAX_SGE;
	ep->attr.max_rdma_read_out = 4;
	ep->attr.max_rdma_read_in = 4;
	memset(&qp, 0, sizeof(qp));
	qp.qp_num = 0x123;
	ofx_ep_set_qp(ep, &qp);
	ofx_ep_cookie_owner_init(ep);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->send_ring, RING_SIZE, &ep->cookie_owner) == 0);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->recv_ring, RING_SIZE, &ep->cookie_owner) == 0);
}

static void fixture_down(void)
{
	ofx_cookie_ring_fini(&ep->send_ring);
	ofx_cookie_ring_fini(&ep->recv_ring);
	free(ep);
	free(ia);
	ep = NULL;
	ia = NULL;
	ofx_verbs_set(NULL);
}

static DAT_DTO_COOKIE cookie_of(uint64_t v)
{
	DAT_DTO_COOKIE c;

	c.as_64 = v;
	return c;
}

/* Completes the captured WR and converts it like an EVD would. */
static void complete_last(enum ibv_wc_opcode opcode, DAT_EVENT *ev)
{
	struct ofx_cookie_owner *notify = NULL;
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = last_wr.wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = opcode;
	wc.qp_num = qp.qp_num;
	CU_ASSERT_FATAL(ofx_dto_convert(&wc, ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
}

static DAT_IB_EXTENSION_EVENT_DATA *ext_of(DAT_EVENT *ev)
{
	return (DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;
}

static void test_write_immed_decodes_every_argument(void)
{
	char buf[256];
	DAT_LMR_TRIPLET iov = { .lmr_context = 0x11, .virtual_address = (uintptr_t)buf,
				.segment_length = sizeof(buf) };
	DAT_RMR_TRIPLET rmr = { .rmr_context = 0xabcd, .virtual_address = 0x7f0000001000ull,
				.segment_length = sizeof(buf) };
	DAT_EVENT ev;

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	CU_ASSERT_EQUAL(dat_ib_post_rdma_write_immed(ep, 1, &iov, cookie_of(0x9999), &rmr,
						     0x7777, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(posts, 1);
	CU_ASSERT_EQUAL(last_wr.opcode, IBV_WR_RDMA_WRITE_WITH_IMM);
	/* host order, as stock puts it on the wire */
	CU_ASSERT_EQUAL(last_wr.imm_data, 0x7777);
	CU_ASSERT_EQUAL(last_wr.wr.rdma.rkey, 0xabcd);
	CU_ASSERT_EQUAL(last_wr.wr.rdma.remote_addr, 0x7f0000001000ull);
	CU_ASSERT_EQUAL(last_wr.num_sge, 1);
	CU_ASSERT_EQUAL(last_sge[0].addr, (uintptr_t)buf);
	CU_ASSERT_EQUAL(last_sge[0].length, sizeof(buf));
	CU_ASSERT_EQUAL(last_sge[0].lkey, 0x11);
	CU_ASSERT(last_wr.send_flags & IBV_SEND_SIGNALED);

	complete_last(IBV_WC_RDMA_WRITE, &ev);
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x9999);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, sizeof(buf));
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_RDMA_WRITE_IMMED);
	fixture_down();
}

static void test_write_immed_without_segments_or_with_suppress(void)
{
	DAT_RMR_TRIPLET rmr = { .rmr_context = 1, .virtual_address = 0x1000 };

	fixture_up(OFX_TRANSPORT_IB, IBV_ATOMIC_HCA);
	/* a zero-length write with immediate is legal: it only carries imm */
	CU_ASSERT_EQUAL(dat_ib_post_rdma_write_immed(ep, 0, NULL, cookie_of(1), &rmr, 5,
						     DAT_COMPLETION_SUPPRESS_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(last_wr.num_sge, 0);
	CU_ASSERT_EQUAL(last_wr.imm_data, 5);
	CU_ASSERT_FALSE(last_wr.send_flags & IBV_SEND_SIGNALED);
	fixture_down();
}

/*
 * The completion flags of a post as the device sees them: a default post is
 * signaled with nothing else and restarts the count of unsignaled ones (a
 * suppressed post is signaled once half the ring is unsignaled); solicited
 * and fence reach the WR.
 */
static void test_post_flags_reach_the_send_flags(void)
{
	static const struct {
		DAT_COMPLETION_FLAGS flags;
		unsigned int send_flags;
	} posts_in_order[] = {
		{ DAT_COMPLETION_SUPPRESS_FLAG, 0 },
		{ DAT_COMPLETION_SUPPRESS_FLAG, 0 },
		{ DAT_COMPLETION_SUPPRESS_FLAG, 0 },
		{ DAT_COMPLETION_DEFAULT_FLAG, IBV_SEND_SIGNALED },
		/* the 4th unsignaled in a row would be signaled (RING_SIZE / 2) */
		{ DAT_COMPLETION_SUPPRESS_FLAG, 0 },
		{ DAT_COMPLETION_SOLICITED_WAIT_FLAG, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED },
		{ DAT_COMPLETION_BARRIER_FENCE_FLAG, IBV_SEND_SIGNALED | IBV_SEND_FENCE },
	};
	char data[16];
	DAT_LMR_TRIPLET iov = { .lmr_context = 0x11, .virtual_address = (uintptr_t)data,
				.segment_length = sizeof(data) };
	const struct ofx_cookie *ck;

	fixture_up(OFX_TRANSPORT_IB, IBV_ATOMIC_HCA);
	for (size_t i = 0; i < sizeof(posts_in_order) / sizeof(posts_in_order[0]); i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_ep_post_send(ep, 1, &iov, cookie_of(i),
						       posts_in_order[i].flags),
				      DAT_SUCCESS);
		CU_ASSERT_EQUAL(last_wr.opcode, IBV_WR_SEND);
		CU_ASSERT_EQUAL(last_wr.send_flags, posts_in_order[i].send_flags);
		ck = (const struct ofx_cookie *)(uintptr_t)last_wr.wr_id;
		CU_ASSERT_EQUAL(ck->flags, posts_in_order[i].flags & DAT_COMPLETION_SUPPRESS_FLAG ?
						   OFX_COOKIE_F_SUPPRESS : 0);
		CU_ASSERT_EQUAL(ck->user.as_64, i);
	}
	fixture_down();
}

static void test_cmp_and_swap_decodes_and_posts_one_word(void)
{
	uint64_t word[2];
	DAT_LMR_TRIPLET iov = { .lmr_context = 0x22, .virtual_address = (uintptr_t)word,
				.segment_length = sizeof(word) };
	DAT_RMR_TRIPLET rmr = { .rmr_context = 0x5151, .virtual_address = 0x2000,
				.segment_length = 8 };
	DAT_EVENT ev;

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	CU_ASSERT_EQUAL(dat_ib_post_cmp_and_swap(ep, 0x12345, 0x98765, &iov, cookie_of(3333),
						 &rmr, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(posts, 1);
	CU_ASSERT_EQUAL(last_wr.opcode, IBV_WR_ATOMIC_CMP_AND_SWP);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.compare_add, 0x12345);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.swap, 0x98765);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.rkey, 0x5151);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.remote_addr, 0x2000);
	CU_ASSERT_EQUAL(last_wr.num_sge, 1);
	CU_ASSERT_EQUAL(last_sge[0].addr, (uintptr_t)word);
	CU_ASSERT_EQUAL(last_sge[0].lkey, 0x22);
	/* the consumer's 16-byte segment is cut to the 8-byte word */
	CU_ASSERT_EQUAL(last_sge[0].length, 8);
	/* the consumer's triplet is left alone */
	CU_ASSERT_EQUAL(iov.segment_length, sizeof(word));
	CU_ASSERT_FALSE(last_wr.send_flags & IBV_SEND_INLINE);

	complete_last(IBV_WC_COMP_SWAP, &ev);
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 3333);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.operation,
			(DAT_DTOS)DAT_IB_DTO_CMP_SWAP);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_CMP_AND_SWAP);
	CU_ASSERT_EQUAL(ext_of(&ev)->status, DAT_OP_SUCCESS);
	fixture_down();
}

static void test_fetch_and_add_decodes_add_value(void)
{
	uint64_t word;
	DAT_LMR_TRIPLET iov = { .lmr_context = 0x33, .virtual_address = (uintptr_t)&word,
				.segment_length = 8 };
	DAT_RMR_TRIPLET rmr = { .rmr_context = 0x6161, .virtual_address = 0x3008,
				.segment_length = 8 };
	DAT_EVENT ev;

	fixture_up(OFX_TRANSPORT_IB, IBV_ATOMIC_GLOB);
	CU_ASSERT_EQUAL(dat_ib_post_fetch_and_add(ep, 0x100, &iov, cookie_of(0x7777), &rmr,
						  DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(posts, 1);
	CU_ASSERT_EQUAL(last_wr.opcode, IBV_WR_ATOMIC_FETCH_AND_ADD);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.compare_add, 0x100);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.swap, 0);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.rkey, 0x6161);
	CU_ASSERT_EQUAL(last_wr.wr.atomic.remote_addr, 0x3008);
	CU_ASSERT_EQUAL(last_sge[0].length, 8);
	CU_ASSERT_EQUAL(last_sge[0].lkey, 0x33);

	complete_last(IBV_WC_FETCH_ADD, &ev);
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x7777);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_FETCH_AND_ADD);
	fixture_down();
}

static void test_unknown_ud_counter_and_collective_ops_are_not_implemented(void)
{
	DAT_LMR_TRIPLET iov = { 0 };
	DAT_IB_ADDR_HANDLE ah = { 0 };
	DAT_UINT64 counters[4];

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ext_call(ep, 999)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ext_call(ep, -1)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(dat_ib_post_send_ud(ep, 1, &iov, &ah, cookie_of(1),
							 DAT_COMPLETION_DEFAULT_FLAG)),
			DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(dat_ib_ud_ah_free(ep, &ah)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(dat_ib_ud_cm_free(ep, NULL)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(dat_ib_query_counters(ep, 0, counters, 0)),
			DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ext_call(ep, DAT_IB_COLLECTIVE_BARRIER_OP)),
			DAT_NOT_IMPLEMENTED);
	/* the error class bit is set, as libdat2's own NOT_IMPLEMENTED has it */
	CU_ASSERT(ext_call(ep, 999) & DAT_CLASS_ERROR);
	CU_ASSERT_EQUAL(posts, 0);
	fixture_down();
}

static void test_wrong_or_freed_handle_is_invalid_handle(void)
{
	DAT_RMR_TRIPLET rmr = { .rmr_context = 1, .virtual_address = 0x1000 };
	DAT_LMR_TRIPLET iov = { .segment_length = 8 };
	DAT_RETURN status;

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	ep->obj.type = OFX_OBJ_EVD;
	status = dat_ib_post_rdma_write_immed(ep, 0, NULL, cookie_of(1), &rmr, 1,
					      DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_SUBTYPE(status), DAT_INVALID_HANDLE_EP);
	ep->obj.type = OFX_OBJ_FREED;
	status = dat_ib_post_fetch_and_add(ep, 1, &iov, cookie_of(1), &rmr,
					   DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INVALID_HANDLE);
	/* close_query wants an IA */
	ep->obj.type = OFX_OBJ_EP;
	status = dat_ib_close_query(ep);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_SUBTYPE(status), DAT_INVALID_HANDLE_IA);
	CU_ASSERT_EQUAL(posts, 0);
	fixture_down();
}

static void test_bad_arguments_are_invalid_parameter(void)
{
	uint64_t word;
	DAT_LMR_TRIPLET iov = { .virtual_address = (uintptr_t)&word, .segment_length = 8 };
	DAT_LMR_TRIPLET shorty = { .virtual_address = (uintptr_t)&word, .segment_length = 4 };
	DAT_RMR_TRIPLET rmr = { .rmr_context = 1, .virtual_address = 0x1000 };
	DAT_RMR_TRIPLET odd = { .rmr_context = 1, .virtual_address = 0x1004 };
	DAT_RETURN status;

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	status = dat_ib_post_rdma_write_immed(ep, 1, &iov, cookie_of(1), NULL, 1,
					      DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));
	status = dat_ib_post_rdma_write_immed(ep, MAX_SGE + 1, &iov, cookie_of(1), &rmr, 1,
					      DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INVALID_PARAMETER);

	status = dat_ib_post_cmp_and_swap(ep, 1, 2, NULL, cookie_of(1), &rmr,
					  DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
	status = dat_ib_post_cmp_and_swap(ep, 1, 2, &shorty, cookie_of(1), &rmr,
					  DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4));
	status = dat_ib_post_cmp_and_swap(ep, 1, 2, &iov, cookie_of(1), &odd,
					  DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));
	status = dat_ib_post_cmp_and_swap(ep, 1, 2, &iov, cookie_of(1), NULL,
					  DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6));

	status = dat_ib_post_fetch_and_add(ep, 1, NULL, cookie_of(1), &rmr,
					   DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3));
	status = dat_ib_post_fetch_and_add(ep, 1, &iov, cookie_of(1), &odd,
					   DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5));

	/* open_query: the output handle is required; nothing is opened */
	status = ext_call("ofx-no-such-ia", DAT_IB_OPEN_QUERY_OP, NULL,
			  (DAT_IA_ATTR_MASK)0, NULL, (DAT_PROVIDER_ATTR_MASK)0, NULL);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2));
	CU_ASSERT_EQUAL(posts, 0);
	fixture_down();
}

static void test_open_query_of_unregistered_name_fails_cleanly(void)
{
	DAT_HANDLE qia = (DAT_HANDLE)0x1;
	DAT_IA_ATTR ia_attr;
	DAT_PROVIDER_ATTR prov_attr;
	DAT_RETURN status;

	/* libdat2 only calls this for our names; an unknown one opens nothing */
	status = ext_call("ofx-no-such-ia", DAT_IB_OPEN_QUERY_OP, &qia,
			  (DAT_IA_ATTR_MASK)DAT_IA_FIELD_ALL, &ia_attr,
			  (DAT_PROVIDER_ATTR_MASK)DAT_PROVIDER_FIELD_ALL, &prov_attr);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_PROVIDER_NOT_FOUND);
	CU_ASSERT_PTR_EQUAL(qia, (DAT_HANDLE)0x1);
}

static void test_state_and_device_limits(void)
{
	uint64_t word;
	DAT_LMR_TRIPLET iov = { .virtual_address = (uintptr_t)&word, .segment_length = 8 };
	DAT_RMR_TRIPLET rmr = { .rmr_context = 1, .virtual_address = 0x1000 };
	DAT_RETURN status;

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	test_ep_force_state(ep, OFX_EP_UNCONNECTED);
	status = dat_ib_post_rdma_write_immed(ep, 1, &iov, cookie_of(1), &rmr, 1,
					      DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	test_ep_force_state(ep, OFX_EP_CONNECTED);
	ep->attr.max_rdma_read_out = 0;
	status = dat_ib_post_fetch_and_add(ep, 1, &iov, cookie_of(1), &rmr,
					   DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INVALID_STATE);
	CU_ASSERT_EQUAL(posts, 0);
	fixture_down();

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_NONE);
	status = dat_ib_post_cmp_and_swap(ep, 1, 2, &iov, cookie_of(1), &rmr,
					  DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_NOT_IMPLEMENTED);
	/* write with immediate needs no atomics */
	status = dat_ib_post_rdma_write_immed(ep, 1, &iov, cookie_of(1), &rmr, 1,
					      DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(posts, 1);
	fixture_down();

	fixture_up(OFX_TRANSPORT_IWARP, IBV_ATOMIC_HCA);
	status = dat_ib_post_rdma_write_immed(ep, 1, &iov, cookie_of(1), &rmr, 1,
					      DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(posts, 0);
	fixture_down();
}

static void test_post_failure_releases_the_cookie(void)
{
	uint64_t word;
	DAT_LMR_TRIPLET iov = { .virtual_address = (uintptr_t)&word, .segment_length = 8 };
	DAT_RMR_TRIPLET rmr = { .rmr_context = 1, .virtual_address = 0x1000 };
	DAT_RETURN status;

	fixture_up(OFX_TRANSPORT_ROCE, IBV_ATOMIC_HCA);
	post_errno = ENOMEM;
	status = dat_ib_post_fetch_and_add(ep, 1, &iov, cookie_of(1), &rmr,
					   DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(status), DAT_INSUFFICIENT_RESOURCES);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	post_errno = 0;
	status = dat_ib_post_fetch_and_add(ep, 1, &iov, cookie_of(2), &rmr,
					   DAT_COMPLETION_DEFAULT_FLAG);
	CU_ASSERT_EQUAL(status, DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 1);
	fixture_down();
}

CU_TestInfo ofx_test_ext[] = {
	{ "write_immed decodes every argument", test_write_immed_decodes_every_argument },
	{ "write_immed without segments or with suppress",
	  test_write_immed_without_segments_or_with_suppress },
	{ "post flags reach the send flags", test_post_flags_reach_the_send_flags },
	{ "cmp_and_swap decodes and posts one word",
	  test_cmp_and_swap_decodes_and_posts_one_word },
	{ "fetch_and_add decodes the add value", test_fetch_and_add_decodes_add_value },
	{ "unknown, UD, counter and collective ops are NOT_IMPLEMENTED",
	  test_unknown_ud_counter_and_collective_ops_are_not_implemented },
	{ "wrong or freed handle is INVALID_HANDLE", test_wrong_or_freed_handle_is_invalid_handle },
	{ "bad arguments are INVALID_PARAMETER", test_bad_arguments_are_invalid_parameter },
	{ "open_query of an unregistered name fails cleanly",
	  test_open_query_of_unregistered_name_fails_cleanly },
	{ "EP state, rd_atom and device limits", test_state_and_device_limits },
	{ "a failed post releases the cookie", test_post_failure_releases_the_cookie },
	CU_TEST_INFO_NULL,
};
