/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "ia.h"
#include "instance.h"
#include "log.h"
#include "provider.h"
#include "status.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The DAT_PROVIDER table, ia_params parsing, registration with the real
 * libdat2 registry, and the handle helpers that work on any object.
 */

/* The parser's rejections are expected here: keep them out of the output. */
static unsigned int saved_mask;

static void quiet(void)
{
	saved_mask = ofx_log_subsys_mask;
	ofx_log_subsys_mask &= ~(1u << OFX_SUBSYS_CORE | 1u << OFX_SUBSYS_IA);
}

static void loud(void)
{
	ofx_log_subsys_mask = saved_mask;
}

static struct ofx_provider *prov_new(void)
{
	struct ofx_provider *prov = calloc(1, sizeof(*prov));

	CU_ASSERT_FATAL(prov != NULL);
	strcpy(prov->name, "ofx-unit");
	return prov;
}

static void test_params_split_device_and_port(void)
{
	struct ofx_provider *prov = prov_new();

	CU_ASSERT_EQUAL(ofx_ia_params_split("ib0 0", prov), 0);
	CU_ASSERT_STRING_EQUAL(prov->device, "ib0");
	CU_ASSERT_STRING_EQUAL(prov->port, "0");
	CU_ASSERT_STRING_EQUAL(prov->options, "");

	CU_ASSERT_EQUAL(ofx_ia_params_split("192.168.1.7 1", prov), 0);
	CU_ASSERT_STRING_EQUAL(prov->device, "192.168.1.7");
	CU_ASSERT_STRING_EQUAL(prov->port, "1");
	CU_ASSERT_STRING_EQUAL(prov->options, "");
	free(prov);
}

static void test_params_split_keeps_options_trimmed(void)
{
	struct ofx_provider *prov = prov_new();

	CU_ASSERT_EQUAL(ofx_ia_params_split("eth2 0 p2p=on rtr=write", prov), 0);
	CU_ASSERT_STRING_EQUAL(prov->device, "eth2");
	CU_ASSERT_STRING_EQUAL(prov->port, "0");
	CU_ASSERT_STRING_EQUAL(prov->options, "p2p=on rtr=write");

	/* Blanks of any kind and amount around and between the parts. */
	CU_ASSERT_EQUAL(ofx_ia_params_split(" \teth2\t 0   xrc=auto  max_inline=0 \t\n", prov), 0);
	CU_ASSERT_STRING_EQUAL(prov->device, "eth2");
	CU_ASSERT_STRING_EQUAL(prov->port, "0");
	CU_ASSERT_STRING_EQUAL(prov->options, "xrc=auto  max_inline=0");

	CU_ASSERT_EQUAL(ofx_ia_params_split("fe80::1%eth0 0   ", prov), 0);
	CU_ASSERT_STRING_EQUAL(prov->device, "fe80::1%eth0");
	CU_ASSERT_STRING_EQUAL(prov->options, "");
	free(prov);
}

static void test_params_split_requires_device_and_port(void)
{
	struct ofx_provider *prov = prov_new();

	quiet();
	strcpy(prov->device, "keep");
	CU_ASSERT_EQUAL(ofx_ia_params_split("ib0", prov), -EINVAL);
	CU_ASSERT_EQUAL(ofx_ia_params_split("ib0   ", prov), -EINVAL);
	CU_ASSERT_EQUAL(ofx_ia_params_split("", prov), -EINVAL);
	CU_ASSERT_EQUAL(ofx_ia_params_split(" \t ", prov), -EINVAL);
	CU_ASSERT_EQUAL(ofx_ia_params_split(NULL, prov), -EINVAL);
	/* Outputs are written only on success. */
	CU_ASSERT_STRING_EQUAL(prov->device, "keep");
	loud();
	free(prov);
}

static void test_params_split_rejects_overlong_parts(void)
{
	struct ofx_provider *prov = prov_new();
	char buf[2 * OFX_IA_PARAMS_MAX];

	quiet();
	/* A device name that fills the whole field. */
	memset(buf, 'd', sizeof(prov->device));
	strcpy(buf + sizeof(prov->device), " 0");
	CU_ASSERT_EQUAL(ofx_ia_params_split(buf, prov), -EINVAL);

	/* A port that does not fit. */
	strcpy(buf, "ib0 ");
	memset(buf + 4, '7', sizeof(prov->port));
	buf[4 + sizeof(prov->port)] = '\0';
	CU_ASSERT_EQUAL(ofx_ia_params_split(buf, prov), -EINVAL);

	/* The whole string longer than OFX_IA_PARAMS_MAX - 1. */
	strcpy(buf, "ib0 0 ");
	memset(buf + 6, 'o', OFX_IA_PARAMS_MAX);
	buf[6 + OFX_IA_PARAMS_MAX] = '\0';
	CU_ASSERT_EQUAL(ofx_ia_params_split(buf, prov), -EINVAL);

	/* The longest accepted string. */
	memset(buf + 6, 'o', OFX_IA_PARAMS_MAX - 7);
	buf[OFX_IA_PARAMS_MAX - 1] = '\0';
	CU_ASSERT_EQUAL(ofx_ia_params_split(buf, prov), 0);
	CU_ASSERT_EQUAL(strlen(prov->options), OFX_IA_PARAMS_MAX - 7);
	loud();
	free(prov);
}

typedef void (*slot_fn)(void);

static void test_template_has_no_null_slot(void)
{
	size_t first = offsetof(DAT_PROVIDER, ia_open_func);
	size_t last = offsetof(DAT_PROVIDER, handle_extendedop_func);
	const char *base = (const char *)&ofx_provider_template;
	size_t off, n = 0;

	/* Every slot between the two is a function pointer (udat_redirection.h). */
	CU_ASSERT_EQUAL((last - first) % sizeof(slot_fn), 0);
	CU_ASSERT_EQUAL(last + sizeof(slot_fn), sizeof(DAT_PROVIDER));
	for (off = first; off <= last; off += sizeof(slot_fn)) {
		slot_fn fn;

		memcpy(&fn, base + off, sizeof(fn));
		if (!fn)
			CU_FAIL("DAT_PROVIDER slot left NULL");
		n++;
	}
	CU_ASSERT_EQUAL(n, 79);
	/* Per-instance fields stay unset in the template. */
	CU_ASSERT_PTR_NULL(ofx_provider_template.device_name);
	CU_ASSERT_PTR_NULL(ofx_provider_template.extension);
}

static DAT_PROVIDER_INFO make_info(const char *name)
{
	DAT_PROVIDER_INFO info;

	memset(&info, 0, sizeof(info));
	strcpy(info.ia_name, name);
	info.dapl_version_major = 2;
	info.dapl_version_minor = 0;
	info.is_thread_safe = DAT_FALSE;
	return info;
}

static void test_init_registers_an_instance_named_after_the_ia(void)
{
	DAT_PROVIDER_INFO info = make_info("ofx-unit-a");
	struct ofx_provider *prov;

	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit-a"));
	dat_provider_init(&info, "lo 0 p2p=on");
	prov = ofx_provider_find("ofx-unit-a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(prov);

	/* libdat2 reads device_name at ia_close: it must be our copy of the name. */
	CU_ASSERT_PTR_EQUAL(prov->dat.device_name, prov->name);
	CU_ASSERT_STRING_EQUAL(prov->dat.device_name, "ofx-unit-a");
	CU_ASSERT_PTR_EQUAL(prov->dat.extension, prov);
	CU_ASSERT_PTR_EQUAL(ofx_provider_from_dat(&prov->dat), prov);
	CU_ASSERT_PTR_EQUAL(prov->dat.ia_open_func, ofx_provider_template.ia_open_func);
	CU_ASSERT_PTR_EQUAL(prov->dat.handle_extendedop_func,
			    ofx_provider_template.handle_extendedop_func);
	CU_ASSERT_STRING_EQUAL(prov->info.ia_name, "ofx-unit-a");
	CU_ASSERT_EQUAL(prov->info.dapl_version_major, 2);
	CU_ASSERT_EQUAL(prov->params_error, 0);
	CU_ASSERT_STRING_EQUAL(prov->device, "lo");
	CU_ASSERT_STRING_EQUAL(prov->options, "p2p=on");

	dat_provider_fini(&info);
	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit-a"));
}

static void test_init_keeps_two_names_apart(void)
{
	DAT_PROVIDER_INFO a = make_info("ofx-unit-a"), b = make_info("ofx-unit-b");
	struct ofx_provider *pa, *pb;

	dat_provider_init(&a, "ib0 0");
	dat_provider_init(&b, "eth2 0 rtr=read");
	pa = ofx_provider_find("ofx-unit-a");
	pb = ofx_provider_find("ofx-unit-b");
	CU_ASSERT_PTR_NOT_NULL_FATAL(pa);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pb);
	CU_ASSERT_PTR_NOT_EQUAL(pa, pb);
	CU_ASSERT_STRING_EQUAL(pa->device, "ib0");
	CU_ASSERT_STRING_EQUAL(pb->device, "eth2");
	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit"));
	CU_ASSERT_PTR_NULL(ofx_provider_find(NULL));

	dat_provider_fini(&a);
	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit-a"));
	CU_ASSERT_PTR_EQUAL(ofx_provider_find("ofx-unit-b"), pb);
	dat_provider_fini(&b);
	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit-b"));
}

static void test_bad_params_still_register_and_remember_the_error(void)
{
	DAT_PROVIDER_INFO info = make_info("ofx-unit-bad"), keep = make_info("ofx-unit-keep");
	struct ofx_provider *prov;

	/* Log setup happens in the first init; quiet() must come after it. */
	dat_provider_init(&keep, "ib0 0");
	quiet();
	dat_provider_init(&info, "ib0");
	prov = ofx_provider_find("ofx-unit-bad");
	CU_ASSERT_PTR_NOT_NULL_FATAL(prov);
	CU_ASSERT_EQUAL(prov->params_error, -EINVAL);
	/* ia_open reports the error before it touches any device. */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(prov->dat.ia_open_func("ofx-unit-bad", 8, NULL,
							    &(DAT_IA_HANDLE){ NULL })),
			DAT_INVALID_PARAMETER);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(prov->dat.ia_open_func("ofx-unit-none", 8, NULL,
							    &(DAT_IA_HANDLE){ NULL })),
			DAT_PROVIDER_NOT_FOUND);

	/* The same key again: libdat2 refuses, the first instance stays. */
	dat_provider_init(&info, "ib0 0");
	CU_ASSERT_PTR_EQUAL(ofx_provider_find("ofx-unit-bad"), prov);

	dat_provider_fini(&info);
	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit-bad"));
	/* fini for a name never registered is harmless */
	dat_provider_fini(&info);
	loud();
	dat_provider_fini(&keep);
	CU_ASSERT_PTR_NULL(ofx_provider_find("ofx-unit-keep"));
}

/* Any object type; an EVD stands in for all of them. */
static void test_handle_type_and_context_work_on_any_object(void)
{
	struct ofx_obj obj = { .type = OFX_OBJ_EVD };
	struct ofx_obj ep = { .type = OFX_OBJ_EP };
	const DAT_PROVIDER *t = &ofx_provider_template;
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT ctx = { .as_64 = 0 };

	CU_ASSERT_EQUAL(t->get_handle_type_func(&obj, &type), DAT_SUCCESS);
	CU_ASSERT_EQUAL(type, DAT_HANDLE_TYPE_EVD);
	CU_ASSERT_EQUAL(t->get_handle_type_func(&ep, &type), DAT_SUCCESS);
	CU_ASSERT_EQUAL(type, DAT_HANDLE_TYPE_EP);

	CU_ASSERT_EQUAL(t->set_consumer_context_func(&obj, (DAT_CONTEXT){ .as_64 = 0x1234 }),
			DAT_SUCCESS);
	CU_ASSERT_EQUAL(t->get_consumer_context_func(&obj, &ctx), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ctx.as_64, 0x1234);
	/* Contexts are per object. */
	CU_ASSERT_EQUAL(t->get_consumer_context_func(&ep, &ctx), DAT_SUCCESS);
	CU_ASSERT_EQUAL(ctx.as_64, 0);

	CU_ASSERT_EQUAL(t->get_handle_type_func(&obj, NULL), OFX_INVALID_ARG(2));
	CU_ASSERT_EQUAL(t->get_consumer_context_func(&obj, NULL), OFX_INVALID_ARG(2));
}

static void test_handle_helpers_reject_freed_and_foreign_handles(void)
{
	struct ofx_obj freed = { .type = OFX_OBJ_FREED };
	struct ofx_obj bogus = { .type = OFX_OBJ_TYPE_COUNT };
	const DAT_PROVIDER *t = &ofx_provider_template;
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT ctx = { .as_64 = 0 };

	CU_ASSERT_EQUAL(DAT_GET_TYPE(t->get_handle_type_func(&freed, &type)),
			DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(t->get_handle_type_func(&bogus, &type)),
			DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(t->set_consumer_context_func(&freed, ctx)),
			DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(t->get_consumer_context_func(&freed, &ctx)),
			DAT_INVALID_HANDLE);
	/* A small value is a libdat2 IA index; none is live here. */
	CU_ASSERT_EQUAL(DAT_GET_TYPE(t->get_handle_type_func((DAT_HANDLE)1, &type)),
			DAT_INVALID_HANDLE);
	CU_ASSERT_EQUAL(DAT_GET_TYPE(t->get_handle_type_func(NULL, &type)), DAT_INVALID_HANDLE);
}

static void test_ia_lookup_takes_pointers_and_refuses_dead_indices(void)
{
	struct ofx_ia *ia = calloc(1, sizeof(*ia));
	DAT_HANDLE_TYPE type;

	CU_ASSERT_FATAL(ia != NULL);
	ia->obj.type = OFX_OBJ_IA;
	ia->obj.ia = ia;
	CU_ASSERT_PTR_EQUAL(ofx_ia_lookup(ia), ia);
	CU_ASSERT_PTR_NULL(ofx_ia_lookup(NULL));
	CU_ASSERT_PTR_NULL(ofx_ia_lookup((DAT_IA_HANDLE)1));
	CU_ASSERT_PTR_NULL(ofx_ia_lookup((DAT_IA_HANDLE)0xffff));
	/* Not in libdat2's handle vector: query results carry the pointer itself. */
	CU_ASSERT_PTR_EQUAL(ofx_ia_dat_handle(ia), ia);
	CU_ASSERT_EQUAL(ofx_provider_template.get_handle_type_func(ia, &type), DAT_SUCCESS);
	CU_ASSERT_EQUAL(type, DAT_HANDLE_TYPE_IA);

	ia->obj.type = OFX_OBJ_EP;
	CU_ASSERT_PTR_NULL(ofx_ia_lookup(ia));
	free(ia);
}

CU_TestInfo ofx_test_provider[] = {
	{ "params split device and port", test_params_split_device_and_port },
	{ "params split keeps options trimmed", test_params_split_keeps_options_trimmed },
	{ "params split requires device and port", test_params_split_requires_device_and_port },
	{ "params split rejects overlong parts", test_params_split_rejects_overlong_parts },
	{ "template has no null slot", test_template_has_no_null_slot },
	{ "init registers an instance named after the ia",
	  test_init_registers_an_instance_named_after_the_ia },
	{ "init keeps two names apart", test_init_keeps_two_names_apart },
	{ "bad params still register and remember the error",
	  test_bad_params_still_register_and_remember_the_error },
	{ "handle type and context work on any object",
	  test_handle_type_and_context_work_on_any_object },
	{ "handle helpers reject freed and foreign handles",
	  test_handle_helpers_reject_freed_and_foreign_handles },
	{ "ia lookup takes pointers and refuses dead indices",
	  test_ia_lookup_takes_pointers_and_refuses_dead_indices },
	CU_TEST_INFO_NULL,
};
