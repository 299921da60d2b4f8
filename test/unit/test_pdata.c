/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "pdata.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define IB_REQ_AREA 56
#define IB_REP_AREA 196

/* Independent reading of the pdata.h layout: ones' complement sum, check read as 0. */
static uint16_t spec_check(const uint8_t *t)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 16; i += 2) {
		if (i != 10)
			sum += (uint32_t)t[i] << 8 | t[i + 1];
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static void spec_fix_check(uint8_t *t)
{
	uint16_t c = spec_check(t);

	t[10] = (uint8_t)(c >> 8);
	t[11] = (uint8_t)c;
}

/* Writes a trailer at t from raw field values, with a correct checksum. */
static void spec_trailer(uint8_t *t, uint32_t magic, uint8_t version, uint8_t hdr_len,
			 uint16_t consumer_len)
{
	memset(t, 0, 16);
	t[0] = (uint8_t)(magic >> 24);
	t[1] = (uint8_t)(magic >> 16);
	t[2] = (uint8_t)(magic >> 8);
	t[3] = (uint8_t)magic;
	t[4] = version;
	t[5] = hdr_len;
	t[8] = (uint8_t)(consumer_len >> 8);
	t[9] = (uint8_t)consumer_len;
	spec_fix_check(t);
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

static void fill_pattern(unsigned char *p, size_t len, unsigned char seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(seed + i * 7);
}

static const struct ofx_pdata_hdr sample_hdr = {
	.flags = OFX_PDATA_F_P2P | OFX_PDATA_F_XRC,
	.rtr = 2,
	.xrc_srqn = 0x00abcdefu,
};

static void check_round_trip(size_t consumer_len, size_t area_len)
{
	unsigned char consumer[256], out[512];
	struct ofx_pdata_hdr hdr;
	size_t expect = area_len ? area_len : consumer_len + OFX_PDATA_HDR_LEN;
	int n;

	fill_pattern(consumer, sizeof(consumer), (unsigned char)consumer_len);
	memset(out, 0xee, sizeof(out));
	n = ofx_pdata_encode(&sample_hdr, consumer, consumer_len, area_len, out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(n, (int)expect);
	/* consumer bytes first, then zero padding up to the trailer */
	CU_ASSERT_EQUAL(memcmp(out, consumer, consumer_len), 0);
	for (size_t i = consumer_len; i < expect - OFX_PDATA_HDR_LEN; i++)
		CU_ASSERT_EQUAL(out[i], 0);
	/* nothing written past the returned length */
	CU_ASSERT_EQUAL(out[expect], 0xee);

	memset(&hdr, 0, sizeof(hdr));
	CU_ASSERT_EQUAL(decode_exact(out, (size_t)n, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.version, OFX_PDATA_VERSION);
	CU_ASSERT_EQUAL(hdr.flags, sample_hdr.flags);
	CU_ASSERT_EQUAL(hdr.rtr, sample_hdr.rtr);
	CU_ASSERT_EQUAL(hdr.consumer_len, consumer_len);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, sample_hdr.xrc_srqn);
}

static void test_round_trip_ib_padded_to_req_area(void)
{
	size_t len;

	for (len = 0; len <= IB_REQ_AREA - OFX_PDATA_HDR_LEN; len++)
		check_round_trip(len, IB_REQ_AREA);
	check_round_trip(48, IB_REP_AREA);
	check_round_trip(IB_REP_AREA - OFX_PDATA_HDR_LEN, IB_REP_AREA);
}

static void test_round_trip_iwarp_exact_length(void)
{
	size_t len;

	for (len = 0; len <= 200; len += 7)
		check_round_trip(len, 0);
}

static void test_trailer_is_last_16_bytes_in_network_order(void)
{
	unsigned char out[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr = { .flags = OFX_PDATA_F_REPLY, .rtr = 1, .xrc_srqn = 0x01020304 };
	const unsigned char *t = out + IB_REQ_AREA - 16;
	int n;

	n = ofx_pdata_encode(&hdr, "abc", 3, IB_REQ_AREA, out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(n, IB_REQ_AREA);
	CU_ASSERT_EQUAL(memcmp(out, "abc", 3), 0);
	CU_ASSERT_EQUAL(memcmp(t, "OFXK", 4), 0);
	CU_ASSERT_EQUAL(t[4], OFX_PDATA_VERSION);
	CU_ASSERT_EQUAL(t[5], 16);
	CU_ASSERT_EQUAL(t[6], OFX_PDATA_F_REPLY);
	CU_ASSERT_EQUAL(t[7], 1);
	CU_ASSERT_EQUAL(t[8], 0);
	CU_ASSERT_EQUAL(t[9], 3);
	CU_ASSERT_EQUAL(t[12], 1);
	CU_ASSERT_EQUAL(t[13], 2);
	CU_ASSERT_EQUAL(t[14], 3);
	CU_ASSERT_EQUAL(t[15], 4);
	CU_ASSERT_EQUAL((t[10] << 8 | t[11]), spec_check(t));
}

static void test_encode_accepts_overlapping_consumer_buffer(void)
{
	unsigned char buf[IB_REQ_AREA], expect[8];
	struct ofx_pdata_hdr hdr;

	fill_pattern(buf, sizeof(buf), 3);
	memcpy(expect, buf, sizeof(expect));
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, buf, 8, IB_REQ_AREA, buf, sizeof(buf)),
			IB_REQ_AREA);
	CU_ASSERT_EQUAL(memcmp(buf, expect, sizeof(expect)), 0);
	CU_ASSERT_EQUAL(ofx_pdata_decode(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 8);
}

static void test_plain_consumer_data_has_no_trailer(void)
{
	unsigned char stock[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr;

	/* what a stock peer sends: 48 bytes 1..48, zero padded by the transport */
	memset(stock, 0, sizeof(stock));
	for (int i = 0; i < 48; i++)
		stock[i] = (unsigned char)(i + 1);
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(stock), &hdr), -ENOENT);
	memset(stock, 0, sizeof(stock));
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(stock), &hdr), -ENOENT);
	memset(stock, 0xff, sizeof(stock));
	CU_ASSERT_EQUAL(decode_exact(stock, sizeof(stock), &hdr), -ENOENT);
	CU_ASSERT_EQUAL(ofx_pdata_decode(NULL, 0, &hdr), -ENOENT);
}

static void test_truncated_buffers_have_no_trailer(void)
{
	unsigned char out[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr;
	size_t len;
	int n;

	n = ofx_pdata_encode(&sample_hdr, "0123456789", 10, 0, out, sizeof(out));
	CU_ASSERT_EQUAL_FATAL(n, 26);
	for (len = 0; len < OFX_PDATA_HDR_LEN; len++) {
		/* every short prefix and every short suffix of a valid message */
		CU_ASSERT_EQUAL(decode_exact(out, len, &hdr), -ENOENT);
		CU_ASSERT_EQUAL(decode_exact(out + n - len, len, &hdr), -ENOENT);
	}
	/* losing trailing bytes never leaves a valid header behind */
	for (len = OFX_PDATA_HDR_LEN; len < (size_t)n; len++)
		CU_ASSERT_NOT_EQUAL(decode_exact(out, len, &hdr), 0);
}

static void test_bad_checksum_is_a_protocol_error(void)
{
	unsigned char out[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr;
	int byte;

	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&sample_hdr, "x", 1, IB_REQ_AREA, out,
					       sizeof(out)), IB_REQ_AREA);
	/* a flipped bit anywhere in the trailer after the magic is caught */
	for (byte = 4; byte < 16; byte++) {
		unsigned char bad[IB_REQ_AREA];

		memcpy(bad, out, sizeof(bad));
		bad[IB_REQ_AREA - 16 + byte] ^= 0x10;
		CU_ASSERT_EQUAL(decode_exact(bad, sizeof(bad), &hdr), -EPROTO);
	}
}

static void test_wrong_magic_means_no_trailer(void)
{
	unsigned char out[IB_REQ_AREA];
	struct ofx_pdata_hdr hdr;

	CU_ASSERT_EQUAL_FATAL(ofx_pdata_encode(&sample_hdr, NULL, 0, IB_REQ_AREA, out,
					       sizeof(out)), IB_REQ_AREA);
	spec_trailer(out + IB_REQ_AREA - 16, OFX_PDATA_MAGIC ^ 1, OFX_PDATA_VERSION, 16, 0);
	CU_ASSERT_EQUAL(decode_exact(out, sizeof(out), &hdr), -ENOENT);
}

static void test_unknown_version_is_not_supported(void)
{
	static const uint8_t versions[] = { 0, OFX_PDATA_VERSION + 1, 0x11, 0xff };
	unsigned char buf[IB_REQ_AREA] = { 0 };
	struct ofx_pdata_hdr hdr;
	size_t i;

	for (i = 0; i < sizeof(versions); i++) {
		spec_trailer(buf + IB_REQ_AREA - 16, OFX_PDATA_MAGIC, versions[i], 16, 0);
		CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTONOSUPPORT);
	}
	spec_trailer(buf + IB_REQ_AREA - 16, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 16, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
}

static void test_consumer_len_beyond_buffer_is_rejected(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	struct ofx_pdata_hdr hdr;
	uint8_t *t = buf + IB_REQ_AREA - 16;

	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 16, IB_REQ_AREA - 16);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, IB_REQ_AREA - 16);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 16, IB_REQ_AREA - 15);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 16, 0xffff);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	/* consumer data may not overlap extension bytes either */
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 24, IB_REQ_AREA - 23);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
}

static void test_bad_hdr_len_is_rejected(void)
{
	static const uint8_t bad_lens[] = { 0, 1, 15, 17 };
	unsigned char buf[16];
	struct ofx_pdata_hdr hdr;
	size_t i;

	/* the 16-byte buffer holds only the trailer: 17 is already too long */
	for (i = 0; i < sizeof(bad_lens); i++) {
		spec_trailer(buf, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, bad_lens[i], 0);
		CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
	}
	spec_trailer(buf, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 16, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	spec_trailer(buf, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 255, 0);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), -EPROTO);
}

static void test_extension_bytes_before_trailer_are_skipped(void)
{
	unsigned char buf[IB_REQ_AREA] = { 0 };
	struct ofx_pdata_hdr hdr;
	uint8_t *t;

	/* iWARP-exact: 8 consumer bytes, 4 unknown extension bytes, trailer */
	memcpy(buf, "consumer", 8);
	memset(buf + 8, 0xa5, 4);
	t = buf + 12;
	spec_trailer(t, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 20, 8);
	t[6] = OFX_PDATA_F_XRC;
	t[15] = 9;
	spec_fix_check(t);
	CU_ASSERT_EQUAL(decode_exact(buf, 28, &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 8);
	CU_ASSERT_EQUAL(hdr.flags, OFX_PDATA_F_XRC);
	CU_ASSERT_EQUAL(hdr.xrc_srqn, 9);

	/* IB-padded: the extension sits right before the trailer in the 56 bytes */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, "consumer", 8);
	memset(buf + IB_REQ_AREA - 16 - 8, 0x5a, 8);
	spec_trailer(buf + IB_REQ_AREA - 16, OFX_PDATA_MAGIC, OFX_PDATA_VERSION, 24, 8);
	CU_ASSERT_EQUAL(decode_exact(buf, sizeof(buf), &hdr), 0);
	CU_ASSERT_EQUAL(hdr.consumer_len, 8);
}

static void test_encode_refuses_what_does_not_fit(void)
{
	unsigned char consumer[300] = { 0 }, out[512];

	/* 41 + 16 > 56: the IB REQ area is full */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, consumer, 41, IB_REQ_AREA, out,
					 sizeof(out)), -EMSGSIZE);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, consumer, 40, IB_REQ_AREA, out,
					 sizeof(out)), IB_REQ_AREA);
	/* output buffer too small, with and without padding */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, consumer, 10, 0, out, 25), -EMSGSIZE);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, consumer, 10, 0, out, 26), 26);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, consumer, 10, IB_REQ_AREA, out, 55),
			-EMSGSIZE);
	/* consumer_len does not fit the u16 field */
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, consumer, 65536, 0, out, sizeof(out)),
			-EMSGSIZE);
}

static void test_bad_arguments_are_invalid(void)
{
	unsigned char out[64];
	struct ofx_pdata_hdr hdr = { .flags = 0x77 };

	CU_ASSERT_EQUAL(ofx_pdata_encode(NULL, "a", 1, 0, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, "a", 1, 0, NULL, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, NULL, 1, 0, out, sizeof(out)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_pdata_encode(&sample_hdr, NULL, 0, 0, out, sizeof(out)), 16);
	CU_ASSERT_EQUAL(ofx_pdata_decode(out, 16, NULL), -EINVAL);
	/* a failed decode leaves the output alone */
	out[0] = 0;
	CU_ASSERT_EQUAL(ofx_pdata_decode(out, 16, &hdr), -ENOENT);
	CU_ASSERT_EQUAL(hdr.flags, 0x77);
}

CU_TestInfo ofx_test_pdata[] = {
	{ "round trip padded to the IB REQ and REP areas", test_round_trip_ib_padded_to_req_area },
	{ "round trip with iWARP exact length", test_round_trip_iwarp_exact_length },
	{ "trailer is the last 16 bytes in network order",
	  test_trailer_is_last_16_bytes_in_network_order },
	{ "encode accepts consumer data already in the output buffer",
	  test_encode_accepts_overlapping_consumer_buffer },
	{ "plain consumer data has no trailer", test_plain_consumer_data_has_no_trailer },
	{ "buffers shorter than the trailer have none", test_truncated_buffers_have_no_trailer },
	{ "bad checksum is a protocol error", test_bad_checksum_is_a_protocol_error },
	{ "wrong magic means no trailer", test_wrong_magic_means_no_trailer },
	{ "unknown version is not supported", test_unknown_version_is_not_supported },
	{ "consumer_len beyond the buffer is rejected",
	  test_consumer_len_beyond_buffer_is_rejected },
	{ "hdr_len below 16 or beyond the buffer is rejected", test_bad_hdr_len_is_rejected },
	{ "extension bytes before the trailer are skipped",
	  test_extension_bytes_before_trailer_are_skipped },
	{ "encode refuses what does not fit", test_encode_refuses_what_does_not_fit },
	{ "bad arguments are invalid", test_bad_arguments_are_invalid },
	CU_TEST_INFO_NULL,
};
