/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mkpcap: write a classic pcap file of scripted TCP/MPA traffic, so that
 * mpa_first_fpdu can be tested without an iWARP device.
 *
 * usage: mkpcap OUT.pcap < SCRIPT
 *
 * The script has one directive a line; '#' starts a comment. A
 * connection's two directions are byte streams: directives append to a
 * stream (mpa, fpdu, text), others put stream octets on the wire (push,
 * seg), so out-of-order delivery and retransmission are just seg lines.
 *
 *   format us|ns le|be            timestamp resolution, file byte order
 *   link en10mb|sll|sll2|raw|user0 [vlan=N] [pad=1]
 *                                 pad=1: short ethernet frames padded to
 *                                 60 octets, as a NIC receives them
 *   snaplen N                     capture at most N octets of each packet
 *   mss N                         largest segment push emits (1448)
 *   conn ID CLIENT SERVER [isn_c=N] [isn_s=N]   endpoints a.b.c.d:port
 *                                 or [v6addr]:port; ID 0..15
 *   handshake ID                  SYN, SYN-ACK, ACK
 *   mpa ID DIR req|rep [rev=N] [flags=MCRS|none] [pd=N]
 *       [ird=N] [ord=N] [p2p=0|1] [rtr=send,write,read|none]
 *                                 DIR is c2s or s2c; ird/ord/p2p/rtr add
 *                                 the RFC 6581 data and set the S flag
 *   markers ID DIR                insert MPA markers from here on
 *   fpdu ID DIR OPCODE [len=N] [crc=0|1] [tagged=0|1] [last=0|1] [dv=N]
 *       [rv=N] [stag=N] [to=N] [qn=N] [msn=N] [mo=N] [rsize=N]
 *       [ulpdu=N]                 len: payload octets; ulpdu: lie in the
 *                                 length field; crc defaults to the C
 *                                 flags of the connection's MPA frames
 *   text ID DIR WORDS...          append the rest of the line
 *   push ID DIR [N]               send the next N (default: all) octets
 *   seg ID DIR OFF LEN            send octets OFF..OFF+LEN-1 again or early
 *   poke ID DIR OFF VALUE         change a stream octet, so that a later
 *                                 seg retransmits other data
 *   ack ID DIR                    a pure ACK
 *   noise                         an ARP-like frame and a UDP datagram
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "mkpcap"
#define MAX_CONNS 16
#define MAX_TOKENS 32
#define MAX_PKT 70000
#define MARKER_SPACING 512
#define MARKER_LEN 4

struct endpoint {
	int family; /* 4 or 6 */
	uint8_t addr[16];
	uint16_t port;
};

struct gdir {
	uint8_t *buf;
	size_t len, cap;
	size_t sent; /* push resumes here */
	size_t high; /* highest octet put on the wire, for the peer's ACKs */
	uint32_t isn;
	bool markers;
	size_t mark_base;
	size_t fpdu_start;
	bool fpdu_pending;
};

struct gconn {
	bool used;
	struct endpoint ep[2]; /* ep[0] is the client */
	struct gdir d[2];      /* d[0]: client to server */
	bool crc;
	uint16_t ip_id;
};

struct gen {
	FILE *out;
	bool nsec, big;
	uint32_t linktype;
	int link; /* index into link_names */
	int vlan;
	bool pad;
	uint32_t snaplen;
	size_t mss;
	uint64_t t_us;
	bool header_done;
	struct gconn conns[MAX_CONNS];
	int line;
};

static const char *const link_names[] = { "en10mb", "sll", "sll2", "raw",
					  "user0" };
static const uint32_t link_types[] = { 1, 113, 276, 101, 147 };

static const char *const op_names[8] = {
	"write", "read_req", "read_resp", "send",
	"send_inv", "send_se", "send_se_inv", "terminate",
};

static struct gen g;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": line %d: ", g.line);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

/* ---- byte helpers ----------------------------------------------------- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/* a 32-bit field in the file's byte order */
static void fput32(uint32_t v)
{
	uint8_t b[4];

	if (g.big) {
		put32(b, v);
	} else {
		for (int i = 0; i < 4; i++)
			b[i] = (uint8_t)(v >> (8 * i));
	}
	fwrite(b, 1, 4, g.out);
}

static void fput16(uint16_t v)
{
	uint8_t b[2];

	if (g.big)
		put16(b, v);
	else
		b[0] = (uint8_t)v, b[1] = (uint8_t)(v >> 8);
	fwrite(b, 1, 2, g.out);
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* CRC32c (Castagnoli), reflected; mpa_first_fpdu does not check it */
static uint32_t crc32c(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

/* ---- script tokens ---------------------------------------------------- */

static unsigned long parse_num(const char *s, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || *end || end == s || v > max)
		die("bad number '%s'", s);
	return v;
}

/* value of key=value among the tokens, or NULL */
static const char *opt(char **tok, int n, int from, const char *key)
{
	size_t kl = strlen(key);

	for (int i = from; i < n; i++)
		if (!strncmp(tok[i], key, kl) && tok[i][kl] == '=')
			return tok[i] + kl + 1;
	return NULL;
}

static unsigned long opt_num(char **tok, int n, int from, const char *key,
			     unsigned long def, unsigned long max)
{
	const char *v = opt(tok, n, from, key);

	return v ? parse_num(v, max) : def;
}

static void parse_endpoint(const char *s, struct endpoint *e)
{
	char buf[80];
	const char *colon = strrchr(s, ':');
	size_t alen;

	if (!colon || strlen(s) >= sizeof(buf))
		die("bad endpoint '%s'", s);
	alen = (size_t)(colon - s);
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	memset(e, 0, sizeof(*e));
	e->port = (uint16_t)parse_num(colon + 1, 65535);
	if (buf[0] == '[' && alen > 2 && buf[alen - 1] == ']') {
		buf[alen - 1] = '\0';
		if (inet_pton(AF_INET6, buf + 1, e->addr) != 1)
			die("bad ipv6 address in '%s'", s);
		e->family = 6;
	} else {
		if (inet_pton(AF_INET, buf, e->addr) != 1)
			die("bad ipv4 address in '%s'", s);
		e->family = 4;
	}
}

static struct gconn *get_conn(const char *id)
{
	unsigned long i = parse_num(id, MAX_CONNS - 1);

	if (!g.conns[i].used)
		die("connection %s not defined", id);
	return &g.conns[i];
}

static int get_dir(const char *s)
{
	if (!strcmp(s, "c2s"))
		return 0;
	if (!strcmp(s, "s2c"))
		return 1;
	die("direction must be c2s or s2c, not '%s'", s);
	return -1;
}

/* ---- pcap output ------------------------------------------------------ */

static void write_file_header(void)
{
	if (g.header_done)
		return;
	fput32(g.nsec ? 0xa1b23c4d : 0xa1b2c3d4);
	fput16(2);
	fput16(4);
	fput32(0);
	fput32(0);
	fput32(g.snaplen);
	fput32(g.linktype);
	g.header_done = true;
}

/* pkt must have room for 60 octets */
static void write_record(uint8_t *pkt, size_t len)
{
	size_t cap;

	if (g.pad && g.link == 0 && len < 60) {
		memset(pkt + len, 0, 60 - len);
		len = 60;
	}
	cap = len < g.snaplen ? len : g.snaplen;

	write_file_header();
	g.t_us += 100;
	fput32((uint32_t)(g.t_us / 1000000));
	fput32((uint32_t)(g.nsec ? g.t_us % 1000000 * 1000 : g.t_us % 1000000));
	fput32((uint32_t)cap);
	fput32((uint32_t)len);
	fwrite(pkt, 1, cap, g.out);
}

static void mac_of(const struct endpoint *e, uint8_t *mac)
{
	static const uint8_t base[5] = { 0x02, 0x00, 0x5e, 0x10, 0x00 };

	memcpy(mac, base, 5);
	mac[5] = e->family == 6 ? e->addr[15] : e->addr[3];
}

/* link header for a frame of ethertype et; returns its length */
static size_t link_header(uint8_t *p, const struct endpoint *src,
			  const struct endpoint *dst, uint16_t et, bool out)
{
	uint8_t smac[6], dmac[6];
	size_t n = 0;

	mac_of(src, smac);
	mac_of(dst, dmac);
	switch (g.link) {
	case 0: /* en10mb */
	case 4: /* user0 carries ethernet too: only its link type is odd */
		memcpy(p, dmac, 6);
		memcpy(p + 6, smac, 6);
		n = 12;
		if (g.vlan >= 0) {
			put16(p + n, 0x8100);
			put16(p + n + 2, (uint16_t)g.vlan);
			n += 4;
		}
		put16(p + n, et);
		return n + 2;
	case 1: /* linux sll */
		put16(p, out ? 4 : 0);
		put16(p + 2, 1);
		put16(p + 4, 6);
		memset(p + 6, 0, 8);
		memcpy(p + 6, smac, 6);
		put16(p + 14, et);
		return 16;
	case 2: /* linux sll2 */
		put16(p, et);
		put16(p + 2, 0);
		put32(p + 4, 7);
		put16(p + 8, 1);
		p[10] = out ? 4 : 0;
		p[11] = 6;
		memset(p + 12, 0, 8);
		memcpy(p + 12, smac, 6);
		return 20;
	default: /* raw ip */
		return 0;
	}
}

static uint32_t pseudo_sum(const struct endpoint *s, const struct endpoint *d,
			   uint8_t proto, size_t l4len)
{
	uint8_t b[4];
	size_t alen = s->family == 6 ? 16 : 4;
	uint32_t sum = csum_add(0, s->addr, alen);

	sum = csum_add(sum, d->addr, alen);
	put32(b, (uint32_t)l4len);
	sum = csum_add(sum, b, 4);
	return sum + proto;
}

/* IP header before an l4 segment of l4len octets; returns its length */
static size_t ip_header(uint8_t *p, const struct endpoint *s,
			const struct endpoint *d, uint8_t proto, size_t l4len,
			uint16_t id)
{
	if (s->family == 6) {
		put32(p, 0x60000000);
		put16(p + 4, (uint16_t)l4len);
		p[6] = proto;
		p[7] = 64;
		memcpy(p + 8, s->addr, 16);
		memcpy(p + 24, d->addr, 16);
		return 40;
	}
	p[0] = 0x45;
	p[1] = 0;
	put16(p + 2, (uint16_t)(20 + l4len));
	put16(p + 4, id);
	put16(p + 6, 0x4000); /* DF, as Linux TCP sends */
	p[8] = 64;
	p[9] = proto;
	put16(p + 10, 0);
	memcpy(p + 12, s->addr, 4);
	memcpy(p + 16, d->addr, 4);
	put16(p + 10, csum_fold(csum_add(0, p, 20)));
	return 20;
}

static void emit_tcp(struct gconn *c, int dir, uint8_t flags, uint32_t seq,
		     const uint8_t *data, size_t len)
{
	static uint8_t pkt[MAX_PKT];
	const struct endpoint *s = &c->ep[dir], *d = &c->ep[!dir];
	struct gdir *peer = &c->d[!dir];
	size_t off;
	uint8_t *tcp;

	if (len > MAX_PKT - 100)
		die("segment too large%s", "");
	off = link_header(pkt, s, d, s->family == 6 ? 0x86dd : 0x0800, !dir);
	off += ip_header(pkt + off, s, d, 6, 20 + len, c->ip_id++);
	tcp = pkt + off;
	put16(tcp, s->port);
	put16(tcp + 2, d->port);
	put32(tcp + 4, seq);
	put32(tcp + 8, (flags & 0x10) ? peer->isn + 1 + (uint32_t)peer->high : 0);
	tcp[12] = 5 << 4;
	tcp[13] = flags;
	put16(tcp + 14, 65535);
	put32(tcp + 16, 0);
	if (len)
		memcpy(tcp + 20, data, len);
	put16(tcp + 16, csum_fold(csum_add(pseudo_sum(s, d, 6, 20 + len), tcp,
					   20 + len)));
	write_record(pkt, off + 20 + len);
}

static void emit_noise(void)
{
	static const struct endpoint a = { 4, { 198, 51, 100, 1 }, 5353 };
	static const struct endpoint b = { 4, { 198, 51, 100, 2 }, 5353 };
	uint8_t pkt[128];
	size_t off;

	if (g.link != 3) {
		off = link_header(pkt, &a, &b, 0x0806, true);
		memset(pkt + off, 0, 28);
		write_record(pkt, off + 28);
	}
	off = link_header(pkt, &a, &b, 0x0800, true);
	off += ip_header(pkt + off, &a, &b, 17, 8 + 12, 1);
	put16(pkt + off, a.port);
	put16(pkt + off + 2, b.port);
	put16(pkt + off + 4, 8 + 12);
	put16(pkt + off + 6, 0);
	memcpy(pkt + off + 8, "not tcp data", 12);
	write_record(pkt, off + 20);
}

/* ---- streams ---------------------------------------------------------- */

static void dir_raw(struct gdir *d, uint8_t b)
{
	if (d->len == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 1024;
		d->buf = realloc(d->buf, d->cap);
		if (!d->buf)
			die("out of memory%s", "");
	}
	d->buf[d->len++] = b;
}

/*
 * Append one octet of MPA traffic, putting a marker first where one is
 * due: every 512 octets from where markers began. Its FPDUPTR counts back
 * to the current FPDU's length field, 0 when an FPDU starts right after.
 */
static void dir_put(struct gdir *d, uint8_t b)
{
	if (d->markers && (d->len - d->mark_base) % MARKER_SPACING == 0) {
		uint16_t ptr = d->fpdu_pending ? 0 :
			       (uint16_t)(d->len - d->fpdu_start);

		dir_raw(d, 0);
		dir_raw(d, 0);
		dir_raw(d, (uint8_t)(ptr >> 8));
		dir_raw(d, (uint8_t)ptr);
	}
	if (d->fpdu_pending) {
		d->fpdu_start = d->len;
		d->fpdu_pending = false;
	}
	dir_raw(d, b);
}

static void dir_append(struct gdir *d, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dir_put(d, p[i]);
}

static void send_range(struct gconn *c, int dir, size_t off, size_t len)
{
	struct gdir *d = &c->d[dir];

	if (off > d->len || len > d->len - off)
		die("segment beyond the stream%s", "");
	emit_tcp(c, dir, 0x18, d->isn + 1 + (uint32_t)off, d->buf + off, len);
	if (off + len > d->high)
		d->high = off + len;
	if (off + len > d->sent)
		d->sent = off + len;
}

/* ---- directives ------------------------------------------------------- */

static void cmd_conn(char **tok, int n)
{
	unsigned long id;
	struct gconn *c;

	if (n < 4)
		die("usage: conn ID CLIENT SERVER%s", "");
	id = parse_num(tok[1], MAX_CONNS - 1);
	c = &g.conns[id];
	for (int i = 0; i < 2; i++)
		free(c->d[i].buf);
	memset(c, 0, sizeof(*c));
	c->used = true;
	parse_endpoint(tok[2], &c->ep[0]);
	parse_endpoint(tok[3], &c->ep[1]);
	if (c->ep[0].family != c->ep[1].family)
		die("mixed address families%s", "");
	c->d[0].isn = (uint32_t)opt_num(tok, n, 4, "isn_c", 1000000 + id * 7919,
				       0xffffffffu);
	c->d[1].isn = (uint32_t)opt_num(tok, n, 4, "isn_s", 5000000 + id * 104729,
				       0xffffffffu);
	c->ip_id = (uint16_t)(id * 1000 + 1);
}

static void cmd_handshake(char **tok, int n)
{
	struct gconn *c;

	if (n < 2)
		die("usage: handshake ID%s", "");
	c = get_conn(tok[1]);
	emit_tcp(c, 0, 0x02, c->d[0].isn, NULL, 0);
	emit_tcp(c, 1, 0x12, c->d[1].isn, NULL, 0);
	emit_tcp(c, 0, 0x10, c->d[0].isn + 1, NULL, 0);
}

static uint8_t parse_flags(const char *s)
{
	uint8_t f = 0;

	if (!strcmp(s, "none"))
		return 0;
	for (; *s; s++) {
		const char *k = strchr("MCRS", *s);

		if (!k)
			die("flags are letters of MCRS, not '%s'", s);
		f |= (uint8_t)(0x80 >> (k - "MCRS"));
	}
	return f;
}

static uint16_t parse_rtr(const char *s, uint16_t *ord_bits)
{
	uint16_t ird_bits = 0;

	*ord_bits = 0;
	if (strstr(s, "send"))
		ird_bits |= 0x4000;
	if (strstr(s, "write"))
		*ord_bits |= 0x8000;
	if (strstr(s, "read"))
		*ord_bits |= 0x4000;
	return ird_bits;
}

/* the RFC 6581 IRD/ORD words, control bits included */
static void enh_words(char **tok, int n, uint8_t *w)
{
	const char *rtr = opt(tok, n, 4, "rtr");
	uint16_t ordb, irdb = parse_rtr(rtr ? rtr : "", &ordb);
	uint16_t ird = (uint16_t)opt_num(tok, n, 4, "ird", 16, 0x3fff);
	uint16_t ord = (uint16_t)opt_num(tok, n, 4, "ord", 16, 0x3fff);

	if (opt_num(tok, n, 4, "p2p", 0, 1))
		ird |= 0x8000;
	put16(w, ird | irdb);
	put16(w + 2, ord | ordb);
}

static void cmd_mpa(char **tok, int n)
{
	static const char key_req[] = "MPA ID Req Frame";
	static const char key_rep[] = "MPA ID Rep Frame";
	const char *fl = opt(tok, n, 4, "flags");
	struct gconn *c;
	struct gdir *d;
	uint8_t hdr[4], enh[4];
	unsigned long pd;
	bool has_enh;
	uint8_t flags;

	if (n < 4 || (strcmp(tok[3], "req") && strcmp(tok[3], "rep")))
		die("usage: mpa ID DIR req|rep [options]%s", "");
	c = get_conn(tok[1]);
	d = &c->d[get_dir(tok[2])];
	flags = fl ? parse_flags(fl) : 0;
	has_enh = opt(tok, n, 4, "ird") || opt(tok, n, 4, "ord") ||
		  opt(tok, n, 4, "p2p") || opt(tok, n, 4, "rtr");
	pd = opt_num(tok, n, 4, "pd", 0, 65535);
	if (has_enh) {
		flags |= 0x10;
		if (pd < 4)
			pd = 4;
		enh_words(tok, n, enh);
	}
	if (flags & 0x40)
		c->crc = true;
	dir_append(d, (const uint8_t *)(tok[3][2] == 'q' ? key_req : key_rep),
		   16);
	hdr[0] = flags;
	hdr[1] = (uint8_t)opt_num(tok, n, 4, "rev", 1, 255);
	put16(hdr + 2, (uint16_t)pd);
	dir_append(d, hdr, 4);
	for (unsigned long i = 0; i < pd; i++)
		dir_put(d, has_enh && i < 4 ? enh[i] : (uint8_t)(0xa0 + i));
}

static int parse_op(const char *s)
{
	for (int i = 0; i < 8; i++)
		if (!strcmp(s, op_names[i]))
			return i;
	return (int)parse_num(s, 15);
}

/* DDP/RDMAP header and RDMAP body for opcode op; returns octets written */
static size_t fpdu_headers(uint8_t *p, int op, bool tagged, char **tok, int n)
{
	size_t at;

	p[0] = (uint8_t)((tagged ? 0x80 : 0) |
			 (opt_num(tok, n, 4, "last", 1, 1) ? 0x40 : 0) |
			 opt_num(tok, n, 4, "dv", 1, 3));
	p[1] = (uint8_t)(opt_num(tok, n, 4, "rv", 1, 3) << 6 | (unsigned)op);
	if (tagged) {
		put32(p + 2, (uint32_t)opt_num(tok, n, 4, "stag", 0x1234, 0xffffffffu));
		put64(p + 6, opt_num(tok, n, 4, "to", 0x1000, ~0ul));
		return 14;
	}
	put32(p + 2, (uint32_t)opt_num(tok, n, 4, "stag", 0, 0xffffffffu));
	put32(p + 6, (uint32_t)opt_num(tok, n, 4, "qn",
				       op == 1 ? 1 : op == 7 ? 2 : 0, 0xffffffffu));
	put32(p + 10, (uint32_t)opt_num(tok, n, 4, "msn", 1, 0xffffffffu));
	put32(p + 14, (uint32_t)opt_num(tok, n, 4, "mo", 0, 0xffffffffu));
	at = 18;
	if (op == 1) { /* read request body */
		put32(p + at, 0x5150);
		put64(p + at + 4, 0x2000);
		put32(p + at + 12,
		      (uint32_t)opt_num(tok, n, 4, "rsize", 0, 0xffffffffu));
		put32(p + at + 16, 0x6160);
		put64(p + at + 20, 0x3000);
		at += 28;
	} else if (op == 7) { /* terminate header: RDMAP layer, ecode 0x01 */
		put32(p + at, 0x00010000);
		at += 4;
	}
	return at;
}

static void cmd_fpdu(char **tok, int n)
{
	static uint8_t f[MAX_PKT];
	struct gconn *c;
	struct gdir *d;
	int op;
	bool tagged, crc;
	size_t len, at, ulpdu;

	if (n < 4)
		die("usage: fpdu ID DIR OPCODE [options]%s", "");
	c = get_conn(tok[1]);
	d = &c->d[get_dir(tok[2])];
	op = parse_op(tok[3]);
	tagged = opt_num(tok, n, 4, "tagged", op == 0 || op == 2, 1);
	crc = opt_num(tok, n, 4, "crc", c->crc, 1);
	len = opt_num(tok, n, 4, "len", 0, 65000);
	at = 2 + fpdu_headers(f + 2, op, tagged, tok, n);
	for (size_t i = 0; i < len; i++)
		f[at++] = (uint8_t)i;
	ulpdu = opt_num(tok, n, 4, "ulpdu", at - 2, 65535);
	put16(f, (uint16_t)ulpdu);
	while (at % 4)
		f[at++] = 0;
	if (crc) {
		uint32_t v = crc32c(f, at);

		/* least significant octet first, as Linux's crc32c emits it */
		for (int i = 0; i < 4; i++)
			f[at++] = (uint8_t)(v >> (8 * i));
	}
	d->fpdu_pending = true;
	dir_append(d, f, at);
}

static void cmd_text(char **tok, int n)
{
	struct gdir *d;

	if (n < 4)
		die("usage: text ID DIR WORDS...%s", "");
	d = &get_conn(tok[1])->d[get_dir(tok[2])];
	for (int i = 3; i < n; i++) {
		dir_append(d, (const uint8_t *)tok[i], strlen(tok[i]));
		dir_raw(d, i + 1 < n ? ' ' : '\n');
	}
}

static void cmd_push(char **tok, int n)
{
	struct gconn *c;
	int dir;
	size_t left;

	if (n < 3)
		die("usage: push ID DIR [N]%s", "");
	c = get_conn(tok[1]);
	dir = get_dir(tok[2]);
	left = c->d[dir].len - c->d[dir].sent;
	if (n > 3)
		left = parse_num(tok[3], left);
	while (left) {
		size_t chunk = left < g.mss ? left : g.mss;

		send_range(c, dir, c->d[dir].sent, chunk);
		left -= chunk;
	}
}

static void cmd_seg(char **tok, int n)
{
	struct gconn *c;
	int dir;

	if (n < 5)
		die("usage: seg ID DIR OFF LEN%s", "");
	c = get_conn(tok[1]);
	dir = get_dir(tok[2]);
	send_range(c, dir, parse_num(tok[3], 1ul << 30),
		   parse_num(tok[4], 65000));
}

static void cmd_poke(char **tok, int n)
{
	struct gdir *d;
	size_t off;

	if (n < 5)
		die("usage: poke ID DIR OFF VALUE%s", "");
	d = &get_conn(tok[1])->d[get_dir(tok[2])];
	off = parse_num(tok[3], 1ul << 30);
	if (off >= d->len)
		die("poke beyond the stream%s", "");
	d->buf[off] = (uint8_t)parse_num(tok[4], 255);
}

static void cmd_ack(char **tok, int n)
{
	struct gconn *c;
	int dir;

	if (n < 3)
		die("usage: ack ID DIR%s", "");
	c = get_conn(tok[1]);
	dir = get_dir(tok[2]);
	emit_tcp(c, dir, 0x10, c->d[dir].isn + 1 + (uint32_t)c->d[dir].high,
		 NULL, 0);
}

static void cmd_markers(char **tok, int n)
{
	struct gdir *d;

	if (n < 3)
		die("usage: markers ID DIR%s", "");
	d = &get_conn(tok[1])->d[get_dir(tok[2])];
	d->markers = true;
	d->mark_base = d->len;
}

static void cmd_format(char **tok, int n)
{
	if (g.header_done)
		die("format must come before any packet%s", "");
	if (n != 3 || (strcmp(tok[1], "us") && strcmp(tok[1], "ns")) ||
	    (strcmp(tok[2], "le") && strcmp(tok[2], "be")))
		die("usage: format us|ns le|be%s", "");
	g.nsec = !strcmp(tok[1], "ns");
	g.big = !strcmp(tok[2], "be");
}

static void cmd_link(char **tok, int n)
{
	if (g.header_done)
		die("link must come before any packet%s", "");
	if (n < 2)
		die("usage: link NAME [vlan=N]%s", "");
	for (size_t i = 0; i < sizeof(link_names) / sizeof(link_names[0]); i++) {
		if (!strcmp(tok[1], link_names[i])) {
			g.link = (int)i;
			g.linktype = link_types[i];
			g.vlan = opt(tok, n, 2, "vlan") ?
				 (int)opt_num(tok, n, 2, "vlan", 0, 4095) : -1;
			g.pad = opt_num(tok, n, 2, "pad", 0, 1);
			return;
		}
	}
	die("unknown link '%s'", tok[1]);
}

static void run_line(char **tok, int n)
{
	const char *c = tok[0];

	if (!strcmp(c, "format"))
		cmd_format(tok, n);
	else if (!strcmp(c, "link"))
		cmd_link(tok, n);
	else if (!strcmp(c, "snaplen") && n == 2)
		g.snaplen = (uint32_t)parse_num(tok[1], 0x7fffffff);
	else if (!strcmp(c, "mss") && n == 2)
		g.mss = parse_num(tok[1], 65000);
	else if (!strcmp(c, "conn"))
		cmd_conn(tok, n);
	else if (!strcmp(c, "handshake"))
		cmd_handshake(tok, n);
	else if (!strcmp(c, "mpa"))
		cmd_mpa(tok, n);
	else if (!strcmp(c, "markers"))
		cmd_markers(tok, n);
	else if (!strcmp(c, "fpdu"))
		cmd_fpdu(tok, n);
	else if (!strcmp(c, "text"))
		cmd_text(tok, n);
	else if (!strcmp(c, "push"))
		cmd_push(tok, n);
	else if (!strcmp(c, "seg"))
		cmd_seg(tok, n);
	else if (!strcmp(c, "poke"))
		cmd_poke(tok, n);
	else if (!strcmp(c, "ack"))
		cmd_ack(tok, n);
	else if (!strcmp(c, "noise"))
		emit_noise();
	else
		die("unknown directive '%s'", c);
	if (g.mss == 0)
		die("mss must be positive%s", "");
}

int main(int argc, char **argv)
{
	char line[1024];

	if (argc != 2) {
		fprintf(stderr, "usage: " PROG " OUT.pcap < SCRIPT\n");
		return 2;
	}
	g.out = fopen(argv[1], "wb");
	if (!g.out) {
		fprintf(stderr, PROG ": %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	g.linktype = 1;
	g.vlan = -1;
	g.snaplen = 262144;
	g.mss = 1448;
	g.t_us = 1700000000ull * 1000000;
	while (fgets(line, sizeof(line), stdin)) {
		char *tok[MAX_TOKENS];
		int n = 0;
		char *hash = strchr(line, '#');

		g.line++;
		if (hash)
			*hash = '\0';
		for (char *t = strtok(line, " \t\r\n"); t && n < MAX_TOKENS;
		     t = strtok(NULL, " \t\r\n"))
			tok[n++] = t;
		if (n)
			run_line(tok, n);
	}
	write_file_header();
	for (int i = 0; i < MAX_CONNS; i++)
		for (int d = 0; d < 2; d++)
			free(g.conns[i].d[d].buf);
	if (fclose(g.out)) {
		fprintf(stderr, PROG ": %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	return 0;
}
