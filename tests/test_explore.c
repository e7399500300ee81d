/*
 * test_explore.c: `servesim explore` as a browser and an attacker see it,
 * through a small HTTP client over a socket.  The API must answer what the
 * command line answers -- each lesson's numbers and table those of
 * `servesim lesson NAME --json` with the response's own --set assignments,
 * the what-if report that of `servesim report --slo ... --by class --json`
 * -- and every bad request (unknown lesson, control or value, a value off
 * the shipped grid, too many or too long arguments, a long URL, POST, a
 * path outside the page, a foreign Host, a computation past its time) must
 * get its status with a message naming the parameter, while the server
 * goes on serving.  Ctrl-C ends it with status 130 and nothing written.
 * argv[1] is the servesim binary, argv[2] the source root.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runner.h"
#include "tap.h"
#include "util.h"

static const char *servesim, *root;
static char dir[] = "/tmp/servesim-explore-XXXXXX";

/* ---- the server ---- */

typedef struct server {
    pid_t pid;
    int port;
    char host[32]; /* the address its URL names */
    char *out, *err;
} server;

/* Starts servesim explore with the arguments (NULL-terminated) and reads
 * the port from its first line.  A computation may take 60 s, not 10: a
 * sanitizer build on a loaded 2-core machine runs a lesson several times
 * slower, and only the tests of the limit itself, which set their own
 * (the last --time-limit wins), are about it. */
static server start(const char *a0, ...)
{
    char *argv[18] = {"servesim", "explore", "--port", "0", "--time-limit", "60"};
    int n = 6;
    va_list ap;
    va_start(ap, a0);
    for (const char *a = a0; a && n < 17; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    server s = {.out = util_xasprintf("%s/explore.out", dir),
                .err = util_xasprintf("%s/explore.err", dir)};
    s.pid = runner_spawn(servesim, argv, s.out, s.err);
    for (int tries = 0; tries < 200 && !s.port; tries++) {
        char *text = runner_read(s.out);
        const char *at = text ? strstr(text, "http://") : NULL;
        if (at && sscanf(at + 7, "%31[0-9.]:%d", s.host, &s.port) != 2) s.port = 0;
        free(text);
        if (!s.port) nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
    return s;
}

/* Ctrl-C: returns the exit status. */
static int stop(server *s)
{
    kill(s->pid, SIGINT);
    result r = runner_finish(s->pid, s->out, s->err);
    int status = r.status;
    runner_drop(&r);
    unlink(s->out);
    unlink(s->err);
    free(s->out);
    free(s->err);
    return status;
}

/* ---- a client ---- */

typedef struct reply {
    int status;
    char *head, *body; /* body: NUL-terminated, len bytes */
    size_t len;
} reply;

static void reply_fini(reply *r)
{
    free(r->head);
    free(r->body);
}

/* A socket connected to to:port from the address from (NULL: any), or -1. */
static int dial(const char *from, const char *to, int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    if (from && inet_pton(AF_INET, from, &a.sin_addr) == 1 &&
        bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, to, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void send_text(int fd, const char *text)
{
    size_t n = strlen(text);
    for (size_t off = 0; off < n;) {
        ssize_t k = send(fd, text + off, n - off, MSG_NOSIGNAL);
        if (k <= 0) break;
        off += (size_t)k;
    }
}

/* Reads a reply to the end and closes fd; status 0 when the server closed
 * without one. */
static reply read_reply(int fd)
{
    reply r = {0};
    if (fd < 0) return r;
    size_t cap = 1 << 16, len = 0;
    char *buf = util_xmalloc(cap);
    for (ssize_t k; (k = recv(fd, buf + len, cap - len - 1, 0)) > 0;)
        if ((len += (size_t)k) + 1 == cap) buf = util_xrealloc(buf, cap *= 2);
    close(fd);
    buf[len] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    if (!end || sscanf(buf, "HTTP/1.%*d %d", &r.status) != 1) {
        free(buf);
        return r;
    }
    r.head = util_xasprintf("%.*s", (int)(end - buf), buf);
    r.len = len - (size_t)(end + 4 - buf);
    r.body = util_xmalloc(r.len + 1);
    memcpy(r.body, end + 4, r.len);
    r.body[r.len] = '\0';
    free(buf);
    return r;
}

/* Sends request (the whole text) to to:port from from and reads the reply. */
static reply raw_at(const char *from, const char *to, int port, const char *request)
{
    int fd = dial(from, to, port);
    if (fd >= 0) send_text(fd, request);
    return read_reply(fd);
}

static reply raw(int port, const char *request)
{
    return raw_at(NULL, "127.0.0.1", port, request);
}

/* GET target, sent from the address from, the reply left to read_reply. */
static int get_sent(const char *from, int port, const char *target)
{
    int fd = dial(from, "127.0.0.1", port);
    char *req = util_xasprintf("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
                               target, port);
    if (fd >= 0) send_text(fd, req);
    free(req);
    return fd;
}

/* Whether the reply on fd has not begun to come (after waiting ms). */
static bool pending(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return fd >= 0 && poll(&p, 1, ms) == 0;
}

static reply get(int port, const char *target)
{
    char *req = util_xasprintf("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
                               target, port);
    reply r = raw(port, req);
    free(req);
    return r;
}

static cJSON *get_json(int port, const char *target, int *status)
{
    reply r = get(port, target);
    *status = r.status;
    cJSON *j = r.body ? cJSON_Parse(r.body) : NULL;
    reply_fini(&r);
    return j;
}

/* ---- what the command line says ---- */

/* The --json a command printed, parsed; NULL when it failed. */
static cJSON *cli_json(char **argv)
{
    result r = runner_argv(servesim, dir, argv);
    cJSON *j = r.status == 0 ? cJSON_Parse(r.out) : NULL;
    if (r.status) tap_diag("%s %s: %s", argv[1], argv[2], r.err);
    runner_drop(&r);
    return j;
}

/* `servesim lesson ID --json --set S...` with the sets the API answered with. */
static cJSON *lesson_cli(const char *id, const cJSON *sets, bool quick)
{
    char *argv[32] = {"servesim", "lesson", (char *)id, "--json"};
    int n = 4;
    const cJSON *s;
    cJSON_ArrayForEach(s, sets) if (n < 28)
    {
        argv[n++] = "--set";
        argv[n++] = s->valuestring;
    }
    if (quick) argv[n++] = "--quick";
    argv[n] = NULL;
    return cli_json(argv);
}

/* ---- the tests ---- */

static const char *const lesson_ids[] = {
    "two-clocks", "chat-vs-summary", "batching", "speculation", "utilisation", "tail", "priorities",
    "memory", "day", "fan-out", "definitions"};
enum { N_LESSONS = 11 };

static const char *str_of(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The lesson's shipped file, parsed (caller frees). */
static cJSON *lesson_file(const char *id)
{
    char *path = util_xasprintf("%s/examples/lessons/%s.json", root, id);
    char *text = runner_read(path);
    cJSON *file = text ? cJSON_Parse(text) : NULL;
    free(text);
    free(path);
    return file;
}

/* GET /api/lessons, as the page starts with it (caller frees): each
 * panel led by a slider, every control's ends lessons that run. */
static cJSON *test_lessons_list(int port)
{
    int status;
    cJSON *j = get_json(port, "/api/lessons", &status);
    is_int(status, 200, "GET /api/lessons");
    const cJSON *lessons = cJSON_GetObjectItemCaseSensitive(j, "lessons");
    is_int(cJSON_GetArraySize(lessons), N_LESSONS, "eleven lessons");
    bool first_range = true;
    const cJSON *l;
    cJSON_ArrayForEach(l, lessons)
    {
        const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(l, "controls"), 0);
        const char *kind = str_of(c0, "kind");
        first_range &= kind && !strcmp(kind, "range");
    }
    ok(first_range, "each lesson's first control is a slider");
    /* each control's ends are lessons that run (a sweep cut short enough
     * may be too short for its lesson) */
    bool ends_run = true;
    cJSON_ArrayForEach(l, lessons)
    {
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(l, "controls"))
        {
            const cJSON *values = cJSON_GetObjectItemCaseSensitive(c, "values");
            int last = cJSON_GetArraySize(values) - 1;
            for (int end = 0; end < 2; end++) {
                char *t = util_xasprintf("/api/lesson?name=%s&%s=%.17g", str_of(l, "id"),
                                         str_of(c, "name"),
                                         cJSON_GetArrayItem(values, end ? last : 0)->valuedouble);
                reply r = get(port, t);
                if (r.status != 200) tap_diag("%s: %d %s", t, r.status, r.body);
                ends_run &= r.status == 200;
                reply_fini(&r);
                free(t);
            }
        }
    }
    ok(ends_run, "every control's smallest and largest values run");
    return j;
}

/* Whether values are grid[off..off + m - 1] for an off that puts them at
 * one end of the grid: the sweep cut short there, no value of its own. */
static bool is_cut(const cJSON *values, const cJSON *grid)
{
    int m = cJSON_GetArraySize(values), n = cJSON_GetArraySize(grid);
    for (int off = 0; m && off + m <= n; off++) {
        if (off && off + m != n) continue;
        bool same = true;
        for (int i = 0; i < m; i++)
            same &= cJSON_GetNumberValue(cJSON_GetArrayItem(values, i)) ==
                    cJSON_GetNumberValue(cJSON_GetArrayItem(grid, off + i));
        if (same) return true;
    }
    return false;
}

/* A control's numbers are its lesson file's (read at start-up, not copied
 * into explore/): a sweep's values are the file's grid at the control's
 * --set path, less only the cuts too short for the lesson (none needs more
 * than three points); a value starts at the file's. */
static void test_controls_derived(const cJSON *list)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(list, "lessons"))
    {
        const char *id = str_of(l, "id");
        cJSON *file = lesson_file(id);
        ok(file != NULL, "%s: its shipped file parses", id);
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(l, "controls"))
        {
            const char *set = str_of(c, "set");
            const cJSON *shipped = set ? util_json_get(file, set) : NULL;
            const cJSON *values = cJSON_GetObjectItemCaseSensitive(c, "values");
            double dflt = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "default"));
            ok(cJSON_IsArray(shipped) || cJSON_IsNumber(shipped),
               "%s %s: the file has it, a value or a sweep", id, set);
            if (cJSON_IsArray(shipped)) {
                ok(is_cut(values, shipped), "%s %s: its values are the file's sweep, from one end",
                   id, set);
                cmp_ok(cJSON_GetArraySize(values), >=, cJSON_GetArraySize(shipped) - 2,
                       "%s %s: less only the cuts too short to run", id, set);
            } else if (cJSON_IsNumber(shipped)) {
                cmp_ok(dflt, ==, shipped->valuedouble, "%s %s: its default is the file's value", id,
                       set);
            }
        }
        cJSON_Delete(file);
    }
}

/* The value the --set of sets for path gives it, parsed; NULL for none. */
static cJSON *set_value(const cJSON *sets, const char *path)
{
    size_t n = strlen(path);
    const cJSON *s;
    cJSON_ArrayForEach(s, sets)
    {
        const char *text = cJSON_GetStringValue(s);
        if (text && !strncmp(text, path, n) && text[n] == '=') return cJSON_Parse(text + n + 1);
    }
    return NULL;
}

/* At its defaults a panel runs its lesson as shipped: each control's --set
 * gives its path the file's own value (a sweep whole). */
static void check_defaults_shipped(const char *id, const cJSON *controls, const cJSON *sets)
{
    cJSON *file = lesson_file(id);
    const cJSON *c;
    cJSON_ArrayForEach(c, controls)
    {
        const char *path = str_of(c, "set");
        cJSON *given = path ? set_value(sets, path) : NULL;
        ok(given && cJSON_Compare(given, util_json_get(file, path), true),
           "%s: at its defaults, %s is the file's", id, path);
        cJSON_Delete(given);
    }
    cJSON_Delete(file);
}

/* Whether a and b (present) have the same JSON as their member key. */
static bool same_member(const cJSON *a, const cJSON *b, const char *key)
{
    return b && cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a, key),
                              cJSON_GetObjectItemCaseSensitive(b, key), true);
}

/* The controls of lesson id in the list. */
static const cJSON *controls_of(const cJSON *list, const char *id)
{
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(list, "lessons"))
    {
        const char *lid = str_of(l, "id");
        if (lid && !strcmp(lid, id)) return cJSON_GetObjectItemCaseSensitive(l, "controls");
    }
    return NULL;
}

/* A lesson at its defaults: the lesson as shipped, and its numbers, table
 * and sentences the command line's for the same --set.  Returns the reply. */
static cJSON *agree_at_defaults(int port, const char *id, const cJSON *controls)
{
    char *target = util_xasprintf("/api/lesson?name=%s", id);
    int status;
    cJSON *api = get_json(port, target, &status);
    free(target);
    is_int(status, 200, "%s: 200 at its defaults", id);
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(api, "sets");
    check_defaults_shipped(id, controls, sets);
    cJSON *cli = lesson_cli(id, sets, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(api, "quick")));
    ok(same_member(api, cli, "numbers"),
       "%s: its numbers are servesim lesson's with the same --set", id);
    ok(same_member(api, cli, "table"), "%s: and its table", id);
    ok(same_member(api, cli, "findings"), "%s: and its sentences", id);
    const char *svg = str_of(api, "svg");
    ok(svg && strstr(svg, "<svg "), "%s: its figure, as SVG", id);
    ok(svg && strstr(svg, "class=\"series\""), "%s: with its series drawn", id);
    double ms = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(api, "elapsed_ms"));
    tap_diag("%s: computed in %.0f ms", id, ms);
    cJSON_Delete(cli);
    return api;
}

/* The two-clocks panel says what vLLM V1's step pipeline adds to TTFT at
 * the lesson's load: a sentence with the number beside the sentences
 * (numbers.pipeline_ttft_ms), which is the difference of the table's two
 * vllm-v1 rows, whose TTFTs it quotes. */
static void pipeline_shown(const char *id, const cJSON *api, const char *when)
{
    if (strcmp(id, "two-clocks")) return;
    double pipe = util_json_number(cJSON_GetObjectItemCaseSensitive(api, "numbers"),
                                   "pipeline_ttft_ms", NAN);
    double sync = NAN, shipped = NAN;
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(api, "table"))
    {
        const char *engine = str_of(row, "engine"), *varied = str_of(row, "varied");
        if (!engine || !varied || strcmp(varied, "engine")) continue;
        if (!strcmp(engine, "vllm-v1, async off")) sync = util_json_number(row, "ttft_ms", NAN);
        if (!strcmp(engine, "vllm-v1")) shipped = util_json_number(row, "ttft_ms", NAN);
    }
    ok(isfinite(sync) && isfinite(shipped), "two-clocks %s: its table has the vllm-v1 rows", when);
    ok(fabs(pipe - (shipped - sync)) < 1e-9,
       "two-clocks %s: the pipeline's number (%.3f ms) is their TTFTs' difference", when, pipe);
    const char *said = NULL;
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(api, "findings"))
    {
        const char *t = cJSON_GetStringValue(f);
        if (t && strstr(t, "vllm-v1's step pipeline")) said = t;
    }
    ok(said != NULL, "two-clocks %s: a sentence says what vllm-v1's step pipeline adds", when);
    char adds[96], nothing[96], pair[64];
    snprintf(adds, sizeof adds, "step pipeline adds %.2f ms to the mean TTFT", pipe);
    snprintf(nothing, sizeof nothing, "step pipeline adds nothing to the mean TTFT (%+.2f ms",
             pipe);
    snprintf(pair, sizeof pair, "%.2f -> %.2f ms", sync, shipped);
    ok(said && (strstr(said, adds) || strstr(said, nothing)),
       "two-clocks %s: with its number (%.2f ms)", when, pipe);
    ok(said && strstr(said, pair), "two-clocks %s: and the rows' TTFTs (%s)", when, pair);
}

/* The first slider one step down from its default (up from the first):
 * other numbers, the command line's for the new --set. */
static void agree_moved(int port, const char *id, const cJSON *controls, const cJSON *at_defaults)
{
    const cJSON *ctl = cJSON_GetArrayItem(controls, 0);
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(ctl, "values");
    double dflt = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ctl, "default"));
    int at = 0;
    for (int k = 0; k < cJSON_GetArraySize(values); k++)
        if (cJSON_GetArrayItem(values, k)->valuedouble == dflt) at = k;
    double moved = cJSON_GetNumberValue(cJSON_GetArrayItem(values, at > 0 ? at - 1 : at + 1));
    char *target =
        util_xasprintf("/api/lesson?name=%s&%s=%.17g&seed=2", id, str_of(ctl, "name"), moved);
    int status;
    cJSON *api = get_json(port, target, &status);
    free(target);
    is_int(status, 200, "%s: 200 with its first slider moved", id);
    ok(api && !same_member(at_defaults, api, "numbers"),
       "%s: moving its first slider changes its numbers", id);
    cJSON *cli = lesson_cli(id, cJSON_GetObjectItemCaseSensitive(api, "sets"),
                            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(api, "quick")));
    ok(same_member(api, cli, "numbers"), "%s: to servesim lesson's for the same --set", id);
    pipeline_shown(id, api, "with its first slider moved");
    cJSON_Delete(cli);
    cJSON_Delete(api);
}

static void test_lessons_agree(int port, const cJSON *list)
{
    for (int i = 0; i < N_LESSONS; i++) {
        const cJSON *controls = controls_of(list, lesson_ids[i]);
        cJSON *api = agree_at_defaults(port, lesson_ids[i], controls);
        pipeline_shown(lesson_ids[i], api, "at its defaults");
        agree_moved(port, lesson_ids[i], controls, api);
        cJSON_Delete(api);
    }
}

/* The speculation panel: at its defaults the speedup crosses 1 between
 * its lightest and heaviest load, the sentence naming where; with every
 * draft accepted (the accepted-length slider at 4) it no longer does
 * within the sweep, and the sentences say so. */
static void test_speculation_panel(int port)
{
    int status;
    cJSON *api = get_json(port, "/api/lesson?name=speculation", &status);
    const cJSON *numbers = cJSON_GetObjectItemCaseSensitive(api, "numbers");
    double light = util_json_number(numbers, "lightest_speedup", NAN),
           heavy = util_json_number(numbers, "heaviest_speedup", NAN),
           cross = util_json_number(numbers, "crossover_users", NAN);
    ok(light > 1 && heavy < 1, "speculation: faster at the lightest load (x%.2f), slower at the "
                               "heaviest (x%.2f)", light, heavy);
    char text[64];
    snprintf(text, sizeof text, "crosses x1 at about %.0f users", cross);
    const cJSON *f;
    bool said = false;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(api, "findings"))
        said |= cJSON_GetStringValue(f) && strstr(cJSON_GetStringValue(f), text);
    ok(isfinite(cross) && said, "speculation: a sentence names the crossover (%s)", text);
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=speculation&accepted=4", &status);
    is_int(status, 200, "speculation with every draft accepted: 200");
    numbers = cJSON_GetObjectItemCaseSensitive(api, "numbers");
    ok(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(numbers, "crossover_users")),
       "speculation, accepted length 4: no crossover within the sweep");
    said = false;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(api, "findings"))
        said |= cJSON_GetStringValue(f) &&
                strstr(cJSON_GetStringValue(f), "No crossover within the loads run");
    ok(said, "and a sentence says so");
    cJSON_Delete(api);
}

/* A finding of the lesson's reply holding text. */
static bool finding_has(const cJSON *api, const char *text)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(api, "findings"))
    {
        if (cJSON_GetStringValue(f) && strstr(cJSON_GetStringValue(f), text)) return true;
    }
    return false;
}

/* The priorities panel: at its defaults priority holds the interactive
 * TTFT P99 far below first come first served's at the heaviest share and
 * under its target at every share, first come first served missing it
 * from the share a sentence names, and the gateway shedding the batch tier
 * from another; at GIE's 5 waiting requests the gateway sheds from the
 * lightest share; the batch slider cut to 50% runs five shares; at 4 req/s
 * (the rate slider's lightest) both orders meet it. */
static void test_priorities_panel(int port)
{
    int status;
    cJSON *api = get_json(port, "/api/lesson?name=priorities", &status);
    is_int(status, 200, "priorities: 200");
    const cJSON *numbers = cJSON_GetObjectItemCaseSensitive(api, "numbers");
    double fcfs = util_json_number(numbers, "heaviest_ttft_p99_fcfs_s", NAN),
           prio = util_json_number(numbers, "heaviest_ttft_p99_prio_s", NAN),
           from = util_json_number(numbers, "fcfs_misses_from_pct", NAN);
    ok(prio < fcfs,
       "priorities: at the heaviest share priority's interactive TTFT P99 (%.2f s) is below "
       "fcfs's (%.2f s)",
       prio, fcfs);
    char text[96];
    snprintf(text, sizeof text, "first come first served misses it from %g%% batch", from);
    ok(isfinite(from) && finding_has(api, text), "priorities: a sentence names the share (%s)",
       text);
    ok(finding_has(api, "priority meets it at every share run"), "and priority meets it at all");
    double shed = util_json_number(numbers, "shedding_starts_pct", NAN);
    snprintf(text, sizeof text, "Shedding starts at a %g%% batch share", shed);
    ok(isfinite(shed) && finding_has(api, text),
       "priorities: the gateway sheds from a share the sentence names (%s)", text);
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=priorities&gateway=5", &status);
    is_int(status, 200, "priorities, the gateway at GIE's 5 waiting requests: 200");
    numbers = cJSON_GetObjectItemCaseSensitive(api, "numbers");
    is_near(util_json_number(numbers, "shedding_starts_pct", NAN),
            util_json_number(numbers, "lightest_share_pct", NAN), 0,
            "and it sheds from the lightest share");
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=priorities&batch=0.5", &status);
    is_int(status, 200, "priorities, batch traffic up to 50%%: 200");
    is_int(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(api, "table")), 5,
           "and five shares, 10%% to 50%%");
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=priorities&rate=4", &status);
    is_int(status, 200, "priorities at 4 req/s: 200");
    numbers = cJSON_GetObjectItemCaseSensitive(api, "numbers");
    ok(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(numbers, "fcfs_misses_from_pct")),
       "priorities at 4 req/s: first come first served misses the target at no share");
    ok(finding_has(api, "first come first served meets it at every share run"),
       "and a sentence says so");
    cJSON_Delete(api);
}

/* A column of a lesson reply's table, row i. */
static double cell(const cJSON *api, int i, const char *key)
{
    const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(api, "table"), i);
    return util_json_number(row, key, NAN);
}

/* The memory panel: at its defaults the hit rate falls as the sessions in
 * flight grow, on the GPU alone and with the tier, which holds it higher
 * past HBM; the sessions slider cut to 128 runs three counts, whose last
 * hit rate is above the full sweep's; with the tier at 0 GiB both runs are
 * the GPU's, and a sentence says so. */
/* The day panel: at its defaults the day costs less at a higher target;
 * cut at 32 it runs three targets; a node slower to provision makes the
 * highest target's tail worse. */
static void test_day_panel(int port)
{
    int status;
    cJSON *api = get_json(port, "/api/lesson?name=day", &status);
    is_int(status, 200, "day: 200");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(api, "table"));
    ok(n > 2 && cell(api, 1, "usd") < cell(api, 0, "usd"),
       "day: the day costs less at target %g ($%.2f) than at %g ($%.2f)", cell(api, 1, "target"),
       cell(api, 1, "usd"), cell(api, 0, "target"), cell(api, 0, "usd"));
    ok(finding_has(api, "The low target buys the tail with"), "day: a sentence says so");
    double missed = cell(api, n - 1, "missed_pct");
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=day&target=32", &status);
    is_int(status, 200, "day, targets up to 32: 200");
    is_int(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(api, "table")), 3,
           "and three targets, 8 to 32");
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=day&provision=600", &status);
    is_int(status, 200, "day, a node in 600 s: 200");
    ok(cell(api, n - 1, "missed_pct") > missed,
       "day: the highest target misses more with a slower node (%.2f%% against %.2f%%)",
       cell(api, n - 1, "missed_pct"), missed);
    cJSON_Delete(api);
}

static void test_memory_panel(int port)
{
    int status;
    cJSON *api = get_json(port, "/api/lesson?name=memory", &status);
    is_int(status, 200, "memory: 200");
    int n = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(api, "table"));
    double first = cell(api, 0, "hit_gpu_pct"), last = cell(api, n - 1, "hit_gpu_pct"),
           past = util_json_number(cJSON_GetObjectItemCaseSensitive(api, "numbers"),
                                   "past_hbm_sessions", NAN);
    ok(n > 2 && last < first,
       "memory: the hit rate falls as sessions grow (%.1f%% at %g, %.1f%% at %g)", first,
       cell(api, 0, "sessions"), last, cell(api, n - 1, "sessions"));
    ok(cell(api, n - 1, "hit_tier_pct") < cell(api, 0, "hit_tier_pct"), "with the tier too");
    char text[64];
    snprintf(text, sizeof text, "The working set outgrows HBM from %g sessions", past);
    ok(isfinite(past) && finding_has(api, text), "memory: a sentence names where (%s)", text);
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=memory&sessions=128", &status);
    is_int(status, 200, "memory, up to 128 sessions: 200");
    is_int(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(api, "table")), 3,
           "and three counts, 32 to 128");
    ok(cell(api, 2, "hit_gpu_pct") > last, "whose last hit rate (%.1f%%) is above the full sweep's",
       cell(api, 2, "hit_gpu_pct"));
    cJSON_Delete(api);
    api = get_json(port, "/api/lesson?name=memory&cpu=0", &status);
    is_int(status, 200, "memory without a CPU tier: 200");
    ok(cell(api, n - 1, "hit_tier_pct") == cell(api, n - 1, "hit_gpu_pct"),
       "both runs are the GPU's");
    ok(finding_has(api, "There is no CPU tier"), "and a sentence says so");
    cJSON_Delete(api);
}

static void test_figures(int port)
{
    reply r = get(port, "/api/figure?name=tail&format=png&slow=0.05");
    is_int(r.status, 200, "/api/figure format=png: 200");
    ok(r.len > 8 && !memcmp(r.body, "\x89PNG\r\n\x1a\n", 8), "a PNG");
    cmp_ok(r.len, >, 1000, "of more than a kilobyte");
    has_str(r.head, "Content-Type: image/png", "as image/png");
    has_str(r.head, "attachment; filename=\"tail.png\"", "to save as tail.png");
    reply_fini(&r);
    r = get(port, "/api/figure?name=tail");
    is_int(r.status, 200, "format svg (the default): 200");
    ok(r.body && strstr(r.body, "<svg "), "the SVG");
    has_str(r.head, "image/svg+xml", "as image/svg+xml");
    reply_fini(&r);
}

/* The what-if report is `servesim report --slo ... --by class --json`. */
static void test_whatif(int port, const char *db)
{
    int status;
    cJSON *runs = get_json(port, "/api/runs", &status);
    is_int(status, 200, "GET /api/runs");
    const cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(runs, "runs"), 0);
    is_int(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(run, "classes")), 3,
           "the run's three classes");
    cJSON_Delete(runs);
    cJSON *api =
        get_json(port, "/api/whatif?run=1&ttft=0.2&tpot=40ms&chat.ttft=0.1&metric=ttft", &status);
    is_int(status, 200, "GET /api/whatif");
    char *argv[] = {"servesim",      "report",   (char *)db, "--run",     "1",
                    "--slo",         "ttft=0.2", "--slo",    "tpot=40ms", "--slo",
                    "chat.ttft=0.1", "--by",     "class",    "--json",    NULL};
    cJSON *cli = cli_json(argv);
    ok(cli && cJSON_Compare(cJSON_GetObjectItemCaseSensitive(api, "report"), cli, true),
       "its report is servesim report --slo's, classes and all");
    const cJSON *svg = cJSON_GetObjectItemCaseSensitive(api, "svg");
    ok(cJSON_IsString(svg) && strstr(svg->valuestring, "data-guide=\"TTFT SLO 200 ms\""),
       "its SLO curve draws the slider's threshold");
    cJSON_Delete(cli);
    cJSON_Delete(api);
}

/* Percentile targets and the task SLO, as `report --slo` takes them. */
static void test_whatif_targets(int port, const char *db)
{
    int status;
    cJSON *api = get_json(
        port, "/api/whatif?run=1&ttft_p99=2&chat.ttft_p90=50ms&task_e2e=30s&metric=ttft", &status);
    is_int(status, 200, "GET /api/whatif with ttft_p99=2, chat.ttft_p90=50ms, task_e2e=30s");
    char *argv[] = {"servesim", "report",   (char *)db, "--run", "1",
                    "--slo",    "ttft_p99=2", "--slo", "chat.ttft_p90=50ms", "--slo",
                    "task_e2e=30s", "--by", "class", "--json", NULL};
    cJSON *cli = cli_json(argv);
    const cJSON *report = cJSON_GetObjectItemCaseSensitive(api, "report");
    ok(cli && cJSON_Compare(report, cli, true), "its report is servesim report --slo's");
    const cJSON *targets = util_json_get(report, "slo.targets");
    is_int(cJSON_GetArraySize(targets), 2, "with both targets");
    ok(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(targets, 0), "met")),
       "each with its verdict");
    is_near(util_json_number(report, "tasks.slo.task_e2e_s", NAN), 30, 0, "and the task SLO");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(api, "slo_args");
    is_str(cJSON_GetStringValue(cJSON_GetArrayItem(args, 0)), "ttft_p99=2",
           "slo_args names them as --slo does");
    cJSON_Delete(cli);
    cJSON_Delete(api);
}

/* A measured run (servesim import: run 2) gets its what-ifs the same way. */
static void test_whatif_measured(int port, const char *db)
{
    int status;
    cJSON *api = get_json(port, "/api/whatif?run=2&ttft=60&metric=ttft", &status);
    is_int(status, 200, "GET /api/whatif of a measured run");
    const cJSON *report = cJSON_GetObjectItemCaseSensitive(api, "report");
    is_str(cJSON_GetStringValue(util_json_get(report, "run.status")), "measured",
           "its report is the measured run's");
    char *argv[] = {"servesim", "report", (char *)db, "--run", "2", "--slo", "ttft=60",
                    "--by", "class", "--json", NULL};
    cJSON *cli = cli_json(argv);
    ok(cli && cJSON_Compare(report, cli, true), "and servesim report --slo's");
    ok(util_json_number(report, "slo.attainment", NAN) > 0 &&
           util_json_number(report, "slo.attainment", NAN) < 1,
       "a TTFT SLO of 60 s met by some of the RTX 4090's queued requests, not all");
    cJSON_Delete(cli);
    cJSON_Delete(api);
}

typedef struct bad {
    const char *target;
    int status;
    const char *says;
} bad;

static void test_bad_requests(int port)
{
    static const bad bads[] = {
        {"/api/lesson?name=nope", 404, "no lesson 'nope'"},
        {"/api/lesson", 400, "\"path\":\"name\""},
        {"/api/lesson?name=batching&users=65", 400, "\"path\":\"lesson.users\""},
        {"/api/lesson?name=batching&users=1e9", 400, "not one of the control users's values"},
        {"/api/lesson?name=batching&users=abc", 400, "\"path\":\"lesson.users\""},
        {"/api/lesson?name=batching&max_batch=1", 400, "\"path\":\"max_batch\""},
        {"/api/lesson?name=batching&seed=0", 400, "\"path\":\"seed\""},
        {"/api/lesson?name=batching&seed=1.5", 400, "\"path\":\"seed\""},
        {"/api/figure?name=tail&format=gif", 400, "\"path\":\"format\""},
        {"/api/whatif?run=abc", 400, "\"path\":\"run\""},
        {"/api/whatif?run=1&ttft=-1", 400, "\"path\":\"ttft\""},
        {"/api/whatif?run=1&cluster.replicas=2", 400, "unknown key 'cluster.replicas'"},
        {"/api/whatif?run=1&ttft_p99=abc", 400, "\"path\":\"ttft_p99\""},
        {"/api/whatif?run=1&ttft_q99=2", 400, "unknown key 'ttft_q99'"},
        {"/api/whatif?run=1&metric=power", 400, "\"path\":\"metric\""},
        {"/api/whatif?run=99", 400, "no run with id 99"},
        {"/../../etc/passwd", 404, "not found"},
        {"/%2e%2e/%2e%2e/etc/passwd", 404, "not found"},
        {"/api/../app.js/../../etc/passwd", 404, "not found"},
        {"/examples/quickstart.json", 404, "not found"},
        {"/api/lessons/../runs", 404, "not found"},
        /* each parameter once, each one the request takes, numbers in decimals */
        {"/api/lesson?name=batching&users=64&users=256", 400, "users: given twice"},
        {"/api/whatif?run=1&run=2", 400, "run: given twice"},
        {"/api/whatif?run=1&ttft=1&ttft=2", 400, "\"path\":\"ttft\""},
        {"/api/lesson?name=batching&users=0x40", 400, "\"path\":\"lesson.users\""},
        {"/api/lesson?name=batching&users=%2064", 400, "\"path\":\"lesson.users\""},
        {"/api/lesson?name=tail&slow=inf", 400, "\"path\":\"lesson.slow_fractions\""},
        {"/api/lesson?name=batching&seed=0x10", 400, "\"path\":\"seed\""},
        {"/api/lesson?name=batching&format=png", 400, "\"path\":\"format\""},
        {"/api/whatif?run=0x1", 400, "\"path\":\"run\""},
        {"/api/whatif?run=1&ttft=0x1", 400, "\"path\":\"ttft\""},
        {"/api/whatif?run=1&ttft=%201", 400, "\"path\":\"ttft\""},
        {"/api/runs?file=/etc/passwd", 400, "file: /api/runs takes no parameters"},
        {"/api/lessons?name=batching", 400, "name: /api/lessons takes no parameters"},
    };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        reply r = get(port, bads[i].target);
        is_int(r.status, bads[i].status, "GET %s: %d", bads[i].target, bads[i].status);
        has_str(r.body, bads[i].says, "GET %s says %s", bads[i].target, bads[i].says);
        reply_fini(&r);
    }
    /* 41 arguments; a value of 300 bytes; a URL of 20 kB */
    char *many = util_xstrdup("/api/lesson?name=tail");
    for (int i = 0; i < 41; i++) {
        char *t = util_xasprintf("%s&slow=0.05", many);
        free(many);
        many = t;
    }
    reply r = get(port, many);
    is_int(r.status, 400, "41 arguments: 400");
    reply_fini(&r);
    free(many);
    char *long_value = util_xasprintf("/api/lesson?name=tail&slow=%0300d", 5);
    r = get(port, long_value);
    is_int(r.status, 414, "a 300-byte value: 414");
    reply_fini(&r);
    free(long_value);
    char *huge = util_xasprintf("/api/lesson?name=%020000d", 1);
    r = get(port, huge);
    ok(r.status == 414 || r.status == 431 || r.status == 400, "a 20 kB URL is refused (%d)",
       r.status);
    reply_fini(&r);
    free(huge);
    char *req = util_xasprintf("POST /api/lessons HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                               "Content-Length: 5\r\nConnection: close\r\n\r\nhello",
                               port);
    r = raw(port, req);
    is_int(r.status, 405, "POST: 405");
    reply_fini(&r);
    free(req);
    req = util_xasprintf("GET /api/lessons HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                         "Content-Length: 5\r\nConnection: close\r\n\r\nhello",
                         port);
    r = raw(port, req);
    is_int(r.status, 400, "a GET with a body: 400 (none is read)");
    reply_fini(&r);
    free(req);
    req = util_xasprintf("GET /api/lessons HTTP/1.1\r\nHost: evil.example:%d\r\n"
                         "Connection: close\r\n\r\n",
                         port);
    r = raw(port, req);
    is_int(r.status, 403, "a foreign Host (DNS rebinding): 403");
    reply_fini(&r);
    free(req);
    r = raw(port, "\x01\x02 garbage \r\n\r\n");
    ok(r.status == 0 || r.status == 400, "garbage: refused (%d)", r.status);
    reply_fini(&r);
    /* still serving, and the page has its own files only */
    r = get(port, "/");
    is_int(r.status, 200, "after all of it, / still serves");
    has_str(r.body, "<html", "the page");
    has_str(r.head, "Content-Security-Policy: default-src 'self'",
            "which loads nothing from elsewhere");
    reply_fini(&r);
    int status;
    cJSON *j = get_json(port, "/api/lessons", &status);
    is_int(status, 200, "and the API");
    cJSON_Delete(j);
}

/* The Host header, parsed strictly: a name of this server's with its port
 * in digits and nothing after, once. */
static void test_hosts(int port)
{
    static const struct {
        const char *host; /* its %d (one or two) the port */
        int status;
        const char *what;
    } cases[] = {
        {"Host: 127.0.0.1:%d.evil.com\r\n", 403, "a name after the port"},
        {"Host: 127.0.0.1:%d0\r\n", 403, "another port"},
        {"Host: 127.0.0.1:+%d\r\n", 403, "a port with a sign"},
        {"Host: 127.0.0.1:%d\r\nHost: evil.example\r\n", 400, "a second Host header"},
        {"Host: 127.0.0.1:%d\r\nhost: 127.0.0.1:%d\r\n", 400, "the same Host twice"},
        {"X-Port: %d\r\n", 400, "no Host"},
        {"Host: localhost:%d\r\n", 200, "localhost"},
        {"Host: [::1]:%d\r\n", 200, "[::1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char host[128];
        snprintf(host, sizeof host, cases[i].host, port, port); /* the second for a second %d */
        char *req = util_xasprintf("GET /api/lessons HTTP/1.1\r\n%sConnection: close\r\n\r\n", host);
        reply r = raw(port, req);
        is_int(r.status, cases[i].status, "Host, %s: %d", cases[i].what, cases[i].status);
        reply_fini(&r);
        free(req);
    }
}

/* Bound to another loopback address, the server answers for it. */
static void test_other_loopback(void)
{
    server s = start("--listen", "127.0.0.2", NULL);
    is_str(s.host, "127.0.0.2", "explore --listen 127.0.0.2 prints its own address");
    char *req = util_xasprintf("GET /api/lessons HTTP/1.1\r\nHost: 127.0.0.2:%d\r\n"
                               "Connection: close\r\n\r\n",
                               s.port);
    reply r = raw_at(NULL, "127.0.0.2", s.port, req);
    is_int(r.status, 200, "and answers a request for 127.0.0.2:PORT");
    reply_fini(&r);
    free(req);
    req = util_xasprintf("GET /api/lessons HTTP/1.1\r\nHost: evil.example:%d\r\n"
                         "Connection: close\r\n\r\n",
                         s.port);
    r = raw_at(NULL, "127.0.0.2", s.port, req);
    is_int(r.status, 403, "but not one for another name");
    reply_fini(&r);
    free(req);
    is_int(stop(&s), 130, "Ctrl-C: exit 130");
}

/* The client is told the database's name, never where it is: in the
 * what-if figure's data-source, and in a message about the file. */
static void test_no_paths(int port, const char *db)
{
    int status;
    cJSON *api = get_json(port, "/api/whatif?run=1&ttft=0.2", &status);
    const char *svg = str_of(api, "svg");
    ok(svg && strstr(svg, "data-source=\"agents.db, run 1\""),
       "the what-if figure's data-source names the file alone");
    ok(svg && !strstr(svg, dir), "not its folder");
    cJSON_Delete(api);
    char *moved = util_xasprintf("%s.moved", db);
    ok(rename(db, moved) == 0, "the database moved away while the server runs");
    static const char *const targets[] = {"/api/runs", "/api/whatif?run=1"};
    for (int i = 0; i < 2; i++) {
        reply r = get(port, targets[i]);
        cmp_ok(r.status, >=, 400, "GET %s: refused (%d)", targets[i], r.status);
        has_str(r.body, "agents.db: no such file", "saying agents.db is missing");
        ok(r.body && !strstr(r.body, dir), "without saying where it was");
        reply_fini(&r);
    }
    ok(rename(moved, db) == 0, "and back");
    free(moved);
}

/* ---- hostile clients ---- */

enum { TRICKLERS = 32, PER_ADDRESS = 8, HEADERS_S = 10 };

static void pause_s(double s)
{
    nanosleep(&(struct timespec){(time_t)s, (long)((s - floor(s)) * 1e9)}, NULL);
}

/* In a child process: TRICKLERS connections from 127.0.0.2, each sending a
 * request line and then a byte of a header line every 0.5 s, for at most
 * HEADERS_S + 4 s; writes to out how many the server closed within the
 * first second, how many it never closed, and when it closed the last of
 * the others. */
static void trickle(int port, int out)
{
    int fds[TRICKLERS];
    double closed[TRICKLERS], t0 = util_wall_s();
    for (int i = 0; i < TRICKLERS; i++) {
        fds[i] = dial("127.0.0.2", "127.0.0.1", port);
        closed[i] = fds[i] < 0 ? 0 : -1;
        if (fds[i] >= 0) send_text(fds[i], "GET / HTTP/1.1\r\n");
    }
    for (int open = TRICKLERS; open > 0 && util_wall_s() - t0 < HEADERS_S + 4;) {
        pause_s(0.5);
        for (int i = 0; i < TRICKLERS; i++) {
            if (closed[i] >= 0) continue;
            char c;
            ssize_t k = send(fds[i], "X", 1, MSG_NOSIGNAL);
            if (k == 1) k = recv(fds[i], &c, 1, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                closed[i] = util_wall_s() - t0;
                open--;
            }
        }
    }
    int at_once = 0, never = 0;
    double last = 0;
    for (int i = 0; i < TRICKLERS; i++) {
        if (closed[i] < 0)
            never++;
        else if (closed[i] <= 1)
            at_once++;
        else if (closed[i] > last)
            last = closed[i];
    }
    dprintf(out, "%d %d %.2f\n", at_once, never, last);
}

/* 32 connections from one address trickle their headers (a byte every
 * 0.5 s, each resetting libmicrohttpd's idle timeout): a 33rd client, from
 * another address, is still served at once.  Returns the helper's pipe,
 * read by test_tricklers_closed when it is done. */
static int test_slow_clients(int port, pid_t *helper)
{
    int p[2];
    *helper = -1;
    if (pipe(p) != 0) return -1;
    fflush(NULL);
    *helper = fork();
    if (*helper == 0) {
        close(p[0]);
        trickle(port, p[1]);
        _exit(0);
    }
    close(p[1]);
    pause_s(0.5); /* they are all in, trickling */
    double t = util_wall_s();
    reply r = get(port, "/app.js");
    double took = util_wall_s() - t;
    is_int(r.status, 200, "with 32 connections trickling their headers from 127.0.0.2, a 33rd "
                          "client gets /app.js");
    cmp_ok(took, <, 2.0, "within 2 s (%.3f s)", took);
    reply_fini(&r);
    t = util_wall_s();
    r = get(port, "/api/lesson?name=chat-vs-summary");
    took = util_wall_s() - t;
    is_int(r.status, 200, "and a lesson");
    cmp_ok(took, <, 2.0, "within 2 s (%.3f s)", took);
    reply_fini(&r);
    return p[0];
}

/* What the tricklers saw: one address holds PER_ADDRESS connections, and
 * those are closed when their headers are not all in after HEADERS_S,
 * however often a byte came. */
static void test_tricklers_closed(pid_t helper, int from)
{
    int at_once = -1, never = -1;
    double last = -1;
    FILE *f = fdopen(from, "r");
    if (!f || fscanf(f, "%d %d %lf", &at_once, &never, &last) != 3) tap_diag("no word from them");
    if (f) fclose(f);
    if (helper > 0) waitpid(helper, NULL, 0);
    is_int(at_once, TRICKLERS - PER_ADDRESS,
           "one address may hold %d connections: the other %d are closed at once", PER_ADDRESS,
           TRICKLERS - PER_ADDRESS);
    is_int(never, 0, "every trickling connection is closed");
    ok(last >= HEADERS_S - 1 && last <= HEADERS_S + 2,
       "those it held once their headers were not all in within %d s (%.1f s), though a byte "
       "came every 0.5 s",
       HEADERS_S, last);
}

/* Two clients' computations do not hold up anyone else's page or cheap
 * calls; a third client may have 6 computations waiting or running, a 7th
 * is refused with Retry-After; Ctrl-C answers each one in flight 503. */
static void test_busy(const char *big)
{
    server s = start(big, NULL);
    ok(s.port > 0, "explore on a run of 200,000 requests");
    const char *heavy = "/api/whatif?run=1&ttft=0.2&metric=e2e";
    int fds[4];
    for (int i = 0; i < 4; i++)
        fds[i] = get_sent(i % 2 ? "127.0.0.4" : "127.0.0.1", s.port, heavy);
    static const char *const cheap[] = {"/app.js", "/api/lessons", "/api/runs"};
    for (int i = 0; i < 3; i++) {
        double t = util_wall_s();
        reply r = read_reply(get_sent("127.0.0.5", s.port, cheap[i]));
        double took = util_wall_s() - t;
        is_int(r.status, 200, "%s while two clients ask for 4 what-ifs of that run: 200", cheap[i]);
        cmp_ok(took, <, 0.5, "within 0.5 s (%.3f s)", took);
        reply_fini(&r);
    }
    int computing = 0;
    for (int i = 0; i < 4; i++)
        computing += pending(fds[i], 0);
    cmp_ok(computing, >, 0, "while the what-ifs were computing (%d of 4 were)", computing);
    bool all = true;
    for (int i = 0; i < 4; i++) {
        reply r = read_reply(fds[i]);
        all &= r.status == 200;
        reply_fini(&r);
    }
    ok(all, "and each what-if is answered 200");
    int many[7], refused = 0, answered = 0;
    for (int i = 0; i < 7; i++)
        many[i] = get_sent("127.0.0.6", s.port, heavy);
    pause_s(0.3);
    for (int i = 0; i < 7; i++) {
        if (pending(many[i], 0)) continue;
        reply r = read_reply(many[i]);
        many[i] = -1;
        refused += r.status == 503 && r.head && strstr(r.head, "Retry-After: ");
        reply_fini(&r);
    }
    is_int(refused, 1, "7 what-ifs from one address: one is refused at once, 503 with Retry-After");
    double t = util_wall_s();
    kill(s.pid, SIGINT);
    int shut = 0, done = 0; /* done: one that ended just before the signal */
    for (int i = 0; i < 7; i++) {
        if (many[i] < 0) continue;
        answered++;
        reply r = read_reply(many[i]);
        shut += r.status == 503 && r.body && strstr(r.body, "shutting down");
        done += r.status == 200;
        reply_fini(&r);
    }
    cmp_ok(shut, >, 0, "Ctrl-C with what-ifs computing and waiting: answered 503, the server "
                       "shutting down (%d of %d)", shut, answered);
    is_int(shut + done, answered, "each of them answered");
    cmp_ok(util_wall_s() - t, <, 2.0, "at once");
    is_int(stop(&s), 130, "and the server exits 130");
}

/* A computation past its time is stopped, and the server goes on. */
static void test_time_limit(const char *db)
{
    server s = start("--time-limit", "0.001", db, NULL);
    ok(s.port > 0, "explore --time-limit 0.001 starts");
    reply r = get(s.port, "/api/lesson?name=fan-out");
    is_int(r.status, 503, "a lesson past the time limit: 503");
    has_str(r.body, "longer than its limit", "saying so");
    reply_fini(&r);
    r = get(s.port, "/api/lessons");
    is_int(r.status, 200, "the server goes on serving");
    reply_fini(&r);
    is_int(stop(&s), 130, "Ctrl-C: exit 130");
}

static int entries(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (d) closedir(d);
    return n;
}

static void test_bad_start(const char *db)
{
    char *junk = util_xasprintf("%s/junk.db", dir);
    FILE *f = fopen(junk, "w");
    fputs("not a database", f);
    fclose(f);
    result r = runner_run(servesim, dir, "explore", "--port", "0", junk, NULL);
    is_int(r.status, 2, "explore NOT_A_DB: exit 2");
    has_str(r.err, "junk.db", "naming the file");
    runner_drop(&r);
    unlink(junk);
    free(junk);
    r = runner_run(servesim, dir, "explore", "--listen", "300.1.2.3", NULL);
    is_int(r.status, 2, "--listen 300.1.2.3: exit 2");
    has_str(r.err, "IPv4", "saying what it expects");
    runner_drop(&r);
    (void)db;
}

int main(int argc, char **argv)
{
    if (argc < 3 || !mkdtemp(dir)) {
        printf("Bail out! usage: test_explore SERVESIM SOURCE_ROOT\n");
        return 1;
    }
    servesim = argv[1];
    root = argv[2];
    char *db = util_xasprintf("%s/agents.db", dir);
    char *scenario = util_xasprintf("%s/examples/agents.json", root);
    result made = runner_run(servesim, dir, "run", scenario, "-o", db, "-q", "--set",
                             "stop.requests=400", NULL);
    is_int(made.status, 0, "a database to explore");
    runner_drop(&made);
    char *measured = util_xasprintf("%s/data/validation/llmservingsim/bench/examples/RTX4090/"
                                    "Llama-3.1-8B/vllm", root);
    made = runner_run(servesim, dir, "import", measured, "-o", db, NULL);
    is_int(made.status, 0, "and a measured run in it");
    runner_drop(&made);
    free(measured);
    char *big = util_xasprintf("%s/big.db", dir);
    char *quickstart = util_xasprintf("%s/examples/quickstart.json", root);
    made = runner_run(servesim, dir, "run", quickstart, "-o", big, "-q", "--set",
                      "stop.requests=200000", NULL);
    is_int(made.status, 0, "a database of 200,000 requests, whose what-ifs take a while");
    runner_drop(&made);
    free(quickstart);
    int before = entries(dir);
    server s = start(db, NULL);
    ok(s.port > 0, "servesim explore prints its URL (port %d)", s.port);
    pid_t helper = -1;
    int tricklers = test_slow_clients(s.port, &helper);
    cJSON *list = test_lessons_list(s.port);
    test_controls_derived(list);
    test_lessons_agree(s.port, list);
    cJSON_Delete(list);
    test_speculation_panel(s.port);
    test_priorities_panel(s.port);
    test_memory_panel(s.port);
    test_day_panel(s.port);
    test_figures(s.port);
    test_whatif(s.port, db);
    test_whatif_targets(s.port, db);
    test_whatif_measured(s.port, db);
    test_bad_requests(s.port);
    test_hosts(s.port);
    test_no_paths(s.port, db);
    test_tricklers_closed(helper, tricklers);
    is_int(stop(&s), 130, "Ctrl-C: exit 130");
    is_int(entries(dir), before, "nothing left behind in its folder");
    test_busy(big);
    test_other_loopback();
    test_time_limit(db);
    test_bad_start(db);
    unlink(db);
    unlink(big);
    free(big);
    static const char *const outputs[] = {"stdout", "stderr"};
    for (int i = 0; i < 2; i++) {
        char *path = util_xasprintf("%s/%s", dir, outputs[i]);
        unlink(path);
        free(path);
    }
    rmdir(dir);
    free(db);
    free(scenario);
    return tap_done();
}
