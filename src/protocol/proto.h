/* The worker protocol, version 2 ("kgate.worker/2"): the contract between
 * kgate (the supervisor) and `kgate __worker`, the process that loads a
 * candidate. docs/worker.md is its prose form; tests/test_proto.c its spec.
 *
 * The supervisor starts `kgate __worker --fd N`, writes one job (a JSON
 * object, at most KG_JOB_MAX bytes) on the worker's standard input and
 * closes it. The worker answers with events, one JSON object a line, on
 * file descriptor N, and exits. The supervisor trusts nothing in them: every
 * line is parsed by kg_event_parse, which checks the kind, the type and
 * length of every field and the subject; a line that fails is a protocol
 * violation and ends the job (a candidate writing on the channel cannot do
 * more than that).
 *
 * Plain C; no GPU. */
#ifndef KG_PROTO_H
#define KG_PROTO_H

#include <limits.h>

#include "../diagnose/diag.h"
#include "../measure/flush.h"
#include "../catalog/op.h"
#include "../measure/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_PROTO "kgate.worker/2"
#define KG_JOB_MAX 16384    /* bytes of a job */
#define KG_PATCHED_MAX_DEFAULT 0.1 /* s: --diagnose-patched-max's default (docs/diagnosis.md) */
/* How a library job's `best` subject event without a path begins when the
 * bundled candidate did not open (a failure of that run, not a fact about
 * the operator: store/lib_cache.h keeps no such measurement). */
#define KG_BUNDLED_UNLOADED "the bundled candidate did not load"
#define KG_TABLE_MAX 1024   /* kernels in one table event */
/* Bytes of one event line. A table of KG_TABLE_MAX kernels is the longest
 * event (tests/test_proto.c largest_table: 1024 entries with every field
 * at its longest take about 1 MB) and may take up to KG_EVENT_MAX, the
 * supervisor's line buffer (the worker refuses a longer table as a bad
 * candidate); every other event is refused past KG_EVENT_LINE_MAX. */
#define KG_EVENT_MAX (4 << 20)
#define KG_EVENT_LINE_MAX 65536
#define KG_MAX_EXTRA 4      /* extra shapes of one kernel job */

typedef enum kg_job_mode {
    KG_JOB_LIST,    /* load the candidate, validate it, report its table */
    KG_JOB_KERNEL,  /* check and time one kernel */
    KG_JOB_LIBRARY, /* check and time the operator's library paths and the bundled fast variant */
} kg_job_mode;


/* One job. Strings are copied in; the scalar names point at the operator's. */
typedef struct kg_job {
    kg_job_mode mode;
    char plugin[PATH_MAX]; /* LIST, KERNEL: the candidate; LIBRARY: the bundled candidate, or "" */
    char kernel[96];       /* KERNEL */
    const kg_op *op;       /* KERNEL, LIBRARY */
    kg_types types;
    kg_shape shape;
    kg_shape extra[KG_MAX_EXTRA]; /* KERNEL: shapes checked, not timed */
    int n_extra;
    kg_scalars scalars;    /* the values of the operator's scalars */
    kg_flush flush;
    int hot;               /* rotate input sets that fit in L2 (implies no flush) */
    int trials, edge, device, verify_only;
    int torch;             /* LIBRARY: also PyTorch's paths: 1 eager, 2 eager and torch.compile
                            * (the worker is then the Python host) */
    int n_config;          /* KERNEL: a configuration of the kernel's space (kgate tune), or 0 */
    int64_t config[16];
    int diagnose;          /* KERNEL: after timing, collect the kernel's facts: 1 the default
                            * counters, 2 the extended ones (gpu/diagnose.c) */
    double patched_max_s;  /* diagnose: leave the SASS-patched metrics out when one call of the
                            * kernel takes longer than this (s; default 0.1) */
    char nonce[40];        /* a secret the worker's `done` and `error` must echo (random per job) */
    int sandbox;           /* apply supervise/sandbox.h before loading anything */
    char scratch[PATH_MAX]; /* the sandbox's scratch directory (made by the supervisor) */
    double budget_s;       /* the supervisor's time limit (the sandbox's CPU limit) */
    unsigned long long seed;
    kg_stop_cfg stop;
} kg_job;

/* Defaults: 3 trials, edges on, seed 1, read flush, the stop rule's defaults,
 * KG_PATCHED_MAX_DEFAULT. */
void kg_job_defaults(kg_job *j);
/* Serializes a job; malloc'd (caller frees), NULL when out of memory. */
char *kg_job_to_json(const kg_job *j);
/* Parses and validates a job (KG_EXIT_USAGE with the field named). */
int kg_job_from_json(const char *text, kg_job *j, kg_err *err);

/* Event kinds. X-macro: enum, wire name. */
#define KG_EVENTS(X)              \
    X(HELLO, "hello")             \
    X(TABLE, "table")             \
    X(SUBJECT, "subject")         \
    X(UNSUPPORTED, "unsupported") \
    X(CHECK, "check")             \
    X(SUM, "sum")                 \
    X(TIMING, "timing")           \
    X(KERNEL, "kernel")           \
    X(DIAG, "diag")               \
    X(FAIL, "fail")               \
    X(ERROR, "error")             \
    X(DONE, "done")

typedef enum kg_ev_kind {
#define X(e, s) KG_EV_##e,
    KG_EVENTS(X)
#undef X
    KG_EV_COUNT
} kg_ev_kind;

/* What an event is about: the kernel under test, one library path (named
 * in `path`), or the bundled fast variant. */
typedef enum kg_subject { KG_SUBJ_NONE, KG_SUBJ_KERNEL, KG_SUBJ_LIB, KG_SUBJ_BEST } kg_subject;

/* One kernel of a candidate's table, as the worker validated it. */
typedef struct kg_table_entry {
    char name[96], op[64], dtype[8], index_dtype[8];
    char summary[256], scalars[128];
    char space[1024]; /* the kernel's configuration space (catalog/tune.h), or "" */
} kg_table_entry;

/* One event. Which fields are set depends on the kind (docs/worker.md). */
typedef struct kg_event {
    kg_ev_kind kind;
    kg_subject subject;
    char path[40];      /* LIB: the library path; SUBJECT(best): the kernel */
    char name[48];      /* SUM: the summary name */
    char unit[12];      /* SUM: its unit ("s", "B", "" for a ratio), as the worker knows it */
    char what[32];      /* CHECK: "trial 1", "edge cases", "after timing" */
    char stop[16];      /* TIMING: why sampling stopped */
    char fail_kind[16]; /* FAIL: "incorrect" or "crash" */
    char device[128];   /* HELLO */
    char text[1024];    /* FAIL, ERROR, UNSUPPORTED: msg; CHECK: desc; TIMING, SUBJECT, DIAG: note */
    double value;       /* SUM */
    double rel_l2, max_abs_err; /* CHECK (NaN when absent) */
    int pass, mutated;  /* CHECK */
    int escaped, throttled; /* TIMING */
    int code;           /* ERROR, DONE */
    int unsupported;    /* DONE: the kernel declared the job's shape unsupported (supports()) */
    long pid;           /* HELLO */
    char nonce[40];     /* DONE, ERROR: the job's nonce */
    kg_table_entry *entries; /* TABLE (malloc'd; kg_event_free) */
    int n_entries;
    kg_kfacts *kf;      /* KERNEL: one kernel's facts (malloc'd; kg_event_free) */
    struct kg_problem *problem; /* TABLE: the candidate's problem outside the catalog, or NULL
                                 * (malloc'd; kg_event_free; registered when parsed) */
    int passes, launches; /* DIAG: profiler passes, kernel launches of the profiled call */
    double busy_s, wall_s; /* DIAG: summed kernel time of that call, wall time of the diagnosis */
} kg_event;

const char *kg_event_kind_name(kg_ev_kind k);
/* Serializes an event as one line (no newline); malloc'd. */
char *kg_event_to_json(const kg_event *e);
/* Parses and validates one line. A violation is KG_EXIT_FAIL with a message
 * naming what was wrong. On success the caller owns e->entries. */
int kg_event_parse(const char *line, kg_event *e, kg_err *err);
void kg_event_free(kg_event *e);

#ifdef __cplusplus
}
#endif
#endif
