/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx_rmr_test: a DAT consumer of stock libdat2 (libdaplofx through
 * dat.conf) that checks remote memory regions (memory windows) end to end.
 * Per round the server binds an RMR over part of an LMR, checks the bind
 * completion and rmr_query, and sends the RMR triplet; the client
 * RDMA-writes through it and the server checks the data.  The server then
 * revokes the window and says so; the client's next write must fail with
 * DAT_DTO_ERR_REMOTE_ACCESS and break its EP, and the server's memory must
 * be unchanged.
 *
 *   round 0  dat_rmr_create (type 1 window), revoked by an unbind
 *   round 1  DAT_RMR_CREATE_FOR_EP (type 2 window; the slot is reached
 *            through the redirection macro, libdat2 does not export it),
 *            revoked by dat_rmr_free; skipped if NOT_IMPLEMENTED
 *   round 2  type 2 window again, revoked by the client itself: its DONE
 *            message goes out with DAT_EP_POST_SEND_WITH_INVALIDATE naming
 *            the window (not exported by libdat2 either), the server's
 *            receive event must report that rmr_context, and the next
 *            write through it must fail; skipped if the client's device
 *            answers DAT_MODEL_NOT_SUPPORTED.  rmr_query must then show
 *            the window unbound (no region, no privileges); after the
 *            failed write the server binds the SAME RMR handle again, to a
 *            fresh region, over a new connection (no LOCAL_INV of the free
 *            window may be posted, or the bind fails), and the client's
 *            write through the new context must land there.  Last, the
 *            EP is freed while that window is still bound through it: the
 *            call must return (rxe pins a QP under a bound type 2 window)
 *            and the RMR must then report no binding under a new context
 *
 * Usage: ofx_rmr_test server [IA]          (prints "server ready")
 *        ofx_rmr_test client SERVER_IP [IA]
 * IA defaults to ofx.  Prints "ALL TESTS PASSED" or "FAIL: ...".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>
#include <dat2/dat_registry.h> /* the DAT_* redirection macros */

#include "consumer.h"

#define QUAL 50011
#define NROUNDS 3
#define REGION 1024		/* bytes exposed per round */
#define TIMEOUT_US (20 * 1000 * 1000)

enum msg_type { MSG_RMR = 1, MSG_DONE, MSG_REVOKED, MSG_SKIP };

struct msg {
	uint32_t type;
	uint32_t round;
	DAT_RMR_TRIPLET rmr;
};

struct ctx {
	struct consumer cs;	/* its LMR covers this whole context */
	DAT_EVD_HANDLE recv_evd, req_evd;
	DAT_EP_HANDLE ep;
	struct msg msgs[4];	/* [0..1] receives, [2..3] sends */
	char mem[(NROUNDS + 1) * REGION];	/* one region a round, then round 2's rebind */
};

static int open_ctx(struct ctx *c, const char *ia_name, bool server)
{
	DAT_IA_ATTR attr;

	memset(c, 0, sizeof(*c));
	/* the whole context: messages and exposed memory */
	if (consumer_open(&c->cs, ia_name, c, sizeof(*c), 8))
		return -1;
	CHECK_DAT(dat_ia_query(c->cs.ia, NULL, DAT_IA_FIELD_IA_MAX_RMRS, &attr, 0, NULL));
	printf("%s: ia_query max_rmrs %d\n", server ? "server" : "client", attr.max_rmrs);
	if (server && attr.max_rmrs <= 0)
		fail("ia_query reports max_rmrs %d", attr.max_rmrs);
	CHECK_DAT(dat_evd_create(c->cs.ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &c->recv_evd));
	CHECK_DAT(dat_evd_create(c->cs.ia, 16, DAT_HANDLE_NULL,
				 DAT_EVD_DTO_FLAG | DAT_EVD_RMR_BIND_FLAG, &c->req_evd));
	return 0;
}

static void close_ctx(struct ctx *c)
{
	if (c->ep)
		dat_ep_free(c->ep);
	dat_evd_free(c->req_evd);
	dat_evd_free(c->recv_evd);
	consumer_close(&c->cs);
}

static int create_ep(struct ctx *c)
{
	DAT_EP_ATTR attr;

	if (ep_default_attr(&c->cs, c->recv_evd, &attr))
		return -1;
	attr.max_recv_dtos = 4;
	attr.max_request_dtos = 8;
	CHECK_DAT(dat_ep_create(c->cs.ia, c->cs.pz, c->recv_evd, c->req_evd, c->cs.conn_evd, &attr,
				&c->ep));
	for (int i = 0; i < 2; i++) {
		DAT_LMR_TRIPLET iov = lmr_iov(&c->cs, &c->msgs[i], sizeof(c->msgs[i]));

		CHECK_DAT(dat_ep_post_recv(c->ep, 1, &iov, (DAT_DTO_COOKIE)(DAT_UINT64)i,
					   DAT_COMPLETION_DEFAULT_FLAG));
	}
	return 0;
}

/* The DTO completion with `cookie` on this EP; anything else is logged and skipped. */
static int wait_dto(struct ctx *c, DAT_EVD_HANDLE evd, DAT_UINT64 cookie,
		    DAT_DTO_COMPLETION_EVENT_DATA *dto_p, const char *what)
{
	DAT_EVENT ev;

	for (int i = 0; i < 16; i++) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

		if (wait_event(evd, TIMEOUT_US, 0, &ev, what))
			return -1;
		if (ev.event_number == DAT_DTO_COMPLETION_EVENT && d->ep_handle == c->ep &&
		    d->user_cookie.as_64 == cookie) {
			*dto_p = *d;
			return 0;
		}
		printf("  note: %s: skipped event 0x%x\n", what, ev.event_number);
	}
	fail("%s: no completion with cookie 0x%llx", what, (unsigned long long)cookie);
	return -1;
}

/* A message; with `inv` set, a send that invalidates the peer's window `inv_ctx`. */
static DAT_RETURN post_msg(struct ctx *c, enum msg_type type, int round,
			   const DAT_RMR_TRIPLET *rmr, bool inv, DAT_RMR_CONTEXT inv_ctx)
{
	struct msg *m = &c->msgs[2];
	DAT_LMR_TRIPLET iov = lmr_iov(&c->cs, m, sizeof(*m));
	DAT_DTO_COOKIE ck = (DAT_DTO_COOKIE)(DAT_UINT64)(0x5e0 + type);

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->round = round;
	if (rmr)
		m->rmr = *rmr;
	if (inv)
		/* libdat2 does not export it: the EP handle is our raw object */
		return DAT_EP_POST_SEND_WITH_INVALIDATE(c->ep, 1, &iov, ck,
							DAT_COMPLETION_DEFAULT_FLAG, DAT_TRUE,
							inv_ctx);
	return dat_ep_post_send(c->ep, 1, &iov, ck, DAT_COMPLETION_DEFAULT_FLAG);
}

static int send_msg(struct ctx *c, enum msg_type type, int round, const DAT_RMR_TRIPLET *rmr)
{
	DAT_DTO_COMPLETION_EVENT_DATA d;

	CHECK_DAT(post_msg(c, type, round, rmr, false, 0));
	if (wait_dto(c, c->req_evd, 0x5e0 + type, &d, "send completion"))
		return -1;
	if (d.status != DAT_DTO_SUCCESS) {
		fail("send of message %d: status %d", type, d.status);
		return -1;
	}
	return 0;
}

static int recv_msg(struct ctx *c, int slot, enum msg_type type, struct msg *out)
{
	DAT_DTO_COMPLETION_EVENT_DATA d;

	if (wait_dto(c, c->recv_evd, slot, &d, "message"))
		return -1;
	if (d.status != DAT_DTO_SUCCESS || c->msgs[slot].type != type) {
		fail("receive %d: status %d type %u, expected type %d", slot, d.status,
		     c->msgs[slot].type, type);
		return -1;
	}
	*out = c->msgs[slot];
	return 0;
}

static int wait_conn(struct ctx *c, DAT_EVENT_NUMBER a, DAT_EVENT_NUMBER b, const char *what)
{
	DAT_EVENT ev;

	if (wait_event(c->cs.conn_evd, TIMEOUT_US, 0, &ev, what))
		return -1;
	if (ev.event_number != a && ev.event_number != b) {
		fail("%s: connection event 0x%x, expected 0x%x", what, ev.event_number, a);
		return -1;
	}
	printf("  %s: connection event 0x%x\n", what, ev.event_number);
	return 0;
}

static void pattern(char *p, int round, int gen)
{
	for (int i = 0; i < REGION; i++)
		p[i] = (char)(i * 7 + round * 31 + gen * 101 + 1);
}

static DAT_RETURN create_rmr(struct ctx *c, int round, DAT_RMR_HANDLE *rmr)
{
	if (round == 0)
		return dat_rmr_create(c->cs.pz, rmr);
	/* libdat2 does not export dat_rmr_create_for_ep; the PZ is our raw handle */
	return DAT_RMR_CREATE_FOR_EP(c->cs.pz, rmr);
}

/* Whether `region` holds generation `gen` of the pattern: prints `ok`, or fails with `bad`. */
static int expect_pattern(const char *region, int round, int gen, const char *ok, const char *bad)
{
	char want[REGION];

	pattern(want, round, gen);
	if (memcmp(region, want, REGION)) {
		fail("round %d: %s", round, bad);
		return -1;
	}
	printf("ok round %d: %s\n", round, ok);
	return 0;
}

/* The bind completion of `rmr` with `cookie`, successful. */
static int wait_bind(struct ctx *c, DAT_RMR_HANDLE rmr, DAT_UINT64 cookie, int round)
{
	const DAT_RMR_BIND_COMPLETION_EVENT_DATA *b;
	DAT_EVENT ev;

	if (wait_event(c->req_evd, TIMEOUT_US, 0, &ev, "bind completion"))
		return -1;
	b = &ev.event_data.rmr_completion_event_data;
	if (ev.event_number != DAT_RMR_BIND_COMPLETION_EVENT || b->rmr_handle != rmr ||
	    b->user_cookie.as_64 != cookie || b->status != DAT_RMR_BIND_SUCCESS) {
		fail("round %d: bind event 0x%x rmr %p cookie 0x%llx status %d", round,
		     ev.event_number, b->rmr_handle, (unsigned long long)b->user_cookie.as_64,
		     b->status);
		return -1;
	}
	return 0;
}

/* rmr_query after the peer invalidated the window: no region, same context. */
static int check_unbound(DAT_RMR_HANDLE rmr, DAT_RMR_CONTEXT rctx, int round)
{
	DAT_RMR_PARAM param;

	CHECK_DAT(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param));
	if (param.rmr_context != rctx || param.lmr_triplet.segment_length != 0 ||
	    param.lmr_triplet.virtual_address != 0 || param.mem_priv != DAT_MEM_PRIV_NONE_FLAG) {
		fail("round %d: rmr_query after the peer's invalidate: context 0x%x va 0x%llx "
		     "len %u priv 0x%x, expected 0x%x and no region", round, param.rmr_context,
		     (unsigned long long)param.lmr_triplet.virtual_address,
		     param.lmr_triplet.segment_length, param.mem_priv, rctx);
		return -1;
	}
	printf("ok round %d: rmr_query shows the invalidated window unbound\n", round);
	return 0;
}

/* Accepts the next connection on a fresh EP. */
static int accept_next(struct ctx *c)
{
	DAT_EVENT ev;

	if (create_ep(c))
		return -1;
	if (wait_event(c->cs.cr_evd, TIMEOUT_US, 0, &ev, "connection request"))
		return -1;
	CHECK_DAT(dat_cr_accept(ev.event_data.cr_arrival_event_data.cr_handle, c->ep, 0, NULL));
	return wait_conn(c, DAT_CONNECTION_EVENT_ESTABLISHED, 0, "accept");
}

/*
 * Round 2, second half: the window the client invalidated is bound again,
 * same handle, over a new connection, to the spare region; the client
 * writes through the new context.  Frees the RMR.
 */
static int serve_rebind(struct ctx *c, DAT_RMR_HANDLE rmr, DAT_RMR_CONTEXT old_ctx)
{
	const int round = 2;
	char *region = c->mem + NROUNDS * REGION;
	DAT_LMR_TRIPLET t = lmr_iov(&c->cs, region, REGION);
	DAT_RMR_TRIPLET rt = { .virtual_address = t.virtual_address, .segment_length = REGION };
	DAT_RMR_PARAM param;
	struct msg m;

	if (accept_next(c))
		return -1;
	memset(region, 0, REGION);
	CHECK_DAT(dat_rmr_bind(rmr, c->cs.lmr, &t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG, DAT_VA_TYPE_VA,
			       c->ep, (DAT_RMR_COOKIE)(DAT_UINT64)0xb20,
			       DAT_COMPLETION_DEFAULT_FLAG, &rt.rmr_context));
	if (wait_bind(c, rmr, 0xb20, round))
		return -1;
	CHECK_DAT(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param));
	if (param.rmr_context != rt.rmr_context || rt.rmr_context == old_ctx ||
	    param.lmr_triplet.virtual_address != t.virtual_address ||
	    param.lmr_triplet.segment_length != REGION ||
	    param.mem_priv != DAT_MEM_PRIV_REMOTE_WRITE_FLAG) {
		fail("round %d: rmr_query after the rebind: context 0x%x (bind gave 0x%x, old "
		     "0x%x) va 0x%llx len %u priv 0x%x", round, param.rmr_context, rt.rmr_context,
		     old_ctx, (unsigned long long)param.lmr_triplet.virtual_address,
		     param.lmr_triplet.segment_length, param.mem_priv);
		return -1;
	}
	printf("ok round %d: the same rmr bound again, context 0x%x over %p\n", round,
	       rt.rmr_context, (void *)region);
	if (send_msg(c, MSG_RMR, round, &rt) || recv_msg(c, 0, MSG_DONE, &m))
		return -1;
	if (expect_pattern(region, round, 2, "rdma write through the rebound rmr landed",
			   "the write through the rebound rmr did not land"))
		return -1;
	if (wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED, 0, "after the rebind"))
		return -1;
	/*
	 * The EP goes while the window is still bound through it: in rxe that
	 * window holds the QP, so the provider must swap it for a fresh one
	 * (ofx_rmr_ep_gone) or ep_free never returns.  The RMR then reports
	 * no binding under a new context.
	 */
	CHECK_DAT(dat_ep_free(c->ep));
	c->ep = NULL;
	CHECK_DAT(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param));
	if (param.rmr_context == rt.rmr_context || param.lmr_triplet.segment_length != 0 ||
	    param.mem_priv != DAT_MEM_PRIV_NONE_FLAG) {
		fail("round %d: rmr_query after its ep was freed: context 0x%x (bound 0x%x) "
		     "len %u priv 0x%x", round, param.rmr_context, rt.rmr_context,
		     param.lmr_triplet.segment_length, param.mem_priv);
		return -1;
	}
	printf("ok round %d: ep freed under a bound window, rmr now 0x%x unbound\n", round,
	       param.rmr_context);
	CHECK_DAT(dat_rmr_free(rmr));
	return 0;
}

static int serve_round(struct ctx *c, int round)
{
	char *region = c->mem + round * REGION;
	DAT_LMR_TRIPLET t = lmr_iov(&c->cs, region, REGION);
	DAT_RMR_TRIPLET rt;
	DAT_RMR_HANDLE rmr;
	DAT_RMR_CONTEXT rctx = 0;
	DAT_RMR_PARAM param;
	DAT_RETURN ret;
	DAT_EVENT ev;
	struct msg m;

	if (accept_next(c))
		return -1;

	ret = create_rmr(c, round, &rmr);
	if (DAT_GET_TYPE(ret) == DAT_NOT_IMPLEMENTED && round > 0) {
		printf("skip round %d: rmr_create_for_ep not implemented here\n", round);
		return send_msg(c, MSG_SKIP, round, NULL);
	}
	CHECK_DAT(ret);

	memset(region, 0, REGION);
	CHECK_DAT(dat_rmr_bind(rmr, c->cs.lmr, &t, DAT_MEM_PRIV_REMOTE_WRITE_FLAG |
			       DAT_MEM_PRIV_REMOTE_READ_FLAG, DAT_VA_TYPE_VA, c->ep,
			       (DAT_RMR_COOKIE)(DAT_UINT64)(0xb00 + round),
			       DAT_COMPLETION_DEFAULT_FLAG, &rctx));
	if (wait_bind(c, rmr, 0xb00u + round, round))
		return -1;
	CHECK_DAT(dat_rmr_query(rmr, DAT_RMR_FIELD_ALL, &param));
	if (param.rmr_context != rctx || param.lmr_triplet.virtual_address != t.virtual_address ||
	    param.lmr_triplet.segment_length != REGION || param.pz_handle != c->cs.pz) {
		fail("round %d: rmr_query context 0x%x va 0x%llx len %u", round, param.rmr_context,
		     (unsigned long long)param.lmr_triplet.virtual_address,
		     param.lmr_triplet.segment_length);
		return -1;
	}
	printf("round %d: bound rmr context 0x%x scope %d over %p\n", round, rctx,
	       param.rmr_scope, (void *)region);

	rt.virtual_address = t.virtual_address;
	rt.segment_length = REGION;
	rt.rmr_context = rctx;
	if (send_msg(c, MSG_RMR, round, &rt))
		return -1;
	if (round == 2) {
		DAT_DTO_COMPLETION_EVENT_DATA d;

		if (wait_dto(c, c->recv_evd, 0, &d, "done with invalidate"))
			return -1;
		if (d.status == DAT_DTO_SUCCESS && c->msgs[0].type == MSG_SKIP) {
			printf("skip round %d: the client cannot send with invalidate\n", round);
			wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED, 0, "skip");
			CHECK_DAT(dat_rmr_free(rmr));
			CHECK_DAT(dat_ep_free(c->ep));
			c->ep = NULL;
			return 0;
		}
		if (d.status != DAT_DTO_SUCCESS || c->msgs[0].type != MSG_DONE ||
		    d.rmr_context != rctx) {
			fail("round %d: receive status %d type %u rmr_context 0x%x, expected "
			     "done invalidating 0x%x", round, d.status, c->msgs[0].type,
			     d.rmr_context, rctx);
			return -1;
		}
		printf("ok round %d: receive reports the invalidated rmr context 0x%x\n", round,
		       d.rmr_context);
		if (check_unbound(rmr, rctx, round))
			return -1;
	} else if (recv_msg(c, 0, MSG_DONE, &m)) {
		return -1;
	}
	if (expect_pattern(region, round, 0, "rdma write through the rmr landed",
			   "the write through the rmr did not land"))
		return -1;

	if (round == 0) {
		CHECK_DAT(dat_rmr_bind(rmr, DAT_HANDLE_NULL, NULL, DAT_MEM_PRIV_NONE_FLAG,
				       DAT_VA_TYPE_VA, c->ep, (DAT_RMR_COOKIE)(DAT_UINT64)0xdead,
				       DAT_COMPLETION_DEFAULT_FLAG, NULL));
		if (wait_event(c->req_evd, TIMEOUT_US, 0, &ev, "unbind completion"))
			return -1;
		if (ev.event_number != DAT_RMR_BIND_COMPLETION_EVENT ||
		    ev.event_data.rmr_completion_event_data.status != DAT_RMR_BIND_SUCCESS) {
			fail("round %d: unbind event 0x%x status %d", round, ev.event_number,
			     ev.event_data.rmr_completion_event_data.status);
			return -1;
		}
	} else if (round == 1) {
		CHECK_DAT(dat_rmr_free(rmr));
	} /* round 2: the client's send already invalidated it */
	if (send_msg(c, MSG_REVOKED, round, NULL))
		return -1;
	/* the client's write now fails and its EP breaks: ours disconnects */
	if (wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED, DAT_CONNECTION_EVENT_BROKEN,
		      "after revoke"))
		return -1;
	if (expect_pattern(region, round, 0, "revoked rmr left the memory alone",
			   "memory changed after the rmr was revoked"))
		return -1;
	if (round == 0)
		CHECK_DAT(dat_rmr_free(rmr));
	CHECK_DAT(dat_ep_free(c->ep));
	c->ep = NULL;
	/* round 2: the window is free (the client invalidated it), the RMR lives on */
	return round == 2 ? serve_rebind(c, rmr, rctx) : 0;
}

/* Between connect attempts: a fresh EP with its receives. */
static int connect_again(void *arg, DAT_EP_HANDLE *ep_p)
{
	struct ctx *c = arg;

	CHECK_DAT(dat_ep_free(*ep_p));
	c->ep = NULL;
	if (create_ep(c))
		return -1;
	*ep_p = c->ep;
	return 0;
}

static int connect_ep(struct ctx *c, const char *server)
{
	const struct connect_req req = { .ip = server, .qual = QUAL, .timeout_us = TIMEOUT_US,
					 .retry_s = 10, .pause_ms = 200, .again = connect_again,
					 .arg = c };
	DAT_EVENT ev;

	return connect_retry(&c->cs, &c->ep, &req, &ev);
}

/*
 * RDMA-writes generation `gen` of the round's pattern through `rmr`; the
 * completion must carry `want`.
 */
static int write_through(struct ctx *c, int round, int gen, const DAT_RMR_TRIPLET *rmr,
			 DAT_DTO_COMPLETION_STATUS want, const char *what)
{
	char *src = c->mem + round * REGION;
	DAT_LMR_TRIPLET l = lmr_iov(&c->cs, src, REGION);
	DAT_UINT64 cookie = 0x100 + gen;
	DAT_DTO_COMPLETION_EVENT_DATA d;

	pattern(src, round, gen);
	CHECK_DAT(dat_ep_post_rdma_write(c->ep, 1, &l, (DAT_DTO_COOKIE)cookie, rmr,
					 DAT_COMPLETION_DEFAULT_FLAG));
	if (wait_dto(c, c->req_evd, cookie, &d, "write completion"))
		return -1;
	if (d.status != want) {
		fail("round %d: write through %s: status %d, expected %d", round, what, d.status,
		     want);
		return -1;
	}
	return 0;
}

/* Round 2, second half: writes through the window the server bound again. */
static int client_rebind(struct ctx *c, const char *server, DAT_RMR_CONTEXT old_ctx)
{
	const int round = 2;
	struct msg m;

	if (create_ep(c) || connect_ep(c, server) || recv_msg(c, 0, MSG_RMR, &m))
		return -1;
	if (m.rmr.rmr_context == old_ctx) {
		fail("round %d: the rebound rmr kept the invalidated context 0x%x", round, old_ctx);
		return -1;
	}
	printf("round %d: got the rebound rmr context 0x%x va 0x%llx\n", round,
	       m.rmr.rmr_context, (unsigned long long)m.rmr.virtual_address);
	if (write_through(c, round, 2, &m.rmr, DAT_DTO_SUCCESS, "the rebound rmr"))
		return -1;
	printf("ok round %d: write through the rebound rmr completed\n", round);
	/* the server checks the bytes once DONE arrives, behind the write */
	if (send_msg(c, MSG_DONE, round, NULL))
		return -1;
	CHECK_DAT(dat_ep_disconnect(c->ep, DAT_CLOSE_GRACEFUL_FLAG));
	if (wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED, 0, "disconnect"))
		return -1;
	CHECK_DAT(dat_ep_free(c->ep));
	c->ep = NULL;
	return 0;
}

static int client_round(struct ctx *c, const char *server, int round)
{
	DAT_DTO_COMPLETION_EVENT_DATA d;
	struct msg m;

	if (create_ep(c) || connect_ep(c, server))
		return -1;
	if (wait_dto(c, c->recv_evd, 0, &d, "rmr message"))
		return -1;
	m = c->msgs[0];
	if (d.status != DAT_DTO_SUCCESS || (m.type != MSG_RMR && m.type != MSG_SKIP)) {
		fail("round %d: first message status %d type %u", round, d.status, m.type);
		return -1;
	}
	if (m.type == MSG_SKIP) {
		printf("skip round %d (server has no such windows)\n", round);
		CHECK_DAT(dat_ep_disconnect(c->ep, DAT_CLOSE_ABRUPT_FLAG));
		wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED, 0, "disconnect");
		CHECK_DAT(dat_ep_free(c->ep));
		c->ep = NULL;
		return 0;
	}
	printf("round %d: got rmr context 0x%x va 0x%llx len %u\n", round, m.rmr.rmr_context,
	       (unsigned long long)m.rmr.virtual_address, m.rmr.segment_length);

	if (write_through(c, round, 0, &m.rmr, DAT_DTO_SUCCESS, "the bound rmr"))
		return -1;
	if (round == 2) {
		DAT_RETURN ret = post_msg(c, MSG_DONE, round, NULL, true, m.rmr.rmr_context);

		if (ret == DAT_MODEL_NOT_SUPPORTED) {
			printf("skip round %d: send with invalidate not supported here\n", round);
			if (send_msg(c, MSG_SKIP, round, NULL))
				return -1;
			CHECK_DAT(dat_ep_disconnect(c->ep, DAT_CLOSE_ABRUPT_FLAG));
			wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED, 0, "disconnect");
			CHECK_DAT(dat_ep_free(c->ep));
			c->ep = NULL;
			return 0;
		}
		CHECK_DAT(ret);
		if (wait_dto(c, c->req_evd, 0x5e0 + MSG_DONE, &d, "send with invalidate"))
			return -1;
		if (d.status != DAT_DTO_SUCCESS || d.operation != DAT_DTO_SEND) {
			fail("round %d: send with invalidate: status %d operation %d", round,
			     d.status, d.operation);
			return -1;
		}
		printf("ok round %d: sent done invalidating rmr context 0x%x\n", round,
		       m.rmr.rmr_context);
		if (recv_msg(c, 1, MSG_REVOKED, &(struct msg){ 0 }))
			return -1;
	} else if (send_msg(c, MSG_DONE, round, NULL) ||
		   recv_msg(c, 1, MSG_REVOKED, &(struct msg){ 0 })) {
		return -1;
	}

	if (write_through(c, round, 1, &m.rmr, DAT_DTO_ERR_REMOTE_ACCESS, "the revoked rmr"))
		return -1;
	printf("ok round %d: write through the revoked rmr failed with remote access error\n",
	       round);
	if (wait_conn(c, DAT_CONNECTION_EVENT_BROKEN, 0, "after the failed write"))
		return -1;
	printf("ok round %d: ep broken\n", round);
	CHECK_DAT(dat_ep_free(c->ep));
	c->ep = NULL;
	if (round == 2)
		return client_rebind(c, server, m.rmr.rmr_context);
	return 0;
}

int main(int argc, char **argv)
{
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	static struct ctx c;
	const char *ia;
	bool server;

	if (argc < 2 || (strcmp(argv[1], "server") && (strcmp(argv[1], "client") || argc < 3))) {
		fprintf(stderr, "usage: %s server [IA] | client SERVER_IP [IA]\n", argv[0]);
		return 2;
	}
	server = !strcmp(argv[1], "server");
	ia = argc > (server ? 2 : 3) ? argv[server ? 2 : 3] : "ofx";
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (open_ctx(&c, ia, server))
		return 1;
	if (server) {
		if (dat_psp_create(c.cs.ia, QUAL, c.cs.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp) !=
		    DAT_SUCCESS) {
			fail("psp_create %d", QUAL);
		} else {
			printf("server ready\n");
			for (int r = 0; r < NROUNDS && !failures; r++)
				serve_round(&c, r);
			dat_psp_free(psp);
		}
	} else {
		for (int r = 0; r < NROUNDS && !failures; r++)
			client_round(&c, argv[2], r);
	}
	close_ctx(&c);
	if (failures)
		return 1;
	printf("ALL TESTS PASSED\n");
	return 0;
}
