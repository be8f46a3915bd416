/* What the files behind commands.h share (commands.h has the commands):
 * cmd_common.c, the error line, -q/-v and the progress bar, the device
 * opened and a report's header; cmd_gpu.c, the judged GPU held by a
 * measuring command (its lock, the watch of other processes on it, its
 * roofs). */
#ifndef KG_CMDS_INT_H
#define KG_CMDS_INT_H

#include <stddef.h>

#include "../gpu/device.h"
#include "../report/report.h"
#include "../supervise/gpu_lock.h"
#include "../supervise/job.h"
#include "../supervise/others.h"
#include "options.h"

/* cmd_common.c */
int kg_cmds_fail(const kg_err *e); /* says e on stderr; its exit code (KG_EXIT_ENV when none) */
void kg_cmds_iso_now(char *buf, size_t size);
void kg_cmds_say_how(const kg_options *o); /* -q and -v, for the progress bar */
int kg_cmds_progress_on(void);
int kg_cmds_verbose(void);
void kg_cmds_progress(int done, int total, const char *what);
const char *kg_cmds_relative(const char *path);
int kg_cmds_open_device(const kg_options *o, kg_device_info *d, kg_err *err);
void kg_cmds_report_header(kg_report *rep, const kg_options *o, const kg_device_info *d);

/* cmd_gpu.c */
void kg_cmds_gpu_lock_for(const kg_options *o, const char *uuid);
int kg_cmds_gpu_take(kg_gpu_lock *l, kg_err *err);
int kg_cmds_run_locked(const char *const *wrapper, const char *exe, const kg_job *job, double timeout_s, kg_result *r,
                       kg_table_entry **table, int *n_table, kg_err *err);
void kg_cmds_gpu_lock_target(const kg_options *o);
void kg_cmds_watch_start(const kg_device_info *d);
void kg_cmds_watch_stop(void);
int kg_cmds_run_watched(const char *exe, const kg_job *job, double timeout_s, kg_result *r, kg_libref *lib,
                        kg_others *o, double *waited_s, kg_err *err);
void kg_cmds_others_to_result(kg_result *r, const kg_others *job_seen, const kg_others *lib_seen);
int kg_cmds_context_done(kg_gpu_lock *l, kg_err *err);
int kg_cmds_measure_roofs_alone(const kg_device_info *d, kg_peaks *pk, kg_roofs *roofs, kg_err *err);
int kg_cmds_get_roofs(const kg_options *o, const kg_device_info *d, kg_roofs *roofs, kg_err *err);

#endif
