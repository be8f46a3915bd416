// cross_entropy's GPU fp64 reference: one block per row: the target first
// (an ignored row gives 0, a target outside [0, COLS) NaN), then the
// NaN-propagating max, the sum of exponentials and -((x[t] - max) - log(sum)),
// as the CPU reference in cross_entropy.c. Also the prepare hook that makes
// two rows ignored in every check.
#include "ref.cuh"

template <typename T>
__global__ void xent_reference(const T *x, const int64_t *target, double *ref, int64_t cols,
                               double ignore)
{
    __shared__ double red[32];
    const int64_t row = blockIdx.x;
    const T *xr = x + row * cols;
    const double t = (double)target[row];
    if (t == ignore) { // the same for every thread of the block
        if (threadIdx.x == 0)
            ref[row] = 0;
        return;
    }
    if (!(t >= 0 && t < (double)cols)) {
        if (threadIdx.x == 0)
            ref[row] = NAN;
        return;
    }
    double m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        m = ref_max(m, ref_d(xr[j]));
    m = ref_block_max(m, red);
    double s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        s += exp(ref_d(xr[j]) - m);
    s = ref_block_sum(s, red);
    if (threadIdx.x == 0)
        ref[row] = -((ref_d(xr[(int64_t)t]) - m) - log(s));
}

extern "C" int kg_cross_entropy_reference(const DLTensor *in, int n_in, double *const *ref,
                                          const kgate_params *p, kgate_stream st)
{
    if (n_in != 2 || in[1].dtype.code != kDLInt || in[1].dtype.bits != 64)
        return 1;
    cudaStream_t s = (cudaStream_t)st;
    int64_t rows = ref_rows(&in[0]), cols = in[0].shape[in[0].ndim - 1];
    double ignore = kgate_scalar_get(p, "ignore_index", -100);
    REF_DISPATCH(&in[0], (xent_reference<T><<<(unsigned)rows, 256, 0, s>>>(
                             (const T *)in[0].data, (const int64_t *)in[1].data, ref[0], cols,
                             ignore)));
    return REF_LAUNCHED();
}

// ------------------------------------------------------------ prepare hook
__global__ void xent_plant_ignored(int64_t *target, int64_t rows, int64_t ignore)
{
    if (threadIdx.x == 0) {
        if (rows > 6)
            target[6] = ignore;
        if (rows > 7)
            target[7] = ignore;
    }
}

// Sets target[6] and target[7] (those that exist) to the call's ignore_index,
// so that every check, the one with ignore_index = 3 included, has ignored
// rows; random targets rarely hit any given value. Enqueued on s.
extern "C" int kg_cross_entropy_prepare(DLTensor *in, int n_in, const kg_shape *shape,
                                        const kgate_params *p, kgate_stream st)
{
    (void)shape;
    if (n_in != 2 || in[1].dtype.code != kDLInt || in[1].dtype.bits != 64)
        return (int)cudaErrorInvalidValue;
    int64_t rows = kg_tensor_numel(&in[1]);
    if (rows <= 6)
        return 0;
    int64_t ignore = (int64_t)kgate_scalar_get(p, "ignore_index", -100);
    xent_plant_ignored<<<1, 32, 0, (cudaStream_t)st>>>((int64_t *)in[1].data, rows, ignore);
    return REF_LAUNCHED();
}
