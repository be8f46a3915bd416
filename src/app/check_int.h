/* What kgate check, run and tune share (commands.h has the commands):
 * check_targets.c, the kernels a candidate lists (targets); check_jobs.c,
 * the jobs that judge them and their results; check_plan.c, the groups of
 * jobs; check_cmd.c, the judging of every target and the report's end;
 * check_events.c, a line as each kernel is judged (--events); check_server.c,
 * the check sent to a kgate serve (--server). */
#ifndef KG_CHECK_INT_H
#define KG_CHECK_INT_H

#include <limits.h>
#include <stddef.h>

#include "cmds_int.h"

/* One kernel to judge: where it lives, and its catalog identity. */
typedef struct kg_check_target {
    char plugin[PATH_MAX];
    char kernel[96];
    char summary[256]; /* the kernel's own description (naive ones name their defect) */
    char space[1024];  /* its configuration space (kgate tune), or "" */
    const kg_op *op;
    kg_types types;
    double warm_s, list_s; /* its file's listing: waiting for the Python fork server, the list job */
} kg_check_target;

typedef struct kg_check_targets {
    int n, cap;
    kg_check_target *v;
} kg_check_targets;

/* A group: the kernels of one operator and dtypes at one shape, which
 * share a library job. */
typedef struct kg_check_group {
    int lead;       /* the index of its first kernel in the targets */
    int first, n;   /* its kernels: plan members[first .. first + n) */
    kg_shape shape; /* parsed once, for the lead's operator */
} kg_check_group;

/* The work of check and run, resolved once (check_plan.c). */
typedef struct kg_check_plan {
    const char *shapes[KG_MAX_SHAPES]; /* as resolved: default large, --sizes all expanded */
    int n_shapes;
    kg_check_group *groups; /* in the order they run: shape by shape, target by target */
    int n_groups;
    int *members; /* indices into the targets */
    int n_members;
    int jobs; /* the progress bar's total: a library job a group (not with --verify-only), a job a kernel */
} kg_check_plan;

/* check_plan.c: KG_EXIT_USAGE when a shape fits none of the targets'
 * operators or --sizes all names too many presets. */
int kg_check_plan_build(const kg_options *o, const kg_check_targets *tg, kg_check_plan *p, kg_err *err);
void kg_check_plan_free(kg_check_plan *p);

/* check_targets.c */
int kg_check_collect(const kg_options *o, const char *exe, const char *spec, kg_check_targets *out, kg_err *err);
int kg_check_same_group(const kg_check_target *a, const kg_check_target *b);

/* check_jobs.c */
unsigned long long kg_check_fresh_seed(void);
void kg_check_bundled_path(char *buf, size_t size);
int kg_check_group_job(const kg_options *o, const kg_op *op, kg_types types, const kg_shape *shape,
                       unsigned long long seed, kg_job *job, kg_err *err);
void kg_check_kernel_job(const kg_check_target *t, const char *summary, kg_job *job, kg_result *r);
int kg_check_memcheck(const char *exe, const kg_job *base, double timeout_s, kg_result *r, kg_err *err);
int kg_check_diagnose_again(const char *exe, const kg_job *base, double timeout_s, kg_result *r, kg_err *err);
int kg_check_library_job(const kg_options *o, const char *exe, const kg_report *rep, const kg_job *job,
                         kg_libref *lib, double *age_s, kg_others *seen, kg_err *err);
void kg_check_judge_kernel(const kg_options *o, kg_result *r, const kg_check_target *t, const kg_shape *shape,
                           const kg_job *job, const kg_roofs *roofs, const kg_libref *lib, double lib_age,
                           const kg_others *seen, const kg_others *lib_seen, double waited);

/* check_server.c: 1 when a kgate serve at o->server judged the check
 * (*code: the exit code, everything printed and written), 0 to check here
 * (no service answers there, or the options do not fit a request). */
int kg_check_via_server(const kg_options *o, int *code);

/* check_events.c: --events PATH, a JSON line as each kernel is judged.
 * open: KG_EXIT_IO for a path that cannot be written (a FIFO no one reads,
 * the candidate); event: writes {"event": "kernel", "result": result_json};
 * event_result: the same of a judged result. Nothing without --events. */
int kg_check_events_open(const kg_options *o, kg_err *err);
void kg_check_events_close(void);
void kg_check_event(const char *result_json);
void kg_check_event_result(const kg_result *r);

/* check_cmd.c */
int kg_check_out_of_time(const kg_options *o, double t0, int done, int total, kg_report *rep);
void kg_check_checkpoint(const kg_options *o, kg_report *rep, int done, int total);
void kg_check_finish_print(const kg_options *o, kg_report *rep, int rc, const kg_err *err);
int kg_check_finish_exit(const kg_options *o, kg_report *rep, int rc, kg_err *err);
int kg_check_measure(const kg_options *o, const char *exe, const kg_check_targets *tg);
int kg_check_json_path(const kg_options *o, kg_err *err);

#endif
