/* Where kgate finds the files it ships (kg_shipped, base/kg.h): beside the
 * executable in a build tree, in the installed tree's directories relative
 * to its bin directory (CMake's install directories, the same KG_INSTALL_*
 * the library is built with), the build tree first, and the build-tree path
 * when neither has it. Fake trees in a temporary directory. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/kg.h"

static char root[PATH_MAX];

/* Makes root/rel: a directory when rel ends in '/', else an empty file,
 * with the directories above it. */
static void make(const char *rel)
{
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    for (char *s = p + strlen(root) + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0700);
            *s = '/';
        }
    if (p[strlen(p) - 1] != '/') {
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fclose(f);
    }
}

/* root/rel, with ".." and links resolved. */
static const char *real(const char *rel, char *buf)
{
    char p[PATH_MAX * 2];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    assert_non_null(realpath(p, buf));
    return buf;
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "%s/shipped-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

/* got is root/rel, as a string */
static void assert_at(const char *got, const char *rel)
{
    char want[PATH_MAX * 2];
    snprintf(want, sizeof want, "%s/%s", root, rel);
    assert_string_equal(got, want);
}

static void in_a_build_tree_beside_the_executable(void **state)
{
    (void)state;
    char exe[PATH_MAX], got[PATH_MAX];
    make("b/build/libkgate.so");
    make("b/build/libkgate_bundled.so");
    make("b/build/tilelang/libkgate_tilelang.so");
    make("b/python/kgate/");
    make("b/build/sample-run.json");
    snprintf(exe, sizeof exe, "%s/b/build/kgate", root);
    assert_int_equal(kg_shipped(exe, KG_SHIP_LIB, "libkgate.so", got, sizeof got), 0);
    assert_at(got, "b/build/libkgate.so");
    assert_int_equal(kg_shipped(exe, KG_SHIP_CANDIDATE, "libkgate_bundled.so", got, sizeof got), 0);
    assert_at(got, "b/build/libkgate_bundled.so");
    assert_int_equal(kg_shipped(exe, KG_SHIP_CANDIDATE, "tilelang/libkgate_tilelang.so", got, sizeof got), 0);
    assert_at(got, "b/build/tilelang/libkgate_tilelang.so");
    assert_int_equal(kg_shipped(exe, KG_SHIP_PYTHON, "", got, sizeof got), 0);
    assert_at(got, "b/build/../python");
    assert_int_equal(kg_shipped(exe, KG_SHIP_DATA, "sample-run.json", got, sizeof got), 0);
    assert_at(got, "b/build/sample-run.json");
}

/* An installed tree as CMakeLists.txt lays it out (lib, lib/kgate,
 * share/kgate/python and share/kgate by default): each file found there,
 * its path resolved. */
static void in_an_installed_tree_under_its_prefix(void **state)
{
    (void)state;
    char exe[PATH_MAX], got[PATH_MAX], want[PATH_MAX];
    make("p/bin/");
    make("p/bin/" KG_INSTALL_LIB "/libkgate.so");
    make("p/bin/" KG_INSTALL_CANDIDATES "/libkgate_bundled.so");
    make("p/bin/" KG_INSTALL_CANDIDATES "/tilelang/libkgate_tilelang.so");
    make("p/bin/" KG_INSTALL_PYTHON "/kgate/");
    make("p/bin/" KG_INSTALL_DATA "/sample-run.json");
    snprintf(exe, sizeof exe, "%s/p/bin/kgate", root);
    assert_int_equal(kg_shipped(exe, KG_SHIP_LIB, "libkgate.so", got, sizeof got), 0);
    assert_string_equal(got, real("p/bin/" KG_INSTALL_LIB "/libkgate.so", want));
    assert_int_equal(kg_shipped(exe, KG_SHIP_CANDIDATE, "libkgate_bundled.so", got, sizeof got), 0);
    assert_string_equal(got, real("p/bin/" KG_INSTALL_CANDIDATES "/libkgate_bundled.so", want));
    assert_null(strstr(got, "/bin/../")); /* PREFIX/lib/..., said as such */
    assert_int_equal(kg_shipped(exe, KG_SHIP_CANDIDATE, "tilelang/libkgate_tilelang.so", got, sizeof got), 0);
    assert_string_equal(got, real("p/bin/" KG_INSTALL_CANDIDATES "/tilelang/libkgate_tilelang.so", want));
    assert_int_equal(kg_shipped(exe, KG_SHIP_PYTHON, "", got, sizeof got), 0);
    assert_string_equal(got, real("p/bin/" KG_INSTALL_PYTHON, want));
    assert_int_equal(kg_shipped(exe, KG_SHIP_DATA, "sample-run.json", got, sizeof got), 0);
    assert_string_equal(got, real("p/bin/" KG_INSTALL_DATA "/sample-run.json", want));
    assert_null(strstr(got, "/bin/../"));
}

static void the_build_tree_comes_first(void **state)
{
    (void)state;
    char exe[PATH_MAX], got[PATH_MAX];
    make("both/bin/libkgate.so");
    make("both/bin/" KG_INSTALL_LIB "/libkgate.so");
    snprintf(exe, sizeof exe, "%s/both/bin/kgate", root);
    assert_int_equal(kg_shipped(exe, KG_SHIP_LIB, "libkgate.so", got, sizeof got), 0);
    assert_at(got, "both/bin/libkgate.so");
}

static void missing_gives_the_build_tree_path(void **state)
{
    (void)state;
    char exe[PATH_MAX], got[PATH_MAX];
    make("none/bin/");
    snprintf(exe, sizeof exe, "%s/none/bin/kgate", root);
    assert_int_equal(kg_shipped(exe, KG_SHIP_CANDIDATE, "libkgate_bundled.so", got, sizeof got), -1);
    assert_at(got, "none/bin/libkgate_bundled.so");
    assert_int_equal(kg_shipped(exe, KG_SHIP_PYTHON, "", got, sizeof got), -1);
    assert_at(got, "none/bin/../python");
    assert_int_equal(kg_shipped(exe, KG_SHIP_DATA, "sample-run.json", got, sizeof got), -1);
    assert_at(got, "none/bin/sample-run.json");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(in_a_build_tree_beside_the_executable),
        cmocka_unit_test(in_an_installed_tree_under_its_prefix),
        cmocka_unit_test(the_build_tree_comes_first),
        cmocka_unit_test(missing_gives_the_build_tree_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
