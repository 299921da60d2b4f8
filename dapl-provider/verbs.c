/* SPDX-License-Identifier: BSD-2-Clause */
#include "verbs.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

/*
 * Thin adapters for the verbs calls that are static inline in verbs.h (they
 * dispatch through the context's ops and have no symbol to point at).
 */
int ofx_verbs_create_failed(const char **why)
{
	int err = errno;

	if (!err) {
		*why = "failed without errno (libsiw does this once a process's queue "
		       "mappings reach page offset 0x90: README, siw)";
		return -ENOMEM;
	}
	*why = strerror(err);
	return -err;
}

const char *ofx_verbs_dev_name(const struct ibv_context *ctx)
{
	return ctx && ctx->device ? ibv_get_device_name(ctx->device) : "(none)";
}

static int real_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

static int real_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static struct ibv_qp *real_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	return ibv_create_qp_ex(ctx, attr);
}

static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ofx_verbs_neg_errno(ibv_post_send(qp, wr, bad));
}

static int real_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ofx_verbs_neg_errno(ibv_post_recv(qp, wr, bad));
}

static struct ibv_srq *real_create_srq_ex(struct ibv_context *ctx,
					  struct ibv_srq_init_attr_ex *attr)
{
	return ibv_create_srq_ex(ctx, attr);
}

static int real_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			      struct ibv_recv_wr **bad)
{
	return ofx_verbs_neg_errno(ibv_post_srq_recv(srq, wr, bad));
}

static int real_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num)
{
	return ibv_get_srq_num(srq, srq_num);
}

static struct ibv_xrcd *real_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	return ibv_open_xrcd(ctx, attr);
}

static int real_close_xrcd(struct ibv_xrcd *xrcd)
{
	return ibv_close_xrcd(xrcd);
}

static struct ibv_qp *real_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	return ibv_open_qp(ctx, attr);
}

static struct ibv_mr *real_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static struct ibv_mw *real_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	return ibv_alloc_mw(pd, type);
}

static int real_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_dealloc_mw(mw);
}

static int real_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	return ofx_verbs_neg_errno(ibv_bind_mw(qp, mw, bind));
}

static int real_resize_cq(struct ibv_cq *cq, int cqe)
{
	return ofx_verbs_neg_errno(ibv_resize_cq(cq, cqe));
}

static int real_reject(struct rdma_cm_id *id, const void *pdata, uint8_t len)
{
	return rdma_reject(id, pdata, len);
}

const struct ofx_verbs_ops ofx_verbs_real = {
	.alloc_pd = ibv_alloc_pd,
	.dealloc_pd = ibv_dealloc_pd,
	.reg_mr = real_reg_mr,
	.dereg_mr = ibv_dereg_mr,
	.alloc_mw = real_alloc_mw,
	.dealloc_mw = real_dealloc_mw,
	.bind_mw = real_bind_mw,

	.create_comp_channel = ibv_create_comp_channel,
	.destroy_comp_channel = ibv_destroy_comp_channel,
	.create_cq = ibv_create_cq,
	.destroy_cq = ibv_destroy_cq,
	.resize_cq = real_resize_cq,
	.poll_cq = real_poll_cq,
	.req_notify_cq = real_req_notify_cq,
	.get_cq_event = ibv_get_cq_event,
	.ack_cq_events = ibv_ack_cq_events,

	.create_qp_ex = real_create_qp_ex,
	.open_qp = real_open_qp,
	.modify_qp = ibv_modify_qp,
	.query_qp = ibv_query_qp,
	.destroy_qp = ibv_destroy_qp,
	.post_send = real_post_send,
	.post_recv = real_post_recv,
	.create_srq_ex = real_create_srq_ex,
	.modify_srq = ibv_modify_srq,
	.destroy_srq = ibv_destroy_srq,
	.post_srq_recv = real_post_srq_recv,
	.get_srq_num = real_get_srq_num,
	.open_xrcd = real_open_xrcd,
	.close_xrcd = real_close_xrcd,

	.create_event_channel = rdma_create_event_channel,
	.destroy_event_channel = rdma_destroy_event_channel,
	.create_id = rdma_create_id,
	.destroy_id = rdma_destroy_id,
	.bind_addr = rdma_bind_addr,
	.resolve_addr = rdma_resolve_addr,
	.resolve_route = rdma_resolve_route,
	.listen = rdma_listen,
	.connect = rdma_connect,
	.accept = rdma_accept,
	.reject = real_reject,
	.establish = rdma_establish,
	.disconnect = rdma_disconnect,
	.init_qp_attr = rdma_init_qp_attr,
	.set_option = rdma_set_option,
	.get_cm_event = rdma_get_cm_event,
	.ack_cm_event = rdma_ack_cm_event,
};

const struct ofx_verbs_ops *ofx_verbs = &ofx_verbs_real;

void ofx_verbs_set(const struct ofx_verbs_ops *ops)
{
	ofx_verbs = ops ? ops : &ofx_verbs_real;
}

/* The inline ibv_post_send, ibv_post_recv and ibv_poll_cq call exactly these. */
ofx_verbs_post_send_fn ofx_verbs_post_send_of(const struct ibv_qp *qp)
{
	return ofx_verbs == &ofx_verbs_real ? qp->context->ops.post_send : ofx_verbs->post_send;
}

ofx_verbs_post_recv_fn ofx_verbs_post_recv_of(const struct ibv_qp *qp)
{
	return ofx_verbs == &ofx_verbs_real ? qp->context->ops.post_recv : ofx_verbs->post_recv;
}

ofx_verbs_poll_cq_fn ofx_verbs_poll_cq_of(const struct ibv_cq *cq)
{
	return ofx_verbs == &ofx_verbs_real ? cq->context->ops.poll_cq : ofx_verbs->poll_cq;
}

/* An SA selector (2 bits) and value (6 bits) in one PathRecord byte. */
static uint8_t path_sel(uint8_t selector, uint8_t value)
{
	return (uint8_t)((selector & 0x3) << 6 | (value & 0x3f));
}

int ofx_verbs_ib_path(const struct rdma_cm_id *id, struct ibv_path_data *path)
{
	const struct ibv_sa_path_rec *p = id->route.path_rec;
	struct ibv_path_record *r = &path->path;
	uint32_t flow;

	if (!p || id->route.num_paths < 1)
		return -ENODATA;
	flow = be32toh(p->flow_label) & 0xfffff;
	memset(path, 0, sizeof(*path));
	path->flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
	r->dgid = p->dgid;
	r->sgid = p->sgid;
	r->dlid = p->dlid;
	r->slid = p->slid;
	/* raw traffic 0 (an IB path), flow label 27:8, hop limit 7:0 */
	r->flowlabel_hoplimit = htobe32(flow << 8 | p->hop_limit);
	r->tclass = p->traffic_class;
	r->reversible_numpath = (uint8_t)((p->reversible ? IBV_PATH_RECORD_REVERSIBLE : 0) |
					  (p->numb_path ? p->numb_path & 0x7f : 1));
	r->pkey = p->pkey;
	r->qosclass_sl = htobe16(p->sl & 0xf);
	r->mtu = path_sel(p->mtu_selector, p->mtu);
	r->rate = path_sel(p->rate_selector, p->rate);
	r->packetlifetime = path_sel(p->packet_life_time_selector, p->packet_life_time);
	/* preference stays 0: librdmacm keeps the kernel's path flags in it */
	return 0;
}

int ofx_verbs_set_ib_path(struct rdma_cm_id *id, struct ibv_path_data *path)
{
	return ofx_verbs->set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, path, sizeof(*path));
}
