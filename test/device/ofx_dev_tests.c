/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx_dev_tests: a DAT consumer linked against stock libdat2 that selects
 * libdaplofx through dat.conf and checks what the stock tools cannot:
 *
 *   p2p_passive_first   with p2p on, the passive side sends the moment it
 *                       sees ESTABLISHED; its pre-posted receives then get
 *                       exactly the active side's messages, in order, and
 *                       never the provider's RTR; ep_query reports P2P_ACTIVE=on.
 *   p2p_ep_attr_off     a per-EP "P2P"="off" attribute on the active EP
 *                       overrides ia_params p2p=on: both ends report
 *                       P2P_ACTIVE=off (the active one P2P=off, its setting)
 *                       and data still flows.
 *   cr_handoff          the server's PSP hands the request to a second PSP
 *                       (dat_cr_handoff); it arrives on that PSP's CR EVD
 *                       with its qualifier and is accepted there.  Before
 *                       that, dat_ep_recv_query counts the pre-posted
 *                       receives and their lengths.
 *   psp_provider_ep     a DAT_PSP_PROVIDER_FLAG PSP: the request arrives
 *                       with the provider's EP in TENTATIVE_CONNECTION_PENDING
 *                       and no PZ; the server completes it with dat_ep_modify
 *                       (PZ, EVDs, queue sizes), pre-posts its receives and
 *                       accepts with dat_cr_accept(cr, NULL); data then flows
 *                       as in the other cases.
 *   pdata_max           the largest private data dat_ia_query reports
 *                       (max_private_data_size) goes both ways: the server's
 *                       request event and the client's ESTABLISHED event
 *                       carry exactly that many bytes, and the right ones
 *                       (iWARP delivers exact lengths; on IB/RoCE the
 *                       provider's trailer gives them).
 *
 * Usage: ofx_dev_tests server [IA [first:P2P]]          (prints "server ready")
 *        ofx_dev_tests client SERVER_IP [IA [first:P2P]]
 * IA defaults to ofx-p2p.  With first:on or first:off only p2p_passive_first
 * runs, expecting that P2P_ACTIVE (the wire check of suite.sh captures it).
 * With active-first:on or active-first:off it runs the other way round: the
 * active side sends its first message the moment it sees ESTABLISHED, the
 * passive side answers once it arrived, and only then the rest follow (MPA's
 * initiator-first order, which a p2p-off consumer keeps on iWARP; a lost
 * first message stalls both sides).
 * $OFX_DEV_SKIP: a comma list of cases not to run (both sides must agree).
 * Prints "ALL TESTS PASSED" or "FAIL: ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <dat2/udat.h>

#include "consumer.h"

#define QUAL 50001
#define MSG_LEN 64
#define NRECV 4
#define NMSG 3
#define TIMEOUT_US (20 * 1000 * 1000)

struct conn {
	struct consumer cs;	/* its LMR covers buf */
	DAT_EVD_HANDLE dto_evd;
	DAT_EP_HANDLE ep;
	char buf[(NRECV + NMSG + 1) * MSG_LEN];
	/*
	 * Completions of the other direction that came first: a send's and
	 * the peer's answer's are on different queues (iWARP completes a send
	 * locally, and under load siw can write the answer's CQE first).
	 */
	DAT_EVENT early[NRECV + NMSG];
	int nearly;
};

static int open_conn(struct conn *c, const char *ia_name)
{
	memset(c, 0, sizeof(*c));
	if (consumer_open(&c->cs, ia_name, c->buf, sizeof(c->buf), 8))
		return -1;
	CHECK_DAT(dat_evd_create(c->cs.ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &c->dto_evd));
	return 0;
}

static void close_conn(struct conn *c)
{
	if (c->ep)
		dat_ep_free(c->ep);
	dat_evd_free(c->dto_evd);
	consumer_close(&c->cs);
}

static int create_ep(struct conn *c, const char *p2p_attr)
{
	DAT_EP_ATTR attr;
	DAT_NAMED_ATTR named = { "P2P", p2p_attr };

	if (ep_default_attr(&c->cs, c->dto_evd, &attr))
		return -1;
	attr.max_recv_dtos = NRECV + 2;
	attr.max_request_dtos = NMSG + 2;
	attr.ep_provider_specific_count = p2p_attr ? 1 : 0;
	attr.ep_provider_specific = p2p_attr ? &named : NULL;
	CHECK_DAT(dat_ep_create(c->cs.ia, c->cs.pz, c->dto_evd, c->dto_evd, c->cs.conn_evd, &attr,
				&c->ep));
	return 0;
}

static DAT_LMR_TRIPLET slot(struct conn *c, int i)
{
	return lmr_iov(&c->cs, c->buf + i * MSG_LEN, MSG_LEN);
}

static int post_recvs(struct conn *c)
{
	for (int i = 0; i < NRECV; i++) {
		DAT_LMR_TRIPLET iov = slot(c, i);

		CHECK_DAT(dat_ep_post_recv(c->ep, 1, &iov, (DAT_DTO_COOKIE)(DAT_UINT64)i,
					   DAT_COMPLETION_DEFAULT_FLAG));
	}
	return 0;
}

static int send_msg(struct conn *c, int idx, const char *text)
{
	DAT_LMR_TRIPLET iov = slot(c, NRECV + idx);

	memset(c->buf + (NRECV + idx) * MSG_LEN, 0, MSG_LEN);
	snprintf(c->buf + (NRECV + idx) * MSG_LEN, MSG_LEN, "%s", text);
	CHECK_DAT(dat_ep_post_send(c->ep, 1, &iov, (DAT_DTO_COOKIE)(DAT_UINT64)(100 + idx),
				   DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

/* Waits for one DTO event; checks its kind and, for receives, its contents. */
/* The oldest early completion of operation `op`, taken out of the list. */
static bool take_early(struct conn *c, DAT_DTOS op, DAT_EVENT *ev)
{
	for (int i = 0; i < c->nearly; i++) {
		if (c->early[i].event_data.dto_completion_event_data.operation != op)
			continue;
		*ev = c->early[i];
		memmove(&c->early[i], &c->early[i + 1], (c->nearly - i - 1) * sizeof(*ev));
		c->nearly--;
		return true;
	}
	return false;
}

/*
 * The next completion of this EP: an early one of `op` first; a successful
 * one of the other direction is kept for later.  Within one direction the
 * order is the posting order and is checked.
 */
static int next_dto(struct conn *c, DAT_DTOS op, DAT_EVENT *ev)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;

	if (take_early(c, op, ev))
		return 0;
	for (;;) {
		if (wait_event(c->dto_evd, TIMEOUT_US, 0, ev, "dto completion"))
			return -1;
		if (ev->event_number != DAT_DTO_COMPLETION_EVENT)
			return 0;
		/* flushed receives of the previous connection's EP may still be queued */
		if (d->ep_handle != c->ep && d->status == DAT_DTO_ERR_FLUSHED)
			continue;
		if (d->ep_handle == c->ep && d->status == DAT_DTO_SUCCESS && d->operation != op &&
		    c->nearly < (int)(sizeof(c->early) / sizeof(c->early[0]))) {
			c->early[c->nearly++] = *ev;
			continue;
		}
		return 0;
	}
}

static int wait_dto(struct conn *c, DAT_DTOS op, DAT_UINT64 cookie, const char *text)
{
	DAT_EVENT ev;
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	if (next_dto(c, op, &ev))
		return -1;
	if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->status != DAT_DTO_SUCCESS) {
		fail("dto event 0x%x status %d (operation %d, cookie %llu, waiting for op %d cookie %llu)",
		     ev.event_number, d->status, d->operation,
		     (unsigned long long)d->user_cookie.as_64, op, (unsigned long long)cookie);
		return -1;
	}
	if (d->operation != op || d->user_cookie.as_64 != cookie || d->ep_handle != c->ep) {
		fail("dto op %d cookie %llu, expected op %d cookie %llu", d->operation,
		     (unsigned long long)d->user_cookie.as_64, op, (unsigned long long)cookie);
		return -1;
	}
	if (op == DAT_DTO_RECEIVE) {
		const char *got = c->buf + cookie * MSG_LEN;

		if (d->transfered_length != MSG_LEN || strcmp(got, text)) {
			fail("recv %llu: %u bytes \"%.*s\", expected %d bytes \"%s\" (an RTR "
			     "consumed a consumer buffer?)", (unsigned long long)cookie,
			     d->transfered_length, MSG_LEN, got, MSG_LEN, text);
			return -1;
		}
	}
	return 0;
}

static int wait_conn(struct conn *c, DAT_EVENT_NUMBER expect)
{
	DAT_EVENT ev;

	return wait_event(c->cs.conn_evd, TIMEOUT_US, expect, &ev, NULL);
}

/* The value of provider-specific attribute `name` in an ep_query, or NULL. */
static const char *ep_query_value(const DAT_EP_PARAM *param, const char *name)
{
	for (int i = 0; i < param->ep_attr.ep_provider_specific_count; i++) {
		const DAT_NAMED_ATTR *a = &param->ep_attr.ep_provider_specific[i];

		if (!strcmp(a->name, name))
			return a->value;
	}
	return NULL;
}

/*
 * P2P_ACTIVE is what the connection negotiated; P2P is the EP's own
 * setting, `want_setting` ("auto" unless the EP was created with one).
 */
static int expect_p2p(struct conn *c, const char *want, const char *want_setting,
		      const char *side)
{
	const char *active, *setting;
	DAT_EP_PARAM param;

	CHECK_DAT(dat_ep_query(c->ep, DAT_EP_FIELD_ALL, &param));
	active = ep_query_value(&param, "P2P_ACTIVE");
	setting = ep_query_value(&param, "P2P");
	if (!active || strcmp(active, want) || !setting || strcmp(setting, want_setting)) {
		fail("%s: ep_query P2P_ACTIVE=%s P2P=%s, expected %s and %s", side,
		     active ? active : "(none)", setting ? setting : "(none)", want, want_setting);
		return -1;
	}
	return 0;
}

static char expected_text[NMSG][MSG_LEN];
/* active-first:P2P: the active side's messages go first, the passive side answers */
static bool active_sends_first;

/* Whether $OFX_DEV_SKIP names `tag`; a skipped case says so. */
static bool skipped(const char *tag)
{
	const char *list = getenv("OFX_DEV_SKIP");
	size_t n = strlen(tag);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "") {
		if (!strncmp(p, tag, n) && (p[n] == ',' || p[n] == 0)) {
			printf("skip %s ($OFX_DEV_SKIP)\n", tag);
			return true;
		}
	}
	return false;
}

/* Private data of the pdata_max case: `len` bytes, a different pattern each way. */
static void fill_pdata(unsigned char *p, int len, unsigned int seed)
{
	for (int i = 0; i < len; i++)
		p[i] = (unsigned char)(i * seed + 1);
}

static int check_pdata(const char *what, const void *got, DAT_COUNT got_len, int want_len,
		       unsigned int seed)
{
	unsigned char want[256];

	fill_pdata(want, want_len, seed);
	if (got_len != want_len || (want_len && (!got || memcmp(got, want, want_len)))) {
		fail("pdata_max: %s carried %d bytes%s, expected %d", what, got_len,
		     got_len == want_len ? " with the wrong contents" : "", want_len);
		return -1;
	}
	printf("ok pdata_max: %s carried exactly %d bytes\n", what, want_len);
	return 0;
}

static int max_pdata(const struct conn *c)
{
	DAT_PROVIDER_ATTR pattr;

	if (dat_ia_query(c->cs.ia, NULL, DAT_IA_FIELD_NONE, NULL,
			 DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE, &pattr) != DAT_SUCCESS)
		return -1;
	if (pattr.max_private_data_size <= 0 || pattr.max_private_data_size > 256) {
		fail("pdata_max: ia_query max_private_data_size %d", pattr.max_private_data_size);
		return -1;
	}
	printf("pdata_max: max_private_data_size %d\n", pattr.max_private_data_size);
	return pattr.max_private_data_size;
}

/* With `handoff`, the request is handed from QUAL's PSP to QUAL + 1's. */
static int take_request(struct conn *c, bool handoff, DAT_PSP_HANDLE psp2,
			DAT_EVD_HANDLE cr_evd2, const char *tag, DAT_CR_HANDLE *cr_p)
{
	DAT_EVENT ev;

	if (wait_event(c->cs.cr_evd, TIMEOUT_US, DAT_CONNECTION_REQUEST_EVENT, &ev, tag))
		return -1;
	*cr_p = ev.event_data.cr_arrival_event_data.cr_handle;
	if (!handoff)
		return 0;
	CHECK_DAT(dat_cr_handoff(*cr_p, QUAL + 1));
	if (wait_event(cr_evd2, TIMEOUT_US, 0, &ev, "the handed-off request"))
		return -1;
	if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT ||
	    ev.event_data.cr_arrival_event_data.conn_qual != QUAL + 1 ||
	    ev.event_data.cr_arrival_event_data.sp_handle.psp_handle != psp2) {
		fail("%s: after handoff: event 0x%x qual %llu", tag, ev.event_number,
		     (unsigned long long)ev.event_data.cr_arrival_event_data.conn_qual);
		return -1;
	}
	*cr_p = ev.event_data.cr_arrival_event_data.cr_handle;
	printf("ok %s: request handed off to qual %d\n", tag, QUAL + 1);
	return 0;
}

/*
 * The EP a DAT_PSP_PROVIDER_FLAG request came with: checks it is tentative
 * and bare, then gives it what create_ep gives a consumer EP.
 */
static int complete_provider_ep(struct conn *c, DAT_CR_HANDLE cr, const char *tag)
{
	DAT_EP_PARAM param;
	DAT_CR_PARAM crp;

	CHECK_DAT(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	if (crp.local_ep_handle == DAT_HANDLE_NULL) {
		fail("%s: the request has no provider EP", tag);
		return -1;
	}
	c->ep = crp.local_ep_handle;
	CHECK_DAT(dat_ep_query(c->ep, DAT_EP_FIELD_ALL, &param));
	if (param.ep_state != DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING ||
	    param.pz_handle != DAT_HANDLE_NULL || param.connect_evd_handle != DAT_HANDLE_NULL) {
		fail("%s: provider EP in state %d with pz %p conn evd %p", tag, param.ep_state,
		     param.pz_handle, param.connect_evd_handle);
		return -1;
	}
	param.pz_handle = c->cs.pz;
	param.recv_evd_handle = c->dto_evd;
	param.request_evd_handle = c->dto_evd;
	param.connect_evd_handle = c->cs.conn_evd;
	param.ep_attr.max_recv_dtos = NRECV + 2;
	param.ep_attr.max_request_dtos = NMSG + 2;
	CHECK_DAT(dat_ep_modify(c->ep, DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
				DAT_EP_FIELD_REQUEST_EVD_HANDLE | DAT_EP_FIELD_CONNECT_EVD_HANDLE |
				DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS |
				DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, &param));
	CHECK_DAT(dat_ep_query(c->ep, DAT_EP_FIELD_ALL, &param));
	if (param.pz_handle != c->cs.pz || param.ep_attr.max_recv_dtos != NRECV + 2 ||
	    param.ep_state != DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING) {
		fail("%s: ep_modify did not take (pz %p, max_recv_dtos %d, state %d)", tag,
		     param.pz_handle, param.ep_attr.max_recv_dtos, param.ep_state);
		return -1;
	}
	return post_recvs(c);
}

/*
 * A slow server (valgrind) can see a client's retry arrive after it took
 * the first request: once the PSP is freed, such a request is refused, but
 * its event is still queued and its CR valid until rejected.
 */
/*
 * dat_ep_free: the flushed receives the EP's connection left (NRECV were
 * posted, fewer consumed) may already be events in the DTO EVD, naming the
 * freed handle, which the next case's EP can get again from malloc: take
 * them out now, while they can still be told apart.  Nothing else may be
 * left there.
 */
static int free_ep(struct conn *c, const char *tag)
{
	DAT_EVENT ev;
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	CHECK_DAT(dat_ep_free(c->ep));
	if (c->nearly) {
		fail("%s: %d completions nobody waited for", tag, c->nearly);
		return -1;
	}
	while (dat_evd_dequeue(c->dto_evd, &ev) == DAT_SUCCESS) {
		if (ev.event_number != DAT_DTO_COMPLETION_EVENT || d->ep_handle != c->ep ||
		    d->status != DAT_DTO_ERR_FLUSHED || d->operation != DAT_DTO_RECEIVE) {
			fail("%s: after ep_free: event 0x%x status %d operation %d", tag,
			     ev.event_number, d->status, d->operation);
			return -1;
		}
	}
	c->ep = NULL;
	return 0;
}

static int drop_stale_requests(struct conn *c, const char *tag)
{
	DAT_EVENT ev;

	while (dat_evd_dequeue(c->cs.cr_evd, &ev) == DAT_SUCCESS) {
		if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
			fail("%s: stray event 0x%x on the cr evd", tag, ev.event_number);
			return -1;
		}
		CHECK_DAT(dat_cr_reject(ev.event_data.cr_arrival_event_data.cr_handle, 0, NULL));
		printf("%s: rejected a request left over from a retry\n", tag);
	}
	return 0;
}

enum serve_mode { SERVE_PLAIN, SERVE_HANDOFF, SERVE_PROVIDER_EP, SERVE_PDATA_MAX };

/* pdata_max, passive side: the request's data, then the same amount back. */
static int accept_pdata_max(struct conn *c, DAT_CR_HANDLE cr)
{
	unsigned char rep[256];
	DAT_CR_PARAM crp;
	int max = max_pdata(c);

	if (max < 0)
		return -1;
	CHECK_DAT(dat_cr_query(cr, DAT_CR_FIELD_ALL, &crp));
	if (check_pdata("request", crp.private_data, crp.private_data_size, max, 7))
		return -1;
	fill_pdata(rep, max, 13);
	CHECK_DAT(dat_cr_accept(cr, c->ep, max, rep));
	return 0;
}

/* A DAT call's failure as CHECK_DAT reports it, without returning: -1 or 0. */
static int check_dat(DAT_RETURN ret, const char *call)
{
	if (ret == DAT_SUCCESS)
		return 0;
	fail("%s: %s", call, dat_errstr(ret));
	return -1;
}

/* The connection of serve_one, once its PSPs listen. */
static int serve_connection(struct conn *c, const char *want_p2p, const char *tag,
			    enum serve_mode mode, DAT_PSP_HANDLE psp2, DAT_EVD_HANDLE cr_evd2)
{
	bool handoff = mode == SERVE_HANDOFF;
	DAT_CR_HANDLE cr;

	printf("server ready (%s)\n", tag);
	fflush(stdout);
	if (take_request(c, handoff, psp2, cr_evd2, tag, &cr))
		return -1;
	if (mode == SERVE_PROVIDER_EP) {
		if (complete_provider_ep(c, cr, tag))
			return -1;
		CHECK_DAT(dat_cr_accept(cr, DAT_HANDLE_NULL, 0, NULL));
	} else if (mode == SERVE_PDATA_MAX) {
		if (accept_pdata_max(c, cr))
			return -1;
	} else {
		CHECK_DAT(dat_cr_accept(cr, c->ep, 0, NULL));
	}
	if (wait_conn(c, DAT_CONNECTION_EVENT_ESTABLISHED))
		return -1;
	/*
	 * the passive side transmits first, at once; told to answer, it sends
	 * once the active side's first message is in
	 */
	for (int i = 0; i < NMSG; i++) {
		if (i == (active_sends_first ? 1 : 0) &&
		    (send_msg(c, 0, "passive-first") || wait_dto(c, DAT_DTO_SEND, 100, NULL)))
			return -1;
		if (wait_dto(c, DAT_DTO_RECEIVE, i, expected_text[i]))
			return -1;
	}
	if (expect_p2p(c, want_p2p, "auto", tag))
		return -1;
	return wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED);
}

/* Frees what serve_one created: each one, whatever an earlier free gave. */
static int free_psps(DAT_PSP_HANDLE psp, DAT_PSP_HANDLE psp2, DAT_EVD_HANDLE cr_evd2)
{
	int rc = 0;

	if (psp2 != DAT_HANDLE_NULL && check_dat(dat_psp_free(psp2), "dat_psp_free(psp2)"))
		rc = -1;
	if (cr_evd2 != DAT_HANDLE_NULL && check_dat(dat_evd_free(cr_evd2), "dat_evd_free(cr_evd2)"))
		rc = -1;
	if (psp != DAT_HANDLE_NULL && check_dat(dat_psp_free(psp), "dat_psp_free(psp)"))
		rc = -1;
	return rc;
}

/*
 * One passive connection: pre-post, accept, send first, then receive.  The
 * PSPs are freed whatever happened, so that a failed case leaves the
 * qualifier free for the next one (which then fails or passes on its own).
 */
static int serve_one(struct conn *c, const char *want_p2p, const char *tag, enum serve_mode mode)
{
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL, psp2 = DAT_HANDLE_NULL;
	DAT_EVD_HANDLE cr_evd2 = DAT_HANDLE_NULL;
	DAT_COUNT nbufs, span;
	DAT_RETURN ret;
	int rc = -1;

	if (mode != SERVE_PROVIDER_EP && (create_ep(c, NULL) || post_recvs(c)))
		return -1;
	if (mode != SERVE_PROVIDER_EP) {
		CHECK_DAT(dat_ep_recv_query(c->ep, &nbufs, &span));
		if (nbufs != NRECV || span != NRECV * MSG_LEN) {
			fail("%s: ep_recv_query %d buffers spanning %d, expected %d and %d", tag,
			     nbufs, span, NRECV, NRECV * MSG_LEN);
			return -1;
		}
	}
	ret = dat_psp_create(c->cs.ia, QUAL, c->cs.cr_evd, mode == SERVE_PROVIDER_EP ?
			     DAT_PSP_PROVIDER_FLAG : DAT_PSP_CONSUMER_FLAG, &psp);
	if (ret != DAT_SUCCESS) {
		fail("%s: dat_psp_create qual %d: %s", tag, QUAL, dat_errstr(ret));
		return -1;
	}
	if (mode == SERVE_HANDOFF) {
		ret = dat_evd_create(c->cs.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd2);
		if (ret == DAT_SUCCESS)
			ret = dat_psp_create(c->cs.ia, QUAL + 1, cr_evd2, DAT_PSP_CONSUMER_FLAG,
					     &psp2);
		if (ret != DAT_SUCCESS) {
			fail("%s: the handoff's evd and psp: %s", tag, dat_errstr(ret));
			goto out;
		}
	}
	rc = serve_connection(c, want_p2p, tag, mode, psp2, cr_evd2);
out:
	if (free_psps(psp, psp2, cr_evd2))
		rc = -1;
	if (rc)
		return -1;
	if (free_ep(c, tag))
		return -1;
	return drop_stale_requests(c, tag);
}

/* Between connect attempts: dat_ep_reset dropped the receives, post them again. */
static int connect_again(void *arg, DAT_EP_HANDLE *ep_p)
{
	CHECK_DAT(dat_ep_reset(*ep_p));
	return post_recvs(arg);
}

static int connect_one(struct conn *c, const char *server, const char *p2p_attr,
		       const char *want_p2p, const char *tag)
{
	struct connect_req req = { .ip = server, .qual = QUAL, .timeout_us = TIMEOUT_US,
				   .retry_s = 10, .pause_ms = 200, .again = connect_again,
				   .arg = c };
	const DAT_CONNECTION_EVENT_DATA *cd;
	unsigned char pdata[256];
	DAT_EVENT ev;
	int max = 0;

	if (!strcmp(tag, "pdata_max")) {
		max = max_pdata(c);
		if (max < 0)
			return -1;
		fill_pdata(pdata, max, 7);
		req.pdata = pdata;
		req.pdata_len = max;
	}
	if (create_ep(c, p2p_attr) || post_recvs(c))
		return -1;
	/* the server may still be setting up */
	if (connect_retry(&c->cs, &c->ep, &req, &ev))
		return -1;
	cd = &ev.event_data.connect_event_data;
	if (max && check_pdata("reply", cd->private_data, cd->private_data_size, max, 13))
		return -1;
	if (!active_sends_first && wait_dto(c, DAT_DTO_RECEIVE, 0, "passive-first"))
		return -1;
	/* active first: one message, then nothing until the answer came */
	for (int i = 0; i < NMSG; i++) {
		if (send_msg(c, i, expected_text[i]) || wait_dto(c, DAT_DTO_SEND, 100 + i, NULL))
			return -1;
		if (active_sends_first && !i && wait_dto(c, DAT_DTO_RECEIVE, 0, "passive-first"))
			return -1;
	}
	if (expect_p2p(c, want_p2p, p2p_attr ? p2p_attr : "auto", tag))
		return -1;
	CHECK_DAT(dat_ep_disconnect(c->ep, DAT_CLOSE_GRACEFUL_FLAG));
	if (wait_conn(c, DAT_CONNECTION_EVENT_DISCONNECTED))
		return -1;
	return free_ep(c, tag);
}

int main(int argc, char **argv)
{
	const char *ia, *only_first = NULL;
	struct conn c;
	bool server;
	int nopt;

	if (argc < 2 || (strcmp(argv[1], "server") && (strcmp(argv[1], "client") || argc < 3))) {
		fprintf(stderr, "usage: %s server [IA [[active-]first:on|off]] | "
			"client SERVER_IP [IA [[active-]first:on|off]]\n", argv[0]);
		return 2;
	}
	server = !strcmp(argv[1], "server");
	nopt = server ? 2 : 3;
	ia = argc > nopt ? argv[nopt] : "ofx-p2p";
	if (argc > nopt + 1) {
		only_first = argv[nopt + 1];
		if (!strncmp(only_first, "active-", strlen("active-"))) {
			active_sends_first = true;
			only_first += strlen("active-");
		}
		if (strcmp(only_first, "first:on") && strcmp(only_first, "first:off")) {
			fprintf(stderr, "%s: unknown option %s\n", argv[0], only_first);
			return 2;
		}
		only_first += strlen("first:");
	}
	for (int i = 0; i < NMSG; i++)
		snprintf(expected_text[i], MSG_LEN, "active-message-%d", i);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (open_conn(&c, ia))
		return 1;
	if (only_first) {
		const char *tag = active_sends_first ? "active_first" : "p2p_passive_first";

		if (server ? !serve_one(&c, only_first, tag, SERVE_PLAIN) :
			     !connect_one(&c, argv[2], NULL, only_first, tag))
			printf("ok %s (%s, p2p %s)\n", tag, argv[1], only_first);
	} else if (server) {
		if (!serve_one(&c, "on", "p2p_passive_first", SERVE_PLAIN))
			printf("ok p2p_passive_first (server)\n");
		if (!skipped("p2p_ep_attr_off") && !serve_one(&c, "off", "p2p_ep_attr_off", SERVE_PLAIN))
			printf("ok p2p_ep_attr_off (server)\n");
		if (!skipped("cr_handoff") && !serve_one(&c, "on", "cr_handoff", SERVE_HANDOFF))
			printf("ok cr_handoff (server)\n");
		if (!skipped("psp_provider_ep") && !serve_one(&c, "on", "psp_provider_ep", SERVE_PROVIDER_EP))
			printf("ok psp_provider_ep (server)\n");
		if (!skipped("pdata_max") && !serve_one(&c, "on", "pdata_max", SERVE_PDATA_MAX))
			printf("ok pdata_max (server)\n");
	} else {
		if (!connect_one(&c, argv[2], NULL, "on", "p2p_passive_first"))
			printf("ok p2p_passive_first (client)\n");
		if (!skipped("p2p_ep_attr_off") &&
		    !connect_one(&c, argv[2], "off", "off", "p2p_ep_attr_off"))
			printf("ok p2p_ep_attr_off (client)\n");
		if (!skipped("cr_handoff") && !connect_one(&c, argv[2], NULL, "on", "cr_handoff"))
			printf("ok cr_handoff (client)\n");
		if (!skipped("psp_provider_ep") &&
		    !connect_one(&c, argv[2], NULL, "on", "psp_provider_ep"))
			printf("ok psp_provider_ep (client)\n");
		if (!skipped("pdata_max") && !connect_one(&c, argv[2], NULL, "on", "pdata_max"))
			printf("ok pdata_max (client)\n");
	}
	close_conn(&c);
	if (failures)
		return 1;
	printf("ALL TESTS PASSED\n");
	return 0;
}
