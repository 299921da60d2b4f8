/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "pdata.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define IB_REQ_AREA 56
#define IB_REP_AREA 196
/* What stock dtest puts in its connect request. */
#define DTEST_PDATA_LEN 48

/*
 * Independent reading of the pdata.h layout, so that the tests do not share
 * the codec's mistakes.  `t` is the 8-byte trailer, `ext` the number of
 * extension words right before it.
 */
static uint16_t spec_check(const uint8_t *t, size_t ext)
{
	const uint8_t *p = t - 4 * ext;
	uint32_t sum = 0;

	for (; p < t + 8; p += 2) {
		if (p != t + 6)
			sum += (uint32_t)p[0] << 8 | p[1];
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void spec_fix_check(uint8_t *t, size_t ext)
{
	uint16_t c = spec_check(t, ext);

	t[6] = (uint8_t)(c >> 8);
	t[7] = (uint8_t)c;
}

/* Writes trailer t from raw field values, checksummed over `ext` words before it. */
static void spec_trailer(uint8_t *t, uint16_t magic, uint8_t version, uint8_t flags,
			 uint8_t rtr, size_t ext, uint8_t consumer_len)
{
	t[0] = (uint8_t)(magic >> 8);
	t[1] = (uint8_t)magic;
	t[2] = (uint8_t)(version << 4 | flags);
	t[3] = (uint8_t)(ext << 2 | rtr);
	t[4] = consumer_len;
	t[5] = 0;
	spec_fix_check(t, ext);
}

static void spec_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Decodes from a heap copy of exactly `len` bytes so that ASan sees any overread. */
static int decode_exact(const void *buf, size_t len, struct ofx_pdata_hdr *hdr)
{
	unsigned char *copy = malloc(len ? len : 1);
	int ret;

	CU_ASSERT_FATAL(copy != NULL);
	if (len)
		memcpy(copy, buf, len);
	ret = ofx_pdata_decode(copy, len, hdr);
	free(copy);
	return ret;
}

/* Never has 0x4f next to 0x58: a step of 7 cannot make the magic. */
static void fill_pattern(unsigned char *p, size_t len, unsigned char seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static const struct ofx_pdata_hdr p2p_hdr = {
	.flags = OFX_PDATA_F_P2P,
	.rtr = 2,
};

/* an XRC answer: the only header that carries the SRQ number */
static const struct ofx_pdata_hdr xrc_hdr = {
	.flags = OFX_PDATA_F_P2P | OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY,
	.rtr = 1,
	.xrc_srqn = 0x00abcdefu,
};

static void check_round_trip(const struct ofx_pdata_hdr *in, size_t consumer_len,
			     size_t area_len)
{
	unsigned char consumer[256], out[512];
	struct ofx_pdata_hdr hdr;
	size_t overhead = ofx_pdata_hdr_len(in->flags);
	size_t expect = area_len ? area_len : consumer_len + overhead;
	int n;

	fill_pattern(consumer, sizeof(consumer), (unsigned char)consumer_len);
	memset(out, 0xee, sizeof(out));
	n = ofx_pdata_encode(in, consumer, consumer_len, area_len, out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(n, (int)expect);
	/* consumer bytes first, then zero padding up to the extension words */
	CU_ASSERT_EQUAL(memcmp(out, consumer, consumer_len), 0);
	for (size_t i = consumer_len; i < expect - overhead; i++)
		CU_ASSERT_EQUAL(out[i], 0);
	/* nothing written past the returned length */
	CU_ASSERT_EQUAL(out[expect], 0xee);

	memset(&hdr, 0, sizeof(hdr));
	CU_ASSERT_EQUAL(decode_exact(out, (size_t)n, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.version, OFX_PDATA_VERSION);
	CU_ASSERT_EQUAL(hdr.flags, in->flags);
	CU_ASSERT_EQUAL(hdr.rtr, in->rtr);
	CU_ASSERT_EQUAL(hdr.consumer_len, consumer_len);
	/* only an XRC answer carries the SRQ number (pdata.h) */
	CU_ASSERT_EQUAL(hdr.xrc_srqn, (in->flags & OFX_PDATA_F_XRC) &&
					      (in->flags & OFX_PDATA_F_REPLY) ? in->xrc_srqn : 0);
	CU_ASSERT_EQUAL(hdr.csp_port, in->flags & OFX_PDATA_F_CSP ? in->csp_port : 0);
}

static void test_csp_port_round_trip(void)
{
	struct ofx_pdata_hdr in = { .flags = OFX_PDATA_F_CSP | OFX_PDATA_F_P2P,
				    .csp_port = 50123 };
	struct ofx_pdata_hdr both = { .flags = OFX_PDATA_F_CSP | OFX_PDATA_F_XRC |
						OFX_PDATA_F_REPLY,
				      .xrc_srqn = 0x123456, .csp_port = 7 };
	unsigned char out[64];
	struct ofx_pdata_hdr hdr;

	check_round_trip(&in, 40, 56);
	check_round_trip(&both, 10, 0);
	/* with both, the SRQ number is word 0 and the port word 1 */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&both, NULL, 0, 0, out, sizeof(out)), 16);
	CU_ASSERT_EQUAL(out[7], 7);
	CU_ASSERT_EQUAL(out[1], 0x12);
	/* a CSP flag whose word is missing is malformed: clear the word count */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&in, NULL, 0, 0, out, sizeof(out)), 12);
	CU_ASSERT_EQUAL(ofx_pdata_decode(out, 12, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.csp_port, 50123);
}

static void test_hdr_len_matches_flags(void)
{
	CU_ASSERT_EQUAL(OFX_PDATA_HDR_LEN, 8);
	CU_ASSERT_EQUAL(OFX_PDATA_XRC_HDR_LEN, 12);
	CU_ASSERT_EQUAL(ofx_pdata_hdr_len(0), OFX_PDATA_HDR_LEN);
	CU_ASSERT_EQUAL(ofx_pdata_hdr_len(OFX_PDATA_F_P2P | OFX_PDATA_F_REPLY),
			OFX_PDATA_HDR_LEN);
	/* an XRC offer is the base trailer; only the answer names an SRQ */
	CU_ASSERT_EQUAL(ofx_pdata_hdr_len(OFX_PDATA_F_XRC), OFX_PDATA_HDR_LEN);
	CU_ASSERT_EQUAL(ofx_pdata_hdr_len(OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY),
			OFX_PDATA_XRC_HDR_LEN);
	/* the CSP port takes a word of its own, after the SRQ number */
	CU_ASSERT_EQUAL(ofx_pdata_hdr_len(OFX_PDATA_F_P2P | OFX_PDATA_F_CSP), 12);
	CU_ASSERT_EQUAL(ofx_pdata_hdr_len(0x0f), 16);
}

static void test_dtest_request_fills_ib_req_area_exactly(void)
{
	unsigned char consumer[DTEST_PDATA_LEN], out[IB_REQ_AREA + 1];
	struct ofx_pdata_hdr hdr;

	fill_pattern(consumer, sizeof(consumer), 1);
	out[IB_REQ_AREA] = 0xee;
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&p2p_hdr, consumer, sizeof(consumer), IB_REQ_AREA,
					       out, sizeof(out)), IB_REQ_AREA);
	/* no padding: the trailer starts right after the consumer's 48 bytes */
	CU_ASSERT_EQUAL(memcmp(out, consumer, sizeof(consumer)), 0);
	CU_ASSERT_EQUAL(out[DTEST_PDATA_LEN], 0x4f);
	CU_ASSERT_EQUAL(out[DTEST_PDATA_LEN + 1], 0x58);
	CU_ASSERT_EQUAL(out[IB_REQ_AREA], 0xee);
	CU_ASSERT_EQUAL(decode_exact(out, IB_REQ_AREA, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, DTEST_PDATA_LEN);
	/* one more byte does not fit */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, out, DTEST_PDATA_LEN + 1, IB_REQ_AREA, out,
					 sizeof(out)), -EMSGSIZE);
}

static void test_round_trip_padded_to_ib_areas(void)
{
	size_t len;

	for (len = 0; len <= IB_REQ_AREA - OFX_PDATA_HDR_LEN; len++)
		check_round_trip(&p2p_hdr, len, IB_REQ_AREA);
	for (len = 0; len <= IB_REP_AREA - OFX_PDATA_HDR_LEN; len++)
		check_round_trip(&p2p_hdr, len, IB_REP_AREA);
}

static void test_round_trip_with_iwarp_exact_length(void)
{
	size_t len;

	for (len = 0; len <= OFX_PDATA_CONSUMER_MAX; len++)
		check_round_trip(&p2p_hdr, len, 0);
}

static void test_round_trip_with_xrc_extension(void)
{
	size_t len;

	for (len = 0; len <= IB_REQ_AREA - OFX_PDATA_XRC_HDR_LEN; len++)
		check_round_trip(&xrc_hdr, len, IB_REQ_AREA);
	for (len = 0; len <= IB_REP_AREA - OFX_PDATA_XRC_HDR_LEN; len += 13)
		check_round_trip(&xrc_hdr, len, IB_REP_AREA);
	for (len = 0; len <= OFX_PDATA_CONSUMER_MAX; len++)
		check_round_trip(&xrc_hdr, len, 0);
}

static void test_every_flag_and_rtr_round_trips(void)
{
	struct ofx_pdata_hdr hdr = { .xrc_srqn = 0xfedcba98u };

	for (unsigned int flags = 0; flags <= 0x0f; flags++) {
		for (unsigned int rtr = 0; rtr <= 2; rtr++) {
			hdr.flags = (uint8_t)flags;
			hdr.rtr = (uint8_t)rtr;
			check_round_trip(&hdr, 5, IB_REQ_AREA);
			check_round_trip(&hdr, 5, 0);
		}
	}
}

static void test_trailer_is_last_8_bytes_in_network_order(void)
{
	unsigned char out[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_REPLY | OFX_PDATA_F_P2P, .rtr = 1 };
	const unsigned char *t = out + IB_REQ_AREA - 8;

	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&hdr, "abc", 3, IB_REQ_AREA, out, sizeof(out)),
			      IB_REQ_AREA);
	CU_ASSERT_EQUAL(memcmp(out, "abc", 3), 0);
	CU_ASSERT_EQUAL(memcmp(t, "OX", 2), 0);
	CU_ASSERT_EQUAL(t[2], OFX_PDATA_VERSION << 4 | OFX_PDATA_F_REPLY | OFX_PDATA_F_P2P);
	CU_ASSERT_EQUAL(t[3], 1);	/* no extension words, rtr write */
	CU_ASSERT_EQUAL(t[4], 3);
	CU_ASSERT_EQUAL(t[5], 0);
	CU_ASSERT_EQUAL((t[6] << 8 | t[7]), spec_check(t, 0));
}

/*
 * Whole messages as bytes, check included, as every build since version 1
 * sends them: a rewrite of the codec must not change one bit on the wire.
 */
static void test_wire_bytes_are_fixed(void)
{
	static const uint8_t all_flags[] = {
		'h', 'i', 0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0xbe, 0xef,
		0x4f, 0x58, 0x1f, 0x0a, 0x02, 0x00, 0x02, 0x13,
	};
	static const uint8_t p2p_send[] = { 'x', 0x4f, 0x58, 0x11, 0x00, 0x01, 0x00, 0x9e, 0xa7 };
	struct ofx_pdata_hdr all = { .flags = 0x0f, .rtr = 2, .xrc_srqn = 0xabcdef,
				     .csp_port = 0xbeef };
	struct ofx_pdata_hdr p2p = { .flags = OFX_PDATA_F_P2P, .rtr = 0 };
	struct ofx_pdata_hdr hdr;
	uint8_t out[32];

	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&all, "hi", 2, 0, out, sizeof(out)),
			      (int)sizeof(all_flags));
	CU_ASSERT_EQUAL(memcmp(out, all_flags, sizeof(all_flags)), 0);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&p2p, "x", 1, 0, out, sizeof(out)),
			      (int)sizeof(p2p_send));
	CU_ASSERT_EQUAL(memcmp(out, p2p_send, sizeof(p2p_send)), 0);

	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(all_flags, sizeof(all_flags), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, 0x0f);
	CU_ASSERT_EQUAL(hdr.rtr, 2);
	CU_ASSERT_EQUAL(hdr.consumer_len, 2);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 0xabcdefu);
	CU_ASSERT_EQUAL(hdr.csp_port, 0xbeef);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_decode(p2p_send, sizeof(p2p_send), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_P2P);
	CU_ASSERT_EQUAL(hdr.rtr, 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 1);
}

static void test_xrc_srqn_is_the_word_before_the_trailer(void)
{
	unsigned char out[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY, .rtr = 0,
				     .xrc_srqn = 0x01020304 };
	const unsigned char *t = out + 3 + 4;

	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&hdr, "abc", 3, 0, out, sizeof(out)), 15);
	CU_ASSERT_EQUAL(memcmp(out, "abc", 3), 0);
	CU_ASSERT_EQUAL(memcmp(out + 3, "\x01\x02\x03\x04", 4), 0);
	CU_ASSERT_EQUAL(memcmp(t, "OX", 2), 0);
	CU_ASSERT_EQUAL(t[2], OFX_PDATA_VERSION << 4 | OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY);
	CU_ASSERT_EQUAL(t[3], 1 << 2);	/* one extension word, rtr send */
	CU_ASSERT_EQUAL(t[4], 3);
	CU_ASSERT_EQUAL(t[5], 0);
	CU_ASSERT_EQUAL((t[6] << 8 | t[7]), spec_check(t, 1));
}

static void test_encode_ignores_version_and_consumer_len_fields(void)
{
	unsigned char out[64];
	struct ofx_pdata_hdr in = { .version = 9, .flags = OFX_PDATA_F_P2P, .rtr = 1,
				    .consumer_len = 77, .xrc_srqn = 5 };
	struct ofx_pdata_hdr hdr;

	/* no XRC flag: the srqn is not sent, and comes back as 0 */
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&in, "ab", 2, 0, out, sizeof(out)),
			      2 + OFX_PDATA_HDR_LEN);
	CU_ASSERT_EQUAL(decode_exact(out, 2 + OFX_PDATA_HDR_LEN, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.version, OFX_PDATA_VERSION);
	CU_ASSERT_EQUAL(hdr.consumer_len, 2);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 0);
}

static void test_encode_accepts_consumer_data_already_in_output(void)
{
	unsigned char buf[IB_REQ_AREA], expect[8];
	struct ofx_pdata_hdr hdr;

	fill_pattern(buf, sizeof(buf), 3);
	memcpy(expect, buf, sizeof(expect));
	CU_ASSERT_EQUAL(ofx_pdata_encode(&xrc_hdr, buf, 8, IB_REQ_AREA, buf, sizeof(buf)),
			IB_REQ_AREA);
	CU_ASSERT_EQUAL(memcmp(buf, expect, sizeof(expect)), 0);
	CU_ASSERT_EQUAL(ofx_pdata_decode(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 8);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, xrc_hdr.xrc_srqn);
}

static void test_plain_consumer_data_has_no_trailer(void)
{
	static const char text[] = "dtest connect request from host a to host b, #1";
	unsigned char stock[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr;

	/* what a stock peer sends: 48 consumer bytes, zero padded by the transport */
	memset(stock, 0, sizeof(stock));
	for (int i = 0; i < DTEST_PDATA_LEN; i++)
		stock[i] = (unsigned char)(i + 1);
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(stock), &hdr), -ENOENT);
	/* the same over iWARP, unpadded */
	CU_ASSERT_EQUAL(decode_exact(stock, DTEST_PDATA_LEN, &hdr), -ENOENT);
	memset(stock, 0, sizeof(stock));
	memcpy(stock, text, sizeof(text));
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(stock), &hdr), -ENOENT);
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(text), &hdr), -ENOENT);
	memset(stock, 0xff, sizeof(stock));
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(stock), &hdr), -ENOENT);
	CU_ASSERT_EQUAL(ofx_pdata_decode(NULL, 0, &hdr), -ENOENT);
}

static void test_all_zero_buffers_have_no_trailer(void)
{
	unsigned char buf[IB_REP_AREA] = { 0 };
	struct ofx_pdata_hdr hdr;

	CU_ASSERT_EQUAL(decode_exact(buf, IB_REQ_AREA, &hdr), -ENOENT);
	CU_ASSERT_EQUAL(decode_exact(buf, IB_REP_AREA, &hdr), -ENOENT);
	CU_ASSERT_EQUAL(decode_exact(buf, OFX_PDATA_HDR_LEN, &hdr), -ENOENT);
	/* with the magic but nothing else, the stored complement is wrong */
	buf[IB_REQ_AREA - 8] = 0x4f;
	buf[IB_REQ_AREA - 7] = 0x58;
	CU_ASSERT_EQUAL(decode_exact(buf, IB_REQ_AREA, &hdr), -EPROTO);
}

static void check_truncations(const struct ofx_pdata_hdr *in, size_t consumer_len,
			      size_t area_len)
{
	unsigned char consumer[64], out[IB_REP_AREA];
	struct ofx_pdata_hdr hdr;
	size_t ext = (ofx_pdata_hdr_len(in->flags) - OFX_PDATA_HDR_LEN) / 4;
	size_t len;
	int n;

	fill_pattern(consumer, sizeof(consumer), 0x31);
	n = ofx_pdata_encode(in, consumer, consumer_len, area_len, out, sizeof(out));
	CU_ASSERT_FATAL(n > 0);
	for (len = 0; len < (size_t)n; len++) {
		int expect;

		/* the trailer is gone from every proper prefix */
		CU_ASSERT_EQUAL(decode_exact(out, len, &hdr), -ENOENT);
		/* a suffix keeps the trailer but not what it describes */
		if (len < OFX_PDATA_HDR_LEN)
			expect = -ENOENT;
		else if (len < OFX_PDATA_HDR_LEN + 4 * ext || !area_len)
			expect = -EPROTO;
		else if (len < consumer_len + OFX_PDATA_HDR_LEN + 4 * ext)
			expect = -EPROTO;
		else
			expect = 0;	/* padding taken for consumer bytes */
		CU_ASSERT_EQUAL(decode_exact(out + n - len, len, &hdr), expect);
	}
	CU_ASSERT_EQUAL(decode_exact(out, (size_t)n, &hdr), 0);
}

static void test_truncated_buffers_are_never_accepted(void)
{
	check_truncations(&p2p_hdr, 10, 0);
	check_truncations(&p2p_hdr, 0, 0);
	check_truncations(&xrc_hdr, 10, 0);
	check_truncations(&xrc_hdr, 0, 0);
	check_truncations(&p2p_hdr, DTEST_PDATA_LEN, IB_REQ_AREA);
	check_truncations(&xrc_hdr, 20, IB_REQ_AREA);
	check_truncations(&p2p_hdr, 40, IB_REP_AREA);
}

static void check_bit_flips(const struct ofx_pdata_hdr *in, size_t consumer_len,
			    size_t area_len)
{
	unsigned char out[IB_REP_AREA], bad[IB_REP_AREA];
	struct ofx_pdata_hdr hdr;
	size_t covered = ofx_pdata_hdr_len(in->flags);
	int n, byte, bit;

	n = ofx_pdata_encode(in, "payload", consumer_len, area_len, out, sizeof(out));
	CU_ASSERT_FATAL(n > 0);
	for (byte = n - (int)covered; byte < n; byte++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(bad, out, (size_t)n);
			bad[byte] ^= (unsigned char)(1 << bit);
			/* a broken magic is just not ours; anything else fails the check */
			CU_ASSERT_EQUAL(decode_exact(bad, (size_t)n, &hdr),
					byte >= n - 8 && byte < n - 6 ? -ENOENT : -EPROTO);
		}
	}
}

static void test_bad_checksum_is_a_protocol_error(void)
{
	check_bit_flips(&p2p_hdr, 1, IB_REQ_AREA);
	check_bit_flips(&p2p_hdr, 7, 0);
	check_bit_flips(&xrc_hdr, 1, IB_REQ_AREA);
	check_bit_flips(&xrc_hdr, 7, 0);
}

static void test_wrong_magic_means_no_trailer(void)
{
	static const uint16_t magics[] = { OFX_PDATA_MAGIC ^ 1, 0x584f, 0, 0xffff };
	unsigned char buf[IB_REQ_AREA] = { 0 };
	struct ofx_pdata_hdr hdr;
	size_t i;

	for (i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
		spec_trailer(buf + IB_REQ_AREA - 8, magics[i], OFX_PDATA_VERSION,
			     OFX_PDATA_F_P2P, 0, 0, 0);
		CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -ENOENT);
	}
	spec_trailer(buf + IB_REQ_AREA - 8, OFX_PDATA_MAGIC, OFX_PDATA_VERSION,
		     OFX_PDATA_F_P2P, 0, 0, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
}

static void test_unknown_version_is_not_supported(void)
{
	static const uint8_t versions[] = { 0, OFX_PDATA_VERSION + 1, 0x0f };
	unsigned char buf[IB_REQ_AREA] = { 0 };
	uint8_t *t = buf + IB_REQ_AREA - 8;
	struct ofx_pdata_hdr hdr;
	size_t i;

	for (i = 0; i < sizeof(versions); i++) {
		spec_trailer(t, OFX_PDATA_MAGIC, versions[i], 0, 0, 0, 0);
		CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTONOSUPPORT);
		/* the checksum is verified before the version is looked at */
		t[7] ^= 1;
		CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	}
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 0, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
}

static void test_rtr_3_is_rejected(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	uint8_t *t = buf + IB_REQ_AREA - 8;
	struct ofx_pdata_hdr hdr;
	uint8_t rtr;

	for (rtr = 0; rtr <= 2; rtr++) {
		spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_P2P, rtr, 0, 0);
		CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
		CU_ASSERT_EQUAL(hdr.rtr, rtr);
	}
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_P2P, 3, 0, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
}

static void test_consumer_len_beyond_buffer_is_rejected(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	uint8_t *t = buf + IB_REQ_AREA - 8;
	struct ofx_pdata_hdr hdr;

	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 0, IB_REQ_AREA - 8);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, IB_REQ_AREA - 8);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 0, IB_REQ_AREA - 7);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 0, 0xff);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	/* consumer data may not overlap extension words either */
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 2, IB_REQ_AREA - 16);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 2, IB_REQ_AREA - 15);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
}

static void test_extension_words_beyond_buffer_are_rejected(void)
{
	unsigned char big[64 + 4 * 63] = { 0 };
	uint8_t *t = big + sizeof(big) - 8;
	struct ofx_pdata_hdr hdr;

	/*
	 * The checksum is right over the bytes the words would occupy just
	 * outside the buffer: only the length check can refuse it.
	 */
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 12, 0);
	CU_ASSERT_EQUAL(decode_exact(t - 48, 56, &hdr), 0);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 13, 0);
	CU_ASSERT_EQUAL(decode_exact(t - 52, 60, &hdr), 0);
	CU_ASSERT_EQUAL(decode_exact(t - 48, 56, &hdr), -EPROTO);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 63, 0);
	CU_ASSERT_EQUAL(decode_exact(t - 4 * 63, 8 + 4 * 63, &hdr), 0);
	CU_ASSERT_EQUAL(decode_exact(t - 48, 56, &hdr), -EPROTO);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 0, 0, 1, 0);
	CU_ASSERT_EQUAL(decode_exact(t, 8, &hdr), -EPROTO);
}

static void test_xrc_without_its_word_is_rejected(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	uint8_t *t = buf + IB_REQ_AREA - 8;
	struct ofx_pdata_hdr hdr;

	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY,
		     0, 0, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY,
		     0, 1, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
}

/*
 * An XRC offer is the base trailer alone (the active side's SRQ number goes
 * in its CONFIRM): 48 consumer bytes, what dtest and dtestcm send, fit the
 * 56-byte REQ with it.  An offer of an older build, with the word, still
 * decodes: the word is skipped as unknown.
 */
static void test_xrc_offer_has_no_word_and_leaves_48_bytes(void)
{
	struct ofx_pdata_hdr offer = { .flags = OFX_PDATA_F_XRC, .xrc_srqn = 0x123456 };
	unsigned char consumer[DTEST_PDATA_LEN + 1], out[IB_REQ_AREA];
	uint8_t *t = out + IB_REQ_AREA - 8;
	struct ofx_pdata_hdr hdr;

	fill_pattern(consumer, sizeof(consumer), 7);
	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&offer, consumer, DTEST_PDATA_LEN, IB_REQ_AREA,
					       out, sizeof(out)),
			      IB_REQ_AREA);
	CU_ASSERT_EQUAL(memcmp(out, consumer, DTEST_PDATA_LEN), 0);
	CU_ASSERT_EQUAL(t[3] >> 2, 0);	/* no extension word */
	CU_ASSERT_EQUAL(decode_exact(out, sizeof(out), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_XRC);
	CU_ASSERT_EQUAL(hdr.consumer_len, DTEST_PDATA_LEN);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 0);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&offer, consumer, DTEST_PDATA_LEN + 1, IB_REQ_AREA, out,
					 sizeof(out)),
			-EMSGSIZE);
	/* an older offer: srqn word before the trailer */
	memset(out, 0, sizeof(out));
	spec_put_be32(t - 4, 0x123456);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_XRC, 0, 1, 44);
	CU_ASSERT_EQUAL(decode_exact(out, sizeof(out), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 44);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 0);
}

static void test_unknown_extension_words_are_skipped(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	uint8_t *t;
	struct ofx_pdata_hdr hdr;

	/* iWARP-exact: 8 consumer bytes, srqn, 2 words from a later sender, trailer */
	memcpy(buf, "consumer", 8);
	spec_put_be32(buf + 8, 9);
	memset(buf + 12, 0xa5, 8);
	t = buf + 20;
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY,
		     1, 3, 8);
	CU_ASSERT_EQUAL(decode_exact(buf, 28, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 8);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_XRC | OFX_PDATA_F_REPLY);
	CU_ASSERT_EQUAL(hdr.rtr, 1);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 9);
	/* the checksum covers the words it skips */
	buf[15] ^= 0x40;
	CU_ASSERT_EQUAL(decode_exact(buf, 28, &hdr), -EPROTO);

	/* IB-padded, no XRC: both words are unknown, right before the trailer */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "consumer", 8);
	memset(buf + IB_REQ_AREA - 8 - 8, 0x5a, 8);
	spec_trailer(buf + IB_REQ_AREA - 8, OFX_PDATA_MAGIC, OFX_PDATA_VERSION,
		     OFX_PDATA_F_P2P, 2, 2, 8);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 8);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_P2P);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 0);
}

static void test_reserved_byte_is_ignored(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	uint8_t *t = buf + IB_REQ_AREA - 8;
	struct ofx_pdata_hdr hdr;

	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, OFX_PDATA_F_P2P, 1, 0, 4);
	t[5] = 0x5a;
	spec_fix_check(t, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.rtr, 1);
	CU_ASSERT_EQUAL(hdr.consumer_len, 4);
}

static void test_encode_refuses_what_does_not_fit(void)
{
	unsigned char consumer[300] = { 0 }, out[512];

	/* 45 + 12 > 56: no room for the srqn word */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&xrc_hdr, consumer, 45, IB_REQ_AREA, out,
					 sizeof(out)), -EMSGSIZE);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&xrc_hdr, consumer, 44, IB_REQ_AREA, out,
					 sizeof(out)), IB_REQ_AREA);
	/* an area smaller than the trailer alone */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, NULL, 0, 7, out, sizeof(out)), -EMSGSIZE);
	/* output buffer too small, with and without padding */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, consumer, 10, 0, out, 17), -EMSGSIZE);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, consumer, 10, 0, out, 18), 18);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&xrc_hdr, consumer, 10, 0, out, 21), -EMSGSIZE);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&xrc_hdr, consumer, 10, 0, out, 22), 22);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, consumer, 10, IB_REQ_AREA, out, 55),
			-EMSGSIZE);
	/* consumer_len does not fit the u8 field */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, consumer, OFX_PDATA_CONSUMER_MAX, 0, out,
					 sizeof(out)), OFX_PDATA_CONSUMER_MAX + OFX_PDATA_HDR_LEN);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, consumer, OFX_PDATA_CONSUMER_MAX + 1, 0, out,
					 sizeof(out)), -EMSGSIZE);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, consumer, 65536, 0, out, sizeof(out)),
			-EMSGSIZE);
}

static void test_bad_arguments_are_invalid(void)
{
	unsigned char out[64];
	struct ofx_pdata_hdr hdr = { .flags = 0x77 };
	struct ofx_pdata_hdr bad;

	CU_ASSERT_EQUAL(ofx_pdata_encode(NULL, "a", 1, 0, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, "a", 1, 0, NULL, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, NULL, 1, 0, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, NULL, 0, 0, out, sizeof(out)),
			OFX_PDATA_HDR_LEN);
	/* flags and rtr that the narrow wire fields cannot carry */
	bad = p2p_hdr;
	bad.flags = 0x10;
	CU_ASSERT_EQUAL(ofx_pdata_encode(&bad, "a", 1, 0, out, sizeof(out)), -EINVAL);
	bad = p2p_hdr;
	bad.rtr = 3;
	CU_ASSERT_EQUAL(ofx_pdata_encode(&bad, "a", 1, 0, out, sizeof(out)), -EINVAL);
	bad.rtr = 4;
	CU_ASSERT_EQUAL(ofx_pdata_encode(&bad, "a", 1, 0, out, sizeof(out)), -EINVAL);

	CU_ASSERT_EQUAL(ofx_pdata_encode(&p2p_hdr, NULL, 0, 0, out, sizeof(out)),
			OFX_PDATA_HDR_LEN);
	CU_ASSERT_EQUAL(ofx_pdata_decode(out, OFX_PDATA_HDR_LEN, NULL), -EINVAL);
	/* a failed decode leaves the output alone */
	out[0] = 0;
	CU_ASSERT_EQUAL(ofx_pdata_decode(out, OFX_PDATA_HDR_LEN, &hdr), -ENOENT);
	CU_ASSERT_EQUAL(hdr.flags, 0x77);
	out[0] = 0x4f;
	out[7] ^= 1;
	CU_ASSERT_EQUAL(ofx_pdata_decode(out, OFX_PDATA_HDR_LEN, &hdr), -EPROTO);
	CU_ASSERT_EQUAL(hdr.flags, 0x77);
}

CU_TestInfo ofx_test_pdata[] = {
	{ "csp port travels in its own extension word", test_csp_port_round_trip },
	{ "header length follows the XRC flag", test_hdr_len_matches_flags },
	{ "dtest's 48 bytes and the trailer fill the IB REQ area exactly",
	  test_dtest_request_fills_ib_req_area_exactly },
	{ "round trip padded to the IB REQ and REP areas", test_round_trip_padded_to_ib_areas },
	{ "round trip with iWARP exact length", test_round_trip_with_iwarp_exact_length },
	{ "round trip with the XRC extension word", test_round_trip_with_xrc_extension },
	{ "every flag and rtr combination round trips", test_every_flag_and_rtr_round_trips },
	{ "trailer is the last 8 bytes in network order",
	  test_trailer_is_last_8_bytes_in_network_order },
	{ "wire bytes are fixed, check included", test_wire_bytes_are_fixed },
	{ "XRC srqn is the word before the trailer", test_xrc_srqn_is_the_word_before_the_trailer },
	{ "encode ignores the version and consumer_len fields",
	  test_encode_ignores_version_and_consumer_len_fields },
	{ "encode accepts consumer data already in the output buffer",
	  test_encode_accepts_consumer_data_already_in_output },
	{ "plain consumer data has no trailer", test_plain_consumer_data_has_no_trailer },
	{ "all-zero buffers have no trailer", test_all_zero_buffers_have_no_trailer },
	{ "truncated buffers are never accepted", test_truncated_buffers_are_never_accepted },
	{ "bad checksum is a protocol error", test_bad_checksum_is_a_protocol_error },
	{ "wrong magic means no trailer", test_wrong_magic_means_no_trailer },
	{ "unknown version is not supported", test_unknown_version_is_not_supported },
	{ "rtr 3 is rejected", test_rtr_3_is_rejected },
	{ "consumer_len beyond the buffer is rejected",
	  test_consumer_len_beyond_buffer_is_rejected },
	{ "extension words beyond the buffer are rejected",
	  test_extension_words_beyond_buffer_are_rejected },
	{ "XRC without its extension word is rejected", test_xrc_without_its_word_is_rejected },
	{ "XRC offer has no word and leaves 48 bytes of the REQ",
	  test_xrc_offer_has_no_word_and_leaves_48_bytes },
	{ "unknown extension words are skipped", test_unknown_extension_words_are_skipped },
	{ "reserved byte is ignored", test_reserved_byte_is_ignored },
	{ "encode refuses what does not fit", test_encode_refuses_what_does_not_fit },
	{ "bad arguments are invalid", test_bad_arguments_are_invalid },
	CU_TEST_INFO_NULL,
};
