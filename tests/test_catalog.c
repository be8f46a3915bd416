/* The operator catalog: every registered operator is well formed, its CPU
 * fp64 reference reproduces its worked example, its work model counts the
 * signature's bytes; shapes and named scalars parse as documented. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog/op.h"

static void every_operator_is_well_formed(void **state)
{
    (void)state;
    int n = 0;
    assert_null(kg_op_find("conv9"));
    for (int i = 0; kg_ops[i]; i++, n++) {
        const kg_op *op = kg_ops[i];
        char dn[32];
        assert_ptr_equal(kg_op_find(op->name), op);
        assert_true(op->n_presets >= 3);
        assert_non_null(kg_preset_find(op, "small"));
        assert_non_null(kg_preset_find(op, "medium"));
        assert_non_null(kg_preset_find(op, "large"));
        assert_non_null(op->reference);
        assert_non_null(op->cpu_reference);
        assert_non_null(op->summary);
        assert_non_null(op->edge_semantics);
        assert_true(op->n_dtypes >= 1 && kg_op_suite_dtypes(op) <= op->n_dtypes);
        assert_true(op->n_inputs >= 1 && op->n_inputs <= KG_MAX_TENSORS);
        assert_true(op->n_outputs >= 1 && op->n_outputs <= KG_MAX_TENSORS);
        assert_true((unsigned)op->family < KG_FAMILY_COUNT);
        /* the extents named in dims are the ones the signature uses */
        for (int d = 0; d < op->n_dims; d++)
            assert_string_not_equal(kg_op_dim_name(op, d, dn, sizeof dn), "");
        for (int t = 0; t < op->n_inputs + op->n_outputs; t++) {
            const kg_tensor_spec *ts = t < op->n_inputs ? &op->in[t] : &op->out[t - op->n_inputs];
            assert_true(ts->rank >= 1 && ts->rank <= KG_MAX_RANK);
            for (int r = 0; r < ts->rank && !ts->derive; r++)
                assert_true(ts->dim[r] >= 0 && ts->dim[r] < op->n_dims);
            /* derived extents (a convolution's output): named, and only
             * where a hook keeps the shapes they are derived from valid */
            if (ts->derive)
                assert_true(ts->derived_names && op->check_shape);
            if (t < op->n_inputs && ts->gen == KG_GEN_INDEX) {
                assert_true(ts->type != KG_T_DATA);
                assert_true(ts->range_dim >= 0 && ts->range_dim < op->n_dims);
            }
            if (t >= op->n_inputs && ts->cmp == KG_CMP_ARG)
                assert_true(ts->type != KG_T_DATA && op->in[0].type == KG_T_DATA);
        }
        /* input 0 is where the edge rows go */
        assert_true(op->in[0].type == KG_T_DATA || op->min_rows == 0);
        if (!op->baselines[0])
            assert_non_null(op->no_baseline_why);
        assert_non_null(op->fast);
        /* distributions: only the known ones, and input 0 is where they go */
        assert_true((op->dists & ~((1u << KG_DIST_COUNT) - 1)) == 0);
        if (op->dists)
            assert_true(op->in[0].type == KG_T_DATA && op->in[0].gen == KG_GEN_UNIFORM);
        /* a required scalar has a second value for one trial; a bound one
         * (its value is an extent of the shape) never varies */
        for (int k = 0; k < op->n_scalars; k++) {
            const kg_scalar_spec *sp = &op->scalars[k];
            int d = kg_op_scalar_extent(op, sp->name);
            if (d >= 0)
                assert_true(d < op->n_dims && sp->integer && isnan(sp->alt));
            else if (sp->required)
                assert_false(isnan(sp->alt));
        }
        for (int k = op->n_scalars; k < KG_MAX_SCALARS; k++)
            assert_int_equal(op->bound_extent[k], 0);
        /* every preset parses back, and the large one stays addressable */
        for (int k = 0; k < op->n_presets; k++) {
            kg_shape s;
            kg_err e = {0, ""};
            assert_int_equal(kg_shape_parse(op, op->presets[k].name, &s, &e), 0);
            assert_int_equal(s.n, op->n_dims);
        }
    }
    assert_true(n >= 3);
}

/* NaN matches NaN; otherwise within 1e-12 relative. */
static int close_d(double got, double want)
{
    if (isnan(want))
        return isnan(got);
    if (isinf(want))
        return got == want;
    return fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want));
}

static void every_cpu_reference_matches_its_example(void **state)
{
    (void)state;
    for (int i = 0; kg_ops[i]; i++) {
        const kg_op *op = kg_ops[i];
        const kg_example *ex = &op->example;
        kg_scalars sc;
        kgate_params p;
        double *out[KG_MAX_TENSORS] = {0};
        int64_t ext[KG_MAX_RANK];
        if (ex->shape.n != op->n_dims)
            fail_msg("%s has no worked example (op->example)", op->name);
        for (int k = 0; k < op->n_inputs; k++)
            assert_non_null(ex->in[k]);
        kg_scalars_default(op, &sc);
        memset(&p, 0, sizeof p);
        p.struct_size = sizeof p;
        p.n_scalars = (uint32_t)sc.n;
        p.scalars = sc.v;
        for (int o = 0; o < op->n_outputs; o++) {
            assert_non_null(ex->out[o]);
            out[o] = calloc((size_t)kg_tensor_extents(&op->out[o], &ex->shape, ext), sizeof(double));
        }
        op->cpu_reference(ex->in, &ex->shape, &p, out);
        for (int o = 0; o < op->n_outputs; o++) {
            int64_t n = kg_tensor_extents(&op->out[o], &ex->shape, ext);
            for (int64_t e = 0; e < n; e++)
                if (!close_d(out[o][e], ex->out[o][e]))
                    fail_msg("%s: output %s[%lld] = %.17g, the example says %.17g", op->name,
                             op->out[o].name, (long long)e, out[o][e], ex->out[o][e]);
            free(out[o]);
        }
    }
}

static void default_work_counts_the_signature(void **state)
{
    (void)state;
    kg_work w;
    kg_shape s = {2, {4096, 32768}};
    kg_types fp16 = {KG_FP16, KG_I64};
    kg_op_work(kg_op_find("softmax"), &s, fp16, &w);
    assert_true(w.bytes_read == 4096.0 * 32768 * 2 && w.bytes_written == w.bytes_read);
    assert_true(w.bytes == 2.0 * 4096 * 32768 * 2);
    kg_shape m = {3, {100, 200, 300}};
    kg_types bf16 = {KG_BF16, KG_I64};
    kg_op_work(kg_op_find("matmul"), &m, bf16, &w);
    assert_true(w.bytes == (100.0 * 300 + 300 * 200 + 100 * 200) * 2);
    assert_true(w.flops == 2.0 * 100 * 200 * 300);
    /* every operator's work is positive at its large preset */
    for (int i = 0; kg_ops[i]; i++) {
        kg_types t = {kg_ops[i]->dtypes[0], KG_I64};
        kg_op_work(kg_ops[i], &kg_preset_find(kg_ops[i], "large")->shape, t, &w);
        assert_true(w.bytes > 0 && w.bytes_read > 0 && w.bytes_written > 0);
        assert_true(w.bytes == w.bytes_read + w.bytes_written);
    }
}

/* The GEMM family beyond matmul: batched_matmul's artifact GEMV preset and
 * linear_activation's two GEMMs, against the numbers worked by hand. */
static void gemm_family_work(void **state)
{
    (void)state;
    kg_work w;
    kg_types fp16 = {KG_FP16, KG_I64}, bf16 = {KG_BF16, KG_I64};
    const kg_op *bmm = kg_op_find("batched_matmul"), *la = kg_op_find("linear_activation");
    assert_non_null(bmm);
    assert_non_null(la);
    /* 128 x (1x2048).(2048x2048): 1.07 GFLOP on 1.07 GB, memory-bound */
    const kg_preset *gemv = kg_preset_find(bmm, "gemv");
    assert_non_null(gemv);
    assert_true(gemv->shape.n == 4 && gemv->shape.d[0] == 128 && gemv->shape.d[1] == 1 &&
                gemv->shape.d[2] == 2048 && gemv->shape.d[3] == 2048);
    kg_op_work(bmm, &gemv->shape, fp16, &w);
    assert_true(w.flops == 2.0 * 128 * 1 * 2048 * 2048);
    assert_true(w.bytes_read == (128.0 * 1 * 2048 + 128.0 * 2048 * 2048) * 2);
    assert_true(w.bytes_written == 128.0 * 1 * 2048 * 2);
    /* BATCHxMxNxK: A [B,M,K], B [B,K,N], C [B,M,N] */
    kg_shape s = {4, {3, 5, 7, 11}};
    kg_op_work(bmm, &s, bf16, &w);
    assert_true(w.flops == 2.0 * 3 * 5 * 7 * 11);
    assert_true(w.bytes_read == (3.0 * 5 * 11 + 3.0 * 11 * 7) * 2 && w.bytes_written == 3.0 * 5 * 7 * 2);
    /* the artifact's 2048 x 16384 x 4096: two GEMMs, x, W1, W3 read once */
    kg_op_work(la, &kg_preset_find(la, "large")->shape, bf16, &w);
    assert_true(w.flops == 4.0 * 2048 * 16384 * 4096);
    assert_true(w.bytes_read == (2048.0 * 4096 + 2 * 16384.0 * 4096) * 2);
    assert_true(w.bytes_written == 2048.0 * 16384 * 2);
    assert_true(bmm->tol_rms && la->tol_rms && bmm->unit == KG_UNIT_TENSOR && la->unit == KG_UNIT_TENSOR);
}

/* Work models that read the call's scalars (kg_op.work_p): attention's
 * causal halves its FLOPs and leaves its bytes; operators without one give
 * the same work whatever the scalars. */
static void work_model_sees_the_calls_scalars(void **state)
{
    (void)state;
    const kg_op *at = kg_op_find("attention"), *ln = kg_op_find("layer_norm");
    kg_shape s = {4, {2, 3, 5, 8}};
    kg_types fp16 = {KG_FP16, KG_I64};
    kg_scalars sc, trial;
    kg_work w, wc;
    kg_err e = {0, ""};
    assert_non_null(at);
    assert_non_null(at->work_p);
    /* defaults (causal = 0): both products, Q, K, V read and O written */
    kg_op_work(at, &s, fp16, &w);
    assert_true(w.flops == 4.0 * 2 * 3 * 5 * 5 * 8);
    assert_true(w.bytes_read == 3.0 * 2 * 3 * 5 * 8 * 2 && w.bytes_written == 2.0 * 3 * 5 * 8 * 2);
    assert_true(w.bytes == w.bytes_read + w.bytes_written);
    kg_op_work_call(at, &s, fp16, NULL, &wc);
    assert_memory_equal(&w, &wc, sizeof w);
    kg_scalars_default(at, &sc);
    assert_int_equal(kg_scalars_set(at, &sc, "causal=1", &e), 0);
    kg_op_work_call(at, &s, fp16, &sc, &wc);
    assert_true(wc.flops == w.flops / 2);
    assert_true(wc.bytes == w.bytes && wc.bytes_read == w.bytes_read);
    /* causal is required: the second trial runs the other value */
    kg_scalars_default(at, &sc);
    kg_scalars_for_trial(at, &sc, 1, &trial);
    assert_true(trial.v[0].value == 1);
    assert_int_equal(kg_scalars_set(at, &sc, "causal=0.5", &e), KG_EXIT_USAGE);
    /* an operator without work_p ignores the scalars */
    kg_shape r = {2, {64, 1000}};
    kg_scalars_default(ln, &sc);
    assert_int_equal(kg_scalars_set(ln, &sc, "eps=0.5", &e), 0);
    kg_op_work(ln, &r, fp16, &w);
    kg_op_work_call(ln, &r, fp16, &sc, &wc);
    assert_memory_equal(&w, &wc, sizeof w);
}

/* attention's CPU reference beyond its worked example: the causal mask
 * (row 0 sees key 0 only) and a NaN row (it alone becomes NaN). */
static void attention_reference_causal_and_nan(void **state)
{
    (void)state;
    const kg_op *at = kg_op_find("attention");
    const double a = 1.5536723984241867; /* sqrt(2) ln 3: the scores are Q / sqrt(2) */
    double q[4] = {a, 0, 0, a}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 5, 6}, o[4];
    const double *in[3] = {q, k, v};
    double *out[1] = {o};
    kg_shape s = {4, {1, 1, 2, 2}};
    kgate_scalar one = {"causal", 1};
    kgate_params p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.n_scalars = 1;
    p.scalars = &one;
    at->cpu_reference(in, &s, &p, out);
    assert_true(fabs(o[0] - 1) < 1e-12 && fabs(o[1] - 2) < 1e-12); /* only V row 0 */
    assert_true(fabs(o[2] - 4) < 1e-12 && fabs(o[3] - 5) < 1e-12); /* P = [1/4, 3/4] */
    q[0] = NAN;
    one.value = 0;
    at->cpu_reference(in, &s, &p, out);
    assert_true(isnan(o[0]) && isnan(o[1]));
    assert_true(fabs(o[2] - 4) < 1e-12 && fabs(o[3] - 5) < 1e-12);
    /* an Inf in a row: its scores are +-Inf, Inf - Inf in the softmax */
    q[0] = INFINITY;
    at->cpu_reference(in, &s, &p, out);
    assert_true(isnan(o[0]) && isnan(o[1]));
    q[0] = -INFINITY; /* scores [-Inf, NaN]: -Inf * 0 is NaN */
    at->cpu_reference(in, &s, &p, out);
    assert_true(isnan(o[0]) && isnan(o[1]));
}

/* fp32 long sums are doubled like reductions: on the H100 a sequential
 * fp32 sum of 8192 products (cuBLASLt in fp32 and matmul v1 alike, RMS of
 * the reference 29.9) missed 1e-5 at one element of 67M, while TF32's
 * operands miss by far more; fp16 and bf16 keep their bound. */
static void fp32_long_sums_are_doubled(void **state)
{
    (void)state;
    const kg_op *mm = kg_op_find("matmul"), *add = kg_op_find("add");
    assert_non_null(mm);
    assert_non_null(add);
    kg_tol t = kg_op_tol(mm, KG_FP32);
    assert_true(fabs(t.atol - 2e-5) < 1e-12 && fabs(t.l2_max - 2e-5) < 1e-12);
    assert_true(fabs(kg_op_tol(mm, KG_FP16).atol - 1e-3) < 1e-12);
    assert_true(fabs(kg_op_tol(add, KG_FP32).atol - 1e-5) < 1e-12);
    kg_tol_scale(&t, 29.9);
    assert_int_equal(kg_cmp_elem(-4.37358, -4.37322, &t), KG_CMP_PASS); /* fp32, the H100's worst element */
    assert_int_equal(kg_cmp_elem(-5.69351, -5.68763, &t), KG_CMP_TOL);  /* TF32, the first of 63M */
    kg_tol single = kg_tol_for(KG_FP32, 0);
    kg_tol_scale(&single, 29.9);
    assert_int_equal(kg_cmp_elem(-4.37358, -4.37322, &single), KG_CMP_TOL); /* what 1e-5 said */
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
    /* a shape whose tensors would not be addressable */
    kg_err e3 = {0, ""};
    assert_int_equal(kg_shape_parse(mm, "2147483648x2147483648x2", &s, &e3), KG_EXIT_USAGE);
    assert_non_null(strstr(e3.msg, "elements"));
}

static void extra_shapes(void **state)
{
    (void)state;
    for (int i = 0; kg_ops[i]; i++) {
        const kg_op *op = kg_ops[i];
        kg_shape x[3], y[3];
        const kg_shape *small = &kg_preset_find(op, "small")->shape;
        assert_int_equal(kg_extra_shapes(op, 42, x), 3);
        kg_extra_shapes(op, 42, y);
        assert_memory_equal(x, y, sizeof x); /* a seed gives the same shapes */
        if (op->check_shape) {
            /* repaired into valid shapes (tests/test_conv2d.c looks closer) */
            for (int k = 0; k < 3; k++) {
                kg_err e = {0, ""};
                assert_int_equal(kg_shape_check(op, &x[k], &e), 0);
            }
        }
        for (int d = 0; d < op->n_dims && !op->check_shape; d++) {
            assert_true(x[0].d[d] >= 1 && x[0].d[d] < small->d[d] + (small->d[d] == 1));
            assert_true(x[0].d[d] % 2 == 1); /* no multiple of 8, 16 or 128 */
            assert_true(x[1].d[d] >= 1 && x[1].d[d] <= 7);
            assert_true(x[2].d[d] > small->d[d] && x[2].d[d] <= 2 * small->d[d]);
        }
        for (int k = 0; k < 3; k++)
            for (int p = 0; p < op->n_presets; p++)
                assert_memory_not_equal(&x[k], &op->presets[p].shape, sizeof x[k]);
    }
}

static void named_scalars(void **state)
{
    (void)state;
    const kg_op *ln = kg_op_find("layer_norm");
    kg_scalars sc, trial;
    kg_err e = {0, ""};
    kg_scalars_default(ln, &sc);
    assert_int_equal(sc.n, 1);
    assert_string_equal(sc.v[0].name, "eps");
    assert_true(sc.v[0].value == 1e-5);
    assert_int_equal(kg_scalars_set(ln, &sc, "eps=1e-6", &e), 0);
    assert_true(sc.v[0].value == 1e-6);
    /* the alt trial uses the required scalar's second value, not the given one */
    kg_scalars_for_trial(ln, &sc, 1, &trial);
    assert_true(trial.v[0].value == 0.5);
    kg_scalars_for_trial(ln, &sc, 0, &trial);
    assert_true(trial.v[0].value == 1e-6);
    const char *bad[] = {"eps", "=1", "epsilon=1", "eps=", "eps=nan", "eps=1e400", "eps=abc"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kg_err e2 = {0, ""};
        assert_int_equal(kg_scalars_set(ln, &sc, bad[i], &e2), KG_EXIT_USAGE);
        assert_true(strlen(e2.msg) > 10);
    }
    /* an integer scalar refuses a fraction */
    const kg_op *sm = kg_op_find("softmax");
    kg_scalars_default(sm, &sc);
    kg_err e4 = {0, ""};
    assert_int_equal(kg_scalars_set(sm, &sc, "dim=1.5", &e4), KG_EXIT_USAGE);
    assert_non_null(strstr(e4.msg, "whole number"));
}

static void declared_scalars(void **state)
{
    (void)state;
    const kg_op *ln = kg_op_find("layer_norm"), *sm = kg_op_find("softmax");
    kg_err e = {0, ""};
    assert_int_equal(kg_op_check_scalars(ln, "k", "eps", &e), 0);
    assert_int_equal(kg_op_check_scalars(sm, "k", NULL, &e), 0);
    assert_int_equal(kg_op_check_scalars(sm, "k", "dim", &e), 0);
    kg_err e1 = {0, ""};
    assert_int_equal(kg_op_check_scalars(ln, "k", NULL, &e1), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e1.msg, "does not declare scalar 'eps'"));
    kg_err e2 = {0, ""};
    assert_int_equal(kg_op_check_scalars(ln, "k", "eps,alpha", &e2), KG_EXIT_CANDIDATE);
    assert_non_null(strstr(e2.msg, "'alpha'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_operator_is_well_formed),
        cmocka_unit_test(every_cpu_reference_matches_its_example),
        cmocka_unit_test(default_work_counts_the_signature),
        cmocka_unit_test(gemm_family_work),
        cmocka_unit_test(work_model_sees_the_calls_scalars),
        cmocka_unit_test(attention_reference_causal_and_nan),
        cmocka_unit_test(fp32_long_sums_are_doubled),
        cmocka_unit_test(shape_parsing),
        cmocka_unit_test(extra_shapes),
        cmocka_unit_test(named_scalars),
        cmocka_unit_test(declared_scalars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
