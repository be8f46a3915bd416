/* The "cuda" provider: a CUDA C++ source file as a candidate, compiled at
 * run time with NVRTC for the GPU the worker runs on and launched through
 * the runtime's library API, as its `kgate:` comment describes
 * (catalog/rtc_desc.h states the rule; docs/abi.md shows a file).
 *
 * NVRTC is loaded when a .cu candidate is first opened (kgate starts
 * without it). Listing a candidate only parses the description; the source
 * is compiled at the first launch, on the worker's device (its compute
 * capability picks sm_XY), so a compile error is the kernel failing its
 * first call, with NVRTC's first error line. Each kernel's launch is one of
 * KG_RTC_MAX_KERNELS fixed functions that index the table (C has no
 * closures). */
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "../catalog/op.h"
#include "../catalog/rtc_desc.h"
#include "provider.h"
#include "provider_rtc.h"

typedef struct rtc_nvrtc {
    void *lib;
    nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                          const char *const *);
    nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*log_size)(nvrtcProgram, size_t *);
    nvrtcResult (*log)(nvrtcProgram, char *);
    nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
    nvrtcResult (*cubin)(nvrtcProgram, char *);
    nvrtcResult (*destroy)(nvrtcProgram *);
    const char *(*error)(nvrtcResult);
} rtc_nvrtc;

static struct {
    char path[4096];
    char *source;
    size_t len;
    int n;
    kg_rtc_kernel desc[KG_RTC_MAX_KERNELS];
    kgate_kernel table[KG_RTC_MAX_KERNELS];
    kgate_plugin plugin;
    cudaLibrary_t library; /* after the first launch */
    cudaKernel_t fn[KG_RTC_MAX_KERNELS];
    int compiled; /* 0 not yet, 1 done, -1 failed (msg) */
    char failed[512];
} rtc;

static int load_nvrtc(rtc_nvrtc *n, char *msg, size_t size)
{
    static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    memset(n, 0, sizeof *n);
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !n->lib; i++)
        n->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        snprintf(msg, size, "NVRTC (libnvrtc.so.13) cannot be loaded: %s", dlerror());
        return -1;
    }
#define SYM(f, s)                                                                                  \
    do {                                                                                           \
        *(void **)&n->f = dlsym(n->lib, s);                                                        \
        if (!n->f) {                                                                               \
            snprintf(msg, size, "NVRTC lacks %s", s);                                              \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
    SYM(create, "nvrtcCreateProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(error, "nvrtcGetErrorString");
#undef SYM
    return 0;
}

/* The first line of NVRTC's log that says "error", or its first line. */
static void first_error(const char *log, char *out, size_t size)
{
    const char *e = strstr(log, "error");
    const char *line = e ? e : log;
    while (e && line > log && line[-1] != '\n')
        line--;
    size_t n = strcspn(line, "\n");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), line);
}

int kg_rtc_compile(const char *source, const char *name, int cc_major, int cc_minor, char **cubin, size_t *size,
                   char *msg, size_t msg_size)
{
    rtc_nvrtc nv;
    nvrtcProgram prog = NULL;
    char arch[64];
    *cubin = NULL;
    *size = 0;
    if (load_nvrtc(&nv, msg, msg_size))
        return -1;
    /* sm_90 and later: the "a" targets, where wgmma and TMA live */
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d%s", cc_major, cc_minor, cc_major >= 9 ? "a" : "");
    /* the toolkit's headers (cuda_fp16.h, cuda_bf16.h): $CUDA_HOME, else where CUDA installs */
    char inc[4200];
    const char *home = getenv("CUDA_HOME");
    snprintf(inc, sizeof inc, "-I%s/include", home && *home && strlen(home) < 4096 ? home : "/usr/local/cuda");
    const char *opts[] = {arch, "-std=c++17", "-default-device", inc};
    nvrtcResult r = nv.create(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        snprintf(msg, msg_size, "nvrtcCreateProgram: %s", nv.error(r));
        return -1;
    }
    r = nv.compile(prog, 4, opts);
    if (r != NVRTC_SUCCESS) {
        size_t ls = 0;
        char *log = NULL;
        if (nv.log_size(prog, &ls) == NVRTC_SUCCESS && ls > 0 && ls < (16u << 20) && (log = malloc(ls + 1))) {
            log[0] = '\0';
            nv.log(prog, log);
            log[ls] = '\0';
            char line[400];
            first_error(log, line, sizeof line);
            snprintf(msg, msg_size, "NVRTC: %s", line);
        } else
            snprintf(msg, msg_size, "nvrtcCompileProgram: %s", nv.error(r));
        free(log);
        nv.destroy(&prog);
        return -1;
    }
    if (nv.cubin_size(prog, size) != NVRTC_SUCCESS || *size == 0 || !(*cubin = malloc(*size)) ||
        nv.cubin(prog, *cubin) != NVRTC_SUCCESS) {
        snprintf(msg, msg_size, "NVRTC made no cubin");
        free(*cubin);
        *cubin = NULL;
        nv.destroy(&prog);
        return -1;
    }
    nv.destroy(&prog);
    return 0;
}

/* Compiles the source for the current device and finds every kernel's
 * function, once; -1 (rtc.failed says why) when that fails. */
static int ensure_compiled(void)
{
    if (rtc.compiled)
        return rtc.compiled > 0 ? 0 : -1;
    int dev = 0, major = 0, minor = 0;
    char *cubin = NULL;
    size_t size = 0;
    rtc.compiled = -1;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
        snprintf(rtc.failed, sizeof rtc.failed, "no current CUDA device: %s", cudaGetErrorString(cudaGetLastError()));
        return -1;
    }
    if (kg_rtc_compile(rtc.source, rtc.path, major, minor, &cubin, &size, rtc.failed, sizeof rtc.failed))
        return -1;
    cudaError_t e = cudaLibraryLoadData(&rtc.library, cubin, NULL, NULL, 0, NULL, NULL, 0);
    free(cubin);
    if (e != cudaSuccess) {
        snprintf(rtc.failed, sizeof rtc.failed, "cudaLibraryLoadData: %s", cudaGetErrorString(e));
        return -1;
    }
    for (int i = 0; i < rtc.n; i++) {
        e = cudaLibraryGetKernel(&rtc.fn[i], rtc.library, rtc.desc[i].function);
        if (e != cudaSuccess) {
            snprintf(rtc.failed, sizeof rtc.failed, "kernel %s: no extern \"C\" __global__ function %s "
                     "(cudaLibraryGetKernel: %s)", rtc.desc[i].name, rtc.desc[i].function, cudaGetErrorString(e));
            return -1;
        }
        if (rtc.desc[i].smem > 48 * 1024 &&
            (e = cudaKernelSetAttributeForDevice(rtc.fn[i], cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 rtc.desc[i].smem, dev)) != cudaSuccess) {
            snprintf(rtc.failed, sizeof rtc.failed, "kernel %s: %d bytes of shared memory refused: %s",
                     rtc.desc[i].name, rtc.desc[i].smem, cudaGetErrorString(e));
            return -1;
        }
    }
    rtc.compiled = 1;
    return 0;
}

static int fail(const kgate_params *p, int code, const char *what)
{
    if (p && p->error && p->error_size)
        snprintf(p->error, p->error_size, "%s", what);
    return code;
}

static int64_t numel(const DLTensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

static int launch(int i, const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p,
                  kgate_stream s)
{
    const kg_rtc_kernel *k = &rtc.desc[i];
    void *ptrs[KG_RTC_MAX_ARGS], *args[KG_RTC_MAX_ARGS];
    int64_t ints[KG_RTC_MAX_ARGS];
    float floats[KG_RTC_MAX_ARGS];
    char why[600];
    if (ensure_compiled())
        return fail(p, 1, rtc.failed);
    if (ni < 1 || no < 1)
        return fail(p, 2, "a CUDA source kernel needs an input and an output");
    int64_t rows = 1;
    for (int d = 0; d + 1 < in[0].ndim; d++)
        rows *= in[0].shape[d];
    for (int a = 0; a < k->n_args; a++) {
        const kg_rtc_arg *x = &k->args[a];
        switch (x->kind) {
        case KG_RTC_IN:
        case KG_RTC_OUT: {
            int n = x->kind == KG_RTC_IN ? ni : no;
            if (x->index >= n) {
                snprintf(why, sizeof why, "kernel %s: argument %d names %s%d, which the operator lacks", k->name,
                         a + 1, x->kind == KG_RTC_IN ? "in" : "out", x->index);
                return fail(p, 2, why);
            }
            const DLTensor *t = x->kind == KG_RTC_IN ? &in[x->index] : &out[x->index];
            ptrs[a] = (char *)t->data + t->byte_offset;
            args[a] = &ptrs[a];
            continue;
        }
        case KG_RTC_NUMEL: ints[a] = numel(&out[0]); break;
        case KG_RTC_ROWS: ints[a] = rows; break;
        case KG_RTC_COLS: ints[a] = in[0].ndim ? in[0].shape[in[0].ndim - 1] : 1; break;
        case KG_RTC_DIM_IN:
        case KG_RTC_DIM_OUT: {
            int n = x->kind == KG_RTC_DIM_IN ? ni : no;
            const DLTensor *t = x->index < n ? (x->kind == KG_RTC_DIM_IN ? &in[x->index] : &out[x->index]) : NULL;
            if (!t || x->dim >= t->ndim) {
                snprintf(why, sizeof why, "kernel %s: argument %d names an extent the operator's tensors lack",
                         k->name, a + 1);
                return fail(p, 2, why);
            }
            ints[a] = t->shape[x->dim];
            break;
        }
        case KG_RTC_SCALAR: floats[a] = (float)kgate_scalar_get(p, x->name, 0); args[a] = &floats[a]; continue;
        case KG_RTC_ISCALAR: ints[a] = (int64_t)kgate_scalar_get(p, x->name, 0); break;
        }
        args[a] = &ints[a];
    }
    unsigned g[3];
    if (kg_rtc_grid(k, numel(&out[0]), rows, g)) {
        snprintf(why, sizeof why, "kernel %s: the grid would need more than 2^31-1 blocks", k->name);
        return fail(p, 3, why);
    }
    dim3 gd = {g[0], g[1], g[2]}, bd = {(unsigned)k->block, 1, 1};
    cudaError_t e = cudaLaunchKernel((const void *)rtc.fn[i], gd, bd, args, (size_t)k->smem, (cudaStream_t)s);
    if (e != cudaSuccess) {
        snprintf(why, sizeof why, "kernel %s: cudaLaunchKernel: %s", k->name, cudaGetErrorString(e));
        return fail(p, 4, why);
    }
    return 0;
}

#define TRAMPOLINE(i)                                                                              \
    static int launch_##i(const DLTensor *in, int ni, DLTensor *out, int no, const kgate_params *p, \
                          kgate_stream s)                                                          \
    {                                                                                              \
        return launch(i, in, ni, out, no, p, s);                                                   \
    }
TRAMPOLINE(0) TRAMPOLINE(1) TRAMPOLINE(2) TRAMPOLINE(3) TRAMPOLINE(4) TRAMPOLINE(5) TRAMPOLINE(6) TRAMPOLINE(7)
TRAMPOLINE(8) TRAMPOLINE(9) TRAMPOLINE(10) TRAMPOLINE(11) TRAMPOLINE(12) TRAMPOLINE(13) TRAMPOLINE(14) TRAMPOLINE(15)
#undef TRAMPOLINE
static const kgate_launch_fn launches[KG_RTC_MAX_KERNELS] = {
    launch_0, launch_1, launch_2,  launch_3,  launch_4,  launch_5,  launch_6,  launch_7,
    launch_8, launch_9, launch_10, launch_11, launch_12, launch_13, launch_14, launch_15,
};

static int rtc_open(void *self, const char *source, const kgate_plugin **table, char *msg, uint32_t size)
{
    (void)self;
    kg_err e = {0, ""};
    FILE *f = fopen(source, "rb");
    if (!f) {
        snprintf(msg, size, "%s: cannot be read", source);
        return KG_EXIT_CANDIDATE;
    }
    free(rtc.source);
    rtc.source = malloc(KG_RTC_MAX_SOURCE + 2);
    rtc.len = rtc.source ? fread(rtc.source, 1, KG_RTC_MAX_SOURCE + 1, f) : 0;
    fclose(f);
    if (!rtc.source) {
        snprintf(msg, size, "out of memory for %s", source);
        return KG_EXIT_ENV;
    }
    rtc.source[rtc.len] = '\0';
    snprintf(rtc.path, sizeof rtc.path, "%s", source);
    if (kg_rtc_parse(rtc.source, rtc.len, rtc.desc, &rtc.n, &e)) {
        snprintf(msg, size, "%s: %s", source, e.msg);
        return e.code;
    }
    for (int i = 0; i < rtc.n; i++) {
        const kg_rtc_kernel *d = &rtc.desc[i];
        const kg_op *op = kg_op_find(d->op); /* its signature's counts; an unknown op fails validation */
        rtc.table[i] = (kgate_kernel){d->name, d->op, d->dtype, d->index_dtype[0] ? d->index_dtype : NULL,
                                      op ? op->n_inputs : 0, op ? op->n_outputs : 0, launches[i],
                                      d->summary[0] ? d->summary : NULL, d->scalars, NULL};
    }
    rtc.plugin = (kgate_plugin){KGATE_ABI_VERSION, (uint32_t)sizeof(kgate_kernel), (uint32_t)rtc.n, rtc.table};
    rtc.compiled = 0;
    *table = &rtc.plugin;
    return 0;
}

const kg_provider *kg_provider_rtc(void)
{
    static const kg_provider p = {sizeof(kg_provider), "cuda", NULL, rtc_open, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    return &p;
}

int kg_source_is_cuda(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 3 && strcmp(path + n - 3, ".cu") == 0;
}
