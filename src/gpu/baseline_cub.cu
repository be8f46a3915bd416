/* CUB baselines: segmented reductions over the rows of x [rows, cols]
 * (segment r = elements [r*cols, (r+1)*cols), offsets from a transformed
 * counting iterator, no offset arrays), each result written to the output's
 * dtype by a tabulate output iterator (no extra pass):
 *   cub-argmax:    DeviceSegmentedReduce::ArgMax over an order-preserving
 *                  int32 key of the value (NaN above +Inf), so a NaN row gives
 *                  the index of its first NaN as torch does; the in-row key is
 *                  widened to int64 on store.
 *   cub-max:       DeviceSegmentedReduce::Reduce over float with a
 *                  NaN-propagating max and initial value -Inf. (Max itself
 *                  starts from numeric_limits::lowest(), so an all -Inf row
 *                  would give -FLT_MAX, and cuda::maximum drops a NaN that
 *                  arrives second.)
 *   cub-mean:      DeviceSegmentedReduce::Sum over float (fp16/bf16) or
 *                  double (fp32) values, divided by cols on store.
 *   cub-logsumexp: Reduce (the NaN-propagating max) into a float scratch
 *                  m[rows], then Sum of exp(x - m') with m' = m, or 0 where
 *                  m is +-Inf (as torch), y = log(sum) + m' on store. An all
 *                  -Inf row gives -Inf, a NaN row NaN.
 * Also the small kernel that widens cudnnReduceTensor's 32-bit indices
 * (baseline_cub.h). */
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/tabulate_output_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <type_traits>

#include "../catalog/op.h"
#include "baseline.h"
#include "baseline_cub.h"
#include "check.h"
#include "tensors.h"

namespace {

__host__ __device__ __forceinline__ float to_f(float v) { return v; }
__host__ __device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__host__ __device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float log_acc(float v) { return logf(v); }
__device__ __forceinline__ double log_acc(double v) { return log(v); }

/* Start of segment r. */
template <class Off> struct RowStart {
    Off cols;
    __host__ __device__ Off operator()(Off r) const { return r * cols; }
};

template <class Off>
using RowIt = thrust::transform_iterator<RowStart<Off>, thrust::counting_iterator<Off>>;

template <class Off> RowIt<Off> row_starts(Off cols)
{
    return RowIt<Off>(thrust::counting_iterator<Off>(0), RowStart<Off>{cols});
}

/* value -> float (or the accumulator type) */
template <class T, class A> struct ToAcc {
    __host__ __device__ A operator()(T v) const { return (A)to_f(v); }
};

/* An int32 key ordered as the values are, NaN (any sign) above +Inf. */
template <class T> struct OrderKey {
    __device__ int operator()(T v) const
    {
        float f = to_f(v);
        if (f != f)
            return INT_MAX;
        int b = __float_as_int(f);
        return b >= 0 ? b : b ^ 0x7FFFFFFF;
    }
};

/* max that keeps a NaN from either side */
struct NanMax {
    __host__ __device__ float operator()(float a, float b) const { return (a != a || a > b) ? a : b; }
};

struct StoreKey {
    int64_t *out;
    __device__ void operator()(ptrdiff_t i, cub::KeyValuePair<int, int> kv) const
    {
        out[i] = (int64_t)kv.key;
    }
};

template <class T> struct StoreMax {
    T *out;
    __device__ void operator()(ptrdiff_t i, float v) const { out[i] = from_f<T>(v); }
};

template <class T, class A> struct StoreMean {
    T *out;
    A cols;
    __device__ void operator()(ptrdiff_t i, A v) const { out[i] = from_f<T>((float)(v / cols)); }
};

/* exp(x[i] - m'[row of i]), m' = m, or 0 where m is +-Inf */
template <class T, class A> struct ExpShift {
    const T *x;
    const float *m;
    int64_t cols;
    __device__ A operator()(int64_t i) const
    {
        float mm = m[i / cols];
        float mu = isinf(mm) ? 0.f : mm;
        return (A)expf(to_f(x[i]) - mu);
    }
};

template <class T, class A> struct StoreLse {
    T *out;
    const float *m;
    __device__ void operator()(ptrdiff_t i, A s) const
    {
        float mm = m[i];
        A mu = isinf(mm) ? (A)0 : (A)mm;
        out[i] = from_f<T>((float)(log_acc(s) + mu));
    }
};

enum cub_kind { CK_ARGMAX, CK_MAX, CK_MEAN, CK_LSE };

struct cub_ctx {
    cub_kind kind;
    kg_dtype dt;
    const void *x;
    void *y;
    int64_t rows, cols;
    float *m; /* logsumexp: the row maxima */
    void *temp;
    size_t temp_bytes;
};

/* The max pass (cub-max, and the first pass of cub-logsumexp). */
template <class T, class Out>
cudaError_t seg_max(const cub_ctx *c, void *temp, size_t &bytes, Out out, cudaStream_t s)
{
    thrust::transform_iterator<ToAcc<T, float>, const T *> in((const T *)c->x, ToAcc<T, float>{});
    RowIt<int64_t> beg = row_starts<int64_t>(c->cols);
    return cub::DeviceSegmentedReduce::Reduce(temp, bytes, in, out, c->rows, beg, beg + 1, NanMax{},
                                              -INFINITY, s);
}

/* One call of the path; temp NULL: the temp size into bytes. */
template <class T> cudaError_t run_t(const cub_ctx *c, void *temp, size_t &bytes, cudaStream_t s)
{
    /* fp32 sums in double: the fp32 tolerance (2e-5 relative) is tight */
    using A = typename std::conditional<std::is_same<T, float>::value, double, float>::type;
    switch (c->kind) {
    case CK_ARGMAX: {
        thrust::transform_iterator<OrderKey<T>, const T *> in((const T *)c->x, OrderKey<T>{});
        RowIt<int> beg = row_starts<int>((int)c->cols);
        thrust::tabulate_output_iterator<StoreKey> out(StoreKey{(int64_t *)c->y});
        return cub::DeviceSegmentedReduce::ArgMax(temp, bytes, in, out, c->rows, beg, beg + 1, s);
    }
    case CK_MAX: {
        thrust::tabulate_output_iterator<StoreMax<T>> out(StoreMax<T>{(T *)c->y});
        return seg_max<T>(c, temp, bytes, out, s);
    }
    case CK_MEAN: {
        thrust::transform_iterator<ToAcc<T, A>, const T *> in((const T *)c->x, ToAcc<T, A>{});
        RowIt<int64_t> beg = row_starts<int64_t>(c->cols);
        thrust::tabulate_output_iterator<StoreMean<T, A>> out(StoreMean<T, A>{(T *)c->y, (A)c->cols});
        return cub::DeviceSegmentedReduce::Sum(temp, bytes, in, out, c->rows, beg, beg + 1, s);
    }
    case CK_LSE: {
        size_t b1 = bytes, b2 = bytes;
        thrust::transform_iterator<ExpShift<T, A>, thrust::counting_iterator<int64_t>> in(
            thrust::counting_iterator<int64_t>(0), ExpShift<T, A>{(const T *)c->x, c->m, c->cols});
        RowIt<int64_t> beg = row_starts<int64_t>(c->cols);
        thrust::tabulate_output_iterator<StoreLse<T, A>> out(StoreLse<T, A>{(T *)c->y, c->m});
        cudaError_t e = seg_max<T>(c, temp, b1, c->m, s);
        if (e != cudaSuccess)
            return e;
        e = cub::DeviceSegmentedReduce::Sum(temp, b2, in, out, c->rows, beg, beg + 1, s);
        if (!temp)
            bytes = b1 > b2 ? b1 : b2;
        return e;
    }
    }
    return cudaErrorInvalidValue;
}

cudaError_t run(const cub_ctx *c, void *temp, size_t &bytes, cudaStream_t s)
{
    switch (c->dt) {
    case KG_FP16:
        return run_t<__half>(c, temp, bytes, s);
    case KG_BF16:
        return run_t<__nv_bfloat16>(c, temp, bytes, s);
    case KG_FP32:
        return run_t<float>(c, temp, bytes, s);
    default:
        return cudaErrorInvalidValue;
    }
}

void cub_teardown(void *p)
{
    cub_ctx *c = (cub_ctx *)p;
    if (!c)
        return;
    cudaFree(c->temp);
    cudaFree(c->m);
    free(c);
}

int cub_launch(void *p, kgate_stream s, kg_err *err)
{
    cub_ctx *c = (cub_ctx *)p;
    size_t bytes = c->temp_bytes;
    KG_CUDA(run(c, c->temp, bytes, (cudaStream_t)s));
    return 0;
out:
    return err->code;
}

const char *const what[] = {
    "DeviceSegmentedReduce::ArgMax over an order-preserving int32 key (NaN largest), "
    "in-row index widened to int64 on store",
    "DeviceSegmentedReduce::Reduce with a NaN-propagating max from -Inf over float",
    "DeviceSegmentedReduce::Sum over %s, divided by cols on store",
    "DeviceSegmentedReduce::Reduce (NaN-propagating max) then ::Sum of exp(x - max) over %s, "
    "log(sum) + max on store",
};

int cub_setup(cub_kind kind, const DLTensor *in, DLTensor *out, kgate_stream s, void **ctx,
              char *note, size_t note_size, kg_err *err)
{
    cub_ctx *c = NULL;
    size_t bytes = 0;
    char desc[200];
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    int64_t n = kg_tensor_numel(&in[0]);
    int64_t rows = kg_tensor_numel(&out[0]);
    if (dt != KG_FP16 && dt != KG_BF16 && dt != KG_FP32)
        return kg_err_set(err, KG_EXIT_ENV, "CUB path: no %s data", kg_dtype_name(dt));
    if (rows < 1 || n < rows || n % rows != 0)
        return kg_err_set(err, KG_EXIT_ENV,
                          "CUB path: %lld input elements are not rows of the %lld outputs",
                          (long long)n, (long long)rows);
    if (kind == CK_ARGMAX && n > INT_MAX)
        return kg_err_set(err, KG_EXIT_ENV,
                          "CUB DeviceSegmentedReduce::ArgMax uses int offsets: %lld elements "
                          "exceed INT_MAX",
                          (long long)n);
    c = (cub_ctx *)calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    c->kind = kind;
    c->dt = dt;
    c->x = in[0].data;
    c->y = out[0].data;
    c->rows = rows;
    c->cols = n / rows;
    if (kind == CK_LSE)
        KG_CUDA(cudaMalloc(&c->m, sizeof(float) * (size_t)rows));
    KG_CUDA(run(c, NULL, bytes, (cudaStream_t)s));
    c->temp_bytes = bytes ? bytes : 1;
    KG_CUDA(cudaMalloc(&c->temp, c->temp_bytes));
    if (kg_baseline_trial(cub_launch, c, s, err))
        goto out;
    snprintf(desc, sizeof desc, what[kind],
             dt == KG_FP32 ? "float values accumulated in double" : "float");
    snprintf(note, note_size, "CUB %d.%d.%d %s, %lld segments of %lld, temp %zu B",
             CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION, desc, (long long)rows,
             (long long)c->cols, c->temp_bytes);
    *ctx = c;
    return 0;
out:
    cub_teardown(c);
    return err->code;
}

int argmax_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                 kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return cub_setup(CK_ARGMAX, in, out, s, ctx, note, note_size, err);
}

int max_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
              kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return cub_setup(CK_MAX, in, out, s, ctx, note, note_size, err);
}

int mean_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
               kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return cub_setup(CK_MEAN, in, out, s, ctx, note, note_size, err);
}

int lse_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
              kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    return cub_setup(CK_LSE, in, out, s, ctx, note, note_size, err);
}

__global__ void widen_u32(const uint32_t *idx, int64_t *out, int64_t rows, uint64_t cols)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows)
        out[r] = (int64_t)((uint64_t)idx[r] % cols);
}

} // namespace

extern "C" cudaError_t kg_widen_row_index_u32(const uint32_t *idx, int64_t *out, int64_t rows,
                                              int64_t cols, kgate_stream s)
{
    if (rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    unsigned blocks = (unsigned)((rows + 255) / 256);
    widen_u32<<<blocks, 256, 0, (cudaStream_t)s>>>(idx, out, rows, (uint64_t)cols);
    return cudaGetLastError();
}

extern "C" const kg_baseline kg_baseline_cub_argmax = {"cub-argmax", "CUB", argmax_setup, cub_launch,
                                                       cub_teardown, 0};
extern "C" const kg_baseline kg_baseline_cub_max = {"cub-max", "CUB", max_setup, cub_launch,
                                                    cub_teardown, 0};
extern "C" const kg_baseline kg_baseline_cub_mean = {"cub-mean", "CUB", mean_setup, cub_launch,
                                                     cub_teardown, 0};
extern "C" const kg_baseline kg_baseline_cub_logsumexp = {"cub-logsumexp", "CUB", lse_setup,
                                                          cub_launch, cub_teardown, 0};
