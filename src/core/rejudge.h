/* A recorded result judged again under another gate (kgate rejudge). */
#ifndef KG_REJUDGE_H
#define KG_REJUDGE_H

#include "result.h"
#include "verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Judges an OK or SLOW result again with gate g from the evidence it kept
 * (time/judged and its interval, lib/efficiency, best/efficiency,
 * roof/fraction, lib/roof/fraction, time/vendor_share): sets its verdict,
 * reason and the flags the gate decides. Any other verdict (INCORRECT,
 * IMPOSSIBLE, CRASH, TIMEOUT, SKIPPED) stands: the gate's thresholds do not
 * make it. Returns 1 when the verdict changed, else 0. */
int kg_rejudge(kg_result *r, const kg_gate *g);

#ifdef __cplusplus
}
#endif
#endif
