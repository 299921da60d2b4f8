/* SPDX-License-Identifier: BSD-2-Clause */
#include "xrc_steps.h"
#include "unit.h"

#include "cr.h"
#include "ep.h"
#include "evd.h"
#include "sp.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct xs_mem mem;
static uint64_t buf_cookie[NBUF];	/* the cookie each buffer was posted with */
static struct ofx_ep *buf_ep[NBUF];	/* and the EP */
int nbuf, nsend;
char domfile[4][64];

void setup(int nodes)
{
	xm_init();
	nbuf = nsend = 0;
	for (int i = 0; i < nodes && i < 4; i++) {
		snprintf(domfile[i], sizeof(domfile[i]), "/tmp/ofx-xrc-test-%d-node%d.xrcd",
			 (int)getpid(), i);
		unlink(domfile[i]);
	}
}

void teardown(int nodes)
{
	xm_fini();
	for (int i = 0; i < nodes && i < 4; i++)
		unlink(domfile[i]);
}

struct ofx_xrc_stats stats(struct xm_proc *p)
{
	struct ofx_xrc_stats s;

	CU_ASSERT_EQUAL(ofx_xrc_get_stats(&p->ia, &s), 0);
	return s;
}

DAT_LMR_CONTEXT lkey_of(const struct ofx_ep *ep)
{
	return xm_lkey(xm_proc_of(ep), &mem, sizeof(mem));
}

void post_recv_len(struct ofx_ep *ep, uint64_t cookie, DAT_VLEN len)
{
	DAT_LMR_TRIPLET iov;
	DAT_DTO_COOKIE c = { .as_64 = cookie };

	CU_ASSERT_FATAL(nbuf < NBUF && len <= MSG_LEN);
	memset(mem.recv[nbuf], 0, MSG_LEN);
	buf_cookie[nbuf] = cookie;
	buf_ep[nbuf] = ep;
	iov.lmr_context = lkey_of(ep);
	iov.virtual_address = (uintptr_t)mem.recv[nbuf++];
	iov.segment_length = len;
	CU_ASSERT_EQUAL(ofx_ep_post_recv(ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG),
			DAT_SUCCESS);
}

void post_recv(struct ofx_ep *ep, uint64_t cookie)
{
	post_recv_len(ep, cookie, MSG_LEN);
}

DAT_RETURN send_msg_flags(struct ofx_ep *ep, const char *text, uint64_t cookie,
				 DAT_COMPLETION_FLAGS flags)
{
	char *buf = mem.send[nsend++ % NBUF];
	DAT_LMR_TRIPLET iov = { .lmr_context = lkey_of(ep), .virtual_address = (uintptr_t)buf,
				.segment_length = (DAT_VLEN)strlen(text) + 1 };
	DAT_DTO_COOKIE c = { .as_64 = cookie };

	snprintf(buf, MSG_LEN, "%s", text);
	return ofx_ep_post_send(ep, 1, &iov, c, flags);
}

DAT_RETURN send_msg(struct ofx_ep *ep, const char *text, uint64_t cookie)
{
	return send_msg_flags(ep, text, cookie, DAT_COMPLETION_DEFAULT_FLAG);
}

const char *buf_of(const struct ofx_ep *ep, uint64_t cookie)
{
	for (int b = nbuf - 1; b >= 0; b--)
		if (buf_cookie[b] == cookie && buf_ep[b] == ep)
			return mem.recv[b];
	return "";
}

void expect_recv(struct xm_proc *p, struct ofx_ep *ep, uint64_t cookie, const char *text)
{
	DAT_EVENT ev;
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(p->recv_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(d->ep_handle, ep);
	CU_ASSERT_EQUAL(d->user_cookie.as_64, cookie);
	CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
	CU_ASSERT_EQUAL(d->operation, DAT_DTO_RECEIVE);
	CU_ASSERT_EQUAL(d->transfered_length, strlen(text) + 1);
	CU_ASSERT_STRING_EQUAL(buf_of(ep, cookie), text);
}

void expect_empty(struct ofx_evd *evd)
{
	DAT_EVENT ev;

	CU_ASSERT_EQUAL(DAT_GET_TYPE(ofx_evd_dequeue(evd, &ev)), DAT_QUEUE_EMPTY);
}

void expect_dto_at(struct ofx_evd *evd, struct ofx_ep *ep, uint64_t cookie,
			  DAT_DTO_COMPLETION_STATUS status, int line)
{
	DAT_DTO_COMPLETION_EVENT_DATA *d;
	DAT_EVENT ev;

	if (ofx_evd_dequeue(evd, &ev) != DAT_SUCCESS) {
		fprintf(stderr, "no dto event at line %d\n", line);
		CU_FAIL_FATAL("no dto event");
	}
	d = &ev.event_data.dto_completion_event_data;
	if (d->user_cookie.as_64 != cookie || d->status != status)
		fprintf(stderr, "dto cookie %llu status %d, expected %llu %d at line %d\n",
			(unsigned long long)d->user_cookie.as_64, d->status,
			(unsigned long long)cookie, status, line);
	CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
	CU_ASSERT_PTR_EQUAL(d->ep_handle, ep);
	CU_ASSERT_EQUAL(d->user_cookie.as_64, cookie);
	CU_ASSERT_EQUAL(d->status, status);
}

int evd_fill(struct ofx_evd *evd)
{
	DAT_EVENT ev;
	int n = 0;

	memset(&ev, 0, sizeof(ev));
	ev.event_number = DAT_SOFTWARE_EVENT;
	while (evd->count < evd->qlen) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_post(evd, &ev), 0);
		n++;
	}
	return n;
}

void evd_unfill(struct ofx_evd *evd, int n)
{
	DAT_EVENT ev;

	for (int i = 0; i < n; i++) {
		CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(evd, &ev), DAT_SUCCESS);
		CU_ASSERT_EQUAL_FATAL(ev.event_number, DAT_SOFTWARE_EVENT);
	}
}

int drain_sends(struct xm_proc *p)
{
	DAT_EVENT ev;
	int n = 0;

	while (ofx_evd_dequeue(p->req_evd, &ev) == DAT_SUCCESS) {
		CU_ASSERT_EQUAL(ev.event_number, DAT_DTO_COMPLETION_EVENT);
		CU_ASSERT_EQUAL(ev.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
		n++;
	}
	return n;
}

void expect_conn_at(struct xm_proc *p, struct ofx_ep *ep, DAT_EVENT_NUMBER num, int line)
{
	DAT_EVENT ev;

	if (ofx_evd_dequeue(p->conn_evd, &ev) != DAT_SUCCESS) {
		fprintf(stderr, "no connection event at line %d\n", line);
		CU_FAIL_FATAL("no connection event");
	}
	if (ev.event_number != num)
		fprintf(stderr, "event 0x%x, expected 0x%x at line %d\n", ev.event_number, num,
			line);
	CU_ASSERT_EQUAL(ev.event_number, num);
	CU_ASSERT_PTR_EQUAL(ev.event_data.connect_event_data.ep_handle, ep);
}

void expect_qp_counts_at(struct xm_proc *const *p, const int *ini, int np,
				const int *tgts, int nnodes, int line)
{
	int rc = xm_live_qps(IBV_QPT_RC);

	if (rc)
		fprintf(stderr, "%d rc qp(s) at line %d\n", rc, line);
	CU_ASSERT_EQUAL(rc, 0);
	for (int i = 0; i < np; i++) {
		int dev = xm_proc_inis(p[i]);
		unsigned long live = stats(p[i]).ini_live;

		if (dev != ini[i] || live != (unsigned long)ini[i])
			fprintf(stderr, "process %d: %d ini qp(s), ini_live %lu, expected %d "
				"at line %d\n", i, dev, live, ini[i], line);
		CU_ASSERT_EQUAL(dev, ini[i]);
		CU_ASSERT_EQUAL(live, (unsigned long)ini[i]);
	}
	for (int k = 0; k < nnodes; k++) {
		if (xm_tgts_on_node(k) != tgts[k])
			fprintf(stderr, "node %d: %d tgt qp(s), expected %d at line %d\n", k,
				xm_tgts_on_node(k), tgts[k], line);
		CU_ASSERT_EQUAL(xm_tgts_on_node(k), tgts[k]);
	}
}

void pair(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b, struct ofx_ep *eb,
		 int n)
{
	for (int i = 0; i < n; i++) {
		post_recv(ea, 1000 + i);
		post_recv(eb, 2000 + i);
	}
	xm_connect(a, ea, b, eb, "hello", 6, "welcome", 8);
	expect_conn(a, ea, DAT_CONNECTION_EVENT_ESTABLISHED);
	expect_conn(b, eb, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_EQUAL(ea->state, OFX_EP_CONNECTED);
	CU_ASSERT_EQUAL(eb->state, OFX_EP_CONNECTED);
}

void open_pair(struct xm_proc **a, struct ofx_ep **ea, struct xm_proc **b,
		      struct ofx_ep **eb)
{
	*a = xm_proc_open(0, domfile[0], OFX_XRC_TGT_DOMAIN);
	*b = xm_proc_open(1, domfile[1], OFX_XRC_TGT_DOMAIN);
	*ea = xm_ep_new(*a);
	*eb = xm_ep_new(*b);
}

void open_connected_pair(struct xm_proc **a, struct ofx_ep **ea, struct xm_proc **b,
				struct ofx_ep **eb)
{
	open_pair(a, ea, b, eb);
	pair(*a, *ea, *b, *eb, 1);
}

void ping_pong(struct xm_proc *a, struct ofx_ep *ea, uint64_t ck_a, struct xm_proc *b,
		      struct ofx_ep *eb, uint64_t ck_b)
{
	CU_ASSERT_EQUAL(send_msg(ea, "ping", 3), DAT_SUCCESS);
	CU_ASSERT_EQUAL(send_msg(eb, "pong", 4), DAT_SUCCESS);
	expect_recv(b, eb, ck_b, "ping");
	expect_recv(a, ea, ck_a, "pong");
}

void expect_xrc_only(struct xm_proc *p, unsigned long n)
{
	struct ofx_xrc_stats s = stats(p);

	CU_ASSERT_EQUAL(s.conn_xrc, n);
	CU_ASSERT_EQUAL(s.conn_rc, 0);
}

DAT_PSP_HANDLE psp_open(struct xm_proc *p)
{
	DAT_PSP_HANDLE psp = NULL;

	CU_ASSERT_EQUAL_FATAL(ofx_psp_create(&p->ia, QUAL, p->cr_evd, DAT_PSP_CONSUMER_FLAG, &psp),
			      DAT_SUCCESS);
	return psp;
}

DAT_CR_HANDLE expect_cr(struct xm_proc *b, DAT_PSP_HANDLE psp, DAT_CONN_QUAL qual,
			const void *pdata, int len)
{
	DAT_CR_ARRIVAL_EVENT_DATA *d;
	DAT_CR_PARAM param;
	DAT_EVENT ev;

	CU_ASSERT_EQUAL_FATAL(ofx_evd_dequeue(b->cr_evd, &ev), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_REQUEST_EVENT);
	d = &ev.event_data.cr_arrival_event_data;
	CU_ASSERT_PTR_EQUAL(d->sp_handle.psp_handle, psp);
	CU_ASSERT_EQUAL(d->conn_qual, qual);
	CU_ASSERT_EQUAL_FATAL(ofx_cr_query(d->cr_handle, DAT_CR_FIELD_ALL, &param), DAT_SUCCESS);
	CU_ASSERT_EQUAL(param.private_data_size, len);
	if (len && pdata)
		CU_ASSERT_EQUAL(memcmp(param.private_data, pdata, (size_t)len), 0);
	return d->cr_handle;
}

DAT_CR_HANDLE dat_request(struct xm_proc *a, struct ofx_ep *ea, struct xm_proc *b,
			  DAT_PSP_HANDLE psp, const void *pdata, int len)
{
	CU_ASSERT_EQUAL(ofx_ep_connect(ea, (DAT_IA_ADDRESS_PTR)&b->ia.addr, QUAL,
				       DAT_TIMEOUT_INFINITE, len, (DAT_PVOID)pdata,
				       DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG),
			DAT_SUCCESS);
	xm_pump();
	return expect_cr(b, psp, QUAL, pdata, len);
}

void expect_established_at(struct xm_proc *p, struct ofx_ep *ep, const void *pdata,
				  int len, int line)
{
	DAT_CONNECTION_EVENT_DATA *d;
	DAT_EVENT ev;

	if (ofx_evd_dequeue(p->conn_evd, &ev) != DAT_SUCCESS) {
		fprintf(stderr, "no connection event at line %d\n", line);
		CU_FAIL_FATAL("no connection event");
	}
	d = &ev.event_data.connect_event_data;
	if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED)
		fprintf(stderr, "event 0x%x at line %d\n", ev.event_number, line);
	CU_ASSERT_EQUAL(ev.event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	CU_ASSERT_PTR_EQUAL(d->ep_handle, ep);
	CU_ASSERT_EQUAL(d->private_data_size, len);
	if (len && d->private_data_size == len)
		CU_ASSERT_EQUAL(memcmp(d->private_data, pdata, (size_t)len), 0);
}

const DAT_IB_EXTENSION_EVENT_DATA *ext_of(const DAT_EVENT *ev)
{
	return (const DAT_IB_EXTENSION_EVENT_DATA *)ev->event_extension_data;
}

void expect_ext_dto_at(struct ofx_evd *evd, struct ofx_ep *ep, uint64_t cookie,
			      DAT_IB_EXT_TYPE type, DAT_EVENT *ev, int line)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;

	if (ofx_evd_dequeue(evd, ev) != DAT_SUCCESS) {
		fprintf(stderr, "no dto event at line %d\n", line);
		CU_FAIL_FATAL("no dto event");
	}
	if (ev->event_number != (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT || ext_of(ev)->type != type)
		fprintf(stderr, "event 0x%x type %d, expected %d at line %d\n", ev->event_number,
			ext_of(ev)->type, type, line);
	CU_ASSERT_EQUAL(ev->event_number, (DAT_EVENT_NUMBER)DAT_IB_DTO_EVENT);
	CU_ASSERT_EQUAL(ext_of(ev)->type, type);
	CU_ASSERT_EQUAL(ext_of(ev)->status, DAT_OP_SUCCESS);
	CU_ASSERT_PTR_EQUAL(d->ep_handle, ep);
	CU_ASSERT_EQUAL(d->user_cookie.as_64, cookie);
	CU_ASSERT_EQUAL(d->status, DAT_DTO_SUCCESS);
}

struct ofx_ep *ep_with_iov(struct xm_proc *p, int iov)
{
	return xm_ep_with(p, iov, 4);
}
