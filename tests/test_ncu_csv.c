/* The Nsight Compute CSV reader (core/ncu_csv.h) on recorded exports: a
 * real one from the H200 (ncu 2025.3.1, ==PROF== lines included), and
 * hand-made ones for the format's corners and its bad inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ncu_csv.h"

#ifndef KG_TEST_DATA
#define KG_TEST_DATA "tests/data"
#endif

/* The file's bytes in an exact-size buffer (no NUL after them). */
static char *slurp(const char *name, size_t *len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ncu/%s", KG_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int parse(const char *name, kg_kfacts *out, int max, int *n, char *warn, size_t wsize, kg_err *e)
{
    size_t len;
    char *text = slurp(name, &len);
    int rc = kg_ncu_csv_parse(text, len, out, max, n, warn, wsize, e);
    free(text);
    return rc;
}

/* A real export: `ncu --csv --page raw --metrics <kgate's default set>` of
 * layer_norm v1 at 4096x4096 on the H200, cut to its own three kernels
 * (five calls each). */
static void real_h200_export(void **state)
{
    (void)state;
    static kg_kfacts k[32];
    char warn[512];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse("h200_layer_norm_v1.csv", k, 32, &n, warn, sizeof warn, &e), 0);
    assert_int_equal(n, 15);
    assert_non_null(strstr(k[1].name, "ln_v1_row<__nv_bfloat16>("));
    assert_true(k[1].grid[0] == 4096 && k[1].grid[1] == 1 && k[1].block[0] == 128);
    assert_int_equal(k[1].regs, 32);
    assert_int_equal(k[1].launches, 1);
    assert_true(fabs(kg_kfacts_metric(&k[1], "smsp__issue_active.avg.per_cycle_active") - 0.25) < 1e-12);
    /* sums in base units, thousands separators gone */
    double sectors = kg_kfacts_metric(&k[1], "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
    assert_true(sectors > 1e6 && sectors == floor(sectors));
    /* kgate's default set leaves out the request count: said, not fatal */
    assert_non_null(strstr(warn, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"));
}

/* Two launches, a units row, thousands separators, quoted names with commas
 * and escaped quotes; the same with ncu's and the application's lines mixed
 * in gives the same kernels. */
static void clean_and_mixed(void **state)
{
    (void)state;
    kg_kfacts a[4], b[4];
    char warn[512];
    kg_err e = {0, ""};
    int na = 0, nb = 0;
    assert_int_equal(parse("clean_2k.csv", a, 4, &na, warn, sizeof warn, &e), 0);
    assert_int_equal(na, 2);
    assert_string_equal(a[0].name, "void ln_v2_kernel<__nv_bfloat16, 8>(const T1 *, const T1 *, const T1 *, T1 *, int, "
                                   "int, float)");
    assert_true(a[0].grid[0] == 8192 && a[0].block[0] == 256);
    assert_true(kg_kfacts_metric(&a[0], "dram__bytes_read.sum") == 268452352.0);
    assert_string_equal(a[1].name, "reduce_serial(const float *, float *, int)");
    assert_true(a[1].grid[0] == 1 && a[1].block[0] == 32);
    assert_int_equal(a[0].sms, 132);
    assert_int_equal(parse("mixed_2k.csv", b, 4, &nb, warn, sizeof warn, &e), 0);
    assert_int_equal(nb, na);
    for (int i = 0; i < na; i++) {
        assert_string_equal(a[i].name, b[i].name);
        assert_int_equal(a[i].n_m, b[i].n_m);
        for (int m = 0; m < a[i].n_m; m++)
            assert_true(kg_kfacts_metric(&b[i], a[i].m[m].name) == a[i].m[m].value);
    }
}

/* Units other than the base ones are converted; "no data" is unknown. */
static void units_are_converted(void **state)
{
    (void)state;
    kg_kfacts k[4];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse("units.csv", k, 4, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 2);
    assert_true(fabs(kg_kfacts_metric(&k[0], "gpu__time_duration.sum") - 131100) < 1e-6);  /* 131.10 usecond */
    assert_true(fabs(kg_kfacts_metric(&k[0], "dram__bytes_read.sum") - 536.87e6) < 1e-3);  /* Mbyte */
    assert_true(fabs(kg_kfacts_metric(&k[0], "dram__bytes.sum.per_second") - 4.09e9) < 1); /* Gbyte/second */
    assert_true(isnan(kg_kfacts_metric(&k[1], "gpu__time_duration.sum")));                /* no data */
    assert_true(isnan(kg_kfacts_metric(&k[1], "dram__bytes_read.sum")));                  /* empty */
}

/* An export with few columns parses; the missing ones are named. */
static void sparse_export_warns(void **state)
{
    (void)state;
    kg_kfacts k[4];
    char warn[1024];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse("sparse.csv", k, 4, &n, warn, sizeof warn, &e), 0);
    assert_true(n >= 1);
    assert_true(k[0].grid[0] == 1024); /* "(1,024, 1, 1)" */
    assert_int_equal(k[0].regs, 18);
    assert_true(strncmp(warn, "ncu CSV lacks: ", 15) == 0);
    assert_non_null(strstr(warn, "smsp__issue_active.avg.per_cycle_active"));
    assert_true(isnan(kg_kfacts_metric(&k[0], "sm__throughput.avg.pct_of_peak_sustained_elapsed"))); /* n/a */
}

/* Bad inputs: one line naming the problem, KG_EXIT_USAGE, nothing kept. */
static void bad_inputs(void **state)
{
    (void)state;
    const struct {
        const char *file, *msg;
    } cases[] = {
        {"bad_noheader.csv", "header"},
        {"bad_noname.csv", "Kernel Name"},
        {"bad_fields.csv", "line"},
        {"bad_truncated.csv", "line"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_kfacts k[4];
        kg_err e = {0, ""};
        int n = 7;
        int rc = parse(cases[i].file, k, 4, &n, NULL, 0, &e);
        if (rc != KG_EXIT_USAGE || !strstr(e.msg, cases[i].msg) || n != 0 || strchr(e.msg, '\n'))
            fail_msg("%s: rc %d n %d '%s', want '%s'", cases[i].file, rc, n, e.msg, cases[i].msg);
    }
    /* empty text, and a NUL inside a CSV line */
    kg_kfacts k[2];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(kg_ncu_csv_parse(NULL, 0, k, 2, &n, NULL, 0, &e), KG_EXIT_USAGE);
    static const char nul[] = "\"ID\",\"Kernel Name\"\n\"0\",\"a\0b\"\n";
    kg_err e2 = {0, ""};
    assert_int_equal(kg_ncu_csv_parse(nul, sizeof nul - 1, k, 2, &n, NULL, 0, &e2), KG_EXIT_USAGE);
}

/* More rows than room: the first max are kept, the rest still checked. */
static void rows_past_max(void **state)
{
    (void)state;
    kg_kfacts k[1];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse("clean_2k.csv", k, 1, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 1);
    assert_non_null(strstr(k[0].name, "ln_v2_kernel"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_h200_export),  cmocka_unit_test(clean_and_mixed), cmocka_unit_test(units_are_converted),
        cmocka_unit_test(sparse_export_warns), cmocka_unit_test(bad_inputs),   cmocka_unit_test(rows_past_max),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
