/* A loop's trajectory (kgate trajectory): its iterations in order, each
 * what kgate said of that iteration's kernel, printed one row a result
 * with its verdict, time, E_best, E_lib, rho and top cause. */
#ifndef KG_TRAJECTORY_H
#define KG_TRAJECTORY_H

#include <stdio.h>

#include "report.h"

#define KG_TRAJ_MAX 100000 /* iterations read at most */

/* One iteration: a label (its file, folder or request id), its results,
 * or the exit code and error of a request that gave none. */
typedef struct kg_traj_iter {
    char label[160];
    kg_report rep;
    int code;         /* a batch or service answer's exit code; -1 for a results file */
    char error[320];  /* the answer's error ("" for none) */
} kg_traj_iter;

typedef struct kg_trajectory {
    kg_traj_iter *v;
    int n, cap;
} kg_trajectory;

/* Appends the iterations path holds: a results file (kgate check --json)
 * is one; a batch results file or a file of kgate serve's answers (JSON
 * Lines, schema kgate.batch/1) one a line; a folder one an entry in natural
 * order (it-2 before it-10): a results or answers file as above, or a
 * folder whose results files (*.json) together make one iteration. 0, or
 * an exit code with err naming the file. */
int kg_traj_add_path(kg_trajectory *t, const char *path, kg_err *err);

/* The table: a row a result (an iteration without results gets a row with
 * its error), then the best iteration: the highest E_best of a correct
 * (OK or SLOW) result, else the fastest correct one. */
void kg_traj_print(const kg_trajectory *t, FILE *f);

/* The page (html_trajectory.c): E_best and rho against iteration, the OK
 * band (E_best >= e_ok) shaded, markers coloured by verdict, the table.
 * 0, or -1 when writing f failed. */
int kg_traj_html(const kg_trajectory *t, double e_ok, FILE *f);

void kg_traj_free(kg_trajectory *t);

#endif
