/* Sample statistics and the stopping rule of the timing engine.
 * Plain C: unit-tested on the CPU (tests/test_stats.c). */
#ifndef KG_STATS_H
#define KG_STATS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_stats {
    int n;
    double mean, median, min, max, p10, p90;
    double stdev;  /* sample standard deviation (n-1) */
    double relstd; /* stdev / mean: the noise the stopping rule watches */
    double spread; /* (p90 - p10) / median: robust relative spread */
    double ci_lo, ci_hi; /* ~95% confidence interval of the median (order statistics) */
} kg_stats;

/* Computes statistics of x[0..n) (not modified). Returns -1 if n < 1. */
int kg_stats_compute(const double *x, int n, kg_stats *out);

/* Linear-interpolated quantile q in [0,1] of an ascending array. */
double kg_quantile_sorted(const double *sorted, int n, double q);

/* Why sampling stopped. X-macro: enum, name, description. */
#define KG_STOP_REASONS(X)                                                        \
    X(NONE, "running", "still sampling")                                          \
    X(NOISE, "noise", "relative std dev fell to the noise limit")                 \
    X(CONVERGED, "converged", "noise estimate stopped changing above the limit")  \
    X(WALL, "wall-cap", "wall-time cap reached before the noise limit was met")   \
    X(MAX_SAMPLES, "max-samples", "sample cap reached before the noise limit was met")

typedef enum kg_stop_reason {
#define X(e, s, d) KG_STOP_##e,
    KG_STOP_REASONS(X)
#undef X
} kg_stop_reason;

const char *kg_stop_name(kg_stop_reason r);
const char *kg_stop_describe(kg_stop_reason r);

typedef struct kg_stop_cfg {
    int min_samples;   /* default 10 */
    double min_gpu_s;  /* GPU time that must be accumulated first, default 0.25 s */
    double max_noise;  /* relative std dev that ends sampling, default 0.005 */
    double max_wall_s; /* wall-clock cap, default 15 s */
    int max_samples;   /* sample cap, default 20000 */
} kg_stop_cfg;

#define KG_STOP_HISTORY 8
typedef struct kg_stopper {
    kg_stop_cfg cfg;
    double hist[KG_STOP_HISTORY]; /* noise every 10 samples, ring */
    int n_hist;
    int last_n;
} kg_stopper;

void kg_stop_defaults(kg_stop_cfg *cfg);
void kg_stop_init(kg_stopper *st, const kg_stop_cfg *cfg);

/* Decides after each sample. samples[0..n) are the valid samples so far,
 * gpu_s their sum, wall_s the wall time since sampling began. */
kg_stop_reason kg_stop_check(kg_stopper *st, const double *samples, int n, double gpu_s,
                             double wall_s);

/* Whether timing sample i (0-based) is re-checked, as a draw from the
 * secret `seed`: each sample is, with probability R / n_est, where n_est is
 * how many samples the run will take (the stop rule's min_gpu_s at the mean
 * of the n_kept kept samples, gpu_s their sum, within max_wall_s at the
 * wall time per sample so far, wall_s without the re-checks, and
 * max_samples; at least min_samples), so that about R re-checks fall
 * anywhere in the run, late samples as likely as early ones: a subject
 * honest for its first timed calls is re-checked where it skips work. R is
 * r_min, raised towards r_max while the n_checks re-checks made so far
 * (checks_s of wall time) cost under 5% of the run's expected wall time. */
int kg_recheck_pick(const kg_stop_cfg *sc, int r_min, int r_max, unsigned long long seed, int i, int n_kept,
                    double gpu_s, double wall_s, int n_checks, double checks_s);

#ifdef __cplusplus
}
#endif
#endif
