/* Roofline: bound selection by the ridge point, rho, and the datasheet. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/op.h"
#include "catalog/roofline.h"
#include "catalog/roofs_io.h"

static kg_roofs h200_measured(void)
{
    kg_roofs r = {"measured", 4.3e12, 0, 0, {0}, 66.9e12, 0, 0};
    r.mma[KG_FP16] = r.mma[KG_BF16] = 750e12;
    return r;
}

/* matmul's work at 8192^3 of dtype dt; the operator in *mm. */
static kg_work matmul_8192(kg_dtype dt, const kg_op **mm)
{
    *mm = kg_op_find("matmul");
    kg_shape s = {3, {8192, 8192, 8192}};
    kg_work w;
    kg_types t = {dt, KG_I64};
    kg_op_work(*mm, &s, t, &w);
    return w;
}

static void matmul_is_compute_bound(void **state)
{
    (void)state;
    kg_roofs r = h200_measured();
    const kg_op *mm;
    kg_work w = matmul_8192(KG_FP16, &mm);
    kg_roof_eval e;
    assert_true(fabs(w.flops - 2.0 * 8192.0 * 8192 * 8192) < 1);
    assert_true(fabs(w.bytes - 3.0 * 8192 * 8192 * 2) < 1);
    /* 1.466 ms is exactly 750 TFLOP/s */
    assert_int_equal(kg_roofline(&w, mm->unit, KG_FP16, &r, w.flops / 750e12, &e), 0);
    assert_true(e.compute_bound);
    assert_true(fabs(e.rho - 1.0) < 1e-9);
    assert_true(fabs(e.ridge - 750e12 / 4.3e12) < 1e-6);
}

/* fp32 data runs on the CUDA-core roof even for a tensor-core operator:
 * TF32 fails fp32's tolerance, so its faster roof is out of reach. */
static void fp32_matmul_is_judged_on_the_cuda_cores(void **state)
{
    (void)state;
    kg_roofs r = h200_measured();
    r.mma[KG_FP32] = 400e12; /* the TF32 roof, measured but not fp32's */
    const kg_op *mm;
    kg_work w = matmul_8192(KG_FP32, &mm);
    kg_roof_eval e;
    assert_int_equal(kg_roof_unit(mm->unit, KG_FP32), KG_UNIT_FP32);
    assert_int_equal(kg_roof_unit(mm->unit, KG_BF16), KG_UNIT_TENSOR);
    assert_int_equal(kg_roof_unit(KG_UNIT_FP32, KG_FP16), KG_UNIT_FP32);
    assert_int_equal(kg_roofline(&w, mm->unit, KG_FP32, &r, w.flops / 33.45e12, &e), 0);
    assert_true(e.compute_bound);
    assert_true(fabs(e.peak - 66.9e12) < 1);
    assert_true(fabs(e.rho - 0.5) < 1e-9);
}

static void small_matmul_can_be_memory_bound(void **state)
{
    (void)state;
    kg_roofs r = h200_measured();
    kg_work w = {1e9, 0, 0, 1e10}; /* intensity 10 < ridge ~174 */
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
    kg_types ty = {KG_BF16, KG_I64};
    kg_op_work(ln, &s, ty, &w);
    assert_true(fabs(w.bytes - (2.0 * 8192 * 8192 + 2 * 8192) * 2) < 1);
    double t = w.bytes / 4.3e12 / 0.9; /* 90% of the roof */
    assert_int_equal(kg_roofline(&w, ln->unit, KG_BF16, &r, t, &e), 0);
    assert_false(e.compute_bound);
    assert_true(fabs(e.rho - 0.9) < 1e-9);
}

static void missing_roof_is_an_error(void **state)
{
    (void)state;
    kg_roofs r = {"measured", 4.3e12, 0, 0, {0}, 0, 0, 0};
    kg_work w = {1e9, 0, 0, 1e12};
    kg_roof_eval e;
    assert_int_equal(kg_roofline(&w, KG_UNIT_TENSOR, KG_BF16, &r, 1e-3, &e), -1);
}

/* The memory roof follows the read/write mix: a reduction is held to the
 * read-only roof, a copy to the copy roof, a fill to the write-only roof
 * (the H200's measured 4.40 / 4.28 / 4.32 TB/s), linear in between. */
static void memory_roof_follows_the_mix(void **state)
{
    (void)state;
    kg_roofs r = {"measured", 4.28e12, 4.40e12, 4.32e12, {0}, 66.9e12, 0, 0};
    assert_true(fabs(kg_roof_memory(&r, 1, 1) - 4.28e12) < 1);
    assert_true(fabs(kg_roof_memory(&r, 1, 0) - 4.40e12) < 1);
    assert_true(fabs(kg_roof_memory(&r, 0, 1) - 4.32e12) < 1);
    assert_true(fabs(kg_roof_memory(&r, 3, 1) - 4.34e12) < 1e3);  /* f = 0.75 */
    assert_true(fabs(kg_roof_memory(&r, 1, 3) - 4.30e12) < 1e3);  /* f = 0.25 */
    /* recorded: max_reduction 8192x32768 fp16 reads 536.9 MB, writes 16 KB;
     * at 125 us the copy roof would say rho 1.003, the read roof 0.976 */
    const kg_op *mx = kg_op_find("max_reduction");
    if (mx) {
        kg_work w;
        kg_roof_eval e;
        kg_types t = {KG_FP16, KG_I64};
        kg_op_work(mx, &kg_preset_find(mx, "large")->shape, t, &w);
        assert_int_equal(kg_roofline(&w, mx->unit, KG_FP16, &r, 125e-6, &e), 0);
        assert_true(fabs(e.peak - kg_roof_memory(&r, w.bytes_read, w.bytes_written)) < 1);
        assert_true(e.rho < 1.0 && e.rho > 0.97);
    }
    /* roofs left 0 (a datasheet, an old cache) take the copy roof */
    kg_roofs old = {"datasheet", 4.8e12, 0, 0, {0}, 0, 0, 0};
    assert_true(kg_roof_memory(&old, 1, 0) == 4.8e12);
}

/* A measured triad (two reads a write: add, mul) is a point of the line at
 * f = 2/3, where it is above the copy-read line; under it, the line holds. */
static void triad_point_raises_the_line(void **state)
{
    (void)state;
    kg_roofs r = {"measured", 4.27e12, 4.56e12, 4.29e12, {0}, 66.9e12, 4.45e12, 0};
    assert_true(fabs(kg_roof_rate(&r, 2, 1) - 4.45e12) < 1e3);
    assert_true(fabs(kg_roof_rate(&r, 5, 1) - (4.45e12 + (4.56e12 - 4.45e12) / 2)) < 1e3); /* f = 5/6 */
    assert_true(fabs(kg_roof_rate(&r, 3, 2) - (4.27e12 + (4.45e12 - 4.27e12) * 0.6)) < 1e3); /* f = 0.6 */
    assert_true(fabs(kg_roof_rate(&r, 1, 1) - 4.27e12) < 1);
    assert_true(fabs(kg_roof_rate(&r, 1, 0) - 4.56e12) < 1);
    kg_roofs low = r, none = r;
    low.bw_triad = 4.30e12; /* under the line's 4.3667 at f = 2/3 */
    none.bw_triad = 0;
    assert_true(fabs(kg_roof_rate(&low, 2, 1) - (4.27e12 + (4.56e12 - 4.27e12) / 3)) < 1e3);
    assert_true(kg_roof_rate(&low, 2, 1) == kg_roof_rate(&none, 2, 1));
    assert_true(kg_roof_rate(&low, 5, 1) == kg_roof_rate(&none, 5, 1));
    /* the bundled add at its large preset is held to the triad */
    const kg_op *add = kg_op_find("add");
    if (add) {
        kg_work w;
        kg_roof_eval e;
        kg_types t = {KG_FP16, KG_I64};
        kg_op_work(add, &kg_preset_find(add, "large")->shape, t, &w);
        assert_int_equal(kg_roofline(&w, add->unit, KG_FP16, &r, w.bytes / 4.45e12, &e), 0);
        assert_true(fabs(e.peak - 4.45e12) < 1e3 && fabs(e.rho - 1.0) < 1e-9);
    }
}

/* A cold call can end with up to l2_credit bytes of its writes in L2: its
 * roof is the rate times S / (S - c), c = min(credit, W, S / 2). */
static void l2_credit_raises_the_roof_of_writes(void **state)
{
    (void)state;
    kg_roofs r = {"measured", 4.27e12, 4.56e12, 4.29e12, {0}, 66.9e12, 0, 20e6};
    double rate = kg_roof_rate(&r, 128e6, 128e6);
    assert_true(fabs(kg_roof_memory(&r, 128e6, 128e6) - rate * 256 / 236) < 1e3);
    assert_true(kg_roof_memory(&r, 1e9, 0) == kg_roof_rate(&r, 1e9, 0)); /* no writes, no credit */
    assert_true(fabs(kg_roof_memory(&r, 1e9, 16e3) - kg_roof_rate(&r, 1e9, 16e3) * (1e9 + 16e3) / 1e9) < 1e3);
    /* small calls: at most half of the bytes, so at most twice the rate */
    assert_true(fabs(kg_roof_memory(&r, 8e6, 8e6) - 2 * kg_roof_rate(&r, 8e6, 8e6)) < 1e3);
    assert_true(fabs(kg_roof_memory(&r, 0, 10e6) - 2 * 4.29e12) < 1e3);
    /* large calls: about the rate itself, within 1% at 2.5 GB */
    assert_true(kg_roof_memory(&r, 1.25e9, 1.25e9) / kg_roof_rate(&r, 1.25e9, 1.25e9) < 1.01);
    kg_roofs none = r;
    none.l2_credit = 0;
    assert_true(kg_roof_memory(&none, 128e6, 128e6) == rate);
    /* rho uses it: a 256 MB copy-like call in exactly the credited time is at 1.0 */
    kg_work w = {256e6, 128e6, 128e6, 0};
    kg_roof_eval e;
    assert_int_equal(kg_roofline(&w, KG_UNIT_FP32, KG_FP16, &r, 236e6 / rate, &e), 0);
    assert_true(fabs(e.rho - 1.0) < 1e-9);
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

/* The roofs measured on the H200 (kgate peaks) pass; a cache file with a
 * roof cut to a third (rho tripled) or doubled does not, and says which
 * roof. */
static void cached_roofs_must_be_plausible(void **state)
{
    (void)state;
    kg_roofs ds, m;
    char why[200] = "";
    assert_int_equal(kg_roofs_datasheet("NVIDIA H200", 0, 0, &ds), 1);
    memset(&m, 0, sizeof m);
    m.bw = 4.2738e12;
    m.bw_read = 4.479e12;
    m.bw_write = 4.2917e12;
    m.mma[KG_FP16] = 769.3e12;
    m.mma[KG_BF16] = 800.5e12;
    m.mma[KG_FP32] = 403.0e12;
    assert_int_equal(kg_roofs_plausible(&m, &ds, why, sizeof why), 1);
    kg_roofs low = m;
    low.bw_read = m.bw_read / 3;
    assert_int_equal(kg_roofs_plausible(&low, &ds, why, sizeof why), 0);
    assert_non_null(strstr(why, "read bandwidth"));
    kg_roofs high = m;
    high.mma[KG_BF16] = 2 * ds.mma[KG_BF16];
    assert_int_equal(kg_roofs_plausible(&high, &ds, why, sizeof why), 0);
    assert_non_null(strstr(why, "bf16"));
    kg_roofs tri = m;
    tri.bw_triad = m.bw / 3;
    assert_int_equal(kg_roofs_plausible(&tri, &ds, why, sizeof why), 0);
    assert_non_null(strstr(why, "triad"));
    kg_roofs cred = m;
    cred.l2_credit = 30e6;
    assert_int_equal(kg_roofs_plausible(&cred, &ds, why, sizeof why), 1);
    cred.l2_credit = -1;
    assert_int_equal(kg_roofs_plausible(&cred, &ds, why, sizeof why), 0);
    assert_non_null(strstr(why, "L2 write credit"));
    cred.l2_credit = 4e9; /* even for a GPU outside the table */
    kg_roofs unk0;
    assert_int_equal(kg_roofs_datasheet("Some GPU", 1.593e6, 5120, &unk0), 0);
    assert_int_equal(kg_roofs_plausible(&cred, &unk0, why, sizeof why), 0);
    /* a GPU outside the table: its bandwidth is a guess from the memory
     * clock, so nothing is held against it */
    kg_roofs unk;
    assert_int_equal(kg_roofs_datasheet("Some GPU", 1.593e6, 5120, &unk), 0);
    assert_int_equal(kg_roofs_plausible(&low, &unk, why, sizeof why), 1);
    /* H100 PCIe is not held to the SXM part's bandwidth */
    assert_int_equal(kg_roofs_datasheet("NVIDIA H100 PCIe", 0, 0, &ds), 1);
    assert_true(ds.bw == 2.0e12);
}

/* The cache keeps every roof; a file of an older kgate's measurement (no
 * method, or another) is measured again; a file of this method without a
 * roof is corrupt. */
static void roofs_cache_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/kg-roofs-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/roofs-GPU-test.json", dir);
    kg_roofs r = {"measured", 4.27e12, 4.68e12, 4.31e12, {0}, 0, 4.45e12, 21.5e6}, back;
    r.mma[KG_FP16] = 780e12;
    r.mma[KG_BF16] = 810e12;
    r.mma[KG_FP32] = 410e12;
    kg_err err = {0, ""};
    assert_int_equal(kg_roofs_save(path, &r, "GPU-test", "NVIDIA H200", &err), 0);
    assert_int_equal(kg_roofs_load(path, &back, &err), 0);
    assert_true(back.bw == r.bw && back.bw_read == r.bw_read && back.bw_write == r.bw_write);
    assert_true(back.bw_triad == r.bw_triad && back.l2_credit == r.l2_credit);
    assert_true(back.mma[KG_FP16] == r.mma[KG_FP16] && back.mma[KG_FP32] == r.mma[KG_FP32]);
    assert_string_equal(back.source, "measured");
    const char *old = "{\"uuid\": \"GPU-test\", \"roofs\": {\"bandwidth\": 4.27e12, \"read_bandwidth\": 4.56e12, "
                      "\"write_bandwidth\": 4.29e12, \"mma\": {\"fp16\": 7.8e14}}}";
    const char *other = "{\"method\": 2, \"roofs\": {\"bandwidth\": 4.27e12, \"read_bandwidth\": 4.56e12, "
                        "\"write_bandwidth\": 4.29e12, \"triad_bandwidth\": 0, \"l2_write_credit\": 0, "
                        "\"mma\": {\"fp16\": 7.8e14}}}";
    char corrupt[512];
    snprintf(corrupt, sizeof corrupt, "{\"method\": %d, \"roofs\": {\"bandwidth\": 4.27e12, "
             "\"read_bandwidth\": 4.56e12, \"write_bandwidth\": 4.29e12, \"mma\": {\"fp16\": 7.8e14}}}",
             KG_ROOFS_METHOD);
    const char *texts[3] = {old, other, corrupt};
    const int want[3] = {1, 1, KG_EXIT_IO};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(texts[i], f);
        fclose(f);
        kg_err e = {0, ""};
        assert_int_equal(kg_roofs_load(path, &back, &e), want[i]);
    }
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matmul_is_compute_bound),
        cmocka_unit_test(fp32_matmul_is_judged_on_the_cuda_cores),
        cmocka_unit_test(small_matmul_can_be_memory_bound),
        cmocka_unit_test(layer_norm_is_memory_bound),
        cmocka_unit_test(missing_roof_is_an_error),
        cmocka_unit_test(memory_roof_follows_the_mix),
        cmocka_unit_test(triad_point_raises_the_line),
        cmocka_unit_test(l2_credit_raises_the_roof_of_writes),
        cmocka_unit_test(roofs_cache_round_trip),
        cmocka_unit_test(datasheet_table),
        cmocka_unit_test(cached_roofs_must_be_plausible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
