/* kgate rejudge RESULTS.json... [--e-ok X] [--rho-ok X] [--json NEW.json]:
 * recorded results judged again by the gate (judge/judge.h). */
#ifndef KG_REJUDGE_CMD_H
#define KG_REJUDGE_CMD_H

#include "options.h"

/* Prints each verdict that changes, with its new reason and flags, and a
 * count per file; --json writes the one input's results re-judged. Exit 0,
 * 3 for usage, 6 for a file that cannot be read or written. */
int kg_cmd_rejudge(const kg_options *o);

#endif
