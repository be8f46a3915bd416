/* Comparing two kgate reports (two runs, commits or GPUs): per kernel,
 * operator, dtype and shape, is B FASTER, SLOWER, the SAME as A, or is the
 * difference AMBIGUOUS, judged from the confidence intervals of the
 * medians; and did the verdict change. `kgate compare A.json B.json` prints
 * it and exits non-zero on a regression, for CI (docs/cli.md).
 *
 * The rule, with band = the `same` fraction (default 2%):
 *   r = t_B / t_A;
 *   SAME       when |r - 1| <= band (whatever the intervals);
 *   FASTER     when r < 1 - band and B's interval lies wholly below A's;
 *   SLOWER     when r > 1 + band and B's interval lies wholly above A's;
 *   AMBIGUOUS  when the medians differ by more than the band but the
 *              intervals overlap: the runs are too noisy to say.
 * The times are those the verdicts were judged on (time/judged): the GPU
 * median with its interval, or, where host work past the allowance was
 * charged, the time judged as a point. A file from before time/judged
 * compares GPU medians.
 * A result without an interval counts as the point at its median.
 * Plain C; no GPU. */
#ifndef KG_COMPARE_H
#define KG_COMPARE_H

#include <stdio.h>

#include "report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_COMPARE_CALLS(X)                                                                                 \
    X(FASTER, "FASTER")                                                                                    \
    X(SLOWER, "SLOWER")                                                                                    \
    X(SAME, "SAME")                                                                                        \
    X(AMBIGUOUS, "AMBIGUOUS")                                                                              \
    X(UNTIMED, "UNTIMED") /* one side has no time (not correct, or verify-only) */                        \
    X(ONLY_A, "ONLY-A")                                                                                    \
    X(ONLY_B, "ONLY-B")

typedef enum kg_compare_call {
#define X(e, s) KG_COMPARE_##e,
    KG_COMPARE_CALLS(X)
#undef X
} kg_compare_call;

const char *kg_compare_call_name(kg_compare_call c);

typedef struct kg_compare_cfg {
    double same;    /* the band within which medians are the same (default 0.02) */
    double regress; /* SLOWER beyond this fraction fails the comparison (default 0.05) */
} kg_compare_cfg;

void kg_compare_defaults(kg_compare_cfg *c);

typedef struct kg_compare_row {
    char kernel[96], op[32], dtype[8], index_dtype[8], shape[64];
    kg_compare_call call;
    double ta, ta_lo, ta_hi, tb, tb_lo, tb_hi; /* seconds; 0 where absent */
    double ratio;                              /* t_B / t_A, 0 when either is absent */
    int charged_a, charged_b; /* the time judged is past the GPU median (host work charged): a point */
    int have_a, have_b;
    kg_verdict va, vb;
    int regression; /* SLOWER beyond cfg.regress, or a verdict that got worse */
} kg_compare_row;

/* One row per kernel, operator, dtype and shape of either report: A's in
 * its order, then those only B has. *rows is malloc'd (caller frees).
 * Returns 0, or KG_EXIT_ENV when out of memory. */
int kg_compare(const kg_report *a, const kg_report *b, const kg_compare_cfg *cfg, kg_compare_row **rows, int *n,
               kg_err *err);

/* The call for one pair of medians and intervals (the rule above). */
kg_compare_call kg_compare_times(double ta, double ta_lo, double ta_hi, double tb, double tb_lo, double tb_hi,
                                 double same);

/* A verdict's rank for "got worse": OK < SKIPPED < SLOW < the failures. */
int kg_verdict_rank(kg_verdict v);

/* The table, the devices (a comparison across GPUs says so) and a count of
 * each call; returns how many rows are regressions. */
int kg_compare_print(const kg_report *a, const kg_report *b, const kg_compare_row *rows, int n, FILE *f);

/* The comparison as JSON (schema kgate.compare/1), written atomically. */
int kg_compare_write_json(const kg_report *a, const kg_report *b, const char *path_a, const char *path_b,
                          const kg_compare_cfg *cfg, const kg_compare_row *rows, int n, const char *command,
                          const char *path, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
