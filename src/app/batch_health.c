/* A GPU's health in `kgate batch`: the check a supervisor runs after a job
 * that failed (kg_batch_health runs `kgate __health`), the view of its GPU
 * a supervisor's jobs get (kg_batch_pick_view), and `kgate __health` itself
 * (kg_cmd_health). */
#include "batch_cmd.h"
#include "batch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "../catalog/arch.h"
#include "../gpu/check.h"
#include "../gpu/device.h"
#include "../supervise/gpu_lock.h"

#define KG_HEALTH_WAIT_S 50.0 /* a health check's wait for the GPU's lock (its run is cut at 60 s) */
#define KG_HEALTH_RUN_S 60.0
#define KG_HEALTH_UNKNOWN 1 /* `kgate __health`'s exit when the GPU's lock stayed held: health not checked */

/* Whether a GPU still works: `kgate __health DEV` as the view sees it,
 * which prints the UUID of the GPU it checked; with want, that must be it.
 * H_UNKNOWN: the GPU's lock stayed held (it is in use), its health not
 * checked; H_STOPPED: a stop was asked; H_FAILED: err says what failed. */
int kg_batch_health(const kg_batch_cfg *c, const kg_batch_view *v, const char *want, const char *dir, kg_err *err)
{
    char num[16], log[PATH_MAX + 32], said[600];
    snprintf(num, sizeof num, "%d", v->dev);
    snprintf(log, sizeof log, "%s/health.log", dir);
    char *argv[] = {(char *)kg_batch_runner(c), "__health", num, NULL};
    int rc = kg_batch_run_timed(argv, log, KG_HEALTH_RUN_S, v->cvd, -1, NULL, err);
    if (rc == RUN_STOPPED)
        return H_STOPPED;
    if (rc == RUN_FAILED)
        return H_FAILED;
    if (rc == KG_EXIT_IO) { /* its lock file cannot be used (KGATE_GPU_LOCK=require): not the GPU's fault */
        kg_batch_last_line(log, said, sizeof said);
        kg_err_set(err, KG_EXIT_IO, "kgate __health: %s", said);
        return H_FAILED;
    }
    if (rc != 0 && rc != KG_HEALTH_UNKNOWN) /* RUN_STUCK too: a health check that would not die */
        return H_BAD;
    kg_batch_last_line(log, said, sizeof said);
    if (want && strcmp(said, want) != 0)
        return H_BAD;
    return rc == 0 ? H_OK : H_UNKNOWN;
}

/* The view of a supervisor's GPU (slot). Each job sees only its GPU,
 * through CUDA_VISIBLE_DEVICES=UUID and --device 0: a candidate cannot put
 * work on another GPU of the batch (a hard-coded cuda:0, a stray
 * cudaSetDevice), and CUDA in the job's processes sets up one GPU, not every
 * GPU of the node. A health check under that view, once at the start, must
 * name that UUID (and pass, or find the GPU in use); where it does not but
 * the GPU is healthy seen whole (a driver or a kind of device that takes no
 * UUID there), the jobs see every GPU and --device g, and stderr says so. A
 * GPU that fails both is left to its first job, whose failure drains it as
 * before. */
kg_batch_view kg_batch_pick_view(const kg_batch_cfg *c, int gi, const char *dir)
{
    kg_batch_view whole = {NULL, c->gpus[gi]}, alone = {c->uuid[gi], 0};
    kg_err e = {0, ""};
    if (!c->uuid[gi][0])
        return whole;
    int h = kg_batch_health(c, &alone, c->uuid[gi], dir, &e);
    if (h == H_OK || h == H_UNKNOWN || h == H_STOPPED)
        return alone;
    if (h == H_FAILED) { /* not the view's fault (a fork, the lock file): its jobs say more */
        fprintf(stderr, "kgate: batch: GPU %d: its health check could not run: %s\n", c->gpus[gi], e.msg);
        return alone;
    }
    h = kg_batch_health(c, &whole, NULL, dir, &e);
    if (h == H_OK || h == H_UNKNOWN)
        fprintf(stderr, "kgate: batch: GPU %d: CUDA_VISIBLE_DEVICES=%s did not select it: its jobs see every GPU\n",
                c->gpus[gi], c->uuid[gi]);
    return whole;
}

/* `kgate __health N`: allocate, write, synchronize on device N, holding its
 * GPU lock so that no job of another supervisor of that GPU is timing
 * then; prints the UUID of the GPU it checked (the batch's view check). A
 * GPU whose lock stays held KG_HEALTH_WAIT_S is in use, so not known dead,
 * nor known healthy: said, its UUID printed, and exit KG_HEALTH_UNKNOWN
 * (the supervisor neither drains it nor counts it healthy: it records the
 * job's result as it is and says so once). */
static int health_probe(int g, kg_err *err)
{
    void *p = NULL;
    KG_CUDA(cudaSetDevice(g));
    KG_CUDA(cudaMalloc(&p, 1 << 20));
    KG_CUDA(cudaMemset(p, 0, 1 << 20));
    KG_CUDA(cudaDeviceSynchronize());
    KG_CUDA(cudaFree(p)); /* after a failure, cudaDeviceReset frees it */
out:
    return err->code;
}

int kg_cmd_health(int argc, char **argv)
{
    int g = argc > 1 ? atoi(argv[1]) : 0;
    kg_device_info d;
    kg_gpu_lock l;
    kg_err err = {0, ""}, lerr = {0, ""};
    if (kg_device_query(g, &d, &err)) {
        fprintf(stderr, "kgate: GPU %d: %s\n", g, err.msg);
        return KG_EXIT_ENV;
    }
    if (kg_arch_check_gpu(g, d.name, d.cc_major * 10 + d.cc_minor, kg_arch_build(), &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return KG_EXIT_ENV;
    }
    int lrc = kg_gpu_lock_take(d.uuid, KG_HEALTH_WAIT_S, &l, &lerr);
    if (lrc == KG_EXIT_ENV) {
        fprintf(stderr, "kgate: %s: its health not checked\n", lerr.msg);
        printf("%s\n", d.uuid);
        return KG_HEALTH_UNKNOWN;
    }
    if (lrc == KG_EXIT_STOPPED) {
        fprintf(stderr, "kgate: %s\n", lerr.msg);
        return KG_EXIT_STOPPED;
    }
    if (lrc) { /* a lock file that cannot be used: checked without it, as a check would go on */
        fprintf(stderr, "kgate: %s (checked without the lock)\n", lerr.msg);
        if (kg_gpu_lock_required())
            return KG_EXIT_IO;
    }
    int bad = health_probe(g, &err) != 0;
    if (bad)
        fprintf(stderr, "kgate: GPU %d: %s\n", g, err.msg);
    cudaError_t reset = cudaDeviceReset(); /* the context gone before the lock is */
    if (reset != cudaSuccess && !bad) {
        fprintf(stderr, "kgate: GPU %d: cudaDeviceReset failed at %s:%d: %s\n", g, __FILE__, __LINE__,
                cudaGetErrorString(reset));
        bad = 1;
    }
    kg_gpu_lock_drop(&l);
    if (bad)
        return KG_EXIT_ENV;
    printf("%s\n", d.uuid);
    return 0;
}
