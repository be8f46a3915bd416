/* A report: what ran where, the roofs, and the judged results; printed as a
 * table for people and written as JSON (docs/results.md) for machines. */
#ifndef KG_REPORT_H
#define KG_REPORT_H

#include <stdio.h>

#include "../catalog/op.h"
#include "../judge/result.h"
#include "../catalog/roofline.h"
#include "../judge/verdict.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_report {
    char command[1024];
    char commit[64];
    char date[32]; /* ISO 8601 UTC */
    char device[256], device_uuid[64], driver[32];
    int sm_count, cc_major, cc_minor;
    kg_roofs roofs;
    kg_gate gate;
    unsigned long long shapes_seed; /* the extra shapes were drawn from it */
    char incomplete[256]; /* why some planned jobs did not run (a time budget, a stop), or "" */
    char recorded[512];   /* a recorded run shown in place of a live one (kgate run without a GPU): its file, or "" */
    int n, cap;
    kg_result *results;
} kg_report;

void kg_report_init(kg_report *r);
void kg_report_free(kg_report *r);
/* Appends a copy of res; returns a pointer to the stored copy or NULL. */
kg_result *kg_report_add(kg_report *r, const kg_result *res);
/* A result's exit code: its verdict's (judge/verdict.h), but 0 for a
 * --verify-only result that passed. */
int kg_result_exit_code(const kg_result *r);
/* Exit code for the report: the worst result's. */
int kg_report_exit_code(const kg_report *r);

/* Human-readable table, the reason for every verdict and, with `summary`
 * (kgate run), the per-family medians of E_lib, E_best and rho (the paper's
 * Table I) and the passes-but-slow list: correct kernels judged SLOW. */
void kg_report_print(const kg_report *r, FILE *f, int summary);

/* The diagnosis of a result, if it has one: the top cause with its
 * evidence and fix, the others' ids and scores (all: every cause in full),
 * and what could not be collected. */
void kg_report_print_diagnosis(const kg_result *x, const kg_gate *g, FILE *f, int all);

/* Per-family medians over the correct, timed results (OK or SLOW). */
typedef struct kg_family_row {
    int n, n_slow;
    double e_lib, e_best, rho; /* medians; NAN when no result has one */
} kg_family_row;
void kg_report_families(const kg_report *r, kg_family_row rows[KG_FAMILY_COUNT]);

/* Writes JSON atomically (temporary file, then rename). KG_EXIT_IO on error. */
int kg_report_write_json(const kg_report *r, const char *path, kg_err *err);
/* Serializes to a malloc'd string (caller frees). */
char *kg_report_to_json(const kg_report *r);
/* One result as its entry of the document's "results", on one line
 * (malloc'd; NULL out of memory): kgate check --events writes it. */
char *kg_result_to_json(const kg_result *x);
/* Reads a report written by kg_report_write_json (schema 2, or 1). */
int kg_report_read_json(const char *path, kg_report *r, kg_err *err);
/* The same from text; `path` names it in errors. Any text is safe to give. */
int kg_report_from_json(const char *text, const char *path, kg_report *r, kg_err *err);

/* Whether text begins as a kgate batch results file (or a file of kgate
 * serve's answers): its first line has schema kgate.batch/1. */
int kg_report_is_batch(const char *text);

/* One line of such a file: its id, exit code, error, and the check's
 * results when it carries them; or a progress line of kgate serve (one
 * kernel's result while the request runs, docs/serve.md), which readers
 * skip: its answer carries the same result. */
typedef struct kg_batch_answer {
    int event;           /* a progress line: nothing else is read */
    char id[160];
    int code;            /* "exit"; -1 when absent */
    char error[320];     /* "error", cleaned; "" for none */
    int has_check;       /* rep holds the check's results (free it with kg_report_free) */
    kg_report rep;
    int doc_code;        /* a check document that did not read: its code and why ("" for none) */
    char doc_error[320];
} kg_batch_answer;

/* Reads line n of the file at path (they name it in errors). 1 for text
 * that is not JSON (a torn line), 0 for a line of schema kgate.batch/1,
 * else KG_EXIT_IO naming the schema it has. */
int kg_report_answer(const char *line, const char *path, int n, kg_batch_answer *a, kg_err *err);

/* Appends src's results to dst, and src's header where dst has none; src's
 * diagnoses move to dst and src's array is freed. KG_EXIT_ENV out of memory. */
int kg_report_merge(kg_report *dst, kg_report *src, kg_err *err);

/* A result's flags as "noisy,baseline-weak" ("" for none). */
void kg_flags_text(unsigned flags, char *buf, size_t size);

/* Formats seconds as "123.4 us" etc. */
const char *kg_fmt_time(double s, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
