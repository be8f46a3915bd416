/* The TileLang kernels of tilelang/gen*.py as a kgate candidate (ABI v2).
 *
 * tilelang/gen/ holds the CUDA that TileLang 0.1.15 generated for each kernel
 * and compiled shape, and kernels.h, which says how to launch each one, read
 * off TileLang's IR (TileLang's own host side is TVM packed-function code
 * that needs TVM's runtime, so kgate cannot use it). This file is the
 * launcher: it picks the kernel of (operator, variant) whose recorded tensor
 * shapes the DLPack tensors have (COLS or the whole shape is compiled in,
 * ROWS may be a runtime argument), checks them, makes the TMA descriptors a
 * kernel takes, and launches it on kgate's stream with cudaLaunchKernel: the
 * recorded grid (R blocks where it depends on the row count), block and
 * dynamic shared memory, the arguments in TileLang's order. A shape no
 * kernel was compiled for gets a message, not a launch; `supports` tells
 * kgate the same in advance. The table comes from kernels.h's TL_OPS: a
 * naive and a fixed kernel per operator. docs/tilelang.md tells the whole
 * story. */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <kgate/plugin.h>

#include "kernels.h"

#define N_TL ((int)(sizeof tl_kernels / sizeof tl_kernels[0]))

enum { E_ARGS = 1, E_SHAPE = 2 };

static const char *const slot_name[4] = {"input 1", "input 2", "input 3", "the output"};

static int fail(const kgate_params *p, int code, const char *fmt, ...)
{
    if (p && p->error && p->error_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->error, p->error_size, fmt, ap);
        va_end(ap);
    }
    return code;
}

static int same(const tl_kernel_info *k, const char *op, const char *variant)
{
    return strcmp(k->op, op) == 0 && strcmp(k->variant, variant) == 0;
}

/* A contiguous tensor of the recorded type and rank on a CUDA device. */
static int is_tensor(const DLTensor *t, const tl_tensor *want)
{
    if (t->ndim != want->rank || t->dtype.code != want->code || t->dtype.bits != want->bits ||
        t->dtype.lanes != 1 || t->device.device_type != kDLCUDA || t->data == NULL)
        return 0;
    if (t->strides) {
        int64_t need = 1;
        for (int d = want->rank - 1; d >= 0; d--) {
            if (t->shape[d] != 1 && t->strides[d] != need)
                return 0;
            need *= t->shape[d];
        }
    }
    return 1;
}

static void *dptr(const DLTensor *t) { return (char *)t->data + t->byte_offset; }

/* Whether the tensors have kernel k's recorded shapes; *rows gets R where a
 * dimension is the row count. */
static int shapes_match(const tl_kernel_info *k, const DLTensor *const t[4], int64_t *rows)
{
    *rows = -1;
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < k->tensors[s].rank; d++) {
            long long want = k->tensors[s].dims[d];
            int64_t got = t[s]->shape[d];
            if (want >= 0 && got != want)
                return 0;
            if (want < 0) {
                if (*rows >= 0 && got != *rows)
                    return 0;
                *rows = got;
            }
        }
    return *rows < 0 || (*rows >= 1 && *rows <= INT_MAX);
}

/* "1000x1000" */
static const char *dims_str(const DLTensor *t, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (int d = 0; d < t->ndim && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? "x" : "", (long long)t->shape[d]);
    return buf;
}

/* "Rx1024, Rx4096": input 1's shapes the kernels of (op, variant) take. */
static const char *compiled_list(const char *op, const char *variant, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < N_TL && n < size; i++) {
        if (!same(&tl_kernels[i], op, variant))
            continue;
        const tl_tensor *x = &tl_kernels[i].tensors[TL_IN0];
        for (int d = 0; d < x->rank && n < size; d++) {
            const char *sep = d ? "x" : n ? ", " : "";
            if (x->dims[d] < 0)
                n += (size_t)snprintf(buf + n, size - n, "%sR", sep);
            else
                n += (size_t)snprintf(buf + n, size - n, "%s%lld", sep, x->dims[d]);
        }
    }
    return buf;
}

/* The tensors by slot, checked against (op, variant)'s records: count, type,
 * rank, contiguity, 16-byte alignment (the kernels load 16 bytes at a time,
 * TMA needs it); then the kernel whose shapes they have. */
static int pick(const char *op, const char *variant, const DLTensor *in, int ni, DLTensor *out, int no,
                const kgate_params *p, const DLTensor *t[4], const tl_kernel_info **kp, int64_t *rows)
{
    const tl_kernel_info *first = NULL;
    for (int i = 0; i < N_TL && !first; i++)
        if (same(&tl_kernels[i], op, variant))
            first = &tl_kernels[i];
    if (!first)
        return fail(p, E_ARGS, "tilelang %s: no %s kernel", op, variant);
    int n_in = 0;
    while (n_in < 3 && first->tensors[n_in].rank)
        n_in++;
    if (ni != n_in || no != 1)
        return fail(p, E_ARGS, "tilelang %s: expected %d inputs and 1 output, got %d and %d", op, n_in,
                    ni, no);
    for (int s = 0; s < 4; s++) {
        t[s] = s < n_in ? &in[s] : s == TL_OUT0 ? &out[0] : NULL;
        if (!t[s])
            continue;
        const tl_tensor *w = &first->tensors[s];
        if (!is_tensor(t[s], w))
            return fail(p, E_ARGS, "tilelang %s: %s must be a contiguous %s tensor of rank %d on the GPU",
                        op, slot_name[s], w->code == kDLInt ? "int64" : first->dtype, w->rank);
        if ((uintptr_t)dptr(t[s]) % 16)
            return fail(p, E_SHAPE, "tilelang %s: the kernels load 16 bytes at a time; %s is not "
                        "16-byte aligned", op, slot_name[s]);
    }
    for (int i = 0; i < N_TL; i++)
        if (same(&tl_kernels[i], op, variant) && shapes_match(&tl_kernels[i], t, rows)) {
            *kp = &tl_kernels[i];
            return 0;
        }
    char got[96], list[256];
    return fail(p, E_SHAPE, "tilelang %s: no kernel for input 1 of %s with these shapes (compiled for %s)",
                op, dims_str(t[TL_IN0], got, sizeof got), compiled_list(op, variant, list, sizeof list));
}

/* ------------------------------------------------------ TMA descriptors */

typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                              CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                              CUtensorMapFloatOOBfill);

/* cuTensorMapEncodeTiled from the driver kgate's CUDA runtime loaded (the
 * library does not link libcuda: it must open where there is no driver). */
static int tma_encode(const kgate_params *p, const char *op, const tl_tma *d, void *addr, CUtensorMap *map)
{
    static encode_fn encode;
    if (!encode) {
        enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        void *f = NULL;
        cudaError_t rc = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000,
                                                          cudaEnableDefault, &q);
        if (rc != cudaSuccess || q != cudaDriverEntryPointSuccess || !f) {
            cudaGetLastError();
            return fail(p, rc != cudaSuccess ? (int)rc : E_ARGS,
                        "tilelang %s: cudaGetDriverEntryPointByVersion(cuTensorMapEncodeTiled) failed: %s",
                        op, cudaGetErrorString(rc));
        }
        encode = (encode_fn)f;
    }
    cuuint64_t dim[3], stride[3];
    cuuint32_t box[3], estride[3];
    for (unsigned i = 0; i < d->rank; i++) {
        dim[i] = d->dim[i], stride[i] = d->stride[i], box[i] = d->box[i], estride[i] = d->estride[i];
    }
    CUresult r = encode(map, (CUtensorMapDataType)d->dtype, d->rank, addr, dim, stride + 1, box, estride,
                        (CUtensorMapInterleave)d->interleave, (CUtensorMapSwizzle)d->swizzle,
                        (CUtensorMapL2promotion)d->l2, (CUtensorMapFloatOOBfill)d->oob);
    if (r != CUDA_SUCCESS)
        return fail(p, E_ARGS, "tilelang %s: cuTensorMapEncodeTiled failed (CUresult %d)", op, (int)r);
    return 0;
}

/* ------------------------------------------------------------- launch */

/* More than 48 KiB of dynamic shared memory must be allowed first: once per
 * kernel (kgate's worker drives one device from one thread). */
static int allow_smem(const kgate_params *p, const tl_kernel_info *k)
{
    static unsigned char allowed[N_TL];
    if (k->smem <= 48 * 1024 || allowed[k - tl_kernels])
        return 0;
    cudaError_t rc = cudaFuncSetAttribute(k->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)k->smem);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return fail(p, (int)rc, "tilelang %s: %u bytes of shared memory refused: %s", k->op, k->smem,
                    cudaGetErrorString(rc));
    }
    allowed[k - tl_kernels] = 1;
    return 0;
}

static int run(const char *op, const char *variant, const char *scalar, double dflt, const DLTensor *in,
               int ni, DLTensor *out, int no, const kgate_params *p, kgate_stream s)
{
    const DLTensor *t[4];
    const tl_kernel_info *k = NULL;
    int64_t rows = -1;
    int rc = pick(op, variant, in, ni, out, no, p, t, &k, &rows);
    if (rc)
        return rc;
    void *ptr[4];
    for (int i = 0; i < 4; i++)
        ptr[i] = t[i] ? dptr(t[i]) : NULL;
    int nrows = rows > 0 ? (int)rows : 0;
    double v = scalar ? kgate_scalar_get(p, scalar, dflt) : 0.0;
    float f32 = (float)v;
    int64_t i64 = (int64_t)v;
    CUtensorMap maps[4]; /* 64-byte aligned by its type */
    void *args[8];
    for (int i = 0; i < k->n_args; i++) {
        enum tl_arg a = k->args[i];
        if (a <= TL_OUT0) {
            args[i] = &ptr[a];
        } else if (a == TL_ROWS) {
            args[i] = &nrows;
        } else if (a == TL_F32) {
            args[i] = &f32;
        } else if (a == TL_I64) {
            args[i] = &i64;
        } else {
            int slot = (int)(a - TL_TMA_IN0);
            if ((rc = tma_encode(p, op, &k->tma[slot], ptr[slot], &maps[slot])))
                return rc;
            args[i] = &maps[slot];
        }
    }
    if ((rc = allow_smem(p, k)))
        return rc;
    dim3 grid = {k->grid[0] ? k->grid[0] : (unsigned)nrows, k->grid[1] ? k->grid[1] : (unsigned)nrows,
                 k->grid[2] ? k->grid[2] : (unsigned)nrows};
    dim3 block = {k->threads, 1, 1};
    cudaError_t crc = cudaLaunchKernel(k->fn, grid, block, args, k->smem, (cudaStream_t)s);
    if (crc != cudaSuccess) {
        cudaGetLastError();
        char got[96];
        return fail(p, (int)crc, "tilelang %s (%s, input 1 of %s): launch failed: %s", op, variant,
                    dims_str(t[TL_IN0], got, sizeof got), cudaGetErrorString(crc));
    }
    return 0;
}

/* --------------------------------------------- the shapes they handle */

/* Extents with a kernel of (op, variant) compiled for them. */
static int compiled(const char *op, const char *variant, const int64_t *e, int n)
{
    for (int i = 0; i < N_TL; i++) {
        const tl_kernel_info *k = &tl_kernels[i];
        if (!same(k, op, variant) || k->n_extents != n)
            continue;
        int ok = 1;
        for (int d = 0; d < n && ok; d++)
            ok = k->extents[d] < 0 ? e[d] >= 1 && e[d] <= INT_MAX : e[d] == k->extents[d];
        if (ok)
            return 1;
    }
    return 0;
}

/* Both variants compiled for the shape: kgate then skips, and reports, the
 * extra shapes (unaligned, tiny, unnamed) and any timed shape outside these. */
static int supported(const char *op, const int64_t *e, int n)
{
    return compiled(op, "naive", e, n) && compiled(op, "fast", e, n);
}

/* ------------------------------------------------------------- table */

#define LAUNCHERS(op, dt, n_in, scalar, dflt, naive_sum, fast_sum)                                    \
    static int op##_naive(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,     \
                          kgate_stream s)                                                               \
    {                                                                                                   \
        return run(#op, "naive", scalar, dflt, in, ni, out, no, p, s);                                  \
    }                                                                                                   \
    static int op##_fast(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,      \
                         kgate_stream s)                                                                \
    {                                                                                                   \
        return run(#op, "fast", scalar, dflt, in, ni, out, no, p, s);                                   \
    }                                                                                                   \
    static int op##_supported(const int64_t *e, int n) { return supported(#op, e, n); }
TL_OPS(LAUNCHERS)
#undef LAUNCHERS

#define ENTRIES(op, dt, n_in, scalar, dflt, naive_sum, fast_sum)                                      \
    {"tilelang_" #op "_naive_" dt, #op, dt, NULL, n_in, 1, op##_naive, naive_sum, scalar, op##_supported}, \
        {"tilelang_" #op "_" dt, #op, dt, NULL, n_in, 1, op##_fast, fast_sum, scalar, op##_supported},
static const kgate_kernel kernels[] = {TL_OPS(ENTRIES)};
#undef ENTRIES

static const kgate_plugin plugin = KGATE_PLUGIN(kernels);

__attribute__((visibility("default"))) const kgate_plugin *kgate_plugin_v2(void)
{
    return &plugin;
}
