/* Hardware counters from the CUPTI Range Profiler of CUDA 13, in plain C
 * (gpu/profile.h), through cupti_range_profiler.h's calls in the order
 * below; every params struct below starts with
 * structSize = <Type>_STRUCT_SIZE and pPriv = NULL.
 *
 * kg_prof_collect, in order:
 *   1. cuCtxGetCurrent / cuCtxGetDevice: the caller's current context (it
 *      must exist: creating one is not this file's job);
 *   2. cuptiProfilerInitialize; cuptiProfilerDeviceSupported (the failing
 *      reason fields are named); cuptiDeviceGetChipName ("GH100");
 *      cuptiProfilerGetCounterAvailability, size then fill;
 *   3. host: cuptiProfilerHostInitialize with the chip and availability
 *      image, each name checked with cuptiProfilerHostGetMetricProperties
 *      (so a bad one is named: cuptiProfilerHostConfigAddMetrics only says
 *      INVALID_PARAMETER, and may be called once per host object), then
 *      ConfigAddMetrics, the config image and cuptiProfilerHostGetNumOfPasses;
 *   4. target: cuptiRangeProfilerEnable on the context; a counter data image
 *      for `max` ranges; cuptiRangeProfilerSetConfig with CUPTI_AutoRange
 *      (every kernel is a range) and CUPTI_KernelReplay (CUPTI replays each
 *      kernel for every pass and restores device memory between passes);
 *   5. Start, launch, Stop until Stop says isAllPassSubmitted: with kernel
 *      replay the first round covers every pass, later rounds are a bound
 *      (64) against a CUPTI that keeps asking;
 *   6. cuCtxSynchronize, DecodeData (dropped ranges), GetCounterDataInfo,
 *      then per range GetRangeInfo and cuptiProfilerHostEvaluateToGpuValues;
 *   7. Disable, host deinitialize, cuptiProfilerDeInitialize: checked on the
 *      way out of a success, best effort after a failure.
 * kg_prof_passes_offline runs step 3 alone, with no availability image: the
 * host API needs neither a GPU nor a driver (chips GV100 ... GB20B).
 *
 * Building it as C. cupti_profiler_host.h includes the C++ header <string>
 * (and uses nothing from it), so a C compiler stops at "fatal error:
 * string". src/gpu/cupti_shim/ holds an empty file named `string`; put
 * that directory on this file's include path (-idirafter, so that a C++
 * file given the same flags still finds the real <string>). It is empty on
 * purpose, since nothing from <string> is used; a file with that name
 * cannot say so itself without looking like a header with content, so the
 * explanation lives here.
 *
 * The driver without libcuda. kgate links the CUDA runtime and CUPTI, not
 * libcuda, so the four driver functions used here are looked up through
 * cudaGetDriverEntryPointByVersion when kg_prof_collect runs. The offline
 * check calls no CUDA at all, so its tests run on machines without a GPU.
 *
 * Pass counts measured offline for GH100 with CUPTI 13.0 (host API, no
 * availability image): the default set, 25 metrics, 3 passes; the extended
 * set, 32 metrics, 12 passes (the default set plus the two SOL throughputs
 * alone is 11: sm__throughput 8 passes by itself, gpu__compute_memory_-
 * throughput 5). The SASS-patched smsp__sass_* metrics take one pass of
 * their own however many there are. The l1tex t-stage counters compete for
 * one signal bus: global-load requests and sectors together with the local
 * sectors need 3 passes by themselves, so l1tex__t_requests_pipe_lsu_mem_-
 * global_op_ld.sum costs the default set a fourth pass (20 metrics of the
 * brief's list: 4 passes; without it, 3). It lives in the extended set;
 * sectors per request is l1tex__t_sectors_..._op_ld.sum over
 * smsp__sass_inst_executed_op_global_ld.sum (one request per warp-level
 * LDG), which the default set has. */
#include "profile.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_host.h> /* needs the include shim: see above */
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include "../base/text.h"

#define MAX_ROUNDS 64 /* Start/launch/Stop rounds before giving up */

/* ------------------------------------------------------------ the sets */

/* One list per set; the extended set is the default one plus EXTRA, so the
 * two cannot drift apart. Passes: see the header comment. */
#define KG_PROF_DEFAULT(X)                                                                                     \
    X("gpu__time_duration.sum")                                   /* ns (replayed: not a timing) */            \
    X("dram__bytes_read.sum")                                     /* DRAM traffic */                           \
    X("dram__bytes_write.sum")                                                                                 \
    X("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")   /* DRAM % of peak, as ncu's SOL */           \
    X("lts__t_sector_hit_rate.pct")                               /* L2 hit rate (can exceed 100) */           \
    X("lts__t_sector_op_read_hit_rate.pct")                       /* L2 hit rate of reads (RC2b) */            \
    X("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")           /* global load sectors */                    \
    X("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")           /* global store sectors */                   \
    X("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct") /* bytes used per sector (RC1) */       \
    X("smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct")                                         \
    X("smsp__sass_data_bytes_mem_global_op_ld.sum")               /* load width = bytes / (32 x inst) */       \
    X("smsp__sass_inst_executed_op_global_ld.sum")                /* warp-level global loads */                \
    X("smsp__sass_inst_executed_op_global_st.sum")                                                             \
    X("smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio") /* stalls (RC0a) */          \
    X("smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio")                                      \
    X("smsp__average_warp_latency_per_inst_issued.ratio")         /* the stalls' denominator */                \
    X("smsp__issue_active.avg.per_cycle_active")                                                               \
    X("sm__warps_active.avg.pct_of_peak_sustained_active")        /* achieved occupancy */                     \
    X("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum")            /* local memory: spills (RC3) */             \
    X("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum")                                                         \
    X("smsp__sass_inst_executed_op_local_ld.sum")                                                              \
    X("smsp__sass_inst_executed_op_local_st.sum")                                                              \
    X("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active") /* tensor pipe, HMMA+HGMMA */  \
    X("sm__ctas_launched.sum")                                    /* grid smaller than the SMs */              \
    X("sm__inst_executed_pipe_tensor_op_gmma.sum")                /* HGMMA (wgmma) instructions */

#define KG_PROF_EXTRA(X)                                                                                       \
    X("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")          /* the 4th pass of the default set */        \
    X("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")                                                       \
    X("smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio")                                  \
    X("smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio")                                 \
    X("smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio")                                         \
    X("sm__throughput.avg.pct_of_peak_sustained_elapsed")         /* 8 passes by itself */                     \
    X("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed") /* 5 by itself */

#define KG_PROF_STR(s) s,
const char *const kg_prof_default_metrics[] = {KG_PROF_DEFAULT(KG_PROF_STR)};
const int kg_prof_n_default = (int)(sizeof kg_prof_default_metrics / sizeof kg_prof_default_metrics[0]);
const char *const kg_prof_extended_metrics[] = {KG_PROF_DEFAULT(KG_PROF_STR) KG_PROF_EXTRA(KG_PROF_STR)};
const int kg_prof_n_extended = (int)(sizeof kg_prof_extended_metrics / sizeof kg_prof_extended_metrics[0]);
#undef KG_PROF_STR

int kg_prof_unpatched(const char *const *metrics, int n, const char **out)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(metrics[i], "smsp__sass_", 11) != 0)
            out[k++] = metrics[i];
    return k;
}

static int last_passes;
static double last_times[3]; /* setup, passes, evaluation (s) */

int kg_prof_last_passes(void) { return last_passes; }

void kg_prof_last_times(double *setup_s, double *passes_s, double *eval_s)
{
    *setup_s = last_times[0];
    *passes_s = last_times[1];
    *eval_s = last_times[2];
}

/* ------------------------------------------------------------- checking */

/* A CUPTI failure, named. Privilege errors get the way to allow profiling
 * and set *denied, so the caller can answer KG_PROF_DENIED. */
static void cupti_fail(kg_err *err, int *denied, CUptiResult r, const char *call, const char *file, int line)
{
    const char *s = "?";
    cuptiGetResultString(r, &s);
    if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES) {
        *denied = 1;
        kg_err_set(err, KG_EXIT_ENV,
                   "profiling is not permitted for this user (%s failed at %s:%d: %s): run as root or with "
                   "CAP_SYS_ADMIN (CAP_PERFMON from driver R565), or load the driver with "
                   "NVreg_RestrictProfilingToAdminUsers=0 (containers: --cap-add=SYS_ADMIN)",
                   call, file, line, s);
    } else if (r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES) {
        *denied = 1;
        kg_err_set(err, KG_EXIT_ENV,
                   "profiling is not enabled for this virtual GPU (%s failed at %s:%d: %s): the hypervisor's "
                   "administrator must enable profiling for the vGPU",
                   call, file, line, s);
    } else {
        kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s", call, file, line, s);
    }
}

/* KG_CUPTI (check.h) that also recognises a refusal: needs a local
 * `int denied` and the `out` label. */
#define KG_CUPTI_P(call)                                                                                       \
    do {                                                                                                       \
        CUptiResult rc_ = (call);                                                                              \
        if (rc_ != CUPTI_SUCCESS) {                                                                            \
            cupti_fail(err, &denied, rc_, #call, __FILE__, __LINE__);                                          \
            goto out;                                                                                          \
        }                                                                                                      \
    } while (0)

/* The driver functions used, looked up through the runtime at the CUDA 12.0
 * ABI (13.0 added cuCtxGetDevice and cuCtxSynchronize variants that take a
 * context; the ones named here act on the current context). */
typedef struct drv {
    CUresult (*get_current)(CUcontext *);
    CUresult (*get_device)(CUdevice *);
    CUresult (*sync)(void);
    CUresult (*err_name)(CUresult, const char **);
} drv;

/* A driver call's failure, named with the driver's error name. */
#define KG_CU(d, call)                                                                                         \
    do {                                                                                                       \
        CUresult rc_ = (call);                                                                                 \
        if (rc_ != CUDA_SUCCESS) {                                                                             \
            const char *s_ = "?";                                                                              \
            if ((d).err_name)                                                                                  \
                (d).err_name(rc_, &s_);                                                                        \
            kg_err_set(err, KG_EXIT_ENV, "%s failed at %s:%d: %s (%d)", #call, __FILE__, __LINE__, s_, (int)rc_); \
            goto out;                                                                                          \
        }                                                                                                      \
    } while (0)

static void *drv_fn(const char *name, kg_err *err)
{
    void *f = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t rc = cudaGetDriverEntryPointByVersion(name, &f, 12000, cudaEnableDefault, &q);
    if (rc != cudaSuccess) {
        kg_err_set(err, KG_EXIT_ENV, "cudaGetDriverEntryPointByVersion(\"%s\") failed at %s:%d: %s (%s)", name,
                   __FILE__, __LINE__, cudaGetErrorString(rc), cudaGetErrorName(rc));
        f = NULL;
    } else if (q != cudaDriverEntryPointSuccess || !f) {
        kg_err_set(err, KG_EXIT_ENV, "the CUDA driver has no %s (entry point query result %d)", name, (int)q);
        f = NULL;
    }
    if (!f)
        cudaGetLastError(); /* a failed lookup must not look like the subject's error later */
    return f;
}

static int drv_load(drv *d, kg_err *err)
{
    memset(d, 0, sizeof *d);
    /* memcpy: ISO C has no cast from an object pointer to a function pointer */
#define DRV_SYM(field, name)                                                                                   \
    do {                                                                                                       \
        void *p_ = err->code ? NULL : drv_fn(name, err);                                                       \
        memcpy(&d->field, &p_, sizeof p_);                                                                     \
    } while (0)
    DRV_SYM(err_name, "cuGetErrorName");
    DRV_SYM(get_current, "cuCtxGetCurrent");
    DRV_SYM(get_device, "cuCtxGetDevice");
    DRV_SYM(sync, "cuCtxSynchronize");
#undef DRV_SYM
    return err->code;
}

/* ------------------------------------------------------------ host side */

/* A config image for a metric set on one chip, and what built it. */
typedef struct host_cfg {
    CUpti_Profiler_Host_Object *host;
    const char **names; /* the set, as the non-const array CUPTI's params take */
    uint8_t *image;
    size_t size, passes;
} host_cfg;

static void host_release(host_cfg *h)
{
    if (h->host) {
        CUpti_Profiler_Host_Deinitialize_Params p = {
            .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, .pPriv = NULL, .pHostObject = h->host};
        cuptiProfilerHostDeinitialize(&p);
    }
    free(h->names);
    free(h->image);
    memset(h, 0, sizeof *h);
}

/* The set's shape: 1..KG_KMETRICS_MAX distinct names that fit a kg_metric. */
static int check_names(const char *const *metrics, int n, kg_err *err)
{
    if (!metrics || n < 1 || n > KG_KMETRICS_MAX)
        return kg_err_set(err, KG_EXIT_USAGE, "a metric set has 1 to %d names, not %d", KG_KMETRICS_MAX, n);
    for (int i = 0; i < n; i++) {
        if (!metrics[i] || !metrics[i][0])
            return kg_err_set(err, KG_EXIT_USAGE, "metric %d of the set has no name", i);
        if (strlen(metrics[i]) >= sizeof(((kg_metric *)0)->name))
            return kg_err_set(err, KG_EXIT_USAGE, "metric name '%.200s' is longer than kgate keeps (%zu bytes)",
                              metrics[i], sizeof(((kg_metric *)0)->name) - 1);
        for (int j = 0; j < i; j++)
            if (strcmp(metrics[i], metrics[j]) == 0)
                return kg_err_set(err, KG_EXIT_USAGE, "metric '%.200s' is in the set twice", metrics[i]);
    }
    return 0;
}

static void chip_unknown(const char *chip, kg_err *err)
{
    char list[512] = "";
    CUpti_Profiler_Host_GetSupportedChips_Params p = {
        .structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE, .pPriv = NULL};
    if (cuptiProfilerHostGetSupportedChips(&p) == CUPTI_SUCCESS && p.ppChipNames) {
        size_t o = 0;
        for (size_t i = 0; i < p.numChips; i++)
            kg_append(list, sizeof list, &o, "%s%s", i ? " " : "", p.ppChipNames[i]);
    }
    kg_err_set(err, KG_EXIT_USAGE, "unknown chip '%.64s' (CUPTI_ERROR_INVALID_CHIP_NAME); CUPTI knows: %s", chip,
               list[0] ? list : "?");
}

/* Steps 3: the host object, every name checked, the config image and its
 * passes. avail may be NULL (offline). On failure h holds what was made;
 * host_release frees it either way. */
static int host_config(const char *chip, const uint8_t *avail, const char *const *metrics, int n, host_cfg *h,
                       kg_err *err)
{
    int denied = 0; /* for KG_CUPTI_P; the host API refuses nobody */
    memset(h, 0, sizeof *h);
    if (!chip || !chip[0])
        return kg_err_set(err, KG_EXIT_USAGE, "no chip name");
    if (check_names(metrics, n, err))
        return err->code;
    CUpti_Profiler_Host_Initialize_Params ip = {.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
                                                .pPriv = NULL,
                                                .profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER,
                                                .pChipName = chip,
                                                .pCounterAvailabilityImage = avail};
    CUptiResult r = cuptiProfilerHostInitialize(&ip);
    if (r == CUPTI_ERROR_INVALID_CHIP_NAME) {
        chip_unknown(chip, err);
        goto out;
    }
    if (r != CUPTI_SUCCESS) {
        cupti_fail(err, &denied, r, "cuptiProfilerHostInitialize(&ip)", __FILE__, __LINE__);
        goto out;
    }
    h->host = ip.pHostObject;

    h->names = malloc(sizeof *h->names * (size_t)n);
    if (!h->names) {
        kg_err_set(err, KG_EXIT_ENV, "out of memory for %d metric names", n);
        goto out;
    }
    for (int i = 0; i < n; i++) {
        h->names[i] = metrics[i];
        CUpti_Profiler_Host_GetMetricProperties_Params mp = {
            .structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE,
            .pPriv = NULL,
            .pHostObject = h->host,
            .pMetricName = metrics[i]};
        r = cuptiProfilerHostGetMetricProperties(&mp);
        if (r == CUPTI_ERROR_INVALID_METRIC_NAME) {
            kg_err_set(err, KG_EXIT_USAGE,
                       "unknown metric '%.200s' for chip %.64s (CUPTI_ERROR_INVALID_METRIC_NAME; ncu-only names "
                       "such as launch__* and derived__* have no CUPTI counter)",
                       metrics[i], chip);
            goto out;
        }
        KG_CUPTI_P(r);
    }
    CUpti_Profiler_Host_ConfigAddMetrics_Params ap = {.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE,
                                                      .pPriv = NULL,
                                                      .pHostObject = h->host,
                                                      .ppMetricNames = h->names,
                                                      .numMetrics = (size_t)n};
    KG_CUPTI_P(cuptiProfilerHostConfigAddMetrics(&ap));
    CUpti_Profiler_Host_GetConfigImageSize_Params sp = {
        .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE, .pPriv = NULL, .pHostObject = h->host};
    KG_CUPTI_P(cuptiProfilerHostGetConfigImageSize(&sp));
    h->size = sp.configImageSize;
    h->image = malloc(h->size ? h->size : 1);
    if (!h->image) {
        kg_err_set(err, KG_EXIT_ENV, "out of memory for a %zu-byte config image", h->size);
        goto out;
    }
    CUpti_Profiler_Host_GetConfigImage_Params gp = {.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE,
                                                    .pPriv = NULL,
                                                    .pHostObject = h->host,
                                                    .configImageSize = h->size,
                                                    .pConfigImage = h->image};
    KG_CUPTI_P(cuptiProfilerHostGetConfigImage(&gp));
    CUpti_Profiler_Host_GetNumOfPasses_Params pp = {.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE,
                                                    .pPriv = NULL,
                                                    .configImageSize = h->size,
                                                    .pConfigImage = h->image};
    KG_CUPTI_P(cuptiProfilerHostGetNumOfPasses(&pp));
    h->passes = pp.numOfPasses;
    if (h->passes < 1)
        kg_err_set(err, KG_EXIT_ENV, "CUPTI scheduled no pass for %d metrics on %.64s", n, chip);
out:
    (void)denied;
    return err->code;
}

int kg_prof_passes_offline(const char *chip, const char *const *metrics, int n, int *passes, kg_err *err)
{
    host_cfg h;
    *passes = 0;
    if (host_config(chip, NULL, metrics, n, &h, err) == 0)
        *passes = (int)h.passes;
    host_release(&h);
    return err->code;
}

/* ---------------------------------------------------------- target side */

/* Why cuptiProfilerDeviceSupported said no: its per-cause fields. */
static const struct {
    const char *name;
    size_t off;
} SUPPORT_FIELDS[] = {
    {"architecture", offsetof(CUpti_Profiler_DeviceSupported_Params, architecture)},
    {"sli", offsetof(CUpti_Profiler_DeviceSupported_Params, sli)},
    {"vGpu", offsetof(CUpti_Profiler_DeviceSupported_Params, vGpu)},
    {"confidentialCompute", offsetof(CUpti_Profiler_DeviceSupported_Params, confidentialCompute)},
    {"cmp", offsetof(CUpti_Profiler_DeviceSupported_Params, cmp)},
    {"wsl", offsetof(CUpti_Profiler_DeviceSupported_Params, wsl)},
};

static const char *const SUPPORT_LEVELS[] = {"UNKNOWN", "UNSUPPORTED", "DISABLED", "SUPPORTED"};

static void unsupported(const CUpti_Profiler_DeviceSupported_Params *p, int dev, kg_err *err)
{
    char why[256] = "";
    size_t o = 0;
    for (size_t i = 0; i < sizeof SUPPORT_FIELDS / sizeof SUPPORT_FIELDS[0]; i++) {
        CUpti_Profiler_Support_Level l;
        memcpy(&l, (const char *)p + SUPPORT_FIELDS[i].off, sizeof l);
        if (l == CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
            continue;
        kg_append(why, sizeof why, &o, "%s%s %s", o ? ", " : "", SUPPORT_FIELDS[i].name,
                  (unsigned)l < 4 ? SUPPORT_LEVELS[l] : "?");
    }
    kg_err_set(err, KG_EXIT_ENV, "CUDA device %d does not support the CUPTI Range Profiler (%s)", dev,
               why[0] ? why : "no reason given");
}

/* One collection's state: what kg_prof_collect's steps share and
 * prof_release frees. */
typedef struct prof_run {
    drv dv;
    host_cfg h;
    CUpti_RangeProfiler_Object *rp;
    uint8_t *avail, *data;
    size_t data_size;
    double *vals;
    CUcontext cx;
    CUdevice dev;
    char chip[64];
    int inited, started, denied;
} prof_run;

/* 1. the caller's context; 2. the profiler, the device, its chip and
 * counters. */
static int prof_open(prof_run *R, kg_err *err)
{
    int denied = 0;
    if (drv_load(&R->dv, err))
        goto out;
    KG_CU(R->dv, R->dv.get_current(&R->cx));
    if (!R->cx) {
        kg_err_set(err, KG_EXIT_ENV,
                   "no current CUDA context to profile: make the device current first (cudaSetDevice and "
                   "cudaFree(0))");
        goto out;
    }
    KG_CU(R->dv, R->dv.get_device(&R->dev));
    CUpti_Profiler_Initialize_Params ip = {.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE, .pPriv = NULL};
    KG_CUPTI_P(cuptiProfilerInitialize(&ip));
    R->inited = 1;
    CUpti_Profiler_DeviceSupported_Params sup = {.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE,
                                                 .pPriv = NULL,
                                                 .cuDevice = R->dev,
                                                 .api = CUPTI_PROFILER_RANGE_PROFILING};
    KG_CUPTI_P(cuptiProfilerDeviceSupported(&sup));
    if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
        unsupported(&sup, (int)R->dev, err);
        goto out;
    }
    CUpti_Device_GetChipName_Params cn = {
        .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE, .pPriv = NULL, .deviceIndex = (size_t)R->dev};
    KG_CUPTI_P(cuptiDeviceGetChipName(&cn));
    snprintf(R->chip, sizeof R->chip, "%s", cn.pChipName ? cn.pChipName : "");
    CUpti_Profiler_GetCounterAvailability_Params av = {
        .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE,
        .pPriv = NULL,
        .ctx = R->cx,
        .counterAvailabilityImageSize = 0,
        .pCounterAvailabilityImage = NULL};
    KG_CUPTI_P(cuptiProfilerGetCounterAvailability(&av));
    R->avail = malloc(av.counterAvailabilityImageSize ? av.counterAvailabilityImageSize : 1);
    if (!R->avail) {
        kg_err_set(err, KG_EXIT_ENV, "out of memory for the counter availability image");
        goto out;
    }
    av.pCounterAvailabilityImage = R->avail;
    KG_CUPTI_P(cuptiProfilerGetCounterAvailability(&av));
out:
    R->denied |= denied;
    return err->code;
}

/* 3. the config image; 4. the range profiler on the context, its counter
 * data, its config. */
static int prof_configure(prof_run *R, const char *const *metrics, int n_metrics, int max, kg_err *err)
{
    int denied = 0;
    if (host_config(R->chip, R->avail, metrics, n_metrics, &R->h, err))
        goto out;
    CUpti_RangeProfiler_Enable_Params en = {
        .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, .pPriv = NULL, .ctx = R->cx};
    KG_CUPTI_P(cuptiRangeProfilerEnable(&en));
    R->rp = en.pRangeProfilerObject;
    CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
        .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
        .pPriv = NULL,
        .pRangeProfilerObject = R->rp,
        .pMetricNames = R->h.names,
        .numMetrics = (size_t)n_metrics,
        .maxNumOfRanges = (size_t)max,
        .maxNumRangeTreeNodes = (uint32_t)max};
    KG_CUPTI_P(cuptiRangeProfilerGetCounterDataSize(&ds));
    R->data_size = ds.counterDataSize;
    R->data = malloc(R->data_size ? R->data_size : 1);
    R->vals = malloc(sizeof *R->vals * (size_t)n_metrics);
    if (!R->data || !R->vals) {
        kg_err_set(err, KG_EXIT_ENV, "out of memory for a %zu-byte counter data image", R->data_size);
        goto out;
    }
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
        .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
        .pPriv = NULL,
        .pRangeProfilerObject = R->rp,
        .counterDataSize = R->data_size,
        .pCounterData = R->data};
    KG_CUPTI_P(cuptiRangeProfilerCounterDataImageInitialize(&di));
    CUpti_RangeProfiler_SetConfig_Params sc = {.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE,
                                               .pPriv = NULL,
                                               .pRangeProfilerObject = R->rp,
                                               .configSize = R->h.size,
                                               .pConfig = R->h.image,
                                               .counterDataImageSize = R->data_size,
                                               .pCounterDataImage = R->data,
                                               .range = CUPTI_AutoRange,
                                               .replayMode = CUPTI_KernelReplay,
                                               .maxRangesPerPass = (size_t)max,
                                               .numNestingLevels = 1,
                                               .minNestingLevel = 1,
                                               .passIndex = 0,
                                               .targetNestingLevel = 1};
    KG_CUPTI_P(cuptiRangeProfilerSetConfig(&sc));
out:
    R->denied |= denied;
    return err->code;
}

/* 5. the call, as many rounds as CUPTI asks for (one with kernel replay),
 * and the device synchronized after them. */
static int prof_rounds(prof_run *R, int (*launch)(void *ctx, kg_err *err), void *ctx, kg_err *err)
{
    int denied = 0;
    for (int round = 0;; round++) {
        if (round == MAX_ROUNDS) {
            kg_err_set(err, KG_EXIT_ENV, "the Range Profiler still wanted passes after %d calls of the subject "
                       "(%zu passes configured)", MAX_ROUNDS, R->h.passes);
            goto out;
        }
        CUpti_RangeProfiler_Start_Params st = {
            .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, .pPriv = NULL, .pRangeProfilerObject = R->rp};
        KG_CUPTI_P(cuptiRangeProfilerStart(&st));
        R->started = 1;
        int lrc = launch(ctx, err);
        if (lrc || err->code) {
            if (!err->code)
                kg_err_set(err, lrc, "the profiled call failed (code %d) and gave no message", lrc);
            goto out;
        }
        CUpti_RangeProfiler_Stop_Params sp = {
            .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, .pPriv = NULL, .pRangeProfilerObject = R->rp};
        R->started = 0;
        KG_CUPTI_P(cuptiRangeProfilerStop(&sp));
        if (sp.isAllPassSubmitted)
            break;
    }
    KG_CU(R->dv, R->dv.sync());
out:
    R->denied |= denied;
    return err->code;
}

/* 6. the values of each range, into out (at most max; *n of them). */
static int prof_decode(prof_run *R, const char *const *metrics, int n_metrics, kg_kfacts *out, int max, int *n,
                       int *dropped, kg_err *err)
{
    int denied = 0;
    CUpti_RangeProfiler_DecodeData_Params dd = {
        .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE, .pPriv = NULL, .pRangeProfilerObject = R->rp};
    KG_CUPTI_P(cuptiRangeProfilerDecodeData(&dd));
    CUpti_RangeProfiler_GetCounterDataInfo_Params ci = {
        .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
        .pPriv = NULL,
        .pCounterDataImage = R->data,
        .counterDataImageSize = R->data_size};
    KG_CUPTI_P(cuptiRangeProfilerGetCounterDataInfo(&ci));
    size_t keep = ci.numTotalRanges < (size_t)max ? ci.numTotalRanges : (size_t)max;
    size_t lost = dd.numOfRangeDropped + (ci.numTotalRanges - keep);
    *dropped = lost > (size_t)0x7fffffff ? 0x7fffffff : (int)lost;
    for (size_t i = 0; i < keep; i++) {
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params ri = {
            .structSize = CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE,
            .pPriv = NULL,
            .pCounterDataImage = R->data,
            .counterDataImageSize = R->data_size,
            .rangeIndex = i,
            .rangeDelimiter = "/"};
        KG_CUPTI_P(cuptiRangeProfilerCounterDataGetRangeInfo(&ri));
        CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {
            .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
            .pPriv = NULL,
            .pHostObject = R->h.host,
            .pCounterDataImage = R->data,
            .counterDataImageSize = R->data_size,
            .rangeIndex = i,
            .ppMetricNames = R->h.names,
            .numMetrics = (size_t)n_metrics,
            .pMetricValues = R->vals};
        KG_CUPTI_P(cuptiProfilerHostEvaluateToGpuValues(&ev));
        kg_kfacts *k = &out[i];
        kg_kfacts_init(k);
        /* the name points into CUPTI's memory (not ours to free) */
        snprintf(k->name, sizeof k->name, "%s", ri.rangeName ? ri.rangeName : "");
        k->launches = 1;
        for (int m = 0; m < n_metrics; m++)
            kg_kfacts_set(k, metrics[m], R->vals[m]); /* fits: n_metrics <= KG_KMETRICS_MAX, names distinct */
        *n = (int)i + 1;
    }
out:
    R->denied |= denied;
    return err->code;
}

/* 7. teardown, checked. */
static int prof_close(prof_run *R, kg_err *err)
{
    int denied = 0;
    CUpti_RangeProfiler_Disable_Params dp = {
        .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, .pPriv = NULL, .pRangeProfilerObject = R->rp};
    R->rp = NULL;
    KG_CUPTI_P(cuptiRangeProfilerDisable(&dp));
    CUpti_Profiler_Host_Deinitialize_Params hd = {
        .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, .pPriv = NULL, .pHostObject = R->h.host};
    R->h.host = NULL;
    KG_CUPTI_P(cuptiProfilerHostDeinitialize(&hd));
    CUpti_Profiler_DeInitialize_Params de = {.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE, .pPriv = NULL};
    R->inited = 0;
    KG_CUPTI_P(cuptiProfilerDeInitialize(&de));
out:
    R->denied |= denied;
    return err->code;
}

/* What a collection left: after a failure best effort, in reverse order,
 * errors ignored (the first one is already in err). */
static void prof_release(prof_run *R)
{
    if (R->started) {
        CUpti_RangeProfiler_Stop_Params p = {
            .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE, .pPriv = NULL, .pRangeProfilerObject = R->rp};
        cuptiRangeProfilerStop(&p);
    }
    if (R->rp) {
        CUpti_RangeProfiler_Disable_Params p = {
            .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, .pPriv = NULL, .pRangeProfilerObject = R->rp};
        cuptiRangeProfilerDisable(&p);
    }
    host_release(&R->h);
    if (R->inited) {
        CUpti_Profiler_DeInitialize_Params p = {.structSize = CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE,
                                                .pPriv = NULL};
        cuptiProfilerDeInitialize(&p);
    }
    free(R->avail);
    free(R->data);
    free(R->vals);
}

int kg_prof_collect(const char *const *metrics, int n_metrics, int (*launch)(void *ctx, kg_err *err), void *ctx,
                    kg_kfacts *out, int max, int *n, int *dropped, kg_err *err)
{
    prof_run R = {0};
    *n = 0;
    *dropped = 0;
    last_passes = 0;
    last_times[0] = last_times[1] = last_times[2] = 0;
    double t0 = kg_mono();
    if (!launch || !out || max < 1)
        return kg_err_set(err, KG_EXIT_USAGE, "kg_prof_collect needs a launch function and room for a range");
    if (check_names(metrics, n_metrics, err))
        return err->code;
    if (!prof_open(&R, err) && !prof_configure(&R, metrics, n_metrics, max, err)) {
        double t_setup = kg_mono();
        if (!prof_rounds(&R, launch, ctx, err)) {
            double t_passes = kg_mono();
            if (!prof_decode(&R, metrics, n_metrics, out, max, n, dropped, err) && !prof_close(&R, err)) {
                last_passes = (int)R.h.passes;
                last_times[0] = t_setup - t0;
                last_times[1] = t_passes - t_setup;
                last_times[2] = kg_mono() - t_passes;
            }
        }
    }
    prof_release(&R);
    if (err->code) {
        *n = 0;
        *dropped = 0;
        last_passes = 0;
    }
    return R.denied ? KG_PROF_DENIED : err->code;
}
