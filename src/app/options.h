/* Command-line options of kgate, parsed and validated without a GPU: an
 * unknown command, option, operator, dtype or shape is a usage error
 * (KG_EXIT_USAGE) before anything else happens. */
#ifndef KG_OPTIONS_H
#define KG_OPTIONS_H

#include "../diagnose/diagnose.h"
#include "../catalog/op.h"
#include "../measure/stats.h"
#include "../judge/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_MAX_SHAPES 16

/* --diagnose: never, always (default counters), only for SLOW verdicts,
 * always with the extended counters (the expensive throughput metrics). */
enum { KG_DIAG_OFF, KG_DIAG_ALWAYS, KG_DIAG_AUTO, KG_DIAG_EXTENDED };

typedef struct kg_options {
    const char *command;   /* devices, peaks, ops, check, run, help, version */
    const char *candidate; /* check: PATH or PATH:KERNEL; explain: RESULT.json; compare: A.json */
    const char *second;    /* compare: B.json */
    const char *ledger;    /* compare --ledger: A is its newest suite run on B's GPU */
    const char *inputs[KG_MAX_SHAPES]; /* report: the results files */
    int n_inputs;
    const char *output, *format; /* report: -o FILE (- for stdout), --format html|md|csv */
    double same, regress;  /* compare: the SAME band and the regression threshold (report/compare.h) */
    int torch;             /* check, run: also PyTorch's paths (1 eager, 2 and torch.compile) */
    const char *pin_sha256; /* check: a Python candidate's SHA-256 (64 lowercase hex digits) */
    int budget;            /* tune: at most this many configurations (0: all, up to 4096) */
    const char *knobs[16]; /* tune: --knob KNOB=V[,V...], as given (checked against the space) */
    int n_knobs;
    double time_budget_s;  /* check, run, tune: start no job after this many seconds (0: none) */
    const char *op_name, *dtype_name, *json, *roof;
    const kg_op *op;       /* set when --op was given */
    kg_dtype dtype;
    int have_dtype;
    const char *shape_texts[KG_MAX_SHAPES]; /* --shape, or each of --sizes */
    int n_shapes;
    int all_presets; /* --sizes all: every preset of each selected kernel's operator */
    int hot, memset_flush, trials, device, edge, live, force, help, verify_only;
    int quiet, verbose;    /* check, run, tune: -q (no bar, no table), -v (a line a job on stderr) */
    int suite;             /* run: only each operator's suite dtypes */
    int extra;             /* also check kernels at extra shapes (default on) */
    int sandbox;           /* run workers in supervise/sandbox.h's sandbox */
    int memcheck;          /* one checked call under compute-sanitizer memcheck and racecheck */
    int diagnose;          /* KG_DIAG_*: when to say why a kernel is slow */
    double patched_max_s;  /* --diagnose-patched-max: SASS-patched metrics only for calls this short */
    int lib_cache;         /* --lib-cache: reuse and keep library times (store/lib_cache.h) */
    double lib_cache_age_s; /* --lib-cache-age: how long a kept library time is used */
    kg_diag_params diag;   /* the rules' thresholds (--diag-set NAME=VALUE) */
    const char *from_ncu;  /* explain: counters from an ncu CSV */
    int rules;             /* explain: list the rules and thresholds */
    const char *params[KG_MAX_SCALARS * 2]; /* --param NAME=VALUE, as given */
    int n_params;
    unsigned long long seed;
    double timeout_s;
    kg_stop_cfg stop;
    kg_gate gate;
    const char *server;    /* check --server SOCK: a running kgate serve judges it (app/check_server.c) */
    const char *events;    /* check, run, tune --events PATH: a JSON line a judged kernel (app/check_events.c) */
    int argc;              /* the arguments as given (check --server sends them on) */
    char **argv;
    char cmdline[1024];
} kg_options;

/* --sizes all: appends op's preset names that o's shapes lack (each name
 * once over several operators); KG_EXIT_USAGE past KG_MAX_SHAPES. */
int kg_options_add_presets(kg_options *o, const kg_op *op, kg_err *err);
/* Parses argv (argv[0] is the program). Fills defaults first. */
int kg_options_parse(int argc, char **argv, kg_options *o, kg_err *err);

/* The help text of a command (NULL: the overview). */
const char *kg_usage(const char *command);

#ifdef __cplusplus
}
#endif
#endif
