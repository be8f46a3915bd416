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

extern "C" int kg_time(const kg_timer_cfg *cfg, kg_launch_cb cb, void *ctx, kgate_stream st,
                       kg_timing *o, kg_err *err)
{
    cudaStream_t s = (cudaStream_t)st;
    cudaEvent_t e0 = NULL, e1 = NULL, e2 = NULL;
    int cap = cfg->stop.max_samples;
    double *samples = (double *)malloc(sizeof(double) * (size_t)cap);
    double *clocks = (double *)malloc(sizeof(double) * (size_t)cap);
    double *kept = (double *)malloc(sizeof(double) * (size_t)cap);
    double *hosts = (double *)calloc((size_t)cap, sizeof(double));
    double *spans = (double *)calloc((size_t)cap, sizeof(double));
    unsigned char *checked = (unsigned char *)calloc((size_t)cap, 1); /* samples re-checked (verify) */
    // traced: CUPTI records every kernel and copy while sampling, and the
    // samples can be told apart in them (the blocker stayed on); tracing:
    // the records are there, for work on other streams, even when not
    int n = 0, n_kept = 0, escapes = 0, blocker = 1, traced = 0, tracing = 0, n_blocked = 0,
        n_sets = cfg->n_sets > 0 ? cfg->n_sets : 1;
    kg_stopper stopper;
    double t_start, gpu_s = 0, max_clock = 0, checks_s = 0; // checks_s: wall time of the re-checks
    kg_trace_rec *rec = NULL;
    int nrec = 0;
    long call = 0;            // calls made so far, warm-up included (cfg->refill's numbering)
    long *calls = (long *)malloc(sizeof(long) * (size_t)cap); // each sample's call
    uint32_t fill_id = 0;     // the input stream's id in the trace
    memset(o, 0, sizeof *o);
    if (!samples || !clocks || !kept || !hosts || !spans || !checked || !calls) {
        kg_err_set(err, KG_EXIT_ENV, "out of host memory for %d samples", cap);
        goto out;
    }
    if (timer_init(err))
        goto out;
    KG_CUDA(cudaEventCreate(&e0));
    KG_CUDA(cudaEventCreate(&e1));
    KG_CUDA(cudaEventCreate(&e2));
    {
        kg_err terr = {0, ""};
        traced = cfg->use_trace && kg_trace_start(&terr) == 0 &&
                 (!cfg->refill || kg_trace_stream_id((kgate_stream)T.fill_stream, &fill_id, &terr) == 0);
        if (cfg->use_trace && !traced)
            snprintf(o->note, sizeof o->note, "CUPTI unavailable, event times: %.200s", terr.msg);
    }

    // Warm-up: the first call unblocked (module loading or JIT may
    // synchronize); the others exactly like samples, so that the subject
    // cannot tell warm-up from timing.
    for (int i = 0; i < cfg->warmup; i++) {
        if (queue_refill(cfg, ctx, i % n_sets, call++, s, err))
            goto out;
        if (cfg->before && cfg->before(ctx, i % n_sets, st, err))
            goto out;
        if (i > 0 && queue_flush(cfg->flush, i, s, err))
            goto out;
        if (i > 0 && queue_blocker(s, err))
            goto out;
        int rc = cb(ctx, i % n_sets, st, err);
        __sync_synchronize();
        T.flag_host[0] = 1;
        if (rc) {
            cudaStreamSynchronize(s);
            goto out;
        }
        KG_CUDA(cudaStreamSynchronize(s));
    }
    if (traced) { // drop what ran before sampling
        kg_err terr = {0, ""};
        if (kg_trace_take(&rec, &nrec, &terr))
            traced = 0;
        free(rec);
        rec = NULL;
        tracing = traced;
    }

    kg_stop_init(&stopper, &cfg->stop);
    t_start = now_s();
    for (;;) {
        int escape_check = n < ESCAPE_CHECKS;
        if (reset_persisting(s))
            o->n_persist_reset++;
        calls[n] = call;
        if (queue_refill(cfg, ctx, n % n_sets, call++, s, err))
            goto out;
        if (cfg->before && cfg->before(ctx, n % n_sets, st, err))
            goto out;
        if (queue_flush(cfg->flush, n, s, err))
            goto out;
        if (blocker && queue_blocker(s, err))
            goto out;
        n_blocked += blocker;
        KG_CUDA(cudaEventRecord(e0, s));
        double h0 = now_s();
        if (cb(ctx, n % n_sets, st, err)) {
            T.flag_host[0] = 1;
            cudaStreamSynchronize(s);
            goto out;
        }
        hosts[n] = now_s() - h0;
        KG_CUDA(cudaEventRecord(e1, s));
        if (!escape_check) {
            clock_probe<<<1, 1, 0, s>>>(T.probe_dev, PROBE_CYCLES);
            KG_CUDA(cudaGetLastError());
            KG_CUDA(cudaEventRecord(e2, s));
        }
        if (blocker) {
            __sync_synchronize();
            T.flag_host[0] = 1;
        }
        KG_CUDA(cudaEventSynchronize(e1));
        float ms;
        KG_CUDA(cudaEventElapsedTime(&ms, e0, e1));
        double clock = 0;
        if (escape_check) {
            // Nothing else of ours is queued: a busy device means escaped
            // work. Two of the first three samples must show it, so that a
            // host hiccup is not taken for a kernel on another stream.
            double t0 = now_s();
            KG_CUDA(cudaDeviceSynchronize());
            double waited = now_s() - t0;
            if (waited > fmax(50e-6, 0.02 * ms * 1e-3)) {
                escapes++;
                o->escaped_s = fmax(o->escaped_s, waited);
            }
            o->escaped = escapes >= 2;
        } else {
            KG_CUDA(cudaEventSynchronize(e2));
            volatile unsigned long long *pr = T.probe_host;
            clock = pr[1] ? pr[0] * 1e3 / (double)pr[1] : 0;
            max_clock = fmax(max_clock, clock);
            if (blocker && pr[2] > pr[3])
                spans[n] = (double)(pr[2] - pr[3]) * 1e-9;
        }
        clocks[n] = clock;
        samples[n] = ms * 1e-3;
        if (cfg->host_time) /* the provider's share of the call, asked once the sample is over */
            hosts[n] = cfg->host_time(ctx, hosts[n]);
        if (blocker && T.flag_host[1]) {
            // Submission took longer than the blocker waits: the launch itself
            // synchronizes. Drop the sample and time unblocked from now on.
            o->n_blocker_timeouts++;
            blocker = 0;
            traced = 0; // samples can no longer be told apart in the trace
            samples[n] = -1;
            kg_timing_note(o, "launch blocks the host: timed without the blocking kernel");
        } else if (clock > 0 && clock < cfg->throttle_frac * fmax(max_clock, T.clock_ref_mhz)) {
            // Throttled: drop the sample and let the GPU recover (nvbench's rule).
            o->n_throttled++;
            samples[n] = -2;
            if (cfg->cooldown_s > 0)
                usleep((useconds_t)(cfg->cooldown_s * 1e6));
        }
        n++;
        o->n_total = n;
        // which samples are re-checked: draws from a seed the subject cannot see
        if (cfg->verify && kg_recheck_pick(&cfg->stop, cfg->verify_min, cfg->verify_max, cfg->verify_seed,
                                           n - 1, n_kept, gpu_s, now_s() - t_start - checks_s, o->n_verified,
                                           checks_s)) {
            const double t_check = now_s();
            KG_CUDA(cudaStreamSynchronize(s));
            checked[n - 1] = 1; /* its checks run before the next sample: not the subject's deferred work */
            int wrong = cfg->verify(ctx, (n - 1) % n_sets, calls[n - 1], err);
            if (wrong < 0 || err->code)
                goto out;
            checks_s += now_s() - t_check;
            o->n_verified++;
            if (wrong) {
                o->verify_failed = n;
                break;
            }
        }
        if (samples[n - 1] >= 0) {
            gpu_s += samples[n - 1];
            kept[n_kept++] = samples[n - 1];
        }
        if (n == cap) { /* dropped samples count too: the arrays hold cap */
            o->stop = KG_STOP_MAX_SAMPLES;
            break;
        }
        // The rule sees event times; CUPTI's replace them after the loop.
        kg_stop_reason r = kg_stop_check(&stopper, kept, n_kept, gpu_s, now_s() - t_start);
        if (r != KG_STOP_NONE) {
            o->stop = r;
            break;
        }
    }
    o->wall_s = now_s() - t_start;
    o->gpu_s = gpu_s;
    KG_CUDA(cudaStreamSynchronize(s));
    if (cfg->verify && o->n_verified == 0 && !o->verify_failed && n > 0) {
        /* no sample was drawn: re-check the last one */
        checked[n - 1] = 1;
        int wrong = cfg->verify(ctx, (n - 1) % n_sets, calls[n - 1], err);
        if (wrong < 0 || err->code)
            goto out;
        o->n_verified++;
        if (wrong)
            o->verify_failed = n;
    }
    o->clock_ref_mhz = fmax(max_clock, T.clock_ref_mhz);
    if (n_kept) { // kept[] still holds the event times of the kept samples
        kg_stats es;
        kg_stats_compute(kept, n_kept, &es);
        o->event_median_s = es.median;
    }
    {
        int nk = 0;
        if (tracing) {
            kg_err terr = {0, ""};
            int esc = 0;
            // everything queued so far finished, on every stream: a record
            // without its times is then work queued after this point
            KG_CUDA(cudaDeviceSynchronize());
            if (kg_trace_take(&rec, &nrec, &terr) == 0) {
                if (cfg->refill) /* kgate's refills: on their own stream, not the subject's work */
                    nrec = kg_trace_drop_stream(rec, nrec, fill_id);
                /* work on other streams, whether or not the samples can be told
                 * apart: a launch that once held the host past the blocker's
                 * timeout turns the blocker off, not this check */
                int first_foreign = -1;
                o->n_foreign = kg_trace_foreign(rec, nrec, &first_foreign);
                if (first_foreign >= 0)
                    kg_timing_note(o, "%d record(s) on other streams, the first %.40s", o->n_foreign,
                             rec[first_foreign].name);
                kg_trace_vendor_use vu;
                kg_trace_vendor(rec, nrec, &vu);
                o->n_vendor = vu.n;
                o->vendor_share = vu.share;
                o->vendor_compute_share = vu.compute_share;
                o->vendor_lib = vu.lib;
                o->vendor_seen = 1;
                if (vu.first >= 0)
                    snprintf(o->vendor_first, sizeof o->vendor_first, "%.40s", rec[vu.first].name);
                if (traced)
                    o->n_traced = kg_trace_split(rec, nrec, samples, n, &esc);
                /* kgate's own records counted against what it queued (all of
                 * them when the blocker stayed on), then the gaps between samples */
                kg_trace_plan plan = {n, n_blocked, ESCAPE_CHECKS, cfg->flush == KG_FLUSH_READ ? n : 0, checked};
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
            } else { /* the records could not be taken: nothing was looked at */
                o->trace_lost = 1;
                kg_timing_note(o, "the trace could not be taken: %.120s", terr.msg);
            }
            if (esc >= 2 || o->n_foreign > 0 || o->n_deferred > 0 || o->trace_lost)
                o->escaped = 1;
        }
        for (int i = 0; i < n; i++)
            if (samples[i] >= 0)
                kept[nk++] = samples[i];
        o->span_median_s = kept_median(samples, spans, n, 1);
        o->host_median_s = kept_median(samples, hosts, n, 0);
        o->clock_mhz = kept_median(samples, clocks, n, 1);
        if (nk == 0) {
            kg_err_set(err, KG_EXIT_ENV, "no valid timing sample (%d taken, %d throttled)", n,
                       o->n_throttled);
            goto out;
        }
        kg_stats_compute(kept, nk, &o->st);
    }
    if (o->st.median < cfg->batch_below_s) {
        int bn = (int)fmin(1000.0, fmax(20.0, 2e-3 / fmax(o->st.median, 1e-7)));
        kg_err berr = {0, ""};
        if (batch_time(cb, ctx, n_sets, s, bn, &o->batch_mean_s, &berr) == 0) {
            o->batched = 1;
            o->batch_n = bn;
        } else {
            kg_timing_note(o, "graph batch not measured: %.120s", berr.msg);
        }
    }
out:
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (e2)
        cudaEventDestroy(e2);
    free(rec);
    free(samples);
    free(clocks);
    free(kept);
    free(hosts);
    free(spans);
    free(checked);
    free(calls);
    return err->code;
}
