/* Commands over recorded results, no GPU needed (app/results_cmds.c). */
#ifndef KG_RESULTS_CMDS_H
#define KG_RESULTS_CMDS_H

#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kgate compare A.json B.json: see kg_usage("compare"). Returns the exit code. */
int kg_cmd_compare(const kg_options *o);
/* kgate report RESULTS.json... -o FILE: see kg_usage("report"). */
int kg_cmd_report(const kg_options *o);
/* kgate trajectory PATH...: see kg_usage("trajectory"). */
int kg_cmd_trajectory(const kg_options *o);

#ifdef __cplusplus
}
#endif
#endif
