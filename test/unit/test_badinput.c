/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"
#include "fake_verbs.h"

#include "config.h"
#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "instance.h"
#include "log.h"
#include "provider.h"
#include "pz.h"
#include "rmr.h"
#include "sp.h"
#include "srq.h"
#include "status.h"
#include "verbs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>

/*
 * Bad input through every slot of the DAT_PROVIDER table, called the way
 * libdat2 calls it: through the instance's table, with whatever handle the
 * consumer passed (libdat2 only refuses a NULL primary handle).
 *
 * The objects are live libdaplofx objects made by the provider's own create
 * calls on a hand-made IA, over a verbs model whose PDs, MRs, windows, CQs,
 * QPs, SRQs and cm_ids are plain calloc'd structs; only the CR, which needs
 * an incoming request, is made by hand.  Freed objects are stand-ins whose
 * header went through ofx_obj_fini(), so that reading the tag stays legal
 * under ASan.
 *
 * Two tables drive the walk:
 *  - handle_cases: one row per handle argument of a slot.  The row is called
 *    with every live object of another type, with a freed object of the
 *    argument's own type and, for a secondary handle, with NULL.
 *  - arg_cases: one row per bad non-handle argument (NULL outputs, negative
 *    or huge counts, segment lists without segments, bad flags and masks),
 *    with every handle valid.
 * Between them they must name every function slot of DAT_PROVIDER.
 */

/* The argument may be any live object (consumer context calls): type ANY in a row. */
#define OFX_OBJ_ANY OFX_OBJ_TYPE_COUNT
/* A NULL secondary handle is legal for this argument: not tried. */
#define NULL_LEGAL ((DAT_RETURN)0xffffffffu)

#define HANDLE_ERR(sub) OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_##sub)
#define NOT_IMPL OFX_DAT_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE)

/* ---- the device: the shared fake (fake_verbs.h), refusing every post ------ */

/* Calls that would have put work on the device or the wire. */
static int reached_device(void)
{
	return fake_verbs.posts + fake_cm.connects + fake_cm.accepts + fake_cm.rejects;
}

/* ---- the fixture ------------------------------------------------------------ */

struct live {
	const char *name;
	DAT_HANDLE h;
	enum ofx_obj_type type;
};

static struct {
	struct ofx_provider prov;
	struct verbs_context vctx;	/* ibv_query_port goes through query_port */
	struct ibv_device vdev;
	struct ofx_ia ia;

	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_RMR_HANDLE rmr;
	DAT_EVD_HANDLE dto_evd, cr_evd, conn_evd, sw_evd;
	DAT_CNO_HANDLE cno;
	DAT_EP_HANDLE ep, rsp_ep;
	DAT_SRQ_HANDLE srq;
	DAT_PSP_HANDLE psp;
	DAT_RSP_HANDLE rsp;
	DAT_CSP_HANDLE csp;
	struct ofx_cr *cr;

	struct live live[24];
	int nlive;
	struct ofx_obj *freed[OFX_OBJ_TYPE_COUNT];

	/* well-formed arguments */
	char buf[256];
	DAT_REGION_DESCRIPTION region;
	DAT_LMR_TRIPLET iov;
	DAT_RMR_TRIPLET rmr_iov;
	DAT_DTO_COOKIE cookie;
	DAT_RMR_COOKIE rcookie;
	DAT_OS_WAIT_PROXY_AGENT agent;
	DAT_EP_ATTR srq_ep_attr;
	DAT_SRQ_ATTR srq_attr;
	DAT_EVENT sw_event;
	struct sockaddr_in peer;	/* some other node, port 4791 */
	struct sockaddr_in self;	/* the IA address, port 4791 */
} f;

#define P (&f.prov.dat)

/* Outputs the calls may write; never read back. */
static DAT_HANDLE out_h;
static DAT_COUNT out_n, out_n2;
static DAT_CONN_QUAL out_qual;
static DAT_FD out_fd;
static DAT_CONTEXT out_ctx;
static DAT_HANDLE_TYPE out_type;
static DAT_BOOLEAN out_bool;
static DAT_EP_STATE out_state;
static DAT_RMR_CONTEXT out_rctx;
static DAT_LMR_CONTEXT out_lctx;
static DAT_VLEN out_vlen;
static DAT_VADDR out_va;
static DAT_EVENT out_ev;
static union {
	DAT_IA_ATTR ia;
	DAT_PROVIDER_ATTR prov;
	DAT_CNO_PARAM cno;
	DAT_CR_PARAM cr;
	DAT_EVD_PARAM evd;
	DAT_EP_PARAM ep;
	DAT_LMR_PARAM lmr;
	DAT_RMR_PARAM rmr;
	DAT_PSP_PARAM psp;
	DAT_RSP_PARAM rsp;
	DAT_CSP_PARAM csp;
	DAT_PZ_PARAM pz;
	DAT_SRQ_PARAM srq;
} out_param;

static int fake_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr,
			   size_t len)
{
	memcpy(attr, &f.ia.port_attr, len < sizeof(*attr) ? len : sizeof(*attr));
	return 0;
}

/* dat_extension_op as libdat2 forwards it: the varargs as a va_list. */
static DAT_RETURN ext_op(DAT_HANDLE h, DAT_EXTENDED_OP op, ...)
{
	DAT_RETURN status;
	va_list args;

	va_start(args, op);
	status = P->handle_extendedop_func(h, op, args);
	va_end(args);
	return status;
}

static void add_live(const char *name, DAT_HANDLE h)
{
	struct ofx_obj *obj = h;

	CU_ASSERT_PTR_NOT_NULL_FATAL(h);
	CU_ASSERT_FATAL(f.nlive < (int)OFX_ARRAY_SIZE(f.live));
	f.live[f.nlive++] = (struct live){ name, h, obj->type };
}

static void model_install(void)
{
	fake_verbs_install();
	/* a bad argument must never get this far: anything that does fails */
	fake_verbs.post_errno = EINVAL;
	fake_cm.connect_errno = EINVAL;
	fake_cm.accept_errno = EINVAL;
}

static void ia_init(void)
{
	struct ofx_ia *ia = &f.ia;

	f.prov.dat = ofx_provider_template;
	snprintf(f.prov.name, sizeof(f.prov.name), "ofx-badinput");
	snprintf(f.prov.device, sizeof(f.prov.device), "127.0.0.1");
	snprintf(f.prov.port, sizeof(f.prov.port), "0");
	f.prov.dat.device_name = f.prov.name;
	f.prov.dat.extension = &f.prov;
	ofx_list_init(&f.prov.link);

	snprintf(f.vdev.name, sizeof(f.vdev.name), "fake0");
	f.vctx.context.device = &f.vdev;
	f.vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	f.vctx.sz = sizeof(f.vctx);
	f.vctx.query_port = fake_query_port;

	ia->obj.provider = &f.prov.dat;
	ofx_obj_init(&ia->obj, OFX_OBJ_IA, ia);
	ia->prov = &f.prov;
	ofx_config_defaults(&ia->cfg);
	ia->verbs = &f.vctx.context;
	ia->port_num = 1;
	ia->transport = OFX_TRANSPORT_ROCE;
	ia->dev_attr.max_cqe = 1024;
	ia->dev_attr.max_qp_wr = 256;
	ia->dev_attr.max_sge = 4;
	ia->dev_attr.max_qp_rd_atom = 4;
	ia->dev_attr.max_qp_init_rd_atom = 4;
	ia->dev_attr.max_srq = 8;
	ia->dev_attr.max_srq_wr = 256;
	ia->dev_attr.max_srq_sge = 4;
	ia->dev_attr.max_mw = 16;
	ia->dev_attr.device_cap_flags = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	ia->dev_attr.atomic_cap = IBV_ATOMIC_HCA;
	ia->port_attr.state = IBV_PORT_ACTIVE;
	ia->port_attr.max_msg_sz = 1u << 30;
	ia->port_attr.active_mtu = IBV_MTU_1024;
	f.self.sin_family = AF_INET;
	f.self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(&ia->addr, &f.self, sizeof(f.self));
	f.self.sin_port = htons(4791);
	f.peer.sin_family = AF_INET;
	f.peer.sin_addr.s_addr = htonl(0x0a000002);
	f.peer.sin_port = htons(4791);
	pthread_mutex_init(&ia->obj_lock, NULL);
	ofx_rmr_index_init(&ia->rmr_index);
	ofx_list_init(&ia->objects);
	ofx_list_init(&ia->zombies);
}

/* Stand-ins for freed objects: the header of each type, poisoned by ofx_obj_fini(). */
static void freed_init(void)
{
	union any_obj {
		struct ofx_ia ia;
		struct ofx_ep ep;
		struct ofx_cr cr;
		struct ofx_srq srq;
	};

	for (int t = OFX_OBJ_IA; t < OFX_OBJ_TYPE_COUNT; t++) {
		struct ofx_obj *obj = calloc(1, sizeof(union any_obj) + 4096);

		CU_ASSERT_PTR_NOT_NULL_FATAL(obj);
		if (t == OFX_OBJ_IA) {
			obj->provider = &f.prov.dat;
			ofx_obj_init(obj, OFX_OBJ_IA, (struct ofx_ia *)obj);
		} else {
			ofx_obj_init(obj, (enum ofx_obj_type)t, &f.ia);
		}
		ofx_obj_fini(obj);
		CU_ASSERT_EQUAL(obj->type, OFX_OBJ_FREED);
		CU_ASSERT_PTR_EQUAL(obj->provider, &f.prov.dat);
		f.freed[t] = obj;
	}
}

static void fixture_up(void)
{
	DAT_EP_ATTR rsp_attr;

	memset(&f, 0, sizeof(f));
	model_install();
	ia_init();
	freed_init();

	f.region.for_va = f.buf;
	f.iov = (DAT_LMR_TRIPLET){ .lmr_context = 0,	/* the LMR's, once it exists */
				   .virtual_address = (uintptr_t)f.buf, .segment_length = 64 };
	f.rmr_iov = (DAT_RMR_TRIPLET){ .rmr_context = 0x2222, .virtual_address = 0x10000,
				       .segment_length = 64 };
	f.cookie.as_64 = 0xc00c1e;
	f.rcookie.as_64 = 0xc00c1e;
	f.srq_attr = (DAT_SRQ_ATTR){ .max_recv_dtos = 8, .max_recv_iov = 1 };
	f.srq_ep_attr.service_type = DAT_SERVICE_TYPE_RC;
	f.srq_ep_attr.max_request_dtos = 4;
	f.srq_ep_attr.max_request_iov = 1;
	f.srq_ep_attr.max_recv_iov = 1;
	f.sw_event.event_number = DAT_SOFTWARE_EVENT;

	add_live("ia", &f.ia);
	CU_ASSERT_EQUAL_FATAL(P->pz_create_func(&f.ia, &f.pz), DAT_SUCCESS);
	add_live("pz", f.pz);
	CU_ASSERT_EQUAL_FATAL(P->lmr_create_func(&f.ia, DAT_MEM_TYPE_VIRTUAL, f.region,
						 sizeof(f.buf), f.pz,
						 DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA,
						 &f.lmr, &f.iov.lmr_context, NULL, NULL, NULL),
			      DAT_SUCCESS);
	add_live("lmr", f.lmr);
	CU_ASSERT_EQUAL_FATAL(P->rmr_create_func(f.pz, &f.rmr), DAT_SUCCESS);
	add_live("rmr", f.rmr);
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 16, DAT_HANDLE_NULL,
						 DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG,
						 &f.dto_evd), DAT_SUCCESS);
	add_live("dto evd", f.dto_evd);
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
						 &f.cr_evd), DAT_SUCCESS);
	add_live("cr evd", f.cr_evd);
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 16, DAT_HANDLE_NULL,
						 DAT_EVD_CONNECTION_FLAG, &f.conn_evd),
			      DAT_SUCCESS);
	add_live("connection evd", f.conn_evd);
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 4, DAT_HANDLE_NULL,
						 DAT_EVD_SOFTWARE_FLAG, &f.sw_evd), DAT_SUCCESS);
	add_live("software evd", f.sw_evd);
	CU_ASSERT_EQUAL_FATAL(P->cno_create_func(&f.ia, f.agent, &f.cno), DAT_SUCCESS);
	add_live("cno", f.cno);
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						NULL, &f.ep), DAT_SUCCESS);
	add_live("ep", f.ep);
	CU_ASSERT_EQUAL_FATAL(P->srq_create_func(&f.ia, f.pz, &f.srq_attr, &f.srq), DAT_SUCCESS);
	add_live("srq", f.srq);
	CU_ASSERT_EQUAL_FATAL(P->psp_create_func(&f.ia, 4791, f.cr_evd, DAT_PSP_CONSUMER_FLAG,
						 &f.psp), DAT_SUCCESS);
	add_live("psp", f.psp);
	rsp_attr = f.srq_ep_attr;
	rsp_attr.max_recv_dtos = 4;
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						&rsp_attr, &f.rsp_ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(P->rsp_create_func(&f.ia, 4792, f.rsp_ep, f.cr_evd, &f.rsp),
			      DAT_SUCCESS);
	add_live("rsp", f.rsp);
	CU_ASSERT_EQUAL_FATAL(P->csp_create_func(&f.ia, NULL, (DAT_IA_ADDRESS_PTR)&f.self,
						 f.conn_evd, &f.csp), DAT_SUCCESS);
	add_live("csp", f.csp);

	/* a request as the progress thread would have queued it, minus the cm_id */
	f.cr = calloc(1, sizeof(*f.cr));
	CU_ASSERT_PTR_NOT_NULL_FATAL(f.cr);
	f.cr->queue = &ofx_sp_lookup(f.psp, OFX_OBJ_PSP)->crq;
	ofx_list_init(&f.cr->sp_link);
	ofx_obj_init(&f.cr->obj, OFX_OBJ_CR, &f.ia);
	add_live("cr", f.cr);
}

static void fixture_down(void)
{
	ofx_cr_destroy(f.cr);
	CU_ASSERT_EQUAL(P->csp_free_func(f.csp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->rsp_free_func(f.rsp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->psp_free_func(f.psp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->ep_free_func(f.rsp_ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->ep_free_func(f.ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->srq_free_func(f.srq), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->cno_free_func(f.cno), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->evd_free_func(f.sw_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->evd_free_func(f.conn_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->evd_free_func(f.cr_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->evd_free_func(f.dto_evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->rmr_free_func(f.rmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->lmr_free_func(f.lmr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->pz_free_func(f.pz), DAT_SUCCESS);
	CU_ASSERT_TRUE(ofx_list_empty(&f.ia.objects));
	CU_ASSERT_TRUE(ofx_list_empty(&f.ia.zombies));
	CU_ASSERT_EQUAL(fake_verbs.pds + fake_verbs.mrs + fake_verbs.mws + fake_verbs.qps +
			fake_verbs.srqs + fake_verbs.cqs + fake_verbs.channels, 0);
	CU_ASSERT_EQUAL(fake_cm.ids, 0);
	for (int t = 0; t < OFX_OBJ_TYPE_COUNT; t++)
		free(f.freed[t]);
	ofx_obj_fini(&f.ia.obj);
	ofx_rmr_index_fini(&f.ia.rmr_index);
	pthread_mutex_destroy(&f.ia.obj_lock);
	ofx_verbs_set(NULL);
}

/* ---- handle arguments --------------------------------------------------------- */

/*
 * X(id, slot, argument number, type it must be, expected subtype,
 *   status for NULL (or NULL_LEGAL), (call arguments with the handle as x))
 */
#define HANDLE_CASES(X)                                                                       \
	X(ia_query, ia_query, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                       \
	  (x, NULL, DAT_IA_FIELD_ALL, &out_param.ia, DAT_PROVIDER_FIELD_ALL, &out_param.prov)) \
	X(ia_close, ia_close, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                       \
	  (x, DAT_CLOSE_ABRUPT_FLAG))                                                         \
	X(set_context, set_consumer_context, 1, ANY, DAT_INVALID_HANDLE1, NULL_LEGAL,         \
	  (x, out_ctx))                                                                       \
	X(get_context, get_consumer_context, 1, ANY, DAT_INVALID_HANDLE1, NULL_LEGAL,         \
	  (x, &out_ctx))                                                                      \
	X(get_handle_type, get_handle_type, 1, ANY, DAT_INVALID_HANDLE1, NULL_LEGAL,          \
	  (x, &out_type))                                                                     \
	X(cno_create, cno_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, f.agent, &out_h))                                                               \
	X(cno_modify_agent, cno_modify_agent, 1, CNO, DAT_INVALID_HANDLE_CNO, NULL_LEGAL,     \
	  (x, f.agent))                                                                       \
	X(cno_query, cno_query, 1, CNO, DAT_INVALID_HANDLE_CNO, NULL_LEGAL,                   \
	  (x, DAT_CNO_FIELD_IA_HANDLE, &out_param.cno))                                       \
	X(cno_free, cno_free, 1, CNO, DAT_INVALID_HANDLE_CNO, NULL_LEGAL, (x))                \
	X(cno_wait, cno_wait, 1, CNO, DAT_INVALID_HANDLE_CNO, NULL_LEGAL, (x, 0, &out_h))     \
	X(cr_query, cr_query, 1, CR, DAT_INVALID_HANDLE_CR, NULL_LEGAL,                       \
	  (x, DAT_CR_FIELD_ALL, &out_param.cr))                                               \
	X(cr_accept, cr_accept, 1, CR, DAT_INVALID_HANDLE_CR, NULL_LEGAL, (x, f.ep, 0, NULL)) \
	X(cr_accept_ep, cr_accept, 2, EP, DAT_INVALID_HANDLE_EP, HANDLE_ERR(EP),              \
	  (f.cr, x, 0, NULL))                                                                 \
	X(cr_reject, cr_reject, 1, CR, DAT_INVALID_HANDLE_CR, NULL_LEGAL, (x, 0, NULL))       \
	X(cr_handoff, cr_handoff, 1, CR, DAT_INVALID_HANDLE_CR, NULL_LEGAL, (x, 4793))        \
	X(evd_create, evd_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &out_h))                                   \
	X(evd_create_cno, evd_create, 3, CNO, DAT_INVALID_HANDLE_CNO, NULL_LEGAL,             \
	  (&f.ia, 8, x, DAT_EVD_CR_FLAG, &out_h))                                             \
	X(evd_query, evd_query, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL,           \
	  (x, DAT_EVD_FIELD_ALL, &out_param.evd))                                             \
	X(evd_modify_cno, evd_modify_cno, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL, \
	  (x, DAT_HANDLE_NULL))                                                               \
	X(evd_modify_cno_cno, evd_modify_cno, 2, CNO, DAT_INVALID_HANDLE_CNO, DAT_SUCCESS,    \
	  (f.sw_evd, x))                                                                      \
	X(evd_enable, evd_enable, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL, (x))    \
	X(evd_disable, evd_disable, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL, (x))  \
	X(evd_wait, evd_wait, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL,             \
	  (x, 0, 1, &out_ev, &out_n))                                                         \
	X(evd_resize, evd_resize, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL, (x, 8)) \
	X(evd_post_se, evd_post_se, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL,       \
	  (x, &f.sw_event))                                                                   \
	X(evd_dequeue, evd_dequeue, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL,       \
	  (x, &out_ev))                                                                       \
	X(evd_free, evd_free, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, NULL_LEGAL, (x))        \
	X(evd_set_unwaitable, evd_set_unwaitable, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST,     \
	  NULL_LEGAL, (x))                                                                    \
	X(evd_clear_unwaitable, evd_clear_unwaitable, 1, EVD, DAT_INVALID_HANDLE_EVD_REQUEST, \
	  NULL_LEGAL, (x))                                                                    \
	X(ep_create, ep_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                     \
	  (x, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, NULL, &out_h))                          \
	X(ep_create_pz, ep_create, 2, PZ, DAT_INVALID_HANDLE_PZ, NULL_LEGAL,                  \
	  (&f.ia, x, f.dto_evd, f.dto_evd, f.conn_evd, NULL, &out_h))                         \
	X(ep_create_recv, ep_create, 3, EVD, DAT_INVALID_HANDLE_EVD_RECV, OFX_INVALID_ARG(6), \
	  (&f.ia, f.pz, x, f.dto_evd, f.conn_evd, NULL, &out_h))                              \
	X(ep_create_req, ep_create, 4, EVD, DAT_INVALID_HANDLE_EVD_REQUEST,                   \
	  OFX_INVALID_ARG(6), (&f.ia, f.pz, f.dto_evd, x, f.conn_evd, NULL, &out_h))          \
	X(ep_create_conn, ep_create, 5, EVD, DAT_INVALID_HANDLE_EVD_CONN, NULL_LEGAL,         \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, x, NULL, &out_h))                               \
	X(ep_create_srq, ep_create_with_srq, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,        \
	  (x, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, f.srq, &f.srq_ep_attr, &out_h))         \
	X(ep_create_srq_pz, ep_create_with_srq, 2, PZ, DAT_INVALID_HANDLE_PZ, HANDLE_ERR(PZ), \
	  (&f.ia, x, f.dto_evd, f.dto_evd, f.conn_evd, f.srq, &f.srq_ep_attr, &out_h))        \
	X(ep_create_srq_recv, ep_create_with_srq, 3, EVD, DAT_INVALID_HANDLE_EVD_RECV,        \
	  HANDLE_ERR(EVD_RECV),                                                               \
	  (&f.ia, f.pz, x, f.dto_evd, f.conn_evd, f.srq, &f.srq_ep_attr, &out_h))             \
	X(ep_create_srq_req, ep_create_with_srq, 4, EVD, DAT_INVALID_HANDLE_EVD_REQUEST,      \
	  OFX_INVALID_ARG(7),                                                                 \
	  (&f.ia, f.pz, f.dto_evd, x, f.conn_evd, f.srq, &f.srq_ep_attr, &out_h))             \
	X(ep_create_srq_conn, ep_create_with_srq, 5, EVD, DAT_INVALID_HANDLE_EVD_CONN,        \
	  NULL_LEGAL, (&f.ia, f.pz, f.dto_evd, f.dto_evd, x, f.srq, &f.srq_ep_attr, &out_h))  \
	X(ep_create_srq_srq, ep_create_with_srq, 6, SRQ, DAT_INVALID_HANDLE_SRQ,              \
	  HANDLE_ERR(SRQ),                                                                    \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, x, &f.srq_ep_attr, &out_h))         \
	X(ep_query, ep_query, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,                       \
	  (x, DAT_EP_FIELD_ALL, &out_param.ep))                                               \
	X(ep_modify, ep_modify, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,                     \
	  (x, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, &out_param.ep))                    \
	X(ep_connect, ep_connect, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,                   \
	  (x, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT,       \
	   DAT_CONNECT_DEFAULT_FLAG))                                                         \
	X(ep_dup_connect, ep_dup_connect, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,           \
	  (x, f.rsp_ep, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT))                               \
	X(ep_dup_connect_dup, ep_dup_connect, 2, EP, DAT_INVALID_HANDLE_EP, HANDLE_ERR(EP),   \
	  (f.ep, x, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT))                                   \
	X(ep_disconnect, ep_disconnect, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,             \
	  (x, DAT_CLOSE_ABRUPT_FLAG))                                                         \
	X(ep_post_send, ep_post_send, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,               \
	  (x, 1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                              \
	X(ep_post_recv, ep_post_recv, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,               \
	  (x, 1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                              \
	X(ep_post_rdma_read, ep_post_rdma_read, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,     \
	  (x, 1, &f.iov, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))                  \
	X(ep_post_rdma_write, ep_post_rdma_write, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,   \
	  (x, 1, &f.iov, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))                  \
	X(ep_get_status, ep_get_status, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,             \
	  (x, &out_state, &out_bool, &out_bool))                                              \
	X(ep_free, ep_free, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL, (x))                    \
	X(ep_reset, ep_reset, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL, (x))                  \
	X(ep_recv_query, ep_recv_query, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,             \
	  (x, &out_n, &out_n2))                                                               \
	X(ep_set_watermark, ep_set_watermark, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,       \
	  (x, 1, 1))                                                                          \
	X(ep_common_connect, ep_common_connect, 1, EP, DAT_INVALID_HANDLE_EP, NULL_LEGAL,     \
	  (x, (DAT_IA_ADDRESS_PTR)&f.peer, 1000000, 0, NULL))                                 \
	X(ep_post_send_inv, ep_post_send_with_invalidate, 1, EP, DAT_INVALID_HANDLE_EP,       \
	  NULL_LEGAL, (x, 1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, 0x2222)) \
	X(ep_post_read_to_rmr, ep_post_rdma_read_to_rmr, 1, EP, DAT_INVALID_HANDLE_EP,        \
	  NULL_LEGAL, (x, &f.rmr_iov, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))     \
	X(lmr_create, lmr_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, DAT_MEM_TYPE_VIRTUAL, f.region, 64, f.pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,         \
	   DAT_VA_TYPE_VA, &out_h, &out_lctx, &out_rctx, &out_vlen, &out_va))                 \
	X(lmr_create_pz, lmr_create, 5, PZ, DAT_INVALID_HANDLE_PZ, HANDLE_ERR(PZ),            \
	  (&f.ia, DAT_MEM_TYPE_VIRTUAL, f.region, 64, x, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,        \
	   DAT_VA_TYPE_VA, &out_h, &out_lctx, &out_rctx, &out_vlen, &out_va))                 \
	X(lmr_create_lmr, lmr_create, 3, LMR, DAT_INVALID_HANDLE_LMR, HANDLE_ERR(LMR),        \
	  (&f.ia, DAT_MEM_TYPE_LMR, (DAT_REGION_DESCRIPTION){ .for_lmr_handle = x }, 0, f.pz,  \
	   DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &out_h, &out_lctx, &out_rctx,       \
	   &out_vlen, &out_va))                                                               \
	X(lmr_query, lmr_query, 1, LMR, DAT_INVALID_HANDLE_LMR, NULL_LEGAL,                   \
	  (x, DAT_LMR_FIELD_ALL, &out_param.lmr))                                             \
	X(lmr_free, lmr_free, 1, LMR, DAT_INVALID_HANDLE_LMR, NULL_LEGAL, (x))                \
	X(lmr_sync_rdma_read, lmr_sync_rdma_read, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,   \
	  (x, &f.iov, 1))                                                                     \
	X(lmr_sync_rdma_write, lmr_sync_rdma_write, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL, \
	  (x, &f.iov, 1))                                                                     \
	X(rmr_create, rmr_create, 1, PZ, DAT_INVALID_HANDLE_PZ, NULL_LEGAL, (x, &out_h))      \
	X(rmr_create_for_ep, rmr_create_for_ep, 1, PZ, DAT_INVALID_HANDLE_PZ, NULL_LEGAL,     \
	  (x, &out_h))                                                                        \
	X(rmr_query, rmr_query, 1, RMR, DAT_INVALID_HANDLE_RMR, NULL_LEGAL,                   \
	  (x, DAT_RMR_FIELD_ALL, &out_param.rmr))                                             \
	X(rmr_bind, rmr_bind, 1, RMR, DAT_INVALID_HANDLE_RMR, NULL_LEGAL,                     \
	  (x, f.lmr, &f.iov, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, f.ep, f.rcookie,   \
	   DAT_COMPLETION_DEFAULT_FLAG, &out_rctx))                                           \
	X(rmr_bind_lmr, rmr_bind, 2, LMR, DAT_INVALID_HANDLE_LMR, NULL_LEGAL,                 \
	  (f.rmr, x, &f.iov, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, f.ep, f.rcookie,   \
	   DAT_COMPLETION_DEFAULT_FLAG, &out_rctx))                                           \
	X(rmr_bind_ep, rmr_bind, 6, EP, DAT_INVALID_HANDLE_EP, HANDLE_ERR(EP),                \
	  (f.rmr, f.lmr, &f.iov, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, x, f.rcookie,  \
	   DAT_COMPLETION_DEFAULT_FLAG, &out_rctx))                                           \
	X(rmr_free, rmr_free, 1, RMR, DAT_INVALID_HANDLE_RMR, NULL_LEGAL, (x))                \
	X(psp_create, psp_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, 4800, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &out_h))                                 \
	X(psp_create_evd, psp_create, 3, EVD, DAT_INVALID_HANDLE_EVD_CR, HANDLE_ERR(EVD_CR),  \
	  (&f.ia, 4800, x, DAT_PSP_CONSUMER_FLAG, &out_h))                                    \
	X(psp_query, psp_query, 1, PSP, DAT_INVALID_HANDLE_PSP, NULL_LEGAL,                   \
	  (x, DAT_PSP_FIELD_ALL, &out_param.psp))                                             \
	X(psp_free, psp_free, 1, PSP, DAT_INVALID_HANDLE_PSP, NULL_LEGAL, (x))                \
	X(psp_create_any, psp_create_any, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,           \
	  (x, &out_qual, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &out_h))                            \
	X(psp_create_any_evd, psp_create_any, 3, EVD, DAT_INVALID_HANDLE_EVD_CR,              \
	  HANDLE_ERR(EVD_CR), (&f.ia, &out_qual, x, DAT_PSP_CONSUMER_FLAG, &out_h))           \
	X(rsp_create, rsp_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, 4801, f.ep, f.cr_evd, &out_h))                                                  \
	X(rsp_create_ep, rsp_create, 3, EP, DAT_INVALID_HANDLE_EP, HANDLE_ERR(EP),            \
	  (&f.ia, 4801, x, f.cr_evd, &out_h))                                                 \
	X(rsp_create_evd, rsp_create, 4, EVD, DAT_INVALID_HANDLE_EVD_CR, HANDLE_ERR(EVD_CR),  \
	  (&f.ia, 4801, f.ep, x, &out_h))                                                     \
	X(rsp_query, rsp_query, 1, RSP, DAT_INVALID_HANDLE_RSP, NULL_LEGAL,                   \
	  (x, DAT_RSP_FIELD_ALL, &out_param.rsp))                                             \
	X(rsp_free, rsp_free, 1, RSP, DAT_INVALID_HANDLE_RSP, NULL_LEGAL, (x))                \
	X(pz_create, pz_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL, (x, &out_h))        \
	X(pz_query, pz_query, 1, PZ, DAT_INVALID_HANDLE_PZ, NULL_LEGAL,                       \
	  (x, DAT_PZ_FIELD_ALL, &out_param.pz))                                               \
	X(pz_free, pz_free, 1, PZ, DAT_INVALID_HANDLE_PZ, NULL_LEGAL, (x))                    \
	X(srq_create, srq_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, f.pz, &f.srq_attr, &out_h))                                                     \
	X(srq_create_pz, srq_create, 2, PZ, DAT_INVALID_HANDLE_PZ, HANDLE_ERR(PZ),            \
	  (&f.ia, x, &f.srq_attr, &out_h))                                                    \
	X(srq_free, srq_free, 1, SRQ, DAT_INVALID_HANDLE_SRQ, NULL_LEGAL, (x))                \
	X(srq_post_recv, srq_post_recv, 1, SRQ, DAT_INVALID_HANDLE_SRQ, NULL_LEGAL,           \
	  (x, 1, &f.iov, f.cookie))                                                           \
	X(srq_query, srq_query, 1, SRQ, DAT_INVALID_HANDLE_SRQ, NULL_LEGAL,                   \
	  (x, DAT_SRQ_FIELD_ALL, &out_param.srq))                                             \
	X(srq_resize, srq_resize, 1, SRQ, DAT_INVALID_HANDLE_SRQ, NULL_LEGAL, (x, 16))        \
	X(srq_set_lw, srq_set_lw, 1, SRQ, DAT_INVALID_HANDLE_SRQ, NULL_LEGAL, (x, 2))         \
	X(csp_create, csp_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,                   \
	  (x, NULL, (DAT_IA_ADDRESS_PTR)&f.self, f.conn_evd, &out_h))                         \
	X(csp_create_evd, csp_create, 4, EVD, DAT_INVALID_HANDLE_EVD_CONN,                    \
	  HANDLE_ERR(EVD_CONN), (&f.ia, NULL, (DAT_IA_ADDRESS_PTR)&f.self, x, &out_h))        \
	X(csp_query, csp_query, 1, CSP, DAT_INVALID_HANDLE_CSP, NULL_LEGAL,                   \
	  (x, DAT_CSP_FIELD_ALL, &out_param.csp))                                             \
	X(csp_free, csp_free, 1, CSP, DAT_INVALID_HANDLE_CSP, NULL_LEGAL, (x))                \
	X(cno_fd_create, cno_fd_create, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,             \
	  (x, &out_fd, &out_h))                                                               \
	X(cno_trigger, cno_trigger, 1, CNO, DAT_INVALID_HANDLE_CNO, NULL_LEGAL, (x, &out_h))  \
	X(ia_ha_related, ia_ha_related, 1, IA, DAT_INVALID_HANDLE_IA, NULL_LEGAL,             \
	  (x, "ofx-other", &out_bool))

/* One thunk per row: the slot called through the table with `x` in its place. */
#define HANDLE_THUNK(id, slot, arg, type, sub, null_status, args) \
	static DAT_RETURN hcase_##id(DAT_HANDLE x)                \
	{                                                         \
		return P->slot##_func args;                       \
	}
HANDLE_CASES(HANDLE_THUNK)
#undef HANDLE_THUNK

/* dat_extension_op: the handle is the EP of the op, or the IA of close_query. */
static DAT_RETURN hcase_ext_write_immed(DAT_HANDLE x)
{
	return ext_op(x, DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)1, &f.iov, f.cookie, &f.rmr_iov,
		      (DAT_UINT32)7, (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN hcase_ext_cmp_and_swap(DAT_HANDLE x)
{
	return ext_op(x, DAT_IB_CMP_AND_SWAP_OP, (DAT_UINT64)1, (DAT_UINT64)2, &f.iov, f.cookie,
		      &f.rmr_iov, (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN hcase_ext_fetch_and_add(DAT_HANDLE x)
{
	return ext_op(x, DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)1, &f.iov, f.cookie, &f.rmr_iov,
		      (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN hcase_ext_close_query(DAT_HANDLE x)
{
	return ext_op(x, DAT_IB_CLOSE_QUERY_OP);
}

struct handle_case {
	const char *id;
	const char *slot;
	size_t offset;			/* of the slot in DAT_PROVIDER */
	int arg;
	enum ofx_obj_type type;		/* ANY: every live object is acceptable */
	DAT_RETURN_SUBTYPE sub;
	DAT_RETURN null_status;		/* NULL_LEGAL: NULL is not bad input here */
	DAT_RETURN (*call)(DAT_HANDLE x);
};

#define HANDLE_ROW(id, slot, arg, type, sub, null_status, args)                            \
	{ #id, #slot, offsetof(DAT_PROVIDER, slot##_func), arg, OFX_OBJ_##type, sub,       \
	  null_status, hcase_##id },
#define EXT_ROW(id, arg, type, sub)                                                        \
	{ "ext_" #id, "handle_extendedop", offsetof(DAT_PROVIDER, handle_extendedop_func), \
	  arg, OFX_OBJ_##type, sub, NULL_LEGAL, hcase_ext_##id },

static const struct handle_case handle_cases[] = {
	HANDLE_CASES(HANDLE_ROW)
	EXT_ROW(write_immed, 1, EP, DAT_INVALID_HANDLE_EP)
	EXT_ROW(cmp_and_swap, 1, EP, DAT_INVALID_HANDLE_EP)
	EXT_ROW(fetch_and_add, 1, EP, DAT_INVALID_HANDLE_EP)
	EXT_ROW(close_query, 1, IA, DAT_INVALID_HANDLE_IA)
};
#undef HANDLE_ROW
#undef EXT_ROW

/* ---- other arguments ------------------------------------------------------------ */

static char long_name[DAT_NAME_MAX_LENGTH + 64];
static DAT_EP_ATTR bad_ep_attr;
static DAT_SRQ_ATTR bad_srq_attr;
static DAT_EVENT bad_event;
static DAT_NAMED_ATTR p2p_maybe = { "P2P", "maybe" };
static struct sockaddr_un unix_addr = { .sun_family = AF_UNIX, .sun_path = "x" };
static struct sockaddr_in no_port = { .sin_family = AF_INET };
static DAT_LMR_TRIPLET short_iov = { .segment_length = 4 };

/* Default EP attributes with one field broken (the thunk breaks it first). */
static const DAT_EP_ATTR *ep_attr_with(int which)
{
	bad_ep_attr = f.srq_ep_attr;
	bad_ep_attr.max_recv_dtos = 4;
	switch (which) {
	case 0:
		bad_ep_attr.service_type = (DAT_SERVICE_TYPE)0x77;
		break;
	case 1:
		bad_ep_attr.max_recv_dtos = -1;
		break;
	case 2:
		bad_ep_attr.max_request_dtos = 1 << 30;
		break;
	case 3:
		bad_ep_attr.max_request_iov = 1000;
		break;
	case 4:
		bad_ep_attr.ep_provider_specific_count = 2;
		bad_ep_attr.ep_provider_specific = NULL;
		break;
	case 5:
		bad_ep_attr.ep_provider_specific_count = 1;
		bad_ep_attr.ep_provider_specific = &p2p_maybe;
		break;
	}
	return &bad_ep_attr;
}

static DAT_SRQ_ATTR *srq_attr_with(DAT_COUNT dtos, DAT_COUNT iov, DAT_COUNT lw)
{
	bad_srq_attr = (DAT_SRQ_ATTR){ .max_recv_dtos = dtos, .max_recv_iov = iov,
				       .low_watermark = lw };
	return &bad_srq_attr;
}

static const DAT_EVENT *event_numbered(DAT_EVENT_NUMBER num)
{
	bad_event.event_number = num;
	return &bad_event;
}

static const char *overlong_name(void)
{
	memset(long_name, 'x', sizeof(long_name) - 1);
	return long_name;
}

#define DTO_FLAGS_BAD ((DAT_COMPLETION_FLAGS)0x400)

/* X(id, slot, expected status, (call arguments)) */
#define ARG_CASES(X)                                                                          \
	X(ia_open_name, ia_open, OFX_INVALID_ARG(1), (NULL, 8, &out_h, &out_h))               \
	X(ia_open_out, ia_open, OFX_INVALID_ARG(4), ("ofx-badinput", 8, &out_h, NULL))        \
	X(ia_open_unknown, ia_open,                                                           \
	  OFX_DAT_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED),                       \
	  ("ofx-no-such-ia", 8, &out_h, &out_h))                                              \
	X(ia_open_long, ia_open, OFX_DAT_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED), \
	  ((DAT_NAME_PTR)overlong_name(), 8, &out_h, &out_h))                                 \
	X(ia_query_nulls, ia_query, DAT_SUCCESS, (&f.ia, NULL, DAT_IA_FIELD_ALL, NULL,        \
						  DAT_PROVIDER_FIELD_ALL, NULL))              \
	X(ia_close_flags, ia_close, OFX_INVALID_ARG(2), (&f.ia, (DAT_CLOSE_FLAGS)0x55))       \
	X(get_context_out, get_consumer_context, OFX_INVALID_ARG(2), (f.ep, NULL))            \
	X(get_handle_type_out, get_handle_type, OFX_INVALID_ARG(2), (f.ep, NULL))             \
	X(set_context_ok, set_consumer_context, DAT_SUCCESS, (f.ep, out_ctx))                 \
	X(cno_create_out, cno_create, OFX_INVALID_ARG(3), (&f.ia, f.agent, NULL))             \
	X(cno_query_mask, cno_query, OFX_INVALID_ARG(2), (f.cno, 0x100, &out_param.cno))      \
	X(cno_query_out, cno_query, OFX_INVALID_ARG(3), (f.cno, DAT_CNO_FIELD_ALL, NULL))     \
	X(cno_wait_out, cno_wait, OFX_INVALID_ARG(3), (f.cno, 0, NULL))                       \
	X(cno_modify_agent_ok, cno_modify_agent, DAT_SUCCESS, (f.cno, f.agent))               \
	X(cr_query_out, cr_query, OFX_INVALID_ARG(3), (f.cr, DAT_CR_FIELD_ALL, NULL))         \
	X(cr_query_mask, cr_query, OFX_INVALID_ARG(2), (f.cr, 0x100, &out_param.cr))          \
	X(cr_accept_len, cr_accept, OFX_INVALID_ARG(3), (f.cr, f.ep, -1, f.buf))              \
	X(cr_accept_huge, cr_accept, OFX_INVALID_ARG(3), (f.cr, f.ep, 1 << 20, f.buf))        \
	X(cr_accept_pdata, cr_accept, OFX_INVALID_ARG(4), (f.cr, f.ep, 8, NULL))              \
	X(cr_reject_len, cr_reject, OFX_INVALID_ARG(2), (f.cr, -1, f.buf))                    \
	X(cr_reject_huge, cr_reject, OFX_INVALID_ARG(2), (f.cr, 1 << 20, f.buf))              \
	X(cr_reject_pdata, cr_reject, OFX_INVALID_ARG(3), (f.cr, 8, NULL))                    \
	X(cr_handoff_no_psp, cr_handoff, OFX_INVALID_ARG(2), (f.cr, 4793))                    \
	X(cr_handoff_rsp_qual, cr_handoff, OFX_INVALID_ARG(2), (f.cr, 4792))                  \
	X(evd_create_qlen0, evd_create, OFX_INVALID_ARG(2),                                   \
	  (&f.ia, 0, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &out_h))                               \
	X(evd_create_qlen_neg, evd_create, OFX_INVALID_ARG(2),                                \
	  (&f.ia, -5, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &out_h))                              \
	X(evd_create_qlen_huge, evd_create, OFX_INVALID_ARG(2),                               \
	  (&f.ia, INT32_MAX, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &out_h))                      \
	X(evd_create_flags0, evd_create, OFX_INVALID_ARG(4),                                  \
	  (&f.ia, 8, DAT_HANDLE_NULL, 0, &out_h))                                             \
	X(evd_create_flags_bad, evd_create, OFX_INVALID_ARG(4),                               \
	  (&f.ia, 8, DAT_HANDLE_NULL, 0x8000, &out_h))                                        \
	X(evd_create_async, evd_create, OFX_INVALID_ARG(4),                                   \
	  (&f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_ASYNC_FLAG, &out_h))                            \
	X(evd_create_out, evd_create, OFX_INVALID_ARG(5),                                     \
	  (&f.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, NULL))                                 \
	X(evd_query_out, evd_query, OFX_INVALID_ARG(3), (f.cr_evd, DAT_EVD_FIELD_ALL, NULL))  \
	X(evd_query_mask, evd_query, OFX_INVALID_ARG(2), (f.cr_evd, 0x100, &out_param.evd))   \
	X(evd_wait_thr0, evd_wait, OFX_INVALID_ARG(3), (f.cr_evd, 0, 0, &out_ev, &out_n))     \
	X(evd_wait_thr_neg, evd_wait, OFX_INVALID_ARG(3), (f.cr_evd, 0, -1, &out_ev, &out_n)) \
	X(evd_wait_thr_huge, evd_wait, OFX_INVALID_ARG(3),                                    \
	  (f.dto_evd, 0, INT32_MAX, &out_ev, &out_n))                                         \
	X(evd_wait_out, evd_wait, OFX_INVALID_ARG(4), (f.cr_evd, 0, 1, NULL, &out_n))         \
	X(evd_resize_0, evd_resize, OFX_INVALID_ARG(2), (f.cr_evd, 0))                        \
	X(evd_resize_neg, evd_resize, OFX_INVALID_ARG(2), (f.cr_evd, -1))                     \
	X(evd_resize_huge, evd_resize, OFX_INVALID_ARG(2), (f.cr_evd, INT32_MAX))             \
	X(evd_post_se_null, evd_post_se, OFX_INVALID_ARG(2), (f.sw_evd, NULL))                \
	X(evd_post_se_num, evd_post_se, OFX_INVALID_ARG(2),                                   \
	  (f.sw_evd, event_numbered(DAT_CONNECTION_EVENT_ESTABLISHED)))                       \
	X(evd_post_se_kind, evd_post_se, OFX_INVALID_ARG(1), (f.cr_evd, &f.sw_event))         \
	X(evd_dequeue_out, evd_dequeue, OFX_INVALID_ARG(2), (f.cr_evd, NULL))                 \
	X(evd_modify_cno_ok, evd_modify_cno, DAT_SUCCESS, (f.cr_evd, DAT_HANDLE_NULL))        \
	X(evd_enable_ok, evd_enable, DAT_SUCCESS, (f.cr_evd))                                 \
	X(evd_disable_ok, evd_disable, DAT_SUCCESS, (f.sw_evd))                               \
	X(evd_set_unwaitable_ok, evd_set_unwaitable, DAT_SUCCESS, (f.sw_evd))                 \
	X(evd_clear_unwaitable_ok, evd_clear_unwaitable, DAT_SUCCESS, (f.sw_evd))             \
	X(evd_free_in_use, evd_free, OFX_DAT_ERR(DAT_INVALID_STATE,                           \
						 DAT_INVALID_STATE_EVD_IN_USE), (f.dto_evd))  \
	X(ep_create_out, ep_create, OFX_INVALID_ARG(7),                                       \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, NULL, NULL))                        \
	X(ep_create_service, ep_create, OFX_INVALID_ARG(6),                                   \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, ep_attr_with(0), &out_h))           \
	X(ep_create_neg_dtos, ep_create, OFX_INVALID_ARG(6),                                  \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, ep_attr_with(1), &out_h))           \
	X(ep_create_huge_dtos, ep_create, OFX_INVALID_ARG(6),                                 \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, ep_attr_with(2), &out_h))           \
	X(ep_create_huge_iov, ep_create, OFX_INVALID_ARG(6),                                  \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, ep_attr_with(3), &out_h))           \
	X(ep_create_named_null, ep_create, OFX_INVALID_ARG(6),                                \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, ep_attr_with(4), &out_h))           \
	X(ep_create_named_bad, ep_create, OFX_INVALID_ARG(6),                                 \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, ep_attr_with(5), &out_h))           \
	X(ep_create_recv_kind, ep_create, HANDLE_ERR(EVD_RECV),                               \
	  (&f.ia, f.pz, f.cr_evd, f.dto_evd, f.conn_evd, NULL, &out_h))                       \
	X(ep_create_req_kind, ep_create, HANDLE_ERR(EVD_REQUEST),                             \
	  (&f.ia, f.pz, f.dto_evd, f.conn_evd, f.conn_evd, NULL, &out_h))                     \
	X(ep_create_conn_kind, ep_create, HANDLE_ERR(EVD_CONN),                               \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.dto_evd, NULL, &out_h))                       \
	X(ep_create_srq_out, ep_create_with_srq, OFX_INVALID_ARG(8),                          \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, f.srq, &f.srq_ep_attr, NULL))       \
	X(ep_create_srq_attr, ep_create_with_srq, OFX_INVALID_ARG(7),                         \
	  (&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd, f.srq, ep_attr_with(1), &out_h))    \
	X(ep_query_out, ep_query, OFX_INVALID_ARG(3), (f.ep, DAT_EP_FIELD_ALL, NULL))         \
	X(ep_query_mask, ep_query, OFX_INVALID_ARG(2),                                        \
	  (f.ep, DAT_EP_FIELD_ALL + 1, &out_param.ep))                                        \
	X(ep_modify_out, ep_modify, OFX_INVALID_ARG(3),                                       \
	  (f.ep, DAT_EP_FIELD_EP_ATTR_PROVIDER_SPECIFIC_ATTR, NULL))                          \
	X(ep_modify_mask, ep_modify, OFX_INVALID_ARG(2),                                      \
	  (f.ep, DAT_EP_FIELD_ALL + 1, &out_param.ep))                                        \
	X(ep_connect_addr, ep_connect, OFX_INVALID_ARG(2),                                    \
	  (f.ep, NULL, 4791, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG)) \
	X(ep_connect_family, ep_connect, OFX_INVALID_ARG(2),                                  \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&unix_addr, 4791, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT,  \
	   DAT_CONNECT_DEFAULT_FLAG))                                                         \
	X(ep_connect_timeout, ep_connect, OFX_INVALID_ARG(4),                                 \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 0, 0, NULL, DAT_QOS_BEST_EFFORT,          \
	   DAT_CONNECT_DEFAULT_FLAG))                                                         \
	X(ep_connect_len, ep_connect, OFX_INVALID_ARG(5),                                     \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 1000000, -1, f.buf, DAT_QOS_BEST_EFFORT,   \
	   DAT_CONNECT_DEFAULT_FLAG))                                                         \
	X(ep_connect_huge, ep_connect, OFX_INVALID_ARG(5),                                    \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 1000000, 1 << 20, f.buf,                  \
	   DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG))                                    \
	X(ep_connect_pdata, ep_connect, OFX_INVALID_ARG(6),                                   \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 1000000, 8, NULL, DAT_QOS_BEST_EFFORT,     \
	   DAT_CONNECT_DEFAULT_FLAG))                                                         \
	X(ep_connect_qos, ep_connect, OFX_INVALID_ARG(7),                                     \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 1000000, 0, NULL, (DAT_QOS)0x40,           \
	   DAT_CONNECT_DEFAULT_FLAG))                                                         \
	X(ep_connect_flags, ep_connect, OFX_INVALID_ARG(8),                                   \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 4791, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT,     \
	   (DAT_CONNECT_FLAGS)0x80))                                                          \
	X(ep_dup_connect_state, ep_dup_connect,                                               \
	  OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED),                   \
	  (f.ep, f.rsp_ep, 1000000, 0, NULL, DAT_QOS_BEST_EFFORT))                            \
	X(ep_disconnect_flags, ep_disconnect, OFX_INVALID_ARG(2),                             \
	  (f.ep, (DAT_CLOSE_FLAGS)0x77))                                                      \
	X(ep_post_send_neg, ep_post_send, OFX_INVALID_ARG(2),                                 \
	  (f.ep, -1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                          \
	X(ep_post_send_many, ep_post_send, OFX_INVALID_ARG(2),                                \
	  (f.ep, 1000, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                        \
	X(ep_post_send_iov, ep_post_send, OFX_INVALID_ARG(3),                                 \
	  (f.ep, 1, NULL, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                             \
	X(ep_post_send_flags, ep_post_send, OFX_INVALID_ARG(5),                               \
	  (f.ep, 1, &f.iov, f.cookie, DTO_FLAGS_BAD))                                         \
	X(ep_post_recv_neg, ep_post_recv, OFX_INVALID_ARG(2),                                 \
	  (f.ep, -1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                          \
	X(ep_post_recv_many, ep_post_recv, OFX_INVALID_ARG(2),                                \
	  (f.ep, 1000, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                        \
	X(ep_post_recv_iov, ep_post_recv, OFX_INVALID_ARG(3),                                 \
	  (f.ep, 1, NULL, f.cookie, DAT_COMPLETION_DEFAULT_FLAG))                             \
	X(ep_post_recv_flags, ep_post_recv, OFX_INVALID_ARG(5),                               \
	  (f.ep, 1, &f.iov, f.cookie, DTO_FLAGS_BAD))                                         \
	X(ep_post_read_neg, ep_post_rdma_read, OFX_INVALID_ARG(2),                            \
	  (f.ep, -1, &f.iov, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))              \
	X(ep_post_read_iov, ep_post_rdma_read, OFX_INVALID_ARG(3),                            \
	  (f.ep, 1, NULL, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))                 \
	X(ep_post_read_rmr, ep_post_rdma_read, OFX_INVALID_ARG(5),                            \
	  (f.ep, 1, &f.iov, f.cookie, NULL, DAT_COMPLETION_DEFAULT_FLAG))                     \
	X(ep_post_read_flags, ep_post_rdma_read, OFX_INVALID_ARG(6),                          \
	  (f.ep, 1, &f.iov, f.cookie, &f.rmr_iov, DTO_FLAGS_BAD))                             \
	X(ep_post_write_many, ep_post_rdma_write, OFX_INVALID_ARG(2),                         \
	  (f.ep, 1000, &f.iov, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))            \
	X(ep_post_write_iov, ep_post_rdma_write, OFX_INVALID_ARG(3),                          \
	  (f.ep, 1, NULL, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))                 \
	X(ep_post_write_rmr, ep_post_rdma_write, OFX_INVALID_ARG(5),                          \
	  (f.ep, 1, &f.iov, f.cookie, NULL, DAT_COMPLETION_DEFAULT_FLAG))                     \
	X(ep_post_write_flags, ep_post_rdma_write, OFX_INVALID_ARG(6),                        \
	  (f.ep, 1, &f.iov, f.cookie, &f.rmr_iov, DTO_FLAGS_BAD))                             \
	X(ep_get_status_nulls, ep_get_status, DAT_SUCCESS, (f.ep, NULL, NULL, NULL))          \
	X(ep_reset_ok, ep_reset, DAT_SUCCESS, (f.ep))                                         \
	X(ep_free_reserved, ep_free,                                                          \
	  OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PASSCONNPENDING), (f.rsp_ep))   \
	X(ep_recv_query_live, ep_recv_query, DAT_SUCCESS, (f.ep, &out_n, &out_n2))            \
	X(ep_recv_query_nulls, ep_recv_query, DAT_SUCCESS, (f.ep, NULL, NULL))                \
	X(ep_set_watermark_live, ep_set_watermark, DAT_SUCCESS, (f.ep, 1, 1))                 \
	X(ep_set_watermark_soft, ep_set_watermark, OFX_INVALID_ARG(2), (f.ep, -5, 1))         \
	X(ep_set_watermark_hard, ep_set_watermark, OFX_INVALID_ARG(3), (f.ep, 1, -5))         \
	X(ep_common_connect_addr, ep_common_connect, OFX_INVALID_ARG(2),                      \
	  (f.ep, NULL, 1000000, 0, NULL))                                                     \
	X(ep_common_connect_port, ep_common_connect, OFX_INVALID_ARG(2),                      \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&no_port, 1000000, 0, NULL))                             \
	X(ep_common_connect_timeout, ep_common_connect, OFX_INVALID_ARG(3),                   \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 0, 0, NULL))                                    \
	X(ep_common_connect_len, ep_common_connect, OFX_INVALID_ARG(4),                       \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 1000000, -1, NULL))                             \
	X(ep_common_connect_pdata, ep_common_connect, OFX_INVALID_ARG(5),                     \
	  (f.ep, (DAT_IA_ADDRESS_PTR)&f.peer, 1000000, 8, NULL))                              \
	X(ep_post_send_inv_flags, ep_post_send_with_invalidate, OFX_INVALID_ARG(5),           \
	  (f.ep, 1, &f.iov, f.cookie, DTO_FLAGS_BAD, DAT_TRUE, 0x2222))                       \
	X(ep_post_send_inv_bool, ep_post_send_with_invalidate, OFX_INVALID_ARG(6),            \
	  (f.ep, 1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG, (DAT_BOOLEAN)7, 0x2222))   \
	X(ep_post_send_inv_nocap, ep_post_send_with_invalidate, DAT_MODEL_NOT_SUPPORTED,      \
	  (f.ep, 1, &f.iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE, 0x2222))         \
	X(ep_post_read_to_rmr_local, ep_post_rdma_read_to_rmr, OFX_INVALID_ARG(2),            \
	  (f.ep, NULL, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))                    \
	X(ep_post_read_to_rmr_remote, ep_post_rdma_read_to_rmr, OFX_INVALID_ARG(4),           \
	  (f.ep, &f.rmr_iov, f.cookie, NULL, DAT_COMPLETION_DEFAULT_FLAG))                    \
	X(ep_post_read_to_rmr_live, ep_post_rdma_read_to_rmr, DAT_MODEL_NOT_SUPPORTED,        \
	  (f.ep, &f.rmr_iov, f.cookie, &f.rmr_iov, DAT_COMPLETION_DEFAULT_FLAG))              \
	X(lmr_create_out, lmr_create, OFX_INVALID_ARG(8),                                     \
	  (&f.ia, DAT_MEM_TYPE_VIRTUAL, f.region, 64, f.pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,     \
	   DAT_VA_TYPE_VA, NULL, NULL, NULL, NULL, NULL))                                     \
	X(lmr_create_len0, lmr_create, OFX_INVALID_ARG(4),                                    \
	  (&f.ia, DAT_MEM_TYPE_VIRTUAL, f.region, 0, f.pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,      \
	   DAT_VA_TYPE_VA, &out_h, NULL, NULL, NULL, NULL))                                   \
	X(lmr_create_va_null, lmr_create, OFX_INVALID_ARG(3),                                 \
	  (&f.ia, DAT_MEM_TYPE_VIRTUAL, (DAT_REGION_DESCRIPTION){ .for_va = NULL }, 64, f.pz,  \
	   DAT_MEM_PRIV_LOCAL_WRITE_FLAG, DAT_VA_TYPE_VA, &out_h, NULL, NULL, NULL, NULL))    \
	X(lmr_create_priv, lmr_create, OFX_INVALID_ARG(6),                                    \
	  (&f.ia, DAT_MEM_TYPE_VIRTUAL, f.region, 64, f.pz, (DAT_MEM_PRIV_FLAGS)0x40000000,    \
	   DAT_VA_TYPE_VA, &out_h, NULL, NULL, NULL, NULL))                                   \
	X(lmr_create_va_type, lmr_create, OFX_INVALID_ARG(7),                                 \
	  (&f.ia, DAT_MEM_TYPE_VIRTUAL, f.region, 64, f.pz, DAT_MEM_PRIV_LOCAL_WRITE_FLAG,     \
	   (DAT_VA_TYPE)0x77, &out_h, NULL, NULL, NULL, NULL))                                \
	X(lmr_query_out, lmr_query, OFX_INVALID_ARG(3), (f.lmr, DAT_LMR_FIELD_ALL, NULL))     \
	X(lmr_query_mask, lmr_query, OFX_INVALID_ARG(2), (f.lmr, 0x1000, &out_param.lmr))     \
	X(pz_free_in_use, pz_free, OFX_DAT_ERR(DAT_INVALID_STATE,                         \
						   DAT_INVALID_STATE_PZ_IN_USE), (f.pz))      \
	X(lmr_sync_read_iov, lmr_sync_rdma_read, OFX_INVALID_ARG(2), (&f.ia, NULL, 1))        \
	X(lmr_sync_write_iov, lmr_sync_rdma_write, OFX_INVALID_ARG(2), (&f.ia, NULL, 1))      \
	X(rmr_create_out, rmr_create, OFX_INVALID_ARG(2), (f.pz, NULL))                       \
	X(rmr_create_for_ep_out, rmr_create_for_ep, OFX_INVALID_ARG(2), (f.pz, NULL))         \
	X(rmr_query_mask, rmr_query, OFX_INVALID_ARG(2), (f.rmr, 0x80, &out_param.rmr))       \
	X(rmr_query_out, rmr_query, OFX_INVALID_ARG(3), (f.rmr, DAT_RMR_FIELD_ALL, NULL))     \
	X(rmr_bind_iov, rmr_bind, OFX_INVALID_ARG(3),                                         \
	  (f.rmr, f.lmr, NULL, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, f.ep, f.rcookie, \
	   DAT_COMPLETION_DEFAULT_FLAG, &out_rctx))                                           \
	X(rmr_bind_priv, rmr_bind, OFX_INVALID_ARG(4),                                        \
	  (f.rmr, f.lmr, &f.iov, (DAT_MEM_PRIV_FLAGS)0x40000000, DAT_VA_TYPE_VA, f.ep,         \
	   f.rcookie, DAT_COMPLETION_DEFAULT_FLAG, &out_rctx))                                \
	X(rmr_bind_va_type, rmr_bind, OFX_INVALID_ARG(5),                                     \
	  (f.rmr, f.lmr, &f.iov, DAT_MEM_PRIV_REMOTE_READ_FLAG, (DAT_VA_TYPE)0x77, f.ep,       \
	   f.rcookie, DAT_COMPLETION_DEFAULT_FLAG, &out_rctx))                                \
	X(rmr_bind_flags, rmr_bind, OFX_INVALID_ARG(8),                                       \
	  (f.rmr, f.lmr, &f.iov, DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, f.ep,          \
	   f.rcookie, DTO_FLAGS_BAD, &out_rctx))                                              \
	X(psp_create_flags, psp_create, OFX_INVALID_ARG(4),                                   \
	  (&f.ia, 4800, f.cr_evd, (DAT_PSP_FLAGS)0x10, &out_h))                               \
	X(psp_create_out, psp_create, OFX_INVALID_ARG(5),                                     \
	  (&f.ia, 4800, f.cr_evd, DAT_PSP_CONSUMER_FLAG, NULL))                               \
	X(psp_create_evd_kind, psp_create, HANDLE_ERR(EVD_CR),                                \
	  (&f.ia, 4800, f.dto_evd, DAT_PSP_CONSUMER_FLAG, &out_h))                            \
	X(psp_create_any_qual, psp_create_any, OFX_INVALID_ARG(2),                            \
	  (&f.ia, NULL, f.cr_evd, DAT_PSP_CONSUMER_FLAG, &out_h))                             \
	X(psp_create_any_flags, psp_create_any, OFX_INVALID_ARG(4),                           \
	  (&f.ia, &out_qual, f.cr_evd, (DAT_PSP_FLAGS)0x10, &out_h))                          \
	X(psp_create_any_out, psp_create_any, OFX_INVALID_ARG(5),                             \
	  (&f.ia, &out_qual, f.cr_evd, DAT_PSP_CONSUMER_FLAG, NULL))                          \
	X(psp_query_out, psp_query, OFX_INVALID_ARG(3), (f.psp, DAT_PSP_FIELD_ALL, NULL))     \
	X(psp_query_mask, psp_query, OFX_INVALID_ARG(2), (f.psp, 0x100, &out_param.psp))      \
	X(rsp_create_out, rsp_create, OFX_INVALID_ARG(5), (&f.ia, 4801, f.ep, f.cr_evd, NULL)) \
	X(rsp_create_evd_kind, rsp_create, HANDLE_ERR(EVD_CR),                                \
	  (&f.ia, 4801, f.ep, f.conn_evd, &out_h))                                            \
	X(rsp_create_reserved, rsp_create,                                                    \
	  OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY),                      \
	  (&f.ia, 4801, f.rsp_ep, f.cr_evd, &out_h))                                          \
	X(rsp_query_out, rsp_query, OFX_INVALID_ARG(3), (f.rsp, DAT_RSP_FIELD_ALL, NULL))     \
	X(rsp_query_mask, rsp_query, OFX_INVALID_ARG(2), (f.rsp, 0x100, &out_param.rsp))      \
	X(pz_create_out, pz_create, OFX_INVALID_ARG(2), (&f.ia, NULL))                        \
	X(pz_query_out, pz_query, OFX_INVALID_ARG(3), (f.pz, DAT_PZ_FIELD_ALL, NULL))         \
	X(pz_query_mask, pz_query, OFX_INVALID_ARG(2), (f.pz, 0x100, &out_param.pz))          \
	X(srq_create_attr, srq_create, OFX_INVALID_ARG(3), (&f.ia, f.pz, NULL, &out_h))       \
	X(srq_create_out, srq_create, OFX_INVALID_ARG(4), (&f.ia, f.pz, &f.srq_attr, NULL))   \
	X(srq_create_dtos0, srq_create, OFX_INVALID_ARG(3),                                   \
	  (&f.ia, f.pz, srq_attr_with(0, 1, 0), &out_h))                                      \
	X(srq_create_dtos_neg, srq_create, OFX_INVALID_ARG(3),                                \
	  (&f.ia, f.pz, srq_attr_with(-8, 1, 0), &out_h))                                     \
	X(srq_create_dtos_huge, srq_create, OFX_INVALID_ARG(3),                               \
	  (&f.ia, f.pz, srq_attr_with(INT32_MAX, 1, 0), &out_h))                              \
	X(srq_create_iov0, srq_create, OFX_INVALID_ARG(3),                                    \
	  (&f.ia, f.pz, srq_attr_with(8, 0, 0), &out_h))                                      \
	X(srq_create_lw_neg, srq_create, OFX_INVALID_ARG(3),                                  \
	  (&f.ia, f.pz, srq_attr_with(8, 1, -1), &out_h))                                     \
	X(srq_create_lw_huge, srq_create, OFX_INVALID_ARG(3),                                 \
	  (&f.ia, f.pz, srq_attr_with(8, 1, 8), &out_h))                                      \
	X(srq_post_recv_neg, srq_post_recv, OFX_INVALID_ARG(2), (f.srq, -1, &f.iov, f.cookie)) \
	X(srq_post_recv_many, srq_post_recv, OFX_INVALID_ARG(2),                              \
	  (f.srq, 1000, &f.iov, f.cookie))                                                    \
	X(srq_post_recv_iov, srq_post_recv, OFX_INVALID_ARG(3), (f.srq, 1, NULL, f.cookie))   \
	X(srq_query_out, srq_query, OFX_INVALID_ARG(3), (f.srq, DAT_SRQ_FIELD_ALL, NULL))     \
	X(srq_query_mask, srq_query, OFX_INVALID_ARG(2), (f.srq, 0x1000, &out_param.srq))     \
	X(srq_resize_0, srq_resize, OFX_INVALID_ARG(2), (f.srq, 0))                           \
	X(srq_resize_neg, srq_resize, OFX_INVALID_ARG(2), (f.srq, -1))                        \
	X(srq_resize_huge, srq_resize, OFX_INVALID_ARG(2), (f.srq, INT32_MAX))                \
	X(srq_set_lw_neg, srq_set_lw, OFX_INVALID_ARG(2), (f.srq, -1))                        \
	X(srq_set_lw_huge, srq_set_lw, OFX_INVALID_ARG(2), (f.srq, INT32_MAX))                \
	X(csp_create_addr, csp_create, OFX_INVALID_ARG(3), (&f.ia, NULL, NULL, f.conn_evd,   \
							    &out_h))                          \
	X(csp_create_port, csp_create, OFX_INVALID_ARG(3),                                    \
	  (&f.ia, NULL, (DAT_IA_ADDRESS_PTR)&no_port, f.conn_evd, &out_h))                    \
	X(csp_create_foreign, csp_create,                                                     \
	  OFX_DAT_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED),                  \
	  (&f.ia, NULL, (DAT_IA_ADDRESS_PTR)&f.peer, f.conn_evd, &out_h))                     \
	X(csp_create_evd_kind, csp_create, HANDLE_ERR(EVD_CONN),                              \
	  (&f.ia, NULL, (DAT_IA_ADDRESS_PTR)&f.self, f.cr_evd, &out_h))                       \
	X(csp_create_out, csp_create, OFX_INVALID_ARG(5),                                     \
	  (&f.ia, NULL, (DAT_IA_ADDRESS_PTR)&f.self, f.conn_evd, NULL))                       \
	X(csp_query_out, csp_query, OFX_INVALID_ARG(3), (f.csp, DAT_CSP_FIELD_ALL, NULL))     \
	X(csp_query_mask, csp_query, OFX_INVALID_ARG(2), (f.csp, 0x100, &out_param.csp))      \
	X(cno_fd_create_fd, cno_fd_create, OFX_INVALID_ARG(2), (&f.ia, NULL, &out_h))         \
	X(cno_fd_create_out, cno_fd_create, OFX_INVALID_ARG(3), (&f.ia, &out_fd, NULL))       \
	X(cno_trigger_out, cno_trigger, OFX_INVALID_ARG(2), (f.cno, NULL))                    \
	X(cno_trigger_empty, cno_trigger, DAT_QUEUE_EMPTY, (f.cno, &out_h))                   \
	X(ia_ha_related_name, ia_ha_related, OFX_INVALID_ARG(2), (&f.ia, NULL, &out_bool))    \
	X(ia_ha_related_out, ia_ha_related, OFX_INVALID_ARG(3), (&f.ia, "ofx-other", NULL))   \
	X(ia_ha_related_live, ia_ha_related, DAT_SUCCESS, (&f.ia, "ofx-other", &out_bool))

#define ARG_THUNK(id, slot, expect, args)       \
	static DAT_RETURN acase_##id(void)      \
	{                                       \
		return P->slot##_func args;     \
	}
ARG_CASES(ARG_THUNK)
#undef ARG_THUNK

static DAT_RETURN acase_ext_write_immed_rmr(void)
{
	return ext_op(f.ep, DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)1, &f.iov, f.cookie,
		      (DAT_RMR_TRIPLET *)NULL, (DAT_UINT32)7,
		      (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN acase_ext_write_immed_iov(void)
{
	return ext_op(f.ep, DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)1, (DAT_LMR_TRIPLET *)NULL,
		      f.cookie, &f.rmr_iov, (DAT_UINT32)7,
		      (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN acase_ext_write_immed_neg(void)
{
	return ext_op(f.ep, DAT_IB_RDMA_WRITE_IMMED_OP, (DAT_COUNT)-1, &f.iov, f.cookie,
		      &f.rmr_iov, (DAT_UINT32)7, (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN acase_ext_cmp_and_swap_lbuf(void)
{
	return ext_op(f.ep, DAT_IB_CMP_AND_SWAP_OP, (DAT_UINT64)1, (DAT_UINT64)2,
		      (DAT_LMR_TRIPLET *)NULL, f.cookie, &f.rmr_iov,
		      (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN acase_ext_fetch_and_add_short(void)
{
	return ext_op(f.ep, DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)1, &short_iov, f.cookie,
		      &f.rmr_iov, (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN acase_ext_fetch_and_add_rbuf(void)
{
	return ext_op(f.ep, DAT_IB_FETCH_AND_ADD_OP, (DAT_UINT64)1, &f.iov, f.cookie,
		      (DAT_RMR_TRIPLET *)NULL, (DAT_COMPLETION_FLAGS)DAT_COMPLETION_DEFAULT_FLAG);
}

static DAT_RETURN acase_ext_open_query_name(void)
{
	return ext_op(NULL, DAT_IB_OPEN_QUERY_OP, &out_h, (DAT_IA_ATTR_MASK)0,
		      (DAT_IA_ATTR *)NULL, (DAT_PROVIDER_ATTR_MASK)0, (DAT_PROVIDER_ATTR *)NULL);
}

static DAT_RETURN acase_ext_open_query_out(void)
{
	return ext_op("ofx-no-such-ia", DAT_IB_OPEN_QUERY_OP, (DAT_HANDLE *)NULL,
		      (DAT_IA_ATTR_MASK)0, (DAT_IA_ATTR *)NULL, (DAT_PROVIDER_ATTR_MASK)0,
		      (DAT_PROVIDER_ATTR *)NULL);
}

static DAT_RETURN acase_ext_unknown_op(void)
{
	return ext_op(f.ep, (DAT_EXTENDED_OP)9999);
}

struct arg_case {
	const char *id;
	const char *slot;
	size_t offset;
	DAT_RETURN expect;
	DAT_RETURN (*call)(void);
};

#define ARG_ROW(id, slot, expect, args) \
	{ #id, #slot, offsetof(DAT_PROVIDER, slot##_func), expect, acase_##id },
#define EXT_ROW(id, expect)                                                                \
	{ "ext_" #id, "handle_extendedop", offsetof(DAT_PROVIDER, handle_extendedop_func), \
	  expect, acase_ext_##id },

static const struct arg_case arg_cases[] = {
	ARG_CASES(ARG_ROW)
	EXT_ROW(write_immed_rmr, OFX_INVALID_ARG(5))
	EXT_ROW(write_immed_iov, OFX_INVALID_ARG(3))
	EXT_ROW(write_immed_neg, OFX_INVALID_ARG(2))
	EXT_ROW(cmp_and_swap_lbuf, OFX_INVALID_ARG(4))
	EXT_ROW(fetch_and_add_short, OFX_INVALID_ARG(3))
	EXT_ROW(fetch_and_add_rbuf, OFX_INVALID_ARG(5))
	EXT_ROW(open_query_name, OFX_INVALID_ARG(1))
	EXT_ROW(open_query_out, OFX_INVALID_ARG(2))
	EXT_ROW(unknown_op, NOT_IMPL)
};
#undef ARG_ROW
#undef EXT_ROW

/* ---- the walk ------------------------------------------------------------------------- */

#define SLOT_SIZE sizeof(DAT_IA_OPEN_FUNC)
#define FIRST_SLOT offsetof(DAT_PROVIDER, ia_open_func)
#define LAST_SLOT offsetof(DAT_PROVIDER, handle_extendedop_func)
#define NSLOTS ((LAST_SLOT - FIRST_SLOT) / SLOT_SIZE + 1)

static int failures;

static void check(const char *slot, const char *id, const char *with, DAT_RETURN got,
		  DAT_RETURN want)
{
	bool ok = got == want;

	CU_ASSERT(ok);
	if (ok)
		return;
	failures++;
	fprintf(stderr, "\n  %s (%s) with %s: got 0x%08x (type 0x%x sub 0x%x), "
		"want 0x%08x (type 0x%x sub 0x%x)", slot, id, with, got, DAT_GET_TYPE(got) >> 16,
		DAT_GET_SUBTYPE(got), want, DAT_GET_TYPE(want) >> 16, DAT_GET_SUBTYPE(want));
}

static void test_every_slot_has_a_bad_input_case(void)
{
	bool covered[NSLOTS] = { false };
	size_t i, n = 0;

	CU_ASSERT_EQUAL(NSLOTS * SLOT_SIZE, sizeof(DAT_PROVIDER) - FIRST_SLOT);
	for (i = 0; i < OFX_ARRAY_SIZE(handle_cases); i++)
		covered[(handle_cases[i].offset - FIRST_SLOT) / SLOT_SIZE] = true;
	for (i = 0; i < OFX_ARRAY_SIZE(arg_cases); i++)
		covered[(arg_cases[i].offset - FIRST_SLOT) / SLOT_SIZE] = true;
	for (i = 0; i < NSLOTS; i++) {
		if (covered[i])
			n++;
		else
			fprintf(stderr, "\n  DAT_PROVIDER function slot %zu has no bad-input case", i);
	}
	CU_ASSERT_EQUAL(n, NSLOTS);
	/* every slot is filled, so every case calls a function of ours */
	for (i = 0; i < NSLOTS; i++) {
		void (*const *fn)(void) = (void (*const *)(void))((const char *)
					   &ofx_provider_template + FIRST_SLOT + i * SLOT_SIZE);

		CU_ASSERT_PTR_NOT_NULL(*fn);
	}
}

static void test_wrong_freed_and_null_handles_are_refused(void)
{
	char with[64];

	fixture_up();
	failures = 0;
	for (size_t i = 0; i < OFX_ARRAY_SIZE(handle_cases); i++) {
		const struct handle_case *c = &handle_cases[i];
		DAT_RETURN want = OFX_DAT_ERR(DAT_INVALID_HANDLE, c->sub);
		enum ofx_obj_type freed = c->type == OFX_OBJ_ANY ? OFX_OBJ_EVD : c->type;

		/* (a) a live object of every other type */
		for (int j = 0; c->type != OFX_OBJ_ANY && j < f.nlive; j++) {
			if (f.live[j].type == c->type)
				continue;
			snprintf(with, sizeof(with), "arg %d = %s", c->arg, f.live[j].name);
			check(c->slot, c->id, with, c->call(f.live[j].h), want);
		}
		/* (b) a freed one of its own type */
		snprintf(with, sizeof(with), "arg %d = freed %s", c->arg, ofx_obj_type_str(freed));
		check(c->slot, c->id, with, c->call(f.freed[freed]), want);
		/* (c) NULL where it is a secondary handle */
		if (c->null_status != NULL_LEGAL) {
			snprintf(with, sizeof(with), "arg %d = NULL", c->arg);
			check(c->slot, c->id, with, c->call(DAT_HANDLE_NULL), c->null_status);
		}
	}
	/* nothing reached the device, and every object is still alive */
	CU_ASSERT_EQUAL(reached_device(), 0);
	for (int j = 0; j < f.nlive; j++) {
		struct ofx_obj *obj = f.live[j].h;

		CU_ASSERT_EQUAL(obj->type, f.live[j].type);
	}
	if (failures)
		fprintf(stderr, "\n  %d wrong answers\n", failures);
	fixture_down();
}

static void test_bad_arguments_are_refused(void)
{
	fixture_up();
	failures = 0;
	for (size_t i = 0; i < OFX_ARRAY_SIZE(arg_cases); i++) {
		const struct arg_case *c = &arg_cases[i];

		check(c->slot, c->id, "valid handles", c->call(), c->expect);
	}
	CU_ASSERT_EQUAL(reached_device(), 0);
	for (int j = 0; j < f.nlive; j++) {
		struct ofx_obj *obj = f.live[j].h;

		CU_ASSERT_EQUAL(obj->type, f.live[j].type);
	}
	if (failures)
		fprintf(stderr, "\n  %d wrong answers\n", failures);
	fixture_down();
}

/* ---- malformed ia_params ---------------------------------------------------------- */

static char log_path[] = "/tmp/ofx-badinput-log-XXXXXX";

/* Sends the log to the (emptied) capture file until capture_end(). */
static void capture_begin(void)
{
	int fd;

	fd = open(log_path, O_WRONLY | O_TRUNC);
	CU_ASSERT(fd >= 0);
	if (fd >= 0)
		close(fd);
	setenv("DAPL_OFX_LOG_FILE", log_path, 1);
	unsetenv("DAPL_OFX_LOG_LEVEL");
	unsetenv("DAPL_OFX_LOG_SUBSYS");
	ofx_log_fini();
	ofx_log_init();
}

static void capture_end(char *text, size_t len)
{
	ssize_t n;
	int fd;

	ofx_log_fini();
	unsetenv("DAPL_OFX_LOG_FILE");
	ofx_log_init();
	text[0] = '\0';
	fd = open(log_path, O_RDONLY);
	CU_ASSERT_FATAL(fd >= 0);
	n = read(fd, text, len - 1);
	close(fd);
	text[n > 0 ? n : 0] = '\0';
}

static int count_lines(const char *text)
{
	int n = 0;

	for (; *text; text++)
		n += *text == '\n';
	return n;
}

static void expect_one_line(const char *what, const char *text, const char *needle)
{
	bool ok = count_lines(text) == 1 && strstr(text, needle);

	CU_ASSERT(ok);
	if (!ok)
		fprintf(stderr, "\n  %s: want one line naming '%s', got:\n%s", what, needle, text);
}

/* A pending request on `psp` as the progress thread queues it, with a model cm_id. */
static struct ofx_cr *queued_cr(DAT_PSP_HANDLE psp_h, const char *pdata)
{
	struct ofx_sp *sp = ofx_sp_lookup(psp_h, OFX_OBJ_PSP);
	struct ofx_cr *cr = calloc(1, sizeof(*cr));

	CU_ASSERT_PTR_NOT_NULL_FATAL(cr);
	CU_ASSERT_EQUAL_FATAL(fake_cm_create_id(NULL, &cr->cm_id, &sp->obj, RDMA_PS_TCP), 0);
	cr->queue = &sp->crq;
	cr->pdata_len = (DAT_COUNT)strlen(pdata);
	memcpy(cr->pdata, pdata, cr->pdata_len);
	ofx_obj_init(&cr->obj, OFX_OBJ_CR, &f.ia);
	pthread_mutex_lock(&sp->lock);
	ofx_list_add_tail(&sp->crq.crs, &cr->sp_link);
	pthread_mutex_unlock(&sp->lock);
	return cr;
}

/* The CR of the one DAT_CONNECTION_REQUEST_EVENT queued on `evd`. */
static DAT_CR_HANDLE expect_cr_event(DAT_EVD_HANDLE evd, DAT_PSP_HANDLE psp, DAT_CONN_QUAL qual)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL_FATAL(P->evd_dequeue_func(evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	CU_ASSERT_PTR_EQUAL(ev.event_data.cr_arrival_event_data.sp_handle.psp_handle, psp);
	CU_ASSERT_EQUAL(ev.event_data.cr_arrival_event_data.conn_qual, qual);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(P->evd_dequeue_func(evd, &ev)), DAT_QUEUE_EMPTY);
	return ev.event_data.cr_arrival_event_data.cr_handle;
}

static void test_cr_handoff_moves_the_request_to_the_other_psp(void)
{
	DAT_EVD_HANDLE evd2;
	DAT_PSP_HANDLE psp2;
	DAT_CR_HANDLE moved, back;
	DAT_CR_PARAM param;
	struct ofx_cr *cr, *m;
	struct rdma_cm_id *id;
	DAT_EVENT ev;

	fixture_up();
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
						 &evd2), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(P->psp_create_func(&f.ia, 4793, evd2, DAT_PSP_CONSUMER_FLAG,
						 &psp2), DAT_SUCCESS);
	cr = queued_cr(f.psp, "hello");
	id = cr->cm_id;

	/* to 4793: a new CR on the other PSP's EVD, carrying the same request */
	CU_ASSERT_EQUAL(P->cr_handoff_func(cr, 4793), DAT_SUCCESS);
	moved = expect_cr_event(evd2, psp2, 4793);
	CU_ASSERT_PTR_NOT_EQUAL(moved, (DAT_CR_HANDLE)cr);
	m = ofx_cr_from_handle(moved);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	CU_ASSERT_PTR_EQUAL(m->cm_id, id);
	CU_ASSERT_PTR_EQUAL(id->context, &ofx_sp_lookup(psp2, OFX_OBJ_PSP)->cm_handler);
	CU_ASSERT_PTR_EQUAL(m->queue, &ofx_sp_lookup(psp2, OFX_OBJ_PSP)->crq);
	CU_ASSERT_TRUE(ofx_list_empty(&ofx_sp_lookup(f.psp, OFX_OBJ_PSP)->crq.crs));
	CU_ASSERT_EQUAL(P->cr_query_func(moved, DAT_CR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.private_data_size, 5);
	CU_ASSERT_EQUAL(memcmp(param.private_data, "hello", 5), 0);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(P->evd_dequeue_func(f.cr_evd, &ev)), DAT_QUEUE_EMPTY);

	/* no PSP on the qualifier (4792 is an RSP): refused, the CR stays put */
	CU_ASSERT_EQUAL(P->cr_handoff_func(moved, 4792), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(P->cr_handoff_func(moved, 4793), OFX_INVALID_ARG(2));
	CU_ASSERT_PTR_EQUAL(id->context, &ofx_sp_lookup(psp2, OFX_OBJ_PSP)->cm_handler);

	/* and back to 4791, then rejected: the id goes with the last CR */
	CU_ASSERT_EQUAL(P->cr_handoff_func(moved, 4791), DAT_SUCCESS);
	back = expect_cr_event(f.cr_evd, f.psp, 4791);
	CU_ASSERT_PTR_EQUAL(id->context, &ofx_sp_lookup(f.psp, OFX_OBJ_PSP)->cm_handler);
	CU_ASSERT_EQUAL(P->cr_reject_func(back, 0, NULL), DAT_SUCCESS);

	CU_ASSERT_EQUAL(P->psp_free_func(psp2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->evd_free_func(evd2), DAT_SUCCESS);
	fixture_down();
}

/*
 * The CR reaches its SP only through the queue the SP lent it (cr.h): a
 * handed-off request is found by the progress thread on the new PSP's queue
 * alone, reject takes it off that queue, and a freed PSP is no handoff
 * target and orphans what it still held.
 */
static void test_cr_follows_the_queue_of_its_sp(void)
{
	DAT_EVD_HANDLE evd2;
	DAT_PSP_HANDLE psp2, psp3;
	DAT_CR_HANDLE moved;
	struct ofx_sp *sp1, *sp2;
	struct ofx_cr *cr, *orphan;
	struct rdma_cm_event ev = { .event = RDMA_CM_EVENT_REJECTED };

	fixture_up();
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
						 &evd2), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(P->psp_create_func(&f.ia, 4793, evd2, DAT_PSP_CONSUMER_FLAG,
						 &psp2), DAT_SUCCESS);
	sp1 = ofx_sp_lookup(f.psp, OFX_OBJ_PSP);
	sp2 = ofx_sp_lookup(psp2, OFX_OBJ_PSP);
	CU_ASSERT_PTR_EQUAL(sp2->crq.lock, &sp2->lock);
	CU_ASSERT_TRUE(sp2->crq.listening);

	cr = queued_cr(f.psp, "x");
	CU_ASSERT_EQUAL(P->cr_handoff_func(cr, 4793), DAT_SUCCESS);
	moved = expect_cr_event(evd2, psp2, 4793);
	CU_ASSERT_PTR_EQUAL(ofx_cr_from_handle(moved)->queue, &sp2->crq);
	/* the peer gives up: only the new PSP's queue holds the request */
	ev.id = ofx_cr_from_handle(moved)->cm_id;
	CU_ASSERT_FALSE(ofx_sp_cr_event(sp1, &ev));
	CU_ASSERT_TRUE(ofx_sp_cr_event(sp2, &ev));
	CU_ASSERT_TRUE(ofx_cr_from_handle(moved)->dead);
	/* reject takes it off that queue: the progress thread finds it no more */
	CU_ASSERT_EQUAL(P->cr_reject_func(moved, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_TRUE(ofx_list_empty(&sp2->crq.crs));
	CU_ASSERT_FALSE(ofx_sp_cr_event(sp2, &ev));

	/* a freed PSP is no target; the request it held is orphaned, not lost */
	CU_ASSERT_EQUAL_FATAL(P->psp_create_func(&f.ia, 4794, evd2, DAT_PSP_CONSUMER_FLAG,
						 &psp3), DAT_SUCCESS);
	orphan = queued_cr(psp3, "y");
	CU_ASSERT_EQUAL(P->psp_free_func(psp3), DAT_SUCCESS);
	CU_ASSERT_PTR_NULL(orphan->queue);
	CU_ASSERT_EQUAL(P->cr_handoff_func(orphan, 4791),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	cr = queued_cr(f.psp, "z");
	CU_ASSERT_EQUAL(P->cr_handoff_func(cr, 4794), OFX_INVALID_ARG(2));
	CU_ASSERT_PTR_EQUAL(cr->queue, &sp1->crq);
	CU_ASSERT_FALSE(ofx_list_empty(&sp1->crq.crs));
	CU_ASSERT_EQUAL(P->cr_reject_func(cr, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->cr_reject_func(orphan, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_TRUE(ofx_list_empty(&sp1->crq.crs));

	CU_ASSERT_EQUAL(P->psp_free_func(psp2), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->evd_free_func(evd2), DAT_SUCCESS);
	fixture_down();
}

static int count_objs(enum ofx_obj_type type)
{
	struct ofx_list *pos, *tmp;
	int n = 0;

	pthread_mutex_lock(&f.ia.obj_lock);
	ofx_list_for_each_safe(pos, tmp, &f.ia.objects)
		n += container_of(pos, struct ofx_obj, ia_link)->type == type;
	pthread_mutex_unlock(&f.ia.obj_lock);
	return n;
}

/* A request arriving on `sp` as the progress thread hands it over. */
static void arrive_request(DAT_PSP_HANDLE psp_h, const char *pdata)
{
	struct ofx_sp *sp = ofx_sp_lookup(psp_h, OFX_OBJ_PSP);
	struct rdma_cm_event ev = { .event = RDMA_CM_EVENT_CONNECT_REQUEST };

	CU_ASSERT_EQUAL_FATAL(fake_cm_create_id(NULL, &ev.id, &sp->obj, RDMA_PS_TCP), 0);
	ev.param.conn.private_data = pdata;
	ev.param.conn.private_data_len = (uint8_t)strlen(pdata);
	/* NULL: the request was kept (a CR), the id is not to be destroyed */
	CU_ASSERT_PTR_NULL(ofx_sp_connect_request(sp, &ev));
}

/* The CR's provider EP, in TENTATIVE_CONNECTION_PENDING (and bare if `fresh`). */
static DAT_EP_HANDLE tentative_ep_of(DAT_CR_HANDLE cr, bool fresh)
{
	DAT_CR_PARAM crp;
	DAT_EP_PARAM epp;

	CU_ASSERT_EQUAL_FATAL(P->cr_query_func(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(crp.local_ep_handle);
	CU_ASSERT_EQUAL(P->ep_query_func(crp.local_ep_handle, DAT_EP_FIELD_ALL, &epp),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(epp.ep_state, DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING);
	if (fresh) {
		CU_ASSERT_PTR_NULL(epp.pz_handle);
		CU_ASSERT_PTR_NULL(epp.connect_evd_handle);
	}
	return crp.local_ep_handle;
}

static void test_psp_provider_flag_hands_out_a_tentative_ep(void)
{
	DAT_LMR_TRIPLET iov = { 0 };
	DAT_PROVIDER_ATTR pattr;
	DAT_EVD_HANDLE evd;
	DAT_PSP_HANDLE psp;
	DAT_CR_HANDLE cr;
	DAT_EP_HANDLE ep;
	DAT_EP_PARAM mod = { 0 };
	int eps;

	fixture_up();
	CU_ASSERT_EQUAL(P->ia_query_func(&f.ia, NULL, 0, NULL, DAT_PROVIDER_FIELD_EP_CREATOR,
					 &pattr), DAT_SUCCESS);
	CU_ASSERT_EQUAL(pattr.ep_creator, DAT_PSP_CREATES_EP_IFASKED);
	CU_ASSERT_EQUAL_FATAL(P->evd_create_func(&f.ia, 4, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG,
						 &evd), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(P->psp_create_func(&f.ia, 4795, evd, DAT_PSP_PROVIDER_FLAG, &psp),
			      DAT_SUCCESS);
	eps = count_objs(OFX_OBJ_EP);

	/* the request comes with an EP of the provider's, not yet usable */
	arrive_request(psp, "one");
	cr = expect_cr_event(evd, psp, 4795);
	ep = tentative_ep_of(cr, true);
	CU_ASSERT_EQUAL(count_objs(OFX_OBJ_EP), eps + 1);
	CU_ASSERT_PTR_NULL(ofx_ep_from_handle(ep)->qp);
	CU_ASSERT_EQUAL(P->ep_free_func(ep),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PASSCONNPENDING));
	CU_ASSERT_EQUAL(P->ep_post_recv_func(ep, 1, &iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED));
	/* accept before the consumer gave it a PZ: refused, the request stays */
	CU_ASSERT_EQUAL(P->cr_accept_func(cr, DAT_HANDLE_NULL, 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PZ));
	CU_ASSERT_EQUAL(tentative_ep_of(cr, true), ep);

	/* dat_ep_modify completes it; a bad EVD changes nothing */
	mod.pz_handle = f.pz;
	mod.recv_evd_handle = f.cr_evd;
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_PZ_HANDLE |
					  DAT_EP_FIELD_RECV_EVD_HANDLE, &mod),
			OFX_DAT_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV));
	CU_ASSERT_PTR_NULL(ofx_ep_from_handle(ep)->pz);
	mod.recv_evd_handle = f.dto_evd;
	mod.request_evd_handle = f.dto_evd;
	mod.connect_evd_handle = f.conn_evd;
	mod.ep_attr.max_recv_dtos = 4;
	mod.ep_attr.max_request_dtos = 4;
	mod.ep_attr.max_recv_iov = 1;
	mod.ep_attr.max_request_iov = 1;
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_PZ_HANDLE |
					  DAT_EP_FIELD_RECV_EVD_HANDLE |
					  DAT_EP_FIELD_REQUEST_EVD_HANDLE |
					  DAT_EP_FIELD_CONNECT_EVD_HANDLE |
					  DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS |
					  DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &mod),
			DAT_SUCCESS);
	CU_ASSERT_PTR_EQUAL(ofx_ep_from_handle(ep)->pz, ofx_pz_from_handle(f.pz));
	CU_ASSERT_PTR_EQUAL(ofx_ep_from_handle(ep)->conn_evd, ofx_evd_from_handle(f.conn_evd));
	CU_ASSERT_EQUAL(ofx_ep_from_handle(ep)->attr.max_recv_dtos, 4);
	/* attached, so receives can go in before the accept; still tentative */
	CU_ASSERT_PTR_NOT_NULL(ofx_ep_from_handle(ep)->qp);
	CU_ASSERT_EQUAL(P->ep_post_recv_func(ep, 1, &iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	tentative_ep_of(cr, false);
	CU_ASSERT_EQUAL(P->pz_free_func(f.pz), OFX_DAT_ERR(DAT_INVALID_STATE,
							   DAT_INVALID_STATE_PZ_IN_USE));

	/* a reject frees the provider's EP with the request */
	CU_ASSERT_EQUAL(P->cr_reject_func(cr, 0, NULL), DAT_SUCCESS);
	CU_ASSERT_EQUAL(count_objs(OFX_OBJ_EP), eps);

	/*
	 * A request still pending when the PSP goes takes its EP along; the
	 * CR itself stays valid for the consumer holding its event, and an
	 * accept of it then fails and frees it.
	 */
	arrive_request(psp, "two");
	cr = expect_cr_event(evd, psp, 4795);
	tentative_ep_of(cr, true);
	CU_ASSERT_EQUAL(count_objs(OFX_OBJ_EP), eps + 1);
	CU_ASSERT_EQUAL(P->psp_free_func(psp), DAT_SUCCESS);
	CU_ASSERT_EQUAL(count_objs(OFX_OBJ_EP), eps);
	CU_ASSERT_EQUAL(count_objs(OFX_OBJ_CR), 2);
	{
		DAT_CR_PARAM crp;

		CU_ASSERT_EQUAL(P->cr_query_func(cr, DAT_CR_FIELD_ALL, &crp), DAT_SUCCESS);
		CU_ASSERT_EQUAL(crp.private_data_size, 3);
		CU_ASSERT_PTR_NULL(crp.local_ep_handle);
	}
	CU_ASSERT_EQUAL(P->cr_handoff_func(cr, 4791),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	CU_ASSERT_EQUAL(P->cr_accept_func(cr, f.ep, 0, NULL),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE));
	CU_ASSERT_EQUAL(count_objs(OFX_OBJ_CR), 1); /* the fixture's own */
	CU_ASSERT_EQUAL(P->evd_free_func(evd), DAT_SUCCESS);
	fixture_down();
}

/* Contract 3.6: an EP made without a PZ gets its QP at connect or accept. */
static void test_ep_without_pz_is_attached_later(void)
{
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(1) };
	DAT_LMR_TRIPLET iov = { 0 };
	DAT_EP_ATTR attr = { .service_type = DAT_SERVICE_TYPE_RC,
			     .max_recv_dtos = 4, .max_request_dtos = 4,
			     .max_recv_iov = 1, .max_request_iov = 1 };
	DAT_EP_PARAM mod = { 0 };
	DAT_EP_HANDLE ep;
	struct ofx_ep *e;

	fixture_up();
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, DAT_HANDLE_NULL, f.dto_evd, f.dto_evd,
						f.conn_evd, &attr, &ep), DAT_SUCCESS);
	e = ofx_ep_from_handle(ep);
	CU_ASSERT_PTR_NULL(e->qp);
	CU_ASSERT_EQUAL(P->ep_post_recv_func(ep, 1, &iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFIGURED));
	CU_ASSERT_EQUAL(P->ep_connect_func(ep, (DAT_IA_ADDRESS_PTR)&peer, 1, 1000000, 0, NULL,
					   DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PZ));

	/* a PZ attaches an UNCONNECTED consumer EP at once */
	mod.pz_handle = f.pz;
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_PZ_HANDLE, &mod), DAT_SUCCESS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->qp);
	CU_ASSERT_EQUAL(e->send_ring.size, 5u);

	/* new queue sizes rebuild the QP (no receives were posted) */
	mod.ep_attr.max_request_dtos = 8;
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &mod),
			DAT_SUCCESS);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e->qp);
	CU_ASSERT_EQUAL(e->send_ring.size, 9u);
	CU_ASSERT_EQUAL(e->attr.max_request_dtos, 8);

	/* a posted receive would be lost with the QP: refused, nothing changes */
	CU_ASSERT_EQUAL(P->ep_post_recv_func(ep, 1, &iov, f.cookie, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
	mod.ep_attr.max_request_dtos = 2;
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &mod),
			OFX_DAT_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY));
	CU_ASSERT_EQUAL(e->attr.max_request_dtos, 8);
	/* out-of-range values and fixed fields are bad parameters */
	mod.ep_attr.max_request_dtos = -1;
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &mod),
			OFX_INVALID_ARG(3));
	CU_ASSERT_EQUAL(P->ep_modify_func(ep, DAT_EP_FIELD_REMOTE_PORT_QUAL, &mod),
			OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(P->ep_free_func(ep), DAT_SUCCESS);
	fixture_down();
}

static void post_empty_recvs(int n)
{
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL(P->ep_post_recv_func(f.ep, 0, NULL, f.cookie,
						     DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
}

/* The next event on `evd`, or a zeroed one if there is none. */
static DAT_EVENT next_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT ev;

	if (P->evd_dequeue_func(evd, &ev) != DAT_SUCCESS)
		memset(&ev, 0, sizeof(ev));
	return ev;
}

/*
 * A QP's async events: a failure is the EP's ASYNC_ERROR_EP_BROKEN; a
 * drained send queue is none (siw raises it when its move to error flushed
 * queued requests, a peer's close that crossed them: the fault suite's
 * hangup_soon failed on it once), nor are the CM's and path events.
 */
static void test_qp_async_events(void)
{
	CU_ASSERT_TRUE(ofx_ia_qp_event_is_failure(IBV_EVENT_QP_FATAL));
	CU_ASSERT_TRUE(ofx_ia_qp_event_is_failure(IBV_EVENT_QP_REQ_ERR));
	CU_ASSERT_TRUE(ofx_ia_qp_event_is_failure(IBV_EVENT_QP_ACCESS_ERR));
	CU_ASSERT_TRUE(ofx_ia_qp_event_is_failure(IBV_EVENT_QP_LAST_WQE_REACHED));
	CU_ASSERT_FALSE(ofx_ia_qp_event_is_failure(IBV_EVENT_SQ_DRAINED));
	CU_ASSERT_FALSE(ofx_ia_qp_event_is_failure(IBV_EVENT_COMM_EST));
	CU_ASSERT_FALSE(ofx_ia_qp_event_is_failure(IBV_EVENT_PATH_MIG));
	CU_ASSERT_FALSE(ofx_ia_qp_event_is_failure(IBV_EVENT_PATH_MIG_ERR));
}

static void test_ep_watermarks_raise_their_events(void)
{
	struct ofx_ep *ep;
	DAT_EVENT ev;

	fixture_up();
	ep = ofx_ep_from_handle(f.ep);
	/* the software EVD stands in for the IA's async EVD */
	f.ia.async_evd = ofx_evd_from_handle(f.sw_evd);

	/* soft: one async event when the posted receives exceed it */
	CU_ASSERT_EQUAL(P->ep_set_watermark_func(f.ep, 2, DAT_WATERMARK_INFINITE), DAT_SUCCESS);
	post_empty_recvs(2);
	CU_ASSERT_EQUAL(next_event(f.sw_evd).event_number, 0);
	post_empty_recvs(1);
	ev = next_event(f.sw_evd);
	CU_ASSERT_EQUAL(ev.event_number, DAT_ASYNC_ERROR_EP_BROKEN);
	CU_ASSERT_PTR_EQUAL(ev.event_data.asynch_error_event_data.dat_handle, f.ep);
	CU_ASSERT_EQUAL(ev.event_data.asynch_error_event_data.reason,
			DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT);
	/* spent until set again; setting it below the count fires at once */
	post_empty_recvs(1);
	CU_ASSERT_EQUAL(next_event(f.sw_evd).event_number, 0);
	CU_ASSERT_FALSE(atomic_load(&ep->wm_armed));
	CU_ASSERT_EQUAL(P->ep_set_watermark_func(f.ep, 1, DAT_VALUE_UNKNOWN), DAT_SUCCESS);
	CU_ASSERT_EQUAL(next_event(f.sw_evd).event_number, DAT_ASYNC_ERROR_EP_BROKEN);

	/* hard: only a connection can break; an unconnected EP keeps it armed */
	CU_ASSERT_EQUAL(P->ep_set_watermark_func(f.ep, DAT_WATERMARK_INFINITE, 4), DAT_SUCCESS);
	post_empty_recvs(1);
	CU_ASSERT_EQUAL(next_event(f.conn_evd).event_number, 0);
	CU_ASSERT_TRUE(atomic_load(&ep->wm_armed));
	test_ep_force_state(ep, OFX_EP_CONNECTED);	/* as if connected (no cm_id to disconnect) */
	post_empty_recvs(1);
	ev = next_event(f.conn_evd);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_BROKEN);
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, f.ep);
	CU_ASSERT_EQUAL(ep->state, OFX_EP_DISCONNECTED);
	CU_ASSERT_EQUAL(next_event(f.sw_evd).event_number, 0);

	f.ia.async_evd = NULL;
	fixture_down();
}

/*
 * "Start from the defaults": query a probe EP, free it, create the real one
 * from the queried attributes.  The provider-specific array must outlive the
 * probe (ASan run) and carry its setting, not the last connection's result.
 */
static void test_ep_query_attrs_outlive_the_ep_and_round_trip(void)
{
	DAT_NAMED_ATTR off = { "P2P", "off" };
	DAT_EP_PARAM param;
	DAT_EP_ATTR attr;
	DAT_EP_HANDLE probe, ep;

	fixture_up();
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						NULL, &probe), DAT_SUCCESS);
	ofx_ep_from_handle(probe)->p2p = true;	/* as if its last connection had p2p */
	CU_ASSERT_EQUAL_FATAL(P->ep_query_func(probe, DAT_EP_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->ep_free_func(probe), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(param.ep_attr.ep_provider_specific_count, 3);
	CU_ASSERT_STRING_EQUAL(param.ep_attr.ep_provider_specific[0].name, "P2P");
	CU_ASSERT_STRING_EQUAL(param.ep_attr.ep_provider_specific[0].value, "auto");
	CU_ASSERT_STRING_EQUAL(param.ep_attr.ep_provider_specific[1].name, "P2P_ACTIVE");
	CU_ASSERT_STRING_EQUAL(param.ep_attr.ep_provider_specific[1].value, "on");

	attr = param.ep_attr;
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						&attr, &ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_from_handle(ep)->p2p_attr, OFX_AUTO);
	CU_ASSERT_EQUAL(P->ep_free_func(ep), DAT_SUCCESS);

	/* an explicit setting survives the same round trip */
	attr.ep_provider_specific_count = 1;
	attr.ep_provider_specific = &off;
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						&attr, &probe), DAT_SUCCESS);
	CU_ASSERT_EQUAL_FATAL(P->ep_query_func(probe, DAT_EP_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(P->ep_free_func(probe), DAT_SUCCESS);
	CU_ASSERT_STRING_EQUAL(param.ep_attr.ep_provider_specific[0].value, "off");
	CU_ASSERT_STRING_EQUAL(param.ep_attr.ep_provider_specific[1].value, "off");
	CU_ASSERT_EQUAL_FATAL(P->ep_create_func(&f.ia, f.pz, f.dto_evd, f.dto_evd, f.conn_evd,
						&param.ep_attr, &ep), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ofx_ep_from_handle(ep)->p2p_attr, OFX_OFF);
	CU_ASSERT_EQUAL(P->ep_free_func(ep), DAT_SUCCESS);
	fixture_down();
}

static void test_malformed_ia_params_fail_with_one_log_line(void)
{
	static const struct {
		const char *params;
		const char *needle;
	} split_cases[] = {
		{ NULL, "no ia_params" },
		{ "", "names no device" },
		{ "   \t ", "names no device" },
		{ "ib0", "no port" },
		{ "ib0   ", "no port" },
	};
	static const struct {
		const char *options;
		const char *needle;
	} option_cases[] = {
		{ "nosuchkey=1", "'nosuchkey'" },
		{ "rtr=fax", "'fax'" },
		{ "cm_timeout_ms=12abc", "'12abc'" },
		{ "cm_timeout_ms=-1", "'-1'" },
		{ "cm_timeout_ms=99999999999999999999", "cm_timeout_ms" },
		{ "p2p", "'p2p' is not key=value" },
		{ "p2p=maybe", "'maybe'" },
		{ "rtr=write =read", "option ''" },
	};
	struct ofx_provider *prov = calloc(1, sizeof(*prov));
	char *big = malloc(OFX_IA_PARAMS_MAX + 64);
	char *text = malloc(8192);
	char why[512];
	struct ofx_config cfg;
	int fd;

	CU_ASSERT_FATAL(prov && big && text);
	fd = mkstemp(log_path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	snprintf(prov->name, sizeof(prov->name), "ofx-badparams");

	for (size_t i = 0; i < OFX_ARRAY_SIZE(split_cases); i++) {
		capture_begin();
		CU_ASSERT_EQUAL(ofx_ia_params_split(split_cases[i].params, prov), -EINVAL);
		capture_end(text, 8192);
		expect_one_line(split_cases[i].params ? split_cases[i].params : "(null)", text,
				split_cases[i].needle);
	}

	/* overlong: the whole string, the device, the port and the option list */
	memset(big, 'd', OFX_IA_PARAMS_MAX + 10);
	big[OFX_IA_PARAMS_MAX + 10] = '\0';
	capture_begin();
	CU_ASSERT_EQUAL(ofx_ia_params_split(big, prov), -EINVAL);
	capture_end(text, 8192);
	expect_one_line("overlong ia_params", text, "longer than");

	memset(big, 'd', 300);
	strcpy(big + 300, " 1");
	capture_begin();
	CU_ASSERT_EQUAL(ofx_ia_params_split(big, prov), -EINVAL);
	capture_end(text, 8192);
	expect_one_line("overlong device", text, "the device is longer");

	strcpy(big, "ib0 ");
	memset(big + 4, '9', 40);
	big[44] = '\0';
	capture_begin();
	CU_ASSERT_EQUAL(ofx_ia_params_split(big, prov), -EINVAL);
	capture_end(text, 8192);
	expect_one_line("overlong port", text, "the port is longer");

	/* a failed split leaves the previous parts alone */
	CU_ASSERT_EQUAL(ofx_ia_params_split("ib0 1 p2p=on", prov), 0);
	CU_ASSERT_EQUAL(ofx_ia_params_split("ib0", prov), -EINVAL);
	CU_ASSERT_STRING_EQUAL(prov->device, "ib0");
	CU_ASSERT_STRING_EQUAL(prov->options, "p2p=on");

	for (size_t i = 0; i < OFX_ARRAY_SIZE(option_cases); i++) {
		ofx_config_defaults(&cfg);
		capture_begin();
		CU_ASSERT_EQUAL(ofx_config_resolve(option_cases[i].options, &cfg, why,
						   sizeof(why)), -EINVAL);
		capture_end(text, 8192);
		expect_one_line(option_cases[i].options, text, option_cases[i].needle);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, why));
	}

	/* overlong values: a string past its field, and a value past any field */
	snprintf(big, OFX_IA_PARAMS_MAX, "xrcd=");
	memset(big + 5, 'p', OFX_CONFIG_STR_MAX + 10);
	big[5 + OFX_CONFIG_STR_MAX + 10] = '\0';
	ofx_config_defaults(&cfg);
	capture_begin();
	CU_ASSERT_EQUAL(ofx_config_resolve(big, &cfg, NULL, 0), -EINVAL);
	capture_end(text, 8192);
	expect_one_line("overlong xrcd", text, "xrcd");
	CU_ASSERT_STRING_EQUAL(cfg.xrcd, "");	/* untouched */

	snprintf(big, OFX_IA_PARAMS_MAX, "xrcd=");
	memset(big + 5, 'p', 900);
	big[905] = '\0';
	ofx_config_defaults(&cfg);
	capture_begin();
	CU_ASSERT_EQUAL(ofx_config_resolve(big, &cfg, NULL, 0), -EINVAL);
	capture_end(text, 8192);
	expect_one_line("value past any field", text, "value too long");

	unlink(log_path);
	strcpy(log_path, "/tmp/ofx-badinput-log-XXXXXX");
	free(text);
	free(big);
	free(prov);
}

CU_TestInfo ofx_test_badinput[] = {
	{ "every DAT_PROVIDER function slot has a bad-input case",
	  test_every_slot_has_a_bad_input_case },
	{ "wrong-type, freed and NULL secondary handles get DAT_INVALID_HANDLE",
	  test_wrong_freed_and_null_handles_are_refused },
	{ "NULL outputs, bad counts, sizes, flags and masks get DAT_INVALID_PARAMETER",
	  test_bad_arguments_are_refused },
	{ "malformed ia_params fail with -EINVAL and one log line",
	  test_malformed_ia_params_fail_with_one_log_line },
	{ "cr_handoff moves a request to the other psp and refuses a missing one",
	  test_cr_handoff_moves_the_request_to_the_other_psp },
	{ "a cr follows the queue of its sp through handoff, reject and psp_free",
	  test_cr_follows_the_queue_of_its_sp },
	{ "psp provider flag hands out a tentative ep, freed on reject",
	  test_psp_provider_flag_hands_out_a_tentative_ep },
	{ "ep without pz gets its qp later, ep_modify rebuilds it",
	  test_ep_without_pz_is_attached_later },
	{ "ep high watermarks raise the soft async event and break on the hard one",
	  test_ep_watermarks_raise_their_events },
	{ "a qp failure is an async EP_BROKEN, a drained send queue none",
	  test_qp_async_events },
	{ "ep_query attributes outlive the ep and round-trip into ep_create",
	  test_ep_query_attrs_outlive_the_ep_and_round_trip },
	CU_TEST_INFO_NULL,
};
