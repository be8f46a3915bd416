/* kgate: the command-line front end. Parses options and calls the library. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../app/batch_cmd.h"
#include "../app/commands.h"
#include "../app/explain.h"
#include "../app/pyforward.h"
#include "../app/rejudge_cmd.h"
#include "../app/results_cmds.h"
#include "../supervise/job.h"
#include "../base/kg.h"
#include "../app/options.h"
#include "../gpu/worker.h"

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "__worker") == 0) {
        /* its done event sent, the worker ends without tearing its CUDA
         * context down piece by piece: the driver frees it with the process
         * (as the Python worker does with os._exit), except where
         * kg_worker_exits_normally says otherwise */
        int rc = kg_worker_main(argc - 2, argv + 2);
        if (kg_worker_exits_normally(argc - 2, argv + 2))
            return rc;
        fflush(NULL);
        _exit(rc);
    }
    atexit(kg_job_shutdown); /* the Python workers' fork server, if one was started or taken */
    if (getenv("KGATE_ZYGOTE_HANDED")) {
        /* kgate batch started this job's Python fork server before the exec:
         * taken over now, before anything forks (job.h) */
        kg_job_take_zygote();
    }
    if (argc > 1 && strcmp(argv[1], "__health") == 0) {
        kg_catch_stop_signals(1); /* a stop while it waits for the GPU's lock ends the wait (exit 7) */
        return kg_cmd_health(argc - 1, argv + 1);
    }
    if (argc > 1 && strcmp(argv[1], "batch") == 0)
        return kg_cmd_batch(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "kernelbench") == 0)
        return kg_cmd_python(argc - 1, argv + 1);
    kg_options o;
    kg_err err = {0, ""};
    if (kg_options_parse(argc, argv, &o, &err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    /* --json -: the JSON alone on standard output, the rest on standard error */
    if (o.json && strcmp(o.json, "-") == 0 && !o.help && kg_json_to_stdout(&err)) {
        fprintf(stderr, "kgate: %s\n", err.msg);
        return err.code;
    }
    if (argc < 2) { /* no command: the overview, as a usage error */
        fputs(kg_usage(NULL), stderr);
        return KG_EXIT_USAGE;
    }
    if (strcmp(o.command, "help") == 0 || o.help) {
        fputs(kg_usage(strcmp(o.command, "help") == 0 ? o.candidate : o.command), stdout);
        return 0;
    }
    if (strcmp(o.command, "version") == 0) {
        printf("kgate %s\n", kg_version());
        return 0;
    }
    if (strcmp(o.command, "devices") == 0)
        return kg_cmd_devices(&o);
    if (strcmp(o.command, "peaks") == 0)
        return kg_cmd_peaks(&o);
    if (strcmp(o.command, "ops") == 0)
        return kg_cmd_ops(&o);
    if (strcmp(o.command, "check") == 0 || strcmp(o.command, "run") == 0 || strcmp(o.command, "tune") == 0) {
        kg_catch_stop_signals(1);
    }
    if (strcmp(o.command, "check") == 0)
        return kg_cmd_check(&o);
    if (strcmp(o.command, "tune") == 0)
        return kg_cmd_tune(&o);
    if (strcmp(o.command, "explain") == 0)
        return kg_cmd_explain(&o);
    if (strcmp(o.command, "compare") == 0)
        return kg_cmd_compare(&o);
    if (strcmp(o.command, "report") == 0)
        return kg_cmd_report(&o);
    if (strcmp(o.command, "rejudge") == 0)
        return kg_cmd_rejudge(&o);
    return kg_cmd_run(&o);
}
