/* Roofline: bound selection by the ridge point, rho, and the datasheet. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/op.h"
#include "core/roofline.h"

static kg_roofs h200_measured(void)
{
    kg_roofs r = {"measured", 4.3e12, {0}, 66.9e12};
    r.mma[KG_FP16] = r.mma[KG_BF16] = 750e12;
    return r;
}

static void matmul_is_compute_bound(void **state)
{
    (void)state;
    kg_roofs r = h200_measured();
    const kg_op *mm = kg_op_find("matmul");
    kg_shape s = {3, {8192, 8192, 8192}};
    kg_work w;
    kg_roof_eval e;
    mm->work(&s, KG_FP16, &w);
    assert_true(fabs(w.flops - 2.0 * 8192.0 * 8192 * 8192) < 1);
    assert_true(fabs(w.bytes - 3.0 * 8192 * 8192 * 2) < 1);
    /* 1.466 ms is exactly 750 TFLOP/s */
    assert_int_equal(kg_roofline(&w, mm->unit, KG_FP16, &r, w.flops / 750e12, &e), 0);
    assert_true(e.compute_bound);
    assert_true(fabs(e.rho - 1.0) < 1e-9);
    assert_true(fabs(e.ridge - 750e12 / 4.3e12) < 1e-6);
}

static void small_matmul_can_be_memory_bound(void **state)
{
    (void)state;
    kg_roofs r = h200_measured();
    kg_work w = {1e9, 1e10}; /* intensity 10 < ridge ~174 */
    kg_roof_eval e;
    assert_int_equal(kg_roofline(&w, KG_UNIT_TENSOR, KG_FP16, &r, 1e-3, &e), 0);
    assert_false(e.compute_bound);
    assert_true(fabs(e.rho - 1e9 / (1e-3 * 4.3e12)) < 1e-9);
}

static void layer_norm_is_memory_bound(void **state)
{
    (void)state;
    kg_roofs r = h200_measured();
    const kg_op *ln = kg_op_find("layer_norm");
    kg_shape s = {2, {8192, 8192}};
    kg_work w;
    kg_roof_eval e;
    ln->work(&s, KG_BF16, &w);
    assert_true(fabs(w.bytes - (2.0 * 8192 * 8192 + 2 * 8192) * 2) < 1);
    double t = w.bytes / 4.3e12 / 0.9; /* 90% of the roof */
    assert_int_equal(kg_roofline(&w, ln->unit, KG_BF16, &r, t, &e), 0);
    assert_false(e.compute_bound);
    assert_true(fabs(e.rho - 0.9) < 1e-9);
}

static void missing_roof_is_an_error(void **state)
{
    (void)state;
    kg_roofs r = {"measured", 4.3e12, {0}, 0};
    kg_work w = {1e9, 1e12};
    kg_roof_eval e;
    assert_int_equal(kg_roofline(&w, KG_UNIT_TENSOR, KG_BF16, &r, 1e-3, &e), -1);
}

static void datasheet_table(void **state)
{
    (void)state;
    kg_roofs r;
    assert_int_equal(kg_roofs_datasheet("NVIDIA H200", 0, 0, &r), 1);
    assert_true(r.bw == 4.8e12 && r.mma[KG_BF16] == 989.5e12);
    assert_int_equal(kg_roofs_datasheet("Some GPU", 2619000, 6144, &r), 0);
    assert_true(fabs(r.bw - 2.0 * 2619e6 * 6144 / 8) < 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_is_compute_bound),
        cmocka_unit_test(small_matmul_can_be_memory_bound),
        cmocka_unit_test(layer_norm_is_memory_bound),
        cmocka_unit_test(missing_roof_is_an_error),
        cmocka_unit_test(datasheet_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
