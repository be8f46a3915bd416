/* Judging: from a kernel's evidence (its summaries, the library's times,
 * its flags) to its verdict, reason and flags. Every verdict the gate makes
 * is made here, through kg_decide (verdict.h); how a worker ended makes a
 * kernel INCORRECT, CRASH or TIMEOUT (worker_end.h). */
#ifndef KG_JUDGE_H
#define KG_JUDGE_H

#include "../catalog/op.h"
#include "result.h"
#include "../catalog/roofline.h"
#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Derives rates, rho, E_lib, E_best and the verdict for a measured result
 * (its verdict KG_V_SKIPPED until now, unless the kernel crashed, hung or
 * was wrong: those stand); lib: the library measurement to judge against
 * (NULL: none); sc: the call's scalars, which some work models read
 * (attention's causal; NULL: the operator's defaults). */
void kg_judge(kg_result *r, const kg_op *op, kg_types t, const kg_shape *s, const kg_scalars *sc,
              const kg_roofs *roofs, const kg_libref *lib, const kg_gate *g);

/* kg_judge of a kernel job's result against its group's library
 * measurement, except with verify_only and when the library job cannot be
 * trusted, since a slowed library would flatter the kernel: lib_others
 * other processes held a context on the GPU around it (shared-gpu), or work
 * ran on other streams of its own process while it was timed (a problem's
 * library job loads the candidate's file). The kernel is then judged on rho
 * alone, and baseline_note says why. */
void kg_judge_kernel(kg_result *r, const kg_op *op, kg_types t, const kg_shape *s, const kg_scalars *sc,
                     const kg_roofs *roofs, const kg_libref *lib, int verify_only, int lib_others,
                     const kg_gate *g);

/* The cliff of result r against `first`, the same kernel, operator, dtype
 * and shape family's first result: its median over r's ("cliff"), unless
 * first was INCORRECT. */
void kg_judge_cliff(kg_result *r, const kg_result *first);

/* A kernel not started because this GPU cannot run it (a bundled variant
 * that needs code this GPU or build lacks; catalog/arch.h says why):
 * SKIPPED, "not on this GPU: <why>". */
void kg_judge_not_here(kg_result *r, const char *why);

/* Judges an OK or SLOW recorded result again with gate g from the evidence
 * it kept (time/judged and its interval, lib/efficiency, best/efficiency,
 * roof/fraction, lib/roof/fraction, time/vendor_share): sets its verdict,
 * reason and the flags the gate decides (kgate rejudge). Any other verdict
 * (INCORRECT, IMPOSSIBLE, CRASH, TIMEOUT, SKIPPED) stands: the gate's
 * thresholds do not make it. Returns 1 when the verdict changed, else 0. */
int kg_rejudge(kg_result *r, const kg_gate *g);

#ifdef __cplusplus
}
#endif
#endif
