/* Supervising workers and reading what they report.
 *
 * kg_spawn runs `kgate __worker --fd N` (this same executable), writes the
 * job on its standard input, reads its events line by line and keeps a
 * watchdog: a child that outlives its budget is killed with its whole
 * process group (TIMEOUT); one that dies by a signal is a CRASH whose stderr
 * tail is kept. kg_job_run turns one worker's events (protocol/proto.h) into a
 * kg_result, a kg_libref or a kernel table (judge/judge.h judges them).
 * Nothing a worker says is trusted: a line that is not a valid event ends
 * the job as a protocol violation. */
#ifndef KG_JOB_H
#define KG_JOB_H

#include "../catalog/op.h"
#include "../protocol/proto.h"
#include "../judge/result.h"
#include "../measure/stats.h"
#include "../judge/verdict.h"
#include "spawn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `exe` with argv (argv[0] included, NULL-terminated); argv[fd_index]
 * is replaced by the number of the event descriptor. `input`, when not NULL,
 * is written to the child's standard input, which is then closed. A line
 * longer than KG_EVENT_MAX is a violation: the child is killed and
 * st->stopped set. Returns non-zero only when the child could not start,
 * or would not die: still there KG_KILL_WAIT_S after SIGKILL (KG_EXIT_ENV,
 * naming its pid). */
int kg_spawn(const char *exe, char *const argv[], int fd_index, const char *input,
             double timeout_s, kg_line_fn on_line, void *ud, kg_child *st, kg_err *err);

/* The version of Python package `package` as interpreter `python` finds
 * it, from the package's metadata (nothing is imported), within 10 s: 0
 * with it in buf (letters, digits and . + _ - only, under 64 bytes), -1
 * with buf empty when it cannot be told (no such package or interpreter). */
int kg_python_package_version(const char *python, const char *package, char *buf, size_t size);

/* Starts, when job would use it, the Python workers' fork server (which
 * imports torch and the worker host, seconds, and puts no work on a GPU),
 * so that a caller can have that done before it takes the GPU's lock
 * (app/check_targets.c); kg_job_run would start it anyway. */
void kg_job_warm(const char *exe, const kg_job *job);

/* kgate batch starts the next job's fork server before the job's `kgate
 * check` exists (a process it forks early, that later execs the check): the
 * check takes it over at its start, from KGATE_ZYGOTE_HANDED=FD:PID and the
 * interpreter and PYTHONPATH it started with (KGATE_ZYGOTE_PYTHON,
 * KGATE_ZYGOTE_PYTHONPATH). The three variables are removed from the
 * environment whatever happens (no worker sees them); a server that is not
 * this process's child, or not behind a fork server's socket, is not taken
 * (the descriptor the variable names is closed when it is such a socket;
 * an unreadable variable closes nothing), nor is one while this process
 * has a fork server already (the one handed over is stopped). 0 when taken. Jobs then use it as
 * one started here; one that fails, or was started for another interpreter
 * or PYTHONPATH than a job's, is replaced by one started here. */
int kg_job_take_zygote(void);

/* The interpreter, PYTHONPATH and KGATE_LIB a Python worker of exe runs
 * with, set in this process's environment (PYTHONPATH, KGATE_LIB) and the
 * interpreter's path in python: what the fork server must start with. */
int kg_job_python(const char *exe, char *python, size_t size, kg_err *err);

/* Whether a worker, its job done, exits normally rather than with _exit
 * (which leaves its CUDA context to the driver): under a tool, whose exit
 * hooks must run (argv holds --under-tool, as kg_job_run_under gives a
 * wrapped worker, or CUDA_INJECTION64_PATH is set, as under ncu), and in a
 * sanitizer build, whose leak check runs at exit. */
int kg_worker_exits_normally(int argc, char *const argv[]);

/* While set (fn not NULL), every worker that kg_job_run and kg_spawn start
 * has fn(ud, its pid) called about every period_s seconds while it runs
 * (at jittered times, half to one and a half periods apart),
 * from the loop that reads its events (the caller watches the GPU beside
 * it: app/cmd_gpu.c). kg_job_watch(NULL, NULL, 0) ends it. */
typedef kg_spawn_tick kg_job_tick;
void kg_job_watch(kg_job_tick fn, void *ud, double period_s);

/* Runs one worker for job. KERNEL: the result goes to *r (its verdict is
 * KG_V_SKIPPED until kg_judge, unless the kernel crashed, hung, was wrong or
 * broke the protocol). LIBRARY: *lib. LIST: *table and *n_table (malloc'd,
 * caller frees). Returns non-zero only for errors that stop the command: a
 * bad candidate file, no GPU, a library path that failed; what was measured
 * before is already in *r or *lib. */
int kg_job_run(const char *exe, const kg_job *job, double timeout_s, kg_result *r, kg_libref *lib,
               kg_table_entry **table, int *n_table, kg_err *err);

/* Stops the Python workers' fork server, if one was started (the CLI calls
 * it before it exits; the server also dies with this process). */
void kg_job_shutdown(void);

/* The same, with the worker started under a wrapper program (argv, NULL-
 * terminated: e.g. compute-sanitizer --tool memcheck ...). */
int kg_job_run_under(const char *const *wrapper, const char *exe, const kg_job *job, double timeout_s,
                     kg_result *r, kg_libref *lib, kg_table_entry **table, int *n_table, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
