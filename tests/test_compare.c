/* kgate compare (report/compare.h): the rule on intervals, pairing, verdict
 * changes and regressions, and two recorded H200 runs of the suite on two
 * different H200s. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/compare.h"

#ifndef KG_TEST_SRC
#define KG_TEST_SRC "tests"
#endif

static void the_rule(void **state)
{
    (void)state;
    const double s = 0.02;
    /* within the band: SAME, whatever the intervals */
    assert_int_equal(kg_compare_times(100, 99.9, 100.1, 101.5, 101.4, 101.6, s), KG_COMPARE_SAME);
    /* beyond it, intervals apart: FASTER / SLOWER */
    assert_int_equal(kg_compare_times(100, 99, 101, 90, 89, 91, s), KG_COMPARE_FASTER);
    assert_int_equal(kg_compare_times(100, 99, 101, 110, 109, 111, s), KG_COMPARE_SLOWER);
    /* beyond it, intervals overlapping: AMBIGUOUS */
    assert_int_equal(kg_compare_times(100, 90, 110, 105, 95, 115, s), KG_COMPARE_AMBIGUOUS);
    assert_int_equal(kg_compare_times(100, 98, 102, 95, 94, 99, s), KG_COMPARE_AMBIGUOUS);
    /* no interval: the point at the median */
    assert_int_equal(kg_compare_times(100, 0, 0, 90, 0, 0, s), KG_COMPARE_FASTER);
    /* a side without a time */
    assert_int_equal(kg_compare_times(0, 0, 0, 90, 89, 91, s), KG_COMPARE_UNTIMED);
    assert_int_equal(kg_compare_times(100, 99, 101, NAN, 0, 0, s), KG_COMPARE_UNTIMED);
}

static void add(kg_report *r, const char *kernel, kg_verdict v, double t, double lo, double hi)
{
    kg_result x;
    memset(&x, 0, sizeof x);
    snprintf(x.kernel, sizeof x.kernel, "%s", kernel);
    snprintf(x.op, sizeof x.op, "softmax");
    snprintf(x.dtype, sizeof x.dtype, "fp16");
    snprintf(x.shape, sizeof x.shape, "4096x32768");
    x.verdict = v;
    if (t > 0) {
        kg_result_set(&x, "time/gpu/median", t);
        kg_result_set(&x, "time/gpu/ci_lo", lo);
        kg_result_set(&x, "time/gpu/ci_hi", hi);
    }
    kg_report_add(r, &x);
}

static const kg_compare_row *row(const kg_compare_row *rows, int n, const char *kernel)
{
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].kernel, kernel) == 0)
            return &rows[i];
    fail_msg("no row for %s", kernel);
    return NULL;
}

/* What kg_compare_print writes into buf; *regressions, what it returns. */
static void printed(const kg_report *a, const kg_report *b, const kg_compare_row *rows, int n, char *buf,
                    size_t size, int *regressions)
{
    memset(buf, 0, size);
    FILE *f = fmemopen(buf, size - 1, "w");
    assert_non_null(f);
    *regressions = kg_compare_print(a, b, rows, n, f);
    fclose(f);
}

/* The rows of comparing a with b by the default rule. */
static kg_compare_row *compared(const kg_report *a, const kg_report *b, int *n)
{
    kg_compare_cfg cfg;
    kg_compare_defaults(&cfg);
    kg_compare_row *rows = NULL;
    kg_err e = {0, ""};
    assert_int_equal(kg_compare(a, b, &cfg, &rows, n, &e), 0);
    return rows;
}

static void pairs_and_regressions(void **state)
{
    (void)state;
    kg_report a, b;
    kg_report_init(&a);
    kg_report_init(&b);
    snprintf(a.device_uuid, sizeof a.device_uuid, "GPU-a");
    snprintf(b.device_uuid, sizeof b.device_uuid, "GPU-b");
    add(&a, "same", KG_V_OK, 100e-6, 99.9e-6, 100.1e-6);
    add(&b, "same", KG_V_OK, 100.5e-6, 100.4e-6, 100.6e-6);
    add(&a, "slower_a_bit", KG_V_OK, 100e-6, 99.9e-6, 100.1e-6);
    add(&b, "slower_a_bit", KG_V_OK, 103e-6, 102.9e-6, 103.1e-6); /* SLOWER, within --regress */
    add(&a, "slower_a_lot", KG_V_OK, 100e-6, 99.9e-6, 100.1e-6);
    add(&b, "slower_a_lot", KG_V_OK, 120e-6, 119.9e-6, 120.1e-6);
    add(&a, "noisy", KG_V_OK, 100e-6, 80e-6, 120e-6);
    add(&b, "noisy", KG_V_OK, 110e-6, 90e-6, 130e-6);
    add(&a, "broke", KG_V_OK, 100e-6, 99.9e-6, 100.1e-6);
    add(&b, "broke", KG_V_INCORRECT, 0, 0, 0);
    add(&a, "gone", KG_V_SLOW, 5e-3, 4.9e-3, 5.1e-3);
    add(&b, "new", KG_V_OK, 50e-6, 49e-6, 51e-6);
    int n = 0;
    kg_compare_row *rows = compared(&a, &b, &n);
    assert_int_equal(n, 7);
    assert_int_equal(row(rows, n, "same")->call, KG_COMPARE_SAME);
    assert_int_equal(row(rows, n, "slower_a_bit")->call, KG_COMPARE_SLOWER);
    assert_false(row(rows, n, "slower_a_bit")->regression);
    assert_int_equal(row(rows, n, "slower_a_lot")->call, KG_COMPARE_SLOWER);
    assert_true(row(rows, n, "slower_a_lot")->regression);
    assert_true(fabs(row(rows, n, "slower_a_lot")->ratio - 1.2) < 1e-12);
    assert_int_equal(row(rows, n, "noisy")->call, KG_COMPARE_AMBIGUOUS);
    assert_false(row(rows, n, "noisy")->regression);
    assert_int_equal(row(rows, n, "broke")->call, KG_COMPARE_UNTIMED);
    assert_true(row(rows, n, "broke")->regression); /* OK -> INCORRECT */
    assert_int_equal(row(rows, n, "gone")->call, KG_COMPARE_ONLY_A);
    assert_int_equal(row(rows, n, "new")->call, KG_COMPARE_ONLY_B);
    char buf[8192];
    int regressions = 0;
    printed(&a, &b, rows, n, buf, sizeof buf, &regressions);
    assert_int_equal(regressions, 2);
    assert_non_null(strstr(buf, "across GPUs: B/A compares the same kernels on two devices"));
    assert_null(strstr(buf, "the gates differ"));
    assert_non_null(strstr(buf, "OK -> INCORRECT  REGRESSION"));
    assert_non_null(strstr(buf, "2 SLOWER, 1 SAME, 1 AMBIGUOUS, 1 UNTIMED, 1 ONLY-A, 1 ONLY-B; 2 regression(s)"));
    /* B judged with a Python candidate's host allowance: said once, above the rows */
    b.gate.host_allowance = KG_HOST_ALLOWANCE_PYTHON_S;
    printed(&a, &b, rows, n, buf, sizeof buf, &regressions);
    assert_non_null(strstr(buf, "the gates differ: A e_ok 0.80, rho_ok 0.80, host allowance 50 us; B 0.80, 0.80, "
                                "100 us: a verdict may change with the gate alone\n"));
    free(rows);
    kg_report_free(&a);
    kg_report_free(&b);
}

/* The times compared are those judged: a version that moved its work to
 * the host (GPU median unchanged, time/judged 1 ms) is SLOWER and a
 * regression, marked as charged and compared as a point. */
static void host_work_compares_the_time_judged(void **state)
{
    (void)state;
    kg_report a, b;
    kg_report_init(&a);
    kg_report_init(&b);
    add(&a, "moved", KG_V_OK, 10e-6, 9.9e-6, 10.1e-6);
    add(&b, "moved", KG_V_SLOW, 10e-6, 9.9e-6, 10.1e-6);
    kg_result_set(&b.results[0], "time/judged", 1e-3);
    add(&a, "uncharged", KG_V_OK, 10e-6, 9.9e-6, 10.1e-6);
    add(&b, "uncharged", KG_V_OK, 10.1e-6, 10e-6, 10.2e-6);
    kg_result_set(&b.results[1], "time/judged", 10.1e-6); /* the GPU median: the interval is kept */
    int n = 0;
    kg_compare_row *rows = compared(&a, &b, &n);
    const kg_compare_row *m = row(rows, n, "moved"), *u = row(rows, n, "uncharged");
    assert_int_equal(m->call, KG_COMPARE_SLOWER);
    assert_true(m->regression);
    assert_true(fabs(m->ratio - 100) < 1e-9);
    assert_true(!m->charged_a && m->charged_b);
    assert_true(m->tb_lo == 0 && m->tb_hi == 0);
    assert_int_equal(u->call, KG_COMPARE_SAME);
    assert_false(u->charged_b);
    assert_true(u->tb_lo == 10e-6 && u->tb_hi == 10.2e-6);
    char buf[4096];
    int regressions = 0;
    printed(&a, &b, rows, n, buf, sizeof buf, &regressions);
    assert_int_equal(regressions, 1);
    assert_non_null(strstr(buf, "1.000 ms*"));
    assert_non_null(strstr(buf, "* host work charged: the time judged"));
    free(rows);
    kg_report_free(&a);
    kg_report_free(&b);
}

/* The suite on two H200s, 3.5 hours apart (two recorded runs, each on
 * another GPU): no regression, nearly everything SAME. */
static void recorded_runs_on_two_h200s(void **state)
{
    (void)state;
    kg_report a, b;
    kg_err e = {0, ""};
    assert_int_equal(kg_report_read_json(KG_TEST_SRC "/data/recorded/run-h200-1.json", &a, &e), 0);
    assert_int_equal(kg_report_read_json(KG_TEST_SRC "/data/recorded/run-h200-2.json", &b, &e), 0);
    assert_string_not_equal(a.device_uuid, b.device_uuid);
    kg_compare_cfg cfg;
    kg_compare_defaults(&cfg);
    kg_compare_row *rows;
    int n = 0, same = 0, regressions = 0;
    assert_int_equal(kg_compare(&a, &b, &cfg, &rows, &n, &e), 0);
    assert_int_equal(n, 57);
    for (int i = 0; i < n; i++) {
        same += rows[i].call == KG_COMPARE_SAME;
        regressions += rows[i].regression;
        assert_true(rows[i].call != KG_COMPARE_ONLY_A && rows[i].call != KG_COMPARE_ONLY_B);
    }
    assert_int_equal(regressions, 0);
    assert_true(same >= 50);
    free(rows);
    kg_report_free(&a);
    kg_report_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_rule),
        cmocka_unit_test(pairs_and_regressions),
        cmocka_unit_test(host_work_compares_the_time_judged),
        cmocka_unit_test(recorded_runs_on_two_h200s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
