/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx_xrc_hw: the XRC cases of dapltest-scripts/xrc-hw.sh that no stock
 * program can drive (it needs an XRC device: mlx4/mlx5 class).  A DAT
 * consumer linked against stock libdat2; the IA must run xrc=on, and the
 * processes of a node must share a domain file (xrcd).  Every EP of a
 * process shares one request EVD and PZ, so a process has one INI QP per
 * remote node; each EP has a receive EVD of its own, so one EP's receive
 * completions can be left unpolled without holding up the others.
 *
 *   ofx_xrc_hw server IA QUAL [CONNS]
 *       Accepts connections on QUAL, echoes every "ECHO ..." message, and
 *       runs the hold protocol below; exits when CONNS (default 1)
 *       connections have ended.  Prints "server ready qual Q pid P".
 *   ofx_xrc_hw client IA SERVER_IP unpolled QUAL
 *       Graceful disconnect with unpolled receive completions: EP 0 stays,
 *       EPs 1 and 2 each send HOLD and 4 messages the server never polls;
 *       the server disconnects EP 1 gracefully itself (then drains and
 *       frees it), the client disconnects EP 2 (the server frees it first,
 *       then drains).  Each drain must find the 4 messages, in order, as
 *       successful receive completions (FLUSHED for receives still posted
 *       is allowed); EP 0 must then still echo both ways, never BROKEN.
 *   ofx_xrc_hw client IA SERVER_IP survive|break QUAL1 QUAL2
 *       A TGT shared by two processes: EP 0 to the server on QUAL1 (its INI
 *       request goes there: that process creates the TGT), EP 1 to the one
 *       on QUAL2 of the same node (same INI QP and TGT, its own SRQ).  After
 *       an echo on both it prints "waiting for SIGUSR1"; xrc-hw.sh kills the
 *       QUAL1 process with SIGKILL, then sends SIGUSR1.  survive
 *       (xrc_tgt=domain, 2a): EP 1 echoes 10 times, never BROKEN.  break
 *       (xrc_tgt=exit, 2b): EP 1's next send fails and EP 1 gets BROKEN; a
 *       new EP 2 to QUAL2 connects (a new INI QP pair) and echoes 10 times.
 *
 * Output: "ofx_xrc_hw: ..." progress lines, "FAIL: ..." per failure, and
 * last "ofx_xrc_hw: PASSED" or "ofx_xrc_hw: FAILED (n)"; exit status 0 or 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dat2/udat.h>

#include "consumer.h"

#define MAX_EPS 8
#define NRECV 16
#define NSEND 16
#define MSG_LEN 64
#define NHOLD 4			/* messages left unpolled on a held EP */
#define NECHO 10
#define STEP_US (30 * SEC_US)	/* any single step */
#define SERVER_S 600		/* a server's whole life */

struct ep {
	DAT_EP_HANDLE ep;
	DAT_EVD_HANDLE recv_evd;
	uint32_t peer_idx;	/* the client's index of this connection */
	bool connected, ended, held, broken;
	int hold_n;		/* HOLD n: messages expected on the drain */
	bool hold_by_server;	/* the server disconnects it (else the client does) */
	bool hold_free_first;	/* dat_ep_free before the drain */
	int next_send;
	char recv[NRECV][MSG_LEN];
	char send[NSEND][MSG_LEN];
};

static struct consumer cs;
static DAT_EVD_HANDLE req_evd;
static struct ep eps[MAX_EPS];
static int neps;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("ofx_xrc_hw: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static DAT_LMR_TRIPLET iov_of(const void *p)
{
	return lmr_iov(&cs, p, MSG_LEN);
}

static int post_recv(struct ep *e, int slot)
{
	DAT_LMR_TRIPLET iov = iov_of(e->recv[slot]);

	memset(e->recv[slot], 0, MSG_LEN);
	CHECK_DAT(dat_ep_post_recv(e->ep, 1, &iov, (DAT_DTO_COOKIE)(DAT_UINT64)slot,
				   DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

/* A new EP (its own receive EVD, the shared request EVD) with receives posted. */
static struct ep *ep_new(void)
{
	DAT_EP_ATTR attr;
	struct ep *e;

	if (neps == MAX_EPS) {
		fail("more than %d eps", MAX_EPS);
		return NULL;
	}
	e = &eps[neps];
	memset(e, 0, sizeof(*e));
	if (dat_evd_create(cs.ia, NRECV + 4, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &e->recv_evd)) {
		fail("dat_evd_create recv");
		return NULL;
	}
	if (ep_default_attr(&cs, req_evd, &attr))
		return NULL;
	attr.max_recv_dtos = NRECV;
	attr.max_request_dtos = NSEND;
	attr.max_recv_iov = 1;
	attr.max_request_iov = 1;
	if (dat_ep_create(cs.ia, cs.pz, e->recv_evd, req_evd, cs.conn_evd, &attr, &e->ep)) {
		fail("dat_ep_create");
		return NULL;
	}
	for (int i = 0; i < NRECV; i++)
		if (post_recv(e, i))
			return NULL;
	neps++;
	return e;
}

static struct ep *ep_of(DAT_EP_HANDLE h)
{
	for (int i = 0; i < neps; i++)
		if (eps[i].ep == h && h)
			return &eps[i];
	return NULL;
}

static struct ep *ep_by_peer(uint32_t idx)
{
	for (int i = 0; i < neps; i++)
		if (eps[i].peer_idx == idx && eps[i].ep && !eps[i].ended)
			return &eps[i];
	return NULL;
}

static int send_text(struct ep *e, const char *text)
{
	int slot = e->next_send++ % NSEND;
	DAT_LMR_TRIPLET iov = iov_of(e->send[slot]);
	DAT_DTO_COOKIE cookie = { .as_64 = ((DAT_UINT64)(e - eps) << 16) | (DAT_UINT64)slot };

	memset(e->send[slot], 0, MSG_LEN);
	snprintf(e->send[slot], MSG_LEN, "%s", text);
	CHECK_DAT(dat_ep_post_send(e->ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

/* A send completion: its status (the EP it names is remembered in *e_p). */
static int req_event(const DAT_EVENT *ev, struct ep **e_p)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;

	*e_p = ep_of(d->ep_handle);
	if (ev->event_number != DAT_DTO_COMPLETION_EVENT) {
		fail("request evd: event 0x%x", ev->event_number);
		return -1;
	}
	return d->status == DAT_DTO_SUCCESS ? 0 : (int)d->status;
}

/* ---- client ------------------------------------------------------------------ */

static const char *server_ip;

/* Connection events that came while waiting for something else. */
static void note_conn_event(const DAT_EVENT *ev)
{
	struct ep *e = ep_of(ev->event_data.connect_event_data.ep_handle);

	if (!e)
		return;
	if (ev->event_number == DAT_CONNECTION_EVENT_BROKEN)
		e->broken = true;
	if (ev->event_number == DAT_CONNECTION_EVENT_DISCONNECTED ||
	    ev->event_number == DAT_CONNECTION_EVENT_BROKEN)
		e->ended = true;
}

static void poll_conn_events(void)
{
	DAT_EVENT ev;

	while (dat_evd_dequeue(cs.conn_evd, &ev) == DAT_SUCCESS)
		note_conn_event(&ev);
}

/*
 * Connects a new EP with index `idx` (its private data) to `qual`; the
 * connection events of other EPs that come meanwhile (BROKEN of the EPs on
 * an INI QP that broke) are noted, not taken for this one's.
 */
static struct ep *client_connect(uint32_t idx, DAT_CONN_QUAL qual)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	double deadline = now_s() + STEP_US / 1e6;
	uint32_t pdata = htonl(idx);
	struct ep *e = ep_new();
	DAT_EVENT ev;

	if (!e)
		return NULL;
	e->peer_idx = idx;
	inet_pton(AF_INET, server_ip, &sin.sin_addr);
	if (dat_ep_connect(e->ep, (DAT_IA_ADDRESS_PTR)&sin, qual, (DAT_TIMEOUT)STEP_US,
			   sizeof(pdata), &pdata, DAT_QOS_BEST_EFFORT,
			   DAT_CONNECT_DEFAULT_FLAG) != DAT_SUCCESS) {
		fail("dat_ep_connect ep %u", idx);
		return NULL;
	}
	for (;;) {
		if (now_s() > deadline) {
			fail("ep %u: no connection event from qual %llu", idx, (unsigned long long)qual);
			return NULL;
		}
		if (dat_evd_wait(cs.conn_evd, SEC_US, 1, &ev, &(DAT_COUNT){ 0 }) != DAT_SUCCESS)
			continue;
		if (ev.event_data.connect_event_data.ep_handle != e->ep) {
			note_conn_event(&ev);
			continue;
		}
		if (ev.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
			fail("ep %u to qual %llu: %s (0x%x)", idx, (unsigned long long)qual,
			     event_name(ev.event_number), ev.event_number);
			return NULL;
		}
		break;
	}
	e->connected = true;
	say("ep %u connected to qual %llu", idx, (unsigned long long)qual);
	return e;
}

/* Sends `text` on `e` and waits for its completion: 0, or the DTO status. */
static int client_send(struct ep *e, const char *text)
{
	DAT_EVENT ev;
	struct ep *of;
	int st;

	if (send_text(e, text))
		return -1;
	for (;;) {
		if (wait_event(req_evd, STEP_US, 0, &ev, "send completion"))
			return -1;
		st = req_event(&ev, &of);
		if (of == e)
			return st;
		if (st)
			fail("send on ep %u completed with status %d", of ? of->peer_idx : 99, st);
	}
}

/* The next message on `e` into `out`, its receive posted again. */
static int client_recv(struct ep *e, char *out, uint64_t timeout_us)
{
	const DAT_DTO_COMPLETION_EVENT_DATA *d;
	DAT_EVENT ev;
	int slot;

	if (wait_event(e->recv_evd, timeout_us, DAT_DTO_COMPLETION_EVENT, &ev, "a message"))
		return -1;
	d = &ev.event_data.dto_completion_event_data;
	if (d->status != DAT_DTO_SUCCESS) {
		fail("ep %u: receive status %d", e->peer_idx, d->status);
		return -1;
	}
	slot = (int)d->user_cookie.as_64;
	memcpy(out, e->recv[slot], MSG_LEN);
	out[MSG_LEN - 1] = '\0';
	return post_recv(e, slot);
}

static int echo_rounds(struct ep *e, int n, const char *tag)
{
	char text[MSG_LEN], got[MSG_LEN];

	for (int i = 0; i < n; i++) {
		snprintf(text, sizeof(text), "ECHO %s %d", tag, i);
		if (client_send(e, text)) {
			fail("ep %u: send of \"%s\" failed", e->peer_idx, text);
			return -1;
		}
		if (client_recv(e, got, STEP_US))
			return -1;
		if (strcmp(got, text)) {
			fail("ep %u: echo \"%s\", expected \"%s\"", e->peer_idx, got, text);
			return -1;
		}
	}
	poll_conn_events();
	if (e->ended) {
		fail("ep %u: %s during the echoes", e->peer_idx, e->broken ? "BROKEN" : "DISCONNECTED");
		return -1;
	}
	return 0;
}

/* Waits for the server's "RESULT idx ..." on the control EP. */
static int wait_result(struct ep *ctl, uint32_t idx)
{
	char got[MSG_LEN], want[32];

	snprintf(want, sizeof(want), "RESULT %u ", idx);
	if (client_recv(ctl, got, 2 * STEP_US))
		return -1;
	if (strncmp(got, want, strlen(want))) {
		fail("control ep: \"%s\", expected %s...", got, want);
		return -1;
	}
	say("server: %s", got);
	if (strncmp(got + strlen(want), "ok", 2)) {
		fail("server's drain of ep %u: %s", idx, got + strlen(want));
		return -1;
	}
	return 0;
}

static int wait_ended(struct ep *e, DAT_EVENT_NUMBER want)
{
	double deadline = now_s() + STEP_US / 1e6;
	DAT_EVENT ev;

	while (!e->ended) {
		if (now_s() > deadline) {
			fail("ep %u: no %s", e->peer_idx, event_name(want));
			return -1;
		}
		if (dat_evd_wait(cs.conn_evd, SEC_US, 1, &ev, &(DAT_COUNT){ 0 }) == DAT_SUCCESS)
			note_conn_event(&ev);
	}
	if ((want == DAT_CONNECTION_EVENT_BROKEN) != e->broken) {
		fail("ep %u: %s, expected %s", e->peer_idx, e->broken ? "BROKEN" : "DISCONNECTED",
		     event_name(want));
		return -1;
	}
	return 0;
}

static int hold_ep(struct ep *e, const char *how)
{
	char text[MSG_LEN];

	snprintf(text, sizeof(text), "HOLD %d %s", NHOLD, how);
	if (client_send(e, text))
		return -1;
	for (int i = 0; i < NHOLD; i++) {
		snprintf(text, sizeof(text), "DATA %d", i);
		if (client_send(e, text)) {
			fail("ep %u: send of \"%s\" failed", e->peer_idx, text);
			return -1;
		}
	}
	/* acknowledged: the server's receive completions are written */
	return 0;
}

static int client_unpolled(DAT_CONN_QUAL qual)
{
	struct ep *ctl, *e1, *e2;

	ctl = client_connect(0, qual);
	e1 = ctl ? client_connect(1, qual) : NULL;
	e2 = e1 ? client_connect(2, qual) : NULL;
	if (!e2 || echo_rounds(ctl, 1, "start"))
		return -1;
	if (hold_ep(e1, "server last") || hold_ep(e2, "client first"))
		return -1;
	/* 1: the server disconnects with the completions unpolled */
	if (client_send(ctl, "DISC 1") || wait_result(ctl, 1) ||
	    wait_ended(e1, DAT_CONNECTION_EVENT_DISCONNECTED))
		return -1;
	say("ep 1: server-side graceful disconnect with %d unpolled receives: ok", NHOLD);
	/* 2: we disconnect; the server frees its EP before the drain */
	if (dat_ep_disconnect(e2->ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS) {
		fail("dat_ep_disconnect ep 2");
		return -1;
	}
	if (wait_ended(e2, DAT_CONNECTION_EVENT_DISCONNECTED) || wait_result(ctl, 2))
		return -1;
	say("ep 2: client-side graceful disconnect with %d unpolled receives: ok", NHOLD);
	/* the INI QP both sides share with the others is intact */
	if (echo_rounds(ctl, NECHO, "after"))
		return -1;
	say("ep 0: %d echoes after both disconnects: ok", NECHO);
	if (dat_ep_disconnect(ctl->ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS ||
	    wait_ended(ctl, DAT_CONNECTION_EVENT_DISCONNECTED))
		return -1;
	return 0;
}

static int wait_usr1(void)
{
	struct timespec ts = { .tv_sec = 300 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	say("waiting for SIGUSR1");
	if (sigtimedwait(&set, NULL, &ts) != SIGUSR1) {
		fail("no SIGUSR1 within %ld s", (long)ts.tv_sec);
		return -1;
	}
	say("got SIGUSR1");
	return 0;
}

static int client_tgt(bool expect_break, DAT_CONN_QUAL q1, DAT_CONN_QUAL q2)
{
	struct ep *creator, *shared, *fresh;
	int st;

	creator = client_connect(0, q1);
	shared = creator ? client_connect(1, q2) : NULL;
	if (!shared || echo_rounds(creator, 1, "creator") || echo_rounds(shared, 1, "shared"))
		return -1;
	say("both eps echo through one ini qp");
	if (wait_usr1())
		return -1;
	poll_conn_events();
	if (!expect_break) {
		/* 2a: the TGT is held by the QUAL2 process's handle */
		if (echo_rounds(shared, NECHO, "survivor"))
			return -1;
		say("2a: ep 1 echoes %d times after its tgt's creator died: ok", NECHO);
		if (dat_ep_disconnect(shared->ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS ||
		    wait_ended(shared, DAT_CONNECTION_EVENT_DISCONNECTED))
			return -1;
		return 0;
	}
	/* 2b: the TGT went with its creator: the next send breaks the INI QP */
	st = client_send(shared, "ECHO doomed");
	if (st == 0) {
		DAT_EVENT ev;
		DAT_COUNT nmore;

		/* a send can only complete if a TGT took it: no echo may follow */
		if (dat_evd_wait(shared->recv_evd, 5 * SEC_US, 1, &ev, &nmore) == DAT_SUCCESS &&
		    ev.event_data.dto_completion_event_data.status == DAT_DTO_SUCCESS) {
			fail("2b: ep 1 still echoes: the tgt outlived its creator");
			return -1;
		}
	}
	say("2b: send on ep 1 after the kill: status %d", st);
	if (wait_ended(shared, DAT_CONNECTION_EVENT_BROKEN))
		return -1;
	say("2b: ep 1 BROKEN");
	fresh = client_connect(2, q2);
	if (!fresh || echo_rounds(fresh, NECHO, "fresh"))
		return -1;
	say("2b: a new ep to the same node connects and echoes %d times: ok", NECHO);
	if (dat_ep_disconnect(fresh->ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS ||
	    wait_ended(fresh, DAT_CONNECTION_EVENT_DISCONNECTED))
		return -1;
	return 0;
}

/* ---- server ------------------------------------------------------------------ */

static int ended;

static struct ep *control_ep(void)
{
	return ep_by_peer(0);
}

static void report(struct ep *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct ep *e, const char *fmt, ...)
{
	char text[MSG_LEN], detail[MSG_LEN - 16];
	struct ep *ctl = control_ep();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	snprintf(text, sizeof(text), "RESULT %u %s", e->peer_idx, detail);
	say("%s", text);
	if (strncmp(detail, "ok", 2))
		fail("ep %u: %s", e->peer_idx, detail);
	if (!ctl || send_text(ctl, text))
		fail("no control ep to report ep %u on", e->peer_idx);
}

/*
 * A held EP's connection ended: the messages it got while nobody polled
 * must all be there, in order and whole; receives still posted may come as
 * FLUSHED, nothing else.
 */
static void drain_held(struct ep *e)
{
	DAT_EVD_HANDLE evd = e->recv_evd;
	int got = 0, flushed = 0, bad = 0;
	double deadline = now_s() + 30;	/* bound only: the completions are there */
	char want[MSG_LEN];
	DAT_EVENT ev;

	if (e->hold_free_first && dat_ep_free(e->ep) != DAT_SUCCESS)
		bad++;
	while (now_s() < deadline) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		DAT_COUNT nmore;

		if (dat_evd_wait(evd, got < e->hold_n ? SEC_US : 200000, 1, &ev, &nmore) !=
		    DAT_SUCCESS) {
			if (got >= e->hold_n)
				break;
			continue;
		}
		if (ev.event_number != DAT_DTO_COMPLETION_EVENT) {
			bad++;
			continue;
		}
		if (d->status == DAT_DTO_ERR_FLUSHED) {
			flushed++;
			continue;
		}
		snprintf(want, sizeof(want), "DATA %d", got);
		if (d->status != DAT_DTO_SUCCESS || d->transfered_length != MSG_LEN ||
		    strcmp(e->recv[d->user_cookie.as_64 % NRECV], want)) {
			say("ep %u drain: status %d len %u \"%.*s\", expected \"%s\"", e->peer_idx,
			    d->status, d->transfered_length, MSG_LEN,
			    e->recv[d->user_cookie.as_64 % NRECV], want);
			bad++;
			continue;
		}
		got++;
	}
	if (!e->hold_free_first && dat_ep_free(e->ep) != DAT_SUCCESS)
		bad++;
	e->ep = DAT_HANDLE_NULL;
	if (got == e->hold_n && !bad)
		report(e, "ok got=%d flushed=%d", got, flushed);
	else
		report(e, "fail got=%d/%d flushed=%d bad=%d", got, e->hold_n, flushed, bad);
}

static void server_message(struct ep *e, const char *m)
{
	char how1[16] = "", how2[16] = "";
	unsigned int idx;
	struct ep *t;

	if (!strncmp(m, "ECHO ", 5)) {
		if (send_text(e, m))
			fail("echo on ep %u", e->peer_idx);
	} else if (sscanf(m, "HOLD %d %15s %15s", &e->hold_n, how1, how2) == 3) {
		e->held = true;
		e->hold_by_server = !strcmp(how1, "server");
		e->hold_free_first = !strcmp(how2, "first");
		say("ep %u held: %d messages, %s disconnects, free %s", e->peer_idx, e->hold_n,
		    how1, how2);
	} else if (sscanf(m, "DISC %u", &idx) == 1) {
		t = ep_by_peer(idx);
		if (!t || !t->held || !t->hold_by_server) {
			fail("DISC %u: no ep held for a server disconnect", idx);
			return;
		}
		/* the ack of the client's last DATA came before this request; the
		 * pause is a nudge (the completions surely in the CQ), no check
		 * depends on it */
		sleep_ms(100);
		if (dat_ep_disconnect(t->ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS)
			fail("dat_ep_disconnect ep %u", idx);
	} else {
		fail("ep %u: unknown message \"%s\"", e->peer_idx, m);
	}
}

static void server_accept(const DAT_EVENT *ev)
{
	DAT_CR_HANDLE cr = ev->event_data.cr_arrival_event_data.cr_handle;
	DAT_CR_PARAM p;
	uint32_t idx;
	struct ep *e;

	if (dat_cr_query(cr, DAT_CR_FIELD_ALL, &p) != DAT_SUCCESS || p.private_data_size < 4) {
		fail("connection request without an index");
		dat_cr_reject(cr, 0, NULL);
		return;
	}
	memcpy(&idx, p.private_data, 4);
	e = ep_new();
	if (!e) {
		dat_cr_reject(cr, 0, NULL);
		return;
	}
	e->peer_idx = ntohl(idx);
	if (dat_cr_accept(cr, e->ep, 4, p.private_data) != DAT_SUCCESS)
		fail("dat_cr_accept ep %u", e->peer_idx);
}

static void server_conn_event(const DAT_EVENT *ev)
{
	struct ep *e = ep_of(ev->event_data.connect_event_data.ep_handle);

	if (!e) {
		fail("connection event 0x%x for an unknown ep", ev->event_number);
		return;
	}
	switch (ev->event_number) {
	case DAT_CONNECTION_EVENT_ESTABLISHED:
		e->connected = true;
		say("ep %u connected", e->peer_idx);
		return;
	case DAT_CONNECTION_EVENT_DISCONNECTED:
	case DAT_CONNECTION_EVENT_BROKEN:
		say("ep %u %s", e->peer_idx, event_name(ev->event_number));
		e->ended = true;
		ended++;
		if (e->held) {
			drain_held(e);
		} else {
			dat_ep_free(e->ep);
			e->ep = DAT_HANDLE_NULL;
		}
		return;
	default:
		fail("ep %u: connection event %s (0x%x)", e->peer_idx,
		     event_name(ev->event_number), ev->event_number);
		e->ended = true;
		ended++;
	}
}

static int server(DAT_CONN_QUAL qual, int conns)
{
	double deadline = now_s() + SERVER_S;
	DAT_PSP_HANDLE psp;
	DAT_EVENT ev;

	CHECK_DAT(dat_psp_create(cs.ia, qual, cs.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	say("server ready qual %llu pid %d", (unsigned long long)qual, (int)getpid());
	while (ended < conns) {
		bool busy = false;
		struct ep *e;

		if (now_s() > deadline) {
			fail("server: %d of %d connections ended within %d s", ended, conns, SERVER_S);
			break;
		}
		if (dat_evd_dequeue(cs.cr_evd, &ev) == DAT_SUCCESS) {
			busy = true;
			server_accept(&ev);
		}
		if (dat_evd_dequeue(cs.conn_evd, &ev) == DAT_SUCCESS) {
			busy = true;
			server_conn_event(&ev);
		}
		if (dat_evd_dequeue(req_evd, &ev) == DAT_SUCCESS) {
			int st = req_event(&ev, &e);

			busy = true;
			/* a send to a peer that went (2b) may fail */
			if (st && st != DAT_DTO_ERR_FLUSHED)
				say("send on ep %u: status %d", e ? e->peer_idx : 99, st);
		}
		for (int i = 0; i < neps; i++) {
			const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
			char m[MSG_LEN];
			int slot;

			e = &eps[i];
			if (!e->ep || e->held || dat_evd_dequeue(e->recv_evd, &ev) != DAT_SUCCESS)
				continue;
			busy = true;
			if (d->status == DAT_DTO_ERR_FLUSHED)
				continue;
			if (d->status != DAT_DTO_SUCCESS) {
				fail("ep %u: receive status %d", e->peer_idx, d->status);
				continue;
			}
			slot = (int)(d->user_cookie.as_64 % NRECV);
			memcpy(m, e->recv[slot], MSG_LEN);
			m[MSG_LEN - 1] = '\0';
			if (post_recv(e, slot) == 0)
				server_message(e, m);
		}
		if (!busy)
			sleep_ms(1);
	}
	/* the last RESULT and echo go out before the IA closes */
	for (int i = 0; i < 50 && dat_evd_dequeue(req_evd, &ev) != DAT_SUCCESS; i++)
		sleep_ms(10);
	dat_psp_free(psp);
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t set;
	int ret = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* every thread the provider starts inherits this: sigtimedwait gets it */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (argc < 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server IA QUAL [CONNS]\n"
			"       %s client IA SERVER_IP unpolled QUAL\n"
			"       %s client IA SERVER_IP survive|break QUAL1 QUAL2\n",
			argv[0], argv[0], argv[0]);
		return 2;
	}
	say("%s pid %d", argv[1], (int)getpid());
	/* consumer_open registers one buffer: the EPs' slots are in eps[] */
	if (consumer_open(&cs, argv[2], eps, sizeof(eps), 4 * MAX_EPS) ||
	    dat_evd_create(cs.ia, 4 * NSEND * MAX_EPS, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
			   &req_evd) != DAT_SUCCESS) {
		fail("ia %s: open failed", argv[2]);
		goto out;
	}
	if (!strcmp(argv[1], "server")) {
		ret = server(strtoull(argv[3], NULL, 0), argc > 4 ? atoi(argv[4]) : 1);
	} else if (argc == 6 && !strcmp(argv[4], "unpolled")) {
		server_ip = argv[3];
		ret = client_unpolled(strtoull(argv[5], NULL, 0));
	} else if (argc == 7 && (!strcmp(argv[4], "survive") || !strcmp(argv[4], "break"))) {
		server_ip = argv[3];
		ret = client_tgt(!strcmp(argv[4], "break"), strtoull(argv[5], NULL, 0),
				 strtoull(argv[6], NULL, 0));
	} else {
		fprintf(stderr, "%s: bad arguments (see the usage)\n", argv[0]);
		return 2;
	}
out:
	for (int i = 0; i < neps; i++) {
		if (eps[i].ep)
			dat_ep_free(eps[i].ep);
		if (eps[i].recv_evd)
			dat_evd_free(eps[i].recv_evd);
	}
	if (req_evd)
		dat_evd_free(req_evd);
	consumer_close(&cs);
	if (ret || failures) {
		say("FAILED (%d)", failures ? failures : 1);
		return 1;
	}
	say("PASSED");
	return 0;
}
