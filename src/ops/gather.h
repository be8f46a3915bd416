/* The row gather out[i, :] = src[idx[i], :] that index_select and embedding
 * both are: one work model and one pair of references for the two
 * operators (defined in index_select.c and index_select.cu). */
#ifndef KG_OPS_GATHER_H
#define KG_OPS_GATHER_H

#include "../catalog/op.h"

/* Shape (S or V, D, I or N): the indices read, the gathered rows read and
 * the output written once. */
void kg_gather_work(const kg_op *op, const kg_shape *s, kg_types t, kg_work *w);
/* in[0] the source rows, in[1] the indices; an index outside [0, S) gives a
 * NaN row. */
void kg_gather_cpu(const double *const *in, const kg_shape *s, const kgate_params *p,
                   double *const *out);
int kg_index_select_reference(const DLTensor *in, int n_in, double *const *ref,
                              const kgate_params *p, kgate_stream s);

#endif
