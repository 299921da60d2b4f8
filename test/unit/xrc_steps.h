/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_XRC_STEPS_H
#define OFX_TEST_XRC_STEPS_H

#include <stdint.h>
#include "xrc.h"
#include "xrc_model.h"

#include <dat2/dat_ib_extensions.h>

/*
 * The steps the XRC scenario suites (test_xrc.c, test_xrc_scen.c) are
 * written in, over the model of xrc_model.h: processes opened by node,
 * receives and sends from registered buffers, and checks of what every
 * EVD, EP and the device hold.  The expect_* macros report the caller's
 * line.
 */

#define MSG_LEN 64
#define NBUF 512
#define QUAL 7000	/* the PSP of psp_open */

/*
 * The buffers of post_recv and send_msg, registered in each process's PZ
 * (xm_lkey): the model fails a WR whose segments no MR of its PD covers.
 */
struct xs_mem {
	char recv[NBUF][MSG_LEN];
	char send[NBUF][MSG_LEN];	/* reused round robin: the model copies at post */
};
extern struct xs_mem mem;
extern int nbuf, nsend;
extern char domfile[4][64];	/* node i's XRC domain file (setup) */

/* xm_init and fresh domain files for `nodes` nodes; teardown checks and removes them. */
void setup(int nodes);
void teardown(int nodes);
struct ofx_xrc_stats stats(struct xm_proc *p);
/* The lkey of `mem` in the PZ of `ep`'s process. */
DAT_LMR_CONTEXT lkey_of(const struct ofx_ep *ep);
/* A receive of `len` bytes (at most MSG_LEN; post_recv: MSG_LEN) into the next buffer. */
void post_recv_len(struct ofx_ep *ep, uint64_t cookie, DAT_VLEN len);
void post_recv(struct ofx_ep *ep, uint64_t cookie);
/* `text` and its NUL from the next send buffer. */
DAT_RETURN send_msg_flags(struct ofx_ep *ep, const char *text, uint64_t cookie,
			  DAT_COMPLETION_FLAGS flags);
DAT_RETURN send_msg(struct ofx_ep *ep, const char *text, uint64_t cookie);
/* The buffer posted last on `ep` with `cookie`. */
const char *buf_of(const struct ofx_ep *ep, uint64_t cookie);
/* The next event of p's recv EVD: receive `cookie` of `ep` holds `text`. */
void expect_recv(struct xm_proc *p, struct ofx_ep *ep, uint64_t cookie, const char *text);
void expect_empty(struct ofx_evd *evd);
/* The next event of `evd` completes a DTO of `ep` with `cookie` and `status`. */
#define expect_dto(evd, ep, cookie, status) expect_dto_at(evd, ep, cookie, status, __LINE__)
void expect_dto_at(struct ofx_evd *evd, struct ofx_ep *ep, uint64_t cookie,
		   DAT_DTO_COMPLETION_STATUS status, int line);
/*
 * A consumer that stops polling: `evd`'s ring filled with software events
 * (returns how many), so that completions stay in its CQ; evd_unfill
 * dequeues those `n` again.
 */
int evd_fill(struct ofx_evd *evd);
void evd_unfill(struct ofx_evd *evd, int n);
/* Every send completion on `p`'s request EVD is a success; returns how many. */
int drain_sends(struct xm_proc *p);
/* The next connection event of `p` is `num` for `ep`. */
#define expect_conn(p, ep, num) expect_conn_at(p, ep, num, __LINE__)
void expect_conn_at(struct xm_proc *p, struct ofx_ep *ep, DAT_EVENT_NUMBER num, int line);

/*
 * S9: the QP counts XRC is for, in one check.  No RC QP anywhere (every
 * connection runs over XRC); process p[i] holds ini[i] INI QPs, as the
 * device counts them and as its provider does (one per remote node it
 * reaches: N-1 in an all-to-all while the EPs' queues fit one); node k
 * holds tgts[k] TGT QPs:
 *     expect_qp_counts(PROCS(a, b), COUNTS(1, 1), COUNTS(1, 1));
 */
#define PROCS(...) ((struct xm_proc *[]){ __VA_ARGS__ })
#define COUNTS(...) ((int[]){ __VA_ARGS__ })
#define expect_qp_counts(p, ini, tgts) \
	expect_qp_counts_at(p, ini, (int)(sizeof(ini) / sizeof(int)), tgts, \
			    (int)(sizeof(tgts) / sizeof(int)), __LINE__)
void expect_qp_counts_at(struct xm_proc *const *p, const int *ini, int np, const int *tgts,
			 int nnodes, int line);

/* A connected pair (xm_connect) with `n` receives posted on each side (1000+, 2000+). */
void pair(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b, struct ofx_ep *eb, int n);
/* One process on each node, one EP in each: where most scenarios start. */
void open_pair(struct xm_proc **a, struct ofx_ep **ea, struct xm_proc **b, struct ofx_ep **eb);
/* The same, connected, with one receive posted on each side. */
void open_connected_pair(struct xm_proc **a, struct ofx_ep **ea, struct xm_proc **b,
			 struct ofx_ep **eb);
/* A message each way over a connected pair, into receives `ck_a` and `ck_b`. */
void ping_pong(struct xm_proc *a, struct ofx_ep *ea, uint64_t ck_a, struct xm_proc *b,
	       struct ofx_ep *eb, uint64_t ck_b);
/* `p`'s connections so far: `n`, every one over XRC. */
void expect_xrc_only(struct xm_proc *p, unsigned long n);
/* An EP of `p` with `iov` request segments and 4 reads each way. */
struct ofx_ep *ep_with_iov(struct xm_proc *p, int iov);

/* DAT-level steps over the model's rdma_cm (xm_use_cm). */
DAT_PSP_HANDLE psp_open(struct xm_proc *p);
/*
 * The next event of b's CR EVD is a request to `psp` at `qual` with `len`
 * bytes of private data (`pdata`: those bytes; NULL: any): its CR.
 */
DAT_CR_HANDLE expect_cr(struct xm_proc *b, DAT_PSP_HANDLE psp, DAT_CONN_QUAL qual,
			const void *pdata, int len);
/* `ea` of `a` connects to `b`'s PSP: the CR that arrives, its fields checked. */
DAT_CR_HANDLE dat_request(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b,
			  DAT_PSP_HANDLE psp, const void *pdata, int len);
/* The next connection event of `p` is ESTABLISHED for `ep`, with `len` bytes `pdata`. */
#define expect_established(p, ep, pdata, len) expect_established_at(p, ep, pdata, len, __LINE__)
void expect_established_at(struct xm_proc *p, struct ofx_ep *ep, const void *pdata, int len,
			   int line);

/* The IB extension calls as a consumer writes them (unit.h). */
#define dat_extension_op ofx_test_ext_call
const DAT_IB_EXTENSION_EVENT_DATA *ext_of(const DAT_EVENT *ev);
/* The next event of `evd`: a successful IB extension DTO of `ep`, `cookie`, of `type`. */
#define expect_ext_dto(evd, ep, cookie, type, ev_p) \
	expect_ext_dto_at(evd, ep, cookie, type, ev_p, __LINE__)
void expect_ext_dto_at(struct ofx_evd *evd, struct ofx_ep *ep, uint64_t cookie,
		       DAT_IB_EXT_TYPE type, DAT_EVENT *ev, int line);

#endif
