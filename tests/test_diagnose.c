/* The diagnosis rules (diagnose/diagnose.h) on recorded counter rows: the H200
 * signatures of planted kernels (measured with ncu and the CUPTI Range
 * Profiler) and constructed rows for the causes beyond them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "diagnose/diag_json.h"
#include "diagnose/diagnose.h"
#include "base/kg.h"

static kg_diag_params P;

static int setup(void **state)
{
    (void)state;
    kg_diag_params_defaults(&P);
    return 0;
}

/* A kernel with a launch and a list of "metric=value" pairs (NULL-ended). */
static kg_kfacts kernel(const char *name, long long grid, int block, ...)
{
    kg_kfacts k;
    va_list ap;
    kg_kfacts_init(&k);
    snprintf(k.name, sizeof k.name, "%s", name);
    k.grid[0] = grid, k.grid[1] = k.grid[2] = 1;
    k.block[0] = block, k.block[1] = k.block[2] = 1;
    k.launches = 1;
    k.sms = 132;
    va_start(ap, block);
    for (const char *m; (m = va_arg(ap, const char *));)
        kg_kfacts_set(&k, m, va_arg(ap, double));
    va_end(ap);
    return k;
}

static int diagnose(const kg_kfacts *k, int nk, const kg_diag_ctx *c, kg_cause *out)
{
    int n = 0;
    kg_diagnose(k, nk, c, &P, out, KG_CAUSES_MAX, &n);
    return n;
}

#define LS "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"
#define BAR "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"
#define LAT "smsp__average_warp_latency_per_inst_issued.ratio"
#define ISSUE "smsp__issue_active.avg.per_cycle_active"
#define DRAM "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
#define OCC "sm__warps_active.avg.pct_of_peak_sustained_active"
#define USE_LD "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"
#define USE_ST "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"
#define LD_BYTES "smsp__sass_data_bytes_mem_global_op_ld.sum"
#define LD_INST "smsp__sass_inst_executed_op_global_ld.sum"
#define CTAS "sm__ctas_launched.sum"
#define L2HIT "lts__t_sector_hit_rate.pct"
#define TENSOR "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
#define RD "dram__bytes_read.sum"
#define WR "dram__bytes_write.sum"
#define LOC_LD "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"
#define LOC_ST "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"
#define GLD "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
#define DUR "gpu__time_duration.sum"

/* A planted kernel on the H200: 1 block x 32 threads serial reduce: DRAM 0.04%,
 * long-scoreboard 15.7/18.8, achieved occupancy 1.6%, one CTA. */
static void serial_reduce_is_rc0a(void **state)
{
    (void)state;
    kg_kfacts k = kernel("serial_reduce", 1, 32, DRAM, 0.04, L2HIT, 3.0, USE_LD, 100.0, LS, 15.7, LAT, 18.8, BAR,
                         0.0, ISSUE, 0.05, OCC, 1.6, CTAS, 1.0, NULL);
    kg_diag_ctx c = {.reduction = 1, .rho = 0.004};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC0a");
    assert_true(out[0].score >= P.score_high);
    assert_non_null(strstr(out[0].evidence, "long-scoreboard stalls 0.84"));
    /* RC2a's few-warps case defers to RC0a on the same kernel */
    for (int i = 0; i < n; i++)
        assert_string_not_equal(out[i].id, "RC2a");
}

/* Recorded on the H200 (run --diagnose): layer_norm v1's row
 * kernel, one 128-thread block a row in which one thread reduces while
 * the others wait: barrier 0.71 of warp latency, DRAM 4%. */
static void block_waiting_on_one_thread_is_rc0a(void **state)
{
    (void)state;
    kg_kfacts k = kernel("ln_v1_row", 8192, 128, DRAM, 4.0, LS, 8.6, BAR, 29.1, LAT, 41.0, ISSUE, 0.14, OCC, 36.5,
                         USE_LD, 22.2, CTAS, 8192.0, NULL);
    kg_diag_ctx c = {.reduction = 1, .rho = 0.021};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC0a");
    assert_non_null(strstr(out[0].evidence, "barrier stalls 0.71"));
    assert_true(fabs(out[0].saving - 0.96) < 1e-9);
}

/* Recorded on the H200: logsumexp v1 keeps row slices in a local array,
 * 64 threads a row: 255 registers, 68% of the L1 sectors local, 4 global
 * load instructions a warp. Long-scoreboard stalls are local-memory waits:
 * RC3, not RC0a, though few warps run; and not the whole-row RC0a at a
 * short row either, where the array is as large as the row (1104 B for 256
 * fp32) but a warp issues a few loads, not the row's. */
static void local_latency_is_rc3_not_rc0a(void **state)
{
    (void)state;
    kg_kfacts k = kernel("ls_v1", 8192, 64, DRAM, 12.2, LS, 0.85, LAT, 1.0, ISSUE, 0.06, OCC, 12.3, USE_LD, 100.0,
                         LOC_LD, 68.0, LOC_ST, 0.0, GLD, 32.0, LD_INST, 16384.0 * 4, NULL);
    k.regs = 255, k.local_bytes = 1104;
    const kg_diag_ctx cs[] = {{.reduction = 1, .row = 16384, .elem = 4, .rho = 0.054},
                              {.reduction = 1, .row = 256, .elem = 4, .rho = 0.054}};
    for (int t = 0; t < 2; t++) {
        kg_cause out[KG_CAUSES_MAX];
        int n = diagnose(&k, 1, &cs[t], out);
        assert_true(n >= 1);
        assert_string_equal(out[0].id, "RC3");
        for (int i = 0; i < n; i++)
            assert_string_not_equal(out[i].id, "RC0a");
    }
}

/* Recorded on the H200 (run --diagnose): TileLang's naive
 * layer_norm, T.serial over a row-sized fp32 fragment: 32768 B of local
 * memory per thread for bf16 rows of 8192, 8216 global load instructions
 * per warp (the walk), 92% of the L1 sectors local, DRAM 87% busy with the
 * spill. The paper's RC0a (its fix, T.reduce, removes the walk and the
 * spill with it): RC0a first, RC3 after it and saying so. */
static kg_kfacts tl_naive_norm(void)
{
    kg_kfacts k = kernel("tl_layer_norm_naive", 8192, 128, DRAM, 87.1, LS, 29.7, LAT, 63.0, BAR, 0.0, ISSUE, 0.06,
                         OCC, 24.5, USE_LD, 10.4, LOC_LD, 2147483648.0, LOC_ST, 1073741824.0, GLD, 281018368.0,
                         LD_INST, 269221888.0, NULL);
    k.regs = 115, k.local_bytes = 32768;
    return k;
}

static int fires_rc0a(const kg_kfacts *k, const kg_diag_ctx *c)
{
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(k, 1, c, out);
    for (int i = 0; i < n; i++)
        if (strcmp(out[i].id, "RC0a") == 0)
            return 1;
    return 0;
}

static void whole_row_per_thread_is_rc0a(void **state)
{
    (void)state;
    kg_kfacts k = tl_naive_norm();
    kg_diag_ctx c = {.reduction = 1, .row = 8192, .elem = 2, .rho = 0.003};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 2);
    assert_string_equal(out[0].id, "RC0a");
    assert_true(fabs(out[0].saving - 0.997) < 1e-9); /* all but the roof */
    assert_non_null(strstr(out[0].evidence, "32768 B of local memory per thread, a whole row of 8192"));
    assert_non_null(strstr(out[0].evidence, "8216 global load instructions per warp"));
    int rc3 = 0;
    for (int i = 1; i < n; i++)
        rc3 |= strcmp(out[i].id, "RC3") == 0 && strstr(out[i].evidence, "RC0a's rewrite removes it") != NULL;
    assert_true(rc3);
    /* the threshold: a row of the data dtype, no less */
    k.local_bytes = 16384;
    assert_true(fires_rc0a(&k, &c));
    k.local_bytes = 16383;
    assert_false(fires_rc0a(&k, &c));
    c.elem = 4; /* fp32 data: 32768 B is the row */
    k.local_bytes = 32767;
    assert_false(fires_rc0a(&k, &c));
    k.local_bytes = 32768;
    assert_true(fires_rc0a(&k, &c));
    /* not without a catalog reduction's row, nor without the walk's loads */
    kg_diag_ctx none = c;
    none.row = 0;
    assert_false(fires_rc0a(&k, &none));
    none = c;
    none.reduction = 0;
    assert_false(fires_rc0a(&k, &none));
    kg_kfacts few = k;
    kg_kfacts_set(&few, LD_INST, 32768.0 * 4095); /* under half a row a warp */
    assert_false(fires_rc0a(&few, &c));
    kg_kfacts_set(&few, LD_INST, NAN); /* no counters: no claim */
    assert_false(fires_rc0a(&few, &c));
}

/* Recorded on the H200: max_reduction v2 writes one value a row (6.25% of
 * each store sector used) but its stores are 0.02% of the sectors: no RC1. */
static void few_narrow_stores_are_not_rc1(void **state)
{
    (void)state;
    kg_kfacts k = kernel("mx_v2", 8192, 256, DRAM, 88.8, USE_LD, 100.0, USE_ST, 6.25, OCC, 60.5,
                         GLD, 16777216.0, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", 4096.0, NULL);
    kg_diag_ctx c = {.reduction = 1, .rho = 1.0};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    for (int i = 0; i < n; i++)
        assert_true(out[i].score < P.score_high);
}

/* The same signature on an operator that does not reduce is a launch
 * configuration problem (too few warps), not a serial reduction. */
static void few_warps_without_reduction_is_rc2a(void **state)
{
    (void)state;
    kg_kfacts k = kernel("tiny_grid", 64, 256, DRAM, 12.0, USE_LD, 100.0, LS, 15.0, LAT, 18.0, ISSUE, 0.1, OCC,
                         6.0, CTAS, 64.0, LD_BYTES, 16.0 * 32 * 1000, LD_INST, 1000.0, NULL);
    kg_diag_ctx c = {.rho = 0.1};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC2a");
    assert_non_null(strstr(out[0].evidence, "64 blocks, 512 warps for 132 SMs"));
    assert_true(fabs(out[0].saving - (1 - 512.0 / (132 * 32))) < 1e-9);
}

/* A planted kernel on the H200: stride-33 copy: 12.5% of each sector used, DRAM 74.9%. */
static void stride_copy_is_rc1(void **state)
{
    (void)state;
    kg_kfacts k = kernel("stride33", 65536, 256, DRAM, 74.9, L2HIT, 11.6, USE_LD, 12.5, LS, 230.0, LAT, 237.0,
                         ISSUE, 0.1, OCC, 99.0, CTAS, 65536.0, RD, 4.08e9, WR, 0.268e9, NULL);
    kg_diag_ctx c = {.bytes = 0.536e9, .rho = 0.1};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC1");
    /* 28 of 32 bytes wasted, weighed by the busier of DRAM (74.9%) and the warps (99%) */
    assert_true(fabs(out[0].saving - 0.875 * 0.99) < 1e-9);
    /* the excess DRAM is RC1's doing: no separate DRAM cause */
    for (int i = 0; i < n; i++)
        assert_string_not_equal(out[i].id, "DRAM");
}

/* A planted kernel on the H200: scalar copy: coalesced, 4 bytes a load, no LDG.128. */
static void scalar_copy_is_rc0b(void **state)
{
    (void)state;
    kg_kfacts k = kernel("scalar_copy", 65536, 256, DRAM, 63.5, USE_LD, 100.0, LS, 89.0, LAT, 94.0, ISSUE, 0.3,
                         OCC, 95.0, LD_BYTES, 4.0 * 32 * 1000, LD_INST, 1000.0, NULL);
    k.sass.found = 1, k.sass.ldg_narrow = 1;
    kg_diag_ctx c = {.rho = 0.6};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_int_equal(n, 1);
    assert_string_equal(out[0].id, "RC0b");
    assert_true(fabs(out[0].saving - 0.25 * 0.75) < 1e-9);
    assert_non_null(strstr(out[0].evidence, "4.0 B per thread"));
    assert_string_equal(out[0].locus, "codegen"); /* scalar loads: the compiler's vectorization */
    /* the float4 copy of the same table fires nothing */
    kg_kfacts f = kernel("float4_copy", 65536, 256, DRAM, 81.6, USE_LD, 100.0, LS, 276.0, LAT, 281.0, ISSUE, 0.2,
                         OCC, 96.0, LD_BYTES, 16.0 * 32 * 1000, LD_INST, 1000.0, NULL);
    f.sass.found = 1, f.sass.ldg_128 = 2;
    assert_int_equal(diagnose(&f, 1, &c, out), 0);
}

/* A long kernel's diagnosis leaves the SASS-patched counters out
 * (--diagnose-patched-max): RC1 has no sector use to judge and does not
 * fire; RC0b falls back to the SASS's load widths and says the width was
 * not measured. */
static void without_patched_counters(void **state)
{
    (void)state;
    kg_kfacts k = kernel("stride33", 65536, 256, DRAM, 74.9, L2HIT, 11.6, LS, 230.0, LAT, 237.0, ISSUE, 0.1, OCC,
                         99.0, CTAS, 65536.0, RD, 4.08e9, WR, 0.268e9, NULL);
    kg_diag_ctx c = {.bytes = 0.536e9, .rho = 0.1};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    for (int i = 0; i < n; i++)
        assert_string_not_equal(out[i].id, "RC1");
    kg_kfacts s = kernel("scalar_copy", 65536, 256, DRAM, 63.5, LS, 89.0, LAT, 94.0, ISSUE, 0.3, OCC, 95.0, NULL);
    s.sass.found = 1, s.sass.ldg_narrow = 1;
    kg_diag_ctx c2 = {.rho = 0.6};
    n = diagnose(&s, 1, &c2, out);
    assert_int_equal(n, 1);
    assert_string_equal(out[0].id, "RC0b");
    assert_true(fabs(out[0].saving - P.narrow_cost * (1 - 2.0 / 16)) < 1e-9);
    assert_non_null(strstr(out[0].evidence, "width not measured"));
    /* without SASS either, nothing says the loads are narrow */
    s.sass.found = 0;
    assert_int_equal(diagnose(&s, 1, &c2, out), 0);
}

/* A planted kernel on the H200: __maxnreg__(32) with 552 B spilled: local ld/st sectors
 * 102 M / 32 M against the global loads' 67 M. */
static void spill_is_rc3(void **state)
{
    (void)state;
    kg_kfacts k = kernel("spill", 65536, 256, DRAM, 79.0, USE_LD, 82.0, LS, 45.5, LAT, 93.7, ISSUE, 0.3, OCC, 94.0,
                         LOC_LD, 102e6, LOC_ST, 32e6, GLD, 67e6, NULL);
    k.regs = 32, k.local_bytes = 624;
    kg_diag_ctx c = {.rho = 0.15};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC3");
    assert_true(fabs(out[0].saving - 134.0 / 201.0) < 1e-9);
    assert_non_null(strstr(out[0].evidence, "624 B of local memory"));
}

/* A planted kernel on the H200: cuBLAS bf16 8192^3: tensor pipe 96.9%, L2 hit 73%,
 * DRAM 18.9%: healthy, nothing fires. */
static void healthy_gemm_fires_nothing(void **state)
{
    (void)state;
    kg_kfacts k = kernel("nvjet_sm90", 132, 384, DRAM, 18.9, L2HIT, 73.0, TENSOR, 96.9, OCC, 18.0, CTAS, 132.0,
                         "sm__inst_executed_pipe_tensor_op_gmma.sum", 4e7, NULL);
    k.occupancy = 0.1875;
    kg_diag_ctx c = {.matrix = 1, .rho = 0.97, .e_best = 1.0, .bytes = 0.4e9};
    kg_cause out[KG_CAUSES_MAX];
    assert_int_equal(diagnose(&k, 1, &c, out), 0);
}

/* A matrix workload on CUDA cores. */
static void fma_gemm_is_notc(void **state)
{
    (void)state;
    kg_kfacts k = kernel("mm_v1", 16384, 256, DRAM, 5.0, L2HIT, 90.0, TENSOR, 0.0, OCC, 60.0, CTAS, 16384.0, NULL);
    k.sass.found = 1, k.sass.ldg_narrow = 2;
    kg_diag_ctx c = {.matrix = 1, .rho = 0.03};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "NOTC");
    assert_true(out[0].score >= P.score_high);
}

/* A tensor-core GEMM that streams from DRAM. */
static void streaming_gemm_is_rc2b(void **state)
{
    (void)state;
    kg_kfacts k = kernel("gemm_big", 4096, 256, DRAM, 85.0, L2HIT, 30.0, TENSOR, 70.0, OCC, 20.0, CTAS, 4096.0,
                         RD, 6.0e9, WR, 0.5e9, NULL);
    kg_diag_ctx c = {.matrix = 1, .rho = 0.5, .bytes = 1.6e9};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC2b");
    assert_true(fabs(out[0].saving - 0.5) < 1e-9); /* 1 - 1.6/6.5 = 0.754, capped at 1 - rho */
}

/* Near the roof, yet a library is twice as fast: the algorithm. The saving
 * is not capped by the roof (the work model is what it questions). */
static void near_roof_but_slower_is_rc4(void **state)
{
    (void)state;
    kg_kfacts k = kernel("two_pass", 1024, 256, DRAM, 90.0, USE_LD, 100.0, NULL);
    kg_diag_ctx c = {.rho = 0.9, .e_best = 0.5};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC4");
    assert_true(fabs(out[0].saving - 0.5) < 1e-9);
    assert_string_equal(out[0].kernel, "");
}

/* Three passes over the data where one would do: RC0b's round trip, with
 * the time shares taken from the measured durations. */
static void round_trip_passes_are_rc0b(void **state)
{
    (void)state;
    kg_kfacts k[3] = {
        kernel("to_fp32", 4096, 256, DRAM, 85.0, USE_LD, 100.0, RD, 0.134e9, WR, 0.268e9, DUR, 100e3, NULL),
        kernel("work", 4096, 256, DRAM, 85.0, USE_LD, 100.0, RD, 0.268e9, WR, 0.268e9, DUR, 150e3, NULL),
        kernel("from_fp32", 4096, 256, DRAM, 85.0, USE_LD, 100.0, RD, 0.268e9, WR, 0.134e9, DUR, 100e3, NULL),
    };
    kg_diag_ctx c = {.rho = 0.2, .bytes = 0.268e9};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(k, 3, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC0b");
    assert_non_null(strstr(out[0].evidence, "3 kernels per call"));
    assert_string_equal(out[0].locus, "authoring"); /* the .float() passes are in the author's source */
    /* the passes besides the main one: 1 - 150/350 of the time */
    assert_true(fabs(out[0].saving - (1 - 150.0 / 350.0)) < 1e-9);
}

/* Where each fix belongs: every rule has one of the paper's three loci, and
 * a results file's locus is kept only when it is one of that id's own. */
static void every_cause_has_a_locus(void **state)
{
    (void)state;
    for (int i = 0; i < kg_diag_rule_count(); i++) {
        const char *l = kg_diag_rule_locus(i);
        assert_non_null(l);
        assert_true(!strcmp(l, "authoring") || !strcmp(l, "codegen") || !strcmp(l, "library"));
    }
    assert_string_equal(kg_diag_locus_of("RC0a"), "authoring");
    assert_string_equal(kg_diag_locus_of("RC4"), "library");
    assert_string_equal(kg_diag_locus_of("RC2b"), "library");
    assert_string_equal(kg_diag_locus_of("RC3"), "codegen");
    assert_null(kg_diag_locus_of("RC9"));
    kg_cause c, back;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "RC0b");
    c.locus = "authoring";
    c.title = kg_diag_title_of("RC0b");
    c.hint = kg_diag_hint_of("RC0b");
    c.score = c.saving = 0.5, c.headroom = 2;
    kg_err err = {0, ""};
    cJSON *j = kg_cause_to_cjson(&c);
    assert_string_equal(cJSON_GetObjectItem(j, "locus")->valuestring, "authoring");
    assert_int_equal(kg_cause_from_cjson(j, &back, &err), 0);
    assert_string_equal(back.locus, "authoring"); /* RC0b's round trip */
    cJSON_ReplaceItemInObject(j, "locus", cJSON_CreateString("library"));
    assert_int_equal(kg_cause_from_cjson(j, &back, &err), 0);
    assert_string_equal(back.locus, "codegen"); /* not RC0b's: its first rule's */
    cJSON_DeleteItemFromObject(j, "locus");
    assert_int_equal(kg_cause_from_cjson(j, &back, &err), 0);
    assert_string_equal(back.locus, "codegen"); /* a result from before the field */
    cJSON_Delete(j);
}

/* Many launches in one call: each costs a launch gap. */
static void many_launches_are_launch_bound(void **state)
{
    (void)state;
    kg_kfacts k = kernel("small", 132, 256, DRAM, 70.0, USE_LD, 100.0, NULL);
    k.launches = 8;
    kg_diag_ctx c = {.rho = 0.2, .t_s = 20e-6, .launches = 8};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "LAUNCH");
    assert_true(fabs(out[0].saving - 7 * 2e-6 / 20e-6) < 1e-9);
    assert_non_null(strstr(out[0].evidence, "8 kernel launches per call"));
    /* four launches are not launch-bound */
    c.launches = 4;
    n = diagnose(&k, 1, &c, out);
    for (int i = 0; i < n; i++)
        assert_string_not_equal(out[i].id, "LAUNCH");
}

/* The cause `id` among out[0..n), or NULL. */
static const kg_cause *find_cause(const kg_cause *out, int n, const char *id)
{
    for (int i = 0; i < n; i++)
        if (strcmp(out[i].id, id) == 0)
            return &out[i];
    return NULL;
}

/* Host work in the launch call that the GPU work does not hide is
 * launch-bound too: 2050 us on the host beside 250 us on the GPU is judged
 * on 2050 us (judge/verdict.h), of which 1800 are a fix's saving; 200 us on
 * the host hide behind the GPU work. */
static void host_work_is_launch_bound(void **state)
{
    (void)state;
    kg_kfacts k = kernel("relu", 65536, 256, DRAM, 85.0, USE_LD, 100.0, NULL);
    /* rho of the judged time: 0.9 on the GPU's 250 us, 0.11 on 2050 us */
    kg_diag_ctx c = {.rho = 0.11, .t_s = 250e-6, .host_s = 2050e-6, .launches = 1};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "LAUNCH");
    assert_true(fabs(out[0].saving - 1800.0 / 2050.0) < 1e-9);
    assert_non_null(strstr(out[0].evidence, "holds the host 2050.0 us, past what its 250.0 us of GPU work"));
    assert_non_null(strstr(out[0].evidence, "judged on 2050.0 us, 1800.0 us more than its GPU time"));
    c.host_s = 200e-6;
    n = diagnose(&k, 1, &c, out);
    assert_null(find_cause(out, n, "LAUNCH"));
    /* the charge is the gate's (time/judged), made with the candidate's
     * allowance: 90 us on the host beside 14.1 us, judged on 14.1 us (a
     * Python callable's 100 us), is no launch cause; a result without
     * time/judged gets a C launch's 50 us: judged on 65.9 us */
    kg_diag_ctx p = {.rho = 0.1, .t_s = 14.1e-6, .host_s = 90e-6, .judged_s = 14.1e-6, .launches = 1};
    n = diagnose(&k, 1, &p, out);
    assert_null(find_cause(out, n, "LAUNCH"));
    p.judged_s = 0;
    n = diagnose(&k, 1, &p, out);
    const kg_cause *launch = find_cause(out, n, "LAUNCH");
    assert_non_null(launch);
    assert_true(fabs(launch->saving - 51.8 / 65.9) < 1e-9);
}

/* Uncoalesced stores alone fire RC1 (a transpose's writes). */
static void strided_stores_are_rc1(void **state)
{
    (void)state;
    kg_kfacts k = kernel("transpose_v1", 65536, 256, DRAM, 80.0, USE_LD, 100.0, USE_ST, 6.25, NULL);
    kg_diag_ctx c = {.rho = 0.08};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    assert_true(n >= 1);
    assert_string_equal(out[0].id, "RC1");
    assert_non_null(strstr(out[0].evidence, "stores use 2.0 of 32 bytes"));
}

/* Static facts alone (no counters): spills from SASS, no tensor cores. */
static void static_facts_alone(void **state)
{
    (void)state;
    kg_kfacts k = kernel("ls_v1", 8192, 64, NULL);
    k.sass.found = 1, k.sass.ldl = 12, k.sass.stl = 10;
    k.local_bytes = 256;
    kg_diag_ctx c = {.reduction = 1};
    kg_cause out[KG_CAUSES_MAX];
    int n = diagnose(&k, 1, &c, out);
    int rc3 = 0;
    for (int i = 0; i < n; i++)
        rc3 |= strcmp(out[i].id, "RC3") == 0 && strstr(out[i].evidence, "12 LDL, 10 STL") != NULL;
    assert_true(rc3);
}

static void thresholds_are_data(void **state)
{
    (void)state;
    kg_diag_params p;
    kg_err e = {0, ""};
    kg_diag_params_defaults(&p);
    assert_true(kg_diag_param_count() >= 15);
    assert_int_equal(kg_diag_params_set(&p, "busy_max=0", &e), 0);
    assert_true(p.busy_max == 0);
    assert_int_equal(kg_diag_params_set(&p, "nope=1", &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "unknown threshold 'nope'"));
    e.code = 0;
    assert_int_equal(kg_diag_params_set(&p, "stall_min=nan", &e), KG_EXIT_USAGE);
    e.code = 0;
    assert_int_equal(kg_diag_params_set(&p, "stall_min", &e), KG_EXIT_USAGE);
    /* a raised threshold silences a rule */
    kg_kfacts k = kernel("serial_reduce", 1, 32, DRAM, 0.04, LS, 15.7, LAT, 18.8, ISSUE, 0.05, OCC, 1.6, CTAS, 1.0,
                         NULL);
    kg_diag_ctx c = {.reduction = 1};
    kg_cause out[KG_CAUSES_MAX];
    int n = 0;
    kg_diagnose(&k, 1, &c, &p, out, KG_CAUSES_MAX, &n);
    int rc0a = 0;
    for (int i = 0; i < n; i++)
        rc0a |= strcmp(out[i].id, "RC0a") == 0;
    assert_false(rc0a);
}

static void planted_labels(void **state)
{
    (void)state;
    char ids[4][KG_CAUSE_ID_MAX];
    assert_int_equal(kg_diag_planted("one thread walks each row serially (RC0a)", ids, 4), 1);
    assert_string_equal(ids[0], "RC0a");
    assert_int_equal(kg_diag_planted("one thread per row, a warp's loads COLS apart (RC1, RC0a)", ids, 4), 2);
    assert_string_equal(ids[1], "RC0a");
    assert_int_equal(kg_diag_planted("64x64 tile, fp32 FMA (NOTC)", ids, 4), 1);
    assert_int_equal(kg_diag_planted("16-byte loads (at most 16 vectors)", ids, 4), 0);
    assert_int_equal(kg_diag_planted("(RC1) then more text", ids, 4), 0);
    assert_int_equal(kg_diag_planted("", ids, 4), 0);
    assert_int_equal(kg_diag_planted(NULL, ids, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(serial_reduce_is_rc0a, setup),
        cmocka_unit_test_setup(few_warps_without_reduction_is_rc2a, setup),
        cmocka_unit_test_setup(block_waiting_on_one_thread_is_rc0a, setup),
        cmocka_unit_test_setup(local_latency_is_rc3_not_rc0a, setup),
        cmocka_unit_test_setup(whole_row_per_thread_is_rc0a, setup),
        cmocka_unit_test_setup(few_narrow_stores_are_not_rc1, setup),
        cmocka_unit_test_setup(stride_copy_is_rc1, setup),
        cmocka_unit_test_setup(scalar_copy_is_rc0b, setup),
        cmocka_unit_test_setup(without_patched_counters, setup),
        cmocka_unit_test_setup(spill_is_rc3, setup),
        cmocka_unit_test_setup(healthy_gemm_fires_nothing, setup),
        cmocka_unit_test_setup(fma_gemm_is_notc, setup),
        cmocka_unit_test_setup(streaming_gemm_is_rc2b, setup),
        cmocka_unit_test_setup(near_roof_but_slower_is_rc4, setup),
        cmocka_unit_test_setup(round_trip_passes_are_rc0b, setup),
        cmocka_unit_test_setup(many_launches_are_launch_bound, setup),
        cmocka_unit_test_setup(host_work_is_launch_bound, setup),
        cmocka_unit_test_setup(strided_stores_are_rc1, setup),
        cmocka_unit_test_setup(static_facts_alone, setup),
        cmocka_unit_test_setup(thresholds_are_data, setup),
        cmocka_unit_test_setup(planted_labels, setup),
        cmocka_unit_test_setup(every_cause_has_a_locus, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
