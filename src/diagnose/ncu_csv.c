/* Nsight Compute CSV import (diagnose/ncu_csv.h has the format and the mapping).
 *
 * One pass over the text, line by line, with no copy of it: a CSV line is
 * unquoted into a buffer of its own size, so every allocation is bounded by
 * KG_NCU_LINE_MAX whatever the input. The header row decides, once, what each
 * column is (a table of known columns, the metric order); the units row, a
 * scale per column; each launch row then only converts numbers. */
#include "ncu_csv.h"
#include "../base/text.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const kg_ncu_rule_metrics[] = {
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_data_bytes_mem_global_op_ld.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warp_latency_per_inst_issued.ratio",
    "smsp__issue_active.avg.per_cycle_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__ctas_launched.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
};
const int kg_ncu_n_rule_metrics = (int)(sizeof kg_ncu_rule_metrics / sizeof kg_ncu_rule_metrics[0]);

/* Read by diagnose/diagnose.c when present (a fallback DRAM %, the store-side
 * bytes per sector) or named by the RC2b rule (docs/diagnosis.md: the loads'
 * L2 hit rate), so kept ahead of other metrics, but not worth a warning. */
static const char *const also_kept[] = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "lts__t_sector_op_read_hit_rate.pct",
};

/* Columns that describe the launch, the tool or the machine rather than
 * count what the kernel did: a raw page has ~54 launch__ and ~166
 * device__attribute_ ones, which would fill the table before the counters
 * that follow them alphabetically. Other metrics come first (tier 0), then
 * these by tier, each tier in column order. */
static const struct {
    const char *prefix;
    int tier;
} late_prefixes[] = {
    {"launch__", 1}, {"profiler__", 2}, {"c2clink__", 2}, {"nvlink__", 2},
    {"numa__", 2},   {"pmsampling__", 2}, {"device__", 3},
};
#define N_TIERS 4

static int tier_of(const char *name)
{
    for (size_t i = 0; i < sizeof late_prefixes / sizeof late_prefixes[0]; i++)
        if (strncmp(name, late_prefixes[i].prefix, strlen(late_prefixes[i].prefix)) == 0)
            return late_prefixes[i].tier;
    return 0;
}

typedef enum col_role {
    COL_SKIP,   /* not used: identification, strings, not a metric name */
    COL_NAME,   /* "Kernel Name" */
    COL_BLOCK,  /* "(x, y, z)" */
    COL_GRID,
    COL_REGS,
    COL_SSMEM,
    COL_DSMEM,
    COL_WAVES,
    COL_OCC,    /* theoretical occupancy, % */
    COL_LIMIT,  /* one of the occupancy limits; arg indexes limits[] */
    COL_SMS,
    COL_METRIC, /* into the metrics table */
} col_role;

/* Columns with a field of their own in kg_kfacts. */
static const struct {
    const char *name;
    col_role role;
} fixed_cols[] = {
    {"Kernel Name", COL_NAME},
    {"Block Size", COL_BLOCK},
    {"Grid Size", COL_GRID},
    {"launch__registers_per_thread", COL_REGS},
    {"launch__shared_mem_per_block_static", COL_SSMEM},
    {"launch__shared_mem_per_block_dynamic", COL_DSMEM},
    {"launch__waves_per_multiprocessor", COL_WAVES},
    {"sm__maximum_warps_per_active_cycle_pct", COL_OCC},
    {"device__attribute_multiprocessor_count", COL_SMS},
};

/* Blocks per SM each resource allows; the smallest is the limiter, ties
 * going to the first row (registers are the one a kernel author controls). */
static const struct {
    const char *col, *limiter;
} limits[] = {
    {"launch__occupancy_limit_registers", "registers"},
    {"launch__occupancy_limit_shared_mem", "shared"},
    {"launch__occupancy_limit_warps", "warps"},
    {"launch__occupancy_limit_blocks", "blocks"},
};
#define N_LIMITS ((int)(sizeof limits / sizeof limits[0]))

/* Units ncu may print, with the factor to kgate's base unit (ns, bytes). */
typedef enum unit_kind { U_TIME, U_BYTES } unit_kind;
static const struct {
    const char *name;
    unit_kind kind;
    double scale;
} units[] = {
    {"nsecond", U_TIME, 1},   {"ns", U_TIME, 1},       {"usecond", U_TIME, 1e3}, {"us", U_TIME, 1e3},
    {"msecond", U_TIME, 1e6}, {"ms", U_TIME, 1e6},     {"second", U_TIME, 1e9},  {"s", U_TIME, 1e9},
    {"byte", U_BYTES, 1},     {"B", U_BYTES, 1},       {"Kbyte", U_BYTES, 1e3},  {"KB", U_BYTES, 1e3},
    {"Mbyte", U_BYTES, 1e6},  {"MB", U_BYTES, 1e6},    {"Gbyte", U_BYTES, 1e9},  {"GB", U_BYTES, 1e9},
    {"Tbyte", U_BYTES, 1e12}, {"TB", U_BYTES, 1e12},   {"Kibyte", U_BYTES, 1024.0},
    {"Mibyte", U_BYTES, 1048576.0}, {"Gibyte", U_BYTES, 1073741824.0},
};

typedef struct col {
    unsigned char role;   /* col_role */
    unsigned char arg;    /* COL_LIMIT: index into limits[] */
    unsigned char picked; /* already in the metric order */
    double scale;         /* to base units, from the units row */
} col;

typedef struct parser {
    char *hbuf, *rbuf;    /* the header's fields; the current row's */
    const char **hname;   /* column names, into hbuf */
    const char **rf;      /* the current row's fields, into rbuf */
    col *cols;
    int *order, norder;   /* metric columns, in the order the table takes them */
    int ncol;
    long long hline;      /* the header's line number */
    int units_next;       /* the next CSV row may be the units row */
    unsigned char lacks[64]; /* rule metric i absent from some header */
} parser;

/* Splits one CSV line s[0..n) into its fields, unquoted and NUL-terminated
 * one after another in buf (n + 1 bytes suffice: unquoting only shrinks,
 * and each separator makes room for the NUL before it). Stores the start of
 * the first maxf fields in f (f may be NULL when maxf is 0). Returns the
 * number of fields, or -1 when a quoted field is not closed or something
 * other than a comma follows its closing quote. */
static int csv_split(const char *s, size_t n, char *buf, const char **f, int maxf)
{
    size_t i = 0, o = 0;
    int nf = 0;
    for (;;) {
        if (nf < maxf)
            f[nf] = buf + o;
        nf++;
        if (i < n && s[i] == '"') {
            for (i++;; i++) {
                if (i >= n)
                    return -1;
                if (s[i] == '"') {
                    if (i + 1 < n && s[i + 1] == '"') {
                        buf[o++] = '"';
                        i++;
                        continue;
                    }
                    i++;
                    break;
                }
                buf[o++] = s[i];
            }
            if (i < n && s[i] != ',')
                return -1;
        } else {
            while (i < n && s[i] != ',')
                buf[o++] = s[i++];
        }
        buf[o++] = '\0';
        if (i >= n)
            return nf;
        i++; /* the comma */
    }
}

/* A number as ncu prints it: digits with optional thousands separators,
 * sign, point and exponent. 1 and *v, or 0 for "n/a", "no data", "" and
 * anything else. */
static int parse_num(const char *s, double *v)
{
    char t[64];
    size_t k = 0;
    int digits = 0;
    for (; *s; s++) {
        if (*s == ',')
            continue;
        if (!((*s >= '0' && *s <= '9') || *s == '.' || *s == 'e' || *s == 'E' || *s == '+' || *s == '-'))
            return 0;
        digits |= *s >= '0' && *s <= '9';
        if (k + 1 >= sizeof t)
            return 0;
        t[k++] = *s;
    }
    t[k] = '\0';
    if (!digits)
        return 0;
    char *end;
    double d = strtod(t, &end);
    if (end != t + k || !isfinite(d))
        return 0;
    *v = d;
    return 1;
}

/* "(256, 1, 1)" into d[3]; d is left alone unless all three parse. ncu
 * separates the extents with ", ", so where that appears a comma followed
 * by a digit is a thousands separator ("(65,536, 1, 1)"). */
static void parse_dims(const char *s, long long d[3])
{
    long long v[3];
    int k = 0, spaced = strstr(s, ", ") != NULL;
    while (*s == ' ')
        s++;
    if (*s++ != '(')
        return;
    for (;;) {
        long long x = 0;
        int nd = 0;
        while (*s == ' ')
            s++;
        for (;; s++) {
            if (*s >= '0' && *s <= '9') {
                if (x > (LLONG_MAX - (*s - '0')) / 10)
                    return;
                x = x * 10 + (*s - '0');
                nd++;
            } else if (!(*s == ',' && spaced && s[1] >= '0' && s[1] <= '9')) {
                break;
            }
        }
        if (!nd || k == 3)
            return;
        v[k++] = x;
        while (*s == ' ')
            s++;
        if (*s == ')')
            break;
        if (*s++ != ',')
            return;
    }
    s++;
    while (*s == ' ')
        s++;
    if (*s || k != 3)
        return;
    memcpy(d, v, sizeof v);
}

/* A non-negative whole count, or -1 when v does not fit an int. */
static int to_count(double v)
{
    return v >= 0 && v <= INT_MAX ? (int)(v + 0.5) : -1;
}

static const char *unit_find(const char *s, size_t n, unit_kind kind, double *scale)
{
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].kind == kind && strlen(units[i].name) == n && memcmp(units[i].name, s, n) == 0) {
            *scale = units[i].scale;
            return units[i].name;
        }
    return NULL;
}

/* The factor from a column's unit to kgate's base unit; 1 when the unit is
 * already base or unknown. A byte rate ("Gbyte/second") goes to bytes per
 * second; bytes per anything else ("Kbyte/block", as ncu writes the shared
 * memory per block) to bytes per that. */
static double unit_scale(const char *u)
{
    double a, b;
    const char *slash = strchr(u, '/');
    if (!slash) {
        if (unit_find(u, strlen(u), U_TIME, &a) || unit_find(u, strlen(u), U_BYTES, &a))
            return a;
        return 1;
    }
    if (!unit_find(u, (size_t)(slash - u), U_BYTES, &a))
        return 1;
    if (unit_find(slash + 1, strlen(slash + 1), U_TIME, &b))
        return a / (b * 1e-9);
    return a; /* bytes per something else: "byte/block", "Kbyte/block" */
}

/* Copies a kernel name, cutting it (when it is too long) before a UTF-8
 * character rather than inside one. */
static void copy_name(char *dst, size_t size, const char *s)
{
    size_t n = strlen(s);
    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* A name the metrics table (and its JSON, diagnose/diag_json.c) can hold. */
static int metric_name(const char *s)
{
    size_t n = 0;
    if (!strstr(s, "__"))
        return 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') ||
              s[n] == '_' || s[n] == '.'))
            return 0;
    return n < sizeof(((kg_metric *)0)->name);
}

static void parser_free_header(parser *p)
{
    free(p->hname);
    free(p->rf);
    free(p->cols);
    free(p->order);
    p->hname = p->rf = NULL;
    p->cols = NULL;
    p->order = NULL;
    p->ncol = p->norder = 0;
}

/* Appends the metric column named name to the order, if there is one. */
static void order_named(parser *p, const char *name)
{
    for (int c = 0; c < p->ncol; c++)
        if (p->cols[c].role == COL_METRIC && !p->cols[c].picked && strcmp(p->hname[c], name) == 0) {
            p->cols[c].picked = 1;
            p->order[p->norder++] = c;
            return;
        }
}

/* Reads a header row: what each column is and which metrics the table
 * takes first. */
static int parse_header(parser *p, const char *s, size_t n, long long line, kg_err *err)
{
    parser_free_header(p);
    int nf = csv_split(s, n, p->hbuf, NULL, 0);
    if (nf < 0)
        return kg_err_set(err, KG_EXIT_USAGE, "ncu CSV line %lld: a quoted field is not closed", line);
    p->hname = malloc((size_t)nf * sizeof *p->hname);
    p->rf = malloc((size_t)nf * sizeof *p->rf);
    p->cols = calloc((size_t)nf, sizeof *p->cols);
    p->order = malloc((size_t)nf * sizeof *p->order);
    if (!p->hname || !p->rf || !p->cols || !p->order)
        return kg_err_set(err, KG_EXIT_ENV, "ncu CSV: out of memory");
    csv_split(s, n, p->hbuf, p->hname, nf);
    p->ncol = nf;
    p->hline = line;
    p->units_next = 1;

    int has_name = 0;
    for (int c = 0; c < nf; c++) {
        col *k = &p->cols[c];
        k->scale = 1;
        for (size_t i = 0; i < sizeof fixed_cols / sizeof fixed_cols[0] && k->role == COL_SKIP; i++)
            if (strcmp(p->hname[c], fixed_cols[i].name) == 0)
                k->role = (unsigned char)fixed_cols[i].role;
        for (int i = 0; i < N_LIMITS && k->role == COL_SKIP; i++)
            if (strcmp(p->hname[c], limits[i].col) == 0) {
                k->role = COL_LIMIT;
                k->arg = (unsigned char)i;
            }
        if (k->role == COL_SKIP && metric_name(p->hname[c]))
            k->role = COL_METRIC;
        has_name |= k->role == COL_NAME;
    }
    if (!has_name)
        return kg_err_set(err, KG_EXIT_USAGE, "ncu CSV line %lld: the header has no \"Kernel Name\" column", line);

    for (int i = 0; i < kg_ncu_n_rule_metrics; i++) {
        int before = p->norder;
        order_named(p, kg_ncu_rule_metrics[i]);
        if (p->norder == before)
            p->lacks[i] = 1;
    }
    for (size_t i = 0; i < sizeof also_kept / sizeof also_kept[0]; i++)
        order_named(p, also_kept[i]);
    for (int tier = 0; tier < N_TIERS; tier++)
        for (int c = 0; c < nf; c++) {
            if (p->cols[c].role == COL_METRIC && !p->cols[c].picked && tier_of(p->hname[c]) == tier) {
                p->cols[c].picked = 1;
                p->order[p->norder++] = c;
            }
        }
    return 0;
}

/* One launch row (p->rf) into k. */
static void parse_row(const parser *p, kg_kfacts *k)
{
    double lim[N_LIMITS] = {0}, v;
    int have_lim = 0;
    kg_kfacts_init(k);
    k->launches = 1;
    for (int c = 0; c < p->ncol; c++) {
        const col *cc = &p->cols[c];
        const char *f = p->rf[c];
        switch ((col_role)cc->role) {
        case COL_NAME:
            copy_name(k->name, sizeof k->name, f);
            continue;
        case COL_BLOCK:
            parse_dims(f, k->block);
            continue;
        case COL_GRID:
            parse_dims(f, k->grid);
            continue;
        case COL_SKIP:
        case COL_METRIC: /* below, in the table's order */
            continue;
        default:
            break;
        }
        if (!parse_num(f, &v) || !isfinite(v *= cc->scale))
            continue;
        switch ((col_role)cc->role) {
        case COL_REGS: k->regs = to_count(v); break;
        case COL_SSMEM: k->static_smem = to_count(v); break;
        case COL_DSMEM: k->dyn_smem = to_count(v); break;
        case COL_WAVES: k->waves = v; break;
        case COL_OCC: k->occupancy = v / 100; break;
        case COL_SMS: k->sms = to_count(v); break;
        case COL_LIMIT:
            lim[cc->arg] = v;
            have_lim |= 1 << cc->arg;
            break;
        default: break;
        }
    }
    int best = -1;
    for (int i = 0; i < N_LIMITS; i++)
        if ((have_lim >> i & 1) && (best < 0 || lim[i] < lim[best]))
            best = i;
    if (best >= 0) {
        k->max_blocks_per_sm = to_count(lim[best]);
        snprintf(k->limiter, sizeof k->limiter, "%s", limits[best].limiter);
    }
    for (int i = 0; i < p->norder && k->n_m < KG_KMETRICS_MAX; i++) {
        int c = p->order[i];
        if (parse_num(p->rf[c], &v) && isfinite(v *= p->cols[c].scale))
            kg_kfacts_set(k, p->hname[c], v);
    }
}

/* The warn line: the rule metrics some header lacked. */
static void write_warn(const parser *p, char *warn, size_t size)
{
    size_t u = 0;
    warn[0] = '\0';
    for (int i = 0; i < kg_ncu_n_rule_metrics; i++)
        if (p->lacks[i])
            kg_append(warn, size, &u, "%s%s", u ? ", " : "ncu CSV lacks: ", kg_ncu_rule_metrics[i]);
}

int kg_ncu_csv_parse(const char *text, size_t len, kg_kfacts *out, int max, int *n, char *warn,
                     size_t warn_size, kg_err *err)
{
    parser p;
    int rc = 0, count = 0;
    long long line = 0;
    size_t pos = 0, cap;
    memset(&p, 0, sizeof p);
    *n = 0;
    if (warn && warn_size)
        warn[0] = '\0';
    if (!text)
        len = 0;
    _Static_assert(sizeof kg_ncu_rule_metrics / sizeof kg_ncu_rule_metrics[0] <= sizeof p.lacks,
                   "lacks[] holds a flag per rule metric");
    cap = len < KG_NCU_LINE_MAX ? len : KG_NCU_LINE_MAX;
    p.hbuf = malloc(cap + 1);
    p.rbuf = malloc(cap + 1);
    if (!p.hbuf || !p.rbuf) {
        rc = kg_err_set(err, KG_EXIT_ENV, "ncu CSV: out of memory");
        goto out;
    }
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3; /* a UTF-8 byte order mark */
    while (pos < len) {
        const char *s = text + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t ln = nl ? (size_t)(nl - s) : len - pos;
        pos += ln + (nl != NULL);
        line++;
        if (ln && s[ln - 1] == '\r')
            ln--;
        if (!ln || s[0] != '"')
            continue; /* ==PROF==, ==WARNING==, ==ERROR==, the application's output */
        if (ln > KG_NCU_LINE_MAX) {
            rc = kg_err_set(err, KG_EXIT_USAGE, "ncu CSV line %lld is longer than 1 MiB", line);
            goto out;
        }
        if (memchr(s, '\0', ln)) {
            rc = kg_err_set(err, KG_EXIT_USAGE, "ncu CSV line %lld holds a NUL byte", line);
            goto out;
        }
        if (ln >= 4 && memcmp(s, "\"ID\"", 4) == 0 && (ln == 4 || s[4] == ',')) {
            if ((rc = parse_header(&p, s, ln, line, err)) != 0)
                goto out;
            continue;
        }
        if (!p.ncol)
            continue; /* quoted output before any header is not ncu's */
        int nf = csv_split(s, ln, p.rbuf, p.rf, p.ncol);
        if (nf < 0) {
            rc = kg_err_set(err, KG_EXIT_USAGE, "ncu CSV line %lld: a quoted field is not closed", line);
            goto out;
        }
        if (nf != p.ncol) {
            rc = kg_err_set(err, KG_EXIT_USAGE, "ncu CSV line %lld has %d fields; its header (line %lld) has %d",
                            line, nf, p.hline, p.ncol);
            goto out;
        }
        if (p.units_next) {
            p.units_next = 0;
            if (p.rf[0][0] == '\0') { /* the units row */
                for (int c = 0; c < p.ncol; c++)
                    p.cols[c].scale = unit_scale(p.rf[c]);
                continue;
            }
        }
        if (count < max)
            parse_row(&p, &out[count++]);
    }
    if (!p.ncol) {
        rc = kg_err_set(err, KG_EXIT_USAGE,
                        "no ncu CSV header row (a line starting \"ID\",\"Process ID\",...); "
                        "expected the output of ncu --csv --page raw");
        goto out;
    }
    if (warn && warn_size)
        write_warn(&p, warn, warn_size);
    *n = count;
out:
    parser_free_header(&p);
    free(p.hbuf);
    free(p.rbuf);
    return rc;
}

int kg_ncu_csv_parse_file(const char *path, kg_kfacts *out, int max, int *n, char *warn, size_t warn_size,
                          kg_err *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc;
    *n = 0;
    if (warn && warn_size)
        warn[0] = '\0';
    if (!f)
        return kg_err_set(err, KG_EXIT_IO, "cannot open %s: %s", path, strerror(errno));
    for (;;) {
        if (len == cap) {
            if (cap > KG_NCU_FILE_MAX) {
                rc = kg_err_set(err, KG_EXIT_IO, "%s is larger than %u MiB", path, KG_NCU_FILE_MAX >> 20);
                goto out;
            }
            size_t want = cap ? 2 * cap : (size_t)1 << 16;
            if (want > (size_t)KG_NCU_FILE_MAX + 1)
                want = (size_t)KG_NCU_FILE_MAX + 1;
            char *nb = realloc(buf, want);
            if (!nb) {
                rc = kg_err_set(err, KG_EXIT_ENV, "ncu CSV: out of memory reading %s", path);
                goto out;
            }
            buf = nb;
            cap = want;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                rc = kg_err_set(err, KG_EXIT_IO, "cannot read %s", path);
                goto out;
            }
            break;
        }
    }
    rc = kg_ncu_csv_parse(buf, len, out, max, n, warn, warn_size, err);
out:
    fclose(f);
    free(buf);
    return rc;
}
