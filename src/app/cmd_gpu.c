/* The judged GPU as a measuring command holds it: its lock around each job
 * that puts work on it, the watch of other processes on it while a job
 * runs, and its roofs, measured here alone or read from their cache. */
#include "cmds_int.h"

#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "../catalog/roofs_io.h"

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
void kg_cmds_gpu_lock_for(const kg_options *o, const char *uuid)
{
    snprintf(gl.uuid, sizeof gl.uuid, "%s", uuid);
    gl.wait_s = lock_wait_s(o);
}

int kg_cmds_gpu_take(kg_gpu_lock *l, kg_err *err)
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
int kg_cmds_run_locked(const char *const *wrapper, const char *exe, const kg_job *job, double timeout_s, kg_result *r,
                       kg_table_entry **table, int *n_table, kg_err *err)
{
    kg_gpu_lock l;
    if (kg_cmds_gpu_take(&l, err))
        return err->code;
    int rc = kg_job_run_under(wrapper, exe, job, timeout_s, r, NULL, table, n_table, err);
    kg_gpu_lock_drop(&l);
    return rc;
}

/* The GPU whose lock the jobs take, asked before anything else needs it:
 * the list job runs before the device is opened for judging, and loading a
 * candidate can put work on the GPU (a constructor, a Python import). With
 * no usable GPU, no lock (the command says why later, if it needs one). */
void kg_cmds_gpu_lock_target(const kg_options *o)
{
    int n;
    kg_device_info d;
    kg_err e = {0, ""};
    gl.wait_s = lock_wait_s(o);
    if (!gl.uuid[0] && kg_device_count(&n, &e) == 0 && o->device < n && kg_device_query(o->device, &d, &e) == 0)
        kg_cmds_gpu_lock_for(o, d.uuid);
}

void kg_cmds_watch_start(const kg_device_info *d)
{
    kg_err e = {0, ""};
    snprintf(gl.uuid, sizeof gl.uuid, "%s", d->uuid);
    snprintf(gw.pci, sizeof gw.pci, "%s", d->pci);
    gw.w = kg_gpu_watch_open(d->pci, &e);
    if (!gw.w)
        fprintf(stderr, "kgate: other processes on the GPU are not watched: %s\n", e.msg);
    gw.n_own = kg_self_and_ancestors(gw.own, KG_ANCESTORS_MAX);
}

void kg_cmds_watch_stop(void)
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
        kg_cmds_watch_stop();
    }
}

static void watch_tick(void *ud, long worker)
{
    gw.worker = worker;
    watch_sample(ud, worker);
}

/* A listing takes 0.4 to 1.5 ms (H200); at 200 Hz from another process the
 * timed medians did not move (docs/scale.md) */
#define KG_WATCH_PERIOD_S 0.05

/* kg_job_run holding the GPU's lock, with the GPU's processes listed
 * before the worker starts, every KG_WATCH_PERIOD_S or so while it runs (at
 * jittered times: kg_job_watch), and after it is gone; *waited_s: how long
 * the lock took (may be NULL). lib (may be NULL) learns whether other
 * processes were seen, or the job was not watched (lib->others < 0). */
int kg_cmds_run_watched(const char *exe, const kg_job *job, double timeout_s, kg_result *r, kg_libref *lib,
                        kg_others *o, double *waited_s, kg_err *err)
{
    kg_gpu_lock l;
    if (kg_cmds_gpu_take(&l, err))
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
void kg_cmds_others_to_result(kg_result *r, const kg_others *job_seen, const kg_others *lib_seen)
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
int kg_cmds_context_done(kg_gpu_lock *l, kg_err *err)
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
int kg_cmds_measure_roofs_alone(const kg_device_info *d, kg_peaks *pk, kg_roofs *roofs, kg_err *err)
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
int kg_cmds_get_roofs(const kg_options *o, const kg_device_info *d, kg_roofs *roofs, kg_err *err)
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
        kg_cmds_gpu_lock_for(o, d->uuid);
        if (kg_cmds_gpu_take(&l, err))
            return err->code;
        /* another kgate process may have measured them while this one waited */
        if (!o->force && kg_roofs_load(path, roofs, &lerr) == 0 && kg_roofs_plausible(roofs, &ds, why, sizeof why)) {
            kg_gpu_lock_drop(&l);
            roofs->fp32 = ds.fp32;
            return 0;
        }
        if (kg_cmds_progress_on() || kg_cmds_verbose())
            fprintf(stderr, "kgate: measuring the roofs of %s (once per GPU)...\n", d->name);
        int others = kg_cmds_measure_roofs_alone(d, &pk, roofs, err);
        if (others > 0) {
            fprintf(stderr,
                    "kgate: the roofs of %s were measured while %d other process(es) held a context on the "
                    "GPU: not kept; this command uses the datasheet's\n",
                    d->name, others);
            *roofs = ds;
        } else if (others > -2) {
            kg_roofs_save(path, roofs, d->uuid, d->name, err);
        }
        if (kg_cmds_context_done(&l, err)) /* a failure above, or the reset's */
            return err->code;
    }
    roofs->fp32 = ds.fp32; /* CUDA-core fp32 is not measured: datasheet */
    return 0;
}
