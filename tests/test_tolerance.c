/* The correctness rule: element cases from tests/data/tolerance.txt, and the
 * relative-L2 bound that stops all-zero or constant outputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "catalog/tolerance.h"

static void element_cases_from_data(void **state)
{
    (void)state;
    FILE *f = fopen(KG_TEST_DATA "/tolerance.txt", "r");
    assert_non_null(f);
    char line[256], dt[8], outs[32], refs[32], want[8];
    int red, n = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || sscanf(line, "%7s %d %31s %31s %7s", dt, &red, outs, refs, want) != 5)
            continue;
        kg_dtype d;
        assert_int_equal(kg_dtype_parse(dt, &d), 0);
        kg_tol t = kg_tol_for(d, red);
        double out = strtod(outs, NULL), ref = strtod(refs, NULL);
        int c = kg_cmp_elem(out, ref, &t);
        const char *names[] = {"pass", "tol", "nan", "inf"};
        if (strcmp(names[c], want) != 0)
            fail_msg("%s %d out=%s ref=%s: got %s, want %s", dt, red, outs, refs, names[c], want);
        n++;
    }
    fclose(f);
    assert_true(n >= 15);
}

static void zero_output_fails_the_norm_bound(void **state)
{
    (void)state;
    /* softmax-like: tiny values where atol alone admits zeros */
    enum { N = 1000 };
    double ref[N], zero[N], good[N];
    for (int i = 0; i < N; i++) {
        ref[i] = 3e-5 * (1 + (i % 7) / 7.0);
        zero[i] = 0;
        good[i] = ref[i] * (1 + 2e-4 * ((i % 3) - 1));
    }
    kg_tol t = kg_tol_for(KG_FP16, 1);
    kg_cmp r;
    kg_cmp_host(zero, ref, N, &t, &r);
    assert_int_equal(r.n_fail, 0); /* every element within atol... */
    assert_false(r.pass);          /* ...but the rel-L2 bound catches it */
    assert_true(r.rel_l2 > 0.99);
    kg_cmp_host(good, ref, N, &t, &r);
    assert_true(r.pass);
}

static void mismatches_are_reported_with_indices(void **state)
{
    (void)state;
    double ref[5] = {1, 2, 3, 4, 5}, out[5] = {1, 2.5, 3, NAN, 5};
    kg_tol t = kg_tol_for(KG_FP32, 0);
    kg_cmp r;
    char buf[512];
    kg_cmp_host(out, ref, 5, &t, &r);
    assert_false(r.pass);
    assert_int_equal(r.n_fail, 2);
    assert_int_equal(r.n_nan, 1);
    assert_int_equal(r.first_idx[0], 1);
    assert_int_equal(r.first_idx[1], 3);
    kg_cmp_describe(&r, buf, sizeof buf);
    assert_non_null(strstr(buf, "[1] got 2.5 want 2"));
}

/* A long dot product that cancels near zero: its element error is on the
 * scale of the partial sums (RMS 40), so atol scales with the reference's
 * RMS; an output wrong everywhere by 1% still fails the norm bound. */
static void long_sums_scale_atol_by_the_reference_rms(void **state)
{
    (void)state;
    double ref[4] = {40.0, -41.0, 0.0303747, 39.5}, out[4], bad[4];
    for (int i = 0; i < 4; i++) {
        out[i] = ref[i] + (i == 2 ? -0.0012152 : 0.004);
        bad[i] = ref[i] * 1.01;
    }
    kg_tol t = kg_tol_for(KG_FP16, 0);
    kg_cmp c;
    kg_cmp_host(out, ref, 4, &t, &c);
    assert_false(c.pass); /* element 2: 1.2e-3 > 1e-3 + 1e-3 * 0.03 */
    assert_int_equal(c.n_fail, 1);
    double rms = kg_cmp_ref_rms(&c);
    assert_true(rms > 34 && rms < 35);
    kg_tol_scale(&t, rms);
    kg_cmp_host(out, ref, 4, &t, &c);
    assert_true(c.pass);
    kg_cmp_host(bad, ref, 4, &t, &c);
    assert_false(c.pass); /* rel_l2 1e-2 > 1e-3 */
    kg_tol u = kg_tol_for(KG_FP16, 0);
    kg_tol_scale(&u, 0.5); /* below 1: unchanged */
    assert_true(u.atol == 1e-3);
    kg_tol_scale(&u, NAN);
    assert_true(u.atol == 1e-3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(element_cases_from_data),
        cmocka_unit_test(zero_output_fails_the_norm_bound),
        cmocka_unit_test(mismatches_are_reported_with_indices),
        cmocka_unit_test(long_sums_scale_atol_by_the_reference_rms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
