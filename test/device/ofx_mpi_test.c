/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofx_mpi_test: a job that uses uDAPL the way MVAPICH2's on-demand start-up
 * does (../shared/docs/mpi-consumer-patterns.md), one process per rank.
 *
 * Usage: ofx_mpi_test IA RANK NPROCS HOSTA_IP HOSTB_IP BASEPORT BARRIER_DIR
 *   ranks 0..NPROCS/2-1 run on host A, the others on host B; rank r's PSP
 *   is its host's IP with conn_qual BASEPORT + r.  BARRIER_DIR, a directory
 *   every rank sees, stands in for the MPI's out-of-band barrier (PMI):
 *   each rank connects only once every PSP exists.
 *
 * Per rank: one DTO EVD for the sends and receives of every EP, a CR EVD and
 * a connection EVD; EPs with UNSIGNALLED request completions.  A connection
 * thread sits in dat_evd_wait(CR EVD, DAT_TIMEOUT_INFINITE) with
 * asynchronous cancel.  Every rank connects to every other at once (4 bytes
 * of private data: its rank), so each pair's requests cross: the lower
 * rank rejects the higher one's request (dat_cr_reject); the higher rank,
 * told PEER_REJECTED, resets its EP (dat_ep_reset, dat_ep_query says
 * UNCONNECTED) and accepts the lower one's request with it.
 *
 * Receives are posted only on an EP that will not be reset (stock reports
 * the receives a reset flushes as DAT_IB_DTO_EVENT, which the MPI's assert
 * below cannot take): the lower rank at ESTABLISHED, the higher rank before
 * its accept; the lower rank speaks first, the higher once that arrived.
 *
 * Then, per peer: MSGS sends of MSG_LEN bytes, only every 8th signalled,
 * each checked at the receiver by its bytes and order; the first message
 * carries a ring slot's address and rkey, and the peer RDMA-writes
 * [payload | 4-byte flag] into it, which the owner busy-polls (a write's
 * bytes land in address order); a last "bye" message each way.  The DTO EVD
 * is busy-polled with dat_evd_dequeue and every event on it must be a DTO
 * completion.  At exit the connection thread is cancelled and joined, the
 * higher rank of each pair disconnects, both see DISCONNECTED, and
 * dat_ep_free, dat_psp_free, dat_evd_free (all three) and dat_ia_close
 * must each return DAT_SUCCESS.
 *
 * Prints "mpi rank R: ok N peers" or "FAIL: ...".
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>

#include "consumer.h"

#define MAX_PEERS 16
#define MSGS 40
#define MSG_LEN 64
#define RING_LEN 256
#define RECVS (MSGS + 2)	/* the data, the ring message and "bye" */
#define TIMEOUT_S 120.0

enum kind { K_RING = 1, K_DATA, K_BYE };

struct msg {
	uint32_t kind, from, seq;
	uint32_t rkey;
	uint64_t ring_addr;
	char fill[MSG_LEN - 24];
};

/* Per peer: what this rank knows of the connection and the traffic. */
struct peer {
	DAT_EP_HANDLE ep;
	DAT_CR_HANDLE cr;	/* the peer's request, held for the accept */
	bool rejected;		/* our request lost the crossing */
	bool established, disconnected;
	int next_seq;		/* data message expected next */
	bool ring_seen, wrote_ring, bye_sent, bye_seen, bye_done;
	uint64_t ring_addr;
	uint32_t rkey;
	int sends_done;
};

static int rank, nprocs;
static const char *host_ip[2];
static int base_port;
static struct consumer cs;
static DAT_EVD_HANDLE dto_evd;
static DAT_PSP_HANDLE psp;
static struct peer peers[MAX_PEERS];
static pthread_mutex_t peers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t conn_thread;

/* per peer: RECVS receive slots, MSGS + 2 send slots, the ring and its source */
#define PEER_BYTES ((RECVS + MSGS + 2) * MSG_LEN + 2 * RING_LEN)
static char buf[MAX_PEERS * PEER_BYTES] __attribute__((aligned(64)));

#define CHECK CHECK_OR_EXIT

static char *recv_slot(int j, int i)
{
	return buf + (size_t)j * PEER_BYTES + (size_t)i * MSG_LEN;
}

static char *send_slot(int j, int i)
{
	return recv_slot(j, RECVS + i);
}

static volatile char *ring(int j)
{
	return recv_slot(j, RECVS + MSGS + 2);
}

static char *ring_src(int j)
{
	return (char *)ring(j) + RING_LEN;
}

/* Cookies: peer in the high half, slot and direction in the low half. */
static DAT_DTO_COOKIE cookie(int j, int slot, bool send)
{
	return (DAT_DTO_COOKIE)(((DAT_UINT64)j << 32) | ((DAT_UINT64)send << 16) | (DAT_UINT64)slot);
}

static int host_of(int r)
{
	return r >= nprocs / 2;
}

static void peer_addr(int j, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, host_ip[host_of(j)], &sin->sin_addr);
}

static void post_recvs(int j)
{
	for (int i = 0; i < RECVS; i++) {
		DAT_LMR_TRIPLET iov = lmr_iov(&cs, recv_slot(j, i), MSG_LEN);

		CHECK(dat_ep_post_recv(peers[j].ep, 1, &iov, cookie(j, i, false),
				       DAT_COMPLETION_DEFAULT_FLAG));
	}
}

static void make_ep(int j)
{
	DAT_EP_ATTR attr;

	if (ep_default_attr(&cs, dto_evd, &attr))
		exit(1);
	attr.service_type = DAT_SERVICE_TYPE_RC;
	attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
	attr.request_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
	attr.max_recv_dtos = 2 * RECVS;
	attr.max_request_dtos = 64;
	attr.max_rdma_read_in = attr.max_rdma_read_out = 4;
	CHECK(dat_ep_create(cs.ia, cs.pz, dto_evd, dto_evd, cs.conn_evd, &attr, &peers[j].ep));
}

static void connect_peer(int j)
{
	struct sockaddr_in sin;
	uint32_t me = (uint32_t)rank;

	peer_addr(j, &sin);
	CHECK(dat_ep_connect(peers[j].ep, (DAT_IA_ADDRESS_PTR)&sin, base_port + j,
			     DAT_TIMEOUT_INFINITE, sizeof(me), &me, DAT_QOS_BEST_EFFORT,
			     DAT_CONNECT_DEFAULT_FLAG));
}

/*
 * The EP back to UNCONNECTED.  It holds no receives yet: stock reports the
 * receives a reset flushes as DAT_IB_DTO_EVENT on the DTO EVD, which an MPI
 * that asserts DTO completions there cannot take, so MPIs post them only on
 * an EP that will not be reset (see start_traffic).
 */
static void reset_ep(int j)
{
	DAT_EP_PARAM param;

	CHECK(dat_ep_reset(peers[j].ep));
	CHECK(dat_ep_query(peers[j].ep, DAT_EP_FIELD_EP_STATE, &param));
	if (param.ep_state != DAT_EP_STATE_UNCONNECTED) {
		fail("peer %d: ep state %d after dat_ep_reset", j, param.ep_state);
		exit(1);
	}
}

/* ---- the connection thread -------------------------------------------------- */

/* The request's private data: the sender's rank. */
static int cr_rank(DAT_CR_HANDLE cr)
{
	DAT_CR_PARAM param;
	uint32_t who;

	if (dat_cr_query(cr, DAT_CR_FIELD_ALL, &param) != DAT_SUCCESS || !param.private_data ||
	    param.private_data_size < (DAT_COUNT)sizeof(who))
		return -1;
	memcpy(&who, param.private_data, sizeof(who));
	return who < (uint32_t)nprocs ? (int)who : -1;
}

static void *conn_loop(void *arg)
{
	int old;

	(void)arg;
	for (;;) {
		DAT_EVENT ev;
		DAT_COUNT nmore;
		DAT_CR_HANDLE cr;
		DAT_RETURN ret;
		int j;

		/*
		 * MVAPICH2 cancels this thread asynchronously at MPI_Finalize,
		 * wherever it is; it is in the wait then.  Handling a request
		 * (a lock is taken) is not cancellable here.
		 */
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
		ret = dat_evd_wait(cs.cr_evd, DAT_TIMEOUT_INFINITE, 1, &ev, &nmore);
		pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
		if (ret != DAT_SUCCESS)
			continue;
		if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT)
			continue;
		cr = ev.event_data.cr_arrival_event_data.cr_handle;
		/* MVAPICH checks where the request came in */
		if (ev.event_data.cr_arrival_event_data.sp_handle.psp_handle != psp ||
		    ev.event_data.cr_arrival_event_data.conn_qual !=
			    (DAT_CONN_QUAL)(base_port + rank))
			fail("a request on sp %p qual %llu",
			     (void *)ev.event_data.cr_arrival_event_data.sp_handle.psp_handle,
			     (unsigned long long)ev.event_data.cr_arrival_event_data.conn_qual);
		j = cr_rank(cr);
		if (j < 0 || j == rank) {
			fail("a request with bad private data");
			dat_cr_reject(cr, 0, NULL);
			continue;
		}
		if (rank < j) {
			/* crossing requests: ours wins, the peer resets and accepts */
			if (dat_cr_reject(cr, 0, NULL) != DAT_SUCCESS)
				fail("dat_cr_reject of rank %d's request", j);
			continue;
		}
		pthread_mutex_lock(&peers_lock);
		if (peers[j].cr)
			fail("a second request from rank %d", j);
		peers[j].cr = cr;
		pthread_mutex_unlock(&peers_lock);
	}
	return NULL;
}

/* ---- the main thread ----------------------------------------------------------- */

static int peer_of_ep(DAT_EP_HANDLE ep)
{
	for (int j = 0; j < nprocs; j++)
		if (j != rank && peers[j].ep == ep)
			return j;
	return -1;
}

static void start_traffic(int j);
static void answer(int j);

static void on_conn_event(const DAT_EVENT *ev)
{
	int j = peer_of_ep(ev->event_data.connect_event_data.ep_handle);

	if (j < 0) {
		fail("connection event 0x%x for no ep of ours", ev->event_number);
		exit(1);
	}
	switch (ev->event_number) {
	case DAT_CONNECTION_EVENT_ESTABLISHED:
		if (peers[j].established)
			fail("second ESTABLISHED for peer %d", j);
		peers[j].established = true;
		/*
		 * The lower rank's request won: its EP was never reset, its
		 * receives go in now and it speaks first.  The higher rank
		 * (receives posted before its accept) answers once the
		 * lower's first message is in, so no message can arrive
		 * before its receive (iWARP has no RNR retry).
		 */
		if (rank < j) {
			post_recvs(j);
			start_traffic(j);
		} else {
			answer(j);
		}
		break;
	case DAT_CONNECTION_EVENT_PEER_REJECTED:
		if (rank < j) {
			fail("rank %d rejected our request", j);
			exit(1);
		}
		peers[j].rejected = true;
		reset_ep(j);
		break;
	case DAT_CONNECTION_EVENT_DISCONNECTED:
		peers[j].disconnected = true;
		break;
	default:
		fail("peer %d: connection event %s (0x%x)", j, event_name(ev->event_number),
		     ev->event_number);
		exit(1);
	}
}

/* Accepts the requests the connection thread holds, once our EP is free. */
static void accept_held(void)
{
	pthread_mutex_lock(&peers_lock);
	for (int j = 0; j < nprocs; j++) {
		uint32_t me = (uint32_t)rank;

		if (j == rank || !peers[j].cr || !peers[j].rejected)
			continue;
		post_recvs(j);	/* before the peer can send */
		CHECK(dat_cr_accept(peers[j].cr, peers[j].ep, sizeof(me), &me));
		peers[j].cr = DAT_HANDLE_NULL;
		peers[j].rejected = false;
	}
	pthread_mutex_unlock(&peers_lock);
}

static void send_msg(int j, int slot, struct msg *m, bool signalled)
{
	DAT_LMR_TRIPLET iov = lmr_iov(&cs, send_slot(j, slot), MSG_LEN);

	memcpy(send_slot(j, slot), m, sizeof(*m));
	CHECK(dat_ep_post_send(peers[j].ep, 1, &iov, cookie(j, slot, true),
			       signalled ? DAT_COMPLETION_DEFAULT_FLAG :
					   DAT_COMPLETION_SUPPRESS_FLAG));
}

static void start_traffic(int j)
{
	struct msg m = { .kind = K_RING, .from = (uint32_t)rank,
			 .ring_addr = (uint64_t)(uintptr_t)ring(j), .rkey = cs.rkey };

	send_msg(j, 0, &m, false);
	for (int s = 0; s < MSGS; s++) {
		m = (struct msg){ .kind = K_DATA, .from = (uint32_t)rank, .seq = (uint32_t)s };
		memset(m.fill, 'a' + (rank + s) % 26, sizeof(m.fill));
		/* every 8th signalled, as an MPI frees its send queue */
		send_msg(j, 1 + s, &m, s % 8 == 7);
	}
}

static void write_ring(int j)
{
	DAT_LMR_TRIPLET iov = lmr_iov(&cs, ring_src(j), RING_LEN);
	DAT_RMR_TRIPLET rmr = { .rmr_context = peers[j].rkey,
				.virtual_address = peers[j].ring_addr,
				.segment_length = RING_LEN };
	uint32_t flag = 0x600dd00d + (uint32_t)rank;

	memset(ring_src(j), 'R', RING_LEN - 4);
	memcpy(ring_src(j) + RING_LEN - 4, &flag, 4);
	CHECK(dat_ep_post_rdma_write(peers[j].ep, 1, &iov, cookie(j, MSGS + 5, true), &rmr,
				     DAT_COMPLETION_SUPPRESS_FLAG));
	peers[j].wrote_ring = true;
}

/*
 * The higher rank's turn: the lower rank spoke and our side is ESTABLISHED
 * too.  Its first message can land while our RTU is still on its way, and
 * sends must wait for the event.
 */
static void answer(int j)
{
	if (!peers[j].established || !peers[j].ring_seen || peers[j].wrote_ring)
		return;
	start_traffic(j);
	write_ring(j);
}

static void on_recv(int j, int slot, DAT_COUNT len)
{
	struct msg m;

	if (len != MSG_LEN) {
		fail("peer %d: received %d bytes, sent %d", j, len, MSG_LEN);
		exit(1);
	}
	memcpy(&m, recv_slot(j, slot), sizeof(m));
	if (m.from != (uint32_t)j) {
		fail("peer %d: a message from rank %u", j, m.from);
		exit(1);
	}
	switch (m.kind) {
	case K_RING:
		peers[j].ring_addr = m.ring_addr;
		peers[j].rkey = m.rkey;
		peers[j].ring_seen = true;
		if (rank > j)
			answer(j);
		else
			write_ring(j);
		break;
	case K_DATA:
		for (size_t i = 0; i < sizeof(m.fill); i++)
			if (m.fill[i] != 'a' + (j + (int)m.seq) % 26) {
				fail("peer %d: message %u corrupted at byte %zu", j, m.seq, i);
				exit(1);
			}
		if (m.seq != (uint32_t)peers[j].next_seq++) {
			fail("peer %d: message %u arrived as number %d", j, m.seq,
			     peers[j].next_seq - 1);
			exit(1);
		}
		break;
	case K_BYE:
		peers[j].bye_seen = true;
		break;
	default:
		fail("peer %d: message kind %u", j, m.kind);
		exit(1);
	}
}

/* Busy-polls the DTO EVD as MVAPICH does; every event must be a DTO completion. */
static void poll_dto(void)
{
	DAT_EVENT ev;

	while (dat_evd_dequeue(dto_evd, &ev) == DAT_SUCCESS) {
		const DAT_DTO_COMPLETION_EVENT_DATA *d = &ev.event_data.dto_completion_event_data;
		DAT_UINT64 c = d->user_cookie.as_64;
		int j = (int)(c >> 32), slot = (int)(c & 0xffff);
		bool send = (c >> 16) & 1;

		if (ev.event_number != DAT_DTO_COMPLETION_EVENT) {
			fail("event 0x%x on the DTO EVD (cookie 0x%llx, status %d, %llu bytes)",
			     ev.event_number, (unsigned long long)c, d->status,
			     (unsigned long long)d->transfered_length);
			exit(1);
		}
		if (j < 0 || j >= nprocs || j == rank) {
			fail("a DTO completion with cookie 0x%llx", (unsigned long long)c);
			exit(1);
		}
		if (d->status != DAT_DTO_SUCCESS) {
			fail("peer %d: %s %d completed with status %d", j, send ? "send" : "recv",
			     slot, d->status);
			exit(1);
		}
		if (!send)
			on_recv(j, slot, (DAT_COUNT)d->transfered_length);
		else if (slot == MSGS + 1)
			peers[j].bye_done = true;
		else
			peers[j].sends_done++;
	}
}

static bool ring_arrived(int j)
{
	uint32_t flag;

	memcpy(&flag, (const char *)ring(j) + RING_LEN - 4, 4);
	if (flag != 0x600dd00d + (uint32_t)j)
		return false;
	for (int i = 0; i < RING_LEN - 4; i++)
		if (ring(j)[i] != 'R') {
			fail("peer %d: ring byte %d not written before the flag", j, i);
			exit(1);
		}
	return true;
}

static bool all(bool (*done)(int j))
{
	for (int j = 0; j < nprocs; j++)
		if (j != rank && !done(j))
			return false;
	return true;
}

static bool is_established(int j)
{
	return peers[j].established;
}

/* Everything from the peer is in, our writes and data are out: say bye. */
static bool traffic_done(int j)
{
	struct peer *p = &peers[j];

	/* the signalled sends (every 8th) done: the data before them is too */
	if (!p->bye_sent && p->next_seq == MSGS && p->wrote_ring && ring_arrived(j) &&
	    p->sends_done == MSGS / 8) {
		struct msg m = { .kind = K_BYE, .from = (uint32_t)rank };

		send_msg(j, MSGS + 1, &m, true);
		p->bye_sent = true;
	}
	return p->bye_done && p->bye_seen;
}

static bool is_disconnected(int j)
{
	return peers[j].disconnected;
}

/* Busy-polls both EVDs until done() holds for every peer. */
static void progress_until(bool (*done)(int j), const char *what)
{
	double deadline = now_s() + TIMEOUT_S;

	while (!all(done)) {
		DAT_EVENT ev;

		if (dat_evd_dequeue(cs.conn_evd, &ev) == DAT_SUCCESS)
			on_conn_event(&ev);
		accept_held();
		poll_dto();
		if (now_s() > deadline) {
			fail("%s: not done within %.0f s", what, TIMEOUT_S);
			exit(1);
		}
		sched_yield();
	}
}

static int ranks_ready(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "ready.", 6);
	closedir(d);
	return n;
}

/*
 * The out-of-band barrier: a file per rank in `dir`, then wait until all
 * are there, woken by inotify (every rank of the VM runs on one kernel);
 * the 1 s rescan serves a directory shared between real nodes, where
 * inotify sees only local changes.
 */
static void barrier(const char *dir)
{
	double deadline = now_s() + TIMEOUT_S;
	char path[512];
	int fd, in;

	in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (in < 0 || inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO) < 0) {
		fail("inotify on %s: %m", dir);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/ready.%d", dir, rank);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail("create %s: %m", path);
		exit(1);
	}
	close(fd);
	while (ranks_ready(dir) < nprocs) {
		struct pollfd p = { .fd = in, .events = POLLIN };
		char ev[4096];

		if (now_s() > deadline) {
			fail("barrier: %d of %d ranks within %.0f s", ranks_ready(dir), nprocs,
			     TIMEOUT_S);
			exit(1);
		}
		/* drain the events: the directory is what counts */
		if (poll(&p, 1, 1000) > 0)
			(void)!read(in, ev, sizeof(ev));
	}
	close(in);
}

static void start(const char *ia_name)
{
	if (consumer_open(&cs, ia_name, buf, sizeof(buf), 256))
		exit(1);
	CHECK(dat_evd_create(cs.ia, 6000 < 4 * MAX_PEERS * RECVS ? 6000 : 4 * MAX_PEERS * RECVS,
			     DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd));
	CHECK(dat_psp_create(cs.ia, base_port + rank, cs.cr_evd, DAT_PSP_CONSUMER_FLAG, &psp));
	if (pthread_create(&conn_thread, NULL, conn_loop, NULL)) {
		fail("pthread_create");
		exit(1);
	}
}

/* MPI_Finalize: cancel the waiter, disconnect, free everything, each call must succeed. */
static int finish(void)
{
	pthread_cancel(conn_thread);
	pthread_join(conn_thread, NULL);
	for (int j = 0; j < nprocs; j++)
		if (j != rank && rank > j)
			CHECK(dat_ep_disconnect(peers[j].ep, DAT_CLOSE_GRACEFUL_FLAG));
	progress_until(is_disconnected, "DISCONNECTED from every peer");
	for (int j = 0; j < nprocs; j++)
		if (j != rank)
			CHECK(dat_ep_free(peers[j].ep));
	CHECK(dat_psp_free(psp));
	CHECK(dat_evd_free(dto_evd));
	CHECK(dat_evd_free(cs.cr_evd));
	CHECK(dat_evd_free(cs.conn_evd));
	CHECK(dat_lmr_free(cs.lmr));
	CHECK(dat_pz_free(cs.pz));
	CHECK(dat_ia_close(cs.ia, DAT_CLOSE_GRACEFUL_FLAG));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 8) {
		fprintf(stderr, "usage: %s IA RANK NPROCS HOSTA_IP HOSTB_IP BASEPORT BARRIER_DIR\n",
			argv[0]);
		return 2;
	}
	rank = atoi(argv[2]);
	nprocs = atoi(argv[3]);
	host_ip[0] = argv[4];
	host_ip[1] = argv[5];
	base_port = atoi(argv[6]);
	if (nprocs < 2 || nprocs > MAX_PEERS || nprocs % 2 || rank < 0 || rank >= nprocs) {
		fprintf(stderr, "ofx_mpi_test: bad rank %d of %d\n", rank, nprocs);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	static char tag[16];
	snprintf(tag, sizeof(tag), "rank %d", rank);
	fail_tag = tag;

	start(argv[1]);
	for (int j = 0; j < nprocs; j++)
		if (j != rank)
			make_ep(j);
	barrier(argv[7]);	/* every PSP exists from here on */
	for (int j = 0; j < nprocs; j++)
		if (j != rank)
			connect_peer(j);
	progress_until(is_established, "ESTABLISHED with every peer");
	progress_until(traffic_done, "the traffic of every peer");
	if (finish() || failures)
		return 1;
	printf("mpi rank %d: ok %d peers\n", rank, nprocs - 1);
	return 0;
}
