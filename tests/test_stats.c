/* Statistics and the stopping rule. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "measure/stats.h"

/* Simulated timings (each sample t_gpu on the GPU, t_wall of wall time, a
 * re-check costing check_s): the mean re-checks a run, and how often the
 * run's second half (where a subject honest at first would skip work) got
 * none. */
static void simulate_rechecks(double t_gpu, double t_wall, double check_s, int runs, double *mean,
                              double *late_share, double *none_late)
{
    kg_stop_cfg sc;
    kg_stop_defaults(&sc);
    long total = 0, late = 0, empty = 0;
    for (int run = 0; run < runs; run++) {
        int n = (int)fmin(sc.max_samples, fmax(sc.min_samples, ceil(sc.min_gpu_s / t_gpu)));
        int checks = 0, in_late = 0;
        for (int i = 0; i < n; i++)
            if (kg_recheck_pick(&sc, 4, 16, 0x5eed0000ull + (unsigned long long)run * 7919, i, i, i * t_gpu,
                                i * t_wall, checks, checks * check_s)) {
                checks++;
                in_late += i >= n / 2;
            }
        total += checks;
        late += in_late;
        empty += in_late == 0;
    }
    *mean = (double)total / runs;
    *late_share = total ? (double)late / total : 0;
    *none_late = (double)empty / runs;
}

static void rechecks_spread_over_the_run(void **state)
{
    (void)state;
    double mean, late, none;
    /* a norm: 70 us a sample, 200 us of wall, re-checks of 1 ms: cheap, so 16 */
    /* (4 until the first re-check's cost is known: 13 on average) */
    simulate_rechecks(70e-6, 200e-6, 1e-3, 400, &mean, &late, &none);
    assert_true(mean > 10 && mean < 18);
    assert_true(late > 0.45 && late < 0.7);
    assert_true(none < 0.04);
    /* a GEMM: 1.5 ms a sample, re-checks of 0.1 s (its fp64 reference): 4,
     * so a run's second half goes without one e^-2 of the time */
    simulate_rechecks(1.5e-3, 5e-3, 0.1, 400, &mean, &late, &none);
    assert_true(mean > 3 && mean < 5.5);
    assert_true(late > 0.35 && late < 0.7);
    assert_true(none < 0.25);
    /* a slow kernel: the stop rule's ten samples of 30 ms; about 4 re-checked */
    simulate_rechecks(30e-3, 40e-3, 0.05, 400, &mean, &late, &none);
    assert_true(mean > 2.5 && mean < 5);
}

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
        cmocka_unit_test(rechecks_spread_over_the_run),
        cmocka_unit_test(stop_needs_min_samples_and_time),
        cmocka_unit_test(stop_on_wall_cap_when_noisy),
        cmocka_unit_test(stop_when_noise_converges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
