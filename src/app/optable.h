/* Option tables: one row an option (its name, what it sets, the values it
 * accepts, the commands that take it) and one parser that every command,
 * kgate batch's included, walks: --name VALUE and --name=VALUE alike, an
 * option another command takes refused naming both, numbers range-checked. */
#ifndef KG_OPTABLE_H
#define KG_OPTABLE_H

#include <stddef.h>

#include "../base/kg.h"

typedef enum kg_opt_kind {
    KG_OPT_FLAG,   /* sets *(int *)dst = lo */
    KG_OPT_STR,    /* *(const char **)dst = the value; choices "a|b" limit it to two words */
    KG_OPT_NUM,    /* *(double *)dst, in [lo, hi] */
    KG_OPT_INT,    /* *(int *)dst, a whole number in [lo, hi] */
    KG_OPT_U64,    /* *(unsigned long long *)dst, a whole number in [lo, hi] */
    KG_OPT_FN,     /* fn(ctx, name, value): a value that is kept or checked its own way */
    KG_OPT_ACTION  /* fn(ctx, name, NULL): a flag that does more than set a value */
} kg_opt_kind;

/* 0, or an exit code with err set. */
typedef int (*kg_opt_fn)(void *ctx, const char *name, const char *value, kg_err *err);

typedef struct kg_optdef {
    const char *name;
    kg_opt_kind kind;
    void *dst;
    double lo, hi;
    const char *choices; /* KG_OPT_STR: "a|b" */
    const char *cmds;    /* the commands that take it, space-separated */
    kg_opt_fn fn;        /* KG_OPT_FN, KG_OPT_ACTION */
} kg_optdef;

/* Whether `cmd` is one of the space-separated words of `list`. */
int kg_opt_takes(const char *list, const char *cmd);

/* A decimal (or, with whole, a whole) number in [lo, hi] from v; the
 * error names opt. */
int kg_opt_number(const char *opt, const char *v, double lo, double hi, int whole, double *out, kg_err *err);

/* The option argv[*i] names, for command cmd, set from its value
 * (argv[*i + 1], taken, unless given inline as --name=value; a flag whose
 * own name holds '=' matches whole). 0, or KG_EXIT_USAGE naming the option
 * and `kgate help CMD`. */
int kg_opt_one(const kg_optdef *t, size_t n, const char *cmd, int argc, char **argv, int *i, void *ctx,
               kg_err *err);

#endif
