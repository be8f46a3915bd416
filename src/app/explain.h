/* kgate explain and the diagnosis of judged results (app/explain.c). */
#ifndef KG_EXPLAIN_H
#define KG_EXPLAIN_H

#include "../diagnose/diagnose.h"
#include "../catalog/op.h"
#include "options.h"
#include "../judge/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The rules' view of a result: its time, rho, E_best and host time, and,
 * when op and sh are given, the work model and the operator's kind. */
void kg_explain_ctx(const kg_result *r, const kg_op *op, const kg_shape *sh, kg_types ty, kg_diag_ctx *c);
/* Ranks the causes of a result that carries kernel facts (r->diag), with
 * thresholds p; a result without facts is left alone. */
void kg_explain_result(kg_result *r, const kg_diag_params *p);
/* kgate explain: see kg_usage("explain"). Returns the exit code. */
int kg_cmd_explain(const kg_options *o);

#ifdef __cplusplus
}
#endif
#endif
