/* SPDX-License-Identifier: BSD-2-Clause */
#include "tools.h"

#include "datconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHY 512
#define LINE 4096

#define STOCK_IB0 "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\""
/* The fields after the name that every stock-style entry shares. */
#define FIXED " u2.0 nonthreadsafe default "

/* Stock-style entries, comments, a blank line, tabs and a quoted path with a blank. */
static const char sample[] =
	"# dat.conf of the test cluster\n"
	"#\n"
	"# <ia_name> <api_version> <threadsafety> <default> <lib_path> ...\n"
	"ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"\n"
	"ofa-v2-mlx5_0-1u u2.0 nonthreadsafe default libdaploucm.so.2 dapl.2.0 \"mlx5_0 1\" \"\"\n"
	"\n"
	"ofa-v2-cma-roe-eth2\tu2.0  nonthreadsafe default \"/opt/dapl libs/libdaplofa.so.2\" "
	"dapl.2.0 \"eth2 0\" \"\"   # tabs, a blank in the path\n";

#define IB0_LINE "ofx-v2-ib0 u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 \"ib0 0\" \"\""
#define IB0_P2P_LINE \
	"ofx-v2-ib0-p2p u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 \"ib0 0 p2p=on\" \"\""

static struct ofx_datconf_entry e;

static void test_parse_splits_like_libdat2(void)
{
	const char *l = "  ofa-v2-ib0 u2.0\tnonthreadsafe default libdaplofa.so.2 dapl.2.0 "
			"\"ib0 0\" \"\" # trailing comment \"x";

	CU_ASSERT_EQUAL(ofx_datconf_parse_line(l, strlen(l), &e), 8);
	CU_ASSERT_STRING_EQUAL(e.field[0], "ofa-v2-ib0");
	CU_ASSERT_STRING_EQUAL(e.field[2], "nonthreadsafe");
	CU_ASSERT_STRING_EQUAL(e.field[6], "ib0 0");
	CU_ASSERT_STRING_EQUAL(e.field[7], "");
	CU_ASSERT_EQUAL(ofx_datconf_parse_line("", 0, &e), 0);
	CU_ASSERT_EQUAL(ofx_datconf_parse_line("   \t", 4, &e), 0);
	CU_ASSERT_EQUAL(ofx_datconf_parse_line("# ofx-v2-ib0 u2.0", 17, &e), 0);
	/* only `len` bytes count */
	CU_ASSERT_EQUAL(ofx_datconf_parse_line("a b c", 3, &e), 2);
	/* CRLF: the '\r' is white space */
	CU_ASSERT_EQUAL(ofx_datconf_parse_line("a \"b c\"\r", 8, &e), 2);
	CU_ASSERT_STRING_EQUAL(e.field[1], "b c");
}

static void test_parse_quotes_escapes_and_bad_lines(void)
{
	const char *l = "x \"a \\\"quoted\\\" \\\\ word\" y";
	char big[OFX_DATCONF_FIELD_MAX + 8];

	CU_ASSERT_EQUAL(ofx_datconf_parse_line(l, strlen(l), &e), 3);
	CU_ASSERT_STRING_EQUAL(e.field[1], "a \"quoted\" \\ word");
	CU_ASSERT_STRING_EQUAL(e.field[2], "y");
	/* unterminated quote: refused, the complete fields before it are kept */
	l = "ofx-v2-ib0 u2.0 \"ib0 0";
	CU_ASSERT_EQUAL(ofx_datconf_parse_line(l, strlen(l), &e), -EINVAL);
	CU_ASSERT_EQUAL(e.nfields, 2);
	CU_ASSERT_STRING_EQUAL(e.field[0], "ofx-v2-ib0");
	l = "a \"b\\";
	CU_ASSERT_EQUAL(ofx_datconf_parse_line(l, strlen(l), &e), -EINVAL);
	/* a field too long for libdat2 */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CU_ASSERT_EQUAL(ofx_datconf_parse_line(big, strlen(big), &e), -EINVAL);
	/* more than eight fields are counted, not stored */
	l = "1 2 3 4 5 6 7 8 9 10";
	CU_ASSERT_EQUAL(ofx_datconf_parse_line(l, strlen(l), &e), 10);
	CU_ASSERT_STRING_EQUAL(e.field[7], "8");
}

static void test_names_and_variants(void)
{
	enum ofx_datconf_variant v;
	char name[300], dev[300];

	CU_ASSERT_EQUAL(ofx_datconf_name("ib0", OFX_DATCONF_PLAIN, name, sizeof(name)), 0);
	CU_ASSERT_STRING_EQUAL(name, "ofx-v2-ib0");
	CU_ASSERT_EQUAL(ofx_datconf_name("eth2", OFX_DATCONF_P2P, name, sizeof(name)), 0);
	CU_ASSERT_STRING_EQUAL(name, "ofx-v2-eth2-p2p");
	CU_ASSERT_EQUAL(ofx_datconf_name("ib0", OFX_DATCONF_XRC, name, sizeof(name)), 0);
	CU_ASSERT_STRING_EQUAL(name, "ofx-v2-ib0-xrc");
	CU_ASSERT_EQUAL(ofx_datconf_name("ib0", OFX_DATCONF_XRC, name, 10), -ENAMETOOLONG);
	/* libdat2 keeps IA names below 256 bytes */
	memset(dev, 'd', 250);
	dev[250] = '\0';
	CU_ASSERT_EQUAL(ofx_datconf_name(dev, OFX_DATCONF_PLAIN, name, sizeof(name)),
			-ENAMETOOLONG);

	CU_ASSERT_EQUAL(ofx_datconf_variant_parse("p2p", &v), 0);
	CU_ASSERT_EQUAL(v, OFX_DATCONF_P2P);
	CU_ASSERT_EQUAL(ofx_datconf_variant_parse("xrc", &v), 0);
	CU_ASSERT_EQUAL(v, OFX_DATCONF_XRC);
	CU_ASSERT_EQUAL(ofx_datconf_variant_parse("plain", &v), 0);
	CU_ASSERT_EQUAL(v, OFX_DATCONF_PLAIN);
	CU_ASSERT_EQUAL(ofx_datconf_variant_parse("P2P", &v), -EINVAL);
	CU_ASSERT_STRING_EQUAL(ofx_datconf_variant_str(OFX_DATCONF_XRC), "xrc");
}

static void test_format_writes_eight_fields_and_round_trips(void)
{
	char line[LINE];

	CU_ASSERT_EQUAL(ofx_datconf_format("ofx-v2-ib0", "libdaplofx.so.2", "ib0 0", line,
					   sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, IB0_LINE);
	CU_ASSERT_EQUAL(ofx_datconf_parse_line(line, strlen(line), &e), 8);

	/* a library path with a blank is quoted, and reads back unchanged */
	CU_ASSERT_EQUAL(ofx_datconf_format("ofx-v2-ib0", "/opt/my libs/libdaplofx.so.2",
					   "ib0 0 p2p=on", line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "ofx-v2-ib0 u2.0 nonthreadsafe default "
			       "\"/opt/my libs/libdaplofx.so.2\" dapl.2.0 \"ib0 0 p2p=on\" \"\"");
	CU_ASSERT_EQUAL(ofx_datconf_parse_line(line, strlen(line), &e), 8);
	CU_ASSERT_STRING_EQUAL(e.field[4], "/opt/my libs/libdaplofx.so.2");
	CU_ASSERT_STRING_EQUAL(e.field[6], "ib0 0 p2p=on");

	CU_ASSERT_EQUAL(ofx_datconf_format("ofx-v2-ib0", "libdaplofx.so.2", "ib0 0", line, 20),
			-ENAMETOOLONG);
	CU_ASSERT_EQUAL(strlen(line), 19);
}

static void test_ia_params_checked_against_the_config_table(void)
{
	char buf[1024], why[WHY];
	char *ok[] = { "cm_retries=3", "max_inline=128" };
	char *typo[] = { "cm_retrys=3" };
	char *bad_value[] = { "cm_retries=lots" };
	char *out_of_range[] = { "cq_batch=0" };
	char *twice[] = { "tos=1", "tos=2" };
	char *contradiction[] = { "p2p=off" };
	char *repeat[] = { "p2p=yes" };
	char *env_only[] = { "log_level=debug" };
	char *env_name[] = { "DAPL_OFX_TOS=3" };
	char *no_eq[] = { "p2p" };
	char *blank[] = { "xrcd=/tmp/a b" };
	char *quote[] = { "xrcd=/tmp/\"a" };

	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, NULL, 0, buf, sizeof(buf),
					      why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "ib0 0");
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_P2P, ok, 2, buf, sizeof(buf),
					      why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "ib0 0 p2p=on cm_retries=3 max_inline=128");
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("mlx5_0", OFX_DATCONF_XRC, NULL, 0, buf,
					      sizeof(buf), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "mlx5_0 0 xrc=on");
	/* an option that repeats the variant's own is dropped */
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_P2P, repeat, 1, buf,
					      sizeof(buf), why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "ib0 0 p2p=on");

	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, typo, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "did you mean 'cm_retries'"));
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, bad_value, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "cm_retries"));
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "0..100"));
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, out_of_range, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, twice, 2, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "twice"));
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_P2P, contradiction, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "contradicts"));
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, env_only, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "DAPL_OFX_LOG_LEVEL"));
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, env_name, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "'tos'"));
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, no_eq, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, blank, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, quote, 1, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	/* the device is one word libdat2 and the provider both keep whole */
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("", OFX_DATCONF_PLAIN, NULL, 0, buf, sizeof(buf),
					      why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib 0", OFX_DATCONF_PLAIN, NULL, 0, buf,
					      sizeof(buf), why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("-n", OFX_DATCONF_PLAIN, NULL, 0, buf, sizeof(buf),
					      why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_ia_params("ib0", OFX_DATCONF_PLAIN, ok, 2, buf, 12, why,
					      sizeof(why)), -EINVAL);
}

static char *add(const char *text, const char *line, struct ofx_datconf_change *c)
{
	char why[WHY], *out = NULL;

	CU_ASSERT_EQUAL(ofx_datconf_add(text, line, &out, c, why, sizeof(why)), 0);
	return out;
}

static void test_add_appends_and_keeps_every_other_byte(void)
{
	struct ofx_datconf_change c;
	char *out = add(sample, IB0_LINE, &c);

	CU_ASSERT_EQUAL(c.added, 1);
	CU_ASSERT_EQUAL(c.replaced + c.removed + c.unchanged, 0);
	CU_ASSERT_EQUAL(strncmp(out, sample, strlen(sample)), 0);
	CU_ASSERT_STRING_EQUAL(out + strlen(sample), IB0_LINE "\n");
	CU_ASSERT_EQUAL(ofx_datconf_find(out, "ofx-v2-ib0"), 8);
	free(out);

	/* an empty file gets just the line */
	out = add("", IB0_LINE, &c);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n");
	free(out);
}

static void test_add_identical_entry_is_a_no_op(void)
{
	struct ofx_datconf_change c;
	char *once = add(sample, IB0_LINE, NULL);
	char *twice = add(once, IB0_LINE, &c);
	/* same fields, other spacing: still identical for libdat2, left as written */
	const char *spaced = "ofx-v2-ib0\tu2.0 nonthreadsafe   default libdaplofx.so.2 dapl.2.0 "
			     "\"ib0 0\"   \"\"  # mine\n";
	char *out = add(spaced, IB0_LINE, &c);

	CU_ASSERT_EQUAL(c.unchanged, 1);
	CU_ASSERT_STRING_EQUAL(twice, once);
	CU_ASSERT_STRING_EQUAL(out, spaced);
	free(once);
	free(twice);
	free(out);
}

static void test_add_replaces_a_changed_entry_in_place(void)
{
	const char *text = "# head\n"
			   "ofx-v2-ib0 u2.0 nonthreadsafe default /old/libdaplofx.so.2 dapl.2.0 "
			   "\"ib0 0 p2p=off\" \"\"\n"
			   STOCK_IB0 "\n";
	struct ofx_datconf_change c;
	char *out = add(text, IB0_LINE, &c);

	CU_ASSERT_EQUAL(c.replaced, 1);
	CU_ASSERT_EQUAL(c.added + c.removed, 0);
	CU_ASSERT_STRING_EQUAL(out, "# head\n" IB0_LINE "\n"
			       "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "
			       "\"ib0 0\" \"\"\n");
	free(out);

	/* a blank inside the quotes is part of the value: "ib0  0" is not "ib0 0" */
	out = add("ofx-v2-ib0" FIXED "libdaplofx.so.2 dapl.2.0 \"ib0  0\" \"\"\n",
		  IB0_LINE, &c);
	CU_ASSERT_EQUAL(c.replaced, 1);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n");
	free(out);

	/* a CRLF line keeps its "\r"; a broken line of our name is replaced too */
	out = add("x\r\nofx-v2-ib0 u2.0 \"ib0\r\ny\r\n", IB0_LINE, &c);
	CU_ASSERT_EQUAL(c.replaced, 1);
	CU_ASSERT_STRING_EQUAL(out, "x\r\n" IB0_LINE "\r\ny\r\n");
	free(out);
}

static void test_add_collapses_duplicates(void)
{
	const char *text = IB0_LINE "\n"
			   "# between\n"
			   "ofx-v2-ib0" FIXED "other.so dapl.2.0 \"ib0 0\" \"\"\n"
			   IB0_P2P_LINE "\n"
			   "  ofx-v2-ib0 u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 "
			   "\"ib0 0\" \"\"\n";
	struct ofx_datconf_change c;
	char *out = add(text, IB0_LINE, &c);

	CU_ASSERT_EQUAL(c.unchanged, 1);
	CU_ASSERT_EQUAL(c.removed, 2);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n# between\n" IB0_P2P_LINE "\n");
	free(out);

	/* the first one differs: it is rewritten, the others go */
	out = add(text, "ofx-v2-ib0 u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 "
		  "\"ib0 0 tos=4\" \"\"", &c);
	CU_ASSERT_EQUAL(c.replaced, 1);
	CU_ASSERT_EQUAL(c.removed, 2);
	CU_ASSERT_EQUAL(ofx_datconf_find(out, "ofx-v2-ib0"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "tos=4"));
	CU_ASSERT_PTR_NULL(strstr(out, "other.so"));
	free(out);
}

static void test_add_after_a_last_line_without_newline(void)
{
	const char *text = "# no newline at the end\n"
			   STOCK_IB0;
	struct ofx_datconf_change c;
	char *out = add(text, IB0_LINE, &c);

	CU_ASSERT_EQUAL(c.added, 1);
	CU_ASSERT_EQUAL(strncmp(out, text, strlen(text)), 0);
	CU_ASSERT_STRING_EQUAL(out + strlen(text), "\n" IB0_LINE "\n");
	free(out);

	/* replacing such a last line ends the file with a newline */
	out = add("ofx-v2-ib0 u2.0 x", IB0_LINE, &c);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n");
	free(out);
}

static void test_add_refuses_non_entries_and_foreign_names(void)
{
	char why[WHY], *out = NULL;

	/* the name of another provider's entry */
	CU_ASSERT_EQUAL(ofx_datconf_add(sample, "ofa-v2-ib0" FIXED "libdaplofx.so.2 dapl.2.0 "
					"\"ib0 0\" \"\"", &out, NULL, why, sizeof(why)), -EPERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "libdaplofa.so.2"));

	CU_ASSERT_EQUAL(ofx_datconf_add(sample, "# comment", &out, NULL, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_EQUAL(ofx_datconf_add(sample, IB0_LINE "\nx", &out, NULL, why, sizeof(why)),
			-EINVAL);
	CU_ASSERT_PTR_NULL(out);
}

static char *rm(const char *text, const char *key, struct ofx_datconf_change *c)
{
	char why[WHY], *out = NULL;

	CU_ASSERT_EQUAL(ofx_datconf_remove(text, key, &out, c, why, sizeof(why)), 0);
	return out;
}

static void test_remove_by_name_and_by_device(void)
{
	const char *text = "# ours\n" IB0_LINE "\n" IB0_P2P_LINE "\n"
			   "ofx-v2-ib0-xrc u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 "
			   "\"ib0 0 xrc=on\" \"\"\n"
			   STOCK_IB0 "\n"
			   "mine" FIXED "/usr/lib/libdaplofx.so.2 dapl.2.0 \"ib0 0\" \"\"\n"
			   "ofx-v2-ib1" FIXED "libdaplofx.so.2 dapl.2.0 \"ib1 0\" \"\"";
	struct ofx_datconf_change c;
	char why[WHY], *out;

	out = rm(text, "ofx-v2-ib0-p2p", &c);
	CU_ASSERT_EQUAL(c.removed, 1);
	CU_ASSERT_EQUAL(ofx_datconf_find(out, "ofx-v2-ib0-p2p"), 0);
	CU_ASSERT_EQUAL(ofx_datconf_find(out, "ofx-v2-ib0"), 2);
	free(out);

	/* a device name takes every variant of ofx-v2-<device>, and nothing else */
	out = rm(text, "ib0", &c);
	CU_ASSERT_EQUAL(c.removed, 3);
	CU_ASSERT_STRING_EQUAL(out, "# ours\n"
			       "ofa-v2-ib0 u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "
			       "\"ib0 0\" \"\"\n"
			       "mine u2.0 nonthreadsafe default /usr/lib/libdaplofx.so.2 dapl.2.0 "
			       "\"ib0 0\" \"\"\n"
			       "ofx-v2-ib1 u2.0 nonthreadsafe default libdaplofx.so.2 dapl.2.0 "
			       "\"ib1 0\" \"\"");
	free(out);

	/* our library under another name is ours */
	out = rm(text, "mine", &c);
	CU_ASSERT_EQUAL(c.removed, 1);
	free(out);

	/* a stock entry is not */
	out = NULL;
	CU_ASSERT_EQUAL(ofx_datconf_remove(text, "ofa-v2-ib0", &out, &c, why, sizeof(why)),
			-EPERM);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "libdaplofa.so.2"));

	out = rm(text, "ib7", &c);
	CU_ASSERT_EQUAL(c.removed, 0);
	CU_ASSERT_STRING_EQUAL(out, text);
	free(out);
}

static void test_record_lines_mark_an_added_newline(void)
{
	char *out;

	CU_ASSERT_EQUAL(ofx_datconf_record_lines("a\n", IB0_LINE "\n", &out), 0);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n");
	free(out);
	CU_ASSERT_EQUAL(ofx_datconf_record_lines("", IB0_LINE "\n", &out), 0);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n");
	free(out);
	/* the stock Debian dat.conf ends without a newline */
	CU_ASSERT_EQUAL(ofx_datconf_record_lines("# x\n" STOCK_IB0, IB0_LINE "\n", &out), 0);
	CU_ASSERT_STRING_EQUAL(out, OFX_DATCONF_EOF_MARK STOCK_IB0 "\n" IB0_LINE "\n");
	free(out);
}

static void test_record_merge_appends_new_lines_once(void)
{
	char *out;

	CU_ASSERT_EQUAL(ofx_datconf_record_merge("", IB0_LINE "\n", &out), 0);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n");
	free(out);
	CU_ASSERT_EQUAL(ofx_datconf_record_merge(IB0_LINE "\n", IB0_P2P_LINE "\n" IB0_LINE "\n",
						 &out), 0);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n" IB0_P2P_LINE "\n");
	free(out);
	/* a record without a final newline gets one before the next line */
	CU_ASSERT_EQUAL(ofx_datconf_record_merge(IB0_LINE, IB0_P2P_LINE "\n", &out), 0);
	CU_ASSERT_STRING_EQUAL(out, IB0_LINE "\n" IB0_P2P_LINE "\n");
	free(out);
}

static void test_remove_lines_takes_back_exactly_the_recorded_lines(void)
{
	const char *edited = "ofx-v2-ib1" FIXED "libdaplofx.so.2 dapl.2.0 \"ib1 0 tos=5\" \"\"";
	const char *record = IB0_LINE "\n" IB0_P2P_LINE "\n"
			     "ofx-v2-ib1" FIXED "libdaplofx.so.2 dapl.2.0 \"ib1 0\" \"\"\n"
			     STOCK_IB0 "\n";
	struct ofx_datconf_change c;
	char *text, *out;

	/* ours as recorded go; an edited one, a stock one (even if recorded) and comments stay */
	if (asprintf(&text, "%s%s\n%s\n%s\n%s\n", sample, IB0_LINE, edited, IB0_P2P_LINE,
		     "# end") < 0)
		abort();
	CU_ASSERT_EQUAL(ofx_datconf_remove_lines(text, record, &out, &c), 0);
	CU_ASSERT_EQUAL(c.removed, 2);
	CU_ASSERT_EQUAL(ofx_datconf_find(out, "ofx-v2-ib0"), 0);
	CU_ASSERT_NOT_EQUAL(ofx_datconf_find(out, "ofx-v2-ib1"), 0);
	CU_ASSERT_NOT_EQUAL(ofx_datconf_find(out, "ofa-v2-ib0"), 0);
	free(out);
	free(text);

	/* nothing recorded is there: the text comes back as it was */
	CU_ASSERT_EQUAL(ofx_datconf_remove_lines(sample, record, &out, &c), 0);
	CU_ASSERT_EQUAL(c.removed, 0);
	CU_ASSERT_STRING_EQUAL(out, sample);
	free(out);
}

static void test_remove_lines_undo_the_added_newline(void)
{
	const char *before = "# x\n" STOCK_IB0;
	struct ofx_datconf_change c;
	char *added, *record, *out;

	CU_ASSERT_EQUAL(ofx_datconf_add(before, IB0_LINE, &added, &c, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(added, "# x\n" STOCK_IB0 "\n" IB0_LINE "\n");
	CU_ASSERT_EQUAL(ofx_datconf_record_lines(before, IB0_LINE "\n", &record), 0);
	CU_ASSERT_EQUAL(ofx_datconf_remove_lines(added, record, &out, &c), 0);
	CU_ASSERT_STRING_EQUAL(out, before);
	free(out);

	/* a line appended since by someone else: the newline before it stays */
	free(added);
	added = strdup("# x\n" STOCK_IB0 "\n" IB0_LINE "\n# later\n");
	CU_ASSERT_EQUAL(ofx_datconf_remove_lines(added, record, &out, &c), 0);
	CU_ASSERT_STRING_EQUAL(out, "# x\n" STOCK_IB0 "\n# later\n");
	free(out);
	free(added);
	free(record);
}

static void test_is_ours(void)
{
	const char *l = STOCK_IB0;

	ofx_datconf_parse_line(l, strlen(l), &e);
	CU_ASSERT_FALSE(ofx_datconf_is_ours(&e));
	l = "x u2.0 nonthreadsafe default \"/a b/libdaplofx.so.2\" dapl.2.0 \"ib0 0\" \"\"";
	ofx_datconf_parse_line(l, strlen(l), &e);
	CU_ASSERT_TRUE(ofx_datconf_is_ours(&e));
	l = "ofx-v2-x";
	ofx_datconf_parse_line(l, strlen(l), &e);
	CU_ASSERT_TRUE(ofx_datconf_is_ours(&e));
}

static char *diff(const char *a, const char *b)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ofx_datconf_diff(f, "F", a, b);
	fclose(f);
	return buf;
}

static void test_diff_is_unified(void)
{
	char *d;

	d = diff("a\nb\n", "a\nb\n");
	CU_ASSERT_STRING_EQUAL(d, "");
	free(d);

	d = diff("1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n5\n6\nnew\n");
	CU_ASSERT_STRING_EQUAL(d, "--- F\n+++ F\n@@ -4,3 +4,4 @@\n 4\n 5\n 6\n+new\n");
	free(d);

	d = diff("1\n2\nold\n3\n", "1\n2\nnew\n3\n");
	CU_ASSERT_STRING_EQUAL(d, "--- F\n+++ F\n@@ -1,4 +1,4 @@\n 1\n 2\n-old\n+new\n 3\n");
	free(d);

	/* two changes far apart make two hunks */
	d = diff("x\n1\n2\n3\n4\n5\n6\n7\n8\n9\ny\n", "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
	CU_ASSERT_STRING_EQUAL(d, "--- F\n+++ F\n@@ -1,4 +1,3 @@\n-x\n 1\n 2\n 3\n"
			       "@@ -8,4 +7,3 @@\n 7\n 8\n 9\n-y\n");
	free(d);

	/* a lost final newline is shown */
	d = diff("a", "a\nb\n");
	CU_ASSERT_STRING_EQUAL(d, "--- F\n+++ F\n@@ -1,1 +1,2 @@\n a\n+b\n");
	free(d);
	d = diff("a\n", "");
	CU_ASSERT_STRING_EQUAL(d, "--- F\n+++ F\n@@ -1,1 +0,0 @@\n-a\n");
	free(d);
	d = diff("", "a");
	CU_ASSERT_STRING_EQUAL(d, "--- F\n+++ F\n@@ -0,0 +1,1 @@\n+a\n"
			       "\\ No newline at end of file\n");
	free(d);
}

static void test_write_is_atomic_and_keeps_the_mode(void)
{
	char *path = tools_write_file("dat.conf", sample, 0640);
	char why[WHY], *text = NULL, *link_path, *back;
	struct stat st;

	CU_ASSERT_EQUAL_FATAL(ofx_datconf_read(path, &text, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(text, sample);
	free(text);
	CU_ASSERT_EQUAL(ofx_datconf_write(path, "new\n", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0640);
	back = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(back, "new\n");
	free(back);

	/* a symlink stays a symlink; its target is replaced */
	CU_ASSERT_EQUAL_FATAL(asprintf(&link_path, "%s/link.conf", tools_scratch()) > 0, 1);
	CU_ASSERT_EQUAL(symlink(path, link_path), 0);
	CU_ASSERT_EQUAL(ofx_datconf_write(link_path, "via link\n", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(lstat(link_path, &st), 0);
	CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
	back = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(back, "via link\n");
	free(back);
	free(link_path);
	free(path);

	/* a new file gets 0644 */
	CU_ASSERT_EQUAL_FATAL(asprintf(&path, "%s/fresh.conf", tools_scratch()) > 0, 1);
	CU_ASSERT_EQUAL(ofx_datconf_read(path, &text, why, sizeof(why)), -ENOENT);
	CU_ASSERT_EQUAL(ofx_datconf_write(path, "x\n", why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0644);
	free(path);
}

static void test_read_only_file_is_refused(void)
{
	char *path = tools_write_file("ro.conf", sample, 0444);
	char why[WHY], *back;

	/* refused from the mode bits, so also when the tests run as root */
	CU_ASSERT_EQUAL(ofx_datconf_write(path, "changed\n", why, sizeof(why)), -EACCES);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "read-only"));
	back = tools_slurp(path);
	CU_ASSERT_STRING_EQUAL(back, sample);
	free(back);
	free(path);

	path = tools_write_file("nul.conf", "", 0644);
	{
		FILE *f = fopen(path, "w");

		fwrite("a\0b\n", 1, 4, f);
		fclose(f);
	}
	back = NULL;
	CU_ASSERT_EQUAL(ofx_datconf_read(path, &back, why, sizeof(why)), -EINVAL);
	CU_ASSERT_PTR_NULL(back);
	free(path);
}

static void test_default_path_follows_dat_override(void)
{
	unsetenv("DAT_OVERRIDE");
	CU_ASSERT_STRING_EQUAL(ofx_datconf_default_path(), "/etc/dat.conf");
	setenv("DAT_OVERRIDE", "/tmp/x.conf", 1);
	CU_ASSERT_STRING_EQUAL(ofx_datconf_default_path(), "/tmp/x.conf");
	unsetenv("DAT_OVERRIDE");
}

/* Every entry of dat-conf/dat.conf.example is what ofx-dat-conf would write, options valid. */
static void test_example_file_entries_are_valid(void)
{
	const char *src = getenv("OFX_TOP_SRCDIR");
	char path[4096], why[WHY], line[LINE], params[1024], *text, *s, *opts[32];
	unsigned int entries = 0;

	snprintf(path, sizeof(path), "%s/dat-conf/dat.conf.example", src ? src : ".");
	CU_ASSERT_EQUAL_FATAL(ofx_datconf_read(path, &text, why, sizeof(why)), 0);
	for (s = text; *s;) {
		size_t len = strcspn(s, "\n");
		char *save, *dev, *tok;
		int nopts = 0;

		if (ofx_datconf_parse_line(s, len, &e) > 0) {
			entries++;
			CU_ASSERT_EQUAL(e.nfields, 8);
			CU_ASSERT_TRUE(ofx_datconf_is_ours(&e));
			CU_ASSERT_EQUAL(ofx_datconf_format(e.field[0], e.field[4], e.field[6], line,
							   sizeof(line)), 0);
			CU_ASSERT_EQUAL(strncmp(line, s, len), 0);
			CU_ASSERT_EQUAL(strlen(line), len);
			dev = strtok_r(e.field[6], " ", &save);
			CU_ASSERT_STRING_EQUAL(strtok_r(NULL, " ", &save), "0");
			while ((tok = strtok_r(NULL, " ", &save)) && nopts < 32)
				opts[nopts++] = tok;
			CU_ASSERT_EQUAL(ofx_datconf_ia_params(dev, OFX_DATCONF_PLAIN, opts, nopts,
							      params, sizeof(params), why,
							      sizeof(why)), 0);
		}
		s += len + (s[len] == '\n');
	}
	CU_ASSERT_TRUE(entries >= 5);
	free(text);
}

CU_TestInfo ofx_test_datconf[] = {
	{ "parse splits like libdat2", test_parse_splits_like_libdat2 },
	{ "parse handles quotes, escapes and bad lines", test_parse_quotes_escapes_and_bad_lines },
	{ "names and variants", test_names_and_variants },
	{ "format writes eight fields and round-trips",
	  test_format_writes_eight_fields_and_round_trips },
	{ "ia_params checked against the config table",
	  test_ia_params_checked_against_the_config_table },
	{ "add appends and keeps every other byte", test_add_appends_and_keeps_every_other_byte },
	{ "add of an identical entry is a no-op", test_add_identical_entry_is_a_no_op },
	{ "add replaces a changed entry in place", test_add_replaces_a_changed_entry_in_place },
	{ "add collapses duplicates", test_add_collapses_duplicates },
	{ "add after a last line without newline", test_add_after_a_last_line_without_newline },
	{ "add refuses non-entries and foreign names",
	  test_add_refuses_non_entries_and_foreign_names },
	{ "remove by name and by device", test_remove_by_name_and_by_device },
	{ "record lines mark an added newline", test_record_lines_mark_an_added_newline },
	{ "record merge appends new lines once", test_record_merge_appends_new_lines_once },
	{ "remove_lines takes back exactly the recorded lines",
	  test_remove_lines_takes_back_exactly_the_recorded_lines },
	{ "remove_lines undoes the added newline", test_remove_lines_undo_the_added_newline },
	{ "is_ours by name prefix or library", test_is_ours },
	{ "diff is unified", test_diff_is_unified },
	{ "write is atomic and keeps the mode", test_write_is_atomic_and_keeps_the_mode },
	{ "read-only file is refused", test_read_only_file_is_refused },
	{ "default path follows DAT_OVERRIDE", test_default_path_follows_dat_override },
	{ "example file entries are valid", test_example_file_entries_are_valid },
	CU_TEST_INFO_NULL,
};
