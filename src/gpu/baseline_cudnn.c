/* cuDNN baselines.
 * softmax:    cudnnSoftmaxForward, accurate algorithm, instance mode over an
 *             NCHW tensor [rows, cols, 1, 1].
 * The graph-API paths (layer norm, RMS norm, pointwise) are in
 * baseline_cudnn_graph.c, the other legacy ones in baseline_cudnn_ops.c. */
#include <stdio.h>
#include <stdlib.h>

#include "../catalog/op.h"
#include "baseline.h"
#include "check.h"
#include "cudnn_api.h"
#include "tensors.h"

/* The loaded library; every setup loads it first (kg_cudnn_load). */
#define DN kg_cudnn_loaded()

/* ------------------------------------------------------------------ softmax */
typedef struct sm_ctx {
    cudnnHandle_t h;
    cudnnTensorDescriptor_t d;
    const void *x;
    void *y;
} sm_ctx;

static void sm_teardown(void *p)
{
    sm_ctx *c = p;
    if (!c)
        return;
    if (c->d)
        DN->cudnnDestroyTensorDescriptor(c->d);
    if (c->h)
        DN->cudnnDestroy(c->h);
    free(c);
}

static int sm_launch(void *p, kgate_stream s, kg_err *err)
{
    sm_ctx *c = p;
    float one = 1.f, zero = 0.f;
    KG_CUDNN(DN->cudnnSetStream(c->h, (cudaStream_t)s));
    KG_CUDNN(DN->cudnnSoftmaxForward(c->h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE, &one,
                                 c->d, c->x, &zero, c->d, c->y));
    return 0;
out:
    return err->code;
}

static int sm_setup(const kg_op *op, const DLTensor *in, DLTensor *out, const kgate_params *p,
                    kgate_stream s, void **ctx, char *note, size_t note_size, kg_err *err)
{
    (void)op;
    (void)p;
    (void)s;
    sm_ctx *c = NULL;
    kg_dtype dt = kg_tensor_dtype(&in[0]);
    if (!kg_cudnn_load(err))
        return err->code;
    c = calloc(1, sizeof *c);
    if (!c)
        return kg_err_set(err, KG_EXIT_ENV, "out of host memory");
    c->x = in[0].data;
    c->y = out[0].data;
    KG_CUDNN(DN->cudnnCreate(&c->h));
    KG_CUDNN(DN->cudnnCreateTensorDescriptor(&c->d));
    KG_CUDNN(DN->cudnnSetTensor4dDescriptor(c->d, CUDNN_TENSOR_NCHW, kg_cudnn_type(dt),
                                        (int)in[0].shape[0], (int)in[0].shape[1], 1, 1));
    snprintf(note, note_size, "cudnnSoftmaxForward (accurate, instance), cuDNN %zu",
             DN->cudnnGetVersion());
    *ctx = c;
    return 0;
out:
    sm_teardown(c);
    return err->code;
}

const kg_baseline kg_baseline_cudnn_softmax = {"cudnn-softmax", "cuDNN", sm_setup, sm_launch,
                                               sm_teardown, 0};
