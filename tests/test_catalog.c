/* The operator catalog: shapes, presets, work models and the CPU fp64
 * references on values worked out by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/op.h"

static void registry_has_the_three(void **state)
{
    (void)state;
    assert_non_null(kg_op_find("matmul"));
    assert_non_null(kg_op_find("layer_norm"));
    assert_non_null(kg_op_find("softmax"));
    assert_null(kg_op_find("conv2d"));
    for (int i = 0; kg_ops[i]; i++) {
        const kg_op *op = kg_ops[i];
        assert_true(op->n_presets >= 3);
        assert_non_null(op->reference);
        assert_non_null(op->cpu_reference);
        assert_non_null(op->baseline);
        assert_non_null(kg_preset_find(op, "large"));
    }
}

static void shape_parsing(void **state)
{
    (void)state;
    const kg_op *mm = kg_op_find("matmul"), *sm = kg_op_find("softmax");
    kg_shape s;
    kg_err e = {0, ""};
    assert_int_equal(kg_shape_parse(mm, "4096", &s, &e), 0);
    assert_true(s.n == 3 && s.d[0] == 4096 && s.d[2] == 4096);
    assert_int_equal(kg_shape_parse(mm, "128x256x64", &s, &e), 0);
    assert_true(s.d[0] == 128 && s.d[1] == 256 && s.d[2] == 64);
    assert_int_equal(kg_shape_parse(sm, "large", &s, &e), 0);
    assert_true(s.d[0] == 4096 && s.d[1] == 32768);
    const char *bad[] = {"", "0x5", "12x", "x12", "1x2x3x4x5", "abc", "-4", "1x2x3", "99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_err e2 = {0, ""};
        assert_int_equal(kg_shape_parse(sm, bad[i], &s, &e2), KG_EXIT_USAGE);
        assert_non_null(strstr(e2.msg, "ROWSxCOLS"));
    }
}

static void work_models(void **state)
{
    (void)state;
    kg_work w;
    kg_shape s = {2, {4096, 32768}};
    kg_op_find("softmax")->work(&s, KG_FP16, &w);
    assert_true(w.bytes == 2.0 * 4096 * 32768 * 2);
    kg_shape m = {3, {100, 200, 300}};
    kg_op_find("matmul")->work(&m, KG_BF16, &w);
    assert_true(w.bytes == (100.0 * 300 + 300 * 200 + 100 * 200) * 2);
    assert_true(w.flops == 2.0 * 100 * 200 * 300);
}

static void cpu_references(void **state)
{
    (void)state;
    kgate_params p = {sizeof p, 0, NULL, 0};
    /* matmul [[1,2],[3,4]] . [[5,6],[7,8]] = [[19,22],[43,50]] */
    double a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4];
    const double *in[2] = {a, b};
    kg_shape s = {3, {2, 2, 2}};
    kg_op_find("matmul")->cpu_reference(in, &s, &p, c);
    assert_true(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50);
    /* layer_norm of [1,3] with w=1, b=0.5, eps=0: (-1, 1) + 0.5 */
    double x[2] = {1, 3}, w[2] = {1, 1}, bias[2] = {0.5, 0.5}, y[2];
    const double *ln_in[3] = {x, w, bias};
    kg_shape r = {2, {1, 2}};
    kg_op_find("layer_norm")->cpu_reference(ln_in, &r, &p, y);
    assert_true(fabs(y[0] + 0.5) < 1e-12 && fabs(y[1] - 1.5) < 1e-12);
    /* softmax of [0, ln 3] = [0.25, 0.75]; a NaN row is all NaN */
    double sx[4] = {0, log(3.0), 1, NAN}, sy[4];
    const double *sm_in[1] = {sx};
    kg_shape q = {2, {2, 2}};
    kg_op_find("softmax")->cpu_reference(sm_in, &q, &p, sy);
    assert_true(fabs(sy[0] - 0.25) < 1e-12 && fabs(sy[1] - 0.75) < 1e-12);
    assert_true(isnan(sy[2]) && isnan(sy[3]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_has_the_three),
        cmocka_unit_test(shape_parsing),
        cmocka_unit_test(work_models),
        cmocka_unit_test(cpu_references),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
