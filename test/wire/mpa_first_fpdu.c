/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpa_first_fpdu: for every iWARP connection in a classic pcap capture,
 * decode the MPA start-up exchange (RFC 5044, RFC 6581) and the first FPDU
 * that follows it (DDP, RFC 5041; RDMAP, RFC 5040), so that a shell test
 * can assert which side spoke first after MPA and with what message
 * (e.g. the zero-length RTR of the peer-to-peer model).
 *
 * Written from the RFCs and the pcap file format; it needs only libc.
 * Every length read from the file is checked before it is used: the input
 * is a capture, i.e. untrusted and often truncated.
 *
 * Output, one record a line, key=value after the record's name:
 *   conn id=N ACTIVE -> PASSIVE active= passive= tcp_client= mpa_rev=
 *        req_flags= rep_flags= markers= crc= reject= req_pdata= rep_pdata=
 *        ... (rev 2 with the S flag: req_ird= req_ord= req_p2p= req_rtr=)
 *   first_fpdu conn=N from=active|passive found=1 frame= ulpdu= tagged=
 *        last= ddp_ver= rdmap_ver= opcode=N(name) hdr= payload= ...
 *   first_fpdu_by conn=N side=active|passive found=...   (one per side)
 *   expect conn=N kind=first|by want= got= result=pass|fail
 *   summary records= tcp_segments= ... mpa_conns= truncated=
 * "frame" is the pcap record (from 1) that first carried the FPDU's length
 * field; the first FPDU of a connection is the one with the lower frame.
 * A connection counts as MPA when a direction opens with an MPA key.
 *
 * Exit status: 0 at least one MPA connection decoded (and every --expect*
 * held), 1 no MPA connection found, 2 bad input or usage, 3 an expectation
 * failed. A capture cut short is decoded as far as it goes (--strict: 2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define PROG "mpa_first_fpdu"

enum { EXIT_FOUND = 0, EXIT_NONE = 1, EXIT_BAD = 2, EXIT_MISMATCH = 3 };

/* pcap link types handled (values of the LINKTYPE_ registry) */
enum {
	LT_NULL = 0,
	LT_EN10MB = 1,
	LT_RAW_BSD = 12,
	LT_RAW = 101,
	LT_LINUX_SLL = 113,
	LT_IPV4 = 228,
	LT_IPV6 = 229,
	LT_LINUX_SLL2 = 276,
};

#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86dd

#define TCP_SYN 0x02
#define TCP_ACK 0x10

/* MPA request/reply frames (RFC 5044) and their rev 2 extension (RFC 6581) */
#define MPA_KEY_LEN 16
#define MPA_HDR_LEN 20
#define MPA_FLAG_M 0x80
#define MPA_FLAG_C 0x40
#define MPA_FLAG_R 0x20
#define MPA_FLAG_S 0x10 /* rev 2: private data opens with IRD/ORD */
#define MPA_FLAG_RES 0x0f
#define MPA_ENH_LEN 4
#define MPA_P2P 0x8000       /* IRD word: peer-to-peer model */
#define MPA_RTR_SEND 0x4000  /* IRD word: zero-length send RTR */
#define MPA_RTR_WRITE 0x8000 /* ORD word: zero-length RDMA write RTR */
#define MPA_RTR_READ 0x4000  /* ORD word: zero-length RDMA read RTR */
#define MPA_IRD_ORD_MASK 0x3fff
#define MPA_MARKER_LEN 4
#define MPA_MARKER_SPACING 512
#define MPA_CRC_LEN 4
#define MPA_ULPDU_LEN_LEN 2

/* DDP (RFC 5041) and RDMAP (RFC 5040) headers */
#define DDP_TAGGED_HDR 14
#define DDP_UNTAGGED_HDR 18
#define RDMAP_RREQ_BODY 28
#define RDMAP_TERM_HDR 4
enum {
	OP_WRITE = 0,
	OP_READ_REQ = 1,
	OP_READ_RESP = 2,
	OP_SEND = 3,
	OP_SEND_INV = 4,
	OP_SEND_SE = 5,
	OP_SEND_SE_INV = 6,
	OP_TERMINATE = 7,
};

/*
 * Largest FPDU on the wire: first marker, length field, 65535-octet ULPDU,
 * pad, CRC, and one marker per 508 octets of FPDU data.
 */
#define FPDU_MAX_WIRE 66560u
/* the prefix of a direction worth keeping: MPA frame, largest pdata, FPDU */
#define STREAM_LIMIT (MPA_HDR_LEN + 65535u + FPDU_MAX_WIRE)
#define MAX_RECORD (16u << 20)
#define MEM_BUDGET ((size_t)512 << 20)
#define MAX_CONNS 1000000u
#define HASH_SIZE 65536u
#define MAX_EXPECT 16
#define MAX_WARNINGS 20

struct endpoint {
	uint8_t family; /* 4 or 6 */
	uint8_t addr[16];
	uint16_t port;
};

/*
 * One direction of a TCP connection, reassembled by sequence number into
 * its first `limit` octets. frame[i] is the pcap record that first carried
 * octet i (0: not seen), which orders FPDUs across directions and keeps
 * the first copy of retransmitted data.
 */
struct stream {
	uint32_t base; /* sequence number of offset 0 */
	bool have_base;
	bool base_from_syn; /* else provisional: the lowest seq seen so far */
	bool closed;        /* no MPA key: nothing more to keep */
	bool trimmed;       /* limit already cut to the first FPDU's end */
	size_t limit;
	size_t alloc;
	size_t hi;     /* one past the highest offset stored */
	size_t contig; /* octets present from offset 0 without a hole */
	uint8_t *data;
	uint32_t *frame;
	uint64_t conflicts; /* retransmitted octets that differ */
};

struct conn {
	struct endpoint ep[2];  /* ep[0]: source of the first packet seen */
	struct stream dir[2];   /* dir[i]: octets sent by ep[i] */
	int client;             /* ep index that sent the SYN, -1 unknown */
	int64_t next;           /* hash chain */
};

struct capture {
	struct conn *conns;
	size_t n_conns;
	size_t cap_conns;
	int64_t buckets[HASH_SIZE];
	size_t mem_used;
	bool mem_warned;
	bool conns_warned;
	uint32_t linktype;
	uint64_t records;
	uint64_t tcp_segments;
	uint64_t skipped; /* not IP, not TCP, fragments, malformed */
	bool truncated;
	bool quiet;
	unsigned warnings;
};

struct mpa_frame {
	bool key;    /* the 16 key octets were seen */
	bool is_req; /* "MPA ID Req Frame", else "MPA ID Rep Frame" */
	bool hdr;    /* flags, rev and PD_Length seen */
	bool pd_complete;
	uint8_t flags;
	uint8_t rev;
	uint16_t pd_len;
	uint32_t frame;
	bool enh; /* RFC 6581 IRD/ORD data opens the private data */
	uint16_t ird;
	uint16_t ord;
	bool p2p;
	bool rtr_send;
	bool rtr_write;
	bool rtr_read;
};

struct fpdu {
	bool found;
	const char *reason; /* why not found */
	uint32_t frame;
	bool marker;         /* a marker preceded it */
	bool marker_missing; /* markers negotiated, none at the FPDU start */
	bool ctrl;           /* the DDP/RDMAP control octets were captured */
	bool hdr_captured;   /* the whole DDP/RDMAP header was captured */
	bool complete;       /* every octet up to the CRC was captured */
	uint16_t ulpdu;
	bool tagged;
	bool last;
	uint8_t dv;
	uint8_t rv;
	uint8_t opcode;
	size_t hdr_len;
	long payload; /* -1: the ULPDU is shorter than its headers */
	uint32_t stag;
	uint64_t to;
	uint32_t inv_stag;
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
	bool body; /* read request or terminate body captured */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t rsize;
	uint32_t src_stag;
	uint64_t src_to;
	uint8_t term_layer;
	uint8_t term_etype;
	uint8_t term_ecode;
};

struct verdict {
	bool mpa;
	int active; /* ep index */
	bool active_inferred;
	bool both_req;
	struct mpa_frame f[2]; /* per ep */
	bool markers;
	bool crc;
	struct fpdu by[2]; /* per ep: the first FPDU it sent */
	int first;         /* ep index that sent the first FPDU, -1 none */
};

enum { SIDE_ANY, SIDE_ACTIVE, SIDE_PASSIVE };

struct expect {
	const char *text;
	int side;
	int opcode; /* -1 any */
	long payload; /* -1 any */
};

struct options {
	const char *path;
	bool strict;
	bool quiet;
	struct expect first[MAX_EXPECT];
	size_t n_first;
	struct expect by[MAX_EXPECT];
	size_t n_by;
	long expect_conns; /* -1 unchecked */
};

static const char *const op_names[8] = {
	"write", "read_req", "read_resp", "send",
	"send_inv", "send_se", "send_se_inv", "terminate",
};

static const char mpa_key_req[] = "MPA ID Req Frame";
static const char mpa_key_rep[] = "MPA ID Rep Frame";

/* ---- small helpers ---------------------------------------------------- */

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

static uint32_t rd32(const uint8_t *p, bool big)
{
	return big ? be32(p) : le32(p);
}

static void warn(struct capture *cap, const char *fmt, ...)
{
	va_list ap;

	cap->warnings++;
	if (cap->quiet || cap->warnings > MAX_WARNINGS)
		return;
	fprintf(stderr, PROG ": warning: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cap->warnings == MAX_WARNINGS)
		fprintf(stderr, PROG ": further warnings suppressed\n");
}

static void ep_str(const struct endpoint *e, char *buf, size_t n)
{
	char a[INET6_ADDRSTRLEN];

	if (e->family == 6) {
		inet_ntop(AF_INET6, e->addr, a, sizeof(a));
		snprintf(buf, n, "[%s]:%u", a, e->port);
	} else {
		inet_ntop(AF_INET, e->addr, a, sizeof(a));
		snprintf(buf, n, "%s:%u", a, e->port);
	}
}

static bool ep_equal(const struct endpoint *a, const struct endpoint *b)
{
	return a->family == b->family && a->port == b->port &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static uint32_t ep_hash(const struct endpoint *e)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < sizeof(e->addr); i++)
		h = (h ^ e->addr[i]) * 16777619u;
	h = (h ^ (e->port & 0xff)) * 16777619u;
	return (h ^ (e->port >> 8)) * 16777619u;
}

static const char *op_name(unsigned op)
{
	return op < 8 ? op_names[op] : "unknown";
}

/* ---- stream reassembly ------------------------------------------------ */

static bool stream_has(const struct stream *s, size_t off, size_t n)
{
	if (off > s->hi || n > s->hi - off)
		return false;
	if (off + n <= s->contig)
		return true;
	for (size_t i = off; i < off + n; i++)
		if (!s->frame[i])
			return false;
	return true;
}

static void stream_free(struct capture *cap, struct stream *s)
{
	cap->mem_used -= s->alloc * (1 + sizeof(*s->frame));
	free(s->data);
	free(s->frame);
	s->data = NULL;
	s->frame = NULL;
	s->alloc = s->hi = s->contig = 0;
}

/* grow the buffers to hold offsets below `need`, within limit and budget */
static bool stream_reserve(struct capture *cap, struct stream *s, size_t need)
{
	size_t n = s->alloc ? s->alloc : 512;
	size_t cost;
	uint8_t *d;
	uint32_t *f;

	if (need <= s->alloc)
		return true;
	while (n < need)
		n *= 2;
	if (n > s->limit)
		n = s->limit;
	cost = (n - s->alloc) * (1 + sizeof(*f));
	if (cap->mem_used + cost > MEM_BUDGET) {
		if (!cap->mem_warned)
			warn(cap, "memory budget reached; later data is not kept");
		cap->mem_warned = true;
		return false;
	}
	d = realloc(s->data, n);
	if (!d)
		return false;
	s->data = d;
	f = realloc(s->frame, n * sizeof(*f));
	if (!f)
		return false;
	s->frame = f;
	memset(f + s->alloc, 0, (n - s->alloc) * sizeof(*f));
	cap->mem_used += cost;
	s->alloc = n;
	return true;
}

static void stream_update_contig(struct stream *s)
{
	while (s->contig < s->hi && s->frame[s->contig])
		s->contig++;
}

/*
 * Move the origin of the stream: the octet now at offset 0 goes to offset
 * `delta` (negative: octets before the new origin are dropped). Needed
 * when the provisional origin turns out to be later than the real one.
 */
static void stream_shift(struct capture *cap, struct stream *s, int64_t delta)
{
	if (delta < 0) {
		size_t drop = (size_t)-delta;

		if (drop >= s->hi) {
			if (s->frame)
				memset(s->frame, 0, s->alloc * sizeof(*s->frame));
			s->hi = 0;
		} else {
			memmove(s->data, s->data + drop, s->hi - drop);
			memmove(s->frame, s->frame + drop,
				(s->hi - drop) * sizeof(*s->frame));
			memset(s->frame + s->hi - drop, 0,
			       drop * sizeof(*s->frame));
			s->hi -= drop;
		}
	} else if (delta > 0) {
		size_t d = (size_t)delta;
		size_t keep = s->hi;

		if (d >= s->limit) {
			stream_shift(cap, s, -(int64_t)s->hi);
			return;
		}
		if (keep > s->limit - d)
			keep = s->limit - d;
		if (keep && !stream_reserve(cap, s, d + keep))
			keep = 0;
		if (keep) {
			memmove(s->data + d, s->data, keep);
			memmove(s->frame + d, s->frame, keep * sizeof(*s->frame));
			memset(s->frame, 0, d * sizeof(*s->frame));
			s->hi = d + keep;
		} else {
			if (s->frame)
				memset(s->frame, 0, s->alloc * sizeof(*s->frame));
			s->hi = 0;
		}
	}
	s->contig = 0;
	stream_update_contig(s);
}

static bool is_mpa_key(const uint8_t *p)
{
	return memcmp(p, mpa_key_req, MPA_KEY_LEN) == 0 ||
	       memcmp(p, mpa_key_rep, MPA_KEY_LEN) == 0;
}

/*
 * Keep memory small once the origin is known for sure: a direction that
 * does not open with an MPA key is dropped, and an MPA one keeps only the
 * octets up to the end of its first FPDU.
 */
static void stream_trim(struct capture *cap, struct stream *s)
{
	size_t start;
	uint16_t ulpdu;
	size_t end;

	if (!s->base_from_syn || s->trimmed || s->closed)
		return;
	if (s->contig < MPA_KEY_LEN)
		return;
	if (!is_mpa_key(s->data)) {
		stream_free(cap, s);
		s->closed = true;
		return;
	}
	if (s->contig < MPA_HDR_LEN)
		return;
	start = MPA_HDR_LEN + be16(s->data + 18);
	if (start + FPDU_MAX_WIRE < s->limit)
		s->limit = start + FPDU_MAX_WIRE;
	if (!stream_has(s, start, MPA_ULPDU_LEN_LEN))
		return;
	/* zero here is a marker: keep the generous limit then */
	ulpdu = be16(s->data + start);
	if (!ulpdu)
		return;
	end = start + MPA_ULPDU_LEN_LEN + ulpdu + MPA_CRC_LEN + 3;
	if (end < s->limit)
		s->limit = end;
	s->trimmed = true;
}

static void stream_store(struct capture *cap, struct stream *s, size_t off,
			 const uint8_t *p, size_t len, uint32_t frame)
{
	size_t end;

	if (off >= s->limit)
		return;
	end = len > s->limit - off ? s->limit : off + len;
	if (!stream_reserve(cap, s, end))
		return;
	for (size_t i = off; i < end; i++) {
		if (!s->frame[i]) {
			s->data[i] = p[i - off];
			s->frame[i] = frame;
		} else if (s->data[i] != p[i - off]) {
			s->conflicts++;
		}
	}
	if (end > s->hi)
		s->hi = end;
	stream_update_contig(s);
}

/* add a TCP payload that starts at sequence number seq */
static void stream_add(struct capture *cap, struct stream *s, uint32_t seq,
		       const uint8_t *p, size_t len, uint32_t frame)
{
	int64_t rel;

	if (s->closed || !len)
		return;
	if (!s->have_base) {
		s->base = seq;
		s->have_base = true;
	}
	rel = (int32_t)(seq - s->base);
	if (rel < 0 && !s->base_from_syn && -rel < (int64_t)s->limit) {
		/* no SYN seen: an earlier segment moves the origin back */
		stream_shift(cap, s, -rel);
		s->base = seq;
		rel = 0;
	}
	if (rel < 0) {
		if ((uint64_t)-rel >= len)
			return;
		p += -rel;
		len -= (size_t)-rel;
		rel = 0;
	}
	stream_store(cap, s, (size_t)rel, p, len, frame);
	stream_trim(cap, s);
}

/* a SYN fixes the origin: its sequence number plus one */
static void stream_syn(struct capture *cap, struct stream *s, uint32_t isn)
{
	uint32_t origin = isn + 1;

	if (s->base_from_syn)
		return;
	if (s->have_base)
		stream_shift(cap, s, (int32_t)(s->base - origin));
	s->base = origin;
	s->have_base = true;
	s->base_from_syn = true;
	stream_trim(cap, s);
}

/* ---- connection table ------------------------------------------------- */

static uint32_t tuple_hash(const struct endpoint *a, const struct endpoint *b)
{
	/* symmetric, so both directions land in one bucket */
	return (ep_hash(a) + ep_hash(b)) % HASH_SIZE;
}

static struct conn *conn_find(struct capture *cap, const struct endpoint *src,
			      const struct endpoint *dst, int *dir)
{
	int64_t i = cap->buckets[tuple_hash(src, dst)];

	/* newest first, so a reused 4-tuple finds its latest connection */
	for (; i >= 0; i = cap->conns[i].next) {
		struct conn *c = &cap->conns[i];

		if (ep_equal(&c->ep[0], src) && ep_equal(&c->ep[1], dst)) {
			*dir = 0;
			return c;
		}
		if (ep_equal(&c->ep[1], src) && ep_equal(&c->ep[0], dst)) {
			*dir = 1;
			return c;
		}
	}
	return NULL;
}

static struct conn *conn_new(struct capture *cap, const struct endpoint *src,
			     const struct endpoint *dst, int *dir)
{
	uint32_t h = tuple_hash(src, dst);
	struct conn *c;

	if (cap->n_conns >= MAX_CONNS) {
		if (!cap->conns_warned)
			warn(cap, "too many tcp connections; later ones ignored");
		cap->conns_warned = true;
		return NULL;
	}
	if (cap->n_conns == cap->cap_conns) {
		size_t n = cap->cap_conns ? cap->cap_conns * 2 : 64;
		struct conn *nc = realloc(cap->conns, n * sizeof(*nc));

		if (!nc)
			return NULL;
		cap->conns = nc;
		cap->cap_conns = n;
	}
	c = &cap->conns[cap->n_conns];
	memset(c, 0, sizeof(*c));
	c->ep[0] = *src;
	c->ep[1] = *dst;
	c->client = -1;
	c->dir[0].limit = c->dir[1].limit = STREAM_LIMIT;
	c->next = cap->buckets[h];
	cap->buckets[h] = (int64_t)cap->n_conns++;
	*dir = 0;
	return c;
}

/* ---- packet decoding -------------------------------------------------- */

struct segment {
	struct endpoint src;
	struct endpoint dst;
	uint32_t seq;
	uint8_t flags;
	const uint8_t *payload;
	size_t len;
};

/*
 * Skip 802.1Q / 802.1ad tags. `off` points at the type octets; a tag is
 * that type (the TPID), two octets of TCI, then the next type.
 */
static bool skip_vlan(const uint8_t *d, size_t len, size_t *off, uint16_t *et)
{
	for (int i = 0; i < 4; i++) {
		if (*et != 0x8100 && *et != 0x88a8 && *et != 0x9100)
			return true;
		if (len < *off + 6)
			return false;
		*et = be16(d + *off + 4);
		*off += 4;
	}
	return false;
}

static bool link_null(const uint8_t *d, size_t len, uint16_t *et)
{
	uint32_t a, b;

	if (len < 4)
		return false;
	/* the family is in the byte order of the capturing host */
	a = le32(d);
	b = be32(d);
	if (a == 2 || b == 2)
		*et = ETH_IPV4;
	else if (a == 24 || a == 28 || a == 30 || b == 24 || b == 28 ||
		 b == 30)
		*et = ETH_IPV6;
	else
		return false;
	return true;
}

/* find the network layer: its ethertype and offset in the record */
static bool link_payload(uint32_t lt, const uint8_t *d, size_t len,
			 uint16_t *et, size_t *off)
{
	switch (lt) {
	case LT_EN10MB:
		if (len < 14)
			return false;
		*et = be16(d + 12);
		*off = 12;
		if (!skip_vlan(d, len, off, et))
			return false;
		*off += 2;
		return true;
	case LT_LINUX_SLL:
		if (len < 16)
			return false;
		*et = be16(d + 14);
		*off = 14;
		if (!skip_vlan(d, len, off, et))
			return false;
		*off += 2;
		return true;
	case LT_LINUX_SLL2:
		if (len < 20)
			return false;
		*et = be16(d);
		*off = 20;
		return *et != 0x8100 && *et != 0x88a8;
	case LT_RAW:
	case LT_RAW_BSD:
	case LT_IPV4:
	case LT_IPV6:
		if (len < 1)
			return false;
		*off = 0;
		*et = (d[0] >> 4) == 6 ? ETH_IPV6 : ETH_IPV4;
		return true;
	case LT_NULL:
		*off = 4;
		return link_null(d, len, et);
	default:
		return false;
	}
}

/* on return l4 and l4len give the transport header and what was captured */
static bool parse_ipv4(const uint8_t *p, size_t len, struct segment *sg,
		       const uint8_t **l4, size_t *l4len)
{
	size_t ihl, tot;
	uint16_t frag;

	if (len < 20 || (p[0] >> 4) != 4)
		return false;
	ihl = (size_t)(p[0] & 0x0f) * 4;
	tot = be16(p + 2);
	/* a zero total length is what segmentation offload leaves behind */
	if (!tot)
		tot = len;
	if (ihl < 20 || ihl > len || tot < ihl)
		return false;
	frag = be16(p + 6);
	if ((frag & 0x1fff) || (frag & 0x2000) || p[9] != 6)
		return false;
	memset(sg, 0, sizeof(*sg));
	sg->src.family = sg->dst.family = 4;
	memcpy(sg->src.addr, p + 12, 4);
	memcpy(sg->dst.addr, p + 16, 4);
	*l4 = p + ihl;
	/* trailing link padding is not data; a short capture keeps its prefix */
	*l4len = (tot < len ? tot : len) - ihl;
	return true;
}

static bool parse_ipv6(const uint8_t *p, size_t len, struct segment *sg,
		       const uint8_t **l4, size_t *l4len)
{
	size_t off = 40, end;
	uint8_t nh;

	if (len < 40 || (p[0] >> 4) != 6)
		return false;
	end = be16(p + 4) ? 40 + (size_t)be16(p + 4) : len;
	if (end > len)
		end = len;
	nh = p[6];
	for (int i = 0; i < 8 && nh != 6; i++) {
		size_t hl;

		if (off + 2 > end)
			return false;
		if (nh == 0 || nh == 43 || nh == 60)
			hl = ((size_t)p[off + 1] + 1) * 8;
		else if (nh == 51)
			hl = ((size_t)p[off + 1] + 2) * 4;
		else
			return false; /* fragments and others: not followed */
		nh = p[off];
		off += hl;
	}
	if (nh != 6 || off > end)
		return false;
	memset(sg, 0, sizeof(*sg));
	sg->src.family = sg->dst.family = 6;
	memcpy(sg->src.addr, p + 8, 16);
	memcpy(sg->dst.addr, p + 24, 16);
	*l4 = p + off;
	*l4len = end - off;
	return true;
}

static bool parse_tcp(const uint8_t *p, size_t len, struct segment *sg)
{
	size_t doff;

	if (len < 20)
		return false;
	doff = (size_t)(p[12] >> 4) * 4;
	if (doff < 20 || doff > len)
		return false;
	sg->src.port = be16(p);
	sg->dst.port = be16(p + 2);
	sg->seq = be32(p + 4);
	sg->flags = p[13];
	sg->payload = p + doff;
	sg->len = len - doff;
	return true;
}

static bool parse_record(uint32_t lt, const uint8_t *d, size_t len,
			 struct segment *sg)
{
	uint16_t et;
	size_t off;
	const uint8_t *l4;
	size_t l4len;

	if (!link_payload(lt, d, len, &et, &off) || off > len)
		return false;
	d += off;
	len -= off;
	if (et == ETH_IPV4) {
		if (!parse_ipv4(d, len, sg, &l4, &l4len))
			return false;
	} else if (et == ETH_IPV6) {
		if (!parse_ipv6(d, len, sg, &l4, &l4len))
			return false;
	} else {
		return false;
	}
	return parse_tcp(l4, l4len, sg);
}

static void handle_segment(struct capture *cap, const struct segment *sg,
			   uint32_t frame)
{
	bool syn = sg->flags & TCP_SYN;
	bool ack = sg->flags & TCP_ACK;
	uint32_t seq = sg->seq;
	struct conn *c;
	int dir = 0;

	c = conn_find(cap, &sg->src, &sg->dst, &dir);
	/* a SYN with another ISN on a known 4-tuple opens a new connection */
	if (c && syn && !ack && c->dir[dir].base_from_syn &&
	    c->dir[dir].base != seq + 1)
		c = NULL;
	if (!c)
		c = conn_new(cap, &sg->src, &sg->dst, &dir);
	if (!c)
		return;
	cap->tcp_segments++;
	if (syn) {
		if (!ack)
			c->client = dir;
		stream_syn(cap, &c->dir[dir], seq);
		seq++; /* data on a SYN starts after the SYN's own number */
	}
	/* pure ACKs, FINs and RSTs carry nothing to reassemble */
	if (sg->len)
		stream_add(cap, &c->dir[dir], seq, sg->payload, sg->len, frame);
}

/* ---- pcap reading ----------------------------------------------------- */

struct pcap {
	FILE *f;
	bool big; /* file byte order */
	bool nsec;
	uint32_t linktype;
};

static bool lt_supported(uint32_t lt)
{
	return lt == LT_EN10MB || lt == LT_LINUX_SLL || lt == LT_LINUX_SLL2 ||
	       lt == LT_RAW || lt == LT_RAW_BSD || lt == LT_IPV4 ||
	       lt == LT_IPV6 || lt == LT_NULL;
}

static int pcap_open_hdr(struct pcap *pc)
{
	uint8_t h[24];
	size_t n = fread(h, 1, sizeof(h), pc->f);
	uint32_t magic;

	if (n >= 4 && be32(h) == 0x0a0d0d0a) {
		fprintf(stderr, PROG ": pcapng is not supported; convert it "
				"with 'editcap -F pcap' or 'tcpdump -r x -w y'\n");
		return -1;
	}
	if (n < sizeof(h)) {
		fprintf(stderr, PROG ": not a pcap file: %zu-byte header\n", n);
		return -1;
	}
	magic = le32(h);
	if (magic == 0xa1b2c3d4 || magic == 0xa1b23c4d) {
		pc->big = false;
	} else {
		magic = be32(h);
		if (magic != 0xa1b2c3d4 && magic != 0xa1b23c4d) {
			fprintf(stderr, PROG ": not a pcap file: magic "
					"0x%08" PRIx32 "\n", le32(h));
			return -1;
		}
		pc->big = true;
	}
	pc->nsec = magic == 0xa1b23c4d;
	if ((pc->big ? be16(h + 4) : (uint16_t)(h[4] | h[5] << 8)) != 2) {
		fprintf(stderr, PROG ": unsupported pcap major version\n");
		return -1;
	}
	/* the upper bits may carry FCS information; the type is the low 16 */
	pc->linktype = rd32(h + 20, pc->big) & 0xffff;
	if (!lt_supported(pc->linktype)) {
		fprintf(stderr, PROG ": unsupported link type %" PRIu32 "\n",
			pc->linktype);
		return -1;
	}
	return 0;
}

/* returns 1 with a record, 0 at a clean end, -1 at a truncated/bad one */
static int pcap_next(struct capture *cap, struct pcap *pc, uint8_t **buf,
		     size_t *bufsz, size_t *len)
{
	uint8_t h[16];
	size_t n = fread(h, 1, sizeof(h), pc->f);
	uint32_t incl;

	if (n == 0 && feof(pc->f))
		return 0;
	if (n < sizeof(h)) {
		warn(cap, "record %" PRIu64 ": truncated record header",
		     cap->records + 1);
		return -1;
	}
	incl = rd32(h + 8, pc->big);
	if (incl > MAX_RECORD) {
		warn(cap, "record %" PRIu64 ": implausible length %" PRIu32
		     "; stopping", cap->records + 1, incl);
		return -1;
	}
	if (incl > *bufsz) {
		uint8_t *nb = realloc(*buf, incl);

		if (!nb)
			return -1;
		*buf = nb;
		*bufsz = incl;
	}
	n = fread(*buf, 1, incl, pc->f);
	if (n < incl) {
		warn(cap, "record %" PRIu64 ": truncated: %zu of %" PRIu32
		     " octets", cap->records + 1, n, incl);
		return -1;
	}
	*len = incl;
	return 1;
}

static int read_capture(struct capture *cap, const char *path)
{
	struct pcap pc = { 0 };
	uint8_t *buf = NULL;
	size_t bufsz = 0, len = 0;
	int r;

	pc.f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	if (!pc.f) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (pcap_open_hdr(&pc) < 0) {
		if (pc.f != stdin)
			fclose(pc.f);
		return -1;
	}
	cap->linktype = pc.linktype;
	while ((r = pcap_next(cap, &pc, &buf, &bufsz, &len)) > 0) {
		struct segment sg;

		cap->records++;
		if (cap->records > UINT32_MAX - 1) {
			warn(cap, "too many records; stopping");
			break;
		}
		if (parse_record(pc.linktype, buf, len, &sg))
			handle_segment(cap, &sg, (uint32_t)cap->records);
		else
			cap->skipped++;
	}
	if (r < 0)
		cap->truncated = true;
	free(buf);
	if (pc.f != stdin)
		fclose(pc.f);
	return 0;
}

/* ---- MPA and FPDU analysis -------------------------------------------- */

static void parse_mpa_enh(const struct stream *s, struct mpa_frame *f)
{
	uint16_t ird, ord;

	if (f->rev < 2 || !(f->flags & MPA_FLAG_S) || f->pd_len < MPA_ENH_LEN ||
	    !stream_has(s, MPA_HDR_LEN, MPA_ENH_LEN))
		return;
	ird = be16(s->data + MPA_HDR_LEN);
	ord = be16(s->data + MPA_HDR_LEN + 2);
	f->enh = true;
	f->ird = ird & MPA_IRD_ORD_MASK;
	f->ord = ord & MPA_IRD_ORD_MASK;
	f->p2p = ird & MPA_P2P;
	f->rtr_send = ird & MPA_RTR_SEND;
	f->rtr_write = ord & MPA_RTR_WRITE;
	f->rtr_read = ord & MPA_RTR_READ;
}

static void parse_mpa_frame(const struct stream *s, struct mpa_frame *f)
{
	memset(f, 0, sizeof(*f));
	if (s->closed || !stream_has(s, 0, MPA_KEY_LEN))
		return;
	if (memcmp(s->data, mpa_key_req, MPA_KEY_LEN) == 0)
		f->is_req = true;
	else if (memcmp(s->data, mpa_key_rep, MPA_KEY_LEN) != 0)
		return;
	f->key = true;
	f->frame = s->frame[0];
	if (!stream_has(s, MPA_KEY_LEN, 4))
		return;
	f->hdr = true;
	f->flags = s->data[16];
	f->rev = s->data[17];
	f->pd_len = be16(s->data + 18);
	f->pd_complete = stream_has(s, MPA_HDR_LEN, f->pd_len);
	parse_mpa_enh(s, f);
}

/*
 * Octets of the FPDU stream as seen without markers. With markers
 * (RFC 5044), one sits at every 512th octet counted from the first octet
 * after the MPA frame, the first one right there. That is only assumed
 * when the stream shows it (a zero where an FPDU length would be); the
 * FPDUPTR values are not checked.
 */
struct fpdu_src {
	const struct stream *s;
	size_t start;
	bool markers;
};

static size_t fpdu_raw(const struct fpdu_src *src, size_t u)
{
	const size_t room = MPA_MARKER_SPACING - MPA_MARKER_LEN;

	if (!src->markers)
		return src->start + u;
	return src->start + (u / room) * MPA_MARKER_SPACING + MPA_MARKER_LEN +
	       u % room;
}

static bool fpdu_read(const struct fpdu_src *src, size_t u, uint8_t *out,
		      size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t r = fpdu_raw(src, u + i);

		if (!stream_has(src->s, r, 1))
			return false;
		out[i] = src->s->data[r];
	}
	return true;
}

static void decode_tagged(const uint8_t *h, struct fpdu *fp)
{
	fp->stag = be32(h + 2);
	fp->to = be64(h + 6);
}

static void decode_untagged(const uint8_t *h, struct fpdu *fp)
{
	fp->inv_stag = be32(h + 2);
	fp->qn = be32(h + 6);
	fp->msn = be32(h + 10);
	fp->mo = be32(h + 14);
}

/* the body that follows an untagged header and is not data payload */
static void decode_body(const struct fpdu_src *src, struct fpdu *fp)
{
	uint8_t b[RDMAP_RREQ_BODY];
	size_t at = MPA_ULPDU_LEN_LEN + DDP_UNTAGGED_HDR;

	if (fp->tagged || fp->payload < 0)
		return;
	if (fp->opcode == OP_READ_REQ) {
		if (!fpdu_read(src, at, b, RDMAP_RREQ_BODY))
			return;
		fp->body = true;
		fp->sink_stag = be32(b);
		fp->sink_to = be64(b + 4);
		fp->rsize = be32(b + 12);
		fp->src_stag = be32(b + 16);
		fp->src_to = be64(b + 20);
	} else if (fp->opcode == OP_TERMINATE && fp->payload >= RDMAP_TERM_HDR) {
		if (!fpdu_read(src, at, b, RDMAP_TERM_HDR))
			return;
		fp->body = true;
		fp->term_layer = b[0] >> 4;
		fp->term_etype = b[0] & 0x0f;
		fp->term_ecode = b[1];
	}
}

static void decode_header(const struct fpdu_src *src, struct fpdu *fp)
{
	uint8_t h[DDP_UNTAGGED_HDR];

	if (fp->ulpdu < 2 || !fpdu_read(src, MPA_ULPDU_LEN_LEN, h, 2))
		return;
	fp->ctrl = true;
	fp->tagged = h[0] & 0x80;
	fp->last = h[0] & 0x40;
	fp->dv = h[0] & 0x03;
	fp->rv = h[1] >> 6;
	fp->opcode = h[1] & 0x0f;
	fp->hdr_len = fp->tagged ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR;
	if (fp->ulpdu < fp->hdr_len) {
		fp->payload = -1;
		return;
	}
	fp->payload = (long)(fp->ulpdu - fp->hdr_len);
	/* a read request carries its request, not data */
	if (!fp->tagged && fp->opcode == OP_READ_REQ)
		fp->payload = fp->payload >= RDMAP_RREQ_BODY ?
			      fp->payload - RDMAP_RREQ_BODY : -1;
	if (!fpdu_read(src, MPA_ULPDU_LEN_LEN, h, fp->hdr_len))
		return;
	fp->hdr_captured = true;
	if (fp->tagged)
		decode_tagged(h, fp);
	else
		decode_untagged(h, fp);
	decode_body(src, fp);
}

/* decode the FPDU that starts at offset `start` of the direction */
static void decode_fpdu(const struct stream *s, size_t start, bool markers,
			bool crc, struct fpdu *fp)
{
	struct fpdu_src src = { s, start, false };
	uint8_t l[2];
	size_t plain, end;

	memset(fp, 0, sizeof(*fp));
	if (!stream_has(s, start, 2)) {
		fp->reason = s->hi > start ? "not_captured" : "no_data";
		return;
	}
	/* a zero ULPDU length cannot be, so a zero there is a marker */
	if (markers) {
		src.markers = be16(s->data + start) == 0;
		fp->marker = src.markers;
		fp->marker_missing = !src.markers;
	}
	if (!fpdu_read(&src, 0, l, 2)) {
		fp->reason = "not_captured";
		return;
	}
	fp->found = true;
	fp->frame = s->frame[fpdu_raw(&src, 0)];
	fp->ulpdu = be16(l);
	fp->payload = -1;
	decode_header(&src, fp);
	plain = (MPA_ULPDU_LEN_LEN + (size_t)fp->ulpdu + 3) / 4 * 4 +
		(crc ? MPA_CRC_LEN : 0);
	end = fpdu_raw(&src, plain - 1) + 1;
	fp->complete = stream_has(s, start, end - start);
}

static bool frame_hdr_ok(const struct mpa_frame *f)
{
	return f->key && f->hdr;
}

/* decide which side is active; false if neither opens with an MPA key */
static bool pick_active(struct verdict *v)
{
	const struct mpa_frame *f = v->f;

	if (f[0].key && f[0].is_req && f[1].key && f[1].is_req) {
		v->both_req = true;
		v->active = f[1].frame < f[0].frame;
	} else if (f[0].key && f[0].is_req) {
		v->active = 0;
	} else if (f[1].key && f[1].is_req) {
		v->active = 1;
	} else if (f[0].key || f[1].key) {
		/* only a reply was captured: its peer is the active side */
		v->active = f[0].key ? 1 : 0;
		v->active_inferred = true;
	} else {
		return false;
	}
	return true;
}

static void analyze(const struct conn *c, struct verdict *v)
{
	memset(v, 0, sizeof(*v));
	v->first = -1;
	for (int d = 0; d < 2; d++)
		parse_mpa_frame(&c->dir[d], &v->f[d]);
	v->mpa = pick_active(v);
	if (!v->mpa)
		return;
	/*
	 * A C flag in either frame means CRCs both ways (the reply must echo
	 * a requested one); markers are looked for when either side asked.
	 */
	for (int d = 0; d < 2; d++) {
		if (frame_hdr_ok(&v->f[d])) {
			v->markers |= v->f[d].flags & MPA_FLAG_M;
			v->crc |= v->f[d].flags & MPA_FLAG_C;
		}
	}
	for (int d = 0; d < 2; d++) {
		const struct mpa_frame *f = &v->f[d];

		if (!frame_hdr_ok(f)) {
			memset(&v->by[d], 0, sizeof(v->by[d]));
			v->by[d].reason = "no_mpa_frame";
			continue;
		}
		decode_fpdu(&c->dir[d], MPA_HDR_LEN + (size_t)f->pd_len,
			    v->markers, v->crc, &v->by[d]);
	}
	if (v->by[0].found && (!v->by[1].found ||
			       v->by[0].frame <= v->by[1].frame))
		v->first = 0;
	else if (v->by[1].found)
		v->first = 1;
}

/* ---- output ----------------------------------------------------------- */

static const char *side_name(const struct verdict *v, int ep)
{
	return ep == v->active ? "active" : "passive";
}

static void print_flags(const char *name, const struct mpa_frame *f)
{
	if (!f->key) {
		printf(" %s_flags=missing", name);
		return;
	}
	if (!f->hdr) {
		printf(" %s_flags=not_captured", name);
		return;
	}
	printf(" %s_flags=0x%02x(", name, f->flags);
	if (!(f->flags & (MPA_FLAG_M | MPA_FLAG_C | MPA_FLAG_R | MPA_FLAG_S |
			  MPA_FLAG_RES)))
		printf("none");
	printf("%s%s%s%s%s)", f->flags & MPA_FLAG_M ? "M" : "",
	       f->flags & MPA_FLAG_C ? "C" : "", f->flags & MPA_FLAG_R ? "R" : "",
	       f->flags & MPA_FLAG_S ? "S" : "",
	       f->flags & MPA_FLAG_RES ? "+res" : "");
}

static void print_rtr(const char *key, const struct mpa_frame *f)
{
	bool any = f->rtr_send || f->rtr_write || f->rtr_read;

	printf(" %s=%s%s%s%s%s%s", key, any ? "" : "none",
	       f->rtr_send ? "send" : "",
	       f->rtr_send && (f->rtr_write || f->rtr_read) ? "," : "",
	       f->rtr_write ? "write" : "", f->rtr_write && f->rtr_read ? "," : "",
	       f->rtr_read ? "read" : "");
}

static void print_frame(const char *name, const struct mpa_frame *f)
{
	char key[16];

	if (!f->key || !f->hdr) {
		printf(" %s_pdata=%s", name, f->key ? "not_captured" : "missing");
		return;
	}
	printf(" %s_rev=%u %s_pdata=%u%s %s_frame=%" PRIu32, name, f->rev, name,
	       f->pd_len, f->pd_complete ? "" : "(partial)", name, f->frame);
	if (f->rev >= 2) {
		printf(" %s_enh=%d", name, f->enh);
		if (f->enh) {
			printf(" %s_ird=%u %s_ord=%u %s_p2p=%d", name, f->ird,
			       name, f->ord, name, f->p2p);
			snprintf(key, sizeof(key), "%s_rtr", name);
			print_rtr(key, f);
		}
	}
}

static void print_conn(size_t id, const struct conn *c, const struct verdict *v)
{
	const struct mpa_frame *req = &v->f[v->active];
	const struct mpa_frame *rep = &v->f[!v->active];
	char a[64], p[64];

	ep_str(&c->ep[v->active], a, sizeof(a));
	ep_str(&c->ep[!v->active], p, sizeof(p));
	printf("conn id=%zu %s -> %s active=%s passive=%s", id, a, p, a, p);
	if (c->client >= 0) {
		char t[64];

		ep_str(&c->ep[c->client], t, sizeof(t));
		printf(" tcp_client=%s", t);
	} else {
		printf(" tcp_client=unknown");
	}
	printf(" mpa_rev=%u", frame_hdr_ok(req) ? req->rev :
			      frame_hdr_ok(rep) ? rep->rev : 0);
	print_flags("req", req);
	print_flags("rep", rep);
	printf(" markers=%d crc=%d reject=%d", v->markers, v->crc,
	       frame_hdr_ok(rep) && (rep->flags & MPA_FLAG_R) ? 1 : 0);
	print_frame("req", req);
	print_frame("rep", rep);
	if (v->active_inferred)
		printf(" note=active_inferred_from_reply");
	if (v->both_req)
		printf(" note=both_sides_sent_a_request");
	if (c->dir[0].conflicts || c->dir[1].conflicts)
		printf(" note=retransmission_mismatch");
	printf("\n");
}

static void print_untagged(const struct fpdu *fp)
{
	printf(" qn=%" PRIu32 " msn=%" PRIu32 " mo=%" PRIu32, fp->qn, fp->msn,
	       fp->mo);
	if (fp->opcode == OP_SEND_INV || fp->opcode == OP_SEND_SE_INV)
		printf(" inv_stag=0x%08" PRIx32, fp->inv_stag);
	if (fp->opcode == OP_READ_REQ && fp->body)
		printf(" read_size=%" PRIu32 " sink_stag=0x%08" PRIx32
		       " sink_to=0x%" PRIx64 " src_stag=0x%08" PRIx32
		       " src_to=0x%" PRIx64, fp->rsize, fp->sink_stag,
		       fp->sink_to, fp->src_stag, fp->src_to);
	if (fp->opcode == OP_TERMINATE && fp->body)
		printf(" term_layer=%u term_etype=%u term_ecode=0x%02x",
		       fp->term_layer, fp->term_etype, fp->term_ecode);
}

static bool tagged_mismatch(const struct fpdu *fp)
{
	bool want = fp->opcode == OP_WRITE || fp->opcode == OP_READ_RESP;

	return fp->opcode < 8 && want != fp->tagged;
}

static void print_fpdu(const struct fpdu *fp, const struct verdict *v, int ep)
{
	if (!fp->found) {
		printf(" found=0 reason=%s\n", fp->reason ? fp->reason : "none");
		return;
	}
	printf(" found=1 frame=%" PRIu32 " ulpdu=%u", fp->frame, fp->ulpdu);
	if (!fp->ctrl) {
		printf(" hdr=not_captured marker=%d\n", fp->marker);
		return;
	}
	printf(" tagged=%d last=%d ddp_ver=%u rdmap_ver=%u opcode=%u(%s) hdr=%zu",
	       fp->tagged, fp->last, fp->dv, fp->rv, fp->opcode,
	       op_name(fp->opcode), fp->hdr_len);
	if (!fp->tagged && fp->opcode == OP_READ_REQ)
		printf(" rreq_body=%d", RDMAP_RREQ_BODY);
	if (fp->payload >= 0)
		printf(" payload=%ld", fp->payload);
	else
		printf(" payload=invalid");
	if (fp->hdr_captured && fp->tagged)
		printf(" stag=0x%08" PRIx32 " to=0x%" PRIx64, fp->stag, fp->to);
	else if (fp->hdr_captured)
		print_untagged(fp);
	printf(" marker=%d complete=%d", fp->marker, fp->complete);
	if (fp->payload < 0)
		printf(" note=ulpdu_shorter_than_headers");
	if (!fp->hdr_captured && fp->payload >= 0)
		printf(" note=header_not_captured");
	if (tagged_mismatch(fp))
		printf(" note=tagged_bit_does_not_fit_opcode");
	if (fp->marker_missing)
		printf(" note=markers_negotiated_but_none_at_fpdu_start");
	if (!fp->tagged && fp->opcode == OP_READ_REQ)
		printf(" note=read_request_body_is_not_payload");
	if (ep == v->active && frame_hdr_ok(&v->f[!ep]) &&
	    fp->frame < v->f[!ep].frame)
		printf(" note=sent_before_mpa_reply");
	printf("\n");
}

static void print_verdict(size_t id, const struct conn *c,
			  const struct verdict *v)
{
	print_conn(id, c, v);
	printf("first_fpdu conn=%zu", id);
	if (v->first >= 0) {
		printf(" from=%s", side_name(v, v->first));
		print_fpdu(&v->by[v->first], v, v->first);
	} else {
		printf(" found=0 reason=no_fpdu_after_mpa\n");
	}
	for (int k = 0; k < 2; k++) {
		int ep = k == 0 ? v->active : !v->active;

		printf("first_fpdu_by conn=%zu side=%s", id, side_name(v, ep));
		print_fpdu(&v->by[ep], v, ep);
	}
}

/* ---- expectations ----------------------------------------------------- */

static int parse_opcode(const char *s)
{
	static const struct {
		const char *name;
		int op;
	} alias[] = {
		{ "rdma_write", OP_WRITE },     { "read", OP_READ_REQ },
		{ "read_request", OP_READ_REQ }, { "read_response", OP_READ_RESP },
		{ "send_invalidate", OP_SEND_INV }, { "term", OP_TERMINATE },
	};
	char *end;
	long n;

	if (!strcmp(s, "any"))
		return -1;
	for (int i = 0; i < 8; i++)
		if (!strcmp(s, op_names[i]))
			return i;
	for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
		if (!strcmp(s, alias[i].name))
			return alias[i].op;
	errno = 0;
	n = strtol(s, &end, 0);
	if (errno || *end || end == s || n < 0 || n > 15)
		return -2;
	return (int)n;
}

/* split off the next ':'-separated field; an empty field stays empty */
static char *next_field(char **cur)
{
	char *f = *cur, *colon;

	if (!f)
		return NULL;
	colon = strchr(f, ':');
	if (colon) {
		*colon = '\0';
		*cur = colon + 1;
	} else {
		*cur = NULL;
	}
	return f;
}

static bool parse_side(const char *s, int *side)
{
	if (!strcmp(s, "active"))
		*side = SIDE_ACTIVE;
	else if (!strcmp(s, "passive"))
		*side = SIDE_PASSIVE;
	else if (!strcmp(s, "any"))
		*side = SIDE_ANY;
	else
		return false;
	return true;
}

/* SIDE[:OPCODE[:PAYLOAD]], each part may be "any" */
static bool parse_expect(const char *text, struct expect *e)
{
	char buf[128];
	char *cur = buf, *side, *op, *pl;

	if (strlen(text) >= sizeof(buf))
		return false;
	strcpy(buf, text);
	e->text = text;
	side = next_field(&cur);
	op = next_field(&cur);
	pl = next_field(&cur);
	if (cur || !parse_side(side, &e->side))
		return false;
	e->opcode = op ? parse_opcode(op) : -1;
	if (e->opcode < -1)
		return false;
	e->payload = -1;
	if (pl && strcmp(pl, "any")) {
		char *end;

		errno = 0;
		e->payload = strtol(pl, &end, 0);
		if (errno || *end || end == pl || e->payload < 0)
			return false;
	}
	return true;
}

static void describe(const struct verdict *v, int ep, char *buf, size_t n)
{
	const struct fpdu *fp = ep >= 0 ? &v->by[ep] : NULL;

	if (!fp || !fp->found)
		snprintf(buf, n, "none");
	else if (!fp->ctrl)
		snprintf(buf, n, "%s:unknown:unknown", side_name(v, ep));
	else if (fp->payload < 0)
		snprintf(buf, n, "%s:%s:invalid", side_name(v, ep),
			 op_name(fp->opcode));
	else
		snprintf(buf, n, "%s:%s:%ld", side_name(v, ep),
			 op_name(fp->opcode), fp->payload);
}

static bool expect_holds(const struct expect *e, const struct verdict *v,
			 int ep)
{
	const struct fpdu *fp;

	if (ep < 0 || !v->by[ep].found)
		return false;
	fp = &v->by[ep];
	if (e->side == SIDE_ACTIVE && ep != v->active)
		return false;
	if (e->side == SIDE_PASSIVE && ep == v->active)
		return false;
	if (e->opcode >= 0 && (!fp->ctrl || fp->opcode != e->opcode))
		return false;
	if (e->payload >= 0 && (!fp->ctrl || fp->payload != e->payload))
		return false;
	return true;
}

static bool check_one(size_t id, const char *kind, const struct expect *e,
		      const struct verdict *v, int ep)
{
	char got[64];
	bool ok = expect_holds(e, v, ep);

	describe(v, ep, got, sizeof(got));
	printf("expect conn=%zu kind=%s want=%s got=%s result=%s\n", id, kind,
	       e->text, got, ok ? "pass" : "fail");
	return ok;
}

static bool check_expectations(const struct options *o, size_t id,
			       const struct verdict *v)
{
	bool ok = true;

	for (size_t i = 0; i < o->n_first; i++)
		ok &= check_one(id, "first", &o->first[i], v, v->first);
	for (size_t i = 0; i < o->n_by; i++) {
		const struct expect *e = &o->by[i];
		int ep = e->side == SIDE_PASSIVE ? !v->active : v->active;

		ok &= check_one(id, "by", e, v, ep);
	}
	return ok;
}

/* ---- main ------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [options] CAPTURE.pcap   (- reads stdin)\n"
		"  --expect-first SPEC  the first FPDU after MPA of every MPA\n"
		"                       connection must match SPEC\n"
		"  --expect-by SPEC     the first FPDU sent by SPEC's side (active\n"
		"                       or passive) must match SPEC\n"
		"  --expect-conns N     exactly N MPA connections\n"
		"  --strict             a truncated capture is bad input (exit 2)\n"
		"  -q, --quiet          no warnings on stderr\n"
		"  SPEC is SIDE[:OPCODE[:PAYLOAD]]: SIDE active|passive|any,\n"
		"  OPCODE write|read_req|read_resp|send|send_inv|send_se|\n"
		"  send_se_inv|terminate|0-15|any, PAYLOAD octets|any\n"
		"exit: 0 found, 1 no MPA connection, 2 bad input, 3 mismatch\n");
}

static bool add_expect(struct expect *list, size_t *n, const char *text,
		       bool need_side)
{
	if (*n >= MAX_EXPECT || !parse_expect(text, &list[*n]))
		return false;
	if (need_side && list[*n].side == SIDE_ANY)
		return false;
	(*n)++;
	return true;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	o->expect_conns = -1;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(EXIT_FOUND);
		} else if (!strcmp(a, "--strict")) {
			o->strict = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--expect-first") && val) {
			if (!add_expect(o->first, &o->n_first, val, false))
				goto bad_spec;
			i++;
		} else if (!strcmp(a, "--expect-by") && val) {
			if (!add_expect(o->by, &o->n_by, val, true))
				goto bad_spec;
			i++;
		} else if (!strcmp(a, "--expect-conns") && val) {
			char *end;

			o->expect_conns = strtol(val, &end, 10);
			if (*end || end == val || o->expect_conns < 0) {
				fprintf(stderr, PROG ": bad count '%s'\n", val);
				return -1;
			}
			i++;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, PROG ": unknown or incomplete option '%s'\n",
				a);
			return -1;
		} else if (!o->path) {
			o->path = a;
		} else {
			fprintf(stderr, PROG ": one capture only\n");
			return -1;
		}
		continue;
bad_spec:
		fprintf(stderr, PROG ": bad expectation '%s'\n", val);
		return -1;
	}
	if (!o->path) {
		fprintf(stderr, PROG ": no capture given\n");
		return -1;
	}
	return 0;
}

static void free_capture(struct capture *cap)
{
	for (size_t i = 0; i < cap->n_conns; i++)
		for (int d = 0; d < 2; d++)
			stream_free(cap, &cap->conns[i].dir[d]);
	free(cap->conns);
	free(cap);
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct capture *cap;
	size_t mpa = 0;
	bool ok = true;
	int rc;

	if (parse_args(argc, argv, &o) < 0) {
		usage(stderr);
		return EXIT_BAD;
	}
	cap = calloc(1, sizeof(*cap));
	if (!cap) {
		fprintf(stderr, PROG ": out of memory\n");
		return EXIT_BAD;
	}
	memset(cap->buckets, 0xff, sizeof(cap->buckets)); /* all -1 */
	cap->quiet = o.quiet;
	if (read_capture(cap, o.path) < 0) {
		free_capture(cap);
		return EXIT_BAD;
	}
	for (size_t i = 0; i < cap->n_conns; i++) {
		struct verdict v;

		analyze(&cap->conns[i], &v);
		if (!v.mpa)
			continue;
		print_verdict(mpa, &cap->conns[i], &v);
		ok &= check_expectations(&o, mpa, &v);
		mpa++;
	}
	if (o.expect_conns >= 0) {
		bool hit = (size_t)o.expect_conns == mpa;

		printf("expect kind=conns want=%ld got=%zu result=%s\n",
		       o.expect_conns, mpa, hit ? "pass" : "fail");
		ok &= hit;
	}
	printf("summary records=%" PRIu64 " tcp_segments=%" PRIu64
	       " skipped=%" PRIu64 " tcp_conns=%zu mpa_conns=%zu truncated=%d"
	       " warnings=%u\n", cap->records, cap->tcp_segments, cap->skipped,
	       cap->n_conns, mpa, cap->truncated, cap->warnings);
	if (cap->truncated && o.strict)
		rc = EXIT_BAD;
	else if (!mpa)
		rc = EXIT_NONE;
	else
		rc = ok ? EXIT_FOUND : EXIT_MISMATCH;
	free_capture(cap);
	return rc;
}
