/* The operator catalog: what an operator is, as kgate needs to know it.
 * Each operator is one `const kg_op` in src/ops/<name>.c (its signature,
 * shapes, generator ranges, tolerance rule, work model, CPU fp64 reference,
 * GPU fp64 reference and library baseline); the build collects every file in
 * src/ops/ into the registry, so adding an operator touches that file and its
 * kernels in kernels/<name>.cu. */
#ifndef KG_OP_H
#define KG_OP_H

#include <kgate/plugin.h>

#include "kg.h"
#include "roofline.h"
#include "tolerance.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_MAX_TENSORS 4
#define KG_MAX_PRESETS 6

/* A tensor of the signature: its extents are shape dims, by index. */
typedef struct kg_tensor_spec {
    const char *name;
    int rank;
    int dim[3];
    double lo, hi; /* inputs: uniform generator range */
} kg_tensor_spec;

typedef struct kg_preset {
    const char *name;
    kg_shape shape;
} kg_preset;

/* GPU fp64 reference: writes output 0 of the signature as doubles to `ref`. */
typedef int (*kg_reference_fn)(const DLTensor *in, int n_in, double *ref,
                               const kgate_params *p, kgate_stream s);
/* CPU fp64 reference over double arrays, for small shapes and tests. */
typedef void (*kg_cpu_reference_fn)(const double *const *in, const kg_shape *shape,
                                    const kgate_params *p, double *out);

struct kg_baseline; /* src/gpu/baseline.h */

typedef struct kg_op {
    const char *name;
    const char *summary;
    const char *dims;  /* extent names, e.g. "MxNxK" */
    int n_dims;
    kg_dtype dtypes[4];
    int n_dtypes;
    kg_preset presets[KG_MAX_PRESETS];
    int n_presets;
    int n_inputs, n_outputs;
    kg_tensor_spec in[KG_MAX_TENSORS], out[KG_MAX_TENSORS];
    int reduction;    /* doubles the tolerance */
    kg_unit unit;     /* compute roof the FLOPs run on */
    double eps;       /* default kgate_params.eps */
    int min_rows;     /* edge cases need this many rows of input 0 */
    void (*work)(const kg_shape *s, kg_dtype dt, kg_work *w);
    kg_cpu_reference_fn cpu_reference;
    kg_reference_fn reference;
    const struct kg_baseline *baseline;
    const char *fallback; /* bundled kernel that stands in when the baseline is unsupported */
    const char *edge_semantics; /* what NaN/Inf/denormal/equal rows must give */
} kg_op;

/* The registry (generated from src/ops/ by the build). NULL-terminated. */
extern const kg_op *const kg_ops[];

const kg_op *kg_op_find(const char *name);
int kg_op_has_dtype(const kg_op *op, kg_dtype dt);
const kg_preset *kg_preset_find(const kg_op *op, const char *name);

/* Parses a shape for op: a preset name, "AxBxC" with op->n_dims extents, or
 * one number N meaning N for every extent. Errors name the expected form. */
int kg_shape_parse(const kg_op *op, const char *text, kg_shape *out, kg_err *err);

/* Extents of a signature tensor at a shape; returns the element count. */
int64_t kg_tensor_extents(const kg_tensor_spec *t, const kg_shape *s, int64_t *ext);

/* Rows and columns of input 0 viewed as a matrix (last extent = columns). */
void kg_input0_matrix(const kg_op *op, const kg_shape *s, int64_t *rows, int64_t *cols);

#ifdef __cplusplus
}
#endif
#endif
