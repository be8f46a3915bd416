/* Hardware counters of a subject's kernels from the CUPTI Range Profiler
 * (CUDA 13): every kernel one call launches is one range (auto ranges,
 * kernel replay), evaluated into kg_kfacts metrics (diagnose/diag.h). Also an
 * offline check of metric names and pass counts against a chip's metric
 * table, which needs no GPU. See profile.c for the call sequence and
 * docs/diagnosis.md for the metric names. */
#ifndef KG_PROFILE_H
#define KG_PROFILE_H

#include "../diagnose/diag.h"
#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kg_prof_collect's answer when the driver does not let this process read
 * counters (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES). Not an exit code: err->code
 * is still KG_EXIT_ENV, so the error can go to the CLI as it is. */
#define KG_PROF_DENIED 100

/* The default metric set: the paper's seven counters plus the triage set,
 * 3 passes on GH100 (measured with kg_prof_passes_offline). The extended
 * set adds the per-request counts, three more stall reasons and the two
 * speed-of-light throughputs: 12 passes on GH100. Both are GH100 names
 * (sm__inst_executed_pipe_tensor_op_gmma does not exist before Hopper). */
extern const char *const kg_prof_default_metrics[];
extern const int kg_prof_n_default;
extern const char *const kg_prof_extended_metrics[];
extern const int kg_prof_n_extended;

/* The metrics of a set that need no SASS patching: every name but the
 * smsp__sass_* ones, which CUPTI collects by instrumenting the kernel (one
 * more pass on GH100, and that pass runs the kernel many times slower:
 * 7 to 43 times one call for the suite's naive GEMMs and convolutions).
 * Copies those names' pointers to out (room for n) in order; returns how
 * many. The default set without them is 2 passes on GH100. */
int kg_prof_unpatched(const char *const *metrics, int n, const char **out);

/* Offline (no GPU, no driver): checks every name against chip's metric table
 * with the CUPTI host API and sets *passes to the number of replay passes
 * the set needs. chip: a CUPTI chip name such as "GH100". Returns 0;
 * KG_EXIT_USAGE naming the culprit for an unknown chip, an unknown or
 * repeated metric, a name longer than kg_metric holds, or n outside
 * 1..KG_KMETRICS_MAX; KG_EXIT_ENV when CUPTI itself fails. */
int kg_prof_passes_offline(const char *chip, const char *const *metrics, int n, int *passes, kg_err *err);

/* Profiles one call of `launch` on the current CUDA context's device with
 * kernel replay and auto ranges: every kernel it launches is one range, and
 * CUPTI replays each kernel itself (restoring device memory), so launch is
 * normally called once; should CUPTI still ask for passes after it, it is
 * called again (at most 64 times in all).
 *
 * The caller must have made a context current (cudaSetDevice + cudaFree(0),
 * or any runtime call on the device); without one this is KG_EXIT_ENV.
 * launch(ctx, err) launches the subject's kernels and returns 0, or an
 * error code with err set; that code is returned as it is (a crash of the
 * subject stays the launch's KG_EXIT_FAIL).
 *
 * For each range, in launch order, out[i] is initialized (kg_kfacts_init)
 * and gets the range's name (CUPTI numbers auto ranges "0", "1", ...),
 * launches = 1 and every metric (kg_kfacts_set, base units). *n gets the
 * number of ranges kept (at most max); *dropped counts the ranges CUPTI
 * recorded but could not keep. Counter values come from replayed passes:
 * they are not a speed measurement.
 *
 * Returns 0; KG_PROF_DENIED (err->code KG_EXIT_ENV, the message saying how
 * to allow profiling) when counters are not permitted; KG_EXIT_USAGE for a
 * bad metric set (as kg_prof_passes_offline); KG_EXIT_ENV with a one-line
 * message naming the failed call, file and line otherwise. Every CUPTI
 * object is released on every path. Not thread-safe: one at a time. */
int kg_prof_collect(const char *const *metrics, int n_metrics, int (*launch)(void *ctx, kg_err *err), void *ctx,
                    kg_kfacts *out, int max, int *n, int *dropped, kg_err *err);

/* The number of passes the last successful kg_prof_collect configured
 * (0 before one succeeded). */
int kg_prof_last_passes(void);

/* Where the last successful kg_prof_collect's wall time went, in seconds:
 * setup (profiler, chip, config image, counter data), the passes (the
 * launches and their replays, to the sync after them), evaluation (decoding
 * and evaluating the ranges, teardown). All 0 before one succeeded. */
void kg_prof_last_times(double *setup_s, double *passes_s, double *eval_s);

#ifdef __cplusplus
}
#endif
#endif
