/* Roofline evaluation and the datasheet table. */
#include "roofline.h"

#include <stdio.h>
#include <string.h>

/* The line through (x0, y0) and (x1, y1) at x. */
static double lerp(double x, double x0, double y0, double x1, double y1)
{
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

double kg_roof_rate(const kg_roofs *r, double rd, double wr)
{
    double c = r->bw, rr = r->bw_read > 0 ? r->bw_read : c, ww = r->bw_write > 0 ? r->bw_write : c;
    if (!(rd + wr > 0))
        return c;
    double f = rd / (rd + wr);
    if (f <= 0.5)
        return lerp(f, 0, ww, 0.5, c);
    /* the triad point (f = 2/3) counts only where it is above the copy-read line */
    double t = lerp(2.0 / 3, 0.5, c, 1, rr);
    if (r->bw_triad > t)
        t = r->bw_triad;
    return f <= 2.0 / 3 ? lerp(f, 0.5, c, 2.0 / 3, t) : lerp(f, 2.0 / 3, t, 1, rr);
}

double kg_roof_memory(const kg_roofs *r, double rd, double wr)
{
    double rate = kg_roof_rate(r, rd, wr), s = rd + wr, c = r->l2_credit > 0 ? r->l2_credit : 0;
    if (!(s > 0) || !(wr > 0) || c == 0)
        return rate;
    if (c > wr)
        c = wr;
    if (c > s / 2)
        c = s / 2;
    return rate * s / (s - c);
}

kg_unit kg_roof_unit(kg_unit unit, kg_dtype dt)
{
    return unit == KG_UNIT_TENSOR && dt != KG_FP32 ? KG_UNIT_TENSOR : KG_UNIT_FP32;
}

int kg_roofline(const kg_work *w, kg_unit unit, kg_dtype dt, const kg_roofs *r, double t_s,
                kg_roof_eval *o)
{
    memset(o, 0, sizeof *o);
    double pc = kg_roof_unit(unit, dt) == KG_UNIT_TENSOR ? r->mma[dt] : r->fp32;
    if (t_s <= 0 || r->bw <= 0 || (w->flops > 0 && pc <= 0))
        return -1;
    /* a work model that gives only the total counts it as a copy */
    double rd = w->bytes_read, wr = w->bytes_written;
    if (!(rd + wr > 0))
        rd = wr = w->bytes / 2;
    double bw = kg_roof_memory(r, rd, wr);
    o->intensity = w->bytes > 0 ? w->flops / w->bytes : 1e300;
    o->ridge = pc > 0 ? pc / bw : 0;
    o->compute_bound = w->flops > 0 && o->intensity >= o->ridge;
    o->peak = o->compute_bound ? pc : bw;
    o->rho = (o->compute_bound ? w->flops : w->bytes) / (t_s * o->peak);
    return 0;
}

/* Dense rates from the vendors' datasheets (SXM parts). */
static const struct {
    const char *match;
    double bw, fp16, bf16, tf32, fp32;
} datasheet[] = {
    {"H200", 4.8e12, 989.5e12, 989.5e12, 494.7e12, 66.9e12},
    {"H100 PCIe", 2.0e12, 756.5e12, 756.5e12, 378e12, 51.2e12}, /* before "H100": the first match wins */
    {"H100", 3.35e12, 989.5e12, 989.5e12, 494.7e12, 66.9e12},
    {"A100", 1.555e12, 312e12, 312e12, 156e12, 19.5e12},
};

int kg_roofs_datasheet(const char *name, double mem_clock_khz, int bus_bits, kg_roofs *o)
{
    memset(o, 0, sizeof *o);
    strcpy(o->source, "datasheet");
    for (size_t i = 0; i < sizeof datasheet / sizeof datasheet[0]; i++)
        if (name && strstr(name, datasheet[i].match)) {
            o->bw = o->bw_read = o->bw_write = datasheet[i].bw;
            o->mma[KG_FP16] = datasheet[i].fp16;
            o->mma[KG_BF16] = datasheet[i].bf16;
            o->mma[KG_FP32] = datasheet[i].tf32;
            o->fp32 = datasheet[i].fp32;
            return 1;
        }
    o->bw = o->bw_read = o->bw_write = 2.0 * mem_clock_khz * 1e3 * bus_bits / 8.0;
    return 0;
}

static int within(double v, double ds, const char *what, char *why, size_t size)
{
    if (ds <= 0 || (v >= 0.6 * ds && v <= 1.2 * ds))
        return 1;
    snprintf(why, size, "%s %.3g is not within 0.6 to 1.2 of the datasheet's %.3g", what, v, ds);
    return 0;
}

int kg_roofs_plausible(const kg_roofs *m, const kg_roofs *ds, char *why, size_t why_size)
{
    if (!(m->l2_credit >= 0 && m->l2_credit <= KG_L2_CREDIT_MAX)) {
        snprintf(why, why_size, "L2 write credit %.3g bytes is not within 0 to %.3g", m->l2_credit,
                 (double)KG_L2_CREDIT_MAX);
        return 0;
    }
    if (!(ds->mma[KG_FP16] > 0))
        return 1; /* not in the table: its bandwidth is only a guess from the memory clock */
    return within(m->bw, ds->bw, "copy bandwidth", why, why_size) &&
           within(m->bw_read > 0 ? m->bw_read : m->bw, ds->bw, "read bandwidth", why, why_size) &&
           within(m->bw_write > 0 ? m->bw_write : m->bw, ds->bw, "write bandwidth", why, why_size) &&
           within(m->bw_triad > 0 ? m->bw_triad : m->bw, ds->bw, "triad bandwidth", why, why_size) &&
           within(m->mma[KG_FP16], ds->mma[KG_FP16], "fp16 tensor FLOP/s", why, why_size) &&
           within(m->mma[KG_BF16], ds->mma[KG_BF16], "bf16 tensor FLOP/s", why, why_size) &&
           within(m->mma[KG_FP32], ds->mma[KG_FP32], "tf32 tensor FLOP/s", why, why_size);
}
