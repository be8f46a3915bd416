// matrix_transpose: y[COLS,ROWS] = x[ROWS,COLS]^T made contiguous
// (x.t().contiguous()). Values are moved bit for bit, never converted.
//
// The fp64 reference is src/ops/matrix_transpose.cu.
//
// v1 naive (RC1): one thread per element of x. Reads are coalesced (a warp
//            reads 32 neighbours of a row of x) but the writes are strided by
//            ROWS: the 32 lanes of a warp store into 32 different rows of y,
//            32 separate 32-byte sectors for 64 or 128 useful bytes, so the
//            store path carries one transaction per element.
// v2 fast:   64 x 64 tiles through shared memory, several tiles per block
//            (a grid-stride loop over one wave of 256-thread blocks), the
//            next tile's loads issued before the current tile is written
//            out. Both sides move 16-byte vectors (8 fp16/bf16 or 4 fp32
//            elements): every warp access covers whole 128-byte lines of x
//            and of y (a tile row is 128 or 256 bytes). The tile is stored as
//            16-byte chunks whose position in a row is XOR-swizzled with the
//            row's chunk group, so that the 16-byte stores into shared memory
//            and the column-wise element reads out of it are free of bank
//            conflicts (the padding of a classic tile would break the 16-byte
//            alignment). Shapes whose extents are not multiples of the vector
//            or whose pointers are not 16-byte aligned take a plain 32 x 32
//            tile kernel with scalar accesses.
#include "common.cuh"

template <typename T>
static bool mt_args_ok(const DLTensor *in, int nin, const DLTensor *out, int nout)
{
    return nin == 1 && nout == 1 && dl_is<T>(&in[0], 2) && dl_is<T>(&out[0], 2) &&
           out[0].shape[0] == in[0].shape[1] && out[0].shape[1] == in[0].shape[0];
}

// ---------------------------------------------------------------- v1 naive
template <typename T>
__global__ void mt_v1_elementwise(const T *__restrict__ x, T *__restrict__ y, int64_t rows,
                                  int64_t cols)
{
    const int64_t n = rows * cols;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / cols, c = i - r * cols;
        y[c * rows + r] = x[i]; // neighbouring lanes write ROWS elements apart
    }
}

template <typename T>
static int mt_v1(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (!mt_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1,
                           "matrix_transpose v1: expected x[R,C] -> y[C,R] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1], n = rows * cols;
    if (n == 0)
        return 0;
    int64_t blocks = (n + 255) / 256;
    if (blocks > (1 << 30))
        blocks = 1 << 30;
    mt_v1_elementwise<T><<<(unsigned)blocks, 256, 0, s>>>((const T *)in[0].data, (T *)out[0].data,
                                                          rows, cols);
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

// ---------------------------------------------------------------- v2 fast
#define MT_TILE 64
#define MT_BLOCK 256
#define MT_SMALL 32 // the scalar fallback's tile

// Loads this thread's chunks of tile (r0, c0) of x into v (zeros outside x).
template <typename T, int V, int C, int PER>
__device__ __forceinline__ void mt_load_tile(const T *__restrict__ x, int64_t rows, int64_t cols,
                                             int64_t r0, int64_t c0, uint4 (&v)[PER])
{
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int q = threadIdx.x + k * MT_BLOCK, r = q / C, c = q % C;
        const int64_t gr = r0 + r, gc = c0 + (int64_t)c * V;
        v[k] = make_uint4(0, 0, 0, 0);
        if (gr < rows && gc < cols)
            v[k] = __ldcs(reinterpret_cast<const uint4 *>(x + gr * cols + gc));
    }
}

// Needs ROWS and COLS multiples of the vector (16 / sizeof(T) elements) and
// 16-byte aligned x and y: every 16-byte chunk is then wholly inside or
// wholly outside the matrix, and partial tiles only test chunk indices.
//
// Shared memory holds the tile as 64 rows of C 16-byte chunks; chunk c of
// tile row r sits at r * C + (c ^ ((r / V) & 7)).
//  - stores: 8 consecutive lanes (one phase of a 16-byte store) hold chunks
//    c..c+7 of one row: 8 distinct positions modulo 8, all 32 banks.
//  - loads: output chunk oc gathers element j of rows oc*V .. oc*V+V-1, which
//    all have the swizzle oc & 7; a warp takes 8 consecutive oc (8 distinct
//    swizzles, so 8 distinct 16-byte bank groups) times 4 consecutive j (4
//    words of one chunk for fp32; 2 words, each shared by two lanes, for
//    16-bit types): no two lanes meet in a bank on different words.
// The loads of a block's next tile are issued before the current tile is
// written out, so that they are in flight during the stores.
template <typename T>
__global__ __launch_bounds__(MT_BLOCK) void mt_v2_tiled(const T *__restrict__ x,
                                                        T *__restrict__ y, int64_t rows,
                                                        int64_t cols, int64_t tiles_c,
                                                        int64_t ntiles)
{
    constexpr int V = 16 / sizeof(T);            // elements per chunk: 8 or 4
    constexpr int C = MT_TILE / V;               // chunks per tile row: 8 or 16
    constexpr int PER = MT_TILE * C / MT_BLOCK;  // chunks per thread: 2 or 4
    static_assert(PER * MT_BLOCK == MT_TILE * C, "the tile is a whole number of chunks a thread");
    __shared__ uint4 tile[MT_TILE * C];
    const T *te = reinterpret_cast<const T *>(tile);
    uint4 v[PER];
    int64_t t = blockIdx.x;
    if (t < ntiles)
        mt_load_tile<T, V, C, PER>(x, rows, cols, t / tiles_c * MT_TILE, t % tiles_c * MT_TILE, v);
    for (; t < ntiles; t += gridDim.x) {
        const int64_t r0 = t / tiles_c * MT_TILE, c0 = t % tiles_c * MT_TILE;
        __syncthreads(); // every thread is done reading the previous tile
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int q = threadIdx.x + k * MT_BLOCK, r = q / C, c = q % C;
            tile[r * C + (c ^ ((r / V) & 7))] = v[k];
        }
        __syncthreads();
        const int64_t tn = t + gridDim.x; // prefetch the next tile into v
        if (tn < ntiles)
            mt_load_tile<T, V, C, PER>(x, rows, cols, tn / tiles_c * MT_TILE,
                                       tn % tiles_c * MT_TILE, v);
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int q = threadIdx.x + k * MT_BLOCK, rest = q / 8;
            const int oc = rest / MT_TILE * 8 + q % 8; // output chunk: tile rows oc*V ..
            const int j = rest % MT_TILE;              // output row: tile column j
            const int64_t gj = c0 + j, gi = r0 + (int64_t)oc * V;
            if (gj < cols && gi < rows) {
                const int sw = (j / V) ^ (oc & 7), w = j % V;
                uint4 o;
                T *oe = reinterpret_cast<T *>(&o);
#pragma unroll
                for (int e = 0; e < V; e++)
                    oe[e] = te[((oc * V + e) * C + sw) * V + w];
                __stcs(reinterpret_cast<uint4 *>(y + gj * rows + gi), o);
            }
        }
    }
}

// Any shape and alignment: 32 x 32 tiles, scalar loads and stores, the
// shared tile padded by one column.
template <typename T>
__global__ __launch_bounds__(MT_BLOCK) void mt_v2_scalar(const T *__restrict__ x,
                                                         T *__restrict__ y, int64_t rows,
                                                         int64_t cols, int64_t tiles_c,
                                                         int64_t ntiles)
{
    __shared__ T tile[MT_SMALL][MT_SMALL + 1];
    const int tx = threadIdx.x % MT_SMALL, ty = threadIdx.x / MT_SMALL;
    constexpr int STEP = MT_BLOCK / MT_SMALL;
    for (int64_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const int64_t r0 = t / tiles_c * MT_SMALL, c0 = t % tiles_c * MT_SMALL;
        __syncthreads(); // every thread is done reading the previous tile
        for (int k = ty; k < MT_SMALL; k += STEP)
            if (r0 + k < rows && c0 + tx < cols)
                tile[k][tx] = x[(r0 + k) * cols + c0 + tx];
        __syncthreads();
        for (int k = ty; k < MT_SMALL; k += STEP)
            if (c0 + k < cols && r0 + tx < rows)
                y[(c0 + k) * rows + r0 + tx] = tile[tx][k];
    }
}

template <typename T>
static int mt_v2(const DLTensor *in, int nin, DLTensor *out, int nout, const kgate_params *p,
                 kgate_stream st)
{
    if (!mt_args_ok<T>(in, nin, out, nout))
        return kernel_fail(p, 1,
                           "matrix_transpose v2: expected x[R,C] -> y[C,R] of the kernel's dtype");
    cudaStream_t s = (cudaStream_t)st;
    const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    const T *x = (const T *)in[0].data;
    T *y = (T *)out[0].data;
    if (rows == 0 || cols == 0)
        return 0;
    constexpr int V = 16 / sizeof(T);
    const bool vec =
        rows % V == 0 && cols % V == 0 && (((uintptr_t)x | (uintptr_t)y) & 15) == 0;
    if (vec) {
        const int64_t tc = (cols + MT_TILE - 1) / MT_TILE,
                      nt = tc * ((rows + MT_TILE - 1) / MT_TILE);
        mt_v2_tiled<T>
            <<<wave_grid<mt_v2_tiled<T>, MT_BLOCK>(nt), MT_BLOCK, 0, s>>>(x, y, rows, cols, tc, nt);
    } else {
        const int64_t tc = (cols + MT_SMALL - 1) / MT_SMALL,
                      nt = tc * ((rows + MT_SMALL - 1) / MT_SMALL);
        mt_v2_scalar<T>
            <<<wave_grid<mt_v2_scalar<T>, MT_BLOCK>(nt), MT_BLOCK, 0, s>>>(x, y, rows, cols, tc, nt);
    }
    KG_KERNEL_LAUNCHED(p);
    return 0;
}

static const kgate_kernel variants[] = {
    {"matrix_transpose_v1_fp16", "matrix_transpose", "fp16", NULL, 1, 1, mt_v1<__half>,
     "one thread an element, stores strided by ROWS: uncoalesced writes (RC1)", NULL, NULL},
    {"matrix_transpose_v2_fp16", "matrix_transpose", "fp16", NULL, 1, 1, mt_v2<__half>,
     "64x64 swizzled shared-memory tiles, 16-byte loads and stores, grid-stride", NULL, NULL},
    {"matrix_transpose_v1_bf16", "matrix_transpose", "bf16", NULL, 1, 1, mt_v1<__nv_bfloat16>,
     "one thread an element, stores strided by ROWS: uncoalesced writes (RC1)", NULL, NULL},
    {"matrix_transpose_v2_bf16", "matrix_transpose", "bf16", NULL, 1, 1, mt_v2<__nv_bfloat16>,
     "64x64 swizzled shared-memory tiles, 16-byte loads and stores, grid-stride", NULL, NULL},
    {"matrix_transpose_v1_fp32", "matrix_transpose", "fp32", NULL, 1, 1, mt_v1<float>,
     "one thread an element, stores strided by ROWS: uncoalesced writes (RC1)", NULL, NULL},
    {"matrix_transpose_v2_fp32", "matrix_transpose", "fp32", NULL, 1, 1, mt_v2<float>,
     "64x64 swizzled shared-memory tiles, 16-byte loads and stores, grid-stride", NULL, NULL},
};
KG_EXPORT_VARIANTS(matrix_transpose, variants)
