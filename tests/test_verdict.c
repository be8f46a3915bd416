/* The gate: the paper's Table III calls (tests/data/table3.txt), ambiguity
 * near thresholds, and INCORRECT before anything else. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "judge/verdict.h"

static kg_evidence point(double rho, double e)
{
    kg_evidence ev = {1, 1, e, e, e, 1, rho, rho, rho, 0, 0, 0, 0};
    return ev;
}

static void table3_vectors(void **state)
{
    (void)state;
    FILE *f = fopen(KG_TEST_DATA "/table3.txt", "r");
    assert_non_null(f);
    char line[256], name[64], want[32], flag[64];
    double rho, e;
    int rows = 0;
    kg_gate g;
    kg_gate_defaults(&g);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        flag[0] = '\0';
        int k = sscanf(line, "%63s %lf %lf %31s %63s", name, &rho, &e, want, flag);
        if (k < 4)
            continue;
        kg_evidence ev = point(rho, e);
        unsigned flags = 0;
        char reason[256];
        kg_verdict v = kg_decide(&g, &ev, &flags, reason, sizeof reason);
        if (strcmp(kg_verdict_name(v), want) != 0)
            fail_msg("%s: got %s, want %s (%s)", name, kg_verdict_name(v), want, reason);
        unsigned want_flags = 0;
        if (flag[0]) {
            int b = kg_flag_parse(flag);
            assert_true(b >= 0);
            want_flags = 1u << b;
        }
        unsigned judged = flags & (KG_FLAG(JUDGMENT_BAND) | KG_FLAG(BASELINE_SUSPECT));
        if (judged != want_flags)
            fail_msg("%s: flags %#x, want %#x", name, judged, want_flags);
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 11);
}

static void straddling_interval_is_ambiguous(void **state)
{
    (void)state;
    kg_gate g;
    kg_gate_defaults(&g);
    kg_evidence ev = point(0.3, 0.79);
    ev.e_lo = 0.77;
    ev.e_hi = 0.82; /* the CI crosses e_ok = 0.80 */
    unsigned flags = 0;
    char reason[256];
    assert_int_equal(kg_decide(&g, &ev, &flags, reason, sizeof reason), KG_V_SLOW);
    assert_true(flags & KG_FLAG(AMBIGUOUS));
    ev = point(0.3, 0.6);
    flags = 0;
    kg_decide(&g, &ev, &flags, reason, sizeof reason);
    assert_false(flags & KG_FLAG(AMBIGUOUS));
}

static void incorrect_beats_fast(void **state)
{
    (void)state;
    kg_gate g;
    kg_gate_defaults(&g);
    kg_evidence ev = point(0.95, 1.5);
    ev.correct = 0;
    unsigned flags = 0;
    char reason[256];
    assert_int_equal(kg_decide(&g, &ev, &flags, reason, sizeof reason), KG_V_INCORRECT);
    assert_int_equal(kg_verdict_exit_code(KG_V_INCORRECT), 2);
    assert_int_equal(kg_verdict_exit_code(KG_V_SLOW), 1);
    assert_int_equal(kg_verdict_exit_code(KG_V_OK), 0);
}

static void rho_alone_without_baseline(void **state)
{
    (void)state;
    kg_gate g;
    kg_gate_defaults(&g);
    kg_evidence ev = point(0.85, 0);
    ev.have_e = 0;
    unsigned flags = 0;
    char reason[256];
    assert_int_equal(kg_decide(&g, &ev, &flags, reason, sizeof reason), KG_V_OK);
    assert_true(flags & KG_FLAG(NO_BASELINE));
    ev.rho = ev.rho_lo = ev.rho_hi = 0.7; /* decent, not near the roof: nothing else vouches */
    flags = 0;
    assert_int_equal(kg_decide(&g, &ev, &flags, reason, sizeof reason), KG_V_SLOW);
    ev.rho = ev.rho_lo = ev.rho_hi = 0.2;
    flags = 0;
    assert_int_equal(kg_decide(&g, &ev, &flags, reason, sizeof reason), KG_V_SLOW);
}

static void e_best_vectors(void **state)
{
    (void)state;
    FILE *f = fopen(KG_TEST_DATA "/ebest.txt", "r");
    assert_non_null(f);
    char line[256], name[64], want[32], flag[64], e[16], b[16];
    double rho;
    int rows = 0;
    kg_gate g;
    kg_gate_defaults(&g);
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        flag[0] = '\0';
        if (sscanf(line, "%63s %lf %15s %15s %31s %63s", name, &rho, e, b, want, flag) < 5)
            continue;
        kg_evidence ev = point(rho, 0);
        ev.have_e = strcmp(e, "-") != 0;
        ev.e = ev.e_lo = ev.e_hi = ev.have_e ? atof(e) : 0;
        ev.have_best = strcmp(b, "-") != 0;
        ev.best = ev.best_lo = ev.best_hi = ev.have_best ? atof(b) : 0;
        unsigned flags = 0;
        char reason[256];
        kg_verdict v = kg_decide(&g, &ev, &flags, reason, sizeof reason);
        if (strcmp(kg_verdict_name(v), want) != 0)
            fail_msg("%s: got %s, want %s (%s)", name, kg_verdict_name(v), want, reason);
        if (flag[0] && !(flags & (1u << kg_flag_parse(flag))))
            fail_msg("%s: flag %s not set (%s)", name, flag, reason);
        if (ev.have_best)
            assert_non_null(strstr(reason, "E_best"));
        rows++;
    }
    fclose(f);
    assert_int_equal(rows, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table3_vectors),
        cmocka_unit_test(straddling_interval_is_ambiguous),
        cmocka_unit_test(incorrect_beats_fast),
        cmocka_unit_test(rho_alone_without_baseline),
        cmocka_unit_test(e_best_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
