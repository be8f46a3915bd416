/* Verdicts, flags and the performance gate.
 *
 * Two anchors, as the paper's: a relative one, E = t_reference / t_kernel,
 * and the roofline fraction rho = W / (t x P). A correct kernel is OK when
 * it is good enough to replace the best implementation kgate knows, or near
 * the roof whatever the libraries do:
 *     E >= e_ok (0.80)   or   rho >= rho_ok (0.80)
 * and SLOW otherwise. rho > rho_impossible (1.05) is IMPOSSIBLE: faster than
 * the hardware allows, so work was skipped. The paper reads rho as a
 * decision signal only near the roof and lets E decide around rho 0.5
 * (rho_fair): a kernel at rho 0.66 and 0.71 of the best is SLOW, flagged
 * judgment-band. rho_ok 0.80 is the near-roof mark of the data: the best
 * implementation kgate knows reads rho 0.89 or more in 25 of the 30 suite
 * cases on the H200 (median 0.95), so rho >= 0.80 is within about 0.84 of
 * the best, the standard E_best >= 0.80 sets.
 *
 * Which E: the gate uses E_best = t_best / t_kernel, where t_best is the
 * fastest correct implementation kgate knows for the operator and shape
 * (every vendor path and kgate's own bundled optimized variant, timed in the
 * same run). E_lib = t_lib / t_kernel, the paper's metric against the
 * fastest vendor path alone, is reported beside it but does not decide:
 * a library path far from the roof (cuDNN's softmax at rho 0.22) would
 * otherwise pass a kernel that is just as slow. Without a t_best (no vendor
 * path and no bundled variant) the gate falls back to E_lib, and without
 * either to rho alone (flagged no-baseline).
 *
 * Flags explain a call:
 *   baseline-suspect  E_lib > 2 with rho < 0.8 (the library path is slow)
 *   baseline-weak     the library path's own rho is below rho_fair
 *   judgment-band     E and rho disagree at the paper's rho_fair mark: rho
 *                     >= rho_fair but E fails (E decides below rho_ok), or
 *                     E passes with rho within `band` under rho_fair
 *   ambiguous         the confidence intervals straddle a threshold
 * Defaults are the paper's Table III calls (tests/data/table3.txt). */
#ifndef KG_VERDICT_H
#define KG_VERDICT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X-macro: enum, name, exit code. Ordered from best to worst for the CLI.
 * SKIPPED exits 1: a kernel that was not judged was not shown good enough
 * (a loop that reads only the exit code must not take a skip for an OK);
 * kg_report_exit_code makes a --verify-only result that passed exit 0. */
#define KG_VERDICTS(X)          \
    X(SKIPPED, "SKIPPED", 1)    \
    X(OK, "OK", 0)              \
    X(SLOW, "SLOW", 1)          \
    X(INCORRECT, "INCORRECT", 2) \
    X(IMPOSSIBLE, "IMPOSSIBLE", 2) \
    X(CRASH, "CRASH", 2)        \
    X(TIMEOUT, "TIMEOUT", 2)

typedef enum kg_verdict {
#define X(e, s, c) KG_V_##e,
    KG_VERDICTS(X)
#undef X
    KG_V_COUNT
} kg_verdict;

const char *kg_verdict_name(kg_verdict v);
int kg_verdict_parse(const char *s, kg_verdict *out);
int kg_verdict_exit_code(kg_verdict v);

#define KG_FLAGS(X)                                                                      \
    X(BASELINE_SUSPECT, "baseline-suspect", "E_lib > 2 while rho < 0.8: the library path is weak") \
    X(JUDGMENT_BAND, "judgment-band", "E and rho disagree at rho_fair (0.50): rho alone would call it otherwise; E decided") \
    X(AMBIGUOUS, "ambiguous", "a confidence interval straddles a threshold")            \
    X(BASELINE_WEAK, "baseline-weak", "the library path's own rho is below rho_fair (0.50): E_lib flatters") \
    X(NO_BASELINE, "no-baseline", "no vendor library path ran: E_lib is absent")        \
    X(ESCAPED, "escaped-stream", "device still busy after the end event: work escaped the given stream") \
    X(THROTTLED, "throttled", "samples dropped for a low SM clock")                     \
    X(NOISY, "noisy", "the noise limit was not met")                                    \
    X(BASELINE_WRONG, "baseline-incorrect", "a library path failed the reference check and was not used") \
    X(TRUNCATED, "truncated", "some summaries did not fit the result and were dropped") \
    X(VERIFIED, "verify-only", "checked for correctness only (--verify-only), not timed") \
    X(HOST_WORK, "host-work", "the launch call's host time passed the GPU time plus max(the launch path's allowance, the GPU time): judged on a time up to it (kg_host_charge)") \
    X(TIMER_MISMATCH, "timer-mismatch", "the reported time is under half of what kgate's own device clock saw: the timing was tampered with") \
    X(PERSIST_L2, "persisting-l2", "a persisting-L2 carve-out or access window was set and undone before sampling") \
    X(SHARED_GPU, "shared-gpu", "another process held a context on the GPU around the job or its library job: times may be slow") \
    X(LIBRARY_KERNELS, "library-kernels", "kernels named like cuBLAS's, cuDNN's or PyTorch's own did part of the work (5% of the kernel time or more computing, or half of it with fills, copies and casts): its time is partly the library's it is judged against")

enum {
#define X(e, s, d) KG_FB_##e,
    KG_FLAGS(X)
#undef X
    KG_FLAG_COUNT
};
#define KG_FLAG(e) (1u << KG_FB_##e)

const char *kg_flag_name(int bit);
const char *kg_flag_describe(int bit);
/* Parses one flag name; returns its bit index or -1. */
int kg_flag_parse(const char *s);

typedef struct kg_gate {
    double e_ok;           /* 0.80 */
    double rho_ok;         /* 0.80: near the roof */
    double rho_fair;       /* 0.50: the paper's judgment band's middle */
    double rho_impossible; /* 1.05 */
    double suspect_e;      /* 2.0 */
    double suspect_rho;    /* 0.8 */
    double band;           /* 0.1: judgment band half-width under rho_fair */
    double vendor_compute; /* 0.05: library-kernels from this share of the kernel time in vendor kernels that compute */
    double vendor_all;     /* 0.50: ... or this share in any vendor kernels, fills, copies and casts included */
    double vendor_share;   /* 0.20: for a result without time/vendor_compute_share (an older kgate), from this share */
    double host_allowance; /* s: the launch path's free host time (kg_host_charge) */
} kg_gate;

void kg_gate_defaults(kg_gate *g);

/* What the gate is told about one kernel. Interval bounds may equal the point. */
typedef struct kg_evidence {
    int correct;
    int have_e;                 /* E_lib */
    double e, e_lo, e_hi;
    int have_rho;
    double rho, rho_lo, rho_hi;
    int have_best;              /* E_best: decides when present */
    double best, best_lo, best_hi;
} kg_evidence;

/* Work done on the host inside the launch call is part of a kernel's cost.
 * Host time is free up to F = gpu + max(A, gpu), A the launch path's
 * allowance (kg_gate.host_allowance), and host time up to the GPU time hides
 * behind the GPU work when calls are queued. A is about twice the largest
 * launch host median the path showed on the H200 beside small GPU times
 * (under 15 us, where A decides), so that its noise stays below F:
 *   - a C launch (a .so, a CUDA source): 4-27 us, A = 50 us;
 *   - a Python callable (a Triton JIT launch): 20-54 us (docs/cli.md),
 *     A = 100 us.
 *     At 50 us, 2.4 us Triton kernels with host medians of 49.7 and 54.2 us
 *     were 3 us from SLOW and 1.8 us past F (judged on 5.9 us).
 *     (Beside long GPU times the host medians are larger, to 93 us beside a
 *     303 us argmax, and hidden by the GPU time.)
 * kgate sets A from the candidate's file, links resolved (a worker never
 * says what it is owed; kg_host_allowance_for), or --host-allowance does.
 * Past F the charge climbs at twice the host time's rate until it meets the
 * host time, which it is from then on:
 *     kg_host_charge(gpu, host, A) = gpu                            host <= F
 *                                  = min(host, gpu + 2 (host - F))  host > F
 * flagged host-work when it exceeds the GPU time. It is continuous in the
 * host time, so the launch path's noise moves the time by at most twice the
 * noise and never by a step: the earlier rule charged the whole host time
 * once it passed max(2 gpu, 50 us), which gave one Triton matmul (14.1 us,
 * launch host medians 28-52 us) E_lib 0.40 in eleven runs and 0.11 in the
 * twelfth. For a GPU time far under A the ramp is steep against the GPU time
 * (2.4 us judged on 7.6 us 2.6 us past F), hence the margin in A.
 * Outside the ramp it charges the whole host time: work the host does beyond
 * 2F - gpu is charged in full (1 ms of host work beside 2 us on the GPU is
 * judged on 1 ms). */
#define KG_HOST_ALLOWANCE_S 50e-6
#define KG_HOST_ALLOWANCE_PYTHON_S 100e-6
double kg_host_charge(double gpu_s, double host_s, double allowance_s);
/* The candidate's host time of one launch call when its provider claims
 * `claimed_s` of the `measured_s` around the call as the candidate's own
 * (the rest its glue): the claim, but never more than measured nor less than
 * measured - glue_max_s; measured when the claim is unknown (< 0, NaN). A
 * provider runs in the candidate's process and may be lied to (gpu/provider.h). */
double kg_host_own(double claimed_s, double measured_s, double glue_max_s);
/* The launch path's allowance of a candidate file (NULL: the bundled
 * suite's .so files): a Python file's (a name ending in ".py", the worker
 * the Python host), else a C launch's. Give it the path the workers open,
 * links resolved (app/options.c). */
double kg_host_allowance_for(const char *path);

/* Decides the verdict, adds flags to *flags, writes a one-line reason. */
kg_verdict kg_decide(const kg_gate *g, const kg_evidence *ev, unsigned *flags, char *reason,
                     size_t size);

#ifdef __cplusplus
}
#endif
#endif
