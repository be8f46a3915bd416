// The timing engine: cold samples behind a blocking kernel, SM clock per
// sample, escape detection, graph batching for tiny subjects.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "timer.h"
#include "trace.h"

#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

__device__ __forceinline__ unsigned long long globaltimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Spins until the host sets *flag, or timeout_ns passes (then marks
// *timed_out); records the device time it let the stream go in *released.
__global__ void block_stream(volatile int *flag, unsigned long long timeout_ns, int *timed_out,
                             unsigned long long *released)
{
    unsigned long long t0 = globaltimer();
    while (!*flag) {
        if (globaltimer() - t0 > timeout_ns) {
            *timed_out = 1;
            break;
        }
    }
    *released = globaltimer();
}

// Reads the flush buffer so that L2 holds only its (clean) lines; the write
// of `sink` never happens but keeps the loads alive.
__global__ void read_flush(const uint4 *p, size_t n, unsigned *sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = __ldcg(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u)
        *sink = acc;
}

// Spins `cycles` SM cycles and records cycles and nanoseconds elapsed, and
// the device time it started (out[2]): with the blocker's release time, the
// device's own span of the subject, which no host-side hook can change.
__global__ void clock_probe(unsigned long long *out, long long cycles)
{
    unsigned long long t0 = globaltimer();
    out[2] = t0;
    long long c0 = clock64(), c1;
    do {
        c1 = clock64();
    } while (c1 - c0 < cycles);
    unsigned long long t1 = globaltimer();
    out[0] = (unsigned long long)(c1 - c0);
    out[1] = t1 - t0;
}

static struct {
    int ready;
    void *flush;
    size_t flush_bytes;
    int sms;
    volatile int *flag_host;
    int *flag_dev;
    int *timed_out_host;
    int *timed_out_dev;
    unsigned long long *probe_host, *probe_dev;
    double clock_ref_mhz;
    cudaStream_t fill_stream; // kgate's input refills (cfg->refill), off the timing stream
    cudaEvent_t filled;       // recorded there after a refill; the timing stream waits for it
} T;

static const long long PROBE_CYCLES = 1 << 16;
// The first samples are followed by a device-wide wait, not by a probe: work
// left running after the end event shows as a busy device there.
static const int ESCAPE_CHECKS = 3;

static int timer_init(kg_err *err)
{
    if (T.ready)
        return 0;
    int dev, l2, clk = 0;
    KG_CUDA(cudaGetDevice(&dev));
    KG_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    KG_CUDA(cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev));
    T.clock_ref_mhz = clk / 1000.0;
    // Persisting lines could survive the flush: give them no carve-out.
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
    cudaGetLastError();
    KG_CUDA(cudaDeviceGetAttribute(&T.sms, cudaDevAttrMultiProcessorCount, dev));
    T.flush_bytes = 2 * (size_t)l2; /* reads of twice the L2 replace every line */
    KG_CUDA(cudaMalloc(&T.flush, T.flush_bytes + 64));
    KG_CUDA(cudaMemset(T.flush, 0, T.flush_bytes + 64));
    KG_CUDA(cudaHostAlloc((void **)&T.flag_host, 2 * sizeof(int), cudaHostAllocMapped));
    KG_CUDA(cudaHostGetDevicePointer((void **)&T.flag_dev, (void *)T.flag_host, 0));
    T.timed_out_host = (int *)T.flag_host + 1;
    T.timed_out_dev = T.flag_dev + 1;
    KG_CUDA(cudaHostAlloc((void **)&T.probe_host, 4 * sizeof(unsigned long long), cudaHostAllocMapped));
    KG_CUDA(cudaHostGetDevicePointer((void **)&T.probe_dev, (void *)T.probe_host, 0));
    KG_CUDA(cudaStreamCreateWithFlags(&T.fill_stream, cudaStreamNonBlocking));
    KG_CUDA(cudaEventCreateWithFlags(&T.filled, cudaEventDisableTiming));
    T.ready = 1;
    return 0;
out:
    return err->code;
}

// Queues a read of the flush buffer: L2 then holds only its clean lines.
static int queue_read_flush(cudaStream_t s, kg_err *err)
{
    read_flush<<<T.sms * 4, 512, 0, s>>>((const uint4 *)T.flush, T.flush_bytes / 16,
                                         (unsigned *)((char *)T.flush + T.flush_bytes));
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

// Queues the blocking kernel: the stream holds until the host sets the flag
// (or 1 s passes), so that the launches queued behind it start together.
static int queue_blocker(cudaStream_t s, kg_err *err)
{
    T.flag_host[0] = 0;
    T.flag_host[1] = 0;
    __sync_synchronize();
    block_stream<<<1, 1, 0, s>>>(T.flag_dev, 1000000000ull, T.timed_out_dev, T.probe_dev + 3);
    KG_CUDA(cudaGetLastError());
    return 0;
out:
    return err->code;
}

// The median of vals[i] over the kept samples (samples[i] >= 0), only the
// positive values when `positive`; compacts vals. 0 when there is none.
static double kept_median(const double *samples, double *vals, int n, int positive)
{
    int m = 0;
    kg_stats st;
    for (int i = 0; i < n; i++)
        if (samples[i] >= 0 && (!positive || vals[i] > 0))
            vals[m++] = vals[i];
    return kg_stats_compute(vals, m, &st) == 0 ? st.median : 0;
}

extern "C" void kg_timing_note(kg_timing *o, const char *fmt, ...)
{
    size_t used = strnlen(o->note, sizeof o->note);
    if (used + 3 >= sizeof o->note)
        return;
    if (used)
        used += (size_t)snprintf(o->note + used, sizeof o->note - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->note + used, sizeof o->note - used, fmt, ap);
    va_end(ap);
}

extern "C" void kg_timer_defaults(kg_timer_cfg *c)
{
    memset(c, 0, sizeof *c); /* every optional hook NULL, including ones added later */
    kg_stop_defaults(&c->stop);
    c->flush = KG_FLUSH_READ;
    c->n_sets = 1;
    c->warmup = 3;
    c->batch_below_s = 20e-6;
    c->throttle_frac = 0.90;
    c->cooldown_s = 0.02;
    c->use_trace = 1;
    c->before = NULL;
    c->verify = NULL;
    c->verify_seed = 0;
    c->verify_min = 4;
    c->verify_max = 16;
}

// Undoes a persisting-L2 setting a subject may have made (a carve-out, or an
// access-policy window on the stream) so that its inputs cannot stay in L2
// through the flush; returns 1 when there was one.
static int reset_persisting(cudaStream_t s)
{
    int found = 0;
    size_t carve = 0;
    if (cudaDeviceGetLimit(&carve, cudaLimitPersistingL2CacheSize) == cudaSuccess && carve > 0) {
        cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0);
        found = 1;
    }
    cudaStreamAttrValue v;
    memset(&v, 0, sizeof v);
    if (cudaStreamGetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v) == cudaSuccess &&
        v.accessPolicyWindow.num_bytes > 0) {
        memset(&v, 0, sizeof v);
        cudaStreamSetAttribute(s, cudaStreamAttributeAccessPolicyWindow, &v);
        found = 1;
    }
    cudaCtxResetPersistingL2Cache();
    cudaGetLastError(); // none of this may leave a sticky error for the subject
    return found;
}

// Gives call `call` fresh inputs in set `set` (cfg->refill) on kgate's input
// stream and holds the timing stream until they are written. The refill's
// records stay off the timing stream, whose gaps between samples must hold
// only kgate's flush and poison (kg_trace_deferred); the trace drops them
// (kg_trace_drop_stream) before anything is counted.
static int queue_refill(const kg_timer_cfg *cfg, void *ctx, int set, long call, cudaStream_t s, kg_err *err)
{
    if (!cfg->refill)
        return 0;
    if (cfg->refill(ctx, set, call, (kgate_stream)T.fill_stream, err))
        return err->code;
    KG_CUDA(cudaEventRecord(T.filled, T.fill_stream));
    KG_CUDA(cudaStreamWaitEvent(s, T.filled, 0));
out:
    return err->code;
}

// Queues the configured L2 flush before call `i` (warm-up and samples alike,
// so that the subject cannot tell them apart).
static int queue_flush(kg_flush flush, int i, cudaStream_t s, kg_err *err)
{
    if (flush == KG_FLUSH_MEMSET)
        KG_CUDA(cudaMemsetAsync(T.flush, i & 0xFF, T.flush_bytes / 2, s));
    else if (flush == KG_FLUSH_READ)
        return queue_read_flush(s, err);
out:
    return err->code;
}

// Times a CUDA graph of `n` back-to-back launches; returns the mean per launch.
static int batch_time(kg_launch_cb cb, void *ctx, int n_sets, cudaStream_t s, int n,
                      double *mean_s, kg_err *err)
{
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t a = NULL, b = NULL;
    double best = INFINITY;
    KG_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; i++)
        if (cb(ctx, i % n_sets, (kgate_stream)s, err)) {
            cudaStreamEndCapture(s, &g);
            goto out;
        }
    KG_CUDA(cudaStreamEndCapture(s, &g));
    KG_CUDA(cudaGraphInstantiate(&ge, g, 0));
    KG_CUDA(cudaEventCreate(&a));
    KG_CUDA(cudaEventCreate(&b));
    KG_CUDA(cudaGraphLaunch(ge, s)); // warm-up
    for (int r = 0; r < 5; r++) {
        float ms;
        KG_CUDA(cudaEventRecord(a, s));
        KG_CUDA(cudaGraphLaunch(ge, s));
        KG_CUDA(cudaEventRecord(b, s));
        KG_CUDA(cudaEventSynchronize(b));
        KG_CUDA(cudaEventElapsedTime(&ms, a, b));
        best = fmin(best, ms * 1e-3 / n);
    }
    *mean_s = best;
out:
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    if (a)
        cudaEventDestroy(a);
    if (b)
        cudaEventDestroy(b);
    cudaGetLastError();
    return err->code;
}

/* One kg_time call: its inputs, the samples and what is measured beside
 * each (SM clock, host time, blocker span, re-checked or not, call number),
 * the events and the trace, and the counters the stopping rule reads. */
typedef struct timing_run {
    const kg_timer_cfg *cfg;
    kg_launch_cb cb;
    void *ctx;
    kgate_stream st;
    cudaStream_t s;
    kg_timing *o;
    cudaEvent_t e0, e1, e2;
    int cap;
    double *samples, *clocks, *kept, *hosts, *spans;
    unsigned char *checked; /* samples re-checked (verify) */
    long *calls;            /* each sample's call */
    // traced: CUPTI records every kernel and copy while sampling, and the
    // samples can be told apart in them (the blocker stayed on); tracing:
    // the records are there, for work on other streams, even when not
    int n, n_kept, escapes, blocker, traced, tracing, n_blocked, n_sets;
    double t_start, gpu_s, max_clock, checks_s; // checks_s: wall time of the re-checks
    kg_trace_rec *rec;
    int nrec;
    long call;        // calls made so far, warm-up included (cfg->refill's numbering)
    uint32_t fill_id; // the input stream's id in the trace
} timing_run;

/* The arrays, the events and the trace started; 1 (err set) on failure. */
static int run_open(timing_run *R, kg_err *err)
{
    const kg_timer_cfg *cfg = R->cfg;
    int cap = R->cap = cfg->stop.max_samples;
    R->samples = (double *)malloc(sizeof(double) * (size_t)cap);
    R->clocks = (double *)malloc(sizeof(double) * (size_t)cap);
    R->kept = (double *)malloc(sizeof(double) * (size_t)cap);
    R->hosts = (double *)calloc((size_t)cap, sizeof(double));
    R->spans = (double *)calloc((size_t)cap, sizeof(double));
    R->checked = (unsigned char *)calloc((size_t)cap, 1);
    R->calls = (long *)malloc(sizeof(long) * (size_t)cap);
    R->blocker = 1;
    R->n_sets = cfg->n_sets > 0 ? cfg->n_sets : 1;
    if (!R->samples || !R->clocks || !R->kept || !R->hosts || !R->spans || !R->checked || !R->calls) {
        kg_err_set(err, KG_EXIT_ENV, "out of host memory for %d samples", cap);
        return 1;
    }
    if (timer_init(err))
        return 1;
    KG_CUDA(cudaEventCreate(&R->e0));
    KG_CUDA(cudaEventCreate(&R->e1));
    KG_CUDA(cudaEventCreate(&R->e2));
    {
        kg_err terr = {0, ""};
        R->traced = cfg->use_trace && kg_trace_start(&terr) == 0 &&
                    (!cfg->refill || kg_trace_stream_id((kgate_stream)T.fill_stream, &R->fill_id, &terr) == 0);
        if (cfg->use_trace && !R->traced)
            snprintf(R->o->note, sizeof R->o->note, "CUPTI unavailable, event times: %.200s", terr.msg);
    }
    return 0;
out:
    return 1;
}

static void run_close(timing_run *R)
{
    if (R->e0)
        cudaEventDestroy(R->e0);
    if (R->e1)
        cudaEventDestroy(R->e1);
    if (R->e2)
        cudaEventDestroy(R->e2);
    free(R->rec);
    free(R->samples);
    free(R->clocks);
    free(R->kept);
    free(R->hosts);
    free(R->spans);
    free(R->checked);
    free(R->calls);
}

/* Warm-up: the first call unblocked (module loading or JIT may
 * synchronize); the others exactly like samples, so that the subject
 * cannot tell warm-up from timing. What ran is then dropped from the
 * trace. 1 to leave (err set, or the subject's failure). */
static int run_warmup(timing_run *R, kg_err *err)
{
    const kg_timer_cfg *cfg = R->cfg;
    cudaStream_t s = R->s;
    for (int i = 0; i < cfg->warmup; i++) {
        if (queue_refill(cfg, R->ctx, i % R->n_sets, R->call++, s, err))
            return 1;
        if (cfg->before && cfg->before(R->ctx, i % R->n_sets, R->st, err))
            return 1;
        if (i > 0 && queue_flush(cfg->flush, i, s, err))
            return 1;
        if (i > 0 && queue_blocker(s, err))
            return 1;
        int rc = R->cb(R->ctx, i % R->n_sets, R->st, err);
        __sync_synchronize();
        T.flag_host[0] = 1;
        if (rc) {
            cudaStreamSynchronize(s);
            return 1;
        }
        KG_CUDA(cudaStreamSynchronize(s));
    }
    if (R->traced) { // drop what ran before sampling
        kg_err terr = {0, ""};
        if (kg_trace_take(&R->rec, &R->nrec, &terr))
            R->traced = 0;
        free(R->rec);
        R->rec = NULL;
        R->tracing = R->traced;
    }
    return 0;
out:
    return 1;
}

/* The first samples' escape check: nothing else of ours is queued, so a
 * busy device means escaped work. Two of the first three samples must show
 * it, so that a host hiccup is not taken for a kernel on another stream. */
static int sample_escape_check(timing_run *R, double ms, kg_err *err)
{
    double t0 = now_s();
    KG_CUDA(cudaDeviceSynchronize());
    {
        double waited = now_s() - t0;
        if (waited > fmax(50e-6, 0.02 * ms * 1e-3)) {
            R->escapes++;
            R->o->escaped_s = fmax(R->o->escaped_s, waited);
        }
        R->o->escaped = R->escapes >= 2;
    }
    return 0;
out:
    return 1;
}

/* A sample dropped: the launch blocks the host (time unblocked from now
 * on), or the SM clock shows throttling (let the GPU recover, nvbench's
 * rule). */
static void sample_drop_rules(timing_run *R, double clock)
{
    const kg_timer_cfg *cfg = R->cfg;
    kg_timing *o = R->o;
    int n = R->n;
    if (R->blocker && T.flag_host[1]) {
        // Submission took longer than the blocker waits: the launch itself
        // synchronizes. Drop the sample and time unblocked from now on.
        o->n_blocker_timeouts++;
        R->blocker = 0;
        R->traced = 0; // samples can no longer be told apart in the trace
        R->samples[n] = -1;
        kg_timing_note(o, "launch blocks the host: timed without the blocking kernel");
    } else if (clock > 0 && clock < cfg->throttle_frac * fmax(R->max_clock, T.clock_ref_mhz)) {
        o->n_throttled++;
        R->samples[n] = -2;
        if (cfg->cooldown_s > 0)
            usleep((useconds_t)(cfg->cooldown_s * 1e6));
    }
}

/* One sample: fresh inputs, the flush and the blocker queued, the call
 * between two events, then its clock probe (or the escape check) and the
 * drop rules. 1 to leave (err set, or the subject's failure). */
static int run_sample(timing_run *R, kg_err *err)
{
    const kg_timer_cfg *cfg = R->cfg;
    cudaStream_t s = R->s;
    int n = R->n, escape_check = n < ESCAPE_CHECKS;
    double clock = 0;
    float ms;
    if (reset_persisting(s))
        R->o->n_persist_reset++;
    R->calls[n] = R->call;
    if (queue_refill(cfg, R->ctx, n % R->n_sets, R->call++, s, err))
        return 1;
    if (cfg->before && cfg->before(R->ctx, n % R->n_sets, R->st, err))
        return 1;
    if (queue_flush(cfg->flush, n, s, err))
        return 1;
    if (R->blocker && queue_blocker(s, err))
        return 1;
    R->n_blocked += R->blocker;
    KG_CUDA(cudaEventRecord(R->e0, s));
    {
        double h0 = now_s();
        if (R->cb(R->ctx, n % R->n_sets, R->st, err)) {
            T.flag_host[0] = 1;
            cudaStreamSynchronize(s);
            return 1;
        }
        R->hosts[n] = now_s() - h0;
    }
    KG_CUDA(cudaEventRecord(R->e1, s));
    if (!escape_check) {
        clock_probe<<<1, 1, 0, s>>>(T.probe_dev, PROBE_CYCLES);
        KG_CUDA(cudaGetLastError());
        KG_CUDA(cudaEventRecord(R->e2, s));
    }
    if (R->blocker) {
        __sync_synchronize();
        T.flag_host[0] = 1;
    }
    KG_CUDA(cudaEventSynchronize(R->e1));
    KG_CUDA(cudaEventElapsedTime(&ms, R->e0, R->e1));
    if (escape_check) {
        if (sample_escape_check(R, ms, err))
            return 1;
    } else {
        KG_CUDA(cudaEventSynchronize(R->e2));
        volatile unsigned long long *pr = T.probe_host;
        clock = pr[1] ? pr[0] * 1e3 / (double)pr[1] : 0;
        R->max_clock = fmax(R->max_clock, clock);
        if (R->blocker && pr[2] > pr[3])
            R->spans[n] = (double)(pr[2] - pr[3]) * 1e-9;
    }
    R->clocks[n] = clock;
    R->samples[n] = ms * 1e-3;
    if (cfg->host_time) /* the provider's share of the call, asked once the sample is over */
        R->hosts[n] = cfg->host_time(R->ctx, R->hosts[n]);
    sample_drop_rules(R, clock);
    R->n++;
    R->o->n_total = R->n;
    return 0;
out:
    return 1;
}

/* Re-checks sample i against the reference of its own inputs: 0 right, 2
 * wrong (verify_failed set), 1 to leave (err set). */
static int recheck(timing_run *R, int i, kg_err *err)
{
    R->checked[i] = 1; /* its checks run before the next sample: not the subject's deferred work */
    int wrong = R->cfg->verify(R->ctx, i % R->n_sets, R->calls[i], err);
    if (wrong < 0 || err->code)
        return 1;
    R->o->n_verified++;
    if (wrong) {
        R->o->verify_failed = i + 1;
        return 2;
    }
    return 0;
}

/* Sampling until the stopping rule (or a wrong re-check, or the arrays'
 * end) says so; the samples to re-check are drawn from a seed the subject
 * cannot see. 1 to leave (err set). */
static int run_sampling(timing_run *R, kg_err *err)
{
    const kg_timer_cfg *cfg = R->cfg;
    kg_timing *o = R->o;
    kg_stopper stopper;
    kg_stop_init(&stopper, &cfg->stop);
    R->t_start = now_s();
    for (;;) {
        if (run_sample(R, err))
            return 1;
        int n = R->n;
        if (cfg->verify && kg_recheck_pick(&cfg->stop, cfg->verify_min, cfg->verify_max, cfg->verify_seed, n - 1,
                                           R->n_kept, R->gpu_s, now_s() - R->t_start - R->checks_s, o->n_verified,
                                           R->checks_s)) {
            const double t_check = now_s();
            KG_CUDA(cudaStreamSynchronize(R->s));
            int rc = recheck(R, n - 1, err);
            if (rc == 1)
                return 1;
            R->checks_s += now_s() - t_check;
            if (rc == 2)
                break;
        }
        if (R->samples[n - 1] >= 0) {
            R->gpu_s += R->samples[n - 1];
            R->kept[R->n_kept++] = R->samples[n - 1];
        }
        if (n == R->cap) { /* dropped samples count too: the arrays hold cap */
            o->stop = KG_STOP_MAX_SAMPLES;
            break;
        }
        // The rule sees event times; CUPTI's replace them after the loop.
        kg_stop_reason r = kg_stop_check(&stopper, R->kept, R->n_kept, R->gpu_s, now_s() - R->t_start);
        if (r != KG_STOP_NONE) {
            o->stop = r;
            break;
        }
    }
    o->wall_s = now_s() - R->t_start;
    o->gpu_s = R->gpu_s;
    KG_CUDA(cudaStreamSynchronize(R->s));
    if (cfg->verify && o->n_verified == 0 && !o->verify_failed && R->n > 0 && recheck(R, R->n - 1, err) == 1)
        return 1; /* no sample was drawn: the last one is re-checked */
    o->clock_ref_mhz = fmax(R->max_clock, T.clock_ref_mhz);
    if (R->n_kept) { // kept[] still holds the event times of the kept samples
        kg_stats es;
        kg_stats_compute(R->kept, R->n_kept, &es);
        o->event_median_s = es.median;
    }
    return 0;
out:
    return 1;
}

/* What the trace says of the records taken: work on other streams, vendor
 * kernels' share, the samples' CUPTI times (when they can be told apart),
 * and work queued between samples. *esc: samples that showed escaped work. */
static void trace_records(timing_run *R, int *esc)
{
    kg_timing *o = R->o;
    kg_trace_rec *rec = R->rec;
    if (R->cfg->refill) /* kgate's refills: on their own stream, not the subject's work */
        R->nrec = kg_trace_drop_stream(rec, R->nrec, R->fill_id);
    int nrec = R->nrec, n = R->n;
    /* work on other streams, whether or not the samples can be told
     * apart: a launch that once held the host past the blocker's
     * timeout turns the blocker off, not this check */
    int first_foreign = -1;
    o->n_foreign = kg_trace_foreign(rec, nrec, &first_foreign);
    if (first_foreign >= 0)
        kg_timing_note(o, "%d record(s) on other streams, the first %.40s", o->n_foreign, rec[first_foreign].name);
    kg_trace_vendor_use vu;
    kg_trace_vendor(rec, nrec, &vu);
    o->n_vendor = vu.n;
    o->vendor_share = vu.share;
    o->vendor_compute_share = vu.compute_share;
    o->vendor_lib = vu.lib;
    o->vendor_seen = 1;
    if (vu.first >= 0)
        snprintf(o->vendor_first, sizeof o->vendor_first, "%.40s", rec[vu.first].name);
    if (R->traced)
        o->n_traced = kg_trace_split(rec, nrec, R->samples, n, esc);
    /* kgate's own records counted against what it queued (all of
     * them when the blocker stayed on), then the gaps between samples */
    kg_trace_plan plan = {n, R->n_blocked, ESCAPE_CHECKS, R->cfg->flush == KG_FLUSH_READ ? n : 0, R->checked};
    kg_trace_deferral why;
    int deferred = kg_trace_deferred(rec, nrec, &plan, &why);
    o->n_deferred = deferred > 0 ? deferred : 0;
    if (deferred < 0) {
        o->trace_lost = 1;
        kg_timing_note(o, "the trace lacked kgate's own records (%d samples): work queued between "
                          "samples could not be looked for", n);
    }
    if (why.gaps)
        kg_timing_note(o, "%d record(s) on the timing stream between samples, the first %.40s", why.gaps,
                       rec[why.first].name);
    if (why.named_like)
        kg_timing_note(o, "%d kernel(s) named like kgate's own beyond what it queued", why.named_like);
    if (why.timeless)
        kg_timing_note(o, "%d record(s) on the timing stream without their times", why.timeless);
}

/* The trace taken once everything queued so far finished, on every stream
 * (a record without its times is then work queued after this point), and
 * read. 1 to leave (err set). */
static int run_trace(timing_run *R, kg_err *err)
{
    kg_timing *o = R->o;
    if (!R->tracing)
        return 0;
    {
        kg_err terr = {0, ""};
        int esc = 0;
        KG_CUDA(cudaDeviceSynchronize());
        if (kg_trace_take(&R->rec, &R->nrec, &terr) == 0) {
            trace_records(R, &esc);
        } else { /* the records could not be taken: nothing was looked at */
            o->trace_lost = 1;
            kg_timing_note(o, "the trace could not be taken: %.120s", terr.msg);
        }
        if (esc >= 2 || o->n_foreign > 0 || o->n_deferred > 0 || o->trace_lost)
            o->escaped = 1;
    }
    return 0;
out:
    return 1;
}

/* The kept samples' statistics and medians beside them; 1 (err set) when
 * none was kept. */
static int run_summary(timing_run *R, kg_err *err)
{
    kg_timing *o = R->o;
    int nk = 0, n = R->n;
    for (int i = 0; i < n; i++)
        if (R->samples[i] >= 0)
            R->kept[nk++] = R->samples[i];
    o->span_median_s = kept_median(R->samples, R->spans, n, 1);
    o->host_median_s = kept_median(R->samples, R->hosts, n, 0);
    o->clock_mhz = kept_median(R->samples, R->clocks, n, 1);
    if (nk == 0) {
        kg_err_set(err, KG_EXIT_ENV, "no valid timing sample (%d taken, %d throttled)", n, o->n_throttled);
        return 1;
    }
    kg_stats_compute(R->kept, nk, &o->st);
    return 0;
}

/* A kernel shorter than batch_below_s is also timed as a graph of many
 * calls (the launch overhead spread over them). */
static void run_batch(timing_run *R)
{
    kg_timing *o = R->o;
    if (!(o->st.median < R->cfg->batch_below_s))
        return;
    int bn = (int)fmin(1000.0, fmax(20.0, 2e-3 / fmax(o->st.median, 1e-7)));
    kg_err berr = {0, ""};
    if (batch_time(R->cb, R->ctx, R->n_sets, R->s, bn, &o->batch_mean_s, &berr) == 0) {
        o->batched = 1;
        o->batch_n = bn;
    } else {
        kg_timing_note(o, "graph batch not measured: %.120s", berr.msg);
    }
}

extern "C" int kg_time(const kg_timer_cfg *cfg, kg_launch_cb cb, void *ctx, kgate_stream st,
                       kg_timing *o, kg_err *err)
{
    timing_run R;
    memset(&R, 0, sizeof R);
    R.cfg = cfg;
    R.cb = cb;
    R.ctx = ctx;
    R.st = st;
    R.s = (cudaStream_t)st;
    R.o = o;
    memset(o, 0, sizeof *o);
    if (run_open(&R, err) == 0 && run_warmup(&R, err) == 0 && run_sampling(&R, err) == 0 &&
        run_trace(&R, err) == 0 && run_summary(&R, err) == 0)
        run_batch(&R);
    run_close(&R);
    return err->code;
}
