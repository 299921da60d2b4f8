/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the DAT consumer test programs (test/device/ofx_*.c) share.  They
 * link stock libdat2 only, find libdaplofx through dat.conf, and report
 * through "FAIL: ..." lines that suite.sh looks for: every helper here that
 * can fail says so through fail() and returns -1.
 */
#ifndef OFX_TEST_CONSUMER_H
#define OFX_TEST_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>
#include <dat2/udat.h>

#define SEC_US 1000000ull

/* FAIL lines printed so far: a program passes only while this stays 0. */
extern int failures;
/* When set, printed after "FAIL: " (the case or rank a line belongs to). */
extern const char *fail_tag;

/* Prints "FAIL: [tag: ]message" and counts it. */
void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "0x<code> <major> <minor>" for a DAT_RETURN, in a static buffer. */
const char *dat_errstr(DAT_RETURN ret);
/* A name for the event numbers the tests meet, "?" for others. */
const char *event_name(DAT_EVENT_NUMBER n);

/* Fails and returns -1 from the calling function unless `call` succeeds. */
#define CHECK_DAT(call)                                                                 \
	do {                                                                            \
		DAT_RETURN ret_ = (call);                                               \
		if (ret_ != DAT_SUCCESS) {                                              \
			fail("%s:%d %s: %s", __FILE__, __LINE__, #call, dat_errstr(ret_)); \
			return -1;                                                      \
		}                                                                       \
	} while (0)

/*
 * The same, for the multi-process programs, where any failure ends the
 * process (its peers' checks then fail as well).
 */
#define CHECK_OR_EXIT(call)                                                    \
	do {                                                                   \
		DAT_RETURN ret_ = (call);                                      \
		if (ret_ != DAT_SUCCESS) {                                     \
			fail("%s: %s", #call, dat_errstr(ret_));               \
			exit(1);                                               \
		}                                                              \
	} while (0)

double now_s(void);	/* CLOCK_MONOTONIC */
void sleep_ms(long ms);

/*
 * What every consumer starts from: an IA (with its own async EVD), a PZ,
 * one LMR with every privilege over the program's buffer, and the EVDs
 * for connection events and connection requests.
 */
struct consumer {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async_evd;
	DAT_PZ_HANDLE pz;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lkey;
	DAT_RMR_CONTEXT rkey;
	DAT_EVD_HANDLE conn_evd, cr_evd;
};

/*
 * Opens `ia_name`, registers `len` bytes at `buf` and makes the connection
 * EVD (`conn_qlen` deep) and the CR EVD; consumer_close undoes a partial
 * open.
 */
int consumer_open(struct consumer *cs, const char *ia_name, void *buf, DAT_VLEN len,
		  DAT_COUNT conn_qlen);
/* Frees what consumer_open made and closes the IA abruptly (the rest goes with it). */
void consumer_close(struct consumer *cs);

/* A triplet over `len` bytes at `p`, inside the consumer's LMR. */
DAT_LMR_TRIPLET lmr_iov(const struct consumer *cs, const void *p, uint32_t len);

/*
 * The provider's default EP attributes, read from a probe EP as dapltest
 * does: callers change the queue depths they need and create the real EP.
 */
int ep_default_attr(const struct consumer *cs, DAT_EVD_HANDLE dto_evd, DAT_EP_ATTR *attr);

/* True when the IA's provider reports OFX_TRANSPORT=iWARP (ia_query). */
bool ia_is_iwarp(const struct consumer *cs);

/*
 * The next event of `evd` within `timeout_us`, which must be `want` unless
 * that is 0.  A failure names `what`, or else the event waited for.
 */
int wait_event(DAT_EVD_HANDLE evd, uint64_t timeout_us, DAT_EVENT_NUMBER want, DAT_EVENT *ev,
	       const char *what);

/* One active connect, repeated while the server does not listen yet. */
struct connect_req {
	const char *ip;
	DAT_CONN_QUAL qual;
	uint64_t timeout_us;	/* of each attempt */
	DAT_COUNT pdata_len;
	void *pdata;
	double retry_s;		/* rejected attempts are repeated for this long */
	long pause_ms;		/* between attempts */
	/*
	 * Makes the EP ready for another connect: after dat_ep_reset its
	 * receives are gone, or it is replaced by a new EP.
	 */
	int (*again)(void *arg, DAT_EP_HANDLE *ep_p);
	void *arg;
};

/* Connects `*ep_p`, whose connection EVD is the consumer's; ESTABLISHED lands in `*ev`. */
int connect_retry(const struct consumer *cs, DAT_EP_HANDLE *ep_p, const struct connect_req *req,
		  DAT_EVENT *ev);

#endif
