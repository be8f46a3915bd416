/* Other processes on the GPU: which of the processes NVML lists with a
 * compute context on the judged GPU are not kgate's own. kgate samples the
 * list before each job starts and after its worker is gone, so kgate's own
 * processes are then only this one and its ancestors (a Python front end that
 * holds a context of its own); anything else was sharing the GPU with the
 * job and may have slowed what it timed (gpu/others, flag shared-gpu:
 * docs/results.md). A process that starts and ends within one job is not
 * seen. */
#ifndef KG_OTHERS_H
#define KG_OTHERS_H

#ifdef __cplusplus
extern "C" {
#endif

#define KG_OTHERS_MAX 16 /* distinct processes kept; more are counted */
#define KG_ANCESTORS_MAX 64

typedef struct kg_others {
    int n;                     /* distinct other processes seen (kept ones, plus any beyond KG_OTHERS_MAX) */
    int kept;                  /* how many of them pid[] and mem[] hold */
    long pid[KG_OTHERS_MAX];   /* as NVML gave them */
    double mem[KG_OTHERS_MAX]; /* bytes of GPU memory, the largest seen (0: NVML did not say) */
} kg_others;

/* This process and its ancestors, from /proc/PID/stat, nearest first (at
 * most max); returns how many. */
int kg_self_and_ancestors(long *pids, int max);

/* Adds the processes of one NVML listing (pid[i] holding mem[i] bytes; a
 * negative mem: not known) that are not in own[] to o. */
void kg_others_note(kg_others *o, const long *pid, const double *mem, int n, const long *own, int n_own);

/* o's processes added to into, as one more listing of them. */
void kg_others_merge(kg_others *into, const kg_others *o);

/* Bytes of GPU memory the kept processes hold, together. */
double kg_others_mem(const kg_others *o);

#ifdef __cplusplus
}
#endif
#endif
