/* What kgate's commands share: the error line, -q and -v and the progress
 * bar, paths in reports made relative, the device opened without a
 * context, and a report's header. */
#include "cmds_int.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../catalog/arch.h"
#include "kgate_build.h"

int kg_cmds_fail(const kg_err *e)
{
    fprintf(stderr, "kgate: %s\n", e->msg);
    return e->code ? e->code : KG_EXIT_ENV;
}

void kg_cmds_iso_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* -q: no bar; -v: a line a job (set by check, run and tune) */
static int quiet, verbose;

void kg_cmds_say_how(const kg_options *o)
{
    quiet = o->quiet;
    verbose = o->verbose;
}

int kg_cmds_progress_on(void) { return !quiet && !verbose && isatty(2); }

/* -v given (kg_cmds_get_roofs then says that it measures the roofs) */
int kg_cmds_verbose(void) { return verbose; }

/* A progress bar on stderr when it is a terminal; with -v, a line as each
 * job starts instead. */
void kg_cmds_progress(int done, int total, const char *what)
{
    if (verbose && what && done < total) {
        fprintf(stderr, "kgate: [%d/%d] %.200s\n", done + 1, total, what);
        return;
    }
    if (!kg_cmds_progress_on() || total <= 0)
        return;
    int w = 30, fill = (int)((double)done / total * w);
    fprintf(stderr, "\r\033[K[");
    for (int i = 0; i < w; i++)
        fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d %.60s", done, total, what ? what : "");
    if (done >= total)
        fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* A path below the working directory, made relative to it (reports then
 * name no machine's directories). */
const char *kg_cmds_relative(const char *path)
{
    static char cwd[PATH_MAX];
    if (!cwd[0] && !getcwd(cwd, sizeof cwd))
        return path;
    size_t n = strlen(cwd);
    if (strncmp(path, cwd, n) == 0 && path[n] == '/')
        return path + n + 1;
    return path;
}

/* The device's facts, without a CUDA context: the workers do the GPU work.
 * A context made here was part of the 0.24-0.26 s this took and of the
 * 0.20 s exit of a check whose library times came from --lib-cache, a
 * 1.24 s verdict (H200: docs/scale.md). Only measuring the roofs makes one
 * (use_device). A GPU this build has no code for is refused (catalog/arch.h). */
int kg_cmds_open_device(const kg_options *o, kg_device_info *d, kg_err *err)
{
    int n;
    if (kg_device_count(&n, err))
        return err->code;
    if (o->device >= n)
        return kg_err_set(err, KG_EXIT_USAGE, "--device %d: only %d device(s)", o->device, n);
    if (kg_device_query(o->device, d, err))
        return err->code;
    return kg_arch_check_gpu(d->index, d->name, d->cc_major * 10 + d->cc_minor, kg_arch_build(), err);
}

void kg_cmds_report_header(kg_report *rep, const kg_options *o, const kg_device_info *d)
{
    snprintf(rep->command, sizeof rep->command, "%s", o->cmdline);
    snprintf(rep->commit, sizeof rep->commit, "%s", KG_COMMIT);
    kg_cmds_iso_now(rep->date, sizeof rep->date);
    snprintf(rep->device, sizeof rep->device, "%s", d->name);
    snprintf(rep->device_uuid, sizeof rep->device_uuid, "%s", d->uuid);
    snprintf(rep->driver, sizeof rep->driver, "%s", d->nvml_driver);
    rep->sm_count = d->sm_count;
    rep->cc_major = d->cc_major;
    rep->cc_minor = d->cc_minor;
    rep->gate = o->gate;
}
