/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_VERBS_H
#define OFX_VERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/*
 * The seam between DAT behaviour and the verbs / rdma_cm libraries.  Every
 * call the provider makes into libibverbs or librdmacm that creates, changes
 * or uses a QP, SRQ, CQ, XRC domain or CM id goes through `ofx_verbs`.
 * Production uses the real libraries (ofx_verbs_real); unit tests install
 * a model (for example of XRC semantics, which no device here offers) with
 * ofx_verbs_set().  Device discovery and queries that only read attributes
 * may call libibverbs directly.
 *
 * post_send, post_recv, post_srq_recv, bind_mw and resize_cq return 0 or a
 * negative errno, whatever sign the device library uses: libsiw returns
 * negative values, rxe and mlx5 positive ones, and a failed post read with
 * the wrong sign would reach the consumer as success.  A model installed with
 * ofx_verbs_set() keeps the same contract.
 */
struct ofx_verbs_ops {
	/* protection domains and memory */
	struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
	int (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
	int (*dereg_mr)(struct ibv_mr *mr);
	/* memory windows (RMRs); bind_mw posts a type 1 bind on the QP's send queue */
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

	/* completion queues */
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *ctx);
	int (*destroy_comp_channel)(struct ibv_comp_channel *ch);
	struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_context,
				    struct ibv_comp_channel *ch, int comp_vector);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*get_cq_event)(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **cq_context);
	void (*ack_cq_events)(struct ibv_cq *cq, unsigned int n);

	/* queue pairs and shared receive queues (RC and XRC) */
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *ctx, struct ibv_qp_open_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
	/* what the device made of a QP (debug logs of XRC QPs); may be NULL in a model */
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			struct ibv_qp_init_attr *init);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);

	/* connection manager */
	struct rdma_event_channel *(*create_event_channel)(void);
	void (*destroy_event_channel)(struct rdma_event_channel *ch);
	int (*create_id)(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *ctx,
			 enum rdma_port_space ps);
	int (*destroy_id)(struct rdma_cm_id *id);
	int (*bind_addr)(struct rdma_cm_id *id, struct sockaddr *addr);
	int (*resolve_addr)(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
			    int timeout_ms);
	int (*resolve_route)(struct rdma_cm_id *id, int timeout_ms);
	int (*listen)(struct rdma_cm_id *id, int backlog);
	int (*connect)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*accept)(struct rdma_cm_id *id, struct rdma_conn_param *param);
	int (*reject)(struct rdma_cm_id *id, const void *pdata, uint8_t len);
	int (*establish)(struct rdma_cm_id *id);
	int (*disconnect)(struct rdma_cm_id *id);
	int (*init_qp_attr)(struct rdma_cm_id *id, struct ibv_qp_attr *attr, int *mask);
	int (*set_option)(struct rdma_cm_id *id, int level, int optname, void *optval,
			  size_t optlen);
	int (*get_cm_event)(struct rdma_event_channel *ch, struct rdma_cm_event **ev);
	int (*ack_cm_event)(struct rdma_cm_event *ev);
};

/* A libibverbs status of either sign as 0 or a negative errno (see above). */
static inline int ofx_verbs_neg_errno(int ret)
{
	return ret > 0 ? -ret : ret;
}

/*
 * After a create verb returned NULL: the failure as a negative errno, and
 * words for the log.  libsiw fails a QP, CQ or SRQ whose queue mapping got
 * page offset 0x90 from the kernel without setting errno: it takes that key
 * (0x90000) for its old invalid-key marker, SIW_INVAL_UOBJ_KEY.  The kernel
 * hands out offsets first-fit and the failed object frees its own, so once a
 * process's siw queue mappings reach 144 pages every later create fails
 * (README, "siw").  No errno is reported as -ENOMEM; *why gets the words.
 */
int ofx_verbs_create_failed(const char **why);

/* The device's name for logs; "(none)" without a context or device (fakes). */
const char *ofx_verbs_dev_name(const struct ibv_context *ctx);

extern const struct ofx_verbs_ops ofx_verbs_real;
/* The ops in use; read on every call, written only by ofx_verbs_set(). */
extern const struct ofx_verbs_ops *ofx_verbs;

/* Installs another implementation (unit tests); NULL restores the real one. */
void ofx_verbs_set(const struct ofx_verbs_ops *ops);

/*
 * The data path's posts and poll, resolved once per QP or CQ and kept with
 * it (ep.c, evd.c).  ibv_post_send, ibv_post_recv and ibv_poll_cq only call
 * the device library's op of the object's context, so with the real
 * libraries the resolved op is that one and no adapter runs per call
 * (real_post_send cost a post 8 instructions: README, "Speed"); with a
 * model installed, the model's op as it is at resolution.  A resolved post
 * returns 0 or an errno of either sign (the device library's own, see
 * above): the caller normalises a failure with ofx_verbs_neg_errno.
 */
typedef int (*ofx_verbs_post_send_fn)(struct ibv_qp *qp, struct ibv_send_wr *wr,
				      struct ibv_send_wr **bad);
typedef int (*ofx_verbs_post_recv_fn)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
				      struct ibv_recv_wr **bad);
typedef int (*ofx_verbs_poll_cq_fn)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
ofx_verbs_post_send_fn ofx_verbs_post_send_of(const struct ibv_qp *qp);
ofx_verbs_post_recv_fn ofx_verbs_post_recv_of(const struct ibv_qp *qp);
ofx_verbs_poll_cq_fn ofx_verbs_poll_cq_of(const struct ibv_cq *cq);

/*
 * IB path records (xrc_route.h reuses them).  ofx_verbs_ib_path writes the
 * primary path of an id whose route is resolved as rdma_set_option's
 * RDMA_OPTION_IB_PATH takes it: the wire PathRecord that the kernel unpacks
 * (ib_sa_unpack_path), flagged GMP | PRIMARY | BIDIRECTIONAL, the only
 * entry ucma_set_ib_path accepts.  librdmacm gives the path of a
 * ROUTE_RESOLVED id unpacked (id->route.path_rec, ucma_convert_path), so
 * this packs it back; -ENODATA when the id has none.  The service ID is
 * left 0: the CM takes the REQ's from the port space and port
 * (rdma_get_service_id), not from the path.  ofx_verbs_set_ib_path gives
 * such a path to an id in ADDR_RESOLVED (through ofx_verbs->set_option):
 * the kernel then reports ROUTE_RESOLVED as rdma_resolve_route would,
 * without an SA query.  0 or -1 with errno, as rdma_set_option.
 */
int ofx_verbs_ib_path(const struct rdma_cm_id *id, struct ibv_path_data *path);
int ofx_verbs_set_ib_path(struct rdma_cm_id *id, struct ibv_path_data *path);

#endif
