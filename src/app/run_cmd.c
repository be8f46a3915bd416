/* kgate run: the bundled suite judged live, or, on a machine without a
 * GPU, the recorded run shipped with kgate shown as recorded. */
#include "commands.h"
#include "check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

/* The recorded suite run shipped with kgate (docs/sample-run.json, a
 * `kgate run --json` on an H200), shown where there is no GPU. */
#define SAMPLE_RUN "sample-run.json"

/* The candidates of the bundled suite, shipped with the kgate executable. */
static const char *suite_plugins[] = {"libkgate_bundled.so", "triton/libkgate_triton.so",
                                      "tilelang/libkgate_tilelang.so"};

int kg_cmd_run(const kg_options *o)
{
    kg_err err = {0, ""};
    char exe[PATH_MAX], path[PATH_MAX + 64];
    kg_check_targets tg = {0, 0, NULL};
    int n;
    kg_cmds_say_how(o);
    kg_report rep;
    kg_err derr = {0, ""};
    if (kg_check_json_path(o, &err))
        return kg_cmds_fail(&err);
    kg_self_exe(exe, sizeof exe);
    if (kg_device_count(&n, &derr)) {
        cudaGetLastError();
        char rec[PATH_MAX];
        if (o->live || kg_shipped(exe, KG_SHIP_DATA, SAMPLE_RUN, rec, sizeof rec)) {
            kg_err_set(&err, KG_EXIT_ENV,
                       "%s%s: a live run needs an NVIDIA GPU with its driver "
                       "(sm_90a kernels: H100/H200)", derr.msg, o->live ? "" : ", and no recorded " SAMPLE_RUN
                       " shipped with kgate");
            return kg_cmds_fail(&err);
        }
        if (kg_report_read_json(rec, &rep, &err))
            return kg_cmds_fail(&err);
        printf("No CUDA GPU on this machine: showing a RECORDED run shipped with kgate, not a live one.\n"
               "  file:   %s\n  date:   %s\n  commit: %s\n  device: %s\n  command: %s\n"
               "A live run needs an NVIDIA H100/H200 (sm_90a) with its driver; then `make run`.\n\n",
               rec, rep.date, rep.commit, rep.device, rep.command);
        kg_report_print(&rep, stdout, 1);
        printf("\nThat was the RECORDED run of %s on %s (%s), not a live one.\n", rep.date, rep.device, rec);
        /* --json still written: that run's results, marked as recorded */
        snprintf(rep.recorded, sizeof rep.recorded, "%s", rec);
        if (o->json && kg_report_write_json(&rep, o->json, &err)) {
            kg_report_free(&rep);
            return kg_cmds_fail(&err);
        }
        kg_report_free(&rep);
        return 0;
    }
    for (size_t i = 0; i < sizeof suite_plugins / sizeof suite_plugins[0]; i++) {
        if (kg_shipped(exe, KG_SHIP_CANDIDATE, suite_plugins[i], path, sizeof path)) {
            if (i == 0) {
                kg_err_set(&err, KG_EXIT_ENV, "%s is missing: rebuild (or reinstall) kgate", path);
                free(tg.v);
                return kg_cmds_fail(&err);
            }
            fprintf(stderr, "kgate: %s not built: running without it\n", path);
            continue;
        }
        if (kg_check_collect(o, exe, path, &tg, &err)) {
            free(tg.v);
            return kg_cmds_fail(&err);
        }
    }
    if (kg_check_events_open(o, &err)) {
        free(tg.v);
        return kg_cmds_fail(&err);
    }
    int rc = kg_check_measure(o, exe, &tg);
    free(tg.v);
    kg_check_events_close();
    return rc;
}
