/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "dto.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "lmr.h"
#include "log.h"
#include "pz.h"
#include "rmr.h"
#include "status.h"
#include "verbs.h"

#include <dat2/dat_ib_extensions.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Remote memory regions (memory windows) against the verbs model of
 * fake_verbs.h: PDs, MRs and windows are plain allocations, and completions
 * are scripted into its CQ model, which the EVDs poll.  Binds and work
 * requests are recorded here.
 */

#define MODEL_WR_MAX 16

static struct ibv_mw_bind model_binds[MODEL_WR_MAX];
static int model_nbinds;
static struct ibv_send_wr model_wrs[MODEL_WR_MAX];
static int model_nwrs;
static int model_bind_errno;

/* Like rxe: posts the bind and advances the key's low byte. */
static int model_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	if (model_bind_errno)
		return -model_bind_errno;
	CU_ASSERT_FATAL(model_nbinds < MODEL_WR_MAX);
	model_binds[model_nbinds++] = *bind;
	mw->rkey = ibv_inc_rkey(mw->rkey);
	return 0;
}

static int model_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	CU_ASSERT_FATAL(model_nwrs < MODEL_WR_MAX);
	CU_ASSERT_PTR_NULL(wr->next);
	model_wrs[model_nwrs++] = *wr;
	return 0;
}

static struct ofx_ia ia;
static struct ibv_qp fake_qp = { .qp_num = 0x42 };
static char buf[4096];

struct fixture {
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_EVD_HANDLE req_evd, conn_evd;
	struct ofx_ep *ep;
};

static void setup(int cap_flags)
{
	fake_verbs_install();
	fake_verbs.ops.bind_mw = model_bind_mw;
	fake_verbs.ops.post_send = model_post_send;
	model_nbinds = model_nwrs = model_bind_errno = 0;
	fake_ia_init(&ia);
	ia.dev_attr.device_cap_flags = cap_flags;
	ia.dev_attr.max_mw = cap_flags ? 64 : 0;
}

static void teardown(void)
{
	ofx_verbs_set(NULL);
	fake_ia_fini(&ia);
	CU_ASSERT_EQUAL(fake_verbs.pds + fake_verbs.mrs + fake_verbs.mws, 0);
}

/* PZ, LMR over buf, request and connection EVDs, and a connected EP by hand. */
static void fixture_init(struct fixture *f, DAT_EVD_FLAGS req_flags)
{
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	struct ofx_ep *ep;

	CU_ASSERT_FATAL(ofx_pz_create(&ia, &f->pz) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), f->pz,
				       DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &f->lmr, &f->lkey,
				       NULL, NULL, NULL) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 16, DAT_HANDLE_NULL, req_flags, &f->req_evd) ==
			DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_evd_create(&ia, 4, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
				       &f->conn_evd) == DAT_SUCCESS);
	ep = calloc(1, sizeof(*ep));
	CU_ASSERT_FATAL(ep != NULL);
	pthread_mutex_init(&ep->lock, NULL);
	ep->obj.type = OFX_OBJ_EP;
	ep->transport = &ofx_ep_rc_transport;
	ep->recv = &ofx_ep_rq_recv;
	ep->obj.ia = &ia;
	test_ep_force_state(ep, OFX_EP_CONNECTED);
	ofx_ep_set_qp(ep, &fake_qp);
	ep->pz = ofx_pz_from_handle(f->pz);
	ep->req_evd = ofx_evd_from_handle(f->req_evd);
	ep->conn_evd = ofx_evd_from_handle(f->conn_evd);
	ofx_ep_cookie_owner_init(ep);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->send_ring, 8, &ep->cookie_owner) == 0);
	CU_ASSERT_FATAL(ofx_cookie_ring_init(&ep->recv_ring, 8, &ep->cookie_owner) == 0);
	f->ep = ep;
}

static void fixture_fini(struct fixture *f)
{
	ofx_cookie_ring_fini(&f->ep->send_ring);
	ofx_cookie_ring_fini(&f->ep->recv_ring);
	pthread_mutex_destroy(&f->ep->lock);
	free(f->ep);
	CU_ASSERT_EQUAL(ofx_evd_free(f->req_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_free(f->conn_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_free(f->lmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(f->pz), DAT_SUCCESS);
}

/* The device completes the work request whose wr_id is `wr_id`. */
static void complete(struct fixture *f, uint64_t wr_id, enum ibv_wc_status status)
{
	struct ibv_wc wc = { .wr_id = wr_id, .status = status, .opcode = IBV_WC_BIND_MW,
			     .qp_num = fake_qp.qp_num };

	fake_cq_push(ofx_evd_from_handle(f->req_evd), &wc);
}

static DAT_RMR_COOKIE rcookie(uint64_t v)
{
	DAT_RMR_COOKIE c = { .as_64 = v };

	return c;
}

static DAT_LMR_TRIPLET triplet(struct fixture *f, size_t off, uint32_t len)
{
	DAT_LMR_TRIPLET t = { .virtual_address = (DAT_VADDR)(uintptr_t)(buf + off),
			      .segment_length = len, .lmr_context = f->lkey };

	return t;
}

/* Dequeues one RMR bind completion and checks it. */
static void expect_bind_event(struct fixture *f, DAT_RMR_HANDLE rmr, uint64_t cookie,
			      DAT_DTO_COMPLETION_STATUS status)
{
	DAT_EVENT ev;

	CU_ASSERT_FATAL(ofx_evd_dequeue(f->req_evd, &ev) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_RMR_BIND_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(ev.event_data.rmr_completion_event_data.rmr_handle, rmr);
	CU_ASSERT_EQUAL(ev.event_data.rmr_completion_event_data.user_cookie.as_64, cookie);
	CU_ASSERT_EQUAL(ev.event_data.rmr_completion_event_data.status, status);
	CU_ASSERT_PTR_EQUAL(ev.evd_handle, f->req_evd);
}

/* The type 2 window work request `i` recorded is a BIND_MW with these values. */
static void expect_bind_wr(int i, uint32_t rkey, uint32_t len, int access)
{
	CU_ASSERT_EQUAL(model_wrs[i].opcode, IBV_WR_BIND_MW);
	CU_ASSERT_EQUAL(model_wrs[i].bind_mw.rkey, rkey);
	CU_ASSERT_EQUAL(model_wrs[i].bind_mw.bind_info.length, len);
	CU_ASSERT_EQUAL(model_wrs[i].bind_mw.bind_info.mw_access_flags, access);
}

static void test_without_memory_windows_create_is_not_implemented(void)
{
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_RMR_HANDLE rmr = NULL;
	DAT_LMR_HANDLE lmr;
	DAT_PZ_HANDLE pz;
	unsigned int saved = ofx_log_subsys_mask;

	setup(0);
	ofx_log_subsys_mask &= ~(1u << OFX_SUBSYS_MEM);
	CU_ASSERT_EQUAL(ofx_rmr_type(&ia), 0);
	CU_ASSERT_EQUAL(ofx_lmr_mw_access(&ia), 0);
	CU_ASSERT_FATAL(ofx_pz_create(&ia, &pz) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_create(pz, &rmr)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_create_for_ep(pz, &rmr)), DAT_NOT_IMPLEMENTED);
	CU_ASSERT_PTR_NULL(rmr);
	/* no MW_BIND access asked of a device without windows */
	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), pz,
				       DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &lmr, NULL,
				       NULL, NULL, NULL) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(fake_verbs.last_access, IBV_ACCESS_LOCAL_WRITE);
	CU_ASSERT_EQUAL(ofx_lmr_free(lmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_pz_free(pz), DAT_SUCCESS);
	ofx_log_subsys_mask = saved;
	teardown();
}

static void test_create_picks_the_window_type_and_query_reports_it(void)
{
	DAT_RMR_HANDLE rmr1, rmr2;
	DAT_RMR_PARAM param;
	struct ofx_obj not_a_pz = { .type = OFX_OBJ_LMR };
	DAT_PZ_HANDLE pz;

	setup(IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	CU_ASSERT_EQUAL(ofx_rmr_type(&ia), IBV_MW_TYPE_1);
	CU_ASSERT_EQUAL(ofx_lmr_mw_access(&ia), IBV_ACCESS_MW_BIND);
	CU_ASSERT_EQUAL(ofx_rmr_scope(&ia), DAT_RMR_SCOPE_ANY);
	CU_ASSERT_FATAL(ofx_pz_create(&ia, &pz) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_create(&not_a_pz, &rmr1),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ));
	CU_ASSERT_EQUAL(ofx_rmr_create(pz, NULL), OFX_INVALID_ARG(2));
	CU_ASSERT_FATAL(ofx_rmr_create(pz, &rmr1) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(pz, &rmr2) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr1)->mw->type, IBV_MW_TYPE_1);
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr2)->mw->type, IBV_MW_TYPE_2);
	CU_ASSERT_EQUAL(fake_verbs.mws, 2);

	memset(&param, 0xff, sizeof(param));
	CU_ASSERT_EQUAL(ofx_rmr_query(rmr1, DAT_RMR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(param.ia_handle, &ia);
	CU_ASSERT_PTR_EQUAL(param.pz_handle, pz);
	CU_ASSERT_EQUAL(param.rmr_context, ofx_rmr_from_handle(rmr1)->mw->rkey);
	CU_ASSERT_EQUAL(param.rmr_scope, DAT_RMR_SCOPE_PZ);
	CU_ASSERT_EQUAL(param.mem_priv, DAT_MEM_PRIV_NONE_FLAG);
	CU_ASSERT_EQUAL(param.lmr_triplet.segment_length, 0);
	CU_ASSERT_EQUAL(param.va_type, DAT_VA_TYPE_VA);
	CU_ASSERT_EQUAL(ofx_rmr_query(rmr2, DAT_RMR_FIELD_RMR_SCOPE, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.rmr_scope, DAT_RMR_SCOPE_EP);
	CU_ASSERT_EQUAL(ofx_rmr_query(rmr2, 0x80, &param), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(ofx_rmr_query(rmr2, DAT_RMR_FIELD_ALL, NULL), OFX_INVALID_ARG(3));

	/* RMRs hold their PZ */
	CU_ASSERT_EQUAL(ofx_pz_free(pz), OFX_DAT_ERR(DAT_INVALID_STATE,
						     DAT_INVALID_STATE_PZ_IN_USE));
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr1), DAT_SUCCESS);
	/* the memory is gone: freed handles are checked by the badinput suite */
	ofx_rmr_destroy(ofx_rmr_from_handle(rmr2));
	CU_ASSERT_EQUAL(fake_verbs.mws, 0);
	CU_ASSERT_EQUAL(ofx_pz_free(pz), DAT_SUCCESS);

	/* a device with type 2 windows only */
	teardown();
	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2A);
	CU_ASSERT_EQUAL(ofx_rmr_type(&ia), IBV_MW_TYPE_2);
	CU_ASSERT_EQUAL(ofx_rmr_scope(&ia), DAT_RMR_SCOPE_EP);
	teardown();
}

static void test_type1_bind_reports_a_completion_and_query_follows(void)
{
	struct fixture f;
	DAT_LMR_TRIPLET t;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT ctx = 0, old;
	DAT_RMR_PARAM param;

	setup(IBV_DEVICE_MEM_WINDOW);
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	/* LMRs of a device with windows can take binds */
	CU_ASSERT_TRUE(fake_verbs.last_access & IBV_ACCESS_MW_BIND);
	CU_ASSERT_FATAL(ofx_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
	old = ofx_rmr_from_handle(rmr)->mw->rkey;

	t = triplet(&f, 512, 1024);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, f.ep,
				     rcookie(0xb1), DAT_COMPLETION_DEFAULT_FLAG, &ctx),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(ctx, ibv_inc_rkey(old));
	CU_ASSERT_FATAL(model_nbinds == 1);
	CU_ASSERT_PTR_EQUAL(model_binds[0].bind_info.mr, ofx_lmr_from_handle(f.lmr)->mr);
	CU_ASSERT_EQUAL(model_binds[0].bind_info.addr, t.virtual_address);
	CU_ASSERT_EQUAL(model_binds[0].bind_info.length, 1024);
	CU_ASSERT_EQUAL(model_binds[0].bind_info.mw_access_flags,
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	CU_ASSERT_TRUE(model_binds[0].send_flags & IBV_SEND_SIGNALED);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&f.ep->send_ring), 1);

	CU_ASSERT_EQUAL(ofx_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.rmr_context, ctx);
	CU_ASSERT_EQUAL(param.mem_priv, DAT_MEM_PRIV_ALL_FLAG);
	CU_ASSERT_EQUAL(param.lmr_triplet.virtual_address, t.virtual_address);
	CU_ASSERT_EQUAL(param.lmr_triplet.segment_length, 1024);

	complete(&f, model_binds[0].wr_id, IBV_WC_SUCCESS);
	expect_bind_event(&f, rmr, 0xb1, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&f.ep->send_ring), 0);

	/*
	 * A suppressed unbind: length 0, nothing reported on success.  It names
	 * the bound MR, not NULL, which rxe's library would dereference.
	 */
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0xb2),
				     DAT_COMPLETION_SUPPRESS_FLAG, NULL), DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nbinds == 2);
	CU_ASSERT_PTR_EQUAL(model_binds[1].bind_info.mr, ofx_lmr_from_handle(f.lmr)->mr);
	CU_ASSERT_EQUAL(model_binds[1].bind_info.length, 0);
	CU_ASSERT_EQUAL(model_binds[1].bind_info.addr, 0);
	complete(&f, model_binds[1].wr_id, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f.req_evd, &(DAT_EVENT){ 0 })),
			DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(ofx_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.mem_priv, DAT_MEM_PRIV_NONE_FLAG);
	CU_ASSERT_EQUAL(param.lmr_triplet.segment_length, 0);
	/* unbinding an unbound window posts nothing and completes at once */
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0xb3), 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(model_nbinds, 2);
	expect_bind_event(&f, rmr, 0xb3, DAT_DTO_SUCCESS);

	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	fixture_fini(&f);
	teardown();
}

static void test_failed_bind_rolls_the_key_back_and_breaks_the_ep(void)
{
	struct fixture f;
	DAT_LMR_TRIPLET t;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT k0, k1 = 0, k2 = 0;
	DAT_EVENT ev;
	unsigned int saved = ofx_log_subsys_mask;

	setup(IBV_DEVICE_MEM_WINDOW);
	ofx_log_subsys_mask &= ~((1u << OFX_SUBSYS_EP) | (1u << OFX_SUBSYS_DTO) |
				 (1u << OFX_SUBSYS_MEM));
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	CU_ASSERT_FATAL(ofx_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
	k0 = ofx_rmr_from_handle(rmr)->mw->rkey;

	/* two binds in flight; the first fails, the second is flushed behind it */
	t = triplet(&f, 0, 128);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(1), 0, &k1), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(2), 0, &k2), DAT_SUCCESS);
	CU_ASSERT_NOT_EQUAL(k1, k0);
	CU_ASSERT_NOT_EQUAL(k2, k1);
	complete(&f, model_binds[0].wr_id, IBV_WC_MW_BIND_ERR);
	complete(&f, model_binds[1].wr_id, IBV_WC_WR_FLUSH_ERR);
	expect_bind_event(&f, rmr, 1, DAT_RMR_OPERATION_FAILED);
	expect_bind_event(&f, rmr, 2, DAT_DTO_ERR_FLUSHED);
	/* the device never moved off k0: neither must the library's copy */
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr)->mw->rkey, k0);
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr)->rkey, k0);
	/* a bind error on a live EP breaks the connection */
	CU_ASSERT_EQUAL(f.ep->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_FATAL(ofx_evd_dequeue(f.conn_evd, &ev) == DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);

	/* the device's window state is unknown now: an unbind is posted */
	CU_ASSERT_TRUE(ofx_rmr_from_handle(rmr)->bound);
	/* a bind the library refuses leaves the key alone too */
	model_bind_errno = EINVAL;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG,
						  DAT_VA_TYPE_VA, f.ep, rcookie(3), 0, NULL)),
			DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr)->mw->rkey, k0);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&f.ep->send_ring), 0);

	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	fixture_fini(&f);
	ofx_log_subsys_mask = saved;
	teardown();
}

static void test_type2_binds_and_invalidates_with_work_requests(void)
{
	struct fixture f;
	DAT_LMR_TRIPLET t;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT k0, k1 = 0, k2 = 0;
	DAT_EVENT ev;

	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(f.pz, &rmr) == DAT_SUCCESS);
	k0 = ofx_rmr_from_handle(rmr)->mw->rkey;

	t = triplet(&f, 64, 256);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0x21), 0, &k1), DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == 1);
	expect_bind_wr(0, ibv_inc_rkey(k0), 256, IBV_ACCESS_REMOTE_READ);
	CU_ASSERT_EQUAL(k1, ibv_inc_rkey(k0));

	/* rebinding a bound type 2 window invalidates it first, unreported */
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0x22), 0, &k2), DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == 3);
	CU_ASSERT_EQUAL(model_wrs[1].opcode, IBV_WR_LOCAL_INV);
	CU_ASSERT_EQUAL(model_wrs[1].invalidate_rkey, k1);
	CU_ASSERT_EQUAL(model_wrs[2].opcode, IBV_WR_BIND_MW);
	CU_ASSERT_EQUAL(k2, ibv_inc_rkey(k1));
	complete(&f, model_wrs[0].wr_id, IBV_WC_SUCCESS);
	complete(&f, model_wrs[1].wr_id, IBV_WC_SUCCESS);
	complete(&f, model_wrs[2].wr_id, IBV_WC_SUCCESS);
	expect_bind_event(&f, rmr, 0x21, DAT_DTO_SUCCESS);
	expect_bind_event(&f, rmr, 0x22, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f.req_evd, &ev)), DAT_QUEUE_EMPTY);

	/* unbind: a reported LOCAL_INV; unbinding again has nothing to post */
	t.segment_length = 0;
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_NONE_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0x23), 0, NULL), DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == 4);
	CU_ASSERT_EQUAL(model_wrs[3].opcode, IBV_WR_LOCAL_INV);
	CU_ASSERT_EQUAL(model_wrs[3].invalidate_rkey, k2);
	complete(&f, model_wrs[3].wr_id, IBV_WC_SUCCESS);
	expect_bind_event(&f, rmr, 0x23, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0x24), 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(model_nwrs, 4);
	expect_bind_event(&f, rmr, 0x24, DAT_DTO_SUCCESS);

	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	fixture_fini(&f);
	teardown();
}

/*
 * A receive on the fixture's EP from a send that invalidated `rkey`, run
 * through completion conversion as the EVD poller does.  `flags` is what
 * the device sets (rxe: the kernel's bit).  Returns whether an event came.
 */
static bool peer_invalidates(struct fixture *f, uint32_t rkey, int flags)
{
	struct ofx_cookie *c = ofx_cookie_ring_reserve(&f->ep->recv_ring);
	struct ibv_wc wc = { .status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV, .byte_len = 16,
			     .qp_num = fake_qp.qp_num, .invalidated_rkey = rkey };
	struct ofx_cookie_owner *notify;
	DAT_EVENT ev;
	bool reported;

	CU_ASSERT_FATAL(c != NULL);
	c->op = OFX_OP_RECV;
	c->flags = 0;
	ofx_cookie_ring_commit(&f->ep->recv_ring);
	wc.wr_id = (uintptr_t)c;
	wc.wc_flags = flags;
	memset(&ev, 0, sizeof(ev));
	reported = ofx_dto_convert(&wc, &ev, &notify);
	if (reported)
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.rmr_context, rkey);
	return reported;
}

static void expect_query(DAT_RMR_HANDLE rmr, DAT_RMR_CONTEXT ctx, const DAT_LMR_TRIPLET *t,
			 DAT_MEM_PRIV_FLAGS priv)
{
	DAT_RMR_PARAM param;

	memset(&param, 0xff, sizeof(param));
	CU_ASSERT_EQUAL(ofx_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.rmr_context, ctx);
	CU_ASSERT_EQUAL(param.mem_priv, priv);
	CU_ASSERT_EQUAL(param.lmr_triplet.virtual_address, t ? t->virtual_address : 0);
	CU_ASSERT_EQUAL(param.lmr_triplet.segment_length, t ? t->segment_length : 0);
}

/* Every type 2 window was freed: the IA's key index lists none. */
static void expect_rmr_index_empty(void)
{
	for (size_t i = 0; i < OFX_RMR_INDEX_BUCKETS; i++)
		CU_ASSERT_PTR_NULL(ia.rmr_index.buckets[i]);
	CU_ASSERT_EQUAL(ia.rmr_index.count, 0);
}

/*
 * Binds `w` for remote writes and `r` for remote reads over `t` through the
 * fixture's EP (user cookies `cookie` and `cookie` + 1); both binds complete.
 */
static void bind_write_and_read(struct fixture *f, const DAT_LMR_TRIPLET *t, DAT_RMR_HANDLE w,
				DAT_RMR_CONTEXT *kw, DAT_RMR_HANDLE r, DAT_RMR_CONTEXT *kr,
				uint64_t cookie)
{
	int first = model_nwrs;

	CU_ASSERT_EQUAL(ofx_rmr_bind(w, f->lmr, t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG,
				     DAT_VA_TYPE_VA, f->ep, rcookie(cookie), 0, kw), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_bind(r, f->lmr, t, DAT_MEM_PRIV_REMOTE_READ_FLAG,
				     DAT_VA_TYPE_VA, f->ep, rcookie(cookie + 1), 0, kr),
			DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == first + 2);
	complete(f, model_wrs[first].wr_id, IBV_WC_SUCCESS);
	complete(f, model_wrs[first + 1].wr_id, IBV_WC_SUCCESS);
	expect_bind_event(f, w, cookie, DAT_DTO_SUCCESS);
	expect_bind_event(f, r, cookie + 1, DAT_DTO_SUCCESS);
}

static void test_window_invalidated_by_the_peer_binds_without_local_inv(void)
{
	struct fixture f;
	DAT_LMR_TRIPLET t1, t2;
	DAT_RMR_HANDLE rmr, other;
	DAT_RMR_CONTEXT k0, k1 = 0, k2 = 0, ko = 0;

	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS);
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(f.pz, &rmr) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(f.pz, &other) == DAT_SUCCESS);
	k0 = ofx_rmr_from_handle(rmr)->rkey;
	t1 = triplet(&f, 0, 256);
	bind_write_and_read(&f, &t1, rmr, &k1, other, &ko, 0x61);

	/* keys that are not the window's current one change nothing */
	CU_ASSERT_TRUE(peer_invalidates(&f, k0, IBV_WC_WITH_INV));
	CU_ASSERT_TRUE(peer_invalidates(&f, k1 ^ (1u << 8), IBV_WC_WITH_INV));
	CU_ASSERT_TRUE(peer_invalidates(&f, f.lkey, IBV_WC_WITH_INV));
	CU_ASSERT_TRUE(ofx_rmr_from_handle(rmr)->bound);
	expect_query(rmr, k1, &t1, DAT_MEM_PRIV_REMOTE_WRITE_FLAG);

	/* the current key: the window is free now, the other one is not */
	CU_ASSERT_TRUE(peer_invalidates(&f, k1, IBV_WC_WITH_INV));
	CU_ASSERT_FALSE(ofx_rmr_from_handle(rmr)->bound);
	CU_ASSERT_TRUE(ofx_rmr_from_handle(other)->bound);
	expect_query(rmr, k1, NULL, DAT_MEM_PRIV_NONE_FLAG);
	expect_query(other, ko, &t1, DAT_MEM_PRIV_REMOTE_READ_FLAG);

	/* so the next bind is a bare BIND_MW: no LOCAL_INV of the free window */
	t2 = triplet(&f, 1024, 512);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t2, DAT_MEM_PRIV_REMOTE_READ_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0x63), 0, &k2), DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == 3);
	expect_bind_wr(2, ibv_inc_rkey(k1), 512, IBV_ACCESS_REMOTE_READ);
	CU_ASSERT_EQUAL(k2, ibv_inc_rkey(k1));
	complete(&f, model_wrs[2].wr_id, IBV_WC_SUCCESS);
	expect_bind_event(&f, rmr, 0x63, DAT_DTO_SUCCESS);
	expect_query(rmr, k2, &t2, DAT_MEM_PRIV_REMOTE_READ_FLAG);

	/*
	 * rxe's kernel flag, on a completion that ep_free drops: the window is
	 * free all the same, so the unbind that follows has nothing to post.
	 */
	ia.wc_inv_kernel_bit = true;
	ofx_ep_set_dying(f.ep, true);
	CU_ASSERT_FALSE(peer_invalidates(&f, k2, IBV_WC_IP_CSUM_OK));
	ofx_ep_set_dying(f.ep, false);
	expect_query(rmr, k2, NULL, DAT_MEM_PRIV_NONE_FLAG);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0x64), 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(model_nwrs, 3);
	expect_bind_event(&f, rmr, 0x64, DAT_DTO_SUCCESS);

	/* a freed window leaves the index: its key then names nothing */
	CU_ASSERT_EQUAL(ofx_rmr_free(other), DAT_SUCCESS);
	CU_ASSERT_TRUE(peer_invalidates(&f, ko, IBV_WC_WITH_INV));
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	expect_rmr_index_empty();
	fixture_fini(&f);
	teardown();
}

/* A window bound through an EP whose QP goes would pin that QP (rxe). */
static void test_windows_bound_through_a_dying_ep_are_renewed(void)
{
	struct fixture f;
	struct ofx_ep other_ep;
	DAT_LMR_TRIPLET t = { 0 };
	DAT_RMR_HANDLE rmr, other, unbound;
	DAT_RMR_CONTEXT k1 = 0, ko = 0, k0u;
	struct ibv_mw *old_mw;
	int mws;

	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS);
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(f.pz, &rmr) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(f.pz, &other) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_rmr_create_for_ep(f.pz, &unbound) == DAT_SUCCESS);
	t = triplet(&f, 0, 128);
	bind_write_and_read(&f, &t, rmr, &k1, other, &ko, 0x71);
	CU_ASSERT_PTR_EQUAL(ofx_rmr_from_handle(rmr)->bound_ep, &f.ep->cookie_owner);
	/* `other` counts as bound through another EP: it must be left alone */
	ofx_rmr_from_handle(other)->bound_ep = &other_ep.cookie_owner;
	k0u = ofx_rmr_from_handle(unbound)->rkey;
	old_mw = ofx_rmr_from_handle(rmr)->mw;
	mws = fake_verbs.mws;

	CU_ASSERT_EQUAL(ia.rmr_index.count, 3);	/* a count the EP teardown trusts */
	ofx_rmr_ep_gone(&f.ep->cookie_owner);
	CU_ASSERT_EQUAL(ia.rmr_index.count, 3);	/* renewed in place, still indexed */
	CU_ASSERT_EQUAL(fake_verbs.mws, mws);	/* one window swapped for another */
	CU_ASSERT_PTR_NOT_NULL(ofx_rmr_from_handle(rmr)->mw);
	CU_ASSERT_PTR_NOT_EQUAL(ofx_rmr_from_handle(rmr)->mw, old_mw);
	CU_ASSERT_FALSE(ofx_rmr_from_handle(rmr)->bound);
	CU_ASSERT_PTR_NULL(ofx_rmr_from_handle(rmr)->bound_ep);
	CU_ASSERT_NOT_EQUAL(ofx_rmr_from_handle(rmr)->rkey, k1);
	expect_query(rmr, ofx_rmr_from_handle(rmr)->rkey, NULL, DAT_MEM_PRIV_NONE_FLAG);
	expect_query(other, ko, &t, DAT_MEM_PRIV_REMOTE_READ_FLAG);
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(unbound)->rkey, k0u);
	/* the new key is in the index: the peer can invalidate a later binding */
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr)->key_index,
			ofx_rmr_from_handle(rmr)->rkey >> 8);

	CU_ASSERT_EQUAL(ofx_rmr_free(unbound), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_free(other), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	expect_rmr_index_empty();
	fixture_fini(&f);
	teardown();
}

static void test_bind_checks_its_arguments(void)
{
	struct fixture f, g;
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_LMR_TRIPLET t, bad;
	DAT_LMR_HANDLE ro_lmr;
	DAT_LMR_CONTEXT ro_lkey;
	DAT_RMR_HANDLE rmr, rmr_g;
	unsigned int saved = ofx_log_subsys_mask;

	setup(IBV_DEVICE_MEM_WINDOW);
	ofx_log_subsys_mask &= ~(1u << OFX_SUBSYS_MEM);
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	fixture_init(&g, DAT_EVD_DTO_FLAG);	/* request EVD without RMR_BIND */
	CU_ASSERT_FATAL(ofx_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_rmr_create(g.pz, &rmr_g) == DAT_SUCCESS);
	t = triplet(&f, 0, 64);

	CU_ASSERT_EQUAL(ofx_rmr_bind(f.lmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR));
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, rmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR));
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, NULL, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), 0, NULL), OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, (DAT_MEM_PRIV_FLAGS)0x1000, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), 0, NULL), OFX_INVALID_ARG(4));
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG,
						  DAT_VA_TYPE_ZB, f.ep, rcookie(0), 0, NULL)),
			DAT_MODEL_NOT_SUPPORTED);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.lmr, rcookie(0), 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP));
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), DAT_COMPLETION_SOLICITED_WAIT_FLAG, NULL),
			OFX_INVALID_ARG(8));
	/* the EP's request EVD must take RMR bind events */
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr_g, g.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     g.ep, rcookie(0), 0, NULL), OFX_INVALID_ARG(6));
	/* RMR, LMR and EP must share one PZ */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr_g, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG,
						  DAT_VA_TYPE_VA, f.ep, rcookie(0), 0, NULL)),
			DAT_PROTECTION_VIOLATION);
	/* the triplet must name this LMR and lie inside it */
	bad = t;
	bad.lmr_context++;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr, f.lmr, &bad, DAT_MEM_PRIV_ALL_FLAG,
						  DAT_VA_TYPE_VA, f.ep, rcookie(0), 0, NULL)),
			DAT_PROTECTION_VIOLATION);
	bad = triplet(&f, sizeof(buf) - 32, 64);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &bad, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), 0, NULL), OFX_INVALID_ARG(3));
	/* remote write through a window needs a locally writable LMR */
	CU_ASSERT_FATAL(ofx_lmr_create(&ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof(buf), f.pz,
				       DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, &ro_lmr,
				       &ro_lkey, NULL, NULL, NULL) == DAT_SUCCESS);
	bad = t;
	bad.lmr_context = ro_lkey;
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr, ro_lmr, &bad,
						  DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA,
						  f.ep, rcookie(0), 0, NULL)),
			DAT_PRIVILEGES_VIOLATION);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, ro_lmr, &bad, DAT_MEM_PRIV_REMOTE_READ_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(0),
				     DAT_COMPLETION_SUPPRESS_FLAG, NULL), DAT_SUCCESS);
	/* an EP that is not connected takes no binds */
	test_ep_force_state(f.ep, OFX_EP_UNCONNECTED);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(0), 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	CU_ASSERT_EQUAL(model_nbinds, 1);

	/* freed with a bind in flight: its completion is still handled afterwards */
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	complete(&f, model_binds[0].wr_id, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f.req_evd, &(DAT_EVENT){ 0 })),
			DAT_QUEUE_EMPTY);
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr_g), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_lmr_free(ro_lmr), DAT_SUCCESS);
	fixture_fini(&g);
	fixture_fini(&f);
	ofx_log_subsys_mask = saved;
	teardown();
}

static void test_send_with_invalidate_names_the_peer_rkey(void)
{
	struct fixture f;
	DAT_LMR_TRIPLET t;
	DAT_DTO_COOKIE c = { .as_64 = 0x31 };
	DAT_EVENT ev;

	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS);
	fixture_init(&f, DAT_EVD_DTO_FLAG);
	f.ep->attr.max_request_iov = 1;
	t = triplet(&f, 0, 64);
	CU_ASSERT_EQUAL(ofx_ep_post_send_with_invalidate(f.ep, 1, &t, c, 0, DAT_TRUE, 0x1234),
			DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == 1);
	CU_ASSERT_EQUAL(model_wrs[0].opcode, IBV_WR_SEND_WITH_INV);
	CU_ASSERT_EQUAL(model_wrs[0].invalidate_rkey, 0x1234);
	CU_ASSERT_EQUAL(model_wrs[0].num_sge, 1);
	CU_ASSERT_TRUE(model_wrs[0].send_flags & IBV_SEND_SIGNALED);

	/* invalidate false: a plain send, the context is ignored */
	c.as_64 = 0x32;
	CU_ASSERT_EQUAL(ofx_ep_post_send_with_invalidate(f.ep, 1, &t, c, 0, DAT_FALSE, 0x1234),
			DAT_SUCCESS);
	CU_ASSERT_FATAL(model_nwrs == 2);
	CU_ASSERT_EQUAL(model_wrs[1].opcode, IBV_WR_SEND);
	CU_ASSERT_EQUAL(model_wrs[1].invalidate_rkey, 0);

	/* the sender sees an ordinary send completion */
	complete(&f, model_wrs[0].wr_id, IBV_WC_SUCCESS);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(f.req_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.operation, DAT_DTO_SEND);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.user_cookie.as_64, 0x31);
	CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.transfered_length, 64);

	/* not connected: refused before anything is posted */
	test_ep_force_state(f.ep, OFX_EP_UNCONNECTED);
	CU_ASSERT_EQUAL(ofx_ep_post_send_with_invalidate(f.ep, 1, &t, c, 0, DAT_TRUE, 0x1234),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	CU_ASSERT_EQUAL(model_nwrs, 2);
	fixture_fini(&f);
	teardown();
}

static void test_send_with_invalidate_needs_mem_mgt_extensions(void)
{
	struct fixture f;
	DAT_LMR_TRIPLET t;
	DAT_DTO_COOKIE c = { .as_64 = 0x41 };

	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	fixture_init(&f, DAT_EVD_DTO_FLAG);
	f.ep->attr.max_request_iov = 1;
	t = triplet(&f, 0, 64);
	CU_ASSERT_EQUAL(ofx_ep_post_send_with_invalidate(f.ep, 1, &t, c, 0, DAT_TRUE, 0x1234),
			DAT_MODEL_NOT_SUPPORTED);
	CU_ASSERT_EQUAL(model_nwrs, 0);
	/* without invalidation it is an ordinary send, which every device has */
	CU_ASSERT_EQUAL(ofx_ep_post_send_with_invalidate(f.ep, 1, &t, c, 0, DAT_FALSE, 0),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(model_nwrs, 1);
	CU_ASSERT_EQUAL(model_wrs[0].opcode, IBV_WR_SEND);
	complete(&f, model_wrs[0].wr_id, IBV_WC_SUCCESS);
	ofx_evd_drain_cq(ofx_evd_from_handle(f.req_evd));
	fixture_fini(&f);
	teardown();
}

static void test_rdma_read_to_rmr_is_model_not_supported(void)
{
	struct fixture f;
	DAT_RMR_TRIPLET local = { .rmr_context = 0x10, .segment_length = 64 };
	DAT_RMR_TRIPLET remote = { .rmr_context = 0x20, .segment_length = 64 };
	DAT_DTO_COOKIE c = { .as_64 = 0x51 };

	setup(IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_MEM_MGT_EXTENSIONS);
	fixture_init(&f, DAT_EVD_DTO_FLAG);
	CU_ASSERT_EQUAL(ofx_ep_post_rdma_read_to_rmr(f.ep, &local, c, &remote, 0),
			DAT_MODEL_NOT_SUPPORTED);
	CU_ASSERT_EQUAL(model_nwrs, 0);
	fixture_fini(&f);
	teardown();
}

/*
 * dat_rmr_bind checks the window's side before the EP's connection: an EP
 * that cannot send gets neither a work request nor a software completion,
 * and the window keeps its key.
 */
static void test_bind_on_an_ep_not_connected_posts_nothing(void)
{
	struct fixture f, g;
	DAT_LMR_TRIPLET t;
	DAT_RMR_HANDLE rmr, rmr_g;
	DAT_RMR_CONTEXT k = 0, k0;
	struct ibv_qp *qp;
	int nbinds;

	setup(IBV_DEVICE_MEM_WINDOW);
	nbinds = model_nbinds;
	fixture_init(&f, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	fixture_init(&g, DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG);
	CU_ASSERT_FATAL(ofx_rmr_create(f.pz, &rmr) == DAT_SUCCESS);
	CU_ASSERT_FATAL(ofx_rmr_create(g.pz, &rmr_g) == DAT_SUCCESS);
	k0 = ofx_rmr_from_handle(rmr)->rkey;
	t = triplet(&f, 0, 64);

	test_ep_force_state(f.ep, OFX_EP_UNCONNECTED);
	/* the PZ and region checks come first */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_rmr_bind(rmr_g, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG,
						  DAT_VA_TYPE_VA, f.ep, rcookie(1), 0, &k)),
			DAT_PROTECTION_VIOLATION);
	/* then the EP's connection, for a bind and an unbind alike */
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(2), 0, &k),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(3), 0, &k),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	test_ep_force_state(f.ep, OFX_EP_ACTIVE_PENDING);
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(4), 0, &k),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	/* connected, but a reset that could not build a QP left it without one */
	test_ep_force_state(f.ep, OFX_EP_CONNECTED);
	qp = f.ep->qp;
	f.ep->qp = NULL;
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, f.lmr, &t, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
				     f.ep, rcookie(5), 0, &k),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED));
	f.ep->qp = qp;

	CU_ASSERT_EQUAL(model_nbinds, nbinds);
	CU_ASSERT_EQUAL(k, 0);
	CU_ASSERT_EQUAL(ofx_rmr_from_handle(rmr)->rkey, k0);
	CU_ASSERT_FALSE(ofx_rmr_from_handle(rmr)->bound);
	CU_ASSERT_EQUAL(ofx_cookie_ring_outstanding(&f.ep->send_ring), 0);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(f.req_evd, &(DAT_EVENT){ 0 })),
			DAT_QUEUE_EMPTY);
	/* connected again, the same unbind completes at once on the EP's request EVD */
	CU_ASSERT_EQUAL(ofx_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				     DAT_VA_TYPE_VA, f.ep, rcookie(6), 0, &k), DAT_SUCCESS);
	CU_ASSERT_EQUAL(k, k0);
	CU_ASSERT_EQUAL(model_nbinds, nbinds);
	CU_ASSERT_EQUAL(ofx_evd_dequeue(f.req_evd, &(DAT_EVENT){ 0 }), DAT_SUCCESS);

	CU_ASSERT_EQUAL(ofx_rmr_free(rmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_rmr_free(rmr_g), DAT_SUCCESS);
	fixture_fini(&g);
	fixture_fini(&f);
	teardown();
}

CU_TestInfo ofx_test_rmr[] = {
	{ "without memory windows create is not implemented",
	  test_without_memory_windows_create_is_not_implemented },
	{ "create picks the window type and query reports it",
	  test_create_picks_the_window_type_and_query_reports_it },
	{ "type 1 bind reports a completion and query follows",
	  test_type1_bind_reports_a_completion_and_query_follows },
	{ "failed bind rolls the key back and breaks the ep",
	  test_failed_bind_rolls_the_key_back_and_breaks_the_ep },
	{ "type 2 binds and invalidates with work requests",
	  test_type2_binds_and_invalidates_with_work_requests },
	{ "send with invalidate names the peer's rkey",
	  test_send_with_invalidate_names_the_peer_rkey },
	{ "send with invalidate needs memory management extensions",
	  test_send_with_invalidate_needs_mem_mgt_extensions },
	{ "rdma read to rmr is model-not-supported", test_rdma_read_to_rmr_is_model_not_supported },
	{ "bind checks its arguments", test_bind_checks_its_arguments },
	{ "bind on an ep not connected posts nothing",
	  test_bind_on_an_ep_not_connected_posts_nothing },
	{ "window invalidated by the peer binds again without local invalidate",
	  test_window_invalidated_by_the_peer_binds_without_local_inv },
	{ "windows bound through a dying ep get fresh unbound windows",
	  test_windows_bound_through_a_dying_ep_are_renewed },
	CU_TEST_INFO_NULL,
};
