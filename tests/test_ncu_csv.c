/* Nsight Compute CSV import (diagnose/ncu_csv.h): the exports under
 * tests/data/ncu/ written as ncu 2025.3.1 writes them,
 * mixed with ==PROF== lines and application output, lacking columns, in
 * other units, and broken; plus inputs built here (over-long lines, more
 * metrics than kg_kfacts holds, text without a NUL). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "diagnose/ncu_csv.h"

#ifndef KG_TEST_DATA
#define KG_TEST_DATA "tests/data"
#endif
#define NCU KG_TEST_DATA "/ncu/"

static int near(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1, fabs(b));
}

/* The file's bytes in an exact-size buffer (no NUL after them). */
static char *slurp_exact(const char *name, size_t *len)
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

static int parse_file_exact(const char *name, kg_kfacts *out, int max, int *n, char *warn, size_t wsize, kg_err *e)
{
    size_t len;
    char *text = slurp_exact(name, &len);
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
    assert_int_equal(parse_file_exact("h200_layer_norm_v1.csv", k, 32, &n, warn, sizeof warn, &e), 0);
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


/* Parses a string as if it were a file's bytes, in a buffer of exactly its
 * length (no NUL after it) so that ASan sees any read past the end. */
static int parse_exact(const char *s, size_t len, kg_kfacts *out, int max, int *n, char *warn, size_t wsize,
                       kg_err *e)
{
    char *t = malloc(len ? len : 1);
    assert_non_null(t);
    memcpy(t, s, len);
    int rc = kg_ncu_csv_parse(t, len, out, max, n, warn, wsize, e);
    free(t);
    return rc;
}

static void clean_two_kernels(void **state)
{
    (void)state;
    static kg_kfacts k[4];
    char warn[512] = "x";
    kg_err e = {0, ""};
    int n = -1;
    assert_int_equal(kg_ncu_csv_parse_file(NCU "clean_2k.csv", k, 4, &n, warn, sizeof warn, &e), 0);
    assert_int_equal(n, 2);
    assert_string_equal(warn, ""); /* every rule metric is there */

    /* a demangled template name with commas inside the quotes */
    assert_string_equal(k[0].name, "void ln_v2_kernel<__nv_bfloat16, 8>(const T1 *, const T1 *, const T1 *, T1 *, "
                                   "int, int, float)");
    assert_int_equal(k[0].launches, 1);
    assert_true(k[0].block[0] == 256 && k[0].block[1] == 1 && k[0].block[2] == 1);
    assert_true(k[0].grid[0] == 8192 && k[0].grid[1] == 1 && k[0].grid[2] == 1);
    assert_int_equal(k[0].regs, 40);
    assert_int_equal(k[0].static_smem, 2048); /* "2,048" */
    assert_int_equal(k[0].dyn_smem, 0);
    assert_true(near(k[0].waves, 10.34));
    assert_true(near(k[0].occupancy, 0.75));
    assert_string_equal(k[0].limiter, "registers"); /* 6 < 8 (warps) < 32 */
    assert_int_equal(k[0].max_blocks_per_sm, 6);
    assert_int_equal(k[0].sms, 132);
    assert_int_equal(k[0].local_bytes, -1); /* ncu's raw page does not say */
    assert_true(k[0].time_share == -1);
    /* thousands separators, in base units */
    assert_true(near(kg_kfacts_metric(&k[0], "dram__bytes_read.sum"), 268452352));
    assert_true(near(kg_kfacts_metric(&k[0], "gpu__time_duration.sum"), 131104));
    assert_true(near(kg_kfacts_metric(&k[0], "smsp__sass_inst_executed_op_global_ld.sum"), 524288));
    assert_true(near(kg_kfacts_metric(&k[0], "launch__grid_size"), 8192));
    assert_true(near(kg_kfacts_metric(&k[0], "device__attribute_max_threads_per_block"), 1024));
    /* strings are not metrics; fields of their own are not repeated */
    assert_true(isnan(kg_kfacts_metric(&k[0], "device__attribute_display_name")));
    assert_true(isnan(kg_kfacts_metric(&k[0], "launch__registers_per_thread")));
    assert_true(isnan(kg_kfacts_metric(&k[0], "sm__maximum_warps_per_active_cycle_pct")));
    /* 35 metric columns: 10 have fields of their own, 1 is a string */
    assert_int_equal(k[0].n_m, 24);
    for (int i = 0; i < kg_ncu_n_rule_metrics; i++) /* the rule metrics first, in list order */
        assert_string_equal(k[0].m[i].name, kg_ncu_rule_metrics[i]);
    /* then launch__, the tool's, the device's */
    assert_string_equal(k[0].m[20].name, "launch__block_size");
    assert_string_equal(k[0].m[22].name, "profiler__replayer_passes");
    assert_string_equal(k[0].m[23].name, "device__attribute_max_threads_per_block");

    assert_string_equal(k[1].name, "reduce_serial(const float *, float *, int)");
    assert_true(k[1].block[0] == 32 && k[1].grid[0] == 1 && k[1].grid[2] == 1);
    assert_string_equal(k[1].limiter, "blocks");
    assert_int_equal(k[1].max_blocks_per_sm, 32);
    assert_true(near(k[1].occupancy, 0.5));
    assert_int_equal(k[1].dyn_smem, 128);
    assert_true(near(kg_kfacts_metric(&k[1], "gpu__time_duration.sum"), 12300000));
    assert_true(near(kg_kfacts_metric(&k[1], "sm__ctas_launched.sum"), 1));
    assert_true(near(kg_kfacts_metric(&k[1], "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"), 0.04));

    /* max caps what is kept, not what is checked */
    assert_int_equal(kg_ncu_csv_parse_file(NCU "clean_2k.csv", k + 2, 1, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 1);
    assert_memory_equal(&k[2], &k[0], sizeof k[0]);
}

/* ==PROF==, ==WARNING==, ==ERROR== and application lines anywhere (between
 * header, units and rows too), CRLF line ends: the same kernels. */
static void mixed_output_same_result(void **state)
{
    (void)state;
    static kg_kfacts a[2], b[2];
    char warn[256];
    kg_err e = {0, ""};
    int na = 0, nb = 0;
    assert_int_equal(kg_ncu_csv_parse_file(NCU "clean_2k.csv", a, 2, &na, NULL, 0, &e), 0);
    assert_int_equal(kg_ncu_csv_parse_file(NCU "mixed_2k.csv", b, 2, &nb, warn, sizeof warn, &e), 0);
    assert_int_equal(nb, 2);
    assert_string_equal(warn, "");
    assert_memory_equal(a, b, sizeof a);
}

/* An older, leaner export: no units row, three metrics. Parsed as far as it
 * goes; the warn line names what the rules will miss. */
static void missing_columns_warn(void **state)
{
    (void)state;
    static kg_kfacts k[2];
    char warn[2048];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(kg_ncu_csv_parse_file(NCU "sparse.csv", k, 2, &n, warn, sizeof warn, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(k[0].name, "copy_scalar(const float *, float *, unsigned long)");
    assert_true(k[0].grid[0] == 1024 && k[0].grid[1] == 1); /* "(1,024, 1, 1)" */
    assert_int_equal(k[0].regs, 18);
    assert_true(k[0].occupancy == -1 && k[0].waves == -1 && k[0].sms == -1);
    assert_string_equal(k[0].limiter, "");
    assert_int_equal(k[0].max_blocks_per_sm, -1);
    assert_true(near(kg_kfacts_metric(&k[0], "gpu__time_duration.sum"), 169000));
    assert_true(isnan(kg_kfacts_metric(&k[0], "sm__throughput.avg.pct_of_peak_sustained_elapsed"))); /* n/a */
    assert_int_equal(k[0].n_m, 2);

    assert_true(strncmp(warn, "ncu CSV lacks: dram__bytes_write.sum, ", 38) == 0);
    assert_null(strchr(warn, '\n'));
    int listed = 0;
    for (int i = 0; i < kg_ncu_n_rule_metrics; i++)
        listed += strstr(warn, kg_ncu_rule_metrics[i]) != NULL;
    assert_int_equal(listed, kg_ncu_n_rule_metrics - 2);
    assert_null(strstr(warn, "gpu__time_duration.sum"));
    assert_non_null(strstr(warn, "sm__inst_executed_pipe_tensor_op_gmma.sum"));

    /* a short buffer gets a cut line that says so */
    char small[40];
    assert_int_equal(kg_ncu_csv_parse_file(NCU "sparse.csv", k, 2, &n, small, sizeof small, &e), 0);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_string_equal(small + sizeof small - 4, "...");
    char tiny[2] = "x";
    assert_int_equal(kg_ncu_csv_parse_file(NCU "sparse.csv", k, 2, &n, tiny, sizeof tiny, &e), 0);
    assert_string_equal(tiny, "");
}

/* Units other than base ones are converted: usecond to ns, Mbyte and
 * Kbyte/block to bytes (per block), Gbyte/second to bytes per second; others are kept. */
static void unit_scaling(void **state)
{
    (void)state;
    static kg_kfacts k[2];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(kg_ncu_csv_parse_file(NCU "units.csv", k, 2, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 2);
    assert_true(near(kg_kfacts_metric(&k[0], "gpu__time_duration.sum"), 131100)); /* 131.10 usecond */
    assert_true(near(kg_kfacts_metric(&k[0], "dram__bytes_read.sum"), 536.87e6));
    assert_true(near(kg_kfacts_metric(&k[0], "dram__bytes.sum.per_second"), 4.09e9));
    assert_int_equal(k[0].static_smem, 48000); /* 48 Kbyte/block */
    assert_true(near(kg_kfacts_metric(&k[0], "lts__t_sector_hit_rate.pct"), 51));
    assert_true(near(kg_kfacts_metric(&k[0], "sm__cycles_elapsed.avg.per_second"), 1.98)); /* unknown: as is */
    assert_true(near(kg_kfacts_metric(&k[0], "smsp__cycles_active.avg"), 240112));
    /* "no data" and "" leave a metric out */
    assert_true(isnan(kg_kfacts_metric(&k[1], "gpu__time_duration.sum")));
    assert_true(isnan(kg_kfacts_metric(&k[1], "dram__bytes_read.sum")));
    assert_true(near(kg_kfacts_metric(&k[1], "dram__bytes.sum.per_second"), 4.09e9));
}

/* Bad inputs, as data: file, what the message must say. */
static void bad_files(void **state)
{
    (void)state;
    static const struct {
        const char *file, *says, *also;
    } cases[] = {
        {"bad_noheader.csv", "no ncu CSV header", "--csv --page raw"},
        {"bad_fields.csv", "line 5 has 45 fields", "header (line 2) has 46"},
        {"bad_truncated.csv", "line 3", "not closed"}, /* ends inside a quoted field */
        {"bad_noname.csv", "line 1", "\"Kernel Name\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        static kg_kfacts k[4];
        char path[512], warn[64] = "x";
        kg_err e = {0, ""};
        int n = 7;
        snprintf(path, sizeof path, NCU "%s", cases[i].file);
        assert_int_equal(kg_ncu_csv_parse_file(path, k, 4, &n, warn, sizeof warn, &e), KG_EXIT_USAGE);
        assert_int_equal(e.code, KG_EXIT_USAGE);
        assert_int_equal(n, 0);
        assert_string_equal(warn, "");
        assert_non_null(strstr(e.msg, cases[i].says));
        assert_non_null(strstr(e.msg, cases[i].also));
        assert_null(strchr(e.msg, '\n'));
    }
    kg_kfacts k;
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(kg_ncu_csv_parse_file(NCU "no_such_file.csv", &k, 1, &n, NULL, 0, &e), KG_EXIT_IO);
    assert_non_null(strstr(e.msg, "no_such_file.csv"));
    kg_err e2 = {0, ""};
    assert_int_equal(kg_ncu_csv_parse(NULL, 0, &k, 1, &n, NULL, 0, &e2), KG_EXIT_USAGE); /* empty */
}

/* A CSV line over 1 MiB is refused with its number, wherever it is; an
 * application's long line is skipped. A NUL inside a CSV line is refused. */
static void overlong_and_nul_lines(void **state)
{
    (void)state;
    const char *head = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n";
    size_t big = KG_NCU_LINE_MAX + 16, hl = strlen(head);
    char *t = malloc(hl + 2 * (big + 1) + 64);
    assert_non_null(t);
    /* line 2: application output, 1 MiB of it; line 3: a kernel; line 4: a CSV line too long */
    size_t u = 0;
    memcpy(t, head, hl);
    u = hl;
    memset(t + u, 'a', big);
    u += big;
    t[u++] = '\n';
    const char *row = "\"0\",\"k\",\"5\"\n";
    memcpy(t + u, row, strlen(row));
    u += strlen(row);
    size_t ok_len = u;
    t[u++] = '"';
    memset(t + u, 'b', big);
    u += big;
    kg_kfacts k[2];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse_exact(t, ok_len, k, 2, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 1);
    assert_true(near(kg_kfacts_metric(&k[0], "gpu__time_duration.sum"), 5));
    assert_int_equal(parse_exact(t, u, k, 2, &n, NULL, 0, &e), KG_EXIT_USAGE);
    assert_int_equal(n, 0);
    assert_non_null(strstr(e.msg, "line 4 is longer than 1 MiB"));
    free(t);

    static const char nul[] = "\"ID\",\"Kernel Name\"\n\"0\",\"a\0b\"\n";
    kg_err e2 = {0, ""};
    assert_int_equal(parse_exact(nul, sizeof nul - 1, k, 2, &n, NULL, 0, &e2), KG_EXIT_USAGE);
    assert_non_null(strstr(e2.msg, "line 2 holds a NUL byte"));
}

/* Quoting, dims, names and numbers in small inputs built here; the text has
 * no NUL after it. */
static void quoting_and_fields(void **state)
{
    (void)state;
    static const char t[] =
        "\xEF\xBB\xBF" /* a BOM */
        "\"ID\",\"Kernel Name\",\"Block Size\",\"Grid Size\",\"x__a.sum\",\"x__b.sum\",\"not a metric\",\"x__c.sum\"\n"
        "\"0\",\"k<\"\"a,b\"\">(int, float)\",\"(65,536, 2, 3)\",\"(256,1,1)\",\"-1.5e3\",\"1,2,3\",\"7\",\"nan\"\n"
        "\"1\",\"\",\"(1, 2)\",\"256, 1, 1\",\"inf\",\"0x10\",\"\",\"12 \"\n"
        "\"2\",\"last\",\"( 4 , 5 , 6 )\",\"(9223372036854775807, 1, 1)\",\"1e999\",\"--1\",\"\",\"\"";
    kg_kfacts k[3];
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse_exact(t, sizeof t - 1, k, 3, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 3);
    assert_string_equal(k[0].name, "k<\"a,b\">(int, float)");
    assert_true(k[0].block[0] == 65536 && k[0].block[1] == 2 && k[0].block[2] == 3);
    assert_true(k[0].grid[0] == 256 && k[0].grid[1] == 1 && k[0].grid[2] == 1);
    assert_true(near(kg_kfacts_metric(&k[0], "x__a.sum"), -1500));
    assert_true(near(kg_kfacts_metric(&k[0], "x__b.sum"), 123));
    assert_true(isnan(kg_kfacts_metric(&k[0], "x__c.sum")));
    assert_true(isnan(kg_kfacts_metric(&k[0], "not a metric")));
    assert_int_equal(k[0].n_m, 2);
    /* malformed dims stay unknown; non-numbers are absent */
    assert_string_equal(k[1].name, "");
    assert_true(k[1].block[0] == -1 && k[1].grid[0] == -1);
    assert_int_equal(k[1].n_m, 0);
    assert_true(k[2].block[0] == 4 && k[2].block[2] == 6);
    assert_true(k[2].grid[0] == 9223372036854775807LL);
    assert_int_equal(k[2].n_m, 0);

    /* a long UTF-8 name is cut before a character, not inside one */
    char name[400], line[600];
    size_t u = 0;
    while (u + 2 < sizeof name - 1) {
        name[u++] = '\xC3';
        name[u++] = '\xA9'; /* é */
    }
    name[u] = '\0';
    int len = snprintf(line, sizeof line, "\"ID\",\"Kernel Name\"\n\"0\",\"x%s\"\n", name);
    assert_true(len > 0 && (size_t)len < sizeof line);
    assert_int_equal(parse_exact(line, (size_t)len, k, 1, &n, NULL, 0, &e), 0);
    size_t kl = strlen(k[0].name);
    assert_true(kl <= KG_KNAME_MAX - 1 && kl >= KG_KNAME_MAX - 3);
    assert_int_equal(kl % 2, 1); /* "x" then whole two-byte characters */
    assert_int_equal((unsigned char)k[0].name[kl - 1], 0xA9);

    /* quoted text before the header is not ncu's; a second header starts over */
    static const char two[] = "\"hello, world\"\n"
                              "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"0\",\"a\",\"1\"\n"
                              "\"ID\",\"Kernel Name\",\"Grid Size\",\"dram__bytes_read.sum\"\n"
                              "\"\",\"\",\"\",\"Kbyte\"\n\"0\",\"b\",\"(2, 1, 1)\",\"3\"\n";
    char warn[2048];
    assert_int_equal(parse_exact(two, sizeof two - 1, k, 3, &n, warn, sizeof warn, &e), 0);
    assert_int_equal(n, 2);
    assert_true(near(kg_kfacts_metric(&k[0], "gpu__time_duration.sum"), 1));
    assert_true(k[1].grid[0] == 2 && near(kg_kfacts_metric(&k[1], "dram__bytes_read.sum"), 3000));
    assert_true(isnan(kg_kfacts_metric(&k[1], "gpu__time_duration.sum")));
    /* each metric appears in one header only: both are missing somewhere */
    assert_non_null(strstr(warn, "gpu__time_duration.sum"));
    assert_non_null(strstr(warn, "dram__bytes_read.sum"));

    /* a header without data rows: no kernels, no error */
    static const char only[] = "\"ID\",\"Kernel Name\"\n\"\",\"\"\n";
    assert_int_equal(parse_exact(only, sizeof only - 1, k, 1, &n, NULL, 0, &e), 0);
    assert_int_equal(n, 0);
}

/* More metric columns than kg_kfacts holds: the rule metrics come first
 * wherever their columns are, the rest in column order, none past the end. */
static void metrics_table_full(void **state)
{
    (void)state;
    enum { NX = 70 };
    char *t = malloc(8192);
    assert_non_null(t);
    size_t u = (size_t)sprintf(t, "\"ID\",\"Kernel Name\",\"launch__grid_size\"");
    for (int i = 0; i < NX; i++)
        u += (size_t)sprintf(t + u, ",\"x__m%02d.sum\"", i);
    u += (size_t)sprintf(t + u, ",\"device__attribute_clock_rate\",\"gpu__time_duration.sum\"\n\"0\",\"k\",\"8\"");
    for (int i = 0; i < NX; i++)
        u += (size_t)sprintf(t + u, ",\"%d\"", i);
    u += (size_t)sprintf(t + u, ",\"1,980,000\",\"1,234\"\n");
    kg_kfacts k;
    kg_err e = {0, ""};
    int n = 0;
    assert_int_equal(parse_exact(t, u, &k, 1, &n, NULL, 0, &e), 0);
    free(t);
    assert_int_equal(n, 1);
    assert_int_equal(k.n_m, KG_KMETRICS_MAX);
    assert_string_equal(k.m[0].name, "gpu__time_duration.sum");
    assert_true(near(k.m[0].value, 1234));
    assert_true(near(kg_kfacts_metric(&k, "x__m00.sum"), 0));
    char last[32];
    snprintf(last, sizeof last, "x__m%02d.sum", KG_KMETRICS_MAX - 2);
    assert_true(near(kg_kfacts_metric(&k, last), KG_KMETRICS_MAX - 2));
    snprintf(last, sizeof last, "x__m%02d.sum", KG_KMETRICS_MAX - 1);
    assert_true(isnan(kg_kfacts_metric(&k, last)));
    /* launch and device attributes come after every counter: dropped here */
    assert_true(isnan(kg_kfacts_metric(&k, "launch__grid_size")));
    assert_true(isnan(kg_kfacts_metric(&k, "device__attribute_clock_rate")));
}

static void rule_metric_list(void **state)
{
    (void)state;
    assert_int_equal(kg_ncu_n_rule_metrics, 20);
    for (int i = 0; i < kg_ncu_n_rule_metrics; i++) {
        assert_non_null(strstr(kg_ncu_rule_metrics[i], "__"));
        assert_true(strlen(kg_ncu_rule_metrics[i]) < sizeof(((kg_metric *)0)->name));
        for (int j = 0; j < i; j++)
            assert_true(strcmp(kg_ncu_rule_metrics[i], kg_ncu_rule_metrics[j]) != 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_h200_export),
        cmocka_unit_test(clean_two_kernels),
        cmocka_unit_test(mixed_output_same_result),
        cmocka_unit_test(missing_columns_warn),
        cmocka_unit_test(unit_scaling),
        cmocka_unit_test(bad_files),
        cmocka_unit_test(overlong_and_nul_lines),
        cmocka_unit_test(quoting_and_fields),
        cmocka_unit_test(metrics_table_full),
        cmocka_unit_test(rule_metric_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
