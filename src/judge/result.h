/* One judged kernel: identity, verdict, flags and tagged summaries.
 * Measurements store named values (nvbench's summaries); printers show
 * whatever exists, so a new metric needs no printer change. */
#ifndef KG_RESULT_H
#define KG_RESULT_H

#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Known summaries: name, unit, description. kgate's own code may set others
 * (printers show whatever exists); a worker may send only these (supervise/job.c). */
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
    X("job/wall", "s", "wall time of the kernel's worker, spawn to exit")                \
    X("job/startup", "s", "the kernel's worker from spawn to its hello (imports, driver)") \
    X("list/warm", "s", "the candidate's listing waited this long for the Python fork server's imports") \
    X("list/wall", "s", "the candidate's listing: asking for the GPU lock to its worker's exit") \
    X("job/gpu_wait", "s", "the kernel's job waited this long for the GPU's lock (another kgate's work)") \
    X("lib/job/wall", "s", "wall time of the library paths' worker, spawn to exit")      \
    X("lib/job/startup", "s", "the library worker from spawn to its hello")             \
    X("lib/cache/age", "s", "the library times came from --lib-cache, measured this long before") \
    X("gpu/others", "", "other processes seen holding a context on the GPU around the job (NVML)") \
    X("gpu/others/mem", "B", "GPU memory those other processes held")                  \
    X("time/phase/setup", "s", "the kernel job from its hello to its first check")        \
    X("time/phase/open", "s", "the kernel job opening the candidate (a Python file's imports)") \
    X("time/phase/context", "s", "the kernel job creating its CUDA context and stream")    \
    X("time/phase/checks", "s", "the kernel job's correctness checks before timing")    \
    X("time/phase/timing", "s", "the kernel job's timing: inputs, references, sampling") \
    X("time/phase/recheck", "s", "the kernel job's check on fresh inputs after timing")  \
    X("time/phase/diagnose", "s", "the kernel job's diagnosis (--diagnose): facts, counters, SASS") \
    X("time/diagnose/profiler-setup", "s", "the diagnosis: Range Profiler setup (config and counter images)") \
    X("time/diagnose/passes", "s", "the diagnosis: the profiled call and its replayed passes") \
    X("time/diagnose/evaluate", "s", "the diagnosis: decoding and evaluating the counters, teardown") \
    X("time/diagnose/sass", "s", "the diagnosis: cuobjdump and the SASS scan") \
    X("time/clock", "MHz", "median SM clock over the samples")                          \
    X("time/batch/mean", "s", "mean time per launch in a CUDA graph batch (warm L2)")   \
    X("time/escaped", "s", "device still busy after the end event")                     \
    X("time/foreign", "", "kernels and copies on other streams while sampling")        \
    X("time/deferred", "", "the kernel's work queued on the timing stream between samples, after its call returned") \
    X("time/trace_lost", "", "1: the kernel trace lacked kgate's own records, so work between samples could not be looked for") \
    X("time/host/median", "s", "host time inside the launch call, median")             \
    X("time/host/glue", "s", "host time of the launch call the provider claimed as its glue, not the candidate's, mean (at most 25 us a call is believed)") \
    X("time/host/glue_over", "", "the fraction of calls whose claimed glue passed 25 us (charged to the candidate)") \
    X("time/judged", "s", "the time the gate judged: time/gpu/median, or more for host work (host-work)") \
    X("time/host/allowance", "s", "the host time the launch path was allowed beyond the GPU time (the gate's host_allowance)") \
    X("time/verified", "", "timed calls whose outputs were re-checked")                \
    X("time/span/median", "s", "kgate's own device clock from stream release to the next probe") \
    X("time/blocking", "", "launch calls that held the host past the blocker's timeout") \
    X("time/persist_reset", "", "samples before which a persisting-L2 setting was undone") \
    X("time/vendor", "", "the kernel's kernels named like cuBLAS's, cuDNN's or PyTorch's own (kg_trace_vendor), while sampled") \
    X("time/vendor_share", "", "their share of the kernel's kernel time while sampled (0 to 1)") \
    X("time/vendor_compute_share", "", "the share of those that compute, not only fill, copy or cast (0 to 1)") \
    X("lib/time/median", "s", "median GPU time of the fastest correct library path")  \
    X("lib/time/ci_lo", "s", "library median CI, low")                                  \
    X("lib/time/ci_hi", "s", "library median CI, high")                                 \
    X("lib/efficiency", "", "E_lib = t_lib / t_kernel (the paper's metric)")            \
    X("lib/roof/fraction", "", "the library path's own rho")                            \
    X("best/time/median", "s", "t_best: the fastest correct implementation kgate knows") \
    X("best/efficiency", "", "E_best = t_best / t_kernel (what the gate uses)")         \
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
    X("check/max_scaled_err", "", "max |out - ref| / (1 + |ref|) over the kernel's checks (KernelBench's allclose)") \
    X("check/shapes", "", "extra shapes checked (unaligned, tiny, unnamed)")          \
    X("check/shapes_skipped", "", "extra shapes the kernel declares unsupported")      \
    X("check/unsupported", "", "1 when the kernel declares the timed shape unsupported") \
    X("cliff", "", "t_naive / t_this for variants of one operator")

#define KG_MAX_SUMMARIES 96
#define KG_MAX_LIBPATHS 6

/* What became of one library path. */
typedef enum kg_lib_status {
    KG_LIB_OK,          /* checked and timed */
    KG_LIB_UNSUPPORTED, /* the library cannot run this case here (note says why) */
    KG_LIB_WRONG,       /* it ran, and failed the reference check: not used */
} kg_lib_status;
const char *kg_lib_status_name(kg_lib_status s);

typedef struct kg_libpath {
    char name[40];
    char note[320];
    kg_lib_status status;
    double t, lo, hi; /* median time and its CI (KG_LIB_OK) */
} kg_libpath;

/* What one (operator, dtypes, shape) was measured against: every library
 * path, and the bundled fast variant. */
typedef struct kg_libref {
    int measured;        /* the library job ran */
    int n;
    kg_libpath paths[KG_MAX_LIBPATHS];
    int chosen;          /* the fastest correct path, or -1 */
    int have_best;       /* the bundled fast variant was timed */
    double best_t, best_lo, best_hi;
    char best_name[96];
    char best_note[256]; /* why there is no bundled time, when there is none */
    double job_wall_s, job_startup_s; /* its worker: spawn to exit, spawn to hello */
    double disturbed;    /* timing samples the job dropped for a low SM clock, kernels or copies
                          * of its own process on other streams or between samples, and paths
                          * timed a second time after such work (time/throttled, time/foreign,
                          * time/retimed; other processes' work is not visible): a measurement
                          * store/lib_cache.h does not keep */
    double foreign;      /* of disturbed, the kernels and copies on other streams (time/foreign):
                          * a candidate's code loaded in the library job (a problem's file) at
                          * work beside it; such library times are not used (judge/judge.c, kg_judge_kernel) */
    char timing_note[160]; /* the note of the first library path whose timing saw foreign work
                            * (gpu/timer.h: the record first seen; what a first timing saw when
                            * it was timed again), for baseline_note */
    int others;          /* other processes seen on the GPU around the job (supervise/others.h; set by
                          * the command that ran it), -1 when it was not watched (no NVML, or a
                          * listing failed): not kept either way */
} kg_libref;

typedef struct kg_summary {
    char name[40];
    char unit[12];
    double value;
} kg_summary;

struct kg_diagnosis; /* diagnose/diag_json.h */

typedef struct kg_result {
    char kernel[96];
    char summary[256]; /* the kernel's own description, from its table */
    char source[512]; /* the candidate .so */
    char op[64], dtype[8], shape[64];
    char index_dtype[8];     /* "" for operators without index inputs */
    char baseline[64];       /* the library path E_lib uses, e.g. cublaslt */
    char baseline_note[320]; /* what exactly ran */
    char best[96];           /* what t_best is: a library path or a bundled kernel */
    char extra_shapes[160];  /* the extra shapes it was checked at (those it supports) */
    int n_libs;
    kg_libpath libs[KG_MAX_LIBPATHS]; /* every library path tried */
    kg_verdict verdict;
    unsigned flags;
    char reason[512];
    char detail[1024]; /* mismatch report, crash text, ... */
    char stop[16];     /* what stopped the kernel's sampling */
    int n_sums;
    int sums_dropped; /* summaries that did not fit: reported, never silent */
    int wrapper_exit;        /* the worker process's exit status (-1: killed) */
    char wrapper_tail[1024]; /* the last line it wrote on stderr */
    kg_summary sums[KG_MAX_SUMMARIES];
    /* Why it is slow (--diagnose), or NULL. malloc'd; owned by the report
     * the result is added to (kg_report_add takes it over, kg_report_free
     * frees it). */
    struct kg_diagnosis *diag;
} kg_result;

/* Sets (or replaces) a summary; the unit comes from the table when known.
 * Returns -1 (and counts it in sums_dropped) when the table is full. */
int kg_result_set(kg_result *r, const char *name, double value);
/* The same with the unit given (the worker's, for summaries it reports);
 * NULL takes the table's. */
int kg_result_set_unit(kg_result *r, const char *name, double value, const char *unit);
/* Returns 1 and *v if the summary exists. */
int kg_result_get(const kg_result *r, const char *name, double *v);
/* The kernel's time as the gate judged it (time/judged: more than the GPU
 * median for host work), else its GPU median, else 0: what reports show. */
double kg_result_time(const kg_result *r);
const char *kg_summary_unit(const char *name);
/* Whether a name is one of KG_SUMMARIES (a worker may send no other). */
int kg_summary_known(const char *name);
const char *kg_summary_describe(const char *name);

#ifdef __cplusplus
}
#endif
#endif
