/* CLI option parsing: defaults, values, and usage errors named in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "store/lib_cache.h"
#include "app/options.h"
#include "app/optable.h"
#include "protocol/proto.h"

static int parse(kg_options *o, kg_err *e, const char *const *args, int n)
{
    char *argv[32];
    argv[0] = "kgate";
    for (int i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    memset(e, 0, sizeof *e);
    return kg_options_parse(n + 1, argv, o, e);
}

static void check_with_everything(void **state)
{
    (void)state;
    kg_options o;
    kg_err e;
    const char *a[] = {"check", "x.so:k", "--op", "softmax", "--dtype", "fp16", "--sizes",
                       "small,4096x1024", "--hot", "--trials", "5", "--timeout", "9", "--json", "o.json"};
    assert_int_equal(parse(&o, &e, a, 15), 0);
    assert_string_equal(o.command, "check");
    assert_string_equal(o.candidate, "x.so:k");
    assert_true(o.op == kg_op_find("softmax") && o.have_dtype && o.dtype == KG_FP16);
    assert_int_equal(o.n_shapes, 2);
    assert_true(o.hot && o.trials == 5 && o.timeout_s == 9);
    assert_true(o.stop.max_noise == 0.005 && o.gate.e_ok == 0.8);
    assert_true(o.patched_max_s == KG_PATCHED_MAX_DEFAULT);
    const char *b[] = {"check", "x.so", "--diagnose", "--diagnose-patched-max", "0"};
    assert_int_equal(parse(&o, &e, b, 5), 0);
    assert_true(o.diagnose == KG_DIAG_ALWAYS && o.patched_max_s == 0);
    /* library times are measured afresh unless --lib-cache says otherwise */
    assert_true(!o.lib_cache && o.lib_cache_age_s == KG_LIBCACHE_AGE_DEFAULT);
    const char *c[] = {"check", "x.so", "--lib-cache", "--lib-cache-age", "600"};
    assert_int_equal(parse(&o, &e, c, 5), 0);
    assert_true(o.lib_cache && o.lib_cache_age_s == 600);
}

/* The host time a launch may take for free is the candidate's launch path's
 * (judge/verdict.h), unless --host-allowance says; it travels in the gate. */
static void host_allowance_by_candidate(void **state)
{
    (void)state;
    kg_options o;
    kg_err e;
    const char *so[] = {"check", "x.so:k"};
    assert_int_equal(parse(&o, &e, so, 2), 0);
    assert_true(o.gate.host_allowance == KG_HOST_ALLOWANCE_S);
    const char *py[] = {"check", "dir/cand.py:jit_relu"};
    assert_int_equal(parse(&o, &e, py, 2), 0);
    assert_true(o.gate.host_allowance == KG_HOST_ALLOWANCE_PYTHON_S);
    const char *run[] = {"run"};
    assert_int_equal(parse(&o, &e, run, 1), 0);
    assert_true(o.gate.host_allowance == KG_HOST_ALLOWANCE_S);
    /* the file the workers open decides: a link named .py to a .so is a C
     * launch, a link named .so to a .py a Python one */
    char dir[] = "/tmp/kgate-test-options-XXXXXX", real_so[128], real_py[128], as_py[160], as_so[160];
    assert_non_null(mkdtemp(dir));
    snprintf(real_so, sizeof real_so, "%s/real.so", dir);
    snprintf(real_py, sizeof real_py, "%s/real.py", dir);
    snprintf(as_py, sizeof as_py, "%s/named.py", dir);
    snprintf(as_so, sizeof as_so, "%s/named.so", dir);
    fclose(fopen(real_so, "w"));
    fclose(fopen(real_py, "w"));
    assert_int_equal(symlink(real_so, as_py), 0);
    assert_int_equal(symlink(real_py, as_so), 0);
    const char *link_py[] = {"check", as_py};
    assert_int_equal(parse(&o, &e, link_py, 2), 0);
    assert_true(o.gate.host_allowance == KG_HOST_ALLOWANCE_S);
    char spec[192];
    snprintf(spec, sizeof spec, "%s:some_kernel", as_so);
    const char *link_so[] = {"check", spec};
    assert_int_equal(parse(&o, &e, link_so, 2), 0);
    assert_true(o.gate.host_allowance == KG_HOST_ALLOWANCE_PYTHON_S);
    unlink(as_py);
    unlink(as_so);
    unlink(real_so);
    unlink(real_py);
    rmdir(dir);
    const char *set[] = {"check", "cand.py", "--host-allowance", "0"};
    assert_int_equal(parse(&o, &e, set, 4), 0);
    assert_true(o.gate.host_allowance == 0);
    const char *bad[] = {"check", "cand.py", "--host-allowance", "-1e-6"};
    assert_int_equal(parse(&o, &e, bad, 4), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "--host-allowance"));
}

/* --sizes all: each selected operator's presets, every name once; too many
 * presets is a usage error, not a truncation. */
static void sizes_all_is_every_preset(void **state)
{
    (void)state;
    kg_options o;
    kg_err e;
    const char *a[] = {"check", "x.so", "--sizes", "all", "--time-budget", "60"};
    assert_int_equal(parse(&o, &e, a, 6), 0);
    assert_true(o.all_presets && o.n_shapes == 0 && o.time_budget_s == 60);
    const kg_op *mm = kg_op_find("matmul"), *sm = kg_op_find("softmax"), *cv = kg_op_find("conv2d"),
                *cvn = kg_op_find("conv2d_nhwc");
    assert_int_equal(kg_options_add_presets(&o, mm, &e), 0);
    assert_int_equal(o.n_shapes, mm->n_presets); /* small medium large xl */
    assert_int_equal(kg_options_add_presets(&o, sm, &e), 0);
    assert_int_equal(o.n_shapes, mm->n_presets); /* softmax's names are matmul's */
    assert_int_equal(kg_options_add_presets(&o, cv, &e), 0);
    assert_int_equal(kg_options_add_presets(&o, cvn, &e), 0);
    assert_int_equal(o.n_shapes, 4 + 5); /* f1x1 f5x5 f7x7 dw s2 once */
    assert_string_equal(o.shape_texts[4], "f1x1");
    for (int i = 0; i < KG_MAX_SHAPES; i++)
        o.shape_texts[i] = o.n_shapes > i ? o.shape_texts[i] : "x";
    o.n_shapes = KG_MAX_SHAPES;
    assert_int_equal(kg_options_add_presets(&o, kg_op_find("attention"), &e), KG_EXIT_USAGE);
    assert_non_null(strstr(e.msg, "--sizes all"));
}

static void named_scalars(void **state)
{
    (void)state;
    kg_options o;
    kg_err e;
    const char *a[] = {"check", "x.so", "--op", "layer_norm", "--param", "eps=1e-6", "--verify-only"};
    assert_int_equal(parse(&o, &e, a, 7), 0);
    assert_int_equal(o.n_params, 1);
    assert_string_equal(o.params[0], "eps=1e-6");
    assert_true(o.verify_only);
    const char *b[] = {"run", "--param", "eps=1e-3"};
    assert_int_equal(parse(&o, &e, b, 3), 0);
    assert_true(o.suite);
}

/* An unknown operator's message lists every operator, without a trailing
 * comma (it was cut in a 256-byte buffer, and one more name overflowed it:
 * ASan in the sanitizer build); a command line too long for the results'
 * `command` ends with "..." instead of being cut silently. */
static void every_operator_is_named(void **state)
{
    (void)state;
    kg_options o;
    kg_err e;
    const char *a[] = {"check", "x.so", "--op", "nosuchop"};
    assert_int_equal(parse(&o, &e, a, 4), KG_EXIT_USAGE);
    const char *known = strstr(e.msg, "(known: ");
    assert_non_null(known);
    int n = 0;
    for (int i = 0; kg_ops[i]; i++, n++) {
        char want[80];
        snprintf(want, sizeof want, "%s%s%s", i ? ", " : "(known: ", kg_ops[i]->name, kg_ops[i + 1] ? ", " : ")");
        assert_non_null(strstr(known, want));
    }
    assert_true(n > 20);
    assert_non_null(strstr(e.msg, ", swiglu)"));
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    const char *b[] = {"check", big, "--json", big};
    assert_int_equal(parse(&o, &e, b, 4), 0);
    assert_int_equal(strlen(o.cmdline), sizeof o.cmdline - 1);
    assert_string_equal(o.cmdline + sizeof o.cmdline - 4, "...");
}

static void usage_errors(void **state)
{
    (void)state;
    struct {
        const char *args[8];
        int n;
        const char *msg;
    } cases[] = {
        {{"frobnicate"}, 1, "unknown command"},
        {{"check"}, 1, "check needs a candidate"},
        {{"check", "x.so", "--op", "conv9"}, 4, "unknown operator 'conv9'"},
        {{"check", "x.so", "--dtype", "int8"}, 4, "unknown dtype 'int8'"},
        {{"check", "x.so", "--op", "batched_matmul", "--dtype", "fp32"}, 6, "does not support fp32"},
        {{"check", "x.so", "--dtype", "int64"}, 4, "unknown dtype 'int64'"},
        {{"check", "x.so", "--op", "softmax", "--shape", "12x"}, 6, "bad shape '12x'"},
        {{"check", "x.so", "--trials"}, 3, "needs a value"},
        {{"check", "x.so", "--trials", "many"}, 4, "is not a whole number"},
        {{"check", "x.so", "--trials", "1.5"}, 4, "is not a whole number"},
        {{"check", "x.so", "--trials", "0x10"}, 4, "is not a whole number"},
        {{"check", "x.so", "--timeout", "nan"}, 4, "is not a decimal number"},
        {{"check", "x.so", "--timeout", "inf"}, 4, "is not a decimal number"},
        {{"check", "x.so", "--max-noise", "0x1p-3"}, 4, "is not a decimal number"},
        {{"check", "x.so", "--param", "eps"}, 4, "expected NAME=VALUE"},
        {{"check", "x.so", "--param", "alpha=1"}, 4, "no operator has that scalar"},
        {{"check", "x.so", "--op", "softmax", "--param", "eps=1e-6"}, 6, "softmax has no scalar 'eps'"},
        {{"check", "x.so", "--op", "layer_norm", "--param", "eps=nan"}, 6, "not a finite number"},
        {{"run", "--bogus"}, 2, "unknown option '--bogus'"},
        {{"run", "--roof", "guess"}, 3, "--roof takes measured or datasheet"},
        {{"check", "x.so", "--diagnose-patched-max", "-1"}, 4, "--diagnose-patched-max"},
        {{"check", "x.so", "--lib-cache-age", "0"}, 4, "--lib-cache-age"},
        {{"check", "x.so", "--lib-cache", "yes"}, 4, "unexpected argument 'yes'"},
        {{"check", "x.so", "--lib-cache-age", "60"}, 4, "--lib-cache-age without --lib-cache"},
        {{"check", "x.so", "--lib-cache-age", "3600"}, 4, "--lib-cache-age without --lib-cache"},
        /* every command takes only its own options */
        {{"ops", "--json", "f"}, 3, "kgate ops does not take --json (try kgate help ops)"},
        {{"report", "r.json", "-o", "x.html", "--trials", "5"}, 6, "kgate report does not take --trials"},
        {{"report", "r.json", "-o", "x.html", "--sandbox"}, 5, "kgate report does not take --sandbox"},
        {{"compare", "a.json", "b.json", "--e-ok", "0.7"}, 5, "kgate compare does not take --e-ok"},
        {{"peaks", "--op", "relu"}, 3, "kgate peaks does not take --op"},
        {{"check", "x.so", "--knob", "warps=4"}, 4, "kgate check does not take --knob"},
        {{"check", "x.so", "--hot=1"}, 3, "--hot takes no value"},
        {{"check", "x.so", "--nope=3"}, 3, "unknown option '--nope'"},
        {{"check", "x.so", "--trials=many"}, 3, "is not a whole number"},
        {{"help", "frobnicate"}, 2, "unknown command 'frobnicate'"},
        {{"check", "x.so", "-q", "-v"}, 4, "give -q or -v, not both"},
        {{"compare", "a.json", "b.json", "-q"}, 4, "kgate compare does not take -q"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kg_options o;
        kg_err e;
        int rc = parse(&o, &e, cases[i].args, cases[i].n);
        if (rc != KG_EXIT_USAGE || !strstr(e.msg, cases[i].msg))
            fail_msg("case %zu: rc %d msg '%s', want '%s'", i, rc, e.msg, cases[i].msg);
        assert_null(strchr(e.msg, '\n'));
    }
}

/* --name=VALUE is --name VALUE; a flag named with its value stays a flag */
static void inline_values(void **state)
{
    (void)state;
    const char *args[] = {"check", "x.so", "--shape=large", "--trials=5", "--json=r.json", "--diagnose=auto",
                          "--op", "softmax"};
    kg_options o;
    kg_err e;
    assert_int_equal(parse(&o, &e, args, 8), 0);
    assert_int_equal(o.n_shapes, 1);
    assert_string_equal(o.shape_texts[0], "large");
    assert_int_equal(o.trials, 5);
    assert_string_equal(o.json, "r.json");
    assert_int_equal(o.diagnose, KG_DIAG_AUTO);
    /* options handled apart from the table's kinds, inline too */
    const char *more[] = {"check", "x.so", "--op=layer_norm", "--param=eps=1e-6", "--diag-set=busy_max=0"};
    assert_int_equal(parse(&o, &e, more, 5), 0);
    assert_int_equal(o.n_params, 1);
    assert_string_equal(o.params[0], "eps=1e-6");
    const char *quiet[] = {"run", "-q"}, *loud[] = {"tune", "x.so:k", "-v"};
    assert_int_equal(parse(&o, &e, quiet, 2), 0);
    assert_true(o.quiet && !o.verbose);
    assert_int_equal(parse(&o, &e, loud, 3), 0);
    assert_true(o.verbose && !o.quiet);
    const char *help[] = {"help", "batch"};
    assert_int_equal(parse(&o, &e, help, 2), 0);
}

/* every command has its own help, which names it; help alone is the overview */
static void every_command_has_help(void **state)
{
    (void)state;
    const char *cmds[] = {"devices", "peaks", "ops", "check", "run", "tune", "explain", "compare",
                          "rejudge", "report", "version", "batch", "kernelbench"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "kgate %s", cmds[i]);
        if (kg_usage(cmds[i]) == kg_usage("help") || !strstr(kg_usage(cmds[i]), want))
            fail_msg("kgate help %s: no help of its own", cmds[i]);
    }
    assert_non_null(strstr(kg_usage(NULL), "usage: kgate COMMAND"));
}

static int kept_fn(void *ctx, const char *name, const char *v, kg_err *err)
{
    (void)err;
    snprintf((char *)ctx, 64, "%s=%s", name, v ? v : "(none)");
    return 0;
}

/* The table parser every command shares, kgate batch's included. */
static void one_table_for_every_command(void **state)
{
    (void)state;
    const char *out = NULL;
    int per = 0;
    double secs = 0;
    char kept[64] = "";
    const kg_optdef t[] = {
        {"-o", KG_OPT_STR, &out, 0, 0, NULL, "batch", NULL},
        {"--jobs", KG_OPT_INT, &per, 1, 4, NULL, "batch", NULL},
        {"--wait", KG_OPT_NUM, &secs, 0.001, 10, NULL, "batch report", NULL},
        {"--done", KG_OPT_FN, NULL, 0, 0, NULL, "batch", kept_fn},
        {"--now", KG_OPT_ACTION, NULL, 0, 0, NULL, "batch", kept_fn},
        {"--mine", KG_OPT_FLAG, &per, 3, 0, NULL, "report", NULL},
    };
    size_t n = sizeof t / sizeof t[0];
    char *argv[] = {"kgate", "batch", "-o", "r.jsonl", "--jobs=2", "--wait", "0.5", "--done=d.jsonl", "--now",
                    "--jobs", "9", "--mine", "--nope", "--now=1", "--wait"};
    int argc = (int)(sizeof argv / sizeof argv[0]), i = 2;
    kg_err e = {0, ""};
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), 0);
    assert_string_equal(out, "r.jsonl");
    assert_int_equal(i, 3); /* the value taken */
    i = 4;
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), 0);
    assert_int_equal(per, 2); /* inline */
    i = 5;
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), 0);
    assert_true(secs == 0.5 && i == 6);
    i = 7;
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), 0);
    assert_string_equal(kept, "--done=d.jsonl");
    i = 8;
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), 0);
    assert_string_equal(kept, "--now=(none)");
    i = 9;
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), KG_EXIT_USAGE);
    assert_string_equal(e.msg, "--jobs: '9' is not a whole number in [1, 4]");
    i = 11;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), KG_EXIT_USAGE);
    assert_string_equal(e.msg, "kgate batch does not take --mine (try kgate help batch)");
    i = 12;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), KG_EXIT_USAGE);
    assert_string_equal(e.msg, "unknown option '--nope' (try kgate help batch)");
    i = 13;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), KG_EXIT_USAGE);
    assert_string_equal(e.msg, "--now takes no value");
    i = 14;
    memset(&e, 0, sizeof e);
    assert_int_equal(kg_opt_one(t, n, "batch", argc, argv, &i, kept, &e), KG_EXIT_USAGE);
    assert_string_equal(e.msg, "option --wait needs a value");
}

/* The option names a help text lists: each line that starts "  -". */
static int help_options(const char *help, char names[][40], int most)
{
    int n = 0;
    for (const char *l = help; l && *l && n < most; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "  -", 3) != 0)
            continue;
        const char *p = l + 2, *end = strstr(p, "  ");
        while (p < end && n < most) {
            size_t k = strcspn(p, " ,\n");
            snprintf(names[n++], 40, "%.*s", (int)k, p);
            p += k;
            p += strspn(p, ", ");
            if (*p != '-')
                break; /* a value's placeholder: the next name, if any, follows a comma */
        }
    }
    return n;
}

/* What parsing `kgate CMD [x.so] NAME 1` says of NAME. */
static int refused_for(const char *cmd, const char *name)
{
    kg_options o;
    kg_err e;
    const char *a[4] = {cmd, "x.so:k", name, "1"};
    int run = strcmp(cmd, "run") == 0;
    const char *b[3] = {cmd, name, "1"};
    parse(&o, &e, run ? b : a, run ? 3 : 4);
    return strstr(e.msg, "does not take") != NULL || strstr(e.msg, "unknown option") != NULL;
}

/* kgate help CMD lists exactly the options CMD's table row says it takes:
 * each one it lists is accepted, each one check, run or tune lists and
 * it does not is refused. */
static void help_lists_what_each_command_takes(void **state)
{
    (void)state;
    const char *cmds[] = {"check", "run", "tune"};
    char all[3][64][40];
    int n[3];
    for (int c = 0; c < 3; c++) {
        n[c] = help_options(kg_usage(cmds[c]), all[c], 64);
        assert_true(n[c] > 20);
        for (int i = 0; i < n[c]; i++)
            if (refused_for(cmds[c], all[c][i]))
                fail_msg("kgate help %s lists %s, which it refuses", cmds[c], all[c][i]);
    }
    int checked = 0;
    for (int c = 0; c < 3; c++)
        for (int d = 0; d < 3; d++)
            for (int i = 0; i < n[d]; i++) {
                int listed = 0;
                for (int k = 0; k < n[c] && !listed; k++)
                    listed = strcmp(all[c][k], all[d][i]) == 0;
                if (!listed) {
                    checked++;
                    if (!refused_for(cmds[c], all[d][i]))
                        fail_msg("kgate %s takes %s, which its help does not list", cmds[c], all[d][i]);
                }
            }
    assert_true(checked >= 4); /* --budget and --knob for check and run, --live for check and tune */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_table_for_every_command),
        cmocka_unit_test(help_lists_what_each_command_takes),
        cmocka_unit_test(check_with_everything),
        cmocka_unit_test(host_allowance_by_candidate),
        cmocka_unit_test(usage_errors),
        cmocka_unit_test(inline_values),
        cmocka_unit_test(every_command_has_help),
        cmocka_unit_test(every_operator_is_named),
        cmocka_unit_test(named_scalars),
        cmocka_unit_test(sizes_all_is_every_preset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
