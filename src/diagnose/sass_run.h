/* Running cuobjdump on captured cubins, in the background: a diagnosis
 * starts it once it knows the kernels' names and collects the counts after
 * the profiler's passes, during which cuobjdump works. Plain C and POSIX;
 * no GPU: the cubins are byte buffers, and tests give KG_CUOBJDUMP a stand-in.
 *
 * The rules, since kernel names and cubins are the candidate's:
 *   - no shell: cuobjdump gets an argv; a name goes into `-fun` only when
 *     it is [A-Za-z0-9_$.]+ (no option, no comma), else its cubin is
 *     disassembled whole;
 *   - cuobjdump sees no descriptor of the worker's beyond its own: stdin is
 *     /dev/null, stdout an unlinked file, stderr /dev/null, the rest closed;
 *   - each runs in a process group of its own, killed whole at the deadline
 *     or when abandoned;
 *   - at most KG_SASS_TEXT_MAX bytes of a listing are read;
 *   - its cubin files are removed by kg_sass_run_finish on every path (a
 *     worker killed before that leaves them in its scratch directory, which
 *     the supervisor removes). */
#ifndef KG_SASS_RUN_H
#define KG_SASS_RUN_H

#include <stddef.h>

#include "diag_json.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_SASS_JOBS_MAX 32           /* cuobjdump processes of one run */
#define KG_SASS_TEXT_MAX (64u << 20)  /* listing bytes read per cubin */
#define KG_SASS_DEADLINE_S 30.0       /* a run's wait for its cuobjdumps */

/* A captured cubin: its bytes (not owned). */
typedef struct kg_sass_cubin {
    const char *bytes;
    size_t size;
} kg_sass_cubin;

typedef struct kg_sass_run kg_sass_run;

/* Starts one cuobjdump (KG_CUOBJDUMP, PATH, CUDA_HOME, /usr/local/cuda/bin)
 * for each cubin that holds one of the nn names (as a NUL-ended string),
 * each name asked of the first cubin that holds it; names "" and "?" are
 * skipped. A name held by several cubins (a Triton autotuner's configs,
 * say) is said in d->note: its counts will be the first loaded cubin's.
 * Cubin files go to tmpdir (NULL or "": TMPDIR, else /tmp). Returns the run
 * (NULL when nothing was started: no cuobjdump, no cubin holds a name, out
 * of memory; what failed is in d->note). */
kg_sass_run *kg_sass_run_start(const kg_sass_cubin *cubins, int n_cubins, const char (*names)[KG_KNAME_MAX],
                               int nn, const char *tmpdir, kg_diagnosis *d);

/* Waits for the run's cuobjdumps (KG_SASS_DEADLINE_S in all from this
 * call, or less when the environment's KG_SASS_DEADLINE says so; one still
 * running then is killed with its group and said in d->note), scans their listings, and gives each of the nk kernels of ks
 * whose sass.found is 0 the counts of its function. abandon: kill them at
 * once and scan nothing. A cuobjdump that exits with a failure or a signal
 * gives no counts and is said in d->note. Removes the files and frees the
 * run; r may be NULL. */
void kg_sass_run_finish(kg_sass_run *r, kg_kfacts *ks, int nk, int abandon, kg_diagnosis *d);

#ifdef __cplusplus
}
#endif
#endif
