/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "dto.h"
#include "ep.h"
#include "ia.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

/*
 * Cookie rings and completion conversion.  No device: the EP is a zeroed
 * struct with its two rings, and work completions are built by hand with
 * wr_id pointing at the reserved cookie, as the poster does.
 */

#define RING_SIZE 8

static struct ofx_ep *ep_new(void)
{
	struct ofx_ep *ep = calloc(1, sizeof(*ep));

	CU_ASSERT_FATAL(ep != NULL);
	ep->obj.type = OFX_OBJ_EP;
	ep->transport = &ofx_ep_rc_transport;
	ep->recv = &ofx_ep_rq_recv;
	ofx_ep_cookie_owner_init(ep);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->send_ring, RING_SIZE, &ep->cookie_owner) == 0);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->recv_ring, RING_SIZE, &ep->cookie_owner) == 0);
	return ep;
}

static void ep_delete(struct ofx_ep *ep)
{
	ofx_cookie_ring_fini(&ep->send_ring);
	ofx_cookie_ring_fini(&ep->recv_ring);
	free(ep);
}

/* Reserves and commits one slot like the poster does; returns it. */
static struct ofx_cookie *post(struct ofx_ep *ep, enum ofx_cookie_op op, uint64_t user,
			       uint32_t len, uint8_t flags)
{
	struct ofx_cookie_ring *ring = op == OFX_OP_RECV ? &ep->recv_ring : &ep->send_ring;
	struct ofx_cookie *c = ofx_cookie_ring_reserve(ring);

	CU_ASSERT_FATAL(c != NULL);
	c->user.as_64 = user;
	c->len = len;
	c->op = op;
	c->flags = flags;
	ofx_cookie_ring_commit(ring);
	return c;
}

static struct ibv_wc wc_for(const struct ofx_cookie *c, enum ibv_wc_status status,
			    enum ibv_wc_opcode opcode, uint32_t byte_len)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = (uintptr_t)c;
	wc.status = status;
	wc.opcode = opcode;
	wc.byte_len = byte_len;
	wc.qp_num = 0x42;
	return wc;
}

static DAT_DTO_COMPLETION_EVENT_DATA *dto_of(DAT_EVENT *ev)
{
	return &ev->event_data.dto_completion_event_data;
}

static DAT_IB_EXTENSION_EVENT_DATA *ext_of(DAT_EVENT *ev)
{
	return (DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;
}

static void test_reserve_hands_out_sequences_until_full(void)
{
	struct ofx_cookie_ring ring;
	struct ofx_cookie *c;
	uint64_t i;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 4, NULL) == 0);
	for (i = 0; i < 4; i++) {
		c = ofx_cookie_ring_reserve(&ring);
		CU_ASSERT_FATAL(c != NULL);
		CU_ASSERT_EQUAL(c->seq, i);
		CU_ASSERT_PTR_EQUAL(c, &ring.slots[i]);
		ofx_cookie_ring_commit(&ring);
		CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), i + 1);
	}
	CU_ASSERT_PTR_NULL(ofx_cookie_ring_reserve(&ring));
	ofx_cookie_ring_retire(&ring, 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 3);
	c = ofx_cookie_ring_reserve(&ring);
	CU_ASSERT_FATAL(c != NULL);
	CU_ASSERT_EQUAL(c->seq, 4);
	CU_ASSERT_PTR_EQUAL(c, &ring.slots[0]);
	ofx_cookie_ring_fini(&ring);
}

/* init sets every field itself: a ring over stale memory starts empty */
static void test_init_over_stale_memory_starts_empty(void)
{
	struct ofx_cookie_ring ring;
	uint32_t i;

	memset(&ring, 0xa5, sizeof(ring));
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 4, NULL) == 0);
	CU_ASSERT_EQUAL(ring.size, 4);
	CU_ASSERT_EQUAL(ring.unsignaled, 0);
	CU_ASSERT_EQUAL(atomic_load(&ring.head), 0);
	CU_ASSERT_EQUAL(atomic_load(&ring.tail), 0);
	CU_ASSERT_PTR_NULL(ring.owner);
	CU_ASSERT_PTR_NULL(ring.obj);
	CU_ASSERT_FALSE(atomic_load(&ring.dying));
	for (i = 0; i < 4; i++)
		CU_ASSERT_PTR_EQUAL(ring.slots[i].ring, &ring);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	ofx_cookie_ring_fini(&ring);

	memset(&ring, 0xa5, sizeof(ring));
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 0, NULL) == 0);
	CU_ASSERT_PTR_NULL(ring.slots);
	CU_ASSERT_EQUAL(ring.size, 0);
	CU_ASSERT_PTR_NULL(ofx_cookie_ring_reserve(&ring));
	ofx_cookie_ring_fini(&ring);
}

static void test_reserve_without_commit_returns_same_slot(void)
{
	struct ofx_cookie_ring ring;
	struct ofx_cookie *a, *b;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 4, NULL) == 0);
	a = ofx_cookie_ring_reserve(&ring);
	b = ofx_cookie_ring_reserve(&ring);
	CU_ASSERT_PTR_EQUAL(a, b);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	ofx_cookie_ring_fini(&ring);
}

static void test_signaled_completion_retires_all_older_slots(void)
{
	struct ofx_cookie_ring ring;
	int i;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 8, NULL) == 0);
	for (i = 0; i < 8; i++) {
		CU_ASSERT_FATAL(ofx_cookie_ring_reserve(&ring) != NULL);
		ofx_cookie_ring_commit(&ring);
	}
	ofx_cookie_ring_retire(&ring, 5);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 2);
	/* an older sequence arriving late does not move the tail back */
	ofx_cookie_ring_retire(&ring, 3);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 2);
	ofx_cookie_ring_retire(&ring, 7);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	ofx_cookie_ring_fini(&ring);
}

static void test_ring_wraps_around_many_times(void)
{
	struct ofx_cookie_ring ring;
	struct ofx_cookie *c;
	uint64_t seq = 0;
	int round, i;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 3, NULL) == 0);
	for (round = 0; round < 50; round++) {
		for (i = 0; i < 2; i++) {
			c = ofx_cookie_ring_reserve(&ring);
			CU_ASSERT_FATAL(c != NULL);
			CU_ASSERT_EQUAL(c->seq, seq);
			CU_ASSERT_PTR_EQUAL(c, &ring.slots[seq % 3]);
			ofx_cookie_ring_commit(&ring);
			seq++;
		}
		ofx_cookie_ring_retire(&ring, seq - 1);
		CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	}
	ofx_cookie_ring_fini(&ring);
}

static void test_completion_before_commit_is_not_lost(void)
{
	struct ofx_cookie_ring ring;
	struct ofx_cookie *c;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 2, NULL) == 0);
	c = ofx_cookie_ring_reserve(&ring);
	CU_ASSERT_FATAL(c != NULL);
	/* another thread polls the completion before the poster commits */
	ofx_cookie_ring_retire(&ring, c->seq);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	ofx_cookie_ring_commit(&ring);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	CU_ASSERT_PTR_NOT_NULL(ofx_cookie_ring_reserve(&ring));
	ofx_cookie_ring_commit(&ring);
	CU_ASSERT_PTR_NOT_NULL(ofx_cookie_ring_reserve(&ring));
	ofx_cookie_ring_fini(&ring);
}

static void test_reset_forgets_outstanding_slots(void)
{
	struct ofx_cookie_ring ring;
	int i;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 4, NULL) == 0);
	for (i = 0; i < 4; i++) {
		CU_ASSERT_FATAL(ofx_cookie_ring_reserve(&ring) != NULL);
		ofx_cookie_ring_commit(&ring);
	}
	ring.unsignaled = 3;
	ofx_cookie_ring_reset(&ring);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	CU_ASSERT_EQUAL(ring.unsignaled, 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_reserve(&ring)->seq, 4);
	ofx_cookie_ring_fini(&ring);
}

static void test_empty_ring_never_reserves(void)
{
	struct ofx_cookie_ring ring;

	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ring, 0, NULL) == 0);
	CU_ASSERT_PTR_NULL(ofx_cookie_ring_reserve(&ring));
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ring), 0);
	ofx_cookie_ring_fini(&ring);
}

static void test_init_gives_every_slot_its_ring_and_the_ring_its_owner(void)
{
	struct ofx_ep *ep = ep_new();
	int i;

	for (i = 0; i < RING_SIZE; i++) {
		CU_ASSERT_PTR_EQUAL(ep->send_ring.slots[i].ring, &ep->send_ring);
		CU_ASSERT_PTR_EQUAL(ep->recv_ring.slots[i].ring, &ep->recv_ring);
	}
	CU_ASSERT_PTR_EQUAL(ep->send_ring.owner, &ep->cookie_owner);
	CU_ASSERT_PTR_EQUAL(ep->recv_ring.owner, &ep->cookie_owner);
	CU_ASSERT_PTR_EQUAL(ep->cookie_owner.obj, &ep->obj);
	CU_ASSERT_PTR_EQUAL(ep->cookie_owner.dying, &ep->dying);
	CU_ASSERT_PTR_EQUAL(ep->send_ring.obj, &ep->obj);
	CU_ASSERT_PTR_EQUAL(ep->recv_ring.obj, &ep->obj);
	/* the rings' copies of the dying flag follow the EP's */
	ofx_ep_set_dying(ep, true);
	CU_ASSERT_TRUE(atomic_load(&ep->send_ring.dying) && atomic_load(&ep->recv_ring.dying));
	ofx_ep_set_dying(ep, false);
	CU_ASSERT_FALSE(atomic_load(&ep->send_ring.dying) || atomic_load(&ep->recv_ring.dying));
	ep_delete(ep);
}

static void test_send_reports_posted_length(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_SEND, 0x1234, 256, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_SEND, 9999);
	struct ofx_cookie_owner *notify = (struct ofx_cookie_owner *)1;
	DAT_EVENT ev;

	memset(&ev, 0xa5, sizeof(ev));
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(dto_of(&ev)->ep_handle, &ep->obj);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 0x1234);
	CU_ASSERT_EQUAL(dto_of(&ev)->status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 256);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_SEND);
	CU_ASSERT_EQUAL(dto_of(&ev)->rmr_context, 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ep_delete(ep);
}

static void test_recv_reports_byte_len_and_retires_recv_ring(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *r;
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;

	post(ep, OFX_OP_SEND, 1, 10, 0);
	r = post(ep, OFX_OP_RECV, 0x77, 4096, 0);
	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 100);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_RECEIVE);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 0x77);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 1);
	ep_delete(ep);
}

static void test_rdma_write_posted_and_read_byte_len(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *w = post(ep, OFX_OP_RDMA_WRITE, 5, 4096, 0);
	struct ofx_cookie *r = post(ep, OFX_OP_RDMA_READ, 6, 8192, 0);
	struct ibv_wc wc;
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;

	wc = wc_for(w, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_RDMA_WRITE);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 4096);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 5);

	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8000);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_RDMA_READ);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 8000);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 6);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ep_delete(ep);
}

static void test_error_statuses_map_and_flag_the_ep(void)
{
	static const struct {
		enum ibv_wc_status wc;
		DAT_DTO_COMPLETION_STATUS dat;
	} map[] = {
		{ IBV_WC_LOC_LEN_ERR, DAT_DTO_ERR_LOCAL_LENGTH },
		{ IBV_WC_LOC_PROT_ERR, DAT_DTO_ERR_LOCAL_PROTECTION },
		{ IBV_WC_REM_ACCESS_ERR, DAT_DTO_ERR_REMOTE_ACCESS },
		{ IBV_WC_RNR_RETRY_EXC_ERR, DAT_DTO_ERR_RECEIVER_NOT_READY },
		{ IBV_WC_RETRY_EXC_ERR, DAT_DTO_ERR_TRANSPORT },
	};
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie_owner *notify;
	struct ofx_cookie *c;
	struct ibv_wc wc;
	DAT_EVENT ev;
	size_t i;

	for (i = 0; i < OFX_ARRAY_SIZE(map); i++) {
		c = post(ep, OFX_OP_SEND, i, 64, 0);
		/* opcode is undefined in error completions: use garbage */
		wc = wc_for(c, map[i].wc, (enum ibv_wc_opcode)0x7f, 0);
		CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
		CU_ASSERT_EQUAL(dto_of(&ev)->status, map[i].dat);
		CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, i);
		CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_SEND);
		CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);
	}
	ep_delete(ep);
}

static void test_flush_reports_but_does_not_flag_the_ep(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_RECV, 9, 4096, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV_RDMA_WITH_IMM, 77);
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;

	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	/* a flushed receive is a plain DTO event whatever the (undefined) opcode */
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->status, DAT_DTO_ERR_FLUSHED);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_RECEIVE);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 9);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 0);
	ep_delete(ep);
}

static void test_suppressed_success_is_silent_but_error_is_reported(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie_owner *notify = (struct ofx_cookie_owner *)1;
	struct ofx_cookie *b, *c;
	struct ibv_wc wc;
	DAT_EVENT ev;

	post(ep, OFX_OP_SEND, 1, 8, OFX_COOKIE_F_SUPPRESS);
	b = post(ep, OFX_OP_RDMA_WRITE, 2, 16, OFX_COOKIE_F_SUPPRESS);
	c = post(ep, OFX_OP_SEND, 3, 32, OFX_COOKIE_F_SUPPRESS);
	/* the signaled-by-force write retires the send before it, silently */
	wc = wc_for(b, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 1);

	wc = wc_for(c, IBV_WC_REM_ACCESS_ERR, IBV_WC_SEND, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->status, DAT_DTO_ERR_REMOTE_ACCESS);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 3);
	CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);

	c = post(ep, OFX_OP_SEND, 4, 32, OFX_COOKIE_F_SUPPRESS);
	wc = wc_for(c, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->status, DAT_DTO_ERR_FLUSHED);
	CU_ASSERT_PTR_NULL(notify);
	ep_delete(ep);
}

static void test_internal_cookie_never_reported(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_SEND, 1, 8, OFX_COOKIE_F_INTERNAL);
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;

	wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);

	c = post(ep, OFX_OP_SEND, 2, 8, OFX_COOKIE_F_INTERNAL);
	wc = wc_for(c, IBV_WC_RETRY_EXC_ERR, IBV_WC_SEND, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);

	c = post(ep, OFX_OP_SEND, 3, 8, OFX_COOKIE_F_INTERNAL);
	wc = wc_for(c, IBV_WC_WR_FLUSH_ERR, IBV_WC_SEND, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	ep_delete(ep);
}

static void test_rtr_completions_flag_the_ep_and_touch_no_ring(void)
{
	static const enum ofx_ep_cookie_op ops[] = {
		OFX_EP_OP_RTR_SEND, OFX_EP_OP_RTR_RECV, OFX_EP_OP_RTR_WRITE, OFX_EP_OP_RTR_READ,
	};
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;
	size_t i;

	post(ep, OFX_OP_SEND, 1, 8, 0);
	post(ep, OFX_OP_RECV, 2, 8, 0);
	for (i = 0; i < OFX_ARRAY_SIZE(ops); i++) {
		ofx_ep_own_cookie(ep, &ep->rtr_cookie, ops[i]);
		/* the RTR cookie's seq must not be taken for a ring position */
		ep->rtr_cookie.seq = 100;
		wc = wc_for(&ep->rtr_cookie, IBV_WC_SUCCESS, IBV_WC_RECV, 4);
		notify = NULL;
		CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
		CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);

		wc.status = IBV_WC_WR_FLUSH_ERR;
		notify = NULL;
		CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
		CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);
	}
	/* even without the internal flag an RTR is never a consumer event */
	ep->rtr_cookie.flags = OFX_COOKIE_F_OWNER;
	wc = wc_for(&ep->rtr_cookie, IBV_WC_SUCCESS, IBV_WC_RECV, 4);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 1);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 1);
	ep_delete(ep);
}

static void test_selective_signal_retires_unsignaled_slots(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *last = NULL;
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;
	int i;

	for (i = 0; i < 5; i++)
		post(ep, OFX_OP_RDMA_WRITE, i, 100, OFX_COOKIE_F_SUPPRESS);
	last = post(ep, OFX_OP_SEND, 5, 200, 0);
	CU_ASSERT_EQUAL(last->seq, 5);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 6);
	wc = wc_for(last, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 5);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	/* the ring has room for a full round again */
	for (i = 0; i < RING_SIZE; i++)
		post(ep, OFX_OP_SEND, i, 1, 0);
	CU_ASSERT_PTR_NULL(ofx_cookie_ring_reserve(&ep->send_ring));
	ep_delete(ep);
}

static void test_write_immediate_sender_event(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_WRITE_IMM, 0x9999, 256, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;

	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, (DAT_DTOS)DAT_IB_DTO_RDMA_WRITE_IMMED);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 256);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 0x9999);
	CU_ASSERT_EQUAL(dto_of(&ev)->status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_RDMA_WRITE_IMMED);
	CU_ASSERT_EQUAL(ext_of(&ev)->status, DAT_OP_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ep_delete(ep);
}

static void test_write_immediate_receiver_event(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_RECV, 4, 4096, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, 256);
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;

	wc.wc_flags = IBV_WC_WITH_IMM;
	wc.imm_data = 0x7777;	/* host order as stock sends it: copied unconverted */
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, (DAT_DTOS)DAT_IB_DTO_RECV_IMMED);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 256);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 4);
	CU_ASSERT_PTR_EQUAL(dto_of(&ev)->ep_handle, &ep->obj);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_RDMA_WRITE_IMMED_DATA);
	CU_ASSERT_EQUAL(ext_of(&ev)->status, DAT_OP_SUCCESS);
	CU_ASSERT_EQUAL(ext_of(&ev)->val.immed.data, 0x7777);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 0);
	ep_delete(ep);
}

static void test_send_with_immediate_receiver_event(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_RECV, 8, 4096, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_RECV, 12);
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;

	wc.wc_flags = IBV_WC_WITH_IMM;
	wc.imm_data = 0x11110000;
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, (DAT_DTOS)DAT_IB_DTO_RECV_MSG_IMMED);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 12);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_RECV_IMMED_DATA);
	CU_ASSERT_EQUAL(ext_of(&ev)->val.immed.data, 0x11110000);
	ep_delete(ep);
}

static void test_atomic_events(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *cs = post(ep, OFX_OP_CMP_SWAP, 21, 8, 0);
	struct ofx_cookie *fa = post(ep, OFX_OP_FETCH_ADD, 22, 8, 0);
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;

	wc = wc_for(cs, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP, 8);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, (DAT_DTOS)DAT_IB_DTO_CMP_SWAP);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 8);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 21);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_CMP_AND_SWAP);
	CU_ASSERT_EQUAL(ext_of(&ev)->status, DAT_OP_SUCCESS);

	wc = wc_for(fa, IBV_WC_REM_ACCESS_ERR, IBV_WC_FETCH_ADD, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, (DAT_DTOS)DAT_IB_DTO_FETCH_ADD);
	CU_ASSERT_EQUAL(dto_of(&ev)->status, DAT_DTO_ERR_REMOTE_ACCESS);
	CU_ASSERT_EQUAL(ext_of(&ev)->type, DAT_IB_FETCH_AND_ADD);
	CU_ASSERT_EQUAL(ext_of(&ev)->status, DAT_IB_OP_ERR);
	CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	ep_delete(ep);
}

static void test_plain_events_carry_no_stale_extension_data(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *c = post(ep, OFX_OP_SEND, 1, 8, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;
	size_t i;

	memset(&ev, 0xff, sizeof(ev));
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	for (i = 0; i < OFX_ARRAY_SIZE(ev.event_extension_data); i++)
		CU_ASSERT_EQUAL(ev.event_extension_data[i], 0);
	ep_delete(ep);
}

/* A work request of another owner, posted on the EP's send ring (as RMR binds are). */
struct test_owner {
	struct ofx_cookie_owner owner;
	int completes;
	struct ofx_cookie seen;		/* the copy the completion op got */
	struct ofx_cookie *slot;
	bool report;
};

static bool test_owner_complete(struct ofx_cookie_owner *owner, struct ofx_cookie *slot,
				const struct ofx_cookie *c, const struct ibv_wc *wc, DAT_EVENT *ev,
				struct ofx_cookie_owner **notify_p)
{
	struct test_owner *t = container_of(owner, struct test_owner, owner);

	t->completes++;
	t->seen = *c;
	t->slot = slot;
	/* the ring is retired up to it before the owner hears of it */
	CU_ASSERT(atomic_load(&c->ring->tail) > c->seq);
	if (!ofx_dto_settle(c->ring->owner, c, wc, notify_p) || !t->report)
		return false;
	memset(ev, 0, sizeof(*ev));
	ev->event_number = DAT_SOFTWARE_EVENT;
	ev->event_data.software_event_data.pointer = t;
	return true;
}

static const struct ofx_cookie_ops test_owner_ops = { .complete = test_owner_complete };

static struct ofx_cookie *post_owned(struct ofx_ep *ep, struct test_owner *t, uint64_t user,
				     uint8_t flags)
{
	struct ofx_cookie *c = ofx_cookie_ring_reserve(&ep->send_ring);

	CU_ASSERT_FATAL(c != NULL);
	c->user.as_64 = user;
	c->len = 0x77;
	c->op = 0xee;	/* the owner's own numbering */
	c->flags = flags | OFX_COOKIE_F_OWNER;
	c->owner = &t->owner;
	ofx_cookie_ring_commit(&ep->send_ring);
	return c;
}

static void test_owner_cookie_reaches_its_owner_and_retires_the_ring(void)
{
	struct ofx_ep *ep = ep_new();
	struct test_owner t = { .owner.ops = &test_owner_ops, .report = true };
	struct ofx_cookie_owner *notify = (struct ofx_cookie_owner *)1;
	struct ofx_cookie *c = post_owned(ep, &t, 0xabc, 0);
	struct ibv_wc wc = wc_for(c, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0);
	DAT_EVENT ev;

	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	CU_ASSERT_EQUAL(t.completes, 1);
	CU_ASSERT_PTR_EQUAL(t.slot, c);
	CU_ASSERT_EQUAL(t.seen.user.as_64, 0xabc);
	CU_ASSERT_EQUAL(t.seen.op, 0xee);
	CU_ASSERT_EQUAL(t.seen.len, 0x77);
	CU_ASSERT_PTR_EQUAL(t.seen.ring, &ep->send_ring);
	CU_ASSERT_EQUAL(ev.event_number, DAT_SOFTWARE_EVENT);
	CU_ASSERT_PTR_EQUAL(ev.event_data.software_event_data.pointer, &t);

	/* an error on it flags the EP (the ring's owner), not the WR's owner */
	c = post_owned(ep, &t, 0xabd, OFX_COOKIE_F_INTERNAL);
	wc = wc_for(c, IBV_WC_MW_BIND_ERR, IBV_WC_BIND_MW, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(t.completes, 2);
	CU_ASSERT_PTR_EQUAL(notify, &ep->cookie_owner);
	CU_ASSERT_PTR_NOT_NULL(notify->ops->notify);
	ep_delete(ep);
}

static void test_consumer_completions_around_an_owner_cookie_are_unchanged(void)
{
	struct ofx_ep *ep = ep_new();
	struct test_owner t = { .owner.ops = &test_owner_ops };
	struct ofx_cookie_owner *notify;
	struct ofx_cookie *a, *o, *b;
	struct ibv_wc wc;
	DAT_EVENT ev;

	a = post(ep, OFX_OP_SEND, 1, 10, 0);
	o = post_owned(ep, &t, 2, 0);
	b = post(ep, OFX_OP_RDMA_WRITE, 3, 30, 0);
	wc = wc_for(a, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 1);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 10);
	wc = wc_for(o, IBV_WC_SUCCESS, IBV_WC_BIND_MW, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(t.completes, 1);
	wc = wc_for(b, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(dto_of(&ev)->ep_handle, &ep->obj);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_RDMA_WRITE);
	CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 3);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 30);
	CU_ASSERT_EQUAL(t.completes, 1);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);

	/* a slot that held an owner's WR is a consumer's again on its next post */
	for (int i = 0; i < RING_SIZE; i++) {
		a = post(ep, OFX_OP_SEND, 100 + i, 1, 0);
		wc = wc_for(a, IBV_WC_SUCCESS, IBV_WC_SEND, 0);
		CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
		CU_ASSERT_EQUAL(dto_of(&ev)->user_cookie.as_64, 100 + i);
	}
	CU_ASSERT_EQUAL(t.completes, 1);
	ep_delete(ep);
}

/* ep_free: a dying EP's successes are retired but never reported. */
static void test_dying_ep_success_is_retired_silently(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *w = post(ep, OFX_OP_RDMA_WRITE, 1, 64, 0);
	struct ofx_cookie *r = post(ep, OFX_OP_RECV, 2, 64, 0);
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;

	ofx_ep_set_dying(ep, true);
	wc = wc_for(w, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 0);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_PTR_NULL(notify);
	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RECV, 64);
	CU_ASSERT_FALSE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->send_ring), 0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&ep->recv_ring), 0);
	ep_delete(ep);
}

static void test_recv_with_invalidate_reports_the_rmr_context(void)
{
	static struct ofx_ia ia;
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *r;
	struct ofx_cookie_owner *notify;
	struct ibv_wc wc;
	DAT_EVENT ev;

	r = post(ep, OFX_OP_RECV, 0x55, 256, 0);
	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RECV, 32);
	wc.wc_flags = IBV_WC_WITH_INV;
	wc.invalidated_rkey = 0xabcd01;
	memset(&ev, 0xff, sizeof(ev));
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(dto_of(&ev)->operation, DAT_DTO_RECEIVE);
	CU_ASSERT_EQUAL(dto_of(&ev)->rmr_context, 0xabcd01);
	CU_ASSERT_EQUAL(dto_of(&ev)->transfered_length, 32);

	/* a plain receive reports no invalidated context */
	r = post(ep, OFX_OP_RECV, 0x56, 256, 0);
	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RECV, 8);
	memset(&ev, 0xff, sizeof(ev));
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->rmr_context, 0);

	/* bit 2 means "invalidated" only on rxe, which passes the kernel's flags on */
	r = post(ep, OFX_OP_RECV, 0x57, 256, 0);
	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RECV, 8);
	wc.wc_flags = IBV_WC_IP_CSUM_OK;
	wc.invalidated_rkey = 0x77;
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->rmr_context, 0);
	fake_ia_init(&ia);
	ia.wc_inv_kernel_bit = true;
	ep->obj.ia = &ia;
	r = post(ep, OFX_OP_RECV, 0x58, 256, 0);
	wc = wc_for(r, IBV_WC_SUCCESS, IBV_WC_RECV, 8);
	wc.wc_flags = IBV_WC_IP_CSUM_OK;
	wc.invalidated_rkey = 0x77;
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(dto_of(&ev)->rmr_context, 0x77);
	ep_delete(ep);
	fake_ia_fini(&ia);
}

static void test_recv_query_counts_posted_receives_and_their_span(void)
{
	struct ofx_ep *ep = ep_new();
	struct ofx_cookie *r1;
	struct ofx_cookie_owner *notify;
	DAT_COUNT n = -1, span = -1;
	struct ibv_wc wc;
	DAT_EVENT ev;

	CU_ASSERT_EQUAL(ofx_ep_recv_query(ep, &n, &span), DAT_SUCCESS);
	CU_ASSERT_EQUAL(n, 0);
	CU_ASSERT_EQUAL(span, 0);
	post(ep, OFX_OP_SEND, 1, 999, 0);	/* sends do not count */
	r1 = post(ep, OFX_OP_RECV, 1, 100, 0);
	post(ep, OFX_OP_RECV, 2, 4096, 0);
	post(ep, OFX_OP_RECV, 3, 28, 0);
	CU_ASSERT_EQUAL(ofx_ep_recv_query(ep, &n, &span), DAT_SUCCESS);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(span, 100 + 4096 + 28);

	/* the first one completes: it leaves both counts */
	wc = wc_for(r1, IBV_WC_SUCCESS, IBV_WC_RECV, 10);
	CU_ASSERT_TRUE(ofx_dto_convert(&wc, &ev, &notify));
	CU_ASSERT_EQUAL(ofx_ep_recv_query(ep, &n, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(ofx_ep_recv_query(ep, NULL, &span), DAT_SUCCESS);
	CU_ASSERT_EQUAL(span, 4096 + 28);
	ep_delete(ep);
}

static void test_recv_query_of_an_srq_ep_is_unknown(void)
{
	struct ofx_ep *ep = ep_new();
	DAT_COUNT n = 0, span = 0;

	ep->recv = &ofx_ep_srq_recv;	/* its query never looks at the SRQ */
	CU_ASSERT_EQUAL(ofx_ep_recv_query(ep, &n, &span), DAT_SUCCESS);
	CU_ASSERT_EQUAL(n, DAT_VALUE_UNKNOWN);
	CU_ASSERT_EQUAL(span, DAT_VALUE_UNKNOWN);
	ep->recv = &ofx_ep_rq_recv;
	ep_delete(ep);
}

static void test_set_watermark_stores_and_checks_values(void)
{
	struct ofx_ep *ep = ep_new();

	pthread_mutex_init(&ep->lock, NULL);
	CU_ASSERT_EQUAL(ofx_ep_set_watermark(ep, 4, 8), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ep->soft_hw, 4);
	CU_ASSERT_EQUAL(ep->hard_hw, 8);
	CU_ASSERT_EQUAL(ofx_ep_set_watermark(ep, DAT_VALUE_UNKNOWN, DAT_VALUE_UNKNOWN),
			DAT_SUCCESS);
	/* both "no value" spellings switch them off */
	CU_ASSERT_EQUAL(ep->soft_hw, DAT_WATERMARK_INFINITE);
	CU_ASSERT_EQUAL(ep->hard_hw, DAT_WATERMARK_INFINITE);
	CU_ASSERT_FALSE(atomic_load(&ep->wm_armed));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_ep_set_watermark(ep, -3, 1)), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_ep_set_watermark(ep, 1, -3)), DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(ep->soft_hw, DAT_WATERMARK_INFINITE);
	pthread_mutex_destroy(&ep->lock);
	ep_delete(ep);
}

CU_TestInfo ofx_test_dto[] = {
	{ "reserve hands out sequences until the ring is full",
	  test_reserve_hands_out_sequences_until_full },
	{ "init over stale memory starts an empty ring", test_init_over_stale_memory_starts_empty },
	{ "reserve without commit returns the same slot",
	  test_reserve_without_commit_returns_same_slot },
	{ "signaled completion retires all older slots",
	  test_signaled_completion_retires_all_older_slots },
	{ "ring wraps around many times", test_ring_wraps_around_many_times },
	{ "completion polled before commit is not lost",
	  test_completion_before_commit_is_not_lost },
	{ "reset forgets outstanding slots", test_reset_forgets_outstanding_slots },
	{ "empty ring never reserves", test_empty_ring_never_reserves },
	{ "init gives every slot its ring, and the ring its owner",
	  test_init_gives_every_slot_its_ring_and_the_ring_its_owner },
	{ "send reports the posted length", test_send_reports_posted_length },
	{ "recv reports byte_len and retires the recv ring",
	  test_recv_reports_byte_len_and_retires_recv_ring },
	{ "rdma write reports posted, read reports byte_len",
	  test_rdma_write_posted_and_read_byte_len },
	{ "error statuses map and flag the ep", test_error_statuses_map_and_flag_the_ep },
	{ "flush is reported but does not flag the ep",
	  test_flush_reports_but_does_not_flag_the_ep },
	{ "suppressed success is silent, its error is reported",
	  test_suppressed_success_is_silent_but_error_is_reported },
	{ "internal cookie is never reported", test_internal_cookie_never_reported },
	{ "rtr completions flag the ep and touch no ring",
	  test_rtr_completions_flag_the_ep_and_touch_no_ring },
	{ "selective signal retires unsignaled slots",
	  test_selective_signal_retires_unsignaled_slots },
	{ "write immediate: sender event", test_write_immediate_sender_event },
	{ "write immediate: receiver event with unconverted data",
	  test_write_immediate_receiver_event },
	{ "send with immediate: receiver event", test_send_with_immediate_receiver_event },
	{ "compare-and-swap and fetch-and-add events", test_atomic_events },
	{ "plain events carry no stale extension data",
	  test_plain_events_carry_no_stale_extension_data },
	{ "an owner's cookie reaches its owner and retires the ring",
	  test_owner_cookie_reaches_its_owner_and_retires_the_ring },
	{ "consumer completions around an owner's cookie are unchanged",
	  test_consumer_completions_around_an_owner_cookie_are_unchanged },
	{ "a dying ep's success is retired silently", test_dying_ep_success_is_retired_silently },
	{ "receive with invalidate reports the rmr context",
	  test_recv_with_invalidate_reports_the_rmr_context },
	{ "recv_query counts posted receives and their span",
	  test_recv_query_counts_posted_receives_and_their_span },
	{ "recv_query of an srq ep is unknown", test_recv_query_of_an_srq_ep_is_unknown },
	{ "set_watermark stores and checks values", test_set_watermark_stores_and_checks_values },
	CU_TEST_INFO_NULL,
};
