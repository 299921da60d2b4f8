/* SPDX-License-Identifier: BSD-2-Clause */
#include "tools.h"

#include "config.h"
#include "info.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every DAPL_OFX_* row unset, so that the caller's environment cannot leak in. */
static void clear_env(void)
{
	size_t i;

	for (i = 0; i < ofx_param_count; i++)
		unsetenv(ofx_params[i].env);
}

static char *config_text(const char *options, bool docs, int *ret_p)
{
	char *buf = NULL, why[256];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*ret_p = ofx_info_print_config(f, options, docs, why, sizeof(why));
	fclose(f);
	return buf;
}

struct row {
	char key[64], env[64], type[32], def[300], value[300], source[32], values[128];
};

/*
 * The table rows of `text` (lines starting in column 0 with neither '#' nor
 * a blank), in order.  Returns how many, at most `max`.
 */
static size_t parse_rows(const char *text, struct row *rows, size_t max)
{
	const char *s = text;
	size_t n = 0;

	while (*s) {
		size_t len = strcspn(s, "\n");

		if (len && *s != '#' && *s != ' ' && n < max) {
			char line[1024];

			snprintf(line, sizeof(line), "%.*s", (int)len, s);
			memset(&rows[n], 0, sizeof(rows[n]));
			if (sscanf(line, "%63s %63s %31s %299s %299s %31s %127s", rows[n].key,
				   rows[n].env, rows[n].type, rows[n].def, rows[n].value,
				   rows[n].source, rows[n].values) == 7)
				n++;
		}
		s += len + (s[len] == '\n');
	}
	return n;
}

static const char *shown(const char *v)
{
	return v[0] ? v : "\"\"";
}

/* Checks a row list against ofx_params[] with every value at its default. */
static void check_rows_are_the_table(const char *text)
{
	struct row *rows = calloc(ofx_param_count + 8, sizeof(*rows));
	size_t n = parse_rows(text, rows, ofx_param_count + 8), i;

	CU_ASSERT_EQUAL(n, ofx_param_count);
	for (i = 0; i < n && i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		CU_ASSERT_STRING_EQUAL(rows[i].key, p->key ? p->key : "-");
		CU_ASSERT_STRING_EQUAL(rows[i].env, p->env);
		CU_ASSERT_STRING_EQUAL(rows[i].type, ofx_info_type_str(p->type));
		CU_ASSERT_STRING_EQUAL(rows[i].def, shown(p->defval));
		CU_ASSERT_STRING_EQUAL(rows[i].source, "default");
		if (p->type == OFX_PARAM_UINT || p->type == OFX_PARAM_STRING ||
		    p->type == OFX_PARAM_TRISTATE || p->type == OFX_PARAM_RTR ||
		    p->type == OFX_PARAM_XRC_TGT)
			CU_ASSERT_STRING_EQUAL(rows[i].value, shown(p->defval));
	}
	free(rows);
}

static void test_config_has_one_row_per_table_row_with_its_default(void)
{
	char *text;
	int ret;

	clear_env();
	text = config_text(NULL, true, &ret);
	CU_ASSERT_EQUAL(ret, 0);
	check_rows_are_the_table(text);
	free(text);
	/* docs are indented lines: the rows are the same without them */
	text = config_text(NULL, false, &ret);
	check_rows_are_the_table(text);
	free(text);
}

static const struct row *find_row(const struct row *rows, size_t n, const char *env)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (!strcmp(rows[i].env, env))
			return &rows[i];
	}
	return NULL;
}

static void test_config_shows_environment_and_options(void)
{
	struct row *rows = calloc(ofx_param_count, sizeof(*rows));
	const struct row *r;
	char *text;
	size_t n;
	int ret;

	clear_env();
	setenv("DAPL_OFX_CM_RETRIES", "7", 1);
	setenv("DAPL_OFX_CQ_BATCH", "0", 1);	/* out of range: ignored */
	text = config_text("p2p=on cq_batch=32", true, &ret);
	CU_ASSERT_EQUAL(ret, 0);
	n = parse_rows(text, rows, ofx_param_count);
	CU_ASSERT_EQUAL(n, ofx_param_count);

	r = find_row(rows, n, "DAPL_OFX_CM_RETRIES");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->value, "7");
	CU_ASSERT_STRING_EQUAL(r->source, "env");
	r = find_row(rows, n, "DAPL_OFX_P2P");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->value, "on");
	CU_ASSERT_STRING_EQUAL(r->source, "ia_params");
	r = find_row(rows, n, "DAPL_OFX_CQ_BATCH");
	CU_ASSERT_PTR_NOT_NULL_FATAL(r);
	CU_ASSERT_STRING_EQUAL(r->value, "32");
	CU_ASSERT_STRING_EQUAL(r->source, "ia_params");
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "# ignored: DAPL_OFX_CQ_BATCH='0' (expected 1..256)"));
	free(text);

	/* options that would make ia_open fail are an error */
	text = config_text("p2p=sometimes", true, &ret);
	CU_ASSERT_EQUAL(ret, -EINVAL);
	free(text);
	clear_env();
	free(rows);
}

static void test_values_come_from_config_c(void)
{
	const struct ofx_param *p;
	char buf[128];

	p = ofx_config_find_key("p2p");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	ofx_info_values(p, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "off|on|auto");
	p = ofx_config_find_key("rtr");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	ofx_info_values(p, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "send|write|read");
	p = ofx_config_find_key("cm_retries");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	ofx_info_values(p, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "0..100");
	p = ofx_config_find_key("stats");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	ofx_info_values(p, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "no|yes");
	/* every value listed for an enum row parses back */
	for (size_t i = 0; i < ofx_param_count; i++) {
		struct ofx_config cfg;
		char *save, *tok;

		p = &ofx_params[i];
		if (p->type == OFX_PARAM_UINT || p->type == OFX_PARAM_STRING)
			continue;
		ofx_info_values(p, buf, sizeof(buf));
		CU_ASSERT_TRUE(strlen(buf) > 0);
		for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save))
			CU_ASSERT_EQUAL(ofx_config_set(p, tok, &cfg), 0);
	}
}

static void test_man_options_name_every_row(void)
{
	char *buf = NULL, needle[128];
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	ofx_info_print_man_options(f);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, ".SH OPTIONS\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, ".SH ENVIRONMENT\n"));
	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		snprintf(needle, sizeof(needle), "\\fB%s\\fR", p->key ? p->key : p->env);
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, needle));
		snprintf(needle, sizeof(needle), "\\fB%s\\fR", p->env);
		CU_ASSERT_PTR_NOT_NULL(strstr(buf, needle));
	}
	free(buf);
}

static void test_qp_model_formulas(void)
{
	struct ofx_qp_model m;

	/* 16 processes on each of 64 nodes, remote pairs only */
	CU_ASSERT_EQUAL_FATAL(ofx_info_qp_model(16, 64, false, &m), 0);
	CU_ASSERT_EQUAL(m.peers, 16 * 63);
	CU_ASSERT_EQUAL(m.dests, 63);
	CU_ASSERT_EQUAL(m.rc_proc, 1008);
	CU_ASSERT_EQUAL(m.rc_node, 16 * 1008);
	CU_ASSERT_EQUAL(m.rc_job, 64ull * 16 * 1008);
	CU_ASSERT_EQUAL(m.xrc_ini_proc, 63);
	CU_ASSERT_EQUAL(m.xrc_tgt_node, 16 * 63);
	CU_ASSERT_EQUAL(m.xrc_node, 2 * 16 * 63);
	CU_ASSERT_EQUAL(m.xrc_job, 64ull * 2 * 16 * 63);
	CU_ASSERT_EQUAL(m.xrcp_proc, 2 * 1008);
	CU_ASSERT_EQUAL(m.xrcp_node, 2 * 16 * 1008);
	/* RC / XRC per node = P / 2 */
	CU_ASSERT_EQUAL(m.rc_node / m.xrc_node, 8);

	/* intra-node pairs: P-1 more peers, the own node one more destination */
	CU_ASSERT_EQUAL_FATAL(ofx_info_qp_model(4, 2, true, &m), 0);
	CU_ASSERT_EQUAL(m.peers, 4 + 3);
	CU_ASSERT_EQUAL(m.dests, 2);
	CU_ASSERT_EQUAL(m.rc_node, 28);
	CU_ASSERT_EQUAL(m.xrc_tgt_node, 8);
	CU_ASSERT_EQUAL(m.xrc_job, 2 * 2 * 4 * 2);

	/* one process on one node talks to nobody */
	CU_ASSERT_EQUAL_FATAL(ofx_info_qp_model(1, 1, true, &m), 0);
	CU_ASSERT_EQUAL(m.peers, 0);
	CU_ASSERT_EQUAL(m.dests, 0);
	CU_ASSERT_EQUAL(m.rc_job + m.xrc_job + m.xrcp_job, 0);

	CU_ASSERT_EQUAL(ofx_info_qp_model(0, 4, false, &m), -EINVAL);
	CU_ASSERT_EQUAL(ofx_info_qp_model(4, 0, false, &m), -EINVAL);
	CU_ASSERT_EQUAL(ofx_info_qp_model(1ull << 32, 1ull << 32, false, &m), -ERANGE);
}

static void test_qp_report_prints_the_model(void)
{
	struct ofx_qp_model m;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CU_ASSERT_EQUAL_FATAL(ofx_info_qp_model(16, 64, false, &m), 0);
	ofx_info_print_qp(f, &m);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "P=16"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "N=64"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "1032192"));
	CU_ASSERT_PTR_NOT_NULL(strstr(buf, "= 8.00"));
	free(buf);
}

CU_TestInfo ofx_test_info[] = {
	{ "config has one row per table row with its default",
	  test_config_has_one_row_per_table_row_with_its_default },
	{ "config shows environment and options", test_config_shows_environment_and_options },
	{ "accepted values come from config.c", test_values_come_from_config_c },
	{ "man options name every row", test_man_options_name_every_row },
	{ "QP model formulas", test_qp_model_formulas },
	{ "QP report prints the model", test_qp_report_prints_the_model },
	CU_TEST_INFO_NULL,
};
