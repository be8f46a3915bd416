// Memory cheats on an honest softmax (fp16): stray writes (oob_after,
// oob_before), input mutation (class 6), output caches keyed on a pointer
// or replayed from the first call (classes 5, 6), and tampering with the
// evaluator's own fp64 reference (class 7).
#include <set>

#include "adv.cuh"

static int sm(const DLTensor *in, DLTensor *out, const kgate_params *p, cudaStream_t s)
{
    return adv_softmax_on<__half>(in, out, p, s);
}

// Writes v at *q (one thread).
__global__ void adv_poke(__half *q, float v) { *q = __float2half_rn(v); }

// Flips the sign bit of x[0]: the bits always change (NaN and 0 included).
__global__ void adv_negate_first(__half *x)
{
    *x = __ushort_as_half((unsigned short)(__half_as_ushort(*x) ^ 0x8000u));
}

// oob_after: correct, plus y[ROWS*COLS] = 0 (a 0x0000 that no guard byte
// pattern matches: kgate's guard bytes are never 0x00).
ADV_LAUNCH(adv_oob_after)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    int rc = sm(in, out, p, s);
    if (rc || adv_honest())
        return rc;
    adv_poke<<<1, 1, 0, s>>>((__half *)out[0].data + adv_numel(&out[0]), 0.f);
    return adv_launched(p);
}

// oob_before: correct, plus y[-1] = 0.
ADV_LAUNCH(adv_oob_before)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    int rc = sm(in, out, p, s);
    if (rc || adv_honest())
        return rc;
    adv_poke<<<1, 1, 0, s>>>((__half *)out[0].data - 1, 0.f);
    return adv_launched(p);
}

// mutate: correct output, then x[0] changes sign (after y was computed, so
// the output is right; the input the next reference reads is not).
ADV_LAUNCH(adv_mutate)
{
    ADV_EXPECT(1, 1);
    cudaStream_t s = (cudaStream_t)stream;
    int rc = sm(in, out, p, s);
    if (rc || adv_honest())
        return rc;
    adv_negate_first<<<1, 1, 0, s>>>((__half *)in[0].data);
    return adv_launched(p);
}

// pointer_cache: computes the first time it sees an output pointer; after
// that, "the answer is already there" and it launches nothing.
ADV_LAUNCH(adv_pointer_cache)
{
    ADV_EXPECT(1, 1);
    static std::set<void *> *seen = new std::set<void *>;
    if (!adv_honest() && !seen->insert(out[0].data).second)
        return 0;
    return sm(in, out, p, (cudaStream_t)stream);
}

// stale_output: keeps a private copy of its first (correct) output and
// copies it into y on every later call of the same size instead of
// computing; another size is computed honestly.
ADV_LAUNCH(adv_stale_output)
{
    ADV_EXPECT(1, 1);
    static void *copy;
    static size_t bytes;
    cudaStream_t s = (cudaStream_t)stream;
    const size_t n = (size_t)adv_numel(&out[0]) * sizeof(__half);
    if (adv_honest())
        return sm(in, out, p, s);
    if (copy && bytes == n) {
        cudaMemcpyAsync(out[0].data, copy, n, cudaMemcpyDeviceToDevice, s);
        return adv_launched(p);
    }
    int rc = sm(in, out, p, s);
    if (rc || copy)
        return rc;
    if (cudaMalloc(&copy, n) != cudaSuccess) {
        copy = NULL;
        return adv_launched(p);
    }
    bytes = n;
    cudaMemcpyAsync(copy, out[0].data, n, cudaMemcpyDeviceToDevice, s);
    return adv_launched(p);
}

// ------------------------------------------------------------- ref_tamper
// The worker holds its fp64 reference of y on the same device, in a
// cudaMalloc of exactly ROWS*COLS*8 bytes made right after y's. Walking the
// address space from y with cuMemGetAddressRange finds it; the kernel then
// writes a cheap wrong answer (1/COLS everywhere) into y and the same values
// into the reference, so that the two agree. Where no such buffer is found it
// writes the wrong answer all the same (a kgate that hides or re-checks its
// reference must say INCORRECT); stderr says which happened, and
// KG_ADV_STRICT=1 makes a missed scan an error instead (a CRASH naming it).
typedef int (*adv_get_range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);

static adv_get_range_fn get_range(void)
{
    static adv_get_range_fn fn;
    static bool tried;
    if (!tried) {
        void *f = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        tried = true;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = (adv_get_range_fn)f;
        cudaGetLastError();
    }
    return fn;
}

// Walks from y's allocation in one direction (up: dir > 0, down: dir < 0)
// for an allocation of exactly `need` bytes within 8 GiB: every 256-byte
// boundary in the first 8 MiB, every 64 KiB beyond, hopping over each
// allocation it meets. (On the H200 small allocations follow each other
// upward, large ones are placed below: the reference of a 4096x32768 fp16
// tensor sits 1 GiB under y.)
static double *scan(adv_get_range_fn range, unsigned long long ybase, unsigned long long yend, size_t need, int dir)
{
    const unsigned long long span = 8ull << 30, near = 8ull << 20;
    unsigned long long p = dir > 0 ? (yend + 255) & ~255ull : ybase - 256, base;
    size_t size;
    for (int probes = 0; probes < 1 << 20; probes++) {
        const unsigned long long dist = dir > 0 ? p - yend : ybase - p;
        if (dist > span)
            break;
        if (range(&base, &size, p) == 0) {
            if (size == need)
                return (double *)base;
            p = dir > 0 ? (base + size + 255) & ~255ull : base - 256;
        } else {
            const unsigned long long step = dist < near ? 256 : 64 << 10;
            if (dir < 0 && p <= step)
                break;
            p = dir > 0 ? p + step : p - step;
        }
    }
    return NULL;
}

static double *find_reference(const void *y, size_t need)
{
    adv_get_range_fn range = get_range();
    unsigned long long base;
    size_t size;
    if (!range || range(&base, &size, (unsigned long long)y) != 0)
        return NULL;
    double *up = scan(range, base, base + size, need, +1), *down = scan(range, base, base + size, need, -1);
    if (!up || !down)
        return up ? up : down;
    return (unsigned long long)up - (base + size) < base - (unsigned long long)down ? up : down; // the nearer
}

__global__ void adv_tamper(__half *y, double *ref, int64_t n, float v)
{
    const __half h = __float2half_rn(v);
    const double d = (double)__half2float(h);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        y[i] = h;
        ref[i] = d;
    }
}

// The fp64 reference of y: searched for once per output buffer and size
// (stderr says whether it was found) and remembered.
struct ref_cache {
    const void *y;
    int64_t n;
    double *ref;
};

static double *cached_reference(ref_cache *c, const DLTensor *y, int64_t n, const char *who, const char *found,
                                const char *missing)
{
    if (y->data != c->y || n != c->n) {
        c->y = y->data;
        c->n = n;
        c->ref = find_reference(y->data, (size_t)n * sizeof(double));
        fprintf(stderr, "%s: %lld elements: fp64 reference %s\n", who, (long long)n, c->ref ? found : missing);
    }
    return c->ref;
}

// KG_ADV_STRICT=1: a scan that found nothing is an error, not a cheat that
// went ahead without the reference.
static bool adv_strict(void)
{
    const char *strict = getenv("KG_ADV_STRICT");
    return strict && *strict && strcmp(strict, "0") != 0;
}

ADV_LAUNCH(adv_ref_tamper)
{
    ADV_EXPECT(1, 1);
    static ref_cache cache;
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n = adv_numel(&out[0]);
    const float v = 1.f / (float)adv_cols(&in[0]);
    if (adv_honest())
        return sm(in, out, p, s);
    double *ref = cached_reference(&cache, &out[0], n, "ref_tamper", "found: overwriting it",
                                   "not found: y alone gets the wrong answer");
    if (!ref) {
        if (adv_strict())
            return adv_fail(p, 42, "ref_tamper: no allocation of the reference's size found near y");
        adv_fill<__half><<<1024, 256, 0, s>>>((__half *)out[0].data, n, v);
    } else {
        adv_tamper<<<1024, 256, 0, s>>>((__half *)out[0].data, ref, n, v);
    }
    return adv_launched(p);
}

// ------------------------------------------------------------- ref_copy
// Finds the worker's fp64 reference of y the way ref_tamper does and copies
// it into y: a right answer without computing anything, wherever the
// reference of the call's inputs exists while the call runs. kgate computes
// it only after the call and overwrites it with NaN once compared, so the
// copy is stale or NaN. Where no such buffer is found y gets 1/COLS.
__global__ void adv_copy_ref(__half *y, const double *ref, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __double2half(ref[i]);
}

ADV_LAUNCH(adv_ref_copy)
{
    ADV_EXPECT(1, 1);
    static ref_cache cache;
    cudaStream_t s = (cudaStream_t)stream;
    const int64_t n = adv_numel(&out[0]);
    if (adv_honest())
        return sm(in, out, p, s);
    double *ref = cached_reference(&cache, &out[0], n, "ref_copy", "found: copying it into y",
                                   "not found: y gets 1/COLS");
    if (!ref) {
        if (adv_strict())
            return adv_fail(p, 42, "ref_copy: no allocation of the reference's size found near y");
        adv_fill<__half><<<1024, 256, 0, s>>>((__half *)out[0].data, n, 1.f / (float)adv_cols(&in[0]));
    } else {
        adv_copy_ref<<<1024, 256, 0, s>>>((__half *)out[0].data, ref, n);
    }
    return adv_launched(p);
}
