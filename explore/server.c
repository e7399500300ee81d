/*
 * server.c: libmicrohttpd's side -- one daemon with one internal thread,
 * which answers GET (and HEAD) of the page's own files and of the API, and
 * nothing else: any other path is 404, any other method 405.  A request is
 * capped before it reaches the API: its request line and headers by the
 * connection's memory (8 KiB: a longer URL is answered 414 by the daemon),
 * its arguments in number and length here.  Requests are answered one at a
 * time (a computation takes its sandbox's limit at most), each independent
 * of the last: a bad one leaves the server serving.  One thread, because a
 * computation is forked from it: with no other thread of the server's
 * running (the main one waits in sigwait), none can hold a lock -- of the
 * allocator's, say -- that the child would inherit held.  A pool of threads
 * forking children had some of them time out under AddressSanitizer.
 *
 * Bound to the loopback address (the default), it also checks the Host
 * header, so that a web page elsewhere cannot reach it through a DNS name
 * that resolves to 127.0.0.1.
 */
#include "ex_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* The page (explore/page/), compiled in by models/embed. */
extern const char ex__page_index_html[], ex__page_app_js[], ex__page_style_css[],
    ex__page_whatif_html[];

static const struct {
    const char *path, *type;
    const char *body;
} files[] = {
    {"/", "text/html; charset=utf-8", ex__page_index_html},
    {"/index.html", "text/html; charset=utf-8", ex__page_index_html},
    {"/whatif.html", "text/html; charset=utf-8", ex__page_whatif_html},
    {"/app.js", "text/javascript; charset=utf-8", ex__page_app_js},
    {"/style.css", "text/css; charset=utf-8", ex__page_style_css},
};

enum {
    MEMORY_LIMIT = 8 << 10, /* a connection's request line and headers */
    MAX_ARGS = 40,
    MAX_KEY = 64,
    MAX_VALUE = 256,
    MAX_CONNECTIONS = 32,
    CONNECTION_TIMEOUT_S = 15,
};

struct ex_server {
    struct MHD_Daemon *daemon;
    ex_api *api;
    int port;
    bool loopback;
};

/* ---- the request's arguments ---- */

typedef struct args {
    ex_query q;
    const char *keys[MAX_ARGS], *values[MAX_ARGS];
    bool too_many, too_long;
} args;

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    args *a = cls;
    if (a->q.n == MAX_ARGS) {
        a->too_many = true;
        return MHD_NO;
    }
    if (strlen(key) > MAX_KEY || (value && strlen(value) > MAX_VALUE)) a->too_long = true;
    a->keys[a->q.n] = key;
    a->values[a->q.n++] = value ? value : "";
    return MHD_YES;
}

/* ---- replies ---- */

static enum MHD_Result send_reply(struct MHD_Connection *c, ex_reply *r)
{
    struct MHD_Response *res =
        MHD_create_response_from_buffer(r->len, r->body ? r->body : "", MHD_RESPMEM_MUST_COPY);
    free(r->body);
    r->body = NULL;
    if (!res) return MHD_NO;
    MHD_add_response_header(res, "Content-Type", r->type);
    MHD_add_response_header(res, "Cache-Control", "no-store");
    MHD_add_response_header(res, "X-Content-Type-Options", "nosniff");
    /* the page's own files only: no script, style or image from elsewhere */
    MHD_add_response_header(res, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' data: blob:; "
                            "style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    if (*r->filename) {
        char disposition[96];
        snprintf(disposition, sizeof disposition, "attachment; filename=\"%s\"", r->filename);
        MHD_add_response_header(res, "Content-Disposition", disposition);
    }
    if (r->status == 405) MHD_add_response_header(res, "Allow", "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)r->status, res);
    MHD_destroy_response(res);
    return ok;
}

static ex_reply static_file(const char *path, bool *found)
{
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        if (!strcmp(files[i].path, path)) {
            *found = true;
            return (ex_reply){.status = 200,
                              .type = files[i].type,
                              .body = util_xstrdup(files[i].body),
                              .len = strlen(files[i].body)};
        }
    *found = false;
    return (ex_reply){0};
}

/* Host must name this server: 127.0.0.1:PORT, localhost:PORT or [::1]:PORT. */
static bool host_allowed(const ex_server *s, struct MHD_Connection *c)
{
    if (!s->loopback) return true;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!host) return false;
    static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(host, names[i], n) &&
            (!host[n] || (host[n] == ':' && atoi(host + n + 1) == s->port)))
            return true;
    }
    return false;
}

static ex_reply route(ex_server *s, struct MHD_Connection *c, const char *url, const char *method)
{
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return ex_error(405, NULL, "%s: only GET is served", method);
    if (!host_allowed(s, c))
        return ex_error(403, NULL, "this server answers requests for 127.0.0.1 or localhost only");
    args a = {0};
    a.q.keys = a.keys;
    a.q.values = a.values;
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect, &a);
    if (a.too_many) return ex_error(400, NULL, "too many arguments (at most %d)", MAX_ARGS);
    if (a.too_long)
        return ex_error(414, NULL, "an argument is too long (names up to %d bytes, values %d)",
                        MAX_KEY, MAX_VALUE);
    bool found;
    ex_reply r = static_file(url, &found);
    if (found) return r;
    if (ex_api_handle(s->api, url, &a.q, &r)) return r;
    return ex_error(404, NULL, "not found");
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    ex_server *s = cls;
    /* answered at the first call, with the headers: a body is never read
     * (no reply depends on one), and the daemon closes the connection
     * rather than take it */
    if (*con_cls) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    *con_cls = s;
    ex_reply r = route(s, c, url, method);
    return send_reply(c, &r);
}

int ex_start(const ex_config *cfg, ex_server **out, util_diag *d)
{
    *out = NULL;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    const char *listen = cfg->listen ? cfg->listen : "127.0.0.1";
    if (inet_pton(AF_INET, listen, &addr.sin_addr) != 1)
        return util_diag_add(d, "--listen %s: expected an IPv4 address (127.0.0.1, 0.0.0.0)",
                             listen);
    ex_server *s = util_xcalloc(1, sizeof *s);
    s->loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
    s->api = ex_api_new(cfg, d);
    if (!s->api) {
        free(s);
        return UTIL_EINPUT;
    }
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)cfg->port, NULL, NULL, handle, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)MEMORY_LIMIT, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S, MHD_OPTION_END);
    if (!s->daemon) {
        int err = errno;
        ex_api_free(s->api);
        free(s);
        return util_diag_add(d, "cannot listen on %s:%d%s%s", listen, cfg->port, err ? ": " : "",
                             err ? strerror(err) : "");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : cfg->port;
    *out = s;
    return UTIL_OK;
}

int ex_port(const ex_server *s)
{
    return s->port;
}

void ex_stop(ex_server *s)
{
    if (!s) return;
    ex_api_cancel(s->api); /* a computation in flight ends within 50 ms */
    MHD_stop_daemon(s->daemon);
    ex_api_free(s->api);
    free(s);
}
