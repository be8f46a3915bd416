/* The timing engine (nvbench's cold measurement as the model).
 *
 * Each sample: flush L2 (default: read a buffer twice the L2 size, which
 * leaves only clean lines; `memset` writes one L2 size as nvbench does, which
 * leaves dirty lines whose write-back lands in the subject's time; `none` is
 * --hot), hold the
 * stream with a blocking kernel that spins on a host-mapped flag, queue the
 * start event, the subject and the end event, release the flag, wait. Host
 * submission time stays out of the GPU time. After each sample a probe kernel
 * measures the SM clock (clock64 against globaltimer); samples below
 * throttle_frac of the reference clock are dropped and counted. The first
 * samples also check that the device is idle when the end event completes
 * (work that escaped the stream). Sampling stops by measure/stats.h's rule.
 * Sample times come from CUPTI's kernel records when it is available (first
 * kernel start to last kernel end of the subject, the quantity Nsight Compute
 * reports), else from the events; the event median is reported beside them.
 * A throttled sample (SM clock under throttle_frac of the best seen) is
 * dropped and followed by a cool-down, as nvbench does.
 * Subjects under batch_below_s also get a CUDA-graph batch number (warm).
 *
 * Against a subject that games the measurement: every call, warm-up or
 * timed, gets inputs no earlier call saw (the `refill` hook), so that a
 * cache keyed on their content never hits; the first warm-up call runs
 * unblocked (module loading may synchronize), every later call, warm-up or
 * timed, looks the same to the subject (flush, `before` hook, blocker); the
 * persisting-L2 carve-out and the stream's access-policy window are reset
 * before each sample (counted when something had set them); the host time
 * spent inside the launch call is measured; the outputs of samples chosen
 * at random (from verify_seed, which the subject cannot see), about
 * verify_min to verify_max of them spread over the whole run (a subject
 * honest for its first calls gains nothing), are re-checked by the `verify`
 * hook; and any kernel or copy the subject ran on a stream
 * other than the timing stream (another stream, the legacy or per-thread
 * default stream, a graph launched elsewhere, a host thread) marks the
 * timing escaped. */
#ifndef KG_TIMER_H
#define KG_TIMER_H

#include <kgate/plugin.h>

#include "../measure/flush.h"
#include "../base/kg.h"
#include "../measure/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launches the subject once, on s, using input set `set`. */
typedef int (*kg_launch_cb)(void *ctx, int set, kgate_stream s, kg_err *err);

typedef struct kg_timer_cfg {
    kg_stop_cfg stop;
    kg_flush flush;       /* L2 flush before each sample */
    int n_sets;           /* input sets to rotate through (>= 1) */
    int warmup;           /* unblocked launches first, default 3 */
    double batch_below_s; /* graph-batch subjects faster than this, default 20e-6 */
    double throttle_frac; /* drop samples below this fraction of the best clock, 0.90 */
    double cooldown_s;    /* idle after a throttled sample, 0.02 s */
    int use_trace;        /* time from CUPTI kernel records (default) rather than events */
    /* Called first before every call, warm-up and samples alike (`call`
     * counts them from 0): gives input set `set` content that no earlier
     * call saw, queued on `s`, kgate's own input stream, which the timing
     * stream then waits for; or NULL (inputs reused). It must be
     * deterministic in `call`: a re-check regenerates its call's inputs. */
    int (*refill)(void *ctx, int set, long call, kgate_stream s, kg_err *err);
    /* Called before each call's flush (poisons the outputs), or NULL. */
    int (*before)(void *ctx, int set, kgate_stream s, kg_err *err);
    /* Re-checks the outputs of input set `set` after a chosen call (`call`,
     * as refill counts); returns 0 when they are right, 1 when wrong
     * (sampling stops), or an error. */
    int (*verify)(void *ctx, int set, long call, kg_err *err);
    unsigned long long verify_seed;
    /* Optional: the host time of the call just made, given the time the
     * timer measured around it (a provider that knows how much of it was
     * its own glue returns the rest); NULL: the measured time. */
    double (*host_time)(void *ctx, double measured_s);
    int verify_min;       /* re-checks a run aims at, spread over it (default 4) */
    int verify_max;       /* ... and up to this many while they cost under 5% of its wall (16) */
} kg_timer_cfg;

typedef struct kg_timing {
    kg_stats st;            /* over kept samples, seconds */
    int n_total;            /* samples taken */
    int n_throttled;        /* dropped for a low SM clock */
    int n_blocker_timeouts; /* samples whose blocking kernel timed out (dropped) */
    kg_stop_reason stop;
    double gpu_s, wall_s;
    double clock_mhz, clock_ref_mhz;
    double event_median_s; /* median of the CUDA-event times of the kept samples */
    int n_traced;      /* samples timed from CUPTI kernel records */
    int escaped;       /* device busy after the end event, kernels on other streams, deferred, or
                        * trace_lost */
    double escaped_s;  /* longest such wait */
    int batched;       /* graph batch measured */
    double batch_mean_s;
    int batch_n;
    int n_foreign;     /* kernels and copies on other streams while sampling */
    int n_vendor;      /* the subject's kernels named like a library's (kg_trace_vendor) */
    double vendor_share; /* their share of the subject's kernel time (0 to 1) */
    double vendor_compute_share; /* of those that compute, not only move data */
    int vendor_seen;   /* n_vendor and vendor_share were taken from a trace */
    const char *vendor_lib;  /* the library the first was named for, or NULL */
    char vendor_first[48];   /* the first one's name */
    int n_deferred;    /* the subject's records on the timing stream between samples (kg_trace_deferred) */
    int trace_lost;    /* the trace was on but lacked kgate's own records (blockers, probes, flushes):
                        * work between samples could not be looked for (the subject may have
                        * turned CUPTI off) */
    double host_median_s; /* host time inside the launch call, median */
    double span_median_s; /* the device's own span from the blocker's release to the probe */
    int n_persist_reset;  /* samples before which a persisting-L2 setting had to be undone */
    int n_verified;       /* timed outputs re-checked */
    int verify_failed;    /* 1 + the sample whose output was wrong, or 0 */
    char note[256];       /* clauses joined by "; " (kg_timing_note) */
} kg_timing;

void kg_timer_defaults(kg_timer_cfg *c);

/* Appends one clause to t->note, after a "; " when it holds one already;
 * what does not fit is cut. */
void kg_timing_note(kg_timing *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Times cb. Allocates the flush buffer and probes once per process. */
int kg_time(const kg_timer_cfg *cfg, kg_launch_cb cb, void *ctx, kgate_stream s, kg_timing *out,
            kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
