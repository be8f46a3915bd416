/* Plugin-table validation on CPU-built candidate libraries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "core/plugin_check.h"

#define PLUG(name) KG_TEST_BIN "/tests/plugins/lib" name ".so"

static void good_table_loads(void **state)
{
    (void)state;
    void *h;
    const kgate_plugin *p;
    kg_err e = {0, ""};
    assert_int_equal(kg_plugin_open(PLUG("cand_good"), &h, &p, &e), 0);
    assert_int_equal(p->n_kernels, 2);
    assert_non_null(kg_plugin_find(p, "errs"));
    assert_null(kg_plugin_find(p, "nope"));
    dlclose(h);
}

static void bad_files(void **state)
{
    (void)state;
    struct {
        const char *path, *msg;
    } cases[] = {
        {PLUG("cand_missing"), "no such readable file"},
        {PLUG("cand_nosym"), "no kgate_plugin_v1 symbol"},
        {PLUG("cand_badabi"), "ABI version 99"},
        {PLUG("cand_badcount"), "declares 2 inputs and 1 outputs; layer_norm takes 3 and 1"},
        {KG_TEST_DATA "/table3.txt", "cannot load"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        void *h;
        const kgate_plugin *p;
        kg_err e = {0, ""};
        int rc = kg_plugin_open(cases[i].path, &h, &p, &e);
        if (rc != KG_EXIT_CANDIDATE || !strstr(e.msg, cases[i].msg))
            fail_msg("%s: rc %d '%s', want '%s'", cases[i].path, rc, e.msg, cases[i].msg);
    }
}

static int noop(const DLTensor *i, int ni, DLTensor *o, int no, const kgate_params *p, kgate_stream s)
{
    (void)i, (void)ni, (void)o, (void)no, (void)p, (void)s;
    return 0;
}

static void table_rules(void **state)
{
    (void)state;
    kgate_kernel k[2] = {{"a", "softmax", "fp16", 1, 1, noop, NULL},
                         {"a", "softmax", "fp16", 1, 1, noop, NULL}};
    kgate_plugin p = {KGATE_ABI_VERSION, 2, k};
    kg_err e = {0, ""};
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "appears twice"));
    k[1].name = "b";
    k[1].dtype = "bf16";
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "dtype 'bf16' is not one softmax supports"));
    k[1].dtype = "fp16";
    k[1].name = "bad name";
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    k[1].name = "b";
    k[1].launch = NULL;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "no launch function"));
    k[1].launch = noop;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), 0);
    p.n_kernels = 0;
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_table_loads),
        cmocka_unit_test(bad_files),
        cmocka_unit_test(table_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
