/* Where a plot writes the numbers of its points: a greedy placement that
 * keeps every label inside the plot, off the other labels and off every
 * point, as near its own point as it can, and off the plot's lines where
 * that costs little distance.
 *
 * Labels are placed in the order given. For each, boxes are tried at
 * growing gaps from its point's disc (1 to 130 units) and, at each gap, in
 * 16 directions (right first, then the diagonals, above, below, left, then
 * the directions between). A box is clear when it is inside the area, 1
 * unit or more from the labels already placed and off every point's disc;
 * the first clear box that crosses no line wins, or, from the fourth gap
 * (15 units) on, the first clear box found. A label whose box is more than
 * 6 units from its point's disc gets a leader line. Where no box is clear,
 * the one with the least overlap is taken and the label is marked. Plain
 * C; no GPU. */
#ifndef KG_LABELS_H
#define KG_LABELS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kg_box {
    double x0, y0, x1, y1; /* x0 <= x1, y0 <= y1 */
} kg_box;

typedef struct kg_label {
    double x, y;   /* its point */
    double w, h;   /* the size of its box */
    kg_box box;    /* out: where the box went */
    int leader;    /* out: 1 when the box is far enough from the point to need a line to it */
    int overlaps;  /* out: 1 when no clear place was found */
} kg_label;

/* What labels keep off: the discs of radius r around the points pts[0..np)
 * (x, y pairs; the labels' own points among them) and the line segments
 * segs[0..ns) (x0, y0, x1, y1 each). */
typedef struct kg_obstacles {
    const double *pts;
    int np;
    double r;
    const double *segs;
    int ns;
} kg_obstacles;

/* Places l[fixed..n) inside area, clear of the labels l[0..fixed) (set
 * already: other text on the plot, whose boxes stay) and of ob. */
void kg_labels_place(kg_label *l, int n, int fixed, kg_box area, const kg_obstacles *ob);

/* 1 when two boxes overlap, a gap of `gap` counting as overlap. */
int kg_labels_overlap(const kg_box *a, const kg_box *b, double gap);
/* 1 when the segment (x0, y0)-(x1, y1) passes through the box. */
int kg_labels_crossed(const kg_box *b, double x0, double y0, double x1, double y1);

#ifdef __cplusplus
}
#endif
#endif
