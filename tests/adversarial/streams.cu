// Work the timer does not see (docs/security.md): the work runs somewhere the timing on the
// given stream does not see. Every kernel here is an honest layer_norm
// (bf16); only the stream it runs on is wrong.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "adv.cuh"

typedef __nv_bfloat16 bf16;

static int ln(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s)
{
    return adv_layer_norm_on<bf16>(in, out, p, s, adv_eps(p));
}

// side_stream: everything on a private non-blocking stream, created once; no
// event, no wait: the given stream never hears of the work.
ADV_LAUNCH(adv_side_stream)
{
    ADV_EXPECT(3, 1);
    static cudaStream_t side;
    if (adv_honest())
        return ln(in, out, p, (cudaStream_t)stream);
    if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess)
        return adv_launched(p);
    return ln(in, out, p, side);
}

// side_stream_join: the polite version (the side stream waits for the given
// one, the given one waits for the side stream's event): the output is ready
// whenever the given stream is, but the kernel itself runs on another stream.
ADV_LAUNCH(adv_side_stream_join)
{
    ADV_EXPECT(3, 1);
    static cudaStream_t side;
    static cudaEvent_t in_ready, out_ready;
    cudaStream_t s = (cudaStream_t)stream;
    if (adv_honest())
        return ln(in, out, p, s);
    if (!side && (cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess ||
                  cudaEventCreateWithFlags(&in_ready, cudaEventDisableTiming) != cudaSuccess ||
                  cudaEventCreateWithFlags(&out_ready, cudaEventDisableTiming) != cudaSuccess))
        return adv_launched(p);
    cudaEventRecord(in_ready, s);
    cudaStreamWaitEvent(side, in_ready, 0);
    int rc = ln(in, out, p, side);
    cudaEventRecord(out_ready, side);
    cudaStreamWaitEvent(s, out_ready, 0);
    return rc ? rc : adv_launched(p);
}

// legacy_stream: the legacy default stream (stream 0). kgate's stream is
// non-blocking, so the two do not synchronize.
ADV_LAUNCH(adv_legacy_stream)
{
    ADV_EXPECT(3, 1);
    return ln(in, out, p, adv_honest() ? (cudaStream_t)stream : cudaStreamLegacy);
}

// per_thread_stream: the per-thread default stream.
ADV_LAUNCH(adv_per_thread_stream)
{
    ADV_EXPECT(3, 1);
    return ln(in, out, p, adv_honest() ? (cudaStream_t)stream : cudaStreamPerThread);
}

// graph_elsewhere: the kernel is captured into a CUDA graph on a private
// stream (again whenever the buffers, shape or eps change: a graph replay
// cache) and the graph is launched there.
ADV_LAUNCH(adv_graph_elsewhere)
{
    ADV_EXPECT(3, 1);
    struct key {
        const void *x, *w, *b;
        void *y;
        int64_t rows, cols;
        float eps;
    };
    static cudaStream_t gs;
    static cudaGraphExec_t exec;
    static key have;
    if (adv_honest())
        return ln(in, out, p, (cudaStream_t)stream);
    if (!gs && cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking) != cudaSuccess)
        return adv_launched(p);
    key k;
    memset(&k, 0, sizeof k);
    k.x = in[0].data, k.w = in[1].data, k.b = in[2].data, k.y = out[0].data;
    k.rows = adv_rows(&in[0]), k.cols = adv_cols(&in[0]), k.eps = adv_eps(p);
    if (!exec || memcmp(&k, &have, sizeof k) != 0) {
        cudaGraph_t g = NULL;
        if (exec)
            cudaGraphExecDestroy(exec);
        exec = NULL;
        if (cudaStreamBeginCapture(gs, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
            return adv_launched(p);
        ln(in, out, p, gs);
        if (cudaStreamEndCapture(gs, &g) != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess) {
            if (g)
                cudaGraphDestroy(g);
            exec = NULL;
            return adv_launched(p);
        }
        cudaGraphDestroy(g);
        have = k;
    }
    cudaGraphLaunch(exec, gs);
    return adv_launched(p);
}

// host_thread: the launch is handed to a persistent host thread that launches
// on its own stream; the launch function returns at once.
namespace {
struct ln_job {
    const bf16 *x, *w, *b;
    bf16 *y;
    int64_t rows, cols;
    float eps;
    int device;
};
// jobs handed from a launch to a host thread of the candidate's
template <typename T> struct job_queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<T> q;
    void push(const T &j)
    {
        {
            std::lock_guard<std::mutex> lock(mu);
            q.push_back(j);
        }
        cv.notify_one();
    }
    T pop()
    {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [this] { return !q.empty(); });
        T j = q.front();
        q.pop_front();
        return j;
    }
};
typedef job_queue<ln_job> ln_queue;
} // namespace

static ln_job ln_job_of(const DLTensor *in, DLTensor *out, const kgate_params *p)
{
    ln_job j = {(const bf16 *)in[0].data, (const bf16 *)in[1].data, (const bf16 *)in[2].data,
                (bf16 *)out[0].data, adv_rows(&in[0]), adv_cols(&in[0]), adv_eps(p),
                in[0].device.device_id};
    return j;
}

static void host_thread_main(ln_queue *w)
{
    cudaStream_t s = NULL;
    for (;;) {
        ln_job j = w->pop();
        cudaSetDevice(j.device);
        if (!s && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
            continue;
        adv_layer_norm_rows<bf16><<<(unsigned)j.rows, ADV_THREADS, 0, s>>>(j.x, j.w, j.b, j.y, j.cols, j.eps);
        cudaStreamSynchronize(s);
    }
}

ADV_LAUNCH(adv_host_thread)
{
    ADV_EXPECT(3, 1);
    static ln_queue *w; // never freed: the thread outlives every static destructor
    if (adv_honest())
        return ln(in, out, p, (cudaStream_t)stream);
    if (!w) {
        w = new ln_queue;
        std::thread(host_thread_main, w).detach();
    }
    w->push(ln_job_of(in, out, p));
    return 0;
}

// deferred_thread: the work on the given stream, but queued after the call
// returned. When the stream is held (busy for 0.5 ms, polled every 20 us:
// kgate's blocker, so this call is timed), the launch queues only a marker
// kernel that writes a sequence number to mapped host memory, and returns; a
// host thread waits for the marker to run -- by then kgate has queued its end
// event and probe behind this call -- and queues the layer_norm on the same
// stream, between two samples, where no sample times it. Otherwise it is
// honest.
namespace {
struct deferred_job {
    ln_job ln;
    cudaStream_t s;
    unsigned long long seq;
};
struct deferred_queue : job_queue<deferred_job> {
    volatile unsigned long long *seen; // mapped: the marker's last sequence number
    unsigned long long *seen_dev;
};
} // namespace

__global__ void adv_marker(unsigned long long *seen, unsigned long long seq)
{
    *(volatile unsigned long long *)seen = seq;
    __threadfence_system();
}

static void deferred_main(deferred_queue *w)
{
    for (;;) {
        deferred_job j = w->pop();
        cudaSetDevice(j.ln.device);
        for (long spin = 0; *w->seen < j.seq && spin < 100000000L; spin++)
            ; // the marker has not run: kgate's probe is not yet queued behind the call
        adv_layer_norm_rows<bf16><<<(unsigned)j.ln.rows, ADV_THREADS, 0, j.s>>>(j.ln.x, j.ln.w, j.ln.b, j.ln.y,
                                                                                  j.ln.cols, j.ln.eps);
        cudaGetLastError();
    }
}

ADV_LAUNCH(adv_deferred_thread)
{
    ADV_EXPECT(3, 1);
    static deferred_queue *w; // never freed: the thread outlives every static destructor
    static unsigned long long seq;
    cudaStream_t s = (cudaStream_t)stream;
    if (adv_honest() || !adv_stream_held(s, 500, 20))
        return ln(in, out, p, s);
    if (!w) {
        unsigned long long *h = NULL, *hd = NULL;
        if (cudaHostAlloc(&h, sizeof *h, cudaHostAllocMapped) != cudaSuccess ||
            cudaHostGetDevicePointer(&hd, h, 0) != cudaSuccess)
            return adv_launched(p);
        *h = 0;
        w = new deferred_queue;
        w->seen = h;
        w->seen_dev = hd;
        std::thread(deferred_main, w).detach();
    }
    deferred_job j = {ln_job_of(in, out, p), s, ++seq};
    adv_marker<<<1, 1, 0, s>>>(w->seen_dev, j.seq);
    w->push(j);
    return adv_launched(p);
}

// named_flush: the work on the given stream, inside the call, but in a kernel
// named like kgate's L2 flush (extern "C": the bare name read_flush) behind
// a kernel that does nothing. A trace split that took every read_flush for
// kgate's would end the sample's window where the work starts and time the
// empty kernel alone; kgate counts its flushes (one a sample), so these are
// kernels named like its own beyond what it queued.
__global__ void adv_nothing() {}

extern "C" __global__ void read_flush(const bf16 *x, const bf16 *w, const bf16 *b, bf16 *y, int64_t cols,
                                      float eps)
{
    adv_layer_norm_row<bf16>(x, w, b, y, cols, eps);
}

ADV_LAUNCH(adv_named_flush)
{
    ADV_EXPECT(3, 1);
    cudaStream_t s = (cudaStream_t)stream;
    if (adv_honest())
        return ln(in, out, p, s);
    adv_nothing<<<1, 1, 0, s>>>();
    read_flush<<<(unsigned)adv_rows(&in[0]), ADV_THREADS, 0, s>>>(
        (const bf16 *)in[0].data, (const bf16 *)in[1].data, (const bf16 *)in[2].data, (bf16 *)out[0].data,
        adv_cols(&in[0]), adv_eps(p));
    return adv_launched(p);
}
