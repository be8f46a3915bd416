/* Command orchestration: devices, peaks, ops, check and run. */
#include "commands.h"

#include "explain.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cjson/cJSON.h>

#include "../supervise/gpu_lock.h"
#include "../supervise/job.h"
#include "../judge/judge.h"
#include "../store/lib_cache.h"
#include "../supervise/others.h"
#include "../catalog/plugin_check.h"
#include "../catalog/problem.h"
#include "../catalog/tune.h"
#include "../report/report.h"
#include "../catalog/roofs_io.h"
#include "../base/text.h"
#include "../gpu/baseline.h"
#include "../gpu/cudnn_api.h"
#include "../gpu/device.h"
#include "kgate_build.h"

const char *kg_version(void) { return KG_VERSION " (commit " KG_COMMIT ")"; }

static int fail(const kg_err *e)
{
    fprintf(stderr, "kgate: %s\n", e->msg);
    return e->code ? e->code : KG_EXIT_ENV;
}

static void iso_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* -q: no bar; -v: a line a job (set by check, run and tune) */
static int quiet, verbose;

static void say_how(const kg_options *o)
{
    quiet = o->quiet;
    verbose = o->verbose;
}

static int progress_on(void) { return !quiet && !verbose && isatty(2); }

/* A progress bar on stderr when it is a terminal; with -v, a line as each
 * job starts instead. */
static void progress(int done, int total, const char *what)
{
    if (verbose && what && done < total) {
        fprintf(stderr, "kgate: [%d/%d] %.200s\n", done + 1, total, what);
        return;
    }
    if (!progress_on() || total <= 0)
        return;
    int w = 30, fill = (int)((double)done / total * w);
    fprintf(stderr, "\r\033[K[");
    for (int i = 0; i < w; i++)
        fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %.60s", done, total, what ? what : "");
    if (done >= total)
        fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* A path below the working directory, made relative to it (reports then
 * name no machine's directories). */
static const char *relative(const char *path)
{
    static char cwd[PATH_MAX];
    if (!cwd[0] && !getcwd(cwd, sizeof cwd))
        return path;
    size_t n = strlen(cwd);
    if (strncmp(path, cwd, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

int kg_cmd_devices(const kg_options *o)
{
    kg_err err = {0, ""};
    int n;
    if (kg_device_count(&n, &err))
        return fail(&err);
    for (int i = 0; i < n; i++) {
        kg_device_info d;
        if (kg_device_query(i, &d, &err))
            return fail(&err);
        printf("%d  %s  %s  sm_%d%d  %d SMs  %.0f GiB  L2 %.0f MB  SM clock max %.0f MHz  "
               "driver %d.%d  runtime %d.%d\n",
               i, d.name, d.uuid, d.cc_major, d.cc_minor, d.sm_count, d.mem_bytes / (1 << 30),
               d.l2_bytes / 1e6, d.sm_clock_max_mhz, d.driver_version / 1000,
               (d.driver_version % 1000) / 10, d.runtime_version / 1000,
               (d.runtime_version % 1000) / 10);
        if (d.nvml)
            printf("   NVML: driver %s, SM clock now %.0f MHz, %u C, %.0f W\n", d.nvml_driver,
                   d.sm_clock_now_mhz, d.temp_c, d.power_w);
        else
            printf("   NVML: not available (libnvidia-ml.so.1 did not load)\n");
    }
    (void)o;
    return 0;
}

/* Makes the device current (and its context) for GPU work in this process. */
static int use_device(const kg_device_info *d, kg_err *err)
{
    cudaError_t rc = cudaSetDevice(d->index);
    if (rc != cudaSuccess)
        return kg_err_set(err, KG_EXIT_ENV, "cudaSetDevice(%d): %s (%s:%d)", d->index, cudaGetErrorString(rc),
                          __FILE__, __LINE__);
    return 0;
}

/* Other processes on the judged GPU (supervise/others.h): its NVML watch and
 * kgate's own processes, set up by watch_start for one measuring command.
 * Without NVML nothing is watched and results have no gpu/others; a
 * listing that fails leaves its job unwatched (kg_others.failed), and the
 * next job opens the watch again. */
static struct {
    kg_gpu_watch *w;
    char pci[32];                   /* the watched GPU, for opening the watch again */
    long own[KG_ANCESTORS_MAX + 1]; /* and the running worker's pid after them */
    int n_own, warned;
    long worker; /* the job's worker, once a listing has seen it run */
} gw;

/* The judged GPU's lock (supervise/gpu_lock.h), held around each job that puts
 * work on it; a lock file that cannot be used is said once, and the jobs
 * then go on without it. */
static struct {
    char uuid[64];
    double wait_s; /* lock_wait_s of the command */
    int warned;
} gl;

/* How long a job waits for its GPU's lock: as long as any job may hold it
 * (a library job 4, --memcheck 10 times --timeout; the roofs' measurement
 * under 600 s). */
static double lock_wait_s(const kg_options *o) { return 10 * o->timeout_s + 600; }

/* The GPU whose lock this command's jobs take, and how long they wait. */
static void gpu_lock_for(const kg_options *o, const char *uuid)
{
    snprintf(gl.uuid, sizeof gl.uuid, "%s", uuid);
    gl.wait_s = lock_wait_s(o);
}

static int gpu_take(kg_gpu_lock *l, kg_err *err)
{
    kg_err e = {0, ""};
    l->fd = -1;
    l->waited_s = 0;
    if (!gl.uuid[0])
        return 0;
    int rc = kg_gpu_lock_take(gl.uuid, gl.wait_s > 0 ? gl.wait_s : 600, l, &e);
    if (rc == KG_EXIT_IO && !kg_gpu_lock_required()) {
        if (!gl.warned++)
            fprintf(stderr, "kgate: %s (jobs go on without the GPU lock)\n", e.msg);
        return 0;
    }
    return rc ? kg_err_set(err, rc, "%s", e.msg) : 0;
}

/* kg_job_run_under (wrapper NULL: kg_job_run) holding the GPU's lock. */
static int run_locked(const char *const *wrapper, const char *exe, const kg_job *job, double timeout_s, kg_result *r,
                      kg_table_entry **table, int *n_table, kg_err *err)
{
    kg_gpu_lock l;
    if (gpu_take(&l, err))
        return err->code;
    int rc = kg_job_run_under(wrapper, exe, job, timeout_s, r, NULL, table, n_table, err);
    kg_gpu_lock_drop(&l);
    return rc;
}

/* The GPU whose lock the jobs take, asked before anything else needs it:
 * the list job runs before the device is opened for judging, and loading a
 * candidate can put work on the GPU (a constructor, a Python import). With
 * no usable GPU, no lock (the command says why later, if it needs one). */
static void gpu_lock_target(const kg_options *o)
{
    int n;
    kg_device_info d;
    kg_err e = {0, ""};
    gl.wait_s = lock_wait_s(o);
    if (!gl.uuid[0] && kg_device_count(&n, &e) == 0 && o->device < n && kg_device_query(o->device, &d, &e) == 0)
        gpu_lock_for(o, d.uuid);
}

static void watch_start(const kg_device_info *d)
{
    kg_err e = {0, ""};
    snprintf(gl.uuid, sizeof gl.uuid, "%s", d->uuid);
    snprintf(gw.pci, sizeof gw.pci, "%s", d->pci);
    gw.w = kg_gpu_watch_open(d->pci, &e);
    if (!gw.w)
        fprintf(stderr, "kgate: other processes on the GPU are not watched: %s\n", e.msg);
    gw.n_own = kg_self_and_ancestors(gw.own, KG_ANCESTORS_MAX);
}

static void watch_stop(void)
{
    kg_gpu_watch_close(gw.w);
    gw.w = NULL;
}

/* One listing of w's GPU into o: the processes not in own[]. */
static int list_others(kg_gpu_watch *w, const long *own, int n_own, kg_others *o, kg_err *err)
{
    long pid[KG_GPU_WATCH_MAX];
    double mem[KG_GPU_WATCH_MAX];
    int n = 0;
    if (kg_gpu_watch_list(w, pid, mem, KG_GPU_WATCH_MAX, &n, err))
        return err->code;
    kg_others_note(o, pid, mem, n, own, n_own);
    return 0;
}

/* One listing of the GPU's processes into o: those not kgate's own, nor
 * `worker` (the job's worker while it runs; 0 between jobs). */
static void watch_sample(kg_others *o, long worker)
{
    kg_err e = {0, ""};
    if (!gw.w)
        return;
    gw.own[gw.n_own] = worker; /* own[] has room for one more */
    if (list_others(gw.w, gw.own, gw.n_own + (worker > 0), o, &e)) {
        if (!gw.warned++)
            fprintf(stderr, "kgate: %s (the job is not known to have had the GPU alone)\n", e.msg);
        o->failed = 1;
        watch_stop();
    }
}

static void watch_tick(void *ud, long worker)
{
    gw.worker = worker;
    watch_sample(ud, worker);
}

/* A listing takes 0.4 to 1.5 ms (H200); at 200 Hz from another process the
 * timed medians did not move (results/h200/session13-20261201T2159Z/watch) */
#define KG_WATCH_PERIOD_S 0.05

/* kg_job_run holding the GPU's lock, with the GPU's processes listed
 * before the worker starts, every KG_WATCH_PERIOD_S or so while it runs (at
 * jittered times: kg_job_watch), and after it is gone; *waited_s: how long
 * the lock took (may be NULL). lib (may be NULL) learns whether other
 * processes were seen, or the job was not watched (lib->others < 0). */
static int run_watched(const char *exe, const kg_job *job, double timeout_s, kg_result *r, kg_libref *lib,
                       kg_others *o, double *waited_s, kg_err *err)
{
    kg_gpu_lock l;
    if (gpu_take(&l, err))
        return err->code;
    if (waited_s)
        *waited_s = l.waited_s;
    gw.worker = 0;
    if (!gw.w && gw.pci[0]) { /* a listing failed in an earlier job: try again */
        kg_err e = {0, ""};
        gw.w = kg_gpu_watch_open(gw.pci, &e);
    }
    watch_sample(o, 0);
    if (gw.w)
        kg_job_watch(watch_tick, o, KG_WATCH_PERIOD_S);
    int rc = kg_job_run(exe, job, timeout_s, r, lib, NULL, NULL, err);
    kg_job_watch(NULL, NULL, 0);
    watch_sample(o, gw.worker); /* a worker reaped is gone, but the driver may list it a moment longer */
    kg_gpu_lock_drop(&l);
    if (lib)
        lib->others = o->n ? o->n : !o->listed || o->failed ? -1 : 0;
    return rc;
}

/* gpu/others on a kernel's result: what its job and its group's library job
 * saw (lib_seen: nothing when the library times came from --lib-cache,
 * which keeps none measured beside others nor unwatched); absent when
 * nothing was listed, or a listing failed and none was seen: not known. */
static void others_to_result(kg_result *r, const kg_others *job_seen, const kg_others *lib_seen)
{
    kg_others all = *job_seen;
    kg_others_merge(&all, lib_seen);
    if (!all.listed || (all.failed && !all.n))
        return;
    kg_result_set(r, "gpu/others", all.n);
    if (all.n) {
        kg_result_set(r, "gpu/others/mem", kg_others_mem(&all));
        r->flags |= KG_FLAG(SHARED_GPU);
    }
}

/* Ends GPU work done in this process (the roofs' measurement): its context
 * reset, and gone before the GPU's lock is let go, so that no context of
 * kgate's own stays beside the workers' (a GPU in exclusive-process mode
 * would refuse theirs). Returns err's code, a failed reset's when there was
 * none before. */
static int context_done(kg_gpu_lock *l, kg_err *err)
{
    cudaError_t reset = cudaDeviceReset();
    kg_gpu_lock_drop(l);
    if (reset != cudaSuccess && !err->code)
        kg_err_set(err, KG_EXIT_ENV, "cudaDeviceReset failed at %s:%d: %s", __FILE__, __LINE__,
                   cudaGetErrorString(reset));
    return err->code;
}

/* The roofs measured in this process (holding the GPU's lock), with the
 * GPU's processes listed before and after: returns how many other than this
 * one and its ancestors held a context then (-1: NVML could not say), or -2
 * with err when the measurement failed. Roofs measured beside another
 * process would be low and flatter every later kernel's rho: they are not
 * kept. The caller ends the context (context_done). */
static int measure_roofs_alone(const kg_device_info *d, kg_peaks *pk, kg_roofs *roofs, kg_err *err)
{
    kg_err e = {0, ""}, e1 = {0, ""}, e2 = {0, ""}; /* each first-error-wins: one per call */
    long own[KG_ANCESTORS_MAX];
    int n_own = kg_self_and_ancestors(own, KG_ANCESTORS_MAX);
    kg_others o;
    memset(&o, 0, sizeof o);
    kg_gpu_watch *w = kg_gpu_watch_open(d->pci, &e);
    int listed = w && list_others(w, own, n_own, &o, &e1) == 0;
    if (use_device(d, err) || kg_peaks_measure(pk, roofs, err)) {
        kg_gpu_watch_close(w);
        return -2;
    }
    int after = w && list_others(w, own, n_own, &o, &e2) == 0;
    kg_gpu_watch_close(w);
    listed = listed && after;
    return o.n ? o.n : listed ? 0 : -1;
}

/* Roofs for rho: cached measured ones (measuring them when absent or from
 * an older kgate), or the datasheet's with --roof datasheet. Roofs measured
 * while another process held a context on the GPU (listed before and after)
 * are not kept, and the command uses the datasheet's. */
static int get_roofs(const kg_options *o, const kg_device_info *d, kg_roofs *roofs, kg_err *err)
{
    kg_roofs ds;
    kg_roofs_datasheet(d->name, d->mem_clock_khz, d->bus_bits, &ds);
    if (strcmp(o->roof, "datasheet") == 0) {
        *roofs = ds;
        return 0;
    }
    char path[4096];
    if (kg_roofs_cache_path(d->uuid, path, sizeof path, err))
        return err->code;
    int rc = kg_roofs_load(path, roofs, err);
    if (rc > 1)
        return rc;
    char why[200];
    if (rc == 0 && !kg_roofs_plausible(roofs, &ds, why, sizeof why)) {
        fprintf(stderr, "kgate: the cached roofs of %s are not plausible (%s): measuring them again\n", d->name,
                why);
        rc = 1;
    }
    if (rc == 1 || o->force) {
        kg_peaks pk;
        kg_gpu_lock l;
        kg_err lerr = {0, ""};
        gpu_lock_for(o, d->uuid);
        if (gpu_take(&l, err))
            return err->code;
        /* another kgate process may have measured them while this one waited */
        if (!o->force && kg_roofs_load(path, roofs, &lerr) == 0 && kg_roofs_plausible(roofs, &ds, why, sizeof why)) {
            kg_gpu_lock_drop(&l);
            roofs->fp32 = ds.fp32;
            return 0;
        }
        if (progress_on() || verbose)
            fprintf(stderr, "kgate: measuring the roofs of %s (once per GPU)...\n", d->name);
        int others = measure_roofs_alone(d, &pk, roofs, err);
        if (others > 0) {
            fprintf(stderr,
                    "kgate: the roofs of %s were measured while %d other process(es) held a context on the "
                    "GPU: not kept; this command uses the datasheet's\n",
                    d->name, others);
            *roofs = ds;
        } else if (others > -2) {
            kg_roofs_save(path, roofs, d->uuid, d->name, err);
        }
        if (context_done(&l, err)) /* a failure above, or the reset's */
            return err->code;
    }
    roofs->fp32 = ds.fp32; /* CUDA-core fp32 is not measured: datasheet */
    return 0;
}

/* The device's facts, without a CUDA context: the workers do the GPU work.
 * A context made here was part of the 0.24-0.26 s this took and of the
 * 0.20 s exit of a check whose library times came from --lib-cache, a
 * 1.24 s verdict (H200:
 * results/h200/session12-20261201T1956Z/startup-profile). Only measuring the
 * roofs makes one (use_device). */
static int open_device(const kg_options *o, kg_device_info *d, kg_err *err)
{
    int n;
    if (kg_device_count(&n, err))
        return err->code;
    if (o->device >= n)
        return kg_err_set(err, KG_EXIT_USAGE, "--device %d: only %d device(s)", o->device, n);
    return kg_device_query(o->device, d, err);
}

static void report_header(kg_report *rep, const kg_options *o, const kg_device_info *d)
{
    snprintf(rep->command, sizeof rep->command, "%s", o->cmdline);
    snprintf(rep->commit, sizeof rep->commit, "%s", KG_COMMIT);
    iso_now(rep->date, sizeof rep->date);
    snprintf(rep->device, sizeof rep->device, "%s", d->name);
    snprintf(rep->device_uuid, sizeof rep->device_uuid, "%s", d->uuid);
    snprintf(rep->driver, sizeof rep->driver, "%s", d->nvml_driver);
    rep->sm_count = d->sm_count;
    rep->cc_major = d->cc_major;
    rep->cc_minor = d->cc_minor;
    rep->gate = o->gate;
}

int kg_cmd_peaks(const kg_options *o)
{
    kg_err err = {0, ""};
    kg_device_info d;
    kg_peaks pk;
    kg_roofs roofs, ds;
    char path[4096], date[32];
    if ((o->json && kg_output_path_check("--json", o->json, NULL, 0, &err)) || open_device(o, &d, &err))
        return fail(&err);
    kg_roofs_datasheet(d.name, d.mem_clock_khz, d.bus_bits, &ds);
    kg_gpu_lock l;
    gpu_lock_for(o, d.uuid);
    if (gpu_take(&l, &err))
        return fail(&err);
    int others = measure_roofs_alone(&d, &pk, &roofs, &err);
    if (context_done(&l, &err)) /* a failure above, or the reset's */
        return fail(&err);
    if (others > 0) {
        kg_err_set(&err, KG_EXIT_ENV,
                   "the roofs were measured while %d other process(es) held a context on %s: not kept "
                   "(measure them with the GPU to kgate alone)",
                   others, d.uuid);
        return fail(&err);
    }
    if (kg_roofs_cache_path(d.uuid, path, sizeof path, &err) ||
        kg_roofs_save(path, &roofs, d.uuid, d.name, &err))
        return fail(&err);
    printf("%s (%s)\n", d.name, d.uuid);
    printf("%-42s %9s %12s\n", "bandwidth kernel (gpu/peaks.cu)", "MB/stream", "GB/s");
    for (int i = 0; i < pk.n_variants; i++)
        printf("%-42s %9.0f %12.1f%s\n", pk.variants[i].name, pk.variants[i].stream_bytes / 1e6,
               pk.variants[i].bw / 1e9, pk.variants[i].cold ? "  cold" : "");
    printf("L2 write credit: %.1f MB (cold calls of 4x L2 beyond the DRAM rate: write %.1f, copy %.1f, "
           "triad %.1f MB)\n\n", pk.l2_credit / 1e6, pk.credit[0] / 1e6, pk.credit[1] / 1e6, pk.credit[2] / 1e6);
    printf("%-30s %14s %14s %8s\n", "roof", "measured", "datasheet", "ratio");
    const struct {
        const char *name;
        double v;
    } bw[] = {{"DRAM copy kernel (r+w)", pk.copy_kernel_bw},
              {"DRAM cudaMemcpy D2D (r+w)", pk.memcpy_bw},
              {"DRAM read-only stream", pk.read_bw},
              {"DRAM write-only stream", pk.write_bw},
              {"DRAM triad (2 reads a write)", pk.triad_bw}};
    for (int i = 0; i < 5; i++)
        printf("%-30s %11.2f TB/s %11.2f TB/s %7.1f%%\n", bw[i].name, bw[i].v / 1e12, ds.bw / 1e12,
               100 * bw[i].v / ds.bw);
    const char *nm[3] = {"fp16 tensor (cuBLASLt 8192^3)", "bf16 tensor (cuBLASLt 8192^3)",
                         "tf32 tensor (cuBLASLt 8192^3)"};
    const kg_dtype dts[3] = {KG_FP16, KG_BF16, KG_FP32};
    for (int i = 0; i < 3; i++)
        printf("%-30s %8.0f TFLOP/s %8.0f TFLOP/s %7.1f%%\n", nm[i], pk.mma[dts[i]] / 1e12,
               ds.mma[dts[i]] / 1e12, ds.mma[dts[i]] > 0 ? 100 * pk.mma[dts[i]] / ds.mma[dts[i]] : 0);
    printf("roofs: copy %.2f, read %.2f, write %.2f, triad %.2f TB/s, L2 write credit %.1f MB; cached in %s\n",
           roofs.bw / 1e12, roofs.bw_read / 1e12, roofs.bw_write / 1e12, roofs.bw_triad / 1e12,
           roofs.l2_credit / 1e6, path);
    if (o->json) {
        cJSON *root = cJSON_CreateObject(), *m, *dsj;
        iso_now(date, sizeof date);
        cJSON_AddStringToObject(root, "schema", "kgate.peaks/3");
        cJSON_AddStringToObject(root, "command", o->cmdline);
        cJSON_AddStringToObject(root, "commit", KG_COMMIT);
        cJSON_AddStringToObject(root, "date", date);
        cJSON *dev = cJSON_AddObjectToObject(root, "device");
        cJSON_AddStringToObject(dev, "name", d.name);
        cJSON_AddStringToObject(dev, "uuid", d.uuid);
        cJSON_AddStringToObject(dev, "driver", d.nvml_driver);
        m = cJSON_AddObjectToObject(root, "measured");
        cJSON_AddNumberToObject(m, "copy_kernel_bandwidth", pk.copy_kernel_bw);
        cJSON_AddNumberToObject(m, "memcpy_bandwidth", pk.memcpy_bw);
        cJSON_AddNumberToObject(m, "read_bandwidth", pk.read_bw);
        cJSON_AddNumberToObject(m, "write_bandwidth", pk.write_bw);
        cJSON_AddNumberToObject(m, "triad_bandwidth", pk.triad_bw);
        cJSON_AddNumberToObject(m, "l2_write_credit", pk.l2_credit);
        cJSON_AddNumberToObject(m, "write_credit", pk.credit[0]);
        cJSON_AddNumberToObject(m, "copy_credit", pk.credit[1]);
        cJSON_AddNumberToObject(m, "triad_credit", pk.credit[2]);
        cJSON_AddNumberToObject(m, "bytes_per_copy", pk.copy_bytes);
        cJSON_AddNumberToObject(m, "fp16_flops", pk.mma[KG_FP16]);
        cJSON_AddNumberToObject(m, "bf16_flops", pk.mma[KG_BF16]);
        cJSON_AddNumberToObject(m, "tf32_flops", pk.mma[KG_FP32]);
        cJSON *vs = cJSON_AddArrayToObject(root, "variants");
        for (int i = 0; i < pk.n_variants; i++) {
            cJSON *v = cJSON_CreateObject();
            cJSON_AddStringToObject(v, "name", pk.variants[i].name);
            cJSON_AddStringToObject(v, "mix", pk.variants[i].mix);
            cJSON_AddNumberToObject(v, "stream_bytes", pk.variants[i].stream_bytes);
            cJSON_AddNumberToObject(v, "bandwidth", pk.variants[i].bw);
            cJSON_AddBoolToObject(v, "cold", pk.variants[i].cold);
            cJSON_AddItemToArray(vs, v);
        }
        dsj = cJSON_AddObjectToObject(root, "datasheet");
        cJSON_AddNumberToObject(dsj, "bandwidth", ds.bw);
        cJSON_AddNumberToObject(dsj, "fp16_flops", ds.mma[KG_FP16]);
        cJSON_AddNumberToObject(dsj, "bf16_flops", ds.mma[KG_BF16]);
        cJSON_AddNumberToObject(dsj, "tf32_flops", ds.mma[KG_FP32]);
        kg_json_clean(root); /* base/text.h */
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        int bad = !text ? kg_err_set(&err, KG_EXIT_IO, "cannot serialize the peaks")
                        : kg_write_file_atomic(o->json, text, &err);
        free(text);
        if (bad)
            return fail(&err);
    }
    return 0;
}

int kg_cmd_ops(const kg_options *o)
{
    for (int i = 0; kg_ops[i]; i++) {
        const kg_op *op = kg_ops[i];
        if (o->op && o->op != op)
            continue;
        printf("%s: %s [%s]\n", op->name, op->summary, kg_family_name(op->family));
        printf("  dtypes:");
        for (int k = 0; k < op->n_dtypes; k++)
            printf(" %s%s", kg_dtype_name(op->dtypes[k]), k < kg_op_suite_dtypes(op) ? "*" : "");
        printf("   (* measured by kgate run)\n  signature: (");
        for (int k = 0; k < op->n_inputs + op->n_outputs; k++) {
            const kg_tensor_spec *t = k < op->n_inputs ? &op->in[k] : &op->out[k - op->n_inputs];
            const char *ty = t->type == KG_T_DATA ? "" : t->type == KG_T_INDEX ? ":index" : ":int64";
            printf("%s%s[", k == op->n_inputs ? ") -> (" : k ? ", " : "", t->name);
            for (int r = 0; r < t->rank && !t->derive; r++) {
                char dn[32];
                printf("%s%s", r ? "," : "", kg_op_dim_name(op, t->dim[r], dn, sizeof dn));
            }
            if (t->derive)
                printf("%s", t->derived_names ? t->derived_names : "derived");
            printf("]%s", ty);
        }
        printf(")   extents %s\n", op->dims);
        if (op->n_scalars) {
            printf("  scalars:");
            for (int k = 0; k < op->n_scalars; k++) {
                const kg_scalar_spec *sp = &op->scalars[k];
                if (kg_op_scalar_extent(op, sp->name) >= 0) {
                    char dn[32];
                    printf(" %s (extent %s of the shape%s)", sp->name,
                           kg_op_dim_name(op, kg_op_scalar_extent(op, sp->name), dn, sizeof dn),
                           sp->required ? ", required" : "");
                    continue;
                }
                printf(" %s=%g%s", sp->name, sp->def, sp->required ? " (required" : "");
                if (sp->required)
                    printf(isnan(sp->alt) ? ")" : ", one trial uses %g)", sp->alt);
            }
            printf("\n");
        }
        printf("  presets:");
        for (int k = 0; k < op->n_presets; k++) {
            char b[96];
            printf(" %s=%s", op->presets[k].name, kg_shape_format(&op->presets[k].shape, b, sizeof b));
        }
        const kg_preset *large = kg_preset_find(op, "large");
        const kg_shape *ws = large ? &large->shape : &op->presets[0].shape;
        kg_work w;
        kg_types ty = {op->dtypes[0], KG_I64};
        kg_tol t = kg_op_tol(op, op->dtypes[0]);
        kg_op_work(op, ws, ty, &w);
        printf("\n  work at %s %s: %.4g bytes read, %.4g written, %.4g FLOPs (%s roof)\n",
               large ? "large" : op->presets[0].name, kg_dtype_name(op->dtypes[0]), w.bytes_read,
               w.bytes_written, w.flops, op->unit == KG_UNIT_TENSOR ? "tensor-core" : "CUDA-core fp32");
        printf("  tolerance (%s): atol = rtol = rel-L2 bound = %g%s%s\n", kg_dtype_name(op->dtypes[0]),
               t.atol, op->reduction ? " (doubled: a reduction)"
                       : op->tol_rounded ? " (doubled: the library rounds intermediates)" : "",
               op->tol_rms ? "; long sums: atol times the reference's RMS where that exceeds 1" : "");
        printf("  checked on: uniform inputs");
        for (int d = 1; d < KG_DIST_COUNT; d++)
            if (op->dists & (1u << d))
                printf(", %s", kg_dist_name((kg_dist)d));
        printf(" (one trial each)\n");
        printf("  library paths:");
        if (!op->baselines[0])
            printf(" none (%s)", op->no_baseline_why ? op->no_baseline_why : "no vendor library does this");
        for (int k = 0; k < KG_MAX_BASELINES && op->baselines[k]; k++)
            printf(" %s", op->baselines[k]);
        printf("; bundled fast variant %s_%s\n", op->name, op->fast ? op->fast : "(none)");
        printf("  edge cases: %s\n\n", op->edge_semantics);
    }
    return 0;
}

/* One kernel to judge: where it lives, and its catalog identity. */
typedef struct target {
    char plugin[PATH_MAX];
    char kernel[96];
    char summary[256]; /* the kernel's own description (naive ones name their defect) */
    char space[1024];  /* its configuration space (kgate tune), or "" */
    const kg_op *op;
    kg_types types;
    double warm_s, list_s; /* its file's listing: waiting for the Python fork server, the list job */
} target;

typedef struct targets {
    int n, cap;
    target *v;
} targets;

static target *targets_add(targets *t)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        target *v = realloc(t->v, sizeof *v * (size_t)cap);
        if (!v)
            return NULL;
        t->v = v;
        t->cap = cap;
    }
    return &t->v[t->n++];
}

/* Lists the kernels of a candidate that match the options (validating it in a worker). */
static int collect(const kg_options *o, const char *exe, const char *spec, targets *out,
                   kg_err *err)
{
    char path[PATH_MAX], want[1024]; /* want: kernel names, comma-separated, or "" for all */
    int too_long = kg_candidate_split(spec, path, sizeof path, want, sizeof want) != 0;
    for (const char *w = want; *w && !too_long; w += strcspn(w, ","), w += *w == ',')
        too_long = strcspn(w, ",") >= sizeof ((kg_table_entry *)0)->name;
    if (too_long)
        return kg_err_set(err, KG_EXIT_USAGE, "%.200s%s: the candidate's file name or kernel name is too long",
                          spec, strlen(spec) > 200 ? "..." : "");
    if (access(path, R_OK) != 0)
        return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no such readable file", path);
    {
        /* workers get an absolute path: a sandboxed one works in a scratch directory */
        char abs[PATH_MAX];
        if (realpath(path, abs))
            snprintf(path, sizeof path, "%s", abs);
    }
    /* the Python worker host imports the candidate only with this hash (docs/python.md);
     * unset otherwise, so that the variable is kgate's own. Judged on the path the
     * workers open (a link resolved), not the name given. */
    if (o->pin_sha256 && !kg_source_is_python(path))
        return kg_err_set(err, KG_EXIT_USAGE, "--pin-sha256: %s is not a Python candidate (.py)", path);
    if (o->pin_sha256 ? setenv("KGATE_CANDIDATE_SHA256", o->pin_sha256, 1) : unsetenv("KGATE_CANDIDATE_SHA256"))
        return kg_err_set(err, KG_EXIT_ENV, "setenv KGATE_CANDIDATE_SHA256: %s", strerror(errno));
    kg_job js;
    kg_job_defaults(&js);
    js.mode = KG_JOB_LIST;
    js.sandbox = o->sandbox;
    snprintf(js.plugin, sizeof js.plugin, "%s", path);
    kg_table_entry *table = NULL;
    int n = 0;
    gpu_lock_target(o);
    double t0 = kg_mono();
    kg_job_warm(exe, &js); /* the Python fork server's imports beside another job's GPU work */
    double t1 = kg_mono();
    if (run_locked(NULL, exe, &js, o->timeout_s, NULL, &table, &n, err))
        return err->code;
    double t2 = kg_mono();
    for (int i = 0; i < n; i++) {
        const kg_table_entry *k = &table[i];
        const kg_op *op = kg_op_find(k->op);
        kg_types ty = {KG_FP16, KG_I64};
        if (!op || kg_dtype_parse(k->dtype, &ty.data) || kg_dtype_parse(k->index_dtype, &ty.index))
            continue; /* the worker validated it: cannot happen */
        if (want[0] && !kg_name_in_list(want, k->name))
            continue;
        if ((o->op && o->op != op) || (o->have_dtype && o->dtype != ty.data))
            continue;
        if (o->suite && ty.data != op->dtypes[0] && !(kg_op_suite_dtypes(op) > 1 && ty.data == op->dtypes[1]) &&
            !(kg_op_suite_dtypes(op) > 2 && ty.data == op->dtypes[2]))
            continue; /* kgate run: the operator's suite dtypes only */
        target *t = targets_add(out);
        if (!t) {
            free(table);
            return kg_err_set(err, KG_EXIT_ENV, "out of memory");
        }
        snprintf(t->plugin, sizeof t->plugin, "%s", path);
        snprintf(t->kernel, sizeof t->kernel, "%s", k->name);
        snprintf(t->summary, sizeof t->summary, "%s", k->summary);
        snprintf(t->space, sizeof t->space, "%s", k->space);
        t->op = op;
        t->types = ty;
        t->warm_s = t1 - t0;
        t->list_s = t2 - t1;
    }
    for (const char *w = want; *w;) { /* every kernel named must be there */
        size_t len = strcspn(w, ",");
        int there = 0;
        for (int i = 0; i < n && !there; i++)
            there = strlen(table[i].name) == len && strncmp(table[i].name, w, len) == 0;
        if (!there) {
            free(table);
            return kg_err_set(err, KG_EXIT_CANDIDATE, "%s: no kernel named '%.*s'", path, (int)(len > 96 ? 96 : len), w);
        }
        w += len + (w[len] == ',');
    }
    free(table);
    return 0;
}

static int same_group(const target *a, const target *b)
{
    return a->op == b->op && a->types.data == b->types.data &&
           (!kg_op_has_index(a->op) || a->types.index == b->types.index);
}

/* A seed nobody predicts: the extra shapes of this run. */
static unsigned long long fresh_seed(void) { return kg_random64(); }

/* The bundled candidate shipped with this executable, or "" (E_best then
 * has no bundled variant: said in the results). */
static void bundled_path(char *buf, size_t size)
{
    char exe[PATH_MAX];
    kg_self_exe(exe, sizeof exe);
    if (kg_shipped(exe, KG_SHIP_CANDIDATE, "libkgate_bundled.so", buf, size))
        buf[0] = '\0';
}

static int scalars_for(const kg_options *o, const kg_op *op, kg_scalars *sc, kg_err *err);
static void job_from_options(const kg_options *o, kg_job *j);

/* The job of one operator, dtypes and shape: the command's options, the
 * operator's scalars and, with extra shapes on (not for a problem, which
 * has one shape), three extra shapes drawn from seed. */
static int group_job(const kg_options *o, const kg_op *op, kg_types types, const kg_shape *shape,
                     unsigned long long seed, kg_job *job, kg_err *err)
{
    job_from_options(o, job);
    job->op = op;
    job->types = types;
    job->shape = *shape;
    if (scalars_for(o, op, &job->scalars, err))
        return err->code;
    kg_scalars_bind(op, shape, &job->scalars); /* the job says what its shape's calls get */
    if (o->extra && !kg_problem_of(op)) {
        kg_shape x[3];
        job->n_extra = kg_extra_shapes(op, seed ^ (uintptr_t)op, x);
        memcpy(job->extra, x, sizeof x);
    }
    return 0;
}

/* Makes `job` (its shape and extra shapes set) a kernel job of target t,
 * and r the empty result that names it. */
static void kernel_job(const target *t, const char *summary, kg_job *job, kg_result *r)
{
    memset(r, 0, sizeof *r);
    job->mode = KG_JOB_KERNEL;
    snprintf(job->plugin, sizeof job->plugin, "%s", t->plugin);
    snprintf(job->kernel, sizeof job->kernel, "%s", t->kernel);
    snprintf(r->kernel, sizeof r->kernel, "%s", t->kernel);
    snprintf(r->summary, sizeof r->summary, "%s", summary);
    snprintf(r->source, sizeof r->source, "%s", relative(t->plugin));
    snprintf(r->op, sizeof r->op, "%s", t->op->name);
    snprintf(r->dtype, sizeof r->dtype, "%s", kg_dtype_name(t->types.data));
    if (kg_op_has_index(t->op))
        snprintf(r->index_dtype, sizeof r->index_dtype, "%s", kg_dtype_name(t->types.index));
    kg_shape_format(&job->shape, r->shape, sizeof r->shape);
    size_t u = strlen(r->extra_shapes);
    for (int q = 0; q < job->n_extra; q++) {
        char xs[64];
        kg_append(r->extra_shapes, sizeof r->extra_shapes, &u, "%s%s", u ? " " : "",
                  kg_shape_format(&job->extra[q], xs, sizeof xs));
    }
}

/* The job options common to every job of a command. */
static void job_from_options(const kg_options *o, kg_job *j)
{
    kg_job_defaults(j);
    j->hot = o->hot;
    j->flush = o->memset_flush ? KG_FLUSH_MEMSET : KG_FLUSH_READ;
    j->trials = o->trials;
    j->edge = o->edge;
    j->seed = o->seed;
    j->stop = o->stop;
    j->device = o->device;
    j->verify_only = o->verify_only;
    j->sandbox = o->sandbox;
    j->diagnose = o->diagnose == KG_DIAG_ALWAYS ? 1 : o->diagnose == KG_DIAG_EXTENDED ? 2 : 0;
    j->patched_max_s = o->patched_max_s;
    j->torch = o->torch;
}

/* The scalars of op for this command: defaults, then --param. */
static int scalars_for(const kg_options *o, const kg_op *op, kg_scalars *sc, kg_err *err)
{
    kg_scalars_default(op, sc);
    for (int i = 0; i < o->n_params; i++) {
        const char *eq = strchr(o->params[i], '=');
        size_t len = eq ? (size_t)(eq - o->params[i]) : 0;
        int mine = 0;
        for (int k = 0; k < op->n_scalars; k++)
            mine |= strlen(op->scalars[k].name) == len && strncmp(op->scalars[k].name, o->params[i], len) == 0;
        if (mine && kg_scalars_set(op, sc, o->params[i], err))
            return err->code;
    }
    return 0;
}

/* compute-sanitizer, from PATH or the CUDA toolkit; NULL when absent. */
/* A job of one checked call of the kernel, no timing: what --memcheck and
 * --diagnose=auto run again. */
static kg_job checked_once(const kg_job *base)
{
    kg_job j = *base;
    j.verify_only = 1;
    j.trials = 1;
    j.edge = 0;
    j.n_extra = 0;
    j.diagnose = 0;
    return j;
}

/* --memcheck: one checked call of the kernel under memcheck, then racecheck.
 * Returns 0, or a CUDA-level error found (written into r as INCORRECT). */
static int memcheck(const char *exe, const kg_job *base, double timeout_s, kg_result *r, kg_err *err)
{
    static char found[PATH_MAX];
    const char *cs = kg_find_tool("compute-sanitizer", NULL, found, sizeof found);
    size_t u = strlen(r->detail);
    if (!cs) {
        kg_append(r->detail, sizeof r->detail, &u, "%s--memcheck: compute-sanitizer not found (PATH, /usr/local/cuda/bin)",
                  u ? "; " : "");
        return 0;
    }
    const char *tools[] = {"memcheck", "racecheck"};
    for (int t = 0; t < 2; t++) {
        const char *wrap[] = {cs, "--tool", tools[t], "--error-exitcode", "86", "--print-limit", "4", NULL};
        kg_job j = checked_once(base);
        kg_result x;
        memset(&x, 0, sizeof x);
        if (run_locked(wrap, exe, &j, timeout_s * 10, &x, NULL, NULL, err))
            return err->code;
        if (x.wrapper_exit == 86 || (x.verdict == KG_V_CRASH && x.wrapper_exit != 0)) {
            r->verdict = KG_V_INCORRECT;
            snprintf(r->reason, sizeof r->reason, "compute-sanitizer %s found an error", tools[t]);
            snprintf(r->detail, sizeof r->detail, "%.1000s", x.wrapper_tail[0] ? x.wrapper_tail : x.reason);
            return 0;
        }
    }
    kg_append(r->detail, sizeof r->detail, &u, "%scompute-sanitizer memcheck and racecheck: no errors in one checked call",
              u ? "; " : "");
    return 0;
}

/* --diagnose=auto: a SLOW kernel is described by one more worker (checks
 * once, no timing); its facts join the judged result. */
static int diagnose_again(const char *exe, const kg_job *base, double timeout_s, kg_result *r, kg_err *err)
{
    kg_job j = checked_once(base);
    kg_result x;
    memset(&x, 0, sizeof x);
    j.diagnose = 1;
    if (run_locked(NULL, exe, &j, timeout_s, &x, NULL, NULL, err)) {
        free(x.diag);
        return err->code;
    }
    if (x.diag) {
        r->diag = x.diag;
    } else {
        size_t u = strlen(r->detail);
        kg_append(r->detail, sizeof r->detail, &u, "%s--diagnose=auto: the kernel was not described (%.300s)",
                  u ? "; " : "", x.reason[0] ? x.reason : "no facts came back");
    }
    return 0;
}

/* --time-budget: 1 (and rep->incomplete says so) when no further job may
 * start, `done` of `total` having run since t0. */
static int out_of_time(const kg_options *o, double t0, int done, int total, kg_report *rep)
{
    if (o->time_budget_s <= 0 || kg_mono() - t0 < o->time_budget_s)
        return 0;
    snprintf(rep->incomplete, sizeof rep->incomplete,
             "--time-budget %.0f s reached after %d of %d jobs; the rest did not run", o->time_budget_s, done,
             total);
    return 1;
}

/* With --json, the results so far written after every job (atomically),
 * marked `incomplete` until the command finishes: a run killed outright
 * (SIGKILL, a lost node) keeps what it measured. */
static void checkpoint(const kg_options *o, kg_report *rep, int done, int total)
{
    if (!o->json || strcmp(o->json, "-") == 0) /* standard output: the finished results only */
        return;
    char keep[sizeof rep->incomplete];
    kg_err e = {0, ""};
    memcpy(keep, rep->incomplete, sizeof keep);
    snprintf(rep->incomplete, sizeof rep->incomplete,
             "in progress: %d of %d jobs done (the finished command rewrites this file)", done, total);
    kg_report_write_json(rep, o->json, &e); /* a failure shows when the command writes it last */
    memcpy(rep->incomplete, keep, sizeof keep);
}

/* Seconds since the epoch: when a kept library time was measured. */
static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A group's library job (job: its mode LIBRARY, its plugin set): with
 * --lib-cache, from this GPU's cache when it holds a confirmed, fresh entry
 * of this very job (*age_s then its age, else -1); else run, and with
 * --lib-cache stored there unless kg_libcache_unfit says why not. A cache
 * that cannot be used is said once on stderr and the command goes on. */
static int library_job(const kg_options *o, const char *exe, const kg_report *rep, const kg_job *job,
                       kg_libref *lib, double *age_s, kg_others *seen, kg_err *err)
{
    static int warned, told;
    static char torch[PATH_MAX + 96];
    char path[PATH_MAX], context[PATH_MAX + 300];
    kg_err cerr = {0, ""};
    *age_s = -1;
    memset(lib, 0, sizeof *lib);
    memset(seen, 0, sizeof *seen);
    if (!o->lib_cache)
        return run_watched(exe, job, o->timeout_s * 4, NULL, lib, seen, NULL, err);
    /* what outside the job the library's times depend on (cuDNN is loaded
     * only to ask its version: 0 when it cannot be, as its paths then say) */
    kg_err derr = {0, ""};
    const kg_cudnn_api *dn = kg_cudnn_load(&derr);
    if (job->torch && !torch[0]) {
        /* the --torch paths' interpreter and its torch (read from its
         * metadata, not imported): another torch times another library */
        char python[PATH_MAX], v[64];
        kg_err perr = {0, ""};
        if (kg_python_env(exe, "--torch", python, sizeof python, &perr) == 0)
            snprintf(torch, sizeof torch, " python %s torch %s", python,
                     kg_python_package_version(python, "torch", v, sizeof v) == 0 ? v : "?");
        else
            snprintf(torch, sizeof torch, " python ? torch ?");
    }
    snprintf(context, sizeof context, "kgate %s+%s driver %s cublasLt %zu cudnn %zu%s", KG_VERSION, KG_COMMIT,
             rep->driver, cublasLtGetVersion(), dn ? dn->cudnnGetVersion() : (size_t)0, job->torch ? torch : "");
    char *key = kg_libcache_key(job, rep->device_uuid, context);
    if (key && kg_libcache_path(rep->device_uuid, path, sizeof path, &cerr) != 0) {
        if (!warned++)
            fprintf(stderr, "kgate: --lib-cache: %s (library times neither reused nor kept)\n", cerr.msg);
        free(key);
        key = NULL;
    }
    if (key && !o->sandbox && !told++)
        fprintf(stderr, "kgate: --lib-cache without --sandbox: a candidate runs as you and could rewrite the "
                        "library times later checks reuse (docs/security.md)\n");
    if (key && kg_libcache_get(path, key, o->lib_cache_age_s, wall_now(), lib, age_s) == 0) {
        free(key);
        return 0;
    }
    int rc = run_watched(exe, job, o->timeout_s * 4, NULL, lib, seen, NULL, err); /* a miss left lib as it was */
    if (!rc && key && !kg_libcache_unfit(lib) &&
        kg_libcache_put(path, key, lib, wall_now(), o->lib_cache_age_s, NULL, &cerr) && !warned++)
        fprintf(stderr, "kgate: --lib-cache: %s (library times not kept)\n", cerr.msg);
    free(key);
    return rc;
}

/* A kernel job's result judged against its group's library measurement
 * (kg_judge_kernel; lib_age: its age when it came from --lib-cache, else
 * -1), with what the GPU's listings saw (gpu/others) and how long the job
 * waited for the GPU's lock. */
static void judge_kernel(const kg_options *o, kg_result *r, const target *t, const kg_shape *shape,
                         const kg_job *job, const kg_roofs *roofs, const kg_libref *lib, double lib_age,
                         const kg_others *seen, const kg_others *lib_seen, double waited)
{
    kg_judge_kernel(r, t->op, t->types, shape, &job->scalars, roofs, lib, o->verify_only, lib_seen->n, &o->gate);
    if (!o->verify_only) {
        if (lib_age >= 0)
            kg_result_set(r, "lib/cache/age", lib_age);
        others_to_result(r, seen, lib_seen);
    }
    if (waited > 0.001)
        kg_result_set(r, "job/gpu_wait", waited);
    if (t->list_s > 0) { /* where a job's wall goes before its kernel's worker */
        kg_result_set(r, "list/wall", t->list_s);
        if (t->warm_s > 0.001)
            kg_result_set(r, "list/warm", t->warm_s);
    }
}

/* Checks every target at every shape; results go to rep in order. */
static int judge_all(const kg_options *o, const char *exe, const char *bundled, targets *tg,
                     kg_report *rep, kg_err *err)
{
    double t0 = kg_mono();
    rep->shapes_seed = fresh_seed();
    const char *shapes[KG_MAX_SHAPES] = {"large"};
    int ns = o->n_shapes ? o->n_shapes : 1;
    if (o->n_shapes)
        memcpy(shapes, o->shape_texts, sizeof(char *) * (size_t)ns);
    /* count the work for the progress bar */
    int total = 0, done = 0;
    for (int si = 0; si < ns; si++)
        for (int i = 0; i < tg->n; i++) {
            kg_shape sh;
            kg_err e2 = {0, ""};
            if (kg_shape_parse(tg->v[i].op, shapes[si], &sh, &e2))
                continue;
            int first = 1;
            for (int k = 0; k < i; k++)
                first &= !same_group(&tg->v[k], &tg->v[i]);
            total += 1 + (first && !o->verify_only);
        }
    for (int si = 0; si < ns; si++) {
        for (int i = 0; i < tg->n; i++) {
            int first = 1;
            for (int k = 0; k < i; k++)
                first &= !same_group(&tg->v[k], &tg->v[i]);
            if (!first)
                continue; /* one group an operator, dtypes and shape */
            kg_shape shape;
            kg_err serr = {0, ""};
            if (kg_shape_parse(tg->v[i].op, shapes[si], &shape, &serr))
                continue; /* this shape names no extent of this operator */
            kg_job job;
            kg_libref lib;
            kg_others lib_seen;
            double lib_age = -1;
            char shp[96], what[160];
            memset(&lib, 0, sizeof lib);
            memset(&lib_seen, 0, sizeof lib_seen);
            if (group_job(o, tg->v[i].op, tg->v[i].types, &shape, rep->shapes_seed, &job, err))
                return err->code;
            kg_shape_format(&shape, shp, sizeof shp);
            if (out_of_time(o, t0, done, total, rep))
                goto stop;
            if (!o->verify_only) {
                job.mode = KG_JOB_LIBRARY;
                /* a problem's library paths come with its candidate */
                snprintf(job.plugin, sizeof job.plugin, "%s", kg_problem_of(job.op) ? tg->v[i].plugin : bundled);
                snprintf(what, sizeof what, "%s %s %s: library paths", job.op->name,
                         kg_dtype_name(job.types.data), shp);
                progress(done++, total, what);
                if (library_job(o, exe, rep, &job, &lib, &lib_age, &lib_seen, err))
                    return err->code;
            }
            /* cliff: against the first kernel of the same candidate in the group */
            for (int k = i; k < tg->n; k++) {
                const target *t = &tg->v[k];
                if (!same_group(t, &tg->v[i]))
                    continue;
                kg_result r;
                kg_others seen;
                memset(&seen, 0, sizeof seen);
                if (out_of_time(o, t0, done, total, rep))
                    goto stop;
                kernel_job(t, t->summary, &job, &r);
                snprintf(what, sizeof what, "%s %s", r.kernel, r.shape);
                progress(done++, total, what);
                double waited = 0;
                if (run_watched(exe, &job, o->timeout_s, &r, NULL, &seen, &waited, err)) {
                    if (err->code == KG_EXIT_ENV && r.n_sums)
                        kg_report_add(rep, &r); /* keep what was measured, stop here */
                    progress(total, total, NULL);
                    return err->code;
                }
                if (o->memcheck && r.verdict == KG_V_SKIPPED && memcheck(exe, &job, o->timeout_s, &r, err))
                    return err->code;
                judge_kernel(o, &r, t, &shape, &job, &rep->roofs, &lib, lib_age, &seen, &lib_seen, waited);
                if (o->diagnose == KG_DIAG_AUTO && r.verdict == KG_V_SLOW && !r.diag &&
                    diagnose_again(exe, &job, o->timeout_s, &r, err))
                    return err->code;
                kg_explain_result(&r, &o->diag);
                kg_result *stored = kg_report_add(rep, &r);
                if (!stored)
                    return kg_err_set(err, KG_EXIT_ENV, "out of memory for the results");
                checkpoint(o, rep, done, total);
                for (int q = 0; q < rep->n - 1; q++) {
                    const kg_result *first = &rep->results[q];
                    if (strcmp(first->source, stored->source) == 0 && strcmp(first->op, stored->op) == 0 &&
                        strcmp(first->dtype, stored->dtype) == 0 && strcmp(first->shape, stored->shape) == 0 &&
                        strcmp(first->index_dtype, stored->index_dtype) == 0) {
                        kg_judge_cliff(stored, first);
                        break;
                    }
                }
            }
        }
    }
stop:
    progress(total, total, NULL);
    return 0;
}

/* The end of a measuring command, in two steps so that tune can print its
 * summary between them: the report (and why it is incomplete), then the
 * JSON, the error line and the exit code. */
static void finish_print(const kg_options *o, kg_report *rep, int rc, const kg_err *err)
{
    if (rc == KG_EXIT_STOPPED && !rep->incomplete[0])
        snprintf(rep->incomplete, sizeof rep->incomplete, "%s", err->msg);
    if (!o->quiet)
        kg_report_print(rep, stdout, o->suite);
}

static int finish_exit(const kg_options *o, kg_report *rep, int rc, kg_err *err)
{
    /* stopped by a signal before any kernel was judged: the file still says so */
    if (o->json && (rep->n || rc == KG_EXIT_STOPPED)) {
        kg_err jerr = {0, ""};
        if (kg_report_write_json(rep, o->json, &jerr)) {
            fail(&jerr);
            if (!rc)
                rc = jerr.code;
        }
    }
    if (rc) {
        fail(err);
        return rc;
    }
    return kg_report_exit_code(rep);
}

static int finish(const kg_options *o, kg_report *rep, int rc, kg_err *err)
{
    finish_print(o, rep, rc, err);
    return finish_exit(o, rep, rc, err);
}

/* Opens the device, gets the roofs, checks every target, prints and writes
 * the report; returns the exit code. */
static int measure(const kg_options *o, const char *exe, targets *tg)
{
    kg_err err = {0, ""};
    kg_device_info d;
    kg_report rep;
    char bundled[PATH_MAX + 32];
    int rc;
    bundled_path(bundled, sizeof bundled);
    if (open_device(o, &d, &err))
        return fail(&err);
    kg_report_init(&rep);
    report_header(&rep, o, &d);
    if (get_roofs(o, &d, &rep.roofs, &err)) {
        kg_report_free(&rep);
        return fail(&err);
    }
    watch_start(&d);
    rc = judge_all(o, exe, bundled, tg, &rep, &err);
    watch_stop();
    rc = finish(o, &rep, rc, &err);
    kg_report_free(&rep);
    return rc;
}

/* A --json path that can be used (kg_output_path_check: not empty, not a
 * directory nor a special file, not the candidate) and written, checked
 * before anything is measured. */
static int check_json_path(const kg_options *o, kg_err *err)
{
    if (!o->json)
        return 0;
    char cand[PATH_MAX] = "", kernel[96];
    const char *inputs[1] = {cand};
    if (o->candidate && kg_candidate_split(o->candidate, cand, sizeof cand, kernel, sizeof kernel))
        cand[0] = '\0'; /* too long: collect() says so */
    if (kg_output_path_check("--json", o->json, inputs, 1, err))
        return err->code;
    if (strcmp(o->json, "-") == 0)
        return 0;
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s.probe.%d", o->json, (int)getpid());
    FILE *f = fopen(probe, "w");
    if (!f)
        return kg_err_set(err, KG_EXIT_IO, "--json %s: cannot write there", o->json);
    fclose(f);
    unlink(probe);
    return 0;
}

int kg_cmd_check(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX];
    targets tg = {0, 0, NULL};
    say_how(o);
    kg_self_exe(exe, sizeof exe);
    if (check_json_path(o, &err) || collect(o, exe, o->candidate, &tg, &err)) {
        free(tg.v);
        return fail(&err);
    }
    if (tg.n == 0) {
        kg_err_set(&err, KG_EXIT_USAGE, "%s: no kernel matches%s%s%s%s", o->candidate,
                   o->op ? " --op " : "", o->op ? o->op->name : "", o->have_dtype ? " --dtype " : "",
                   o->have_dtype ? kg_dtype_name(o->dtype) : "");
        return fail(&err);
    }
    /* --sizes all: the presets of the selected kernels' operators, each name once */
    kg_options all = *o;
    if (o->all_presets) {
        for (int i = 0; i < tg.n; i++)
            if (kg_options_add_presets(&all, tg.v[i].op, &err)) {
                free(tg.v);
                return fail(&err);
            }
        o = &all;
    }
    /* every shape must fit at least one kernel's operator */
    for (int si = 0; si < o->n_shapes; si++) {
        int fits = 0;
        kg_shape sh;
        kg_err e2 = {0, ""};
        for (int i = 0; i < tg.n && !fits; i++)
            fits = kg_shape_parse(tg.v[i].op, o->shape_texts[si], &sh, &e2) == 0;
        if (!fits) {
            kg_err_set(&err, KG_EXIT_USAGE, "shape '%s' fits none of the selected kernels' operators (%s, ...)",
                       o->shape_texts[si], tg.v[0].op->dims);
            free(tg.v);
            return fail(&err);
        }
    }
    int rc = measure(o, exe, &tg);
    free(tg.v);
    return rc;
}

/* Newest run-*.json under results/h200 (relative to the source tree). */
static int latest_recorded(char *out, size_t size)
{
    const char *dirs[] = {"results/h200", KG_SOURCE_DIR "/results/h200"};
    for (int i = 0; i < 2; i++) {
        DIR *dp = opendir(dirs[i]);
        struct dirent *e;
        char best[256] = "";
        if (!dp)
            continue;
        while ((e = readdir(dp)))
            if (strncmp(e->d_name, "run-", 4) == 0 && strstr(e->d_name, ".json") &&
                strcmp(e->d_name, best) > 0)
                snprintf(best, sizeof best, "%s", e->d_name);
        closedir(dp);
        if (best[0]) {
            snprintf(out, size, "%s/%s", dirs[i], best);
            return 0;
        }
    }
    return -1;
}

/* The candidates of the bundled suite, shipped with the kgate executable. */
static const char *suite_plugins[] = {"libkgate_bundled.so", "triton/libkgate_triton.so",
                                      "tilelang/libkgate_tilelang.so"};

int kg_cmd_run(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX], path[PATH_MAX + 64];
    targets tg = {0, 0, NULL};
    int n;
    say_how(o);
    kg_report rep;
    kg_err derr = {0, ""};
    if (check_json_path(o, &err))
        return fail(&err);
    if (kg_device_count(&n, &derr)) {
        cudaGetLastError();
        char rec[PATH_MAX];
        if (o->live || latest_recorded(rec, sizeof rec)) {
            kg_err_set(&err, KG_EXIT_ENV,
                       "%s%s: a live run needs an NVIDIA GPU with its driver "
                       "(sm_90a kernels: H100/H200)", derr.msg, o->live ? "" : ", and no recorded run under results/h200");
            return fail(&err);
        }
        if (kg_report_read_json(rec, &rep, &err))
            return fail(&err);
        printf("No CUDA GPU on this machine: showing the latest RECORDED run, not a live one.\n"
               "  file:   %s\n  date:   %s\n  commit: %s\n  device: %s\n  command: %s\n"
               "A live run needs an NVIDIA H100/H200 (sm_90a) with its driver; then `make run`.\n\n",
               rec, rep.date, rep.commit, rep.device, rep.command);
        kg_report_print(&rep, stdout, 1);
        printf("\nThat was the RECORDED run of %s on %s (%s), not a live one.\n", rep.date, rep.device, rec);
        /* --json still written: that run's results, marked as recorded */
        snprintf(rep.recorded, sizeof rep.recorded, "%s", rec);
        if (o->json && kg_report_write_json(&rep, o->json, &err)) {
            kg_report_free(&rep);
            return fail(&err);
        }
        kg_report_free(&rep);
        return 0;
    }
    kg_self_exe(exe, sizeof exe);
    for (size_t i = 0; i < sizeof suite_plugins / sizeof suite_plugins[0]; i++) {
        if (kg_shipped(exe, KG_SHIP_CANDIDATE, suite_plugins[i], path, sizeof path)) {
            if (i == 0) {
                kg_err_set(&err, KG_EXIT_ENV, "%s is missing: rebuild (or reinstall) kgate", path);
                free(tg.v);
                return fail(&err);
            }
            fprintf(stderr, "kgate: %s not built: running without it\n", path);
            continue;
        }
        if (collect(o, exe, path, &tg, &err)) {
            free(tg.v);
            return fail(&err);
        }
    }
    int rc = measure(o, exe, &tg);
    free(tg.v);
    return rc;
}

/* ------------------------------------------------------------------ tune */

static int by_time(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One configuration (or, cfg NULL, the kernel's own launch) checked, timed
 * and judged into rep; returns non-zero only for errors that stop tune. */
static int tune_one(const kg_options *o, const char *exe, const target *t, kg_job *job, const kg_shape *shape,
                    const kg_libref *lib, const kg_others *lib_seen, double lib_age, const char *label, int done,
                    int total, kg_report *rep, kg_err *err)
{
    kg_result r;
    kg_others seen;
    memset(&seen, 0, sizeof seen);
    kernel_job(t, label, job, &r);
    double waited = 0;
    if (run_watched(exe, job, o->timeout_s, &r, NULL, &seen, &waited, err)) {
        if (err->code == KG_EXIT_ENV && r.n_sums)
            kg_report_add(rep, &r);
        return err->code;
    }
    judge_kernel(o, &r, t, shape, job, &rep->roofs, lib, lib_age, &seen, lib_seen, waited);
    if (!kg_report_add(rep, &r))
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the results");
    checkpoint(o, rep, done, total);
    return 0;
}

int kg_cmd_tune(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX], bundled[PATH_MAX + 32];
    targets tg = {0, 0, NULL};
    say_how(o);
    kg_self_exe(exe, sizeof exe);
    if (check_json_path(o, &err) || collect(o, exe, o->candidate, &tg, &err)) {
        free(tg.v);
        return fail(&err);
    }
    if (tg.n != 1) {
        kg_err_set(&err, KG_EXIT_USAGE, "tune: %s has %d matching kernels; name one: kgate tune CAND.so:KERNEL",
                   o->candidate, tg.n);
        free(tg.v);
        return fail(&err);
    }
    target t = tg.v[0];
    free(tg.v);
    kg_space sp;
    uint64_t *idx = NULL;
    long n = 0;
    kg_shape shape;
    if (!t.space[0]) {
        kg_err_set(&err, KG_EXIT_USAGE, "tune: kernel '%s' exposes no configuration space (%s, docs/tune.md)", t.kernel,
                   KGATE_TUNABLES_SYMBOL);
        return fail(&err);
    }
    if (kg_space_parse(t.space, &sp, &err) || kg_space_restrict(&sp, o->knobs, o->n_knobs, &err) ||
        kg_space_pick(&sp, o->budget, 4096, o->seed ^ 0x74756e65ull, &idx, &n, &err) ||
        kg_shape_parse(t.op, o->n_shapes ? o->shape_texts[0] : "large", &shape, &err)) {
        free(idx);
        return fail(&err);
    }
    bundled_path(bundled, sizeof bundled);
    kg_device_info d;
    kg_report rep;
    if (open_device(o, &d, &err)) {
        free(idx);
        return fail(&err);
    }
    double t0 = kg_mono();
    kg_report_init(&rep);
    report_header(&rep, o, &d);
    kg_job job;
    kg_libref lib;
    kg_others lib_seen;
    double lib_age = -1;
    memset(&lib, 0, sizeof lib);
    memset(&lib_seen, 0, sizeof lib_seen);
    rep.shapes_seed = fresh_seed();
    int rc = get_roofs(o, &d, &rep.roofs, &err) ||
             group_job(o, t.op, t.types, &shape, rep.shapes_seed, &job, &err);
    watch_start(&d);
    if (!rc && !o->verify_only) {
        job.mode = KG_JOB_LIBRARY;
        snprintf(job.plugin, sizeof job.plugin, "%s", bundled);
        rc = library_job(o, exe, &rep, &job, &lib, &lib_age, &lib_seen, &err) != 0;
    }
    /* the kernel's own launch first: what the tuning is measured against */
    if (!rc)
        rc = tune_one(o, exe, &t, &job, &shape, &lib, &lib_seen, lib_age, "default (the kernel's own launch)", 1,
                      (int)n + 1, &rep, &err) != 0;
    for (long i = 0; i < n && !rc; i++) {
        char label[256], what[300];
        if (out_of_time(o, t0, (int)i + 1, (int)n + 1, &rep))
            break;
        job.n_config = sp.n_knobs;
        kg_space_config(&sp, idx[i], job.config);
        kg_config_format(&sp, job.config, label, sizeof label);
        snprintf(what, sizeof what, "%s [%s]", t.kernel, label);
        progress((int)i, (int)n, what);
        rc = tune_one(o, exe, &t, &job, &shape, &lib, &lib_seen, lib_age, label, (int)i + 2, (int)n + 1, &rep,
                      &err) != 0;
    }
    watch_stop();
    progress((int)n, (int)n, NULL);
    free(idx);
    /* the tuning's own summary: the best configuration, the spread, the default */
    double *times = malloc(sizeof(double) * (size_t)(rep.n + 1)), t_def = 0, t_best = 0;
    int n_ok = 0, n_skip = 0, n_bad = 0, best = -1;
    for (int i = 0; times && i < rep.n; i++) {
        const kg_result *x = &rep.results[i];
        double tt;
        if (x->verdict == KG_V_SKIPPED) {
            n_skip += i > 0;
            continue;
        }
        if (x->verdict != KG_V_OK && x->verdict != KG_V_SLOW) {
            n_bad += i > 0;
            continue;
        }
        if (!((tt = kg_result_time(x)) > 0)) /* the time judged: host work past the allowance counts */
            continue;
        if (i == 0) {
            t_def = tt;
            continue;
        }
        times[n_ok++] = tt;
        if (best < 0 || tt < t_best) {
            best = i;
            t_best = tt;
        }
    }
    char buf[3][32];
    if (!rc && n_ok == 0 && n > 0)
        rc = kg_err_set(&err, KG_EXIT_FAIL, "tune: no configuration of '%s' ran this shape correctly", t.kernel) != 0;
    finish_print(o, &rep, rc ? err.code : 0, &err);
    printf("\ntune %s at %s: %ld configuration(s) of %.0f%s; %d correct and timed, %d cannot run this shape, "
           "%d wrong or failed\n",
           t.kernel, rep.n ? rep.results[0].shape : "?", n, kg_space_size(&sp),
           o->n_knobs ? " (the subspace --knob leaves)" : "", n_ok, n_skip, n_bad);
    if (best >= 0) {
        const kg_result *b = &rep.results[best];
        double e = 0;
        qsort(times, (size_t)n_ok, sizeof *times, by_time);
        printf("best: [%s] %s, %s%s", b->summary, kg_fmt_time(t_best, buf[0], sizeof buf[0]), kg_verdict_name(b->verdict),
               kg_result_get(b, "lib/efficiency", &e) ? "" : "\n");
        if (kg_result_get(b, "lib/efficiency", &e))
            printf(", E_lib %.2f\n", e);
        printf("spread: fastest %s, median %s, slowest %s\n", kg_fmt_time(times[0], buf[0], sizeof buf[0]),
               kg_fmt_time(times[n_ok / 2], buf[1], sizeof buf[1]), kg_fmt_time(times[n_ok - 1], buf[2], sizeof buf[2]));
        if (t_def > 0)
            printf("default launch: %s (%s); the best configuration is %.2fx faster\n",
                   kg_fmt_time(t_def, buf[0], sizeof buf[0]), kg_verdict_name(rep.results[0].verdict), t_def / t_best);
    }
    free(times);
    rc = finish_exit(o, &rep, rc ? err.code : 0, &err);
    kg_report_free(&rep);
    return rc;
}
