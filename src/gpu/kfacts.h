/* The worker's side of diagnosis: what one call of a subject launched, and
 * the facts of each kernel (diagnose/diag.h) that need the GPU to learn.
 *
 *   - Launches are seen through CUPTI's driver-API callbacks (every
 *     cuLaunchKernel* variant, which the runtime's launches go through):
 *     the function, grid, block and dynamic shared memory of each.
 *   - Each function's registers, static shared and local memory come from
 *     cuFuncGetAttribute, its theoretical occupancy from the occupancy API
 *     (the limiter is the resource whose own limit equals it).
 *   - Its SASS comes from `cuobjdump -sass -fun NAMES` on the cubin CUPTI
 *     hands over when a module loads (so Triton's cuModuleLoadData cubins
 *     count too), run by diagnose/sass_run.h and scanned by diagnose/sass.h. A
 *     plain call first names the launched functions, so that cuobjdump
 *     runs while the profiler does.
 *     Watching must start before the candidate is loaded (kg_kf_watch).
 *   - Counters come from the CUPTI Range Profiler (gpu/profile.h) during
 *     the same call, matched to launches by order.
 * Driver functions are looked up through the runtime, so kgate does not
 * link libcuda. */
#ifndef KG_KFACTS_H
#define KG_KFACTS_H

#include "../diagnose/diag_json.h"
#include "../base/kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Starts watching launches and module loads (once per process). Returns 0,
 * or KG_EXIT_ENV naming the failure (another CUPTI subscriber, say); the
 * diagnosis then goes on without static facts. */
int kg_kf_watch(kg_err *err);

/* Runs `launch` once plainly and once under the Range Profiler when
 * metrics are given (else once), and describes what it launched in d
 * (kernels, launches, busy time, note; not the causes). When the plain
 * call takes longer than patched_max_s seconds, the SASS-patched metrics
 * (gpu/profile.h, kg_prof_unpatched) are left out and the note says so.
 * tmpdir: where cubins may be written for cuobjdump. What could not be
 * collected is said in d->note, not returned as an error; an error is only
 * a failure of the launch itself (its code). */
int kg_kf_describe(int (*launch)(void *ctx, kg_err *err), void *ctx, const char *const *metrics, int n_metrics,
                   double patched_max_s, const char *tmpdir, kg_diagnosis *d, kg_err *err);

/* Seconds the last kg_kf_describe spent on SASS: the plain call that names
 * the kernels, the wait for cuobjdump beyond the profiler's passes, and the
 * scan (diagnose/sass_run.h); 0 before one ran. */
double kg_kf_last_sass_s(void);

#ifdef __cplusplus
}
#endif
#endif
