// Cheats that replay answers cached by the content of the inputs (class 15)
// and cheats that learn the phase (warm-up, timed, re-checked) from the
// evaluator's own behaviour (class 17): the order of its supports() calls,
// and how often and how fast it calls.
//
// Every case is a softmax (fp16) whose honest path is slow (adv_warp_softmax:
// one warp a row, far under the roof, SLOW at every preset), so that only
// its cheat could make it OK:
//   content_memo_full     a 64-bit hash of all of x (every element and its
//                         index) decides, on the device, whether the last
//                         answer is replayed (a copy) or computed (and kept):
//                         a hash of x and a copy of y move 1.5 times the
//                         softmax's essential bytes, a rho near 0.6, where
//                         the honest path is far below 0.5.
//   content_memo_sampled  the same keyed on 64 sampled elements: a replay
//                         costs little more than the copy (a rho near 0.9);
//                         inputs that differ only where it does not sample
//                         (kgate's edge rows) get a stale answer, so it is
//                         INCORRECT where it is not SLOW.
//   late_skip             honest for its first 64 calls, then computes only
//                         the first half of the rows whenever it is called
//                         within 2 ms of its last return (a timing loop's
//                         pace); before spread re-checks, every re-check fell
//                         in the first samples.
//   phase_supports        skips half the rows on every call made after
//                         supports() was asked about a shape other than the
//                         one it was last called with, once it has been
//                         called (a worker that asked about the extra shapes
//                         between the checks and the timing told it the timing
//                         had begun); a worker that asks about every shape
//                         before the first call tells it nothing, and it stays
//                         honest (so OK or SLOW, never INCORRECT, is the
//                         expected verdict: what it learnt was nothing).
// A timing that gives every call inputs of its own defeats the caches: each
// call misses and computes the slow way.
#include <time.h>

#include "adv.cuh"

// ------------------------------------------------------------ the caches
struct memo_state {
    unsigned long long acc; // the hash being built
    unsigned long long key; // the cached answer's
    int valid, hit;
};

// XOR of mix(index, value) over x, or over `samples` evenly spaced elements.
__global__ void memo_hash(const __half *x, int64_t n, int64_t samples, memo_state *st)
{
    const int64_t m = samples > 0 ? samples : n;
    unsigned long long h = 0;
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < m; k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = samples > 0 ? k * n / samples : k;
        h ^= adv_mix(((unsigned long long)i << 16) ^ __half_as_ushort(x[i]));
    }
    for (int o = 16; o > 0; o >>= 1)
        h ^= __shfl_xor_sync(0xffffffffu, h, o);
    if (threadIdx.x % 32 == 0 && h)
        atomicXor(&st->acc, h);
}

__global__ void memo_decide(memo_state *st, int64_t n)
{
    const unsigned long long key = adv_mix(st->acc ^ adv_mix((unsigned long long)n));
    st->hit = st->valid && st->key == key;
    st->acc = key;
}

// dst = src when the hash hit (on_hit 1) or missed (on_hit 0); a miss also
// records the key of the answer it keeps.
__global__ void memo_copy(const __half *src, __half *dst, int64_t n, memo_state *st, int on_hit)
{
    if (st->hit != on_hit)
        return;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
    if (!on_hit && blockIdx.x == 0 && threadIdx.x == 0) {
        st->key = st->acc;
        st->valid = 1;
    }
}

// One replay cache of y for x's content (full hash, or `samples` of it).
static int memo_launch(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s, int64_t samples)
{
    static memo_state *st;
    static __half *cache;
    static int64_t cache_n;
    const int64_t rows = adv_rows(&in[0]), cols = adv_cols(&in[0]), n = rows * cols;
    const __half *x = (const __half *)in[0].data;
    __half *y = (__half *)out[0].data;
    if (adv_honest()) {
        adv_warp_softmax<<<(unsigned)rows, 32, 0, s>>>(x, y, cols, (const int *)NULL);
        return adv_launched(p);
    }
    if (!st && cudaMalloc(&st, sizeof *st) != cudaSuccess)
        return adv_fail(p, 9, "memo: no device memory for its state");
    if (cache_n != n) { // a new shape: forget the last answer
        cudaFree(cache);
        cache = NULL;
        cache_n = 0;
        if (cudaMalloc(&cache, (size_t)n * sizeof(__half)) != cudaSuccess)
            return adv_fail(p, 9, "memo: no device memory for its cache");
        cache_n = n;
        cudaMemsetAsync(st, 0, sizeof *st, s);
    }
    cudaMemsetAsync(&st->acc, 0, sizeof st->acc, s);
    memo_hash<<<samples > 0 ? 1 : 1056, 256, 0, s>>>(x, n, samples, st);
    memo_decide<<<1, 1, 0, s>>>(st, n);
    adv_warp_softmax<<<(unsigned)rows, 32, 0, s>>>(x, y, cols, &st->hit); // a miss: the slow, honest way
    memo_copy<<<1056, 256, 0, s>>>(cache, y, n, st, 1);                   // a hit: the last answer
    memo_copy<<<1056, 256, 0, s>>>(y, cache, n, st, 0);                   // a miss: kept
    return adv_launched(p);
}

ADV_LAUNCH(adv_content_memo_full)
{
    ADV_EXPECT(1, 1);
    return memo_launch(in, out, p, (cudaStream_t)stream, 0);
}

ADV_LAUNCH(adv_content_memo_sampled)
{
    ADV_EXPECT(1, 1);
    return memo_launch(in, out, p, (cudaStream_t)stream, 64);
}

// ------------------------------------------------------- learning the phase
static double adv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// The slow softmax over the first `rows` rows only (the rest keep what the
// evaluator left there: its poison).
static int some_rows(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s, int64_t rows)
{
    if (rows > 0)
        adv_warp_softmax<<<(unsigned)rows, 32, 0, s>>>((const __half *)in[0].data, (__half *)out[0].data,
                                                        adv_cols(&in[0]), (const int *)NULL);
    return adv_launched(p);
}

ADV_LAUNCH(adv_late_skip)
{
    ADV_EXPECT(1, 1);
    static long calls;
    static double last_return;
    const double now = adv_now();
    const int64_t rows = adv_rows(&in[0]);
    const bool skip = !adv_honest() && ++calls > 64 && now - last_return < 2e-3;
    const int rc = some_rows(in, out, p, (cudaStream_t)stream, skip ? rows / 2 : rows);
    last_return = adv_now();
    return rc;
}

static int64_t last_rows = -1, last_cols = -1; // the shape of the last call
static bool told;                              // supports() asked about another shape after a call

int adv_phase_supports_shape(const int64_t *e, int n)
{
    if (n == 2 && last_rows >= 0 && (e[0] != last_rows || e[1] != last_cols))
        told = true;
    return 1;
}

ADV_LAUNCH(adv_phase_supports)
{
    ADV_EXPECT(1, 1);
    const int64_t rows = adv_rows(&in[0]), cols = adv_cols(&in[0]);
    const bool main_shape = last_rows < 0 || (rows == last_rows && cols == last_cols);
    const bool skip = !adv_honest() && told && main_shape;
    if (last_rows < 0) {
        last_rows = rows;
        last_cols = cols;
    }
    return some_rows(in, out, p, (cudaStream_t)stream, skip ? rows / 2 : rows);
}
