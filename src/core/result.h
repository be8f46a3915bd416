/* One judged kernel: identity, verdict, flags and tagged summaries.
 * Measurements store named values (nvbench's summaries); printers show
 * whatever exists, so a new metric needs no printer change. */
#ifndef KG_RESULT_H
#define KG_RESULT_H

#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Known summaries: name, unit, description. Unknown names are allowed too. */
#define KG_SUMMARIES(X)                                                                 \
    X("time/gpu/median", "s", "median GPU time of the kernel")                          \
    X("time/gpu/min", "s", "fastest sample")                                            \
    X("time/gpu/p10", "s", "10th percentile")                                           \
    X("time/gpu/p90", "s", "90th percentile")                                           \
    X("time/gpu/ci_lo", "s", "95% confidence interval of the median, low")             \
    X("time/gpu/ci_hi", "s", "95% confidence interval of the median, high")            \
    X("time/gpu/relstd", "", "relative standard deviation of the samples")             \
    X("time/event/median", "s", "median CUDA-event time (includes launch overhead)")     \
    X("time/traced", "", "samples timed from CUPTI kernel records")                   \
    X("time/gpu/spread", "", "(p90 - p10) / median")                                    \
    X("time/samples", "", "samples kept")                                               \
    X("time/throttled", "", "samples dropped for a low SM clock")                      \
    X("time/wall", "s", "wall time spent sampling")                                     \
    X("time/clock", "MHz", "median SM clock over the samples")                          \
    X("time/batch/mean", "s", "mean time per launch in a CUDA graph batch (warm L2)")   \
    X("time/escaped", "s", "device still busy after the end event")                     \
    X("lib/time/median", "s", "median GPU time of the library baseline")               \
    X("lib/time/ci_lo", "s", "baseline median CI, low")                                 \
    X("lib/time/ci_hi", "s", "baseline median CI, high")                                \
    X("lib/efficiency", "", "E_lib = t_lib / t_kernel")                                 \
    X("roof/fraction", "", "rho = essential work / (time x roof)")                      \
    X("roof/peak", "", "the roof used: B/s or FLOP/s")                                  \
    X("roof/intensity", "FLOP/B", "arithmetic intensity of the essential work")         \
    X("roof/ridge", "FLOP/B", "intensity where the roofs meet")                         \
    X("roof/compute_bound", "", "1 if the work model is compute-bound")                 \
    X("work/bytes", "B", "essential bytes: inputs read once, outputs written once")     \
    X("work/flops", "FLOP", "essential floating-point operations")                      \
    X("rate/bandwidth", "B/s", "essential bytes per second")                            \
    X("rate/flops", "FLOP/s", "essential FLOPs per second")                             \
    X("check/trials", "", "random-input trials passed")                                 \
    X("check/rel_l2", "", "largest relative L2 error over the trials")                  \
    X("check/max_abs_err", "", "largest absolute error over the trials")               \
    X("check/edge", "", "1 if the edge-case input passed")                             \
    X("cliff", "", "t_naive / t_this for variants of one operator")

#define KG_MAX_SUMMARIES 48

typedef struct kg_summary {
    char name[40];
    char unit[12];
    double value;
} kg_summary;

typedef struct kg_result {
    char kernel[96];
    char source[512]; /* the candidate .so */
    char op[32], dtype[8], shape[64];
    char baseline[64];       /* baseline name, e.g. cublaslt */
    char baseline_note[320]; /* what exactly ran */
    kg_verdict verdict;
    unsigned flags;
    char reason[512];
    char detail[1024]; /* mismatch report, crash text, ... */
    char stop[16];     /* what stopped the kernel's sampling */
    int n_sums;
    kg_summary sums[KG_MAX_SUMMARIES];
} kg_result;

/* Sets (or replaces) a summary; the unit comes from the table when known. */
void kg_result_set(kg_result *r, const char *name, double value);
/* Returns 1 and *v if the summary exists. */
int kg_result_get(const kg_result *r, const char *name, double *v);
const char *kg_summary_unit(const char *name);
const char *kg_summary_describe(const char *name);

#ifdef __cplusplus
}
#endif
#endif
