/* Greedy placement of point labels on a plot (report/labels.h). */
#include "labels.h"

#include <math.h>

/* gaps between a point's disc and its label tried, nearest first */
static const double gaps[] = {1, 4, 9, 15, 22, 30, 40, 52, 66, 82, 100, 130};
#define LEADER_GAP 6 /* a box further than this from its point's disc gets a line to it */
#define FIRST_GAP_ON_LINES 3 /* from gaps[3] on, a clear box on a line is taken */

int kg_labels_overlap(const kg_box *a, const kg_box *b, double gap)
{
    return a->x0 < b->x1 + gap && b->x0 < a->x1 + gap && a->y0 < b->y1 + gap && b->y0 < a->y1 + gap;
}

int kg_labels_crossed(const kg_box *b, double x0, double y0, double x1, double y1)
{
    /* Liang-Barsky: clip the segment's parameter range to the box's slabs */
    double t0 = 0, t1 = 1, d[2] = {x1 - x0, y1 - y0}, o[2] = {x0, y0}, lo[2] = {b->x0, b->y0}, hi[2] = {b->x1, b->y1};
    for (int k = 0; k < 2; k++) {
        if (d[k] == 0) {
            if (o[k] < lo[k] || o[k] > hi[k])
                return 0;
            continue;
        }
        double a = (lo[k] - o[k]) / d[k], c = (hi[k] - o[k]) / d[k];
        if (a > c) {
            double t = a;
            a = c, c = t;
        }
        t0 = fmax(t0, a), t1 = fmin(t1, c);
        if (t0 > t1)
            return 0;
    }
    return 1;
}

static double inter(const kg_box *a, const kg_box *b)
{
    double w = fmin(a->x1, b->x1) - fmax(a->x0, b->x0), h = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
    return w > 0 && h > 0 ? w * h : 0;
}

/* How far the box reaches into the disc of radius r at (x, y): 0 when clear. */
static double into_disc(const kg_box *b, double x, double y, double r)
{
    double dx = x < b->x0 ? b->x0 - x : x > b->x1 ? x - b->x1 : 0;
    double dy = y < b->y0 ? b->y0 - y : y > b->y1 ? y - b->y1 : 0;
    double d = sqrt(dx * dx + dy * dy);
    return d < r ? r - d : 0;
}

/* The box's overlap with the area's outside, the labels placed and the points (0: clear). */
static double cost(const kg_box *b, const kg_label *l, int placed, kg_box area, const kg_obstacles *ob)
{
    double c = 0, w = b->x1 - b->x0, h = b->y1 - b->y0;
    kg_box in = {fmax(b->x0, area.x0), fmax(b->y0, area.y0), fmin(b->x1, area.x1), fmin(b->y1, area.y1)};
    double inside = in.x1 > in.x0 && in.y1 > in.y0 ? (in.x1 - in.x0) * (in.y1 - in.y0) : 0;
    c += 4 * (w * h - inside); /* outside the plot is worse than a crowded spot */
    for (int k = 0; k < placed; k++) {
        kg_box grown = {l[k].box.x0 - 1, l[k].box.y0 - 1, l[k].box.x1 + 1, l[k].box.y1 + 1};
        c += inter(b, &grown) + (kg_labels_overlap(b, &l[k].box, 1) ? 1 : 0);
    }
    for (int k = 0; k < ob->np; k++)
        c += into_disc(b, ob->pts[2 * k], ob->pts[2 * k + 1], ob->r) * 8;
    return c;
}

static int lines_crossed(const kg_box *b, const kg_obstacles *ob)
{
    int n = 0;
    for (int k = 0; k < ob->ns; k++) {
        const double *s = &ob->segs[4 * k];
        n += kg_labels_crossed(b, s[0], s[1], s[2], s[3]);
    }
    return n;
}

void kg_labels_place(kg_label *l, int n, int fixed, kg_box area, const kg_obstacles *ob)
{
    /* right, the right diagonals, above, below, left, the left diagonals,
     * then the directions between them (angles in sixteenths of a turn,
     * counterclockwise; y points down on the page) */
    static const int dirs[16] = {0, 2, 14, 4, 12, 8, 6, 10, 1, 15, 3, 13, 7, 9, 5, 11};
    for (int i = fixed; i < n; i++) {
        kg_label *x = &l[i];
        double least = INFINITY, clear_gap = -1;
        kg_box least_box = {x->x, x->y, x->x + x->w, x->y + x->h}, clear_box = least_box;
        int done = 0;
        for (unsigned g = 0; g < sizeof gaps / sizeof gaps[0] && !done; g++) {
            for (int d = 0; d < 16 && !done; d++) {
                double a = dirs[d] * 3.14159265358979323846 / 8, c = cos(a), s = -sin(a);
                /* the box's centre, so that its nearest side is about `gap` beyond the disc */
                double cx = x->x + c * (ob->r + gaps[g] + x->w / 2), cy = x->y + s * (ob->r + gaps[g] + x->h / 2);
                kg_box b = {cx - x->w / 2, cy - x->h / 2, cx + x->w / 2, cy + x->h / 2};
                double k = cost(&b, l, i, area, ob);
                if (k < least)
                    least = k, least_box = b;
                if (k > 0)
                    continue;
                if (!lines_crossed(&b, ob))
                    clear_box = b, clear_gap = gaps[g], done = 1;
                else if (clear_gap < 0)
                    clear_box = b, clear_gap = gaps[g];
            }
            done |= clear_gap >= 0 && g >= FIRST_GAP_ON_LINES;
        }
        x->overlaps = clear_gap < 0;
        x->box = x->overlaps ? least_box : clear_box;
        double nx = fmin(fmax(x->x, x->box.x0), x->box.x1), ny = fmin(fmax(x->y, x->box.y0), x->box.y1);
        x->leader = hypot(nx - x->x, ny - x->y) > ob->r + LEADER_GAP;
    }
}
