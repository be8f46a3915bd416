/* Other processes on the GPU: which of the processes NVML lists with a
 * context on the judged GPU (compute, graphics, MPS client) are not
 * kgate's own. kgate lists them before each job's worker starts, about
 * every 0.05 s while it runs (jittered), and after it is gone. kgate's own are this process and its ancestors
 * (a batch, a Python front end that may hold a context while it waits), and
 * while a worker runs, that worker; anything else, the worker's own
 * children included, shared the GPU with the job and may have slowed what
 * it timed (gpu/others, flag shared-gpu: docs/results.md). A process that
 * comes and goes between two listings is not seen, nor an ancestor's work. */
#ifndef KG_OTHERS_H
#define KG_OTHERS_H

#ifdef __cplusplus
extern "C" {
#endif

#define KG_OTHERS_MAX 16 /* distinct processes kept; more are counted */
#define KG_ANCESTORS_MAX 64

typedef struct kg_others {
    int listed;                /* listings taken: 0 means nothing is known */
    int failed;                /* a listing failed: what happened after it is not known */
    int n;                     /* distinct other processes seen (kept ones, plus any beyond KG_OTHERS_MAX) */
    int kept;                  /* how many of them pid[] and mem[] hold */
    long pid[KG_OTHERS_MAX];   /* as NVML gave them */
    double mem[KG_OTHERS_MAX]; /* bytes of GPU memory, the largest seen (0: NVML did not say) */
} kg_others;

/* This process and its ancestors, from /proc/PID/stat, nearest first (at
 * most max); returns how many. */
int kg_self_and_ancestors(long *pids, int max);

/* Adds one NVML listing to o: its processes (pid[i] holding mem[i] bytes;
 * a negative mem: not known; mem may be NULL) that are not in own[]. */
void kg_others_note(kg_others *o, const long *pid, const double *mem, int n, const long *own, int n_own);

/* o's listings added to into. */
void kg_others_merge(kg_others *into, const kg_others *o);

/* Bytes of GPU memory the kept processes hold, together. */
double kg_others_mem(const kg_others *o);

#ifdef __cplusplus
}
#endif
#endif
