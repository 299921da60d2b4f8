/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx_cost_bench: what a DAT consumer pays for one operation, one
 * connection and one object, for dapltest-scripts/bench.  It links stock
 * libdat2 only, so the same program measures libdaplofx and stock
 * libdaplofa: only the IA name differs.
 *
 * Usage: ofx_cost_bench server IA MODE [options]
 *        ofx_cost_bench client IA MODE SERVER_IP [options]
 * Both sides take the same options.
 *   MODE dto   one connection.  The client runs measured phases, each twice
 *              (N1 and N2 operations) so that bench can subtract what does
 *              not scale with the count:
 *                empty    K dat_evd_dequeue calls on an idle EVD (QUEUE_EMPTY)
 *                rw, rr   post one RDMA write / read of -s bytes, busy-poll
 *                         dat_evd_dequeue until its completion
 *                sr       ping-pong: post a receive and a send, busy-poll
 *                         until both completions are back (the server echoes)
 *                rw.deq, rr.deq, sr.deq  the same with callgrind collecting
 *                         only inside the dat_evd_dequeue calls
 *              Empty polls inside rw/rr/sr are counted and reported, so that
 *              bench can take them out at the price the empty phase measured.
 *   MODE conn  connections, all made by the client one after the other
 *              (dat_ep_create, dat_ep_connect, ESTABLISHED; the server:
 *              CR, dat_ep_create, dat_cr_accept, ESTABLISHED).  For each
 *              total T of -t, connections are made unmeasured up to
 *              T - M1 - M2, then a measured phase of M1 and one of M2
 *              ("conn.tT").  Before that, -e EVD counts: that many DTO
 *              EVDs are made and freed, with the memory they took.
 *              Memory (heap in use from mallinfo2, VmRSS, VmPin, VmLck)
 *              is printed when the connected EP count reaches a -c value.
 * Options:
 *   -q QUAL     connection qualifier (default 19300)
 *   -n "N1 N2"  dto operations per phase (default "100 600")
 *   -k "K1 K2"  empty dequeues per phase (default "1000 6000")
 *   -s BYTES    dto message size (default 64)
 *   -m "M1 M2"  conn measured phase sizes (default "8 40")
 *   -t "T..."   conn totals, increasing (default "100")
 *   -c "C..."   conn memory checkpoints (default "1 64 1024")
 *   -e "E..."   conn EVD counts (default "1 64 1024"; "" for none)
 *   -d DEPTH    conn: send and receive queue depth of each EP (default 8)
 * Under valgrind --tool=callgrind (best with --instr-atstart=no) each
 * measured phase is instrumented on its own and dumped as
 * "Client Request: PHASE:OPS:EMPTIES"; outside valgrind the callgrind
 * requests do nothing.  Output lines (besides FAIL):
 *   phase PHASE ops N empty E secs S
 *   mem ep|evd COUNT heap_per B rss_per B pin_per B lck_per B vm_per B
 * A control connection (its own EVD) carries the server's buffer address
 * (dto) and a "go" message before every conn phase, so the two sides'
 * phases line up.
 */
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dat2/udat.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#endif
#endif
#ifndef HAVE_CALLGRIND
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(s) ((void)(s))
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include "consumer.h"

#define WAIT_US   (150ull * SEC_US) /* callgrind under TCG is slow */
#define MAX_LIST  16
#define CTL_LEN   64
#define SRV_RECVS 16
/*
 * Set in the cookie of every receive the control paths post.  Stock
 * libdaplofa fills only ep_handle, user_cookie, status and
 * transfered_length of a DTO completion and leaves `operation` as the
 * caller's DAT_EVENT had it, so a receive is told from a send by its
 * cookie, which every provider returns.  The measured phases post
 * untagged: they only count completions.
 */
#define RECV_COOKIE (1ull << 63)

struct list {
	int n;
	long v[MAX_LIST];
};

static struct {
	bool server;
	const char *ia, *mode, *ip;
	DAT_CONN_QUAL qual;
	struct list n, k, m, t, c, e;
	long size, depth;
} opt = {.qual = 19300, .size = 64, .depth = 8};

static struct consumer cs;
static char *buf; /* [ctl tx | ctl rx | data] */
static size_t buf_len;
static DAT_EVD_HANDLE dto_evd, ctl_evd;
static DAT_EP_HANDLE ctl_ep;
static DAT_EP_ATTR ep_attr; /* the provider's defaults, read once */

static char *ctl_tx(void)
{
	return buf;
}
static char *ctl_rx(void)
{
	return buf + CTL_LEN;
}
static char *data(void)
{
	return buf + 2 * CTL_LEN;
}

static int parse_list(const char *s, struct list *l)
{
	char *end;

	l->n = 0;
	while (*s) {
		if (*s == ' ' || *s == ',') {
			s++;
			continue;
		}
		if (l->n == MAX_LIST)
			return -1;
		l->v[l->n++] = strtol(s, &end, 0);
		if (end == s)
			return -1;
		s = end;
	}
	return 0;
}

/* ---- memory --------------------------------------------------------------- */

struct mem {
	long heap, rss, pin, lck, vm; /* bytes */
};

static long status_kb(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtol(p + strlen(key), NULL, 10) : 0;
}

static void mem_read(struct mem *m)
{
	struct mallinfo2 mi = mallinfo2();
	char text[4096];
	FILE *f = fopen("/proc/self/status", "r");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

	if (f)
		fclose(f);
	text[n] = 0;
	m->heap = (long)(mi.uordblks + mi.hblkhd);
	m->rss = status_kb(text, "VmRSS:") * 1024;
	m->pin = status_kb(text, "VmPin:") * 1024;
	m->lck = status_kb(text, "VmLck:") * 1024;
	m->vm = status_kb(text, "VmSize:") * 1024;
}

static void mem_print(const char *what, long count, const struct mem *base)
{
	struct mem m;

	mem_read(&m);
	printf("mem %s %ld heap_per %ld rss_per %ld pin_per %ld lck_per %ld vm_per %ld\n", what,
	       count, (m.heap - base->heap) / count, (m.rss - base->rss) / count,
	       (m.pin - base->pin) / count, (m.lck - base->lck) / count, (m.vm - base->vm) / count);
}

/* ---- phases ----------------------------------------------------------------- */

struct phase {
	const char *name;
	long ops, empty;
	bool measured;
	double t0;
};

static void phase_begin(struct phase *ph, const char *name, long ops, bool measured)
{
	*ph = (struct phase){.name = name, .ops = ops, .measured = measured};
	if (measured) {
		CALLGRIND_START_INSTRUMENTATION;
		CALLGRIND_ZERO_STATS;
	}
	ph->t0 = now_s();
}

static void phase_end(struct phase *ph)
{
	double secs = now_s() - ph->t0;
	char tag[96];

	if (ph->measured) {
		snprintf(tag, sizeof(tag), "%s:%ld:%ld", ph->name, ph->ops, ph->empty);
		CALLGRIND_DUMP_STATS_AT(tag);
		CALLGRIND_STOP_INSTRUMENTATION;
	}
	printf("phase %s ops %ld empty %ld secs %.6f%s\n", ph->name, ph->ops, ph->empty, secs,
	       ph->measured ? "" : " unmeasured");
}

/* ---- set-up ------------------------------------------------------------------- */

static int ep_make(DAT_EVD_HANDLE evd, long depth, DAT_EP_HANDLE *ep_p)
{
	DAT_EP_ATTR attr = ep_attr;

	attr.max_recv_dtos = depth;
	attr.max_request_dtos = depth;
	attr.max_recv_iov = 1;
	attr.max_request_iov = 1;
	if (attr.max_rdma_read_in < 1)
		attr.max_rdma_read_in = 1;
	if (attr.max_rdma_read_out < 1)
		attr.max_rdma_read_out = 1;
	attr.service_type = DAT_SERVICE_TYPE_RC;
	attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.ep_transport_specific_count = 0;
	attr.ep_transport_specific = NULL;
	attr.ep_provider_specific_count = 0;
	attr.ep_provider_specific = NULL;
	CHECK_DAT(dat_ep_create(cs.ia, cs.pz, evd, evd, cs.conn_evd, &attr, ep_p));
	return 0;
}

static int post_recv(DAT_EP_HANDLE ep, void *p, uint32_t len, uint64_t cookie)
{
	DAT_LMR_TRIPLET iov = lmr_iov(&cs, p, len);

	CHECK_DAT(
		dat_ep_post_recv(ep, 1, &iov, (DAT_DTO_COOKIE)cookie, DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

static int post_send(DAT_EP_HANDLE ep, void *p, uint32_t len, uint64_t cookie)
{
	DAT_LMR_TRIPLET iov = lmr_iov(&cs, p, len);

	CHECK_DAT(
		dat_ep_post_send(ep, 1, &iov, (DAT_DTO_COOKIE)cookie, DAT_COMPLETION_DEFAULT_FLAG));
	return 0;
}

static bool is_recv(const DAT_DTO_COMPLETION_EVENT_DATA *d)
{
	return (d->user_cookie.as_64 & RECV_COOKIE) != 0;
}

/* The receive slot a tagged cookie names. */
static uint64_t recv_slot(const DAT_DTO_COMPLETION_EVENT_DATA *d)
{
	return d->user_cookie.as_64 & ~RECV_COOKIE;
}

/*
 * The next DTO completion of `evd`, which must succeed.  It polls (with
 * short sleeps), so that waiting costs the same in every provider.
 */
static int dto_wait(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA *d_p)
{
	double deadline = now_s() + WAIT_US / 1e6;
	struct timespec pause = {0, 100000};
	DAT_EVENT ev;
	DAT_RETURN r;

	while ((r = dat_evd_dequeue(evd, &ev)) != DAT_SUCCESS) {
		if (DAT_GET_TYPE(r) != DAT_QUEUE_EMPTY) {
			fail("waiting for a completion: %s", dat_errstr(r));
			return -1;
		}
		if (now_s() > deadline) {
			fail("waiting for a completion: none in %llu s", WAIT_US / SEC_US);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
	    ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		/* the number too: stock reports a flushed receive as DAT_IB_DTO_EVENT */
		fail("waiting for a completion: event %s (0x%x) status %d",
		     event_name(ev.event_number), ev.event_number,
		     ev.event_data.dto_completion_event_data.status);
		return -1;
	}
	if (d_p)
		*d_p = ev.event_data.dto_completion_event_data;
	return 0;
}

/* Waits for a received control message, skipping send completions; reposts. */
static int ctl_recv(char *msg)
{
	DAT_DTO_COMPLETION_EVENT_DATA d;

	do {
		if (dto_wait(ctl_evd, &d))
			return -1;
	} while (!is_recv(&d));
	memcpy(msg, ctl_rx(), CTL_LEN);
	return post_recv(ctl_ep, ctl_rx(), CTL_LEN, RECV_COOKIE);
}

static int ctl_send(const void *msg, size_t len)
{
	memset(ctl_tx(), 0, CTL_LEN);
	memcpy(ctl_tx(), msg, len);
	return post_send(ctl_ep, ctl_tx(), CTL_LEN, 1);
}

static int open_all(void)
{
	long total = opt.t.n ? opt.t.v[opt.t.n - 1] : 0;

	buf_len = 2 * CTL_LEN + (size_t)(opt.size > 4096 ? opt.size : 4096) * 3 * SRV_RECVS;
	buf = aligned_alloc(4096, (buf_len + 4095) & ~(size_t)4095);
	if (!buf) {
		fail("no memory");
		return -1;
	}
	memset(buf, 0, buf_len);
	if (consumer_open(&cs, opt.ia, buf, buf_len, (DAT_COUNT)(total + 64)))
		return -1;
	CHECK_DAT(dat_evd_create(cs.ia, 2 * SRV_RECVS + 16, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
				 &ctl_evd));
	/* conn: the shared completion queue of every measured EP */
	CHECK_DAT(dat_evd_create(cs.ia, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd));
	/* once: ep_default_attr makes and frees a probe EP */
	return ep_default_attr(&cs, dto_evd, &ep_attr);
}

/*
 * The control EP, with one receive posted once it is ESTABLISHED.  Both
 * sides post after ESTABLISHED; a message that arrives first waits in the
 * sender's RNR retries.  The client then speaks first, as dapltest and
 * dtest do, and the server waits for that message instead of sleeping.
 */
static int ctl_connect(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	DAT_EVENT ev;

	if (ep_make(ctl_evd, SRV_RECVS, &ctl_ep))
		return -1;
	inet_pton(AF_INET, opt.ip, &sin.sin_addr);
	for (int tries = 0;; tries++) {
		CHECK_DAT(dat_ep_connect(ctl_ep, (DAT_IA_ADDRESS_PTR)&sin, opt.qual, WAIT_US, 0,
					 NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
		if (wait_event(cs.conn_evd, WAIT_US, 0, &ev, "the control connection"))
			return -1;
		if (ev.event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
			return post_recv(ctl_ep, ctl_rx(), CTL_LEN, RECV_COOKIE);
		if (tries == 30) {
			fail("control connection: %s", event_name(ev.event_number));
			return -1;
		}
		/* the server is not listening yet: a fresh EP for the next try */
		dat_ep_free(ctl_ep);
		sleep_ms(1000);
		if (ep_make(ctl_evd, SRV_RECVS, &ctl_ep))
			return -1;
	}
}

static int accept_one(DAT_EVD_HANDLE evd, long depth, void *rx, uint32_t rx_len, int nrecv,
		      DAT_EP_HANDLE *ep_p)
{
	DAT_EVENT ev;
	DAT_CR_HANDLE cr;

	if (wait_event(cs.cr_evd, WAIT_US, DAT_CONNECTION_REQUEST_EVENT, &ev, NULL))
		return -1;
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	if (ep_make(evd, depth, ep_p))
		return -1;
	CHECK_DAT(dat_cr_accept(cr, *ep_p, 0, NULL));
	if (wait_event(cs.conn_evd, WAIT_US, DAT_CONNECTION_EVENT_ESTABLISHED, &ev, NULL))
		return -1;
	for (int i = 0; i < nrecv; i++)
		if (post_recv(*ep_p, (char *)rx + (size_t)i * rx_len, rx_len,
			      RECV_COOKIE | (uint64_t)i))
			return -1;
	return 0;
}

/* ---- dto ------------------------------------------------------------------------- */

struct remote {
	uint64_t addr;
	uint32_t rkey, len;
};

/*
 * Busy-polls dto_evd until `want` completions are in; every QUEUE_EMPTY
 * answer is counted in the phase.  With `deq_only`, callgrind collects only
 * inside the dequeue calls (collection is off around them).
 */
static int poll_until(struct phase *ph, int want, bool deq_only)
{
	DAT_EVENT ev;
	DAT_RETURN r;

	while (want > 0) {
		if (deq_only)
			CALLGRIND_TOGGLE_COLLECT;
		r = dat_evd_dequeue(dto_evd, &ev);
		if (deq_only)
			CALLGRIND_TOGGLE_COLLECT;
		if (DAT_GET_TYPE(r) == DAT_QUEUE_EMPTY) {
			ph->empty++;
			continue;
		}
		if (r != DAT_SUCCESS) {
			fail("dequeue: %s", dat_errstr(r));
			return -1;
		}
		if (ev.event_number != DAT_DTO_COMPLETION_EVENT ||
		    ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
			fail("dequeue: event %s status %d", event_name(ev.event_number),
			     ev.event_data.dto_completion_event_data.status);
			return -1;
		}
		want--;
	}
	return 0;
}

static int dto_phase(DAT_EP_HANDLE ep, const struct remote *rem, const char *name, long ops)
{
	bool deq_only = strstr(name, ".deq") != NULL;
	char op = !strncmp(name, "rw", 2) ? 'w' : !strncmp(name, "rr", 2) ? 'r' : 's';
	uint32_t len = (uint32_t)opt.size;
	char *tx = data(), *rx = data() + opt.size;
	DAT_LMR_TRIPLET iov = lmr_iov(&cs, tx, len);
	DAT_RMR_TRIPLET riov = {
		.virtual_address = rem->addr, .segment_length = len, .rmr_context = rem->rkey};
	struct phase ph;

	phase_begin(&ph, name, ops, true);
	if (deq_only)
		CALLGRIND_TOGGLE_COLLECT; /* off: only the dequeues count */
	for (long i = 0; i < ops; i++) {
		int want = 1;

		switch (op) {
		case 'w':
			if (dat_ep_post_rdma_write(ep, 1, &iov, (DAT_DTO_COOKIE)(uint64_t)i, &riov,
						   DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS) {
				fail("rdma write %ld", i);
				return -1;
			}
			break;
		case 'r':
			if (dat_ep_post_rdma_read(ep, 1, &iov, (DAT_DTO_COOKIE)(uint64_t)i, &riov,
						  DAT_COMPLETION_DEFAULT_FLAG) != DAT_SUCCESS) {
				fail("rdma read %ld", i);
				return -1;
			}
			break;
		default: /* 's' */
			tx[0] = 'p';
			if (post_recv(ep, rx, len, (uint64_t)i) ||
			    post_send(ep, tx, len, (uint64_t)i))
				return -1;
			want = 2;
			break;
		}
		if (poll_until(&ph, want, deq_only))
			return -1;
	}
	if (deq_only)
		CALLGRIND_TOGGLE_COLLECT;
	phase_end(&ph);
	return 0;
}

static int empty_phase(long ops)
{
	struct phase ph;
	DAT_EVENT ev;
	long got = 0;

	phase_begin(&ph, "empty", ops, true);
	for (long i = 0; i < ops; i++) {
		if (DAT_GET_TYPE(dat_evd_dequeue(dto_evd, &ev)) == DAT_QUEUE_EMPTY)
			ph.empty++;
		else
			got++;
	}
	phase_end(&ph);
	if (got)
		fail("empty phase: %ld dequeues found an event", got);
	return got ? -1 : 0;
}

static int dto_client(void)
{
	static const char *const names[] = {"rw", "rw.deq", "rr", "rr.deq", "sr", "sr.deq"};
	struct remote rem;
	DAT_DTO_COMPLETION_EVENT_DATA d;

	/* dto: the control EP is the data EP, on dto_evd */
	ctl_evd = dto_evd;
	if (ctl_connect())
		return -1;
	/* speaks first (ctl_connect); one byte fits the server's -s slots */
	ctl_tx()[0] = 'h';
	if (post_send(ctl_ep, ctl_tx(), 1, 1))
		return -1;
	/* both completions, so that none is left for the empty phase */
	for (bool sent = false, got = false; !sent || !got;) {
		if (dto_wait(dto_evd, &d))
			return -1;
		if (is_recv(&d))
			got = true;
		else
			sent = true;
	}
	memcpy(&rem, ctl_rx(), sizeof(rem));
	if (rem.len < opt.size) {
		fail("server buffer of %u bytes", rem.len);
		return -1;
	}
	/* one receive stays posted ahead of the sr phases' own, -s bytes long */
	if (post_recv(ctl_ep, data() + opt.size, (uint32_t)opt.size, RECV_COOKIE))
		return -1;
	for (int k = 0; k < opt.k.n; k++)
		if (empty_phase(opt.k.v[k]))
			return -1;
	/* the extra receive takes the first ping's reply... */
	for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++)
		for (int i = 0; i < opt.n.n; i++)
			if (dto_phase(ctl_ep, &rem, names[j], opt.n.v[i]))
				return -1;
	/* ...so one reply is still owed to a receive: quit */
	data()[0] = 'q';
	if (post_send(ctl_ep, data(), (uint32_t)opt.size, 0) || dto_wait(dto_evd, NULL))
		return -1;
	return 0;
}

static int dto_server(void)
{
	uint32_t len = (uint32_t)opt.size;
	char *rx = data() + len; /* SRV_RECVS slots */
	struct remote rem = {(uint64_t)(uintptr_t)data(), cs.rkey, len};
	DAT_DTO_COMPLETION_EVENT_DATA d;

	ctl_evd = dto_evd;
	if (accept_one(dto_evd, SRV_RECVS + 2, rx, len, SRV_RECVS, &ctl_ep))
		return -1;
	/* the client's first message (ctl_connect), then the buffer address */
	do {
		if (dto_wait(dto_evd, &d))
			return -1;
	} while (!is_recv(&d));
	if (post_recv(ctl_ep, rx + (size_t)recv_slot(&d) * len, len, d.user_cookie.as_64))
		return -1;
	memset(ctl_tx(), 0, CTL_LEN);
	memcpy(ctl_tx(), &rem, sizeof(rem));
	if (post_send(ctl_ep, ctl_tx(), CTL_LEN, 1))
		return -1;
	printf("server: connected\n");
	for (;;) {
		char *slot;

		if (dto_wait(dto_evd, &d))
			return -1;
		if (!is_recv(&d))
			continue;
		slot = rx + (size_t)recv_slot(&d) * len;
		if (slot[0] == 'q')
			break;
		if (post_recv(ctl_ep, slot, len, d.user_cookie.as_64) ||
		    post_send(ctl_ep, data() + 2 * (size_t)SRV_RECVS * len, len, 2))
			return -1;
	}
	return 0;
}

/* ---- conn ------------------------------------------------------------------------ */

struct step {
	long conns;
	long t; /* the -t total this step leads to */
	bool measured;
};

static int plan(struct step *steps, int *n_p)
{
	long cur = 0;
	int n = 0;

	if (opt.m.n != 2) {
		fail("-m wants two sizes");
		return -1;
	}
	for (int i = 0; i < opt.t.n; i++) {
		long t = opt.t.v[i], bulk = t - opt.m.v[0] - opt.m.v[1] - cur;

		if (bulk < 0) {
			fail("-t %ld: below %ld + M1 + M2", t, cur);
			return -1;
		}
		if (bulk)
			steps[n++] = (struct step){bulk, t, false};
		steps[n++] = (struct step){opt.m.v[0], t, true};
		steps[n++] = (struct step){opt.m.v[1], t, true};
		cur = t;
	}
	*n_p = n;
	return 0;
}

static bool is_checkpoint(long count)
{
	for (int i = 0; i < opt.c.n; i++)
		if (opt.c.v[i] == count)
			return true;
	return false;
}

/* Memory per DTO EVD at each -e count: made, measured, freed. */
static int evd_memory(void)
{
	struct mem base;
	DAT_EVD_HANDLE *evds;

	for (int i = 0; i < opt.e.n; i++) {
		long n = opt.e.v[i];

		evds = calloc((size_t)n, sizeof(*evds));
		if (!evds) {
			fail("no memory");
			return -1;
		}
		mem_read(&base);
		for (long j = 0; j < n; j++)
			CHECK_DAT(dat_evd_create(cs.ia, 64, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG,
						 &evds[j]));
		mem_print("evd", n, &base);
		for (long j = 0; j < n; j++)
			CHECK_DAT(dat_evd_free(evds[j]));
		free(evds);
	}
	return 0;
}

static int conn_run(void)
{
	struct step steps[3 * MAX_LIST];
	struct sockaddr_in sin = {.sin_family = AF_INET};
	long total = opt.t.v[opt.t.n - 1], cur = 0;
	DAT_EP_HANDLE *eps;
	struct mem base;
	char msg[CTL_LEN] = "go", name[32];
	DAT_EVENT ev;
	int nsteps;

	if (plan(steps, &nsteps))
		return -1;
	eps = calloc((size_t)total, sizeof(*eps));
	if (!eps) {
		fail("no memory");
		return -1;
	}
	if (opt.server) {
		char hello[CTL_LEN];

		if (accept_one(ctl_evd, SRV_RECVS, ctl_rx(), CTL_LEN, 1, &ctl_ep) ||
		    ctl_recv(hello))
			return -1;
	} else if (ctl_connect() || ctl_send("hi", 3)) {
		return -1;
	}
	if (evd_memory())
		return -1;
	inet_pton(AF_INET, opt.ip ? opt.ip : "0.0.0.0", &sin.sin_addr);
	mem_read(&base);
	for (int s = 0; s < nsteps; s++) {
		struct phase ph;

		snprintf(name, sizeof(name), "%s.t%ld", steps[s].measured ? "conn" : "bulk",
			 steps[s].t);
		/* the server is ready for the step before the client starts it */
		if (opt.server) {
			phase_begin(&ph, name, steps[s].conns, steps[s].measured);
			if (ctl_send(msg, 3))
				return -1;
		} else {
			if (ctl_recv(msg))
				return -1;
			phase_begin(&ph, name, steps[s].conns, steps[s].measured);
		}
		for (long i = 0; i < steps[s].conns; i++, cur++) {
			if (opt.server) {
				if (accept_one(dto_evd, opt.depth, NULL, 0, 0, &eps[cur]))
					return -1;
			} else {
				if (ep_make(dto_evd, opt.depth, &eps[cur]))
					return -1;
				CHECK_DAT(dat_ep_connect(
					eps[cur], (DAT_IA_ADDRESS_PTR)&sin, opt.qual, WAIT_US, 0,
					NULL, DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
				if (wait_event(cs.conn_evd, WAIT_US,
					       DAT_CONNECTION_EVENT_ESTABLISHED, &ev, NULL))
					return -1;
			}
			/* outside the provider: it does not disturb a measured count */
			if (is_checkpoint(cur + 1))
				mem_print("ep", cur + 1, &base);
		}
		phase_end(&ph);
	}
	printf("%s: %ld connections\n", opt.server ? "server" : "client", cur);
	if (opt.server) {
		/* the client closes first: wait for it, so its last ones stay up */
		wait_event(cs.conn_evd, WAIT_US, 0, &ev, "the client's disconnect");
	} else {
		if (ctl_send("bye", 4))
			return -1;
		sleep_ms(200);
	}
	free(eps); /* the EPs go with the IA */
	return 0;
}

/* ---- main ------------------------------------------------------------------------ */

static int usage(void)
{
	fprintf(stderr, "usage: ofx_cost_bench server IA dto|conn [opts] | "
			"client IA dto|conn SERVER_IP [opts] (see the source)\n");
	return 2;
}

int main(int argc, char **argv)
{
	DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
	int o, ret, first;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		return usage();
	opt.server = !strcmp(argv[1], "server");
	if (!opt.server && strcmp(argv[1], "client"))
		return usage();
	opt.ia = argv[2];
	opt.mode = argv[3];
	first = 4;
	if (!opt.server) {
		if (argc < 5)
			return usage();
		opt.ip = argv[4];
		first = 5;
	}
	parse_list("100 600", &opt.n);
	parse_list("1000 6000", &opt.k);
	parse_list("8 40", &opt.m);
	parse_list("100", &opt.t);
	parse_list("1 64 1024", &opt.c);
	parse_list("1 64 1024", &opt.e);
	optind = first;
	while ((o = getopt(argc, argv, "q:n:k:s:m:t:c:e:d:")) != -1) {
		struct list *l = NULL;

		switch (o) {
		case 'q':
			opt.qual = strtoull(optarg, NULL, 0);
			break;
		case 's':
			opt.size = strtol(optarg, NULL, 0);
			break;
		case 'd':
			opt.depth = strtol(optarg, NULL, 0);
			break;
		case 'n':
			l = &opt.n;
			break;
		case 'k':
			l = &opt.k;
			break;
		case 'm':
			l = &opt.m;
			break;
		case 't':
			l = &opt.t;
			break;
		case 'c':
			l = &opt.c;
			break;
		case 'e':
			l = &opt.e;
			break;
		default:
			return usage();
		}
		if (l && parse_list(optarg, l)) {
			fprintf(stderr, "ofx_cost_bench: bad list -%c '%s'\n", o, optarg);
			return 2;
		}
	}
	if (opt.size < 1 || opt.size > 65536 || opt.depth < 1 || !opt.t.n) {
		fprintf(stderr, "ofx_cost_bench: bad -s, -d or -t\n");
		return 2;
	}
	fail_tag = opt.server ? "server" : "client";
	if (open_all())
		return 1;
	if (opt.server) {
		CHECK_OR_EXIT(
			dat_psp_create(cs.ia, opt.qual, cs.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
		printf("server ready qual %llu\n", (unsigned long long)opt.qual);
	}
	if (!strcmp(opt.mode, "dto"))
		ret = opt.server ? dto_server() : dto_client();
	else if (!strcmp(opt.mode, "conn"))
		ret = conn_run();
	else
		return usage();
	if (psp)
		dat_psp_free(psp);
	consumer_close(&cs);
	if (ret || failures) {
		printf("%s: %d failures\n", fail_tag, failures);
		return 1;
	}
	printf("%s: done\n", fail_tag);
	return 0;
}
