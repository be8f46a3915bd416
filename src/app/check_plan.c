/* The plan of a measuring command (check, run): the options and the targets
 * resolved once into groups of jobs. Each shape text is parsed once per
 * group, --sizes all is expanded, and a shape that fits no selected kernel
 * is refused before anything runs. */
#include "check_int.h"

#include <stdlib.h>
#include <string.h>

/* The shape texts to run: --shape/--sizes as given (default large), with
 * --sizes all's presets of every selected operator appended. */
static int plan_shapes(const kg_options *o, const kg_check_targets *tg, kg_check_plan *p, kg_err *err)
{
    kg_options all = *o;
    for (int i = 0; o->all_presets && i < tg->n; i++)
        if (kg_options_add_presets(&all, tg->v[i].op, err))
            return err->code;
    p->n_shapes = all.n_shapes ? all.n_shapes : 1;
    p->shapes[0] = "large";
    if (all.n_shapes)
        memcpy(p->shapes, all.shape_texts, sizeof(char *) * (size_t)all.n_shapes);
    return 0;
}

/* Every given shape must fit at least one selected kernel's operator. */
static int plan_fits(const kg_options *o, const kg_check_targets *tg, const kg_check_plan *p, kg_err *err)
{
    for (int si = 0; si < p->n_shapes && o->n_shapes; si++) {
        int fits = 0;
        for (int i = 0; i < tg->n && !fits; i++) {
            kg_shape sh;
            kg_err e2 = {0, ""};
            fits = kg_shape_parse(tg->v[i].op, p->shapes[si], &sh, &e2) == 0;
        }
        if (!fits)
            return kg_err_set(err, KG_EXIT_USAGE, "shape '%s' fits none of the selected kernels' operators (%s, ...)",
                              p->shapes[si], tg->v[0].op->dims);
    }
    return 0;
}

/* 1 when target i is the first of its group (operator and dtypes). */
static int plan_leads(const kg_check_targets *tg, int i)
{
    for (int k = 0; k < i; k++)
        if (kg_check_same_group(&tg->v[k], &tg->v[i]))
            return 0;
    return 1;
}

int kg_check_plan_build(const kg_options *o, const kg_check_targets *tg, kg_check_plan *p, kg_err *err)
{
    memset(p, 0, sizeof *p);
    if (tg->n <= 0)
        return 0;
    if (plan_shapes(o, tg, p, err) || plan_fits(o, tg, p, err))
        return err->code;
    size_t most = (size_t)p->n_shapes * (size_t)tg->n;
    p->groups = calloc(most, sizeof *p->groups);
    p->members = calloc(most, sizeof *p->members);
    if (!p->groups || !p->members) {
        kg_check_plan_free(p);
        return kg_err_set(err, KG_EXIT_ENV, "out of memory for the plan of %zu jobs", most);
    }
    for (int si = 0; si < p->n_shapes; si++)
        for (int i = 0; i < tg->n; i++) {
            kg_check_group *g = &p->groups[p->n_groups];
            kg_err e2 = {0, ""};
            if (!plan_leads(tg, i) || kg_shape_parse(tg->v[i].op, p->shapes[si], &g->shape, &e2))
                continue; /* not a group's first, or this shape names no extent of its operator */
            g->lead = i;
            g->first = p->n_members;
            for (int k = i; k < tg->n; k++)
                if (kg_check_same_group(&tg->v[k], &tg->v[i]))
                    p->members[p->n_members++] = k;
            g->n = p->n_members - g->first;
            p->jobs += g->n + !o->verify_only;
            p->n_groups++;
        }
    return 0;
}

void kg_check_plan_free(kg_check_plan *p)
{
    free(p->groups);
    free(p->members);
    memset(p, 0, sizeof *p);
}
