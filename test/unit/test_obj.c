/* SPDX-License-Identifier: BSD-2-Clause */
#include "unit.h"

#include "ia.h"
#include "log.h"
#include "obj.h"

#include <string.h>

/* A stand-in object type for the checked downcast. */
struct ofx_thing {
	struct ofx_obj obj;
	int payload;
};
OFX_DEFINE_FROM_HANDLE(thing, EP)

static DAT_PROVIDER test_provider;

/* An IA with just what ofx_obj_init/fini touch. */
static void fake_ia_init(struct ofx_ia *ia)
{
	memset(ia, 0, sizeof(*ia));
	ia->obj.provider = &test_provider;
	ia->obj.type = OFX_OBJ_IA;
	ia->obj.ia = ia;
	pthread_mutex_init(&ia->obj_lock, NULL);
	ofx_list_init(&ia->objects);
}

static void fake_ia_fini(struct ofx_ia *ia)
{
	pthread_mutex_destroy(&ia->obj_lock);
}

static void test_type_names_come_from_the_type_list(void)
{
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str(OFX_OBJ_IA), "IA");
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str(OFX_OBJ_EP), "EP");
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str(OFX_OBJ_EVD), "EVD");
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str(OFX_OBJ_CR), "CR");
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str(OFX_OBJ_FREED), "freed");
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str(OFX_OBJ_TYPE_COUNT), "unknown");
	CU_ASSERT_STRING_EQUAL(ofx_obj_type_str((enum ofx_obj_type)-1), "unknown");
	for (int t = 0; t < OFX_OBJ_TYPE_COUNT; t++) {
		CU_ASSERT_PTR_NOT_NULL(ofx_obj_type_str((enum ofx_obj_type)t));
		CU_ASSERT_STRING_NOT_EQUAL(ofx_obj_type_str((enum ofx_obj_type)t), "unknown");
	}
}

static void test_dat_handle_types_match_the_type_list(void)
{
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_IA), DAT_HANDLE_TYPE_IA);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_PZ), DAT_HANDLE_TYPE_PZ);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_LMR), DAT_HANDLE_TYPE_LMR);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_RMR), DAT_HANDLE_TYPE_RMR);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_EVD), DAT_HANDLE_TYPE_EVD);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_CNO), DAT_HANDLE_TYPE_CNO);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_EP), DAT_HANDLE_TYPE_EP);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_SRQ), DAT_HANDLE_TYPE_SRQ);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_PSP), DAT_HANDLE_TYPE_PSP);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_RSP), DAT_HANDLE_TYPE_RSP);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_CSP), DAT_HANDLE_TYPE_CSP);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_CR), DAT_HANDLE_TYPE_CR);
	CU_ASSERT_EQUAL(ofx_obj_dat_type(OFX_OBJ_FREED), DAT_HANDLE_TYPE_EXTENSION_BASE);
}

static void test_invalid_handle_subtypes_match_the_type_list(void)
{
	CU_ASSERT_EQUAL(ofx_obj_invalid_subtype(OFX_OBJ_IA), DAT_INVALID_HANDLE_IA);
	CU_ASSERT_EQUAL(ofx_obj_invalid_subtype(OFX_OBJ_EP), DAT_INVALID_HANDLE_EP);
	CU_ASSERT_EQUAL(ofx_obj_invalid_subtype(OFX_OBJ_EVD), DAT_INVALID_HANDLE_EVD_REQUEST);
	CU_ASSERT_EQUAL(ofx_obj_invalid_subtype(OFX_OBJ_CSP), DAT_INVALID_HANDLE_CSP);
	CU_ASSERT_EQUAL(ofx_obj_invalid_subtype(OFX_OBJ_FREED), DAT_NO_SUBTYPE);
	CU_ASSERT_EQUAL(ofx_obj_invalid_subtype(OFX_OBJ_TYPE_COUNT), DAT_NO_SUBTYPE);
}

static void test_provider_is_the_first_word_of_every_handle(void)
{
	struct ofx_thing thing = { .payload = 7 };

	thing.obj.provider = &test_provider;
	/* what libdat2's DAT_HANDLE_TO_PROVIDER reads */
	CU_ASSERT_PTR_EQUAL(*(DAT_PROVIDER **)&thing, &test_provider);
	CU_ASSERT_EQUAL(offsetof(struct ofx_obj, provider), 0);
}

static void test_init_links_object_into_its_ia(void)
{
	struct ofx_thing thing;
	struct ofx_ia ia;

	fake_ia_init(&ia);
	memset(&thing, 0xab, sizeof(thing));
	thing.obj.context.as_64 = 0xdead;
	ofx_obj_init(&thing.obj, OFX_OBJ_EP, &ia);

	CU_ASSERT_PTR_EQUAL(thing.obj.provider, &test_provider);
	CU_ASSERT_EQUAL(thing.obj.type, OFX_OBJ_EP);
	CU_ASSERT_PTR_EQUAL(thing.obj.ia, &ia);
	CU_ASSERT_EQUAL(thing.obj.context.as_64, 0);
	CU_ASSERT_FALSE(ofx_list_empty(&ia.objects));
	CU_ASSERT_PTR_EQUAL(ia.objects.next, &thing.obj.ia_link);
	CU_ASSERT_PTR_EQUAL(ia.objects.prev, &thing.obj.ia_link);

	ofx_obj_fini(&thing.obj);
	CU_ASSERT_EQUAL(thing.obj.type, OFX_OBJ_FREED);
	CU_ASSERT_TRUE(ofx_list_empty(&ia.objects));
	fake_ia_fini(&ia);
}

static void test_init_of_an_ia_keeps_its_provider_and_links_nothing(void)
{
	struct ofx_ia ia;

	fake_ia_init(&ia);
	ia.obj.type = OFX_OBJ_FREED;
	ofx_obj_init(&ia.obj, OFX_OBJ_IA, NULL);
	CU_ASSERT_PTR_EQUAL(ia.obj.provider, &test_provider);
	CU_ASSERT_EQUAL(ia.obj.type, OFX_OBJ_IA);
	CU_ASSERT_PTR_NULL(ia.obj.ia);
	CU_ASSERT_TRUE(ofx_list_empty(&ia.objects));

	ofx_obj_init(&ia.obj, OFX_OBJ_IA, &ia);
	CU_ASSERT_PTR_EQUAL(ia.obj.provider, &test_provider);
	CU_ASSERT_PTR_EQUAL(ia.obj.ia, &ia);
	CU_ASSERT_TRUE(ofx_list_empty(&ia.objects));
	CU_ASSERT_PTR_EQUAL(ofx_ia_from_handle(&ia), &ia);

	ofx_obj_fini(&ia.obj);
	CU_ASSERT_EQUAL(ia.obj.type, OFX_OBJ_FREED);
	CU_ASSERT_PTR_NULL(ofx_ia_from_handle(&ia));
	fake_ia_fini(&ia);
}

static void test_objects_unlink_in_any_order(void)
{
	struct ofx_thing a, b, c;
	struct ofx_ia ia;

	fake_ia_init(&ia);
	ofx_obj_init(&a.obj, OFX_OBJ_EP, &ia);
	ofx_obj_init(&b.obj, OFX_OBJ_PZ, &ia);
	ofx_obj_init(&c.obj, OFX_OBJ_EVD, &ia);
	ofx_obj_fini(&b.obj);
	CU_ASSERT_PTR_EQUAL(ia.objects.next, &a.obj.ia_link);
	CU_ASSERT_PTR_EQUAL(a.obj.ia_link.next, &c.obj.ia_link);
	ofx_obj_fini(&a.obj);
	ofx_obj_fini(&c.obj);
	CU_ASSERT_TRUE(ofx_list_empty(&ia.objects));
	fake_ia_fini(&ia);
}

static void test_checked_downcast_rejects_wrong_type_and_freed(void)
{
	struct ofx_thing thing;
	struct ofx_ia ia;

	fake_ia_init(&ia);
	ofx_obj_init(&thing.obj, OFX_OBJ_EP, &ia);
	CU_ASSERT_PTR_EQUAL(ofx_thing_from_handle(&thing), &thing);
	CU_ASSERT_PTR_EQUAL(ofx_obj_from_handle(&thing, OFX_OBJ_EP), &thing.obj);
	CU_ASSERT_PTR_NULL(ofx_thing_from_handle(NULL));
	/* an EP handle is not an IA, and an IA is not an EP */
	CU_ASSERT_PTR_NULL(ofx_ia_from_handle(&thing));
	CU_ASSERT_PTR_NULL(ofx_thing_from_handle(&ia));
	CU_ASSERT_PTR_NULL(ofx_obj_from_handle(&thing, OFX_OBJ_EVD));

	ofx_obj_fini(&thing.obj);
	CU_ASSERT_PTR_NULL(ofx_thing_from_handle(&thing));
	CU_ASSERT_PTR_NULL(ofx_obj_from_handle(&thing, OFX_OBJ_EP));
	fake_ia_fini(&ia);
}

static void test_second_fini_leaves_ia_list_intact(void)
{
	unsigned int saved_mask;
	struct ofx_thing a, b;
	struct ofx_ia ia;

	fake_ia_init(&ia);
	ofx_obj_init(&a.obj, OFX_OBJ_EP, &ia);
	ofx_obj_init(&b.obj, OFX_OBJ_EP, &ia);
	ofx_obj_fini(&a.obj);
	saved_mask = ofx_log_subsys_mask;
	ofx_log_subsys_mask = 0;	/* the expected warning */
	ofx_obj_fini(&a.obj);
	ofx_log_subsys_mask = saved_mask;
	CU_ASSERT_EQUAL(a.obj.type, OFX_OBJ_FREED);
	CU_ASSERT_PTR_EQUAL(ia.objects.next, &b.obj.ia_link);
	CU_ASSERT_PTR_EQUAL(b.obj.ia_link.next, &ia.objects);
	ofx_obj_fini(&b.obj);
	CU_ASSERT_TRUE(ofx_list_empty(&ia.objects));
	fake_ia_fini(&ia);
}

CU_TestInfo ofx_test_obj[] = {
	{ "type names come from the type list", test_type_names_come_from_the_type_list },
	{ "DAT handle types match the type list", test_dat_handle_types_match_the_type_list },
	{ "invalid-handle subtypes match the type list",
	  test_invalid_handle_subtypes_match_the_type_list },
	{ "provider is the first word of every handle",
	  test_provider_is_the_first_word_of_every_handle },
	{ "init inherits the provider and links the object into its IA",
	  test_init_links_object_into_its_ia },
	{ "init of an IA keeps its provider and links nothing",
	  test_init_of_an_ia_keeps_its_provider_and_links_nothing },
	{ "objects unlink in any order", test_objects_unlink_in_any_order },
	{ "checked downcast rejects wrong type and freed objects",
	  test_checked_downcast_rejects_wrong_type_and_freed },
	{ "second fini leaves the IA list intact", test_second_fini_leaves_ia_list_intact },
	CU_TEST_INFO_NULL,
};
