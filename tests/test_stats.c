/* Statistics and the stopping rule. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/stats.h"

static void median_and_quantiles(void **state)
{
    (void)state;
    double x[] = {5, 1, 4, 2, 3};
    kg_stats s;
    assert_int_equal(kg_stats_compute(x, 5, &s), 0);
    assert_true(s.median == 3 && s.min == 1 && s.max == 5);
    assert_true(fabs(s.p10 - 1.4) < 1e-12 && fabs(s.p90 - 4.6) < 1e-12);
    assert_true(fabs(s.mean - 3) < 1e-12);
    assert_true(fabs(s.stdev - sqrt(2.5)) < 1e-12);
    assert_true(s.ci_lo <= s.median && s.ci_hi >= s.median);
    assert_int_equal(kg_stats_compute(x, 0, &s), -1);
}

static void stop_needs_min_samples_and_time(void **state)
{
    (void)state;
    kg_stop_cfg c;
    kg_stopper st;
    kg_stop_defaults(&c);
    kg_stop_init(&st, &c);
    double x[20];
    for (int i = 0; i < 20; i++)
        x[i] = 1e-3; /* zero noise */
    assert_int_equal(kg_stop_check(&st, x, 9, 1.0, 0.1), KG_STOP_NONE);   /* < 10 samples */
    assert_int_equal(kg_stop_check(&st, x, 10, 0.01, 0.1), KG_STOP_NONE); /* < min GPU time */
    assert_int_equal(kg_stop_check(&st, x, 10, 0.3, 0.1), KG_STOP_NOISE);
}

static void stop_on_wall_cap_when_noisy(void **state)
{
    (void)state;
    kg_stop_cfg c;
    kg_stopper st;
    kg_stop_defaults(&c);
    kg_stop_init(&st, &c);
    double x[12] = {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
    assert_int_equal(kg_stop_check(&st, x, 12, 1.0, 1.0), KG_STOP_NONE);
    assert_int_equal(kg_stop_check(&st, x, 12, 1.0, 16.0), KG_STOP_WALL);
}

static void stop_when_noise_converges(void **state)
{
    (void)state;
    kg_stop_cfg c;
    kg_stopper st;
    kg_stop_defaults(&c);
    kg_stop_init(&st, &c);
    /* alternating 1,1.1: relstd stays ~5%, far above 0.5%, and stops changing */
    static double x[400];
    kg_stop_reason r = KG_STOP_NONE;
    int n;
    for (n = 1; n <= 400 && r == KG_STOP_NONE; n++) {
        x[n - 1] = (n % 2) ? 1.0 : 1.1;
        r = kg_stop_check(&st, x, n, n * 1.0, 0.5);
    }
    assert_int_equal(r, KG_STOP_CONVERGED);
    assert_true(n > 80 && n < 200);
    assert_string_equal(kg_stop_name(KG_STOP_CONVERGED), "converged");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(median_and_quantiles),
        cmocka_unit_test(stop_needs_min_samples_and_time),
        cmocka_unit_test(stop_on_wall_cap_when_noisy),
        cmocka_unit_test(stop_when_noise_converges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
