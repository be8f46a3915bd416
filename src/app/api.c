/* The public API of include/kgate/kgate.h: the worker entry, start-up, and
 * the command line dispatched to the commands of src/app. */
#include "kgate/kgate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/kg.h"
#include "../gpu/worker.h"
#include "../supervise/job.h"
#include "batch_cmd.h"
#include "serve_cmd.h"
#include "commands.h"
#include "explain.h"
#include "options.h"
#include "pyforward.h"
#include "rejudge_cmd.h"
#include "results_cmds.h"

void kgate_worker(int argc, char **argv)
{
    /* its done event sent, the worker ends without tearing its CUDA context
     * down piece by piece: the driver frees it with the process (as the
     * Python worker does with os._exit), except where
     * kg_worker_exits_normally says otherwise */
    int rc = kg_worker_main(argc, argv);
    if (kg_worker_exits_normally(argc, argv))
        exit(rc);
    fflush(NULL);
    _exit(rc);
}

void kgate_init(void)
{
    atexit(kg_job_shutdown); /* the Python workers' fork server, if one was started or taken */
    if (getenv("KGATE_ZYGOTE_HANDED")) {
        /* kgate batch started this job's Python fork server before the exec:
         * taken over now, before anything forks (job.h) */
        kg_job_take_zygote();
    }
}

/* The commands that take kg_options, by name; `run` is the default. */
static const struct {
    const char *name;
    int (*run)(const kg_options *o);
    int catch_stops; /* a measuring command: SIGINT/SIGTERM keep what was measured */
} commands[] = {
    {"devices", kg_cmd_devices, 0}, {"peaks", kg_cmd_peaks, 0},     {"ops", kg_cmd_ops, 0},
    {"check", kg_cmd_check, 1},     {"tune", kg_cmd_tune, 1},       {"explain", kg_cmd_explain, 0},
    {"compare", kg_cmd_compare, 0}, {"report", kg_cmd_report, 0},   {"rejudge", kg_cmd_rejudge, 0},
    {"run", kg_cmd_run, 1},         {"trajectory", kg_cmd_trajectory, 0},
};

/* A command of kg_options: parsed once, then run. */
static int run_options(int argc, char **argv)
{
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
    size_t n = sizeof commands / sizeof commands[0], i = 0;
    while (i < n - 1 && strcmp(o.command, commands[i].name) != 0)
        i++; /* an unknown command was refused by kg_options_parse: the rest is run */
    if (commands[i].catch_stops)
        kg_catch_stop_signals(1);
    return commands[i].run(&o);
}

int kgate_main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "__health") == 0) {
        kg_catch_stop_signals(1); /* a stop while it waits for the GPU's lock ends the wait (exit 7) */
        return kg_cmd_health(argc - 1, argv + 1);
    }
    if (argc > 1 && strcmp(argv[1], "batch") == 0)
        return kg_cmd_batch(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "serve") == 0)
        return kg_cmd_serve(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "kernelbench") == 0)
        return kg_cmd_python(argc - 1, argv + 1);
    return run_options(argc, argv);
}
