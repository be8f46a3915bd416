/* Problems outside the catalog: an operator that a Python candidate brings
 * with itself (kgate.Problem: an input factory, a reference, library paths;
 * a KernelBench problem file is one), registered at run time as a kg_op so
 * that the supervisor, the worker, the verdicts and the reports treat it as
 * they treat a catalog operator.
 *
 * The rule: a problem has one shape (its presets all name it), fixed tensor
 * extents, no scalars and no edge or distribution trials; its inputs and its
 * reference come from the candidate's provider (gpu/provider.h), the
 * reference in fp64 where the model allows; floats are compared by the
 * tolerance rule of their dtype with the reduction doubling, atol scaled by
 * the reference's RMS when that is above 1 (outputs of large sums);
 * integers exactly. Its essential work is what the provider counted (bytes
 * of every input, parameter and output; FLOPs from PyTorch's
 * FlopCounterMode) and says so in `note`.
 *
 * A problem is described in JSON (the list job's table event carries it to
 * the supervisor, every job carries it to its worker), validated strictly,
 * and registered once per process; registering a different problem under a
 * name already taken is refused. */
#ifndef KG_PROBLEM_H
#define KG_PROBLEM_H

#include <cjson/cJSON.h>

#include "op.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_PROBLEM_MAX 8 /* problems one process registers */

typedef struct kg_problem_tensor {
    int rank; /* 0..KG_MAX_RANK */
    int64_t ext[KG_MAX_RANK];
    kg_dtype dtype;
} kg_problem_tensor;

typedef struct kg_problem {
    char name[64]; /* [A-Za-z0-9_.-]+, not a catalog operator's */
    kg_family family;
    int n_in, n_out;
    kg_problem_tensor in[KG_MAX_TENSORS], out[KG_MAX_TENSORS];
    double flops;        /* essential work: FLOPs, */
    double bytes_read;   /* bytes of every input and parameter, */
    double bytes_written; /* bytes of every output */
    kg_unit unit;        /* the roof the FLOPs run on */
    char note[256];      /* how the work and the reference were obtained */
} kg_problem;

/* Parses and validates a problem object; errors name the field. */
int kg_problem_from_json(const cJSON *j, kg_problem *p, kg_err *err);
/* The problem as a JSON object (caller deletes); NULL when out of memory. */
cJSON *kg_problem_to_json(const kg_problem *p);
/* Parses a problem from text (the provider's describe()). */
int kg_problem_parse(const char *text, kg_problem *p, kg_err *err);

/* Registers p as an operator that kg_op_find finds by p->name; *op gets it.
 * Registering an identical problem again returns the first registration. */
int kg_problem_register(const kg_problem *p, const kg_op **op, kg_err *err);
/* The problem behind op, or NULL for a catalog operator. */
const kg_problem *kg_problem_of(const kg_op *op);
/* A registered problem's operator by name, or NULL (kg_op_find asks). */
const kg_op *kg_problem_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif
