/* Plugin-table validation on CPU-built candidate libraries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "catalog/plugin_check.h"

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

/* The bundled suite (build/libkgate_bundled.so: every kernels/ .cu file) passes
 * the rule the worker applies after dlopen(): one bad record (a summary
 * over 255 bytes, an unknown scalar) would refuse every bundled kernel on
 * the GPU. Loading it needs no GPU. Skipped under AddressSanitizer (the
 * library's CUDA runtime is not instrumented). */
#include "asan.h"
static void bundled_table_loads(void **state)
{
    (void)state;
#ifdef KG_UNDER_ASAN
    skip();
#else
    void *h;
    const kgate_plugin *p;
    kg_err e = {0, ""};
    if (kg_plugin_open(KG_TEST_BIN "/libkgate_bundled.so", &h, &p, &e))
        fail_msg("%s", e.msg);
    static const char *const some[] = {"conv2d_v2_fp16", "conv2d_v3_fp16", "conv2d_v3_bf16",
                                       "conv2d_nhwc_v3_fp16", "conv2d_nhwc_v3_bf16", "matmul_v2_fp16"};
    for (size_t i = 0; i < sizeof some / sizeof some[0]; i++)
        if (!kg_plugin_find(p, some[i]))
            fail_msg("no kernel %s in the bundled table", some[i]);
    dlclose(h);
#endif
}

static void bad_files(void **state)
{
    (void)state;
    struct {
        const char *path, *msg;
    } cases[] = {
        {PLUG("cand_missing"), "no such readable file"},
        {PLUG("cand_nosym"), "no kgate_plugin_v2 symbol"},
        {PLUG("cand_v1"), "an ABI version 1 candidate"},
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
    kgate_kernel k[2] = {{"a", "softmax", "fp16", NULL, 1, 1, noop, NULL, NULL, NULL},
                         {"a", "softmax", "fp16", NULL, 1, 1, noop, NULL, NULL, NULL}};
    kgate_plugin p = KGATE_PLUGIN(k);
    kg_err e = {0, ""};
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "appears twice"));
    k[1].name = "b";
    k[1].dtype = "fp64";
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "dtype 'fp64' is not one softmax supports"));
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
    /* named scalars: only the operator's, and every required one */
    k[1].scalars = "eps";
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "reads scalar 'eps', which softmax does not have"));
    k[1].scalars = "dim";
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), 0);
    k[1].op = "layer_norm";
    k[1].dtype = "bf16";
    k[1].n_inputs = 3;
    k[1].scalars = NULL;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "does not declare scalar 'eps'"));
    k[1].scalars = "eps";
    /* an index dtype where the operator has no index inputs */
    k[1].index_dtype = "int32";
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "no index inputs"));
    k[1].index_dtype = NULL;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), 0);
    /* records smaller than this kgate's are from another layout */
    p.kernel_size = sizeof(kgate_kernel) - 8;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e.msg, "kernel records of"));
    p.kernel_size = sizeof(kgate_kernel);
    p.n_kernels = 0;
    assert_int_equal(kg_plugin_validate(&p, "t", &e), KG_EXIT_CANDIDATE);
}

/* Records larger than this kgate's (a later ABI revision appends fields)
 * are read by their declared size. */
typedef struct {
    kgate_kernel k;
    double future_field;
} bigger_kernel;

static void larger_records_are_read_by_their_size(void **state)
{
    (void)state;
    bigger_kernel k[2] = {{{"a", "softmax", "fp16", NULL, 1, 1, noop, NULL, NULL, NULL}, 1.0},
                          {{"b", "softmax", "fp32", NULL, 1, 1, noop, NULL, NULL, NULL}, 2.0}};
    kgate_plugin p = {KGATE_ABI_VERSION, sizeof(bigger_kernel), 2, &k[0].k};
    kg_err e = {0, ""};
    assert_int_equal(kg_plugin_validate(&p, "t", &e), 0);
    assert_string_equal(kg_plugin_kernel(&p, 1)->name, "b");
    assert_non_null(kg_plugin_find(&p, "b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_table_loads),
        cmocka_unit_test(bundled_table_loads),
        cmocka_unit_test(bad_files),
        cmocka_unit_test(table_rules),
        cmocka_unit_test(larger_records_are_read_by_their_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
