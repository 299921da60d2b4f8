/* SPDX-License-Identifier: BSD-2-Clause */
#include "consumer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int failures;
const char *fail_tag;

void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("FAIL: ");
	if (fail_tag)
		printf("%s: ", fail_tag);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	/* the suite may kill a stuck program: what it said must be out already */
	fflush(stdout);
	failures++;
}

const char *dat_errstr(DAT_RETURN ret)
{
	static char buf[160];
	const char *maj = "", *min = "";

	dat_strerror(ret, &maj, &min);
	snprintf(buf, sizeof(buf), "0x%x %s %s", (unsigned int)ret, maj, min);
	return buf;
}

const char *event_name(DAT_EVENT_NUMBER n)
{
	switch (n) {
	case DAT_DTO_COMPLETION_EVENT: return "DTO_COMPLETION";
	case DAT_RMR_BIND_COMPLETION_EVENT: return "RMR_BIND_COMPLETION";
	case DAT_CONNECTION_REQUEST_EVENT: return "CONNECTION_REQUEST";
	case DAT_CONNECTION_EVENT_ESTABLISHED: return "ESTABLISHED";
	case DAT_CONNECTION_EVENT_PEER_REJECTED: return "PEER_REJECTED";
	case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "NON_PEER_REJECTED";
	case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return "ACCEPT_COMPLETION_ERROR";
	case DAT_CONNECTION_EVENT_DISCONNECTED: return "DISCONNECTED";
	case DAT_CONNECTION_EVENT_BROKEN: return "BROKEN";
	case DAT_CONNECTION_EVENT_TIMED_OUT: return "TIMED_OUT";
	case DAT_CONNECTION_EVENT_UNREACHABLE: return "UNREACHABLE";
	case DAT_ASYNC_ERROR_EVD_OVERFLOW: return "ASYNC_ERROR_EVD_OVERFLOW";
	case DAT_ASYNC_ERROR_IA_CATASTROPHIC: return "ASYNC_ERROR_IA_CATASTROPHIC";
	case DAT_ASYNC_ERROR_EP_BROKEN: return "ASYNC_ERROR_EP_BROKEN";
	case DAT_ASYNC_ERROR_TIMED_OUT: return "ASYNC_ERROR_TIMED_OUT";
	case DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: return "ASYNC_ERROR_PROVIDER_INTERNAL_ERROR";
	default: return "?";
	}
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int consumer_open(struct consumer *cs, const char *ia_name, void *buf, DAT_VLEN len,
		  DAT_COUNT conn_qlen)
{
	DAT_REGION_DESCRIPTION region = { .for_va = buf };
	DAT_VADDR reg_addr;
	DAT_VLEN reg_len;

	memset(cs, 0, sizeof(*cs));
	cs->async_evd = DAT_HANDLE_NULL;	/* the provider makes one */
	CHECK_DAT(dat_ia_open((char *)ia_name, 8, &cs->async_evd, &cs->ia));
	CHECK_DAT(dat_pz_create(cs->ia, &cs->pz));
	CHECK_DAT(dat_lmr_create(cs->ia, DAT_MEM_TYPE_VIRTUAL, region, len, cs->pz,
				 DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &cs->lmr, &cs->lkey,
				 &cs->rkey, &reg_len, &reg_addr));
	CHECK_DAT(dat_evd_create(cs->ia, conn_qlen, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG,
				 &cs->conn_evd));
	CHECK_DAT(dat_evd_create(cs->ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cs->cr_evd));
	return 0;
}

void consumer_close(struct consumer *cs)
{
	if (cs->cr_evd)
		dat_evd_free(cs->cr_evd);
	if (cs->conn_evd)
		dat_evd_free(cs->conn_evd);
	if (cs->lmr)
		dat_lmr_free(cs->lmr);
	if (cs->pz)
		dat_pz_free(cs->pz);
	if (cs->ia)
		dat_ia_close(cs->ia, DAT_CLOSE_ABRUPT_FLAG);
	memset(cs, 0, sizeof(*cs));
}

DAT_LMR_TRIPLET lmr_iov(const struct consumer *cs, const void *p, uint32_t len)
{
	DAT_LMR_TRIPLET iov = {
		.lmr_context = cs->lkey,
		.virtual_address = (DAT_VADDR)(uintptr_t)p,
		.segment_length = len,
	};

	return iov;
}

bool ia_is_iwarp(const struct consumer *cs)
{
	DAT_PROVIDER_ATTR pattr;

	if (dat_ia_query(cs->ia, NULL, DAT_IA_FIELD_NONE, NULL,
			 DAT_PROVIDER_FIELD_PROVIDER_SPECIFIC_ATTR, &pattr) != DAT_SUCCESS)
		return false;
	for (int i = 0; i < pattr.num_provider_specific_attr; i++) {
		const DAT_NAMED_ATTR *a = &pattr.provider_specific_attr[i];

		if (a->name && !strcmp(a->name, "OFX_TRANSPORT"))
			return a->value && !strcmp(a->value, "iWARP");
	}
	return false;
}

int ep_default_attr(const struct consumer *cs, DAT_EVD_HANDLE dto_evd, DAT_EP_ATTR *attr)
{
	DAT_EP_PARAM param;
	DAT_EP_HANDLE probe;

	CHECK_DAT(dat_ep_create(cs->ia, cs->pz, dto_evd, dto_evd, cs->conn_evd, NULL, &probe));
	CHECK_DAT(dat_ep_query(probe, DAT_EP_FIELD_ALL, &param));
	CHECK_DAT(dat_ep_free(probe));
	*attr = param.ep_attr;
	return 0;
}

int wait_event(DAT_EVD_HANDLE evd, uint64_t timeout_us, DAT_EVENT_NUMBER want, DAT_EVENT *ev,
	       const char *what)
{
	DAT_COUNT nmore;
	DAT_RETURN ret = dat_evd_wait(evd, (DAT_TIMEOUT)timeout_us, 1, ev, &nmore);

	if (!what)
		what = want ? event_name(want) : "an event";
	if (ret != DAT_SUCCESS) {
		fail("waiting for %s: %s", what, dat_errstr(ret));
		return -1;
	}
	if (want && ev->event_number != want) {
		fail("waiting for %s: got event %s (0x%x), expected %s (0x%x)", what,
		     event_name(ev->event_number), ev->event_number, event_name(want), want);
		return -1;
	}
	return 0;
}

int connect_retry(const struct consumer *cs, DAT_EP_HANDLE *ep_p, const struct connect_req *req,
		  DAT_EVENT *ev)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	double deadline = now_s() + req->retry_s;

	inet_pton(AF_INET, req->ip, &sin.sin_addr);
	for (;;) {
		CHECK_DAT(dat_ep_connect(*ep_p, (DAT_IA_ADDRESS_PTR)&sin, req->qual,
					 (DAT_TIMEOUT)req->timeout_us, req->pdata_len, req->pdata,
					 DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
		/* every attempt ends in an event, at the latest when its timeout fires */
		if (wait_event(cs->conn_evd, req->timeout_us + 10 * SEC_US, 0, ev, "connect"))
			return -1;
		if (ev->event_number == DAT_CONNECTION_EVENT_ESTABLISHED)
			return 0;
		if (now_s() > deadline) {
			fail("connect to %s qual %llu: %s (0x%x)", req->ip,
			     (unsigned long long)req->qual, event_name(ev->event_number),
			     ev->event_number);
			return -1;
		}
		if (req->again(req->arg, ep_p))
			return -1;
		sleep_ms(req->pause_ms);
	}
}
