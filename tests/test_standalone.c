/*
 * test_standalone.c: the repository needs nothing beside it.  Every path in
 * a test's command line (as Meson recorded it in meson-info/intro-tests.json)
 * lies inside the source or the build tree; every file an example scenario
 * names ("path", "dir") exists inside the source tree; and `servesim
 * validate` run from an empty directory finds its data without --data.  A
 * test or an example that reaches for a folder outside the repository fails
 * here even on a machine that has that folder.  argv[1] is the source root, argv[2] the
 * build root, argv[3] the servesim binary.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

static char *src, *build;
static const char *servesim;
static char tmp[] = "/tmp/servesim-standalone-XXXXXX";

/* An absolute path with ".", ".." and repeated slashes taken out, without
 * asking the file system: a path that escapes stays caught even where its
 * target does not exist. */
static char *normalise(const char *path)
{
    char *copy = util_xstrdup(path), *out = util_xmalloc(strlen(path) + 2), *save = NULL;
    size_t n = 0;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, ".")) continue;
        if (!strcmp(c, "..")) {
            while (n > 0 && out[--n] != '/') {}
            continue;
        }
        n += (size_t)sprintf(out + n, "/%s", c);
    }
    if (n == 0) out[n++] = '/';
    out[n] = '\0';
    free(copy);
    return out;
}

static bool under(const char *path, const char *root)
{
    size_t n = strlen(root);
    return !strncmp(path, root, n) && (path[n] == '/' || path[n] == '\0');
}

/* ---- the tests' command lines ---- */

static void check_test(const cJSON *t)
{
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"));
    const cJSON *a;
    int outside = 0, i = 0;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(t, "cmd")) {
        const char *s = cJSON_GetStringValue(a);
        /* the program that runs a script test (/usr/bin/python3) is the
         * system's, as a shell is; its arguments are checked like any */
        bool system_program =
            i++ == 0 && s && (!strncmp(s, "/usr/bin/", 9) || !strncmp(s, "/bin/", 5));
        if (!s || s[0] != '/' || system_program) continue;
        char *p = normalise(s);
        if (!under(p, src) && !under(p, build)) {
            tap_diag("%s: %s is %s", name, s, p);
            outside++;
        }
        free(p);
    }
    is_int(outside, 0, "test %s: its command names nothing outside the source and build trees",
           name ? name : "?");
}

static void test_commands(void)
{
    char *path = util_xasprintf("%s/meson-info/intro-tests.json", build);
    util_diag d;
    util_diag_init(&d);
    cJSON *tests = NULL;
    is_int(util_json_read_file(path, &tests, &d), 0, "Meson's list of tests reads");
    if (d.count) tap_diag("%s", d.msgs[0]);
    ok(cJSON_GetArraySize(tests) > 10, "and lists the tests (%d)", cJSON_GetArraySize(tests));
    const cJSON *t;
    cJSON_ArrayForEach(t, tests) check_test(t);
    cJSON_Delete(tests);
    util_diag_fini(&d);
    free(path);
}

/* ---- the example scenarios ---- */

/* Every "path" and "dir" string in o, resolved from the scenario's folder:
 * inside the source tree and there.  Returns how many it checked. */
static int check_paths(const cJSON *o, const char *file, const char *folder)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, o) {
        if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
            n += check_paths(c, file, folder);
            continue;
        }
        bool named = c->string && (!strcmp(c->string, "path") || !strcmp(c->string, "dir"));
        if (!named || !cJSON_IsString(c)) continue;
        char *joined = util_path_join(folder, c->valuestring), *p = normalise(joined);
        ok(under(p, src), "%s: %s is a file of the repository", file + strlen(src) + 1,
           c->valuestring);
        is_int(access(p, R_OK), 0, "%s: %s can be read", file + strlen(src) + 1, c->valuestring);
        free(p);
        free(joined);
        n++;
    }
    return n;
}

/* The scenarios under folder and its subfolders; returns how many paths
 * they name. */
static int check_examples(const char *folder)
{
    DIR *dir = opendir(folder);
    int n = 0;
    for (struct dirent *e; dir && (e = readdir(dir));) {
        if (e->d_name[0] == '.') continue;
        char *path = util_xasprintf("%s/%s", folder, e->d_name);
        size_t len = strlen(e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            n += check_examples(path);
        } else if (len > 5 && !strcmp(e->d_name + len - 5, ".json")) {
            util_diag d;
            util_diag_init(&d);
            cJSON *o = NULL;
            if (util_json_read_file(path, &o, &d) == 0) n += check_paths(o, path, folder);
            else ok(false, "%s reads: %s", path, d.count ? d.msgs[0] : "?");
            cJSON_Delete(o);
            util_diag_fini(&d);
        }
        free(path);
    }
    if (dir) closedir(dir);
    return n;
}

static void test_examples(void)
{
    char *folder = util_xasprintf("%s/examples", src);
    int n = check_examples(folder);
    /* azure-code.json and the three validation scenarios name their traces */
    ok(n >= 4, "the examples name their files (%d paths checked)", n);
    free(folder);
}

/* ---- servesim validate away from the repository ---- */

/* Runs servesim with up to 30 arguments (NULL-terminated), its output in tmp. */
/* Runs servesim with up to 30 arguments (NULL-terminated). */
#define sv(...) runner_run(servesim, tmp, __VA_ARGS__)

static void test_validate(void)
{
    ok(mkdtemp(tmp) != NULL, "a temporary directory");
    char *empty = util_xasprintf("%s/empty", tmp), cwd[4096];
    ok(getcwd(cwd, sizeof cwd) != NULL, "the test's own directory is known");
    is_int(mkdir(empty, 0700), 0, "servesim runs from an empty one");
    is_int(chdir(empty), 0, "and it runs there");
    /* Missing data is bad input (exit 2) naming a file; whether the
     * comparison then holds up is test_validate's business, not this one's. */
    result r = sv("validate", "--json", NULL);
    ok(r.status != 2, "validate without --data finds its data (exit %d)", r.status);
    ok(!strstr(r.err, "no validation data"), "it does not say there is no validation data");
    ok(!strstr(r.err, "cannot open"), "nor that a file cannot be opened");
    if (r.status) tap_diag("%s", r.err);
    runner_drop(&r);
    r = sv("validate", "--data", "nowhere", NULL);
    is_int(r.status, 2, "--data naming no folder is bad input (exit %d)", r.status);
    has_str(r.err, "nowhere/", "and the file it tried is named");
    runner_drop(&r);
    r = sv("validate", "--help", NULL);
    has_str(r.out, "data/validation/llmservingsim", "--help says where it looks");
    runner_drop(&r);
    is_int(chdir(cwd), 0, "back to the test's directory");
    char *out = util_xasprintf("%s/stdout", tmp), *err = util_xasprintf("%s/stderr", tmp);
    remove(out);
    remove(err);
    rmdir(empty);
    rmdir(tmp);
    free(out);
    free(err);
    free(empty);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        printf("Bail out! usage: test_standalone SOURCE_ROOT BUILD_ROOT SERVESIM\n");
        return 1;
    }
    src = normalise(argv[1]);
    build = normalise(argv[2]);
    test_commands();
    test_examples();
    servesim = argv[3];
    test_validate();
    free(src);
    free(build);
    return tap_done();
}
