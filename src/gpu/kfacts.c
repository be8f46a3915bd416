/* What one call of a subject launched, and each kernel's facts
 * (gpu/kfacts.h): CUPTI callbacks, the driver's function attributes and
 * occupancy API, cuobjdump on captured cubins, the Range Profiler. */
#include "kfacts.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../diagnose/sass.h"
#include "../diagnose/sass_run.h"
#include "check.h"
#include "profile.h"

#define MAX_LAUNCHES 256
#define MAX_CUBINS 256
#define CUBIN_BYTES_MAX (512ull << 20) /* all captured cubins together */

typedef struct launch {
    CUfunction f;      /* NULL: a memset (it may be a profiler range too) */
    long long grid[3], block[3];
    int dyn_smem;
} launch;

/* The watcher's state: written by CUPTI callbacks (any thread), read by
 * kg_kf_describe; guarded by mu. */
static struct {
    pthread_mutex_t mu;
    int on, capturing;
    launch l[MAX_LAUNCHES];
    int n, dropped;
    struct {
        char *bytes;
        size_t size;
    } cubin[MAX_CUBINS];
    int n_cubins;
    size_t cubin_bytes;
    int cubins_dropped;
    CUpti_SubscriberHandle sub;
} W = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ------------------------------------------------------ driver, by lookup */

typedef CUresult (*get_name_fn)(const char **, CUfunction);
typedef CUresult (*get_attr_fn)(int *, CUfunction_attribute, CUfunction);
typedef CUresult (*occ_fn)(int *, CUfunction, int, size_t);
typedef CUresult (*err_str_fn)(CUresult, const char **);
typedef CUresult (*kernel_fn_fn)(CUfunction *, CUkernel);

static struct {
    int tried;
    get_name_fn get_name;
    get_attr_fn get_attr;
    occ_fn occ;
    err_str_fn err_str;
    kernel_fn_fn kernel_function;
} D;

static void *driver_fn(const char *name, int version)
{
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(name, &f, (unsigned)version, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
        f = NULL;
    cudaGetLastError();
    return f;
}

static int driver(kg_err *err)
{
    if (!D.tried) {
        D.tried = 1;
        D.get_name = (get_name_fn)driver_fn("cuFuncGetName", 12030);
        D.get_attr = (get_attr_fn)driver_fn("cuFuncGetAttribute", 12000);
        D.occ = (occ_fn)driver_fn("cuOccupancyMaxActiveBlocksPerMultiprocessor", 12000);
        D.err_str = (err_str_fn)driver_fn("cuGetErrorString", 12000);
        D.kernel_function = (kernel_fn_fn)driver_fn("cuKernelGetFunction", 12000);
    }
    if (!D.get_name || !D.get_attr || !D.occ)
        return kg_err_set(err, KG_EXIT_ENV, "the driver lacks cuFuncGetName, cuFuncGetAttribute or the occupancy API");
    return 0;
}

/* A driver call's failure, named: call text, file, line. */
#define KG_CU(call)                                                                                         \
    do {                                                                                                   \
        CUresult rc_ = (call);                                                                             \
        if (rc_ != CUDA_SUCCESS) {                                                                         \
            const char *s_ = "?";                                                                          \
            if (D.err_str)                                                                                 \
                D.err_str(rc_, &s_);                                                                       \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, s_);        \
            goto out;                                                                                      \
        }                                                                                                  \
    } while (0)

/* --------------------------------------------------------- the callbacks */

static void record(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                   unsigned smem)
{
    pthread_mutex_lock(&W.mu);
    if (W.capturing) {
        if (W.n < MAX_LAUNCHES) {
            launch *l = &W.l[W.n++];
            l->f = f;
            l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
            l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
            l->dyn_smem = (int)smem;
        } else {
            W.dropped++;
        }
    }
    pthread_mutex_unlock(&W.mu);
}

static int is_memset(CUpti_CallbackId cbid)
{
    static const CUpti_CallbackId ids[] = {
#define M(n) CUPTI_DRIVER_TRACE_CBID_cuMemset##n
        M(D8), M(D16), M(D32), M(D2D8), M(D2D16), M(D2D32), M(D8Async), M(D16Async), M(D32Async),
        M(D2D8Async), M(D2D16Async), M(D2D32Async), M(D8Async_ptsz), M(D16Async_ptsz), M(D32Async_ptsz),
        M(D2D8Async_ptsz), M(D2D16Async_ptsz), M(D2D32Async_ptsz), M(D8_v2), M(D16_v2), M(D32_v2), M(D2D8_v2),
        M(D2D16_v2), M(D2D32_v2), M(D8_v2_ptds), M(D16_v2_ptds), M(D32_v2_ptds), M(D2D8_v2_ptds),
        M(D2D16_v2_ptds), M(D2D32_v2_ptds),
#undef M
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] == cbid)
            return 1;
    return 0;
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
    (void)ud;
    if (dom == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        const CUpti_ResourceData *rd = data;
        const CUpti_ModuleResourceData *m = rd ? rd->resourceDescriptor : NULL;
        if (!m || !m->pCubin || !m->cubinSize)
            return;
        pthread_mutex_lock(&W.mu);
        char *copy = W.n_cubins < MAX_CUBINS && W.cubin_bytes + m->cubinSize <= CUBIN_BYTES_MAX
                         ? malloc(m->cubinSize)
                         : NULL;
        if (copy) {
            memcpy(copy, m->pCubin, m->cubinSize);
            W.cubin[W.n_cubins].bytes = copy;
            W.cubin[W.n_cubins++].size = m->cubinSize;
            W.cubin_bytes += m->cubinSize;
        } else {
            W.cubins_dropped++;
        }
        pthread_mutex_unlock(&W.mu);
        return;
    }
    if (dom != CUPTI_CB_DOMAIN_DRIVER_API)
        return;
    const CUpti_CallbackData *cd = data;
    if (!cd || cd->callbackSite != CUPTI_API_ENTER || !cd->functionParams)
        return;
    if (is_memset(cbid)) { /* a memset may be a kernel to the profiler: keep the order */
        record(NULL, 0, 0, 0, 0, 0, 0, 0);
        return;
    }
    switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel: {
        const cuLaunchKernel_params *p = cd->functionParams;
        record(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
               p->sharedMemBytes);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        const cuLaunchKernel_ptsz_params *p = cd->functionParams;
        record(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
               p->sharedMemBytes);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel: {
        const cuLaunchCooperativeKernel_params *p = cd->functionParams;
        record(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
               p->sharedMemBytes);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        const cuLaunchCooperativeKernel_ptsz_params *p = cd->functionParams;
        record(p->f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY, p->blockDimZ,
               p->sharedMemBytes);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx: {
        const cuLaunchKernelEx_params *p = cd->functionParams;
        if (p->config)
            record(p->f, p->config->gridDimX, p->config->gridDimY, p->config->gridDimZ, p->config->blockDimX,
                   p->config->blockDimY, p->config->blockDimZ, p->config->sharedMemBytes);
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        const cuLaunchKernelEx_ptsz_params *p = cd->functionParams;
        if (p->config)
            record(p->f, p->config->gridDimX, p->config->gridDimY, p->config->gridDimZ, p->config->blockDimX,
                   p->config->blockDimY, p->config->blockDimZ, p->config->sharedMemBytes);
        break;
    }
    default:
        break;
    }
}

int kg_kf_watch(kg_err *err)
{
    static const CUpti_CallbackId launches[] = {
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    };
    if (W.on)
        return 0;
    KG_CUPTI(cuptiSubscribe(&W.sub, on_callback, NULL));
    for (size_t i = 0; i < sizeof launches / sizeof launches[0]; i++)
        KG_CUPTI(cuptiEnableCallback(1, W.sub, CUPTI_CB_DOMAIN_DRIVER_API, launches[i]));
    for (CUpti_CallbackId id = 0; id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
        if (is_memset(id))
            KG_CUPTI(cuptiEnableCallback(1, W.sub, CUPTI_CB_DOMAIN_DRIVER_API, id));
    KG_CUPTI(cuptiEnableCallback(1, W.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED));
    W.on = 1;
out:
    return err->code;
}

/* ------------------------------------------------------------ the facts */

/* The name of a launched function, *f made the context's function on the
 * way: the runtime launches through context-independent CUkernel handles,
 * which the function API does not take. */
static CUresult function_name(CUfunction *f, const char **name)
{
    CUresult r = D.get_name(name, *f);
    if (r != CUDA_SUCCESS && D.kernel_function && (r = D.kernel_function(f, (CUkernel)*f)) == CUDA_SUCCESS)
        r = D.get_name(name, *f);
    return r;
}

/* Registers, memory, occupancy and its limiter of one function at one launch. */
static int function_facts(const launch *l, kg_kfacts *k, kg_err *err)
{
    int dev = 0, regs_sm = 0, smem_sm = 0, smem_res = 0, thr_sm = 0, blk_sm = 0, sms = 0, blocks = 0;
    int a = 0;
    const char *name = NULL;
    CUfunction f = l->f;
    KG_CU(function_name(&f, &name));
    snprintf(k->name, sizeof k->name, "%s", name ? name : "?");
    KG_CU(D.get_attr(&a, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
    k->regs = a;
    KG_CU(D.get_attr(&a, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
    k->static_smem = a;
    KG_CU(D.get_attr(&a, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
    k->local_bytes = a;
    k->dyn_smem = l->dyn_smem;
    for (int i = 0; i < 3; i++)
        k->grid[i] = l->grid[i], k->block[i] = l->block[i];
    long long threads = l->block[0] * l->block[1] * l->block[2];
    KG_CU(D.occ(&blocks, f, (int)threads, (size_t)l->dyn_smem));
    KG_CUDA(cudaGetDevice(&dev));
    KG_CUDA(cudaDeviceGetAttribute(&regs_sm, cudaDevAttrMaxRegistersPerMultiprocessor, dev));
    KG_CUDA(cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
    KG_CUDA(cudaDeviceGetAttribute(&smem_res, cudaDevAttrReservedSharedMemoryPerBlock, dev));
    KG_CUDA(cudaDeviceGetAttribute(&thr_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    KG_CUDA(cudaDeviceGetAttribute(&blk_sm, cudaDevAttrMaxBlocksPerMultiprocessor, dev));
    KG_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    {
        /* the number is the occupancy API's; the limiter is the resource
         * whose own bound equals it (registers are allocated per warp in
         * units of 256, shared memory with a per-block reservation) */
        long long wpb = (threads + 31) / 32;
        long long by_warps = wpb ? thr_sm / 32 / wpb : 0;
        long long regs_warp = ((long long)(k->regs > 0 ? k->regs : 1) * 32 + 255) / 256 * 256;
        long long by_regs = wpb ? regs_sm / regs_warp / wpb : 0;
        long long smem = (long long)k->static_smem + l->dyn_smem;
        long long by_smem = smem > 0 ? smem_sm / (smem + smem_res) : blk_sm;
        k->max_blocks_per_sm = blocks;
        k->occupancy = thr_sm > 0 ? (double)blocks * (double)wpb * 32 / thr_sm : -1;
        const char *lim = blocks == by_regs ? "registers" : blocks == by_smem ? "shared"
                          : blocks == by_warps ? "warps" : blocks == blk_sm ? "blocks" : "";
        snprintf(k->limiter, sizeof k->limiter, "%s", lim);
        k->sms = sms;
        long long grid = l->grid[0] * l->grid[1] * l->grid[2];
        k->waves = blocks > 0 && sms > 0 ? (double)grid / ((double)blocks * sms) : -1;
    }
out:
    return err->code;
}

/* The captured cubins, as sass_run takes them (the bytes stay W's: kept
 * for the process's life). */
static int cubins(kg_sass_cubin *out)
{
    pthread_mutex_lock(&W.mu);
    int n = W.n_cubins;
    for (int c = 0; c < n; c++)
        out[c] = (kg_sass_cubin){W.cubin[c].bytes, W.cubin[c].size};
    pthread_mutex_unlock(&W.mu);
    return n;
}

/* Starts cuobjdump on the cubins that hold the nn names (diagnose/sass_run.h). */
static kg_sass_run *sass_start(const char (*names)[KG_KNAME_MAX], int nn, const char *tmpdir, kg_diagnosis *d)
{
    kg_sass_cubin *cs = malloc(sizeof *cs * MAX_CUBINS);
    if (!cs) {
        kg_diag_note(d, "%s", "no SASS: out of memory");
        return NULL;
    }
    kg_sass_run *r = kg_sass_run_start(cs, cubins(cs), names, nn, tmpdir, d);
    free(cs);
    return r;
}

/* The SASS counts of the kernels of ks that have none yet and are not
 * among the nt already asked for, now. */
static void sass_facts(kg_kfacts *ks, int nk, const char (*tried)[KG_KNAME_MAX], int nt, const char *tmpdir,
                       kg_diagnosis *d)
{
    char(*names)[KG_KNAME_MAX] = malloc(sizeof *names * (size_t)(nk > 0 ? nk : 1));
    int nn = 0;
    if (!names) {
        kg_diag_note(d, "%s", "no SASS: out of memory");
        return;
    }
    for (int i = 0; i < nk; i++) {
        int t = 0;
        while (t < nt && strcmp(tried[t], ks[i].name) != 0)
            t++;
        if (!ks[i].sass.found && t == nt)
            snprintf(names[nn++], KG_KNAME_MAX, "%s", ks[i].name);
    }
    if (nn)
        kg_sass_run_finish(sass_start((const char(*)[KG_KNAME_MAX])names, nn, tmpdir, d), ks, nk, 0, d);
    free(names);
}

/* Says why each kernel of ks without SASS counts has none. */
static void sass_notes(kg_kfacts *ks, int nk)
{
    char tool_buf[4096];
    int have_tool = kg_find_tool("cuobjdump", "KG_CUOBJDUMP", tool_buf, sizeof tool_buf) != NULL;
    for (int i = 0; i < nk; i++)
        if (!ks[i].sass.found && !ks[i].sass_note[0])
            snprintf(ks[i].sass_note, sizeof ks[i].sass_note, "%s",
                     !have_tool         ? "cuobjdump not found (PATH, CUDA_HOME, KG_CUOBJDUMP)"
                     : W.cubins_dropped ? "no captured cubin holds it (some cubins were not kept: too many)"
                                        : "no captured cubin holds it, or cuobjdump gave none (see the note)");
}

/* The names of the distinct functions among the launches watched, at most
 * max of them. The handles are copied under the lock and named outside it:
 * the driver may load a module, whose callback takes the lock. */
static int launched_names(char (*names)[KG_KNAME_MAX], int max)
{
    int nn = 0, nf = 0;
    kg_err e = {0, ""};
    CUfunction fs[MAX_LAUNCHES];
    if (driver(&e))
        return 0;
    pthread_mutex_lock(&W.mu);
    for (int i = 0; i < W.n; i++)
        if (W.l[i].f)
            fs[nf++] = W.l[i].f;
    pthread_mutex_unlock(&W.mu);
    for (int i = 0; i < nf && nn < max; i++) {
        const char *name = NULL;
        if (function_name(&fs[i], &name) != CUDA_SUCCESS || !name || !*name)
            continue;
        int k;
        for (k = 0; k < nn && strncmp(names[k], name, KG_KNAME_MAX - 1) != 0; k++)
            ;
        if (k == nn)
            snprintf(names[nn++], KG_KNAME_MAX, "%s", name);
    }
    return nn;
}

/* One plain call of the subject, the launches it makes recorded afresh
 * (while W.capturing); its failure is the subject's (KG_EXIT_FAIL). */
static void plain_call(int (*launch)(void *ctx, kg_err *err), void *ctx, kg_err *err)
{
    pthread_mutex_lock(&W.mu);
    W.n = W.dropped = 0;
    pthread_mutex_unlock(&W.mu);
    launch(ctx, err);
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc != cudaSuccess && !err->code)
        kg_err_set(err, KG_EXIT_FAIL, "the call being described failed: %s", cudaGetErrorString(rc));
}

static double last_sass_s; /* the last describe's time in cuobjdump and the scan */

double kg_kf_last_sass_s(void) { return last_sass_s; }

/* One description's state: what kg_kf_describe's steps share. */
typedef struct describe_run {
    int (*launch)(void *ctx, kg_err *err);
    void *ctx;
    const char *const *metrics; /* the caller's, or unpatched[] */
    int n_metrics;
    const char *unpatched[KG_KMETRICS_MAX];
    const char *tmpdir;
    kg_diagnosis *d;
    kg_kfacts *ranges; /* the profiler's, MAX_LAUNCHES */
    int n_ranges, dropped, profiled;
    int n;                      /* launches watched (kernels and memsets) */
    kg_sass_run *early;         /* cuobjdump started before the profiler */
    char (*tried)[KG_KNAME_MAX]; /* the kernels it was asked for */
    int n_tried;
    double t_sass;
} describe_run;

/* A plain call first: it names the kernels the subject launches, so that
 * their disassembly runs while the profiler does, and its time says whether
 * the SASS-patched metrics are affordable. */
static int describe_plain_first(describe_run *R, double patched_max_s, kg_err *err)
{
    double ts = kg_mono();
    pthread_mutex_lock(&W.mu);
    W.capturing = W.on;
    pthread_mutex_unlock(&W.mu);
    plain_call(R->launch, R->ctx, err);
    const double call_s = kg_mono() - ts;
    pthread_mutex_lock(&W.mu);
    W.capturing = 0;
    pthread_mutex_unlock(&W.mu);
    if (err->code)
        return err->code;
    if (call_s > patched_max_s && R->n_metrics <= KG_KMETRICS_MAX) {
        int n = kg_prof_unpatched(R->metrics, R->n_metrics, R->unpatched);
        if (n < R->n_metrics) {
            char m[300];
            snprintf(m, sizeof m, "one call took %.3f s (over --diagnose-patched-max %g s): the SASS-patched "
                     "metrics (sector use, load width, load instructions) were left out, so RC1, RC0b and "
                     "RC0a's whole-row case are judged without them", call_s, patched_max_s);
            kg_diag_note(R->d, "%s", m);
            R->metrics = R->unpatched;
            R->n_metrics = n;
        }
    }
    if (W.on) {
        R->tried = malloc(sizeof *R->tried * KG_DIAG_KERNELS_MAX);
        if (R->tried) {
            R->n_tried = launched_names(R->tried, KG_DIAG_KERNELS_MAX);
            if (R->n_tried)
                R->early = sass_start((const char(*)[KG_KNAME_MAX])R->tried, R->n_tried, R->tmpdir, R->d);
        }
    }
    R->t_sass += kg_mono() - ts;
    return 0;
}

/* The watched call: under the profiler (its ranges into R->ranges), or,
 * without counters, plain; the launches it made counted in R->n. */
static int describe_profiled_call(describe_run *R, kg_err *err)
{
    kg_diagnosis *d = R->d;
    pthread_mutex_lock(&W.mu);
    W.n = W.dropped = 0;
    W.capturing = W.on;
    pthread_mutex_unlock(&W.mu);
    if (R->n_metrics > 0) {
        kg_err perr = {0, ""};
        int rc = kg_prof_collect(R->metrics, R->n_metrics, R->launch, R->ctx, R->ranges, MAX_LAUNCHES,
                                 &R->n_ranges, &R->dropped, &perr);
        if (rc == 0) {
            R->profiled = 1;
            d->passes = kg_prof_last_passes();
        } else if (err->code == 0 && perr.code == KG_EXIT_FAIL) {
            /* the launch itself failed under the profiler: the subject's fault */
            *err = perr;
        } else {
            kg_diag_note(d, "no counters: %.400s", perr.msg);
        }
    }
    if (!R->profiled && !err->code) {
        /* no counters: one plain call for the launches */
        plain_call(R->launch, R->ctx, err);
    }
    pthread_mutex_lock(&W.mu);
    W.capturing = 0;
    R->n = W.n;
    if (W.dropped)
        kg_diag_note(d, "%s", "more launches than kgate keeps; the rest are not described");
    pthread_mutex_unlock(&W.mu);
    return err->code;
}

/* A range's counters into kf: sums add up over launches, the rest are the
 * first launch's. */
static void describe_add_range(kg_kfacts *kf, const kg_kfacts *range)
{
    for (int m = 0; m < range->n_m; m++) {
        const char *mn = range->m[m].name;
        double old = kg_kfacts_metric(kf, mn), v = range->m[m].value;
        size_t len = strlen(mn);
        int is_sum = len > 4 && strcmp(mn + len - 4, ".sum") == 0;
        if (isnan(old))
            kg_kfacts_set(kf, mn, v);
        else if (is_sum)
            kg_kfacts_set(kf, mn, old + v);
    }
}

/* One kgate fact record per function, in first-launch order, with the
 * counters of its ranges. */
static void describe_kernels(describe_run *R)
{
    kg_diagnosis *d = R->d;
    kg_err derr = {0, ""};
    const int n = R->n;
    int n_kern = 0;
    for (int i = 0; i < n; i++)
        n_kern += W.l[i].f != NULL;
    d->launches = n_kern;
    if (R->dropped)
        kg_diag_note(d, "%s", "the profiler dropped ranges");
    /* ranges follow launch order; a memset is a range on some drivers and
     * not on others: match by order only where the counts say how */
    const int memsets_ranged = R->profiled && R->n_ranges == n;
    const int kernels_ranged = R->profiled && !memsets_ranged && R->n_ranges == n_kern;
    if (R->profiled && !memsets_ranged && !kernels_ranged) {
        char m[160];
        snprintf(m, sizeof m, "%d profiled ranges for %d launches and %d memsets: counters left out", R->n_ranges,
                 n_kern, n - n_kern);
        kg_diag_note(d, "%s", m);
    }
    if (n_kern > 0 && driver(&derr) != 0) {
        kg_diag_note(d, "no static facts: %s", derr.msg);
        return;
    }
    CUfunction seen[KG_DIAG_KERNELS_MAX];
    for (int i = 0, r = 0; i < n; i++) {
        if (!W.l[i].f) {
            r += memsets_ranged;
            continue;
        }
        const int ri = memsets_ranged || kernels_ranged ? r++ : -1;
        int k;
        for (k = 0; k < d->n_kernels && seen[k] != W.l[i].f; k++)
            ;
        kg_kfacts *kf = &d->kernels[k];
        if (k == d->n_kernels) {
            if (d->n_kernels == KG_DIAG_KERNELS_MAX) {
                kg_diag_note(d, "%s", "more distinct kernels than kgate describes; the rest are left out");
                continue;
            }
            kg_kfacts_init(kf);
            seen[d->n_kernels++] = W.l[i].f;
            kg_err ferr = {0, ""};
            if (function_facts(&W.l[i], kf, &ferr))
                kg_diag_note(d, "a kernel's attributes: %s", ferr.msg);
        }
        kf->launches++;
        if (ri >= 0 && ri < R->n_ranges)
            describe_add_range(kf, &R->ranges[ri]);
    }
}

/* The GPU time the kernels were busy, and each one's share of it. */
static void describe_shares(kg_diagnosis *d)
{
    double total = 0;
    for (int k = 0; k < d->n_kernels; k++) {
        double t = kg_kfacts_metric(&d->kernels[k], "gpu__time_duration.sum");
        total += t > 0 ? t : 0;
    }
    d->busy_s = total * 1e-9;
    for (int k = 0; k < d->n_kernels && total > 0; k++) {
        double t = kg_kfacts_metric(&d->kernels[k], "gpu__time_duration.sum");
        d->kernels[k].time_share = t > 0 ? t / total : 0;
    }
}

int kg_kf_describe(int (*launch)(void *ctx, kg_err *err), void *ctx, const char *const *metrics, int n_metrics,
                   double patched_max_s, const char *tmpdir, kg_diagnosis *d, kg_err *err)
{
    double t0 = kg_mono();
    last_sass_s = 0;
    describe_run R = {.launch = launch, .ctx = ctx, .metrics = metrics, .n_metrics = n_metrics, .tmpdir = tmpdir,
                      .d = d};
    R.ranges = calloc(MAX_LAUNCHES, sizeof *R.ranges);
    memset(d, 0, sizeof *d);
    if (!R.ranges)
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the diagnosis");
    if (!W.on)
        kg_diag_note(d, "%s", "no static facts: launches were not watched (another CUPTI subscriber?)");
    if ((R.n_metrics > 0 && describe_plain_first(&R, patched_max_s, err)) || describe_profiled_call(&R, err))
        goto out;
    describe_kernels(&R);
    describe_shares(d);
    double ts = kg_mono();
    kg_sass_run_finish(R.early, d->kernels, d->n_kernels, 0, d);
    R.early = NULL;
    if (d->n_kernels) /* kernels the plain call did not launch, or all of them */
        sass_facts(d->kernels, d->n_kernels, (const char(*)[KG_KNAME_MAX])R.tried, R.n_tried, tmpdir, d);
    sass_notes(d->kernels, d->n_kernels);
    R.t_sass += kg_mono() - ts;
    last_sass_s = R.t_sass;
out:
    kg_sass_run_finish(R.early, NULL, 0, 1, d); /* a failure after it started: killed, its files removed */
    free(R.tried);
    free(R.ranges);
    d->wall_s = kg_mono() - t0;
    return err->code;
}
