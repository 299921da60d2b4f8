/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "config.h"
#include "env.h"
#include "log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Every DAPL_OFX_* row unset, so that the caller's environment cannot leak in. */
static void clear_env(void)
{
	size_t i;

	for (i = 0; i < ofx_param_count; i++)
		unsetenv(ofx_params[i].env);
}

/* The rejections below are expected: keep their log lines out of the test output. */
static unsigned int saved_mask;

static void quiet(void)
{
	saved_mask = ofx_log_subsys_mask;
	ofx_log_subsys_mask &= ~(1u << OFX_SUBSYS_CFG);
}

static void loud(void)
{
	ofx_log_subsys_mask = saved_mask;
}

static const struct ofx_param *row_by_env(const char *env)
{
	size_t i;

	for (i = 0; i < ofx_param_count; i++) {
		if (!strcmp(ofx_params[i].env, env))
			return &ofx_params[i];
	}
	return NULL;
}

static void test_every_row_has_doc_env_and_a_default_that_parses(void)
{
	struct ofx_config cfg;
	char buf[OFX_CONFIG_STR_MAX];
	size_t i;

	CU_ASSERT_TRUE_FATAL(ofx_param_count >= 20);
	memset(&cfg, 0, sizeof(cfg));
	for (i = 0; i < ofx_param_count; i++) {
		const struct ofx_param *p = &ofx_params[i];

		CU_ASSERT_PTR_NOT_NULL_FATAL(p->env);
		CU_ASSERT_EQUAL(strncmp(p->env, "DAPL_OFX_", 9), 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p->doc);
		CU_ASSERT_TRUE(strlen(p->doc) >= 10);
		CU_ASSERT_PTR_NOT_NULL_FATAL(p->defval);
		CU_ASSERT_TRUE(p->offset + sizeof(int) <= sizeof(struct ofx_config));
		CU_ASSERT_EQUAL(ofx_config_set(p, p->defval, &cfg), 0);
		if (p->type == OFX_PARAM_UINT)
			CU_ASSERT_TRUE(p->min <= p->max);
		if (p->type == OFX_PARAM_STRING)
			CU_ASSERT_TRUE(p->max > 0 && p->max < OFX_CONFIG_STR_MAX);
		/* formatting the default gives something that parses back to it */
		ofx_config_format(p, &cfg, buf, sizeof(buf));
		CU_ASSERT_EQUAL(ofx_config_set(p, buf, &cfg), 0);
		if (p->type == OFX_PARAM_UINT || p->type == OFX_PARAM_STRING)
			CU_ASSERT_STRING_EQUAL(buf, p->defval);
		if (p->key)
			CU_ASSERT_PTR_EQUAL(ofx_config_find_key(p->key), p);
	}
}

static void test_keys_and_env_names_are_unique(void)
{
	size_t i, j;

	for (i = 0; i < ofx_param_count; i++) {
		for (j = i + 1; j < ofx_param_count; j++) {
			CU_ASSERT_STRING_NOT_EQUAL(ofx_params[i].env, ofx_params[j].env);
			if (ofx_params[i].key && ofx_params[j].key)
				CU_ASSERT_STRING_NOT_EQUAL(ofx_params[i].key, ofx_params[j].key);
		}
	}
}

static void test_defaults_are_the_documented_values(void)
{
	struct ofx_config cfg;

	memset(&cfg, 0x5a, sizeof(cfg));
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(cfg.p2p, OFX_AUTO);
	CU_ASSERT_EQUAL(cfg.rtr, OFX_RTR_SEND);
	CU_ASSERT_EQUAL(cfg.xrc, OFX_OFF);
	CU_ASSERT_STRING_EQUAL(cfg.xrcd, "");
	CU_ASSERT_EQUAL(cfg.xrc_tgt, OFX_XRC_TGT_DOMAIN);
	CU_ASSERT_FALSE(cfg.xrcd_foreign);
	CU_ASSERT_EQUAL(cfg.max_inline, 64);
	CU_ASSERT_EQUAL(cfg.cm_timeout_ms, 4000);
	CU_ASSERT_EQUAL(cfg.cm_retries, 15);
	CU_ASSERT_EQUAL(cfg.wr_max, 0);
	CU_ASSERT_EQUAL(cfg.tos, 0);
	CU_ASSERT_EQUAL(cfg.disc_timeout_ms, 250);
	CU_ASSERT_EQUAL(cfg.lastwqe_timeout_ms, 1000);
	CU_ASSERT_EQUAL(cfg.cq_batch, 16);
	CU_ASSERT_EQUAL(cfg.rtr_timeout_ms, 30000);
	CU_ASSERT_FALSE(cfg.stats);
	CU_ASSERT_FALSE(cfg.print_config);
	CU_ASSERT_STRING_EQUAL(cfg.log_level, "warn");
	CU_ASSERT_STRING_EQUAL(cfg.log_subsys, "");
	CU_ASSERT_STRING_EQUAL(cfg.log_file, "");
}

static void test_options_set_every_keyed_row(void)
{
	struct ofx_config cfg;
	char why[128] = "stale";

	clear_env();
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve("p2p=on rtr=write xrc=auto xrcd=/dev/shm/job.xrcd "
					   "xrc_tgt=exit xrcd_foreign=yes max_inline=128 "
					   "cm_timeout_ms=100 cm_retries=0 wr_max=512 tos=32 "
					   "disc_timeout_ms=10 lastwqe_timeout_ms=20 cq_batch=256 "
					   "rtr_timeout_ms=600000 stats=on print_config=1",
					   &cfg, why, sizeof(why)), 0);
	CU_ASSERT_STRING_EQUAL(why, "");
	CU_ASSERT_EQUAL(cfg.p2p, OFX_ON);
	CU_ASSERT_EQUAL(cfg.rtr, OFX_RTR_WRITE);
	CU_ASSERT_EQUAL(cfg.xrc, OFX_AUTO);
	CU_ASSERT_STRING_EQUAL(cfg.xrcd, "/dev/shm/job.xrcd");
	CU_ASSERT_EQUAL(cfg.xrc_tgt, OFX_XRC_TGT_EXIT);
	CU_ASSERT_TRUE(cfg.xrcd_foreign);
	CU_ASSERT_EQUAL(cfg.max_inline, 128);
	CU_ASSERT_EQUAL(cfg.cm_timeout_ms, 100);
	CU_ASSERT_EQUAL(cfg.cm_retries, 0);
	CU_ASSERT_EQUAL(cfg.wr_max, 512);
	CU_ASSERT_EQUAL(cfg.tos, 32);
	CU_ASSERT_EQUAL(cfg.disc_timeout_ms, 10);
	CU_ASSERT_EQUAL(cfg.lastwqe_timeout_ms, 20);
	CU_ASSERT_EQUAL(cfg.cq_batch, 256);
	CU_ASSERT_EQUAL(cfg.rtr_timeout_ms, 600000);
	CU_ASSERT_TRUE(cfg.stats);
	CU_ASSERT_TRUE(cfg.print_config);
}

static void test_blanks_and_empty_options_are_accepted(void)
{
	struct ofx_config cfg;

	clear_env();
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve(NULL, &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(ofx_config_resolve("", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(ofx_config_resolve("  \t ", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.cm_retries, 15);
	CU_ASSERT_EQUAL(ofx_config_resolve("\tcm_retries=3   p2p=OFF \t", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.cm_retries, 3);
	CU_ASSERT_EQUAL(cfg.p2p, OFX_OFF);
	/* a later option overrides an earlier one */
	CU_ASSERT_EQUAL(ofx_config_resolve("tos=1 tos=2", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.tos, 2);
	/* a string may be set empty */
	CU_ASSERT_EQUAL(ofx_config_resolve("xrcd=/a xrcd=", &cfg, NULL, 0), 0);
	CU_ASSERT_STRING_EQUAL(cfg.xrcd, "");
}

/* Resolves `opts`, expecting -EINVAL, an untouched cfg and a why naming `needle`. */
static void check_rejected(const char *opts, const char *needle)
{
	struct ofx_config cfg, before;
	char why[256] = "";

	clear_env();
	ofx_config_defaults(&cfg);
	before = cfg;
	quiet();
	CU_ASSERT_EQUAL(ofx_config_resolve(opts, &cfg, why, sizeof(why)), -EINVAL);
	loud();
	CU_ASSERT_PTR_NOT_NULL(strstr(why, needle));
	CU_ASSERT_EQUAL(memcmp(&cfg, &before, sizeof(cfg)), 0);
}

static void test_unknown_key_is_rejected_by_name(void)
{
	check_rejected("p2p=on bogus=1", "'bogus'");
	check_rejected("P2P=on", "'P2P'");
	/* environment-only rows have no ia_params key */
	check_rejected("DAPL_OFX_LOG_LEVEL=debug", "DAPL_OFX_LOG_LEVEL");
	check_rejected("=5", "''");
}

static void test_bad_value_is_rejected_naming_key_and_value(void)
{
	check_rejected("p2p=maybe", "'maybe'");
	check_rejected("p2p=maybe", "p2p");
	check_rejected("rtr=atomic", "rtr");
	check_rejected("xrc_tgt=forever", "'forever'");
	check_rejected("stats=perhaps", "stats");
	check_rejected("cm_retries=three", "'three'");
	check_rejected("cm_retries=", "cm_retries");
	check_rejected("max_inline=-1", "'-1'");
	check_rejected("max_inline=12k", "'12k'");
	check_rejected("max_inline=0x10", "'0x10'");
	check_rejected("wr_max=99999999999999999999", "wr_max");
}

static void test_token_without_equals_is_rejected(void)
{
	check_rejected("p2p=on xrc", "'xrc'");
	check_rejected("ib0", "'ib0'");
}

static void test_out_of_range_value_is_rejected(void)
{
	check_rejected("max_inline=1025", "max_inline");
	check_rejected("max_inline=1025", "0..1024");
	check_rejected("cm_timeout_ms=99", "cm_timeout_ms");
	check_rejected("cm_retries=101", "'101'");
	check_rejected("cq_batch=0", "cq_batch");
	check_rejected("cq_batch=257", "cq_batch");
	check_rejected("tos=256", "tos");
	check_rejected("rtr_timeout_ms=600001", "rtr_timeout_ms");
}

/* "xrcd=" followed by `n` characters. */
static void make_xrcd_option(char *opts, size_t n)
{
	memcpy(opts, "xrcd=", 5);
	memset(opts + 5, 'x', n);
	opts[5 + n] = '\0';
}

static void test_string_longer_than_its_field_is_rejected(void)
{
	char opts[OFX_CONFIG_STR_MAX + 8];
	struct ofx_config cfg;

	clear_env();
	ofx_config_defaults(&cfg);
	make_xrcd_option(opts, OFX_CONFIG_STR_MAX - 1);
	CU_ASSERT_EQUAL(ofx_config_resolve(opts, &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(strlen(cfg.xrcd), OFX_CONFIG_STR_MAX - 1);

	make_xrcd_option(opts, OFX_CONFIG_STR_MAX);
	check_rejected(opts, "xrcd");
}

static void test_why_is_truncated_to_its_buffer(void)
{
	struct ofx_config cfg;
	char why[8];

	clear_env();
	ofx_config_defaults(&cfg);
	memset(why, 'z', sizeof(why));
	quiet();
	CU_ASSERT_EQUAL(ofx_config_resolve("nonsense_key=1", &cfg, why, sizeof(why)), -EINVAL);
	CU_ASSERT_EQUAL(strlen(why), sizeof(why) - 1);
	CU_ASSERT_EQUAL(ofx_config_resolve("nonsense_key=1", &cfg, NULL, 0), -EINVAL);
	loud();
}

static void test_environment_overrides_ia_params(void)
{
	struct ofx_config cfg;

	clear_env();
	setenv("DAPL_OFX_CM_RETRIES", "7", 1);
	setenv("DAPL_OFX_P2P", "on", 1);
	setenv("DAPL_OFX_XRCD", "/tmp/env.xrcd", 1);
	setenv("DAPL_OFX_LOG_LEVEL", "debug", 1);
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve("cm_retries=3 p2p=off xrcd=/tmp/opt.xrcd tos=9", &cfg,
					   NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.cm_retries, 7);
	CU_ASSERT_EQUAL(cfg.p2p, OFX_ON);
	CU_ASSERT_STRING_EQUAL(cfg.xrcd, "/tmp/env.xrcd");
	CU_ASSERT_STRING_EQUAL(cfg.log_level, "debug");
	/* an option without an environment variable set stays */
	CU_ASSERT_EQUAL(cfg.tos, 9);
	clear_env();
}

static void test_bad_environment_value_keeps_lower_precedence_value(void)
{
	struct ofx_config cfg;

	clear_env();
	setenv("DAPL_OFX_MAX_INLINE", "huge", 1);
	setenv("DAPL_OFX_CQ_BATCH", "0", 1);
	setenv("DAPL_OFX_RTR", "telepathy", 1);
	ofx_config_defaults(&cfg);
	quiet();
	CU_ASSERT_EQUAL(ofx_config_resolve("max_inline=128", &cfg, NULL, 0), 0);
	loud();
	CU_ASSERT_EQUAL(cfg.max_inline, 128);
	CU_ASSERT_EQUAL(cfg.cq_batch, 16);
	CU_ASSERT_EQUAL(cfg.rtr, OFX_RTR_SEND);
	clear_env();
}

static void test_precedence_is_default_then_option_then_environment(void)
{
	struct ofx_config cfg;

	clear_env();
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve(NULL, &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.disc_timeout_ms, 250);

	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve("disc_timeout_ms=500", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.disc_timeout_ms, 500);

	setenv("DAPL_OFX_DISC_TIMEOUT_MS", "750", 1);
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve("disc_timeout_ms=500", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.disc_timeout_ms, 750);

	/* an empty variable counts as unset */
	setenv("DAPL_OFX_DISC_TIMEOUT_MS", "", 1);
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve("disc_timeout_ms=500", &cfg, NULL, 0), 0);
	CU_ASSERT_EQUAL(cfg.disc_timeout_ms, 500);
	clear_env();
}

static void test_failed_resolve_ignores_environment_too(void)
{
	struct ofx_config cfg;

	clear_env();
	setenv("DAPL_OFX_TOS", "4", 1);
	ofx_config_defaults(&cfg);
	quiet();
	CU_ASSERT_EQUAL(ofx_config_resolve("tos=2 broken", &cfg, NULL, 0), -EINVAL);
	loud();
	CU_ASSERT_EQUAL(cfg.tos, 0);
	clear_env();
}

static void test_env_wrapper_treats_empty_as_unset(void)
{
	unsetenv("DAPL_OFX_TEST_ONLY");
	CU_ASSERT_PTR_NULL(ofx_env_get("DAPL_OFX_TEST_ONLY"));
	setenv("DAPL_OFX_TEST_ONLY", "", 1);
	CU_ASSERT_PTR_NULL(ofx_env_get("DAPL_OFX_TEST_ONLY"));
	setenv("DAPL_OFX_TEST_ONLY", "x", 1);
	CU_ASSERT_STRING_EQUAL(ofx_env_get("DAPL_OFX_TEST_ONLY"), "x");
	unsetenv("DAPL_OFX_TEST_ONLY");
}

static void test_value_spellings_are_accepted(void)
{
	const struct ofx_param *stats = ofx_config_find_key("stats");
	const struct ofx_param *p2p = ofx_config_find_key("p2p");
	struct ofx_config cfg;

	CU_ASSERT_PTR_NOT_NULL_FATAL(stats);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p2p);
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_set(stats, "YES", &cfg), 0);
	CU_ASSERT_TRUE(cfg.stats);
	CU_ASSERT_EQUAL(ofx_config_set(stats, "0", &cfg), 0);
	CU_ASSERT_FALSE(cfg.stats);
	CU_ASSERT_EQUAL(ofx_config_set(stats, "true", &cfg), 0);
	CU_ASSERT_TRUE(cfg.stats);
	CU_ASSERT_EQUAL(ofx_config_set(stats, "off", &cfg), 0);
	CU_ASSERT_FALSE(cfg.stats);
	CU_ASSERT_EQUAL(ofx_config_set(p2p, "Auto", &cfg), 0);
	CU_ASSERT_EQUAL(cfg.p2p, OFX_AUTO);
	CU_ASSERT_EQUAL(ofx_config_set(p2p, "yes", &cfg), 0);
	CU_ASSERT_EQUAL(cfg.p2p, OFX_ON);
	CU_ASSERT_EQUAL(ofx_config_set(p2p, NULL, &cfg), -EINVAL);
	CU_ASSERT_EQUAL(cfg.p2p, OFX_ON);
	CU_ASSERT_STRING_EQUAL(ofx_tristate_str(OFX_AUTO), "auto");
	CU_ASSERT_STRING_EQUAL(ofx_rtr_type_str(OFX_RTR_READ), "read");
}

static void test_print_lists_every_row_with_its_value(void)
{
	struct ofx_config cfg;
	char *text = NULL, *line, *save = NULL;
	size_t size = 0, rows = 0, i;
	const struct ofx_param *retries = row_by_env("DAPL_OFX_CM_RETRIES");
	FILE *out;

	CU_ASSERT_PTR_NOT_NULL_FATAL(retries);
	clear_env();
	ofx_config_defaults(&cfg);
	CU_ASSERT_EQUAL(ofx_config_resolve("cm_retries=42", &cfg, NULL, 0), 0);
	out = open_memstream(&text, &size);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	ofx_config_print(out, &cfg);
	fclose(out);

	for (i = 0; i < ofx_param_count; i++)
		CU_ASSERT_PTR_NOT_NULL(strstr(text, ofx_params[i].env));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		rows++;
		if (strstr(line, "DAPL_OFX_CM_RETRIES")) {
			CU_ASSERT_PTR_NOT_NULL(strstr(line, " 15 "));
			CU_ASSERT_PTR_NOT_NULL(strstr(line, " 42 "));
			CU_ASSERT_PTR_NOT_NULL(strstr(line, retries->doc));
		}
	}
	CU_ASSERT_EQUAL(rows, ofx_param_count);
	free(text);
}


/* README.md documents every tunable: each row's key and variable appear in it. */
static void test_readme_documents_every_row(void)
{
	const char *top = getenv("OFX_TOP_SRCDIR");
	char path[4096], *text = NULL;
	size_t len = 0;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(top);
	snprintf(path, sizeof(path), "%s/README.md", top);
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_EQUAL(getdelim(&text, &len, '\0', f) > 0, 1);
	fclose(f);
	for (size_t i = 0; i < ofx_param_count; i++) {
		char cell[128];

		snprintf(cell, sizeof(cell), "`%s`", ofx_params[i].env);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, cell));
		if (!ofx_params[i].key)
			continue;
		snprintf(cell, sizeof(cell), "| `%s` |", ofx_params[i].key);
		CU_ASSERT_PTR_NOT_NULL(strstr(text, cell));
	}
	free(text);
}

CU_TestInfo ofx_test_config[] = {
	{ "README.md documents every config row", test_readme_documents_every_row },
	{ "every row has a doc, a DAPL_OFX_ variable and a default that parses",
	  test_every_row_has_doc_env_and_a_default_that_parses },
	{ "keys and environment names are unique", test_keys_and_env_names_are_unique },
	{ "defaults are the documented values", test_defaults_are_the_documented_values },
	{ "options set every keyed row", test_options_set_every_keyed_row },
	{ "blanks and empty options are accepted", test_blanks_and_empty_options_are_accepted },
	{ "unknown key is rejected by name", test_unknown_key_is_rejected_by_name },
	{ "bad value is rejected naming key and value",
	  test_bad_value_is_rejected_naming_key_and_value },
	{ "token without '=' is rejected", test_token_without_equals_is_rejected },
	{ "out-of-range value is rejected", test_out_of_range_value_is_rejected },
	{ "string longer than its field is rejected",
	  test_string_longer_than_its_field_is_rejected },
	{ "why text is truncated to its buffer", test_why_is_truncated_to_its_buffer },
	{ "environment overrides ia_params", test_environment_overrides_ia_params },
	{ "bad environment value keeps the lower-precedence value",
	  test_bad_environment_value_keeps_lower_precedence_value },
	{ "precedence is default, then option, then environment",
	  test_precedence_is_default_then_option_then_environment },
	{ "failed resolve ignores the environment too",
	  test_failed_resolve_ignores_environment_too },
	{ "env wrapper treats empty as unset", test_env_wrapper_treats_empty_as_unset },
	{ "value spellings are accepted", test_value_spellings_are_accepted },
	{ "print lists every row with its value", test_print_lists_every_row_with_its_value },
	CU_TEST_INFO_NULL,
};
