/* The TileLang candidate's table (build/tilelang/libkgate_tilelang.so, from
 * tilelang/gen*.py), checked without a GPU: it passes the worker's rule; each
 * operator has its naive and its fixed kernel, the naive one naming its
 * planted causes and the fixed one none; supports() holds at the operator's
 * small, medium and large presets and not at kgate's unaligned and tiny extra
 * shapes; and the launcher refuses bad tensors and an uncompiled shape with a
 * message before any CUDA call. Skipped where the candidate is not built
 * (TileLang's headers missing) and under AddressSanitizer (the library's
 * CUDA runtime is not instrumented). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "catalog/op.h"
#include "catalog/plugin_check.h"
#include "diagnose/diagnose.h"

#include "asan.h"

#define LIB KG_TEST_BIN "/tilelang/libkgate_tilelang.so"

/* Every operator with a TileLang pair, and its dtype. */
static const struct {
    const char *op, *dtype;
} pairs[] = {
    {"layer_norm", "bf16"},    {"rms_norm", "fp16"},       {"softmax", "fp16"},
    {"argmax", "fp16"},        {"max_reduction", "fp16"},  {"mean_reduction", "fp32"},
    {"logsumexp", "fp32"},     {"log_softmax", "fp16"},    {"cross_entropy", "fp32"},
    {"add", "fp16"},           {"mul", "fp16"},            {"relu", "fp16"},
    {"leaky_relu", "fp16"},    {"swiglu", "fp16"},         {"matmul", "fp16"},
};
#define N_PAIRS ((int)(sizeof pairs / sizeof pairs[0]))

static void *handle;
static const kgate_plugin *table;

static int setup(void **state)
{
    (void)state;
#ifdef KG_UNDER_ASAN
    return 0;
#else
    if (access(LIB, R_OK) != 0)
        return 0; /* not built: each test skips */
    kg_err e = {0, ""};
    if (kg_plugin_open(LIB, &handle, &table, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    return 0;
#endif
}

static int teardown(void **state)
{
    (void)state;
    if (handle)
        dlclose(handle);
    return 0;
}

static const kgate_kernel *kernel(const char *op, const char *dtype, int naive)
{
    char name[96];
    snprintf(name, sizeof name, "tilelang_%s_%s%s", op, naive ? "naive_" : "", dtype);
    return kg_plugin_find(table, name);
}

static void each_operator_has_its_pair(void **state)
{
    (void)state;
    if (!table)
        skip();
    assert_int_equal(table->n_kernels, 2 * N_PAIRS);
    for (int i = 0; i < N_PAIRS; i++)
        for (int naive = 0; naive < 2; naive++) {
            const kgate_kernel *k = kernel(pairs[i].op, pairs[i].dtype, naive);
            if (!k)
                fail_msg("no %s kernel for %s %s", naive ? "naive" : "fixed", pairs[i].op, pairs[i].dtype);
            assert_string_equal(k->op, pairs[i].op);
            assert_non_null(k->supports);
            char ids[8][KG_CAUSE_ID_MAX];
            int n = kg_diag_planted(k->summary, ids, 8);
            if (naive ? n < 1 : n != 0)
                fail_msg("%s: %d planted causes in '%s'", k->name, n, k->summary);
        }
}

static void supports_the_presets_only(void **state)
{
    (void)state;
    if (!table)
        skip();
    static const char *const sizes[] = {"small", "medium", "large"};
    for (int i = 0; i < N_PAIRS; i++) {
        const kg_op *op = kg_op_find(pairs[i].op);
        assert_non_null(op);
        for (int naive = 0; naive < 2; naive++) {
            const kgate_kernel *k = kernel(pairs[i].op, pairs[i].dtype, naive);
            assert_non_null(k);
            for (int s = 0; s < 3; s++) {
                const kg_preset *pr = kg_preset_find(op, sizes[s]);
                assert_non_null(pr);
                if (!k->supports(pr->shape.d, pr->shape.n))
                    fail_msg("%s: %s preset not supported", k->name, sizes[s]);
            }
            for (unsigned long long seed = 1; seed < 6; seed++) {
                kg_shape x[3];
                kg_extra_shapes(op, seed, x);
                for (int e = 0; e < 2; e++) /* unaligned, tiny: never compiled */
                    if (k->supports(x[e].d, x[e].n))
                        fail_msg("%s: extra shape %d (seed %llu) declared supported", k->name, e, seed);
            }
        }
    }
}

/* A tensor that claims to be on the GPU; the launcher must refuse it on its
 * shape before it dereferences anything. */
static DLTensor fake(int code, int bits, int ndim, int64_t *shape, int cuda)
{
    DLTensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x10000;
    t.device.device_type = cuda ? kDLCUDA : kDLCPU;
    t.ndim = ndim;
    t.dtype.code = (uint8_t)code;
    t.dtype.bits = (uint8_t)bits;
    t.dtype.lanes = 1;
    t.shape = shape;
    return t;
}

static void launcher_refuses_before_cuda(void **state)
{
    (void)state;
    if (!table)
        skip();
    const kgate_kernel *k = kernel("layer_norm", "bf16", 0);
    assert_non_null(k);
    int64_t xs[2] = {1000, 1000}, ws[1] = {1000};
    DLTensor in[3] = {fake(kDLBfloat, 16, 2, xs, 1), fake(kDLBfloat, 16, 1, ws, 1),
                      fake(kDLBfloat, 16, 1, ws, 1)};
    DLTensor out[1] = {fake(kDLBfloat, 16, 2, xs, 1)};
    char msg[256] = "";
    kgate_params p;
    memset(&p, 0, sizeof p);
    p.error = msg;
    p.error_size = sizeof msg;
    assert_int_equal(k->launch(in, 3, out, 1, &p, NULL), 2);
    assert_string_equal(msg, "tilelang layer_norm: no kernel for input 1 of 1000x1000 with these shapes "
                             "(compiled for Rx1024, Rx4096, Rx8192)");
    assert_int_equal(k->launch(in, 2, out, 1, &p, NULL), 1);
    assert_string_equal(msg, "tilelang layer_norm: expected 3 inputs and 1 output, got 2 and 1");
    in[1] = fake(kDLBfloat, 16, 1, ws, 0);
    assert_int_equal(k->launch(in, 3, out, 1, &p, NULL), 1);
    assert_string_equal(msg, "tilelang layer_norm: input 2 must be a contiguous bf16 tensor of rank 1 "
                             "on the GPU");
    in[1] = fake(kDLFloat, 16, 1, ws, 1);
    assert_int_equal(k->launch(in, 3, out, 1, &p, NULL), 1);
    in[1] = fake(kDLBfloat, 16, 1, ws, 1);
    in[1].data = (void *)(uintptr_t)0x10002;
    assert_int_equal(k->launch(in, 3, out, 1, &p, NULL), 2);
    assert_string_equal(msg, "tilelang layer_norm: the kernels load 16 bytes at a time; input 2 is not "
                             "16-byte aligned");
    /* the right columns, the weight of another length */
    int64_t x2[2] = {3, 1024}, w2[1] = {4096};
    in[0] = fake(kDLBfloat, 16, 2, x2, 1);
    in[1] = fake(kDLBfloat, 16, 1, w2, 1);
    in[2] = fake(kDLBfloat, 16, 1, w2, 1);
    out[0] = fake(kDLBfloat, 16, 2, x2, 1);
    assert_int_equal(k->launch(in, 3, out, 1, &p, NULL), 2);
    assert_non_null(strstr(msg, "no kernel for input 1 of 3x1024"));
}

/* The element-wise and matmul kernels have the whole shape compiled in:
 * another length, or tensors whose shapes disagree, are refused. */
static void launcher_takes_whole_shapes(void **state)
{
    (void)state;
    if (!table)
        skip();
    char msg[256] = "";
    kgate_params p;
    memset(&p, 0, sizeof p);
    p.error = msg;
    p.error_size = sizeof msg;
    const kgate_kernel *add = kernel("add", "fp16", 1);
    assert_non_null(add);
    int64_t n[1] = {1000};
    DLTensor in[2] = {fake(kDLFloat, 16, 1, n, 1), fake(kDLFloat, 16, 1, n, 1)};
    DLTensor out[1] = {fake(kDLFloat, 16, 1, n, 1)};
    assert_int_equal(add->launch(in, 2, out, 1, &p, NULL), 2);
    assert_string_equal(msg, "tilelang add: no kernel for input 1 of 1000 with these shapes "
                             "(compiled for 1048576, 16777216, 67108864)");
    const kgate_kernel *relu = kernel("relu", "fp16", 0);
    assert_non_null(relu);
    int64_t x[2] = {1024, 1024}, y[2] = {1024, 2048};
    DLTensor rin[1] = {fake(kDLFloat, 16, 2, x, 1)};
    DLTensor rout[1] = {fake(kDLFloat, 16, 2, y, 1)};
    assert_int_equal(relu->launch(rin, 1, rout, 1, &p, NULL), 2);
    assert_non_null(strstr(msg, "no kernel for input 1 of 1024x1024 with these shapes"));
    /* matmul: A's M x K names the shape; K of B must agree (a TMA kernel: refused
     * before its descriptors are made) */
    const kgate_kernel *mm = kernel("matmul", "fp16", 0);
    assert_non_null(mm);
    int64_t a[2] = {1024, 1024}, b[2] = {2048, 1024};
    DLTensor min[2] = {fake(kDLFloat, 16, 2, a, 1), fake(kDLFloat, 16, 2, b, 1)};
    DLTensor mout[1] = {fake(kDLFloat, 16, 2, a, 1)};
    assert_int_equal(mm->launch(min, 2, mout, 1, &p, NULL), 2);
    assert_string_equal(msg, "tilelang matmul: no kernel for input 1 of 1024x1024 with these shapes "
                             "(compiled for 1024x1024, 4096x4096, 8192x8192)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_operator_has_its_pair),
        cmocka_unit_test(supports_the_presets_only),
        cmocka_unit_test(launcher_refuses_before_cuda),
        cmocka_unit_test(launcher_takes_whole_shapes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
