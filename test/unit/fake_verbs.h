/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef OFX_TEST_FAKE_VERBS_H
#define OFX_TEST_FAKE_VERBS_H

#include "ep.h"
#include "evd.h"
#include "ia.h"
#include "verbs.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/*
 * One fake of the verbs seam shared by the unit tests (no device).
 *
 * The CQ model holds scripted work completions, arms once, and uses a pipe
 * as the completion channel fd, written when a completion lands on an armed
 * CQ.  It is locked, so helper threads may push completions.  PDs, MRs,
 * MWs, SRQs and QPs are plain allocations counted in fake_verbs; a QP keeps
 * the state set by modify_qp, and one fed by an SRQ refuses post_recv.
 *
 * fake_verbs_install() resets the counters and installs the whole model
 * with ofx_verbs_set(); a test may then override single ops in
 * fake_verbs.ops before its first verbs call (ofx_verbs_set() copies
 * nothing, the table is read on each call).
 */

#define FAKE_CQ_MAX 256

struct fake_channel {
	struct ibv_comp_channel ch;
	int wfd;
	struct fake_cq *cq;
};

struct fake_cq {
	struct ibv_cq cq;
	pthread_mutex_t lock;
	struct ibv_wc q[FAKE_CQ_MAX];
	int head, count;
	bool armed;
	int max_poll;		/* largest n passed to poll_cq */
	unsigned int events, acked;
	struct fake_channel *fch;
};

struct fake_verbs {
	struct ofx_verbs_ops ops;	/* installed with ofx_verbs_set() */
	int cq_extra;		/* create_cq rounds cqe up by this, like a device may */
	unsigned int unbalanced;	/* CQs destroyed with unacked events */
	/* CUnit is not thread-safe: helper threads count failures, the test asserts them */
	atomic_uint write_failures;
	int pds, mrs, mws, qps, srqs;	/* live objects */
	uint32_t next_qp_num;	/* qp_num of the next QP, from 0x100 */
	uint32_t srq_max_wr;	/* max_wr of the last SRQ created */
	int last_access;	/* access flags of the last reg_mr */
	int reg_errno;		/* when set, reg_mr fails with it */
	bool pd_busy_with_mrs;	/* dealloc_pd returns EBUSY while MRs live, like the kernel */
};

extern struct fake_verbs fake_verbs;

/* Reset fake_verbs and install the model; undo with ofx_verbs_set(NULL). */
void fake_verbs_install(void);

/* A completion lands on the EVD's CQ (any thread); an armed CQ fires its channel once. */
void fake_cq_push(struct ofx_evd *evd, const struct ibv_wc *wc);
/* A channel event with nothing new in the CQ. */
void fake_spurious_channel_event(struct ofx_evd *evd);
/* Completions still queued in the EVD's CQ. */
int fake_cq_pending(struct ofx_evd *evd);

/*
 * A hand-built IA: header, obj_lock, empty objects and zombies lists, a
 * dummy verbs context, max_cqe 1024 and cq_batch 16.  No progress engine.
 */
void fake_ia_init(struct ofx_ia *ia);
/* Assert that no object is left on the IA, and destroy its lock. */
void fake_ia_fini(struct ofx_ia *ia);

/*
 * A bare EP (no QP) whose send and receive rings, of ring_size cookies
 * each, back the cookies of scripted completions.
 */
struct ofx_ep *fake_ep_new(uint32_t ring_size);
void fake_ep_delete(struct ofx_ep *ep);
/* Posts a signaled 64-byte send with cookie `user`; returns its success completion. */
struct ibv_wc fake_send_wc(struct ofx_ep *ep, uint64_t user);

#endif
