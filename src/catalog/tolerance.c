/* Tolerance table, host comparison and the mismatch report. */
#include "tolerance.h"

#include "../base/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

kg_tol kg_tol_for(kg_dtype dt, int reduction)
{
    kg_tol t;
    double v;
    switch (dt) {
    case KG_FP16:
        v = 1e-3;
        t.inf_threshold = 65520.0; /* 65504 + half an ulp (16) */
        break;
    case KG_BF16:
        v = 1e-2;
        t.inf_threshold = ldexp(2.0 - ldexp(1.0, -8), 127);
        break;
    case KG_FP32:
        v = 1e-5;
        t.inf_threshold = ldexp(2.0 - ldexp(1.0, -24), 127);
        break;
    default:
        v = 1e-12;
        t.inf_threshold = INFINITY;
        break;
    }
    if (reduction)
        v *= 2;
    t.atol = t.rtol = t.l2_max = v;
    return t;
}

void kg_cmp_finish(kg_cmp *r, const kg_tol *t)
{
    double num = sqrt(r->sq_err), den = sqrt(r->sq_ref);
    r->rel_l2 = den > 0 ? num / den : num;
    r->pass = r->n_fail == 0 && r->rel_l2 <= t->l2_max;
}

void kg_cmp_host(const double *out, const double *ref, int64_t n, const kg_tol *t, kg_cmp *r)
{
    memset(r, 0, sizeof *r);
    r->n = n;
    for (int64_t i = 0; i < n; i++) {
        int c = kg_cmp_elem(out[i], ref[i], t);
        if (isfinite(out[i]) && isfinite(ref[i])) {
            double d = out[i] - ref[i];
            r->sq_err += d * d;
            r->sq_ref += ref[i] * ref[i];
            if (fabs(d) > r->max_abs_err)
                r->max_abs_err = fabs(d);
        }
        if (c == KG_CMP_PASS)
            continue;
        r->n_fail++;
        r->n_nan += c == KG_CMP_NAN;
        r->n_inf += c == KG_CMP_INF;
        if (r->n_first < KG_CMP_FIRST) {
            r->first_idx[r->n_first] = i;
            r->first_out[r->n_first] = out[i];
            r->first_ref[r->n_first] = ref[i];
            r->n_first++;
        }
    }
    kg_cmp_finish(r, t);
}

void kg_cmp_describe(const kg_cmp *r, char *buf, size_t size)
{
    size_t u = 0;
    if (r->n_fail == 0) {
        snprintf(buf, size, "all %lld elements within tolerance; rel_l2 %.3g%s", (long long)r->n,
                 r->rel_l2, r->pass ? "" : " exceeds the norm bound");
        return;
    }
    buf[0] = '\0';
    kg_append(buf, size, &u, "%lld of %lld elements wrong (%lld NaN, %lld Inf mismatches), rel_l2 %.3g; first:",
              (long long)r->n_fail, (long long)r->n, (long long)r->n_nan, (long long)r->n_inf, r->rel_l2);
    for (int i = 0; i < r->n_first && i < 4; i++)
        kg_append(buf, size, &u, " [%lld] got %.6g want %.6g;", (long long)r->first_idx[i], r->first_out[i],
                  r->first_ref[i]);
}
