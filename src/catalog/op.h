/* The operator catalog: what an operator is, as kgate needs to know it.
 *
 * Each operator has one home, src/ops/<name>.c (the descriptor: signature,
 * scalars, shapes, generators, tolerance rule, work model, CPU fp64
 * reference) and src/ops/<name>.cu beside it (the GPU fp64 reference and,
 * when the operator needs them, its special edge inputs); its variants live
 * in kernels/<name>.cu. The build collects every .c file in src/ops/ into the
 * registry and every .cu file in kernels/ into the bundled candidate;
 * docs/adding-an-operator.md lists every part an operator needs, and
 * tests/test_op_parts.c checks that each registered operator has them.
 *
 * The rule for an operator author:
 *   - the signature lists every tensor with its extents as shape dimensions,
 *     its element type (the kernel's data dtype, the kernel's index dtype, or
 *     a fixed int64), and for inputs how values are drawn;
 *   - every output is compared: floats by the tolerance rule of
 *     catalog/tolerance.h, integer outputs exactly (KG_CMP_ARG: an index whose
 *     input value equals the reference value, the tie rule of argmax);
 *   - the GPU reference writes every output as fp64 and must agree with the
 *     CPU reference (tests/gpu/gpu_references.sh checks this at small shapes,
 *     edge rows included);
 *   - scalars the result depends on are `required`: a kernel must say it
 *     reads them, and one trial uses their `alt` value;
 *   - when extents depend on several dims (a convolution's output size on
 *     its stride and padding), everything they depend on is in the shape: a
 *     check_shape hook says which shapes are valid (one line for a bad one,
 *     a repair for the random extra shapes), a tensor's derive() computes
 *     its extents, and scalars a kernel must learn from the shape are bound
 *     to it (bound_extent). src/ops/conv2d.c is the example. */
#ifndef KG_OP_H
#define KG_OP_H

#include <kgate/plugin.h>

#include "../base/kg.h"
#include "roofline.h"
#include "tolerance.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KG_MAX_TENSORS 4
#define KG_MAX_RANK 6
#define KG_MAX_SCALARS 4
#define KG_MAX_PRESETS 8
#define KG_MAX_BASELINES 4

/* The element type of a signature tensor. */
typedef enum kg_tclass {
    KG_T_DATA,  /* the kernel's dtype (fp16, bf16, fp32) */
    KG_T_INDEX, /* the kernel's index dtype (int32 or int64) */
    KG_T_I64,   /* always int64 (argmax output, cross-entropy targets) */
} kg_tclass;

/* How an input's values are drawn (each trial with a fresh seed). */
typedef enum kg_gen {
    KG_GEN_UNIFORM, /* uniform in [lo, hi) */
    KG_GEN_INDEX,   /* whole numbers uniform in [0, shape.d[range_dim]) */
} kg_gen;

/* Input distributions beyond the uniform range, each drawn in one trial of
 * every check of an operator that lists it (op->dists). They expose
 * numerical shortcuts that zero-mean uniform data hides. For input 0, with
 * its range [lo, hi):
 *   offset  U(lo, hi) + 16 (hi - lo): a large common offset (mean >> std),
 *           the E[x^2] - E[x]^2 cancellation and low-precision accumulators
 *   wide    sign * m * 2^U(-8, 2), m = max(|lo|, |hi|) / 4: a wide dynamic
 *           range, log-uniform magnitudes
 *   large   U(lo, hi) scaled to magnitudes up to 16384: an exp without
 *           max-subtraction overflows (in fp32 past 88), while x * log2(e)
 *           stays finite in fp32 (a first version went to half of fp32's
 *           largest value, where correct kernels that scale by log2(e)
 *           overflow: a test of the data, not of the kernel)
 *   sorted  each row ascending: lo + (hi - lo) f^2, f = (col + u) / cols
 *           (skewed: a symmetric range would give row means near 0, whose
 *           relative error no accumulator can bound)
 *   blocks  each row in constant runs of 16 columns (ties, equal values) */
#define KG_DISTS(X)               \
    X(UNIFORM, "uniform")         \
    X(OFFSET, "offset")           \
    X(WIDE, "wide")               \
    X(LARGE, "large")             \
    X(SORTED, "sorted")           \
    X(BLOCKS, "blocks")

typedef enum kg_dist {
#define X(e, s) KG_DIST_##e,
    KG_DISTS(X)
#undef X
    KG_DIST_COUNT
} kg_dist;
#define KG_D(e) (1u << KG_DIST_##e)
const char *kg_dist_name(kg_dist d);

/* How an output is compared with its fp64 reference. */
typedef enum kg_cmpkind {
    KG_CMP_CLOSE, /* the tolerance rule (catalog/tolerance.h) */
    KG_CMP_ARG, /* an index into the last extent of input 0, one per row: it
                   passes when 0 <= i < cols and input0[row, i] equals the
                   reference value of that row (NaN matches NaN): any index of
                   a tied maximum is right */
} kg_cmpkind;

/* A tensor of the signature: its extents are shape dims, by index. */
typedef struct kg_tensor_spec {
    const char *name;
    int rank;
    int dim[KG_MAX_RANK];
    kg_tclass type;
    kg_gen gen;      /* inputs */
    double lo, hi;   /* inputs, KG_GEN_UNIFORM */
    int range_dim;   /* inputs, KG_GEN_INDEX */
    kg_cmpkind cmp;  /* outputs */
    int fixed;       /* extents are ext[], not shape dims (problems outside the catalog) */
    int64_t ext[KG_MAX_RANK];
    /* Extents that are functions of several shape dims (a convolution's
     * output height P = (H + 2 PAD - R) / STRIDE + 1, its filter's C/GROUPS):
     * when set, kg_tensor_extents takes all of them from derive() and dim[]
     * is unused; derived_names names them for `kgate ops` ("N,K,P,Q").
     * derive() is called only on shapes that passed kg_shape_check. */
    void (*derive)(const kg_shape *s, int64_t *ext);
    const char *derived_names;
} kg_tensor_spec;

/* A named scalar. `required`: the result depends on it, so a kernel must
 * declare that it reads it, and the second trial uses `alt` instead of
 * `def` (catching a kernel that hard-codes the default). */
typedef struct kg_scalar_spec {
    const char *name;
    double def, alt;
    int required;
    int integer; /* must be a whole number */
    const char *doc;
} kg_scalar_spec;

typedef struct kg_preset {
    const char *name;
    kg_shape shape;
} kg_preset;

/* The operator families of the paper's Table I. */
#define KG_FAMILIES(X)                                 \
    X(GEMM, "gemm")                                    \
    X(ATTENTION, "attention")                          \
    X(CONVOLUTION, "convolution")                      \
    X(NORMALIZATION, "normalization")                  \
    X(ELEMENTWISE, "element-wise/reduction")

typedef enum kg_family {
#define X(e, s) KG_FAMILY_##e,
    KG_FAMILIES(X)
#undef X
    KG_FAMILY_COUNT
} kg_family;
const char *kg_family_name(kg_family f);

/* A worked example the CPU reference must reproduce (tests/test_catalog.c
 * runs every operator's): a tiny shape, every input, and every expected
 * output (NaN expects NaN), with the operator's default scalars. */
typedef struct kg_example {
    kg_shape shape;
    const double *in[KG_MAX_TENSORS];
    const double *out[KG_MAX_TENSORS];
} kg_example;

/* The element types of one kernel: data and index. */
typedef struct kg_types {
    kg_dtype data;
    kg_dtype index; /* KG_I32 or KG_I64 */
} kg_types;

/* GPU fp64 reference: writes every output of the signature as doubles,
 * ref[o] holding numel(output o) values. Enqueued on s. */
typedef int (*kg_reference_fn)(const DLTensor *in, int n_in, double *const *ref,
                               const kgate_params *p, kgate_stream s);
/* CPU fp64 reference over double arrays (index inputs as whole numbers),
 * for small shapes and tests. */
typedef void (*kg_cpu_reference_fn)(const double *const *in, const kg_shape *shape,
                                    const kgate_params *p, double *const *out);
/* Special input values an operator needs in every check (for example
 * targets equal to the call's ignore_index): called after the inputs of
 * every check are generated, and after the generic edge planting in the
 * edge check, with that call's scalars. Returns 0 or a CUDA error code. */
typedef int (*kg_prepare_fn)(DLTensor *in, int n_in, const kg_shape *shape,
                             const kgate_params *p, kgate_stream s);

/* A bundled variant whose code needs more than the build's least GPU: the
 * Hopper variants' wgmma and TMA are sm_90a's alone (catalog/arch.h checks it
 * against the device; kgate lists the variant as unavailable elsewhere). */
#define KG_MAX_NEEDS 2
typedef struct kg_variant_need {
    const char *variant; /* "v3": the bundled kernels <op>_v3_<dtype> */
    const char *arch;    /* the code they need, as KG_CUDA_ARCHS names it: "90a" */
    const char *uses;    /* what in them needs it: "wgmma, TMA" */
} kg_variant_need;

typedef struct kg_op {
    const char *name;
    const char *summary;
    kg_family family;
    const char *dims;  /* extent names, e.g. "MxNxK" */
    int n_dims;
    kg_dtype dtypes[4]; /* data dtypes it supports */
    int n_dtypes;
    int n_suite_dtypes; /* the first n are what `kgate run` measures (0: 1) */
    kg_preset presets[KG_MAX_PRESETS];
    int n_presets;
    int n_inputs, n_outputs;
    kg_tensor_spec in[KG_MAX_TENSORS], out[KG_MAX_TENSORS];
    kg_scalar_spec scalars[KG_MAX_SCALARS];
    int n_scalars;
    /* Scalars bound to the shape: scalar i's value is extent
     * bound_extent[i] - 1 of the call's shape (0: a free scalar). A
     * convolution's stride, padding and groups are bound: its output extents
     * depend on them, and extents come from the shape alone, while a kernel
     * learns them only from its scalars. --param refuses a bound scalar,
     * trials never vary it (its alt is NaN), and the worker sets it from
     * every shape it runs (kg_scalars_bind); a required bound scalar is still
     * declared by the kernels that read it. (Kept here rather than in
     * kg_scalar_spec, whose tables are written positionally.) */
    int bound_extent[KG_MAX_SCALARS];
    unsigned dists;    /* KG_D(OFFSET) | ...: the distributions it is checked on */
    int reduction;     /* doubles the tolerance */
    int tol_rounded;   /* the library's unfused path rounds intermediates to the data
                        * type (linear_activation's two pre-activations): doubles the
                        * tolerance too, without making the operator a reduction */
    int tol_rms;       /* outputs are long sums of products: atol is scaled by the
                        * reference's RMS where that is above 1 (catalog/tolerance.h) */
    kg_unit unit;      /* compute roof the FLOPs run on */
    double flops_per_elem; /* FLOPs per element of input 0, when work is NULL */
    int min_rows;      /* edge cases need this many rows of input 0 */
    /* Essential work; NULL: every input read once, every output written once
     * (kg_work_default) and flops_per_elem FLOPs per element of input 0. */
    void (*work)(const struct kg_op *op, const kg_shape *s, kg_types t, kg_work *w);
    /* Essential work that depends on the call's scalars (attention: causal
     * halves the FLOPs). When set it is used instead of `work`, with p the
     * call's scalars (kgate_scalar_get; p NULL: the operator's defaults). */
    void (*work_p)(const struct kg_op *op, const kg_shape *s, kg_types t, const kgate_params *p,
                   kg_work *w);
    /* Shapes beyond "positive extents" (NULL: every shape of positive
     * extents is valid). Returns 0 when s is a valid shape of op, else
     * non-zero with the problem in why (one line, no shape: the caller names
     * it). With `repair` it first moves s to a valid shape near it and
     * returns 0 (kg_extra_shapes' random shapes). An operator with this hook
     * may take extents of 0 (a convolution's padding): the hook decides. */
    int (*check_shape)(const struct kg_op *op, kg_shape *s, int repair, char *why, size_t why_size);
    kg_cpu_reference_fn cpu_reference;
    kg_reference_fn reference;
    kg_prepare_fn prepare; /* may be NULL */
    const char *baselines[KG_MAX_BASELINES]; /* vendor paths by name (src/gpu/baseline.h) */
    const char *fast;  /* the bundled optimized variant, "v2": kernel <op>_v2_<dtype> */
    kg_variant_need needs[KG_MAX_NEEDS]; /* bundled variants not every GPU runs */
    const char *no_baseline_why; /* when there is no vendor path: why */
    const char *edge_semantics;  /* what NaN/Inf/denormal/equal rows must give */
    kg_example example;          /* worked by hand */
} kg_op;

/* The registry (generated from src/ops/ by the build). NULL-terminated. */
extern const kg_op *const kg_ops[];

/* The registry's operator of that name, else one registered at run time
 * (found by the hook set below), else NULL. */
const kg_op *kg_op_find(const char *name);
/* Sets how kg_op_find looks up operators registered at run time (catalog/problem.h
 * installs kg_problem_find when it registers its first problem), so that the
 * catalog needs to know nothing of them. */
void kg_op_set_runtime_find(const kg_op *(*find)(const char *name));
int kg_op_has_dtype(const kg_op *op, kg_dtype dt);
const kg_preset *kg_preset_find(const kg_op *op, const char *name);
const kg_scalar_spec *kg_op_scalar(const kg_op *op, const char *name);
/* 1 when op has an input of class KG_T_INDEX. */
int kg_op_has_index(const kg_op *op);
/* The dtypes `kgate run` measures. */
int kg_op_suite_dtypes(const kg_op *op);
/* The tolerance rule for an output of dtype dt: kg_tol_for's, doubled for a
 * reduction, where the library rounds intermediates (tol_rounded), and for
 * fp32 long sums (tol_rms at fp32: their accumulation error, not the output
 * rounding, is what the bound must hold; a problem's outputs are doubled
 * the same way). */
kg_tol kg_op_tol(const kg_op *op, kg_dtype dt);

/* Parses a shape for op: a preset name, "AxBxC" with op->n_dims extents, or
 * one number N meaning N for every extent; then kg_shape_check. Errors
 * (KG_EXIT_USAGE) name the expected form, or what makes the shape invalid. */
int kg_shape_parse(const kg_op *op, const char *text, kg_shape *out, kg_err *err);

/* Whether s is a valid shape of op: op->n_dims extents, each in [1, 2^31]
 * (in [0, 2^31] for an operator with check_shape, whose hook then rules),
 * and every tensor addressable (below 2^40 elements). Every shape that
 * enters kgate (parsed, read from a job, given by the Python host) passes
 * here before its extents are used. Errors: KG_EXIT_USAGE, one line naming
 * the shape and the problem. */
int kg_shape_check(const kg_op *op, const kg_shape *s, kg_err *err);

/* The name of extent i of op ("ROWS" of "ROWSxCOLS") into buf. */
const char *kg_op_dim_name(const kg_op *op, int i, char *buf, size_t size);

/* Extents of a signature tensor at a shape; returns the element count. */
int64_t kg_tensor_extents(const kg_tensor_spec *t, const kg_shape *s, int64_t *ext);
/* The dtype of a signature tensor for a kernel's types. */
kg_dtype kg_tensor_dtype_of(const kg_tensor_spec *t, kg_types types);

/* Rows and columns of input 0 viewed as a matrix (last extent = columns;
 * a rank-1 input is viewed as 8 rows when it has at least 64 elements, a
 * rank-0 one as one element). */
void kg_input0_matrix(const kg_op *op, const kg_shape *s, int64_t *rows, int64_t *cols);

/* Three shapes to check a kernel at beyond the timed one, drawn from seed:
 * every extent of the small preset made odd and a little smaller
 * (unaligned: no multiple of 8, 16 or 128), every extent in [1, 7] (tiny),
 * and every extent between the small preset's and twice it (a shape no
 * preset names). An operator with check_shape repairs each into a valid
 * shape near it (a convolution's padding cut below its filter, groups cut
 * to a common divisor of its channels). Returns how many it wrote (3). */
int kg_extra_shapes(const kg_op *op, unsigned long long seed, kg_shape out[3]);

/* The default work model: bytes of every input (read) and output (written);
 * FLOPs = op->flops_per_elem per element of input 0. */
void kg_work_default(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w);
/* The operator's work model (its own, or the default) at its default scalars. */
void kg_op_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w);

/* The shape extent scalar `name` of op is bound to (kg_op.bound_extent),
 * or -1 for a free scalar or an unknown name. */
int kg_op_scalar_extent(const kg_op *op, const char *name);

/* The scalars of a call: the operator's, each with its value. */
typedef struct kg_scalars {
    int n;
    kgate_scalar v[KG_MAX_SCALARS];
} kg_scalars;

/* The defaults of op's scalars. */
void kg_scalars_default(const kg_op *op, kg_scalars *out);
/* The operator's work model for a call with scalars sc (NULL: the defaults):
 * op->work_p when the operator has one, else kg_op_work. */
void kg_op_work_call(const kg_op *op, const kg_shape *s, kg_types t, const kg_scalars *sc, kg_work *w);
/* Applies "name=value" to s (op's scalars only; integers must be whole).
 * Errors (KG_EXIT_USAGE) name the operator's scalars. */
int kg_scalars_set(const kg_op *op, kg_scalars *s, const char *assignment, kg_err *err);
/* The values one trial uses: the given ones, with the required scalars at
 * their `alt` value when `alt` is set. */
void kg_scalars_for_trial(const kg_op *op, const kg_scalars *given, int alt, kg_scalars *out);
/* Sets op's bound scalars in sc from the shape s (kg_op.bound_extent):
 * what every call at s must receive. Free scalars are left as they are. */
void kg_scalars_bind(const kg_op *op, const kg_shape *s, kg_scalars *sc);

/* Checks a kernel's declared scalar list ("eps,negative_slope") against op:
 * an unknown name or a required one missing is an error (KG_EXIT_CANDIDATE)
 * naming the kernel. */
int kg_op_check_scalars(const kg_op *op, const char *kernel, const char *list, kg_err *err);

#ifdef __cplusplus
}
#endif
#endif
