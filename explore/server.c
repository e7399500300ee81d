/*
 * server.c: libmicrohttpd's side -- one daemon, driven by a loop of ours in
 * one thread, which answers GET (and HEAD) of the page's own files and of
 * the API, and nothing else: any other path is 404, any other method 405.
 * A request is capped before it reaches the API: its request line and
 * headers by the connection's memory (8 KiB: a longer URL is answered 414
 * by the daemon), its arguments in number and length here, and a body is
 * refused.  The page's files, the list of lessons and every refusal are
 * answered at once; a computation is queued (jobs.c) and its request
 * suspended until its child process replies, while the loop goes on
 * serving everyone else.  One thread still, and for the reason there was
 * one before: a computation is forked from it, and with no other thread of
 * the server's running (the main one waits in sigwait), none can hold a
 * lock -- of the allocator's, say -- that the child would inherit held.
 *
 * Slow clients.  libmicrohttpd's timeout is an idle one, reset by every
 * byte: a client sending a header line every few seconds would hold its
 * connection for ever, and 32 of them held every slot.  So each connection
 * here has a deadline of ours besides: its request line and headers must
 * all be in within HEADERS_S of the request's start (the connection's, or
 * the end of its previous reply), and a reply must be sent within SEND_S;
 * the loop shuts a connection past its deadline down, and the daemon then
 * finds it closed and frees it.  One address may hold PER_CLIENT
 * connections of MAX_CONNECTIONS, so that no host takes every slot.
 *
 * Bound to a loopback address (the default), it also checks the Host
 * header, so that a web page elsewhere cannot reach it through a DNS name
 * that resolves to this machine.
 */
#define _GNU_SOURCE /* pipe2 */
#include "ex_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

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
    MAX_CONNECTIONS = 64,
    PER_CLIENT = 8,  /* connections from one address: a browser opens 6 */
    IDLE_S = 10,     /* libmicrohttpd's own timeout, between two bytes */
    HEADERS_S = 10,  /* a request's line and headers, from its start */
    SEND_S = 30,     /* a reply, from when it is ready */
    DRAIN_MS = 1000, /* at a stop, for the last replies to be sent */
};

/* A connection: where its request is, and the deadline of that. */
typedef enum phase { READING, COMPUTING, SENDING } phase;

typedef struct conn {
    struct MHD_Connection *c;
    uint32_t client; /* its IPv4 address */
    phase at;
    double deadline; /* READING: its headers'; SENDING: its reply's */
    bool shut;       /* shut down past its deadline */
    struct conn *prev, *next;
} conn;

/* A request, from its headers to its reply sent. */
typedef struct request {
    ex_server *s;
    struct MHD_Connection *c;
    conn *k;
    ex_job *job;    /* its computation, waiting or running */
    ex_reply reply; /* the computation's, once over */
    bool over, suspended, answered;
} request;

struct ex_server {
    struct MHD_Daemon *daemon;
    ex_api *api;
    ex_jobs *jobs;
    int port;
    bool loopback;
    char host[INET_ADDRSTRLEN]; /* the address it listens on */
    conn *conns;
    int requests; /* not yet over: computing or sending */
    int wake[2];  /* ex_stop writes a byte to wake[1] */
    bool stopping;
    bool resumed; /* a connection was resumed since the daemon last ran */
    pthread_t thread;
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

/* The first key given twice, or NULL: each parameter means one value. */
static const char *repeated(const ex_query *q)
{
    for (int i = 1; i < q->n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(q->keys[i], q->keys[j])) return q->keys[i];
    return NULL;
}

/* ---- replies ---- */

static enum MHD_Result send_reply(ex_server *s, struct MHD_Connection *c, ex_reply *r)
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
    if (r->retry_after_s > 0) {
        char after[16];
        snprintf(after, sizeof after, "%d", r->retry_after_s);
        MHD_add_response_header(res, "Retry-After", after);
    }
    if (s->stopping) MHD_add_response_header(res, "Connection", "close");
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

/* ---- Host ---- */

static enum MHD_Result count_hosts(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    (void)value;
    *(int *)cls += !strcasecmp(key, "Host");
    return MHD_YES;
}

/* Whether host is name:PORT, PORT this server's in plain digits, or name
 * alone on port 80 (where a browser leaves the port out). */
static bool names_us(const char *host, const char *name, int port)
{
    size_t n = strlen(name);
    if (strncasecmp(host, name, n)) return false;
    host += n;
    if (!*host) return port == 80;
    if (*host++ != ':') return false;
    size_t digits = strspn(host, "0123456789");
    return digits >= 1 && digits <= 5 && !host[digits] && atoi(host) == port;
}

/* 0 when Host names this server -- 127.0.0.1, localhost, [::1] or the
 * loopback address it listens on, with its port -- or when it listens on
 * another address (it cannot know its names there); else the status of
 * the refusal: 400 for no Host or two, 403 for another name. */
static int host_refused(const ex_server *s, struct MHD_Connection *c)
{
    int hosts = 0;
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_hosts, &hosts);
    if (hosts > 1) return 400;
    if (!s->loopback) return 0;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!host) return 400;
    const char *const names[] = {"127.0.0.1", "localhost", "[::1]", s->host};
    for (int i = 0; i < 4; i++)
        if (names_us(host, names[i], s->port)) return 0;
    return 403;
}

/* ---- routing ---- */

static bool has_body(struct MHD_Connection *c)
{
    const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding") ||
           (length && strspn(length, "0") != strlen(length));
}

/* The reply to the request, or the computation that makes it (task->fn). */
static ex_reply route(ex_server *s, struct MHD_Connection *c, const char *url, const char *method,
                      ex_task *task)
{
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return ex_error(405, NULL, "%s: only GET is served", method);
    int refused = host_refused(s, c);
    if (refused == 400) return ex_error(400, NULL, "expected one Host header");
    if (refused)
        return ex_error(403, NULL, "this server answers requests for %s or localhost only",
                        s->host);
    if (has_body(c)) return ex_error(400, NULL, "a GET has no body: none is read");
    if (s->stopping) return ex_error(503, NULL, "stopped: the server is shutting down");
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
    if (found) return r; /* its query is the page's script's to read */
    const char *twice = repeated(&a.q);
    util_clip_buf b;
    if (twice && !strncmp(url, "/api/", 5))
        return ex_error(400, util_clip(twice, &b), "%s: given twice (each parameter once)",
                        util_clip(twice, &b));
    if (ex_api_handle(s->api, url, &a.q, &r, task)) return r;
    return ex_error(404, NULL, "not found");
}

/* ---- connections and requests ---- */

static conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    ex_server *s = cls;
    conn *k = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (!k) return;
        *(k->prev ? &k->prev->next : &s->conns) = k->next;
        if (k->next) k->next->prev = k->prev;
        free(k);
        *socket_context = NULL;
        return;
    }
    k = util_xcalloc(1, sizeof *k);
    *k = (conn){.c = c, .at = READING, .deadline = util_wall_s() + HEADERS_S, .next = s->conns};
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (i && i->client_addr && i->client_addr->sa_family == AF_INET)
        k->client = ((const struct sockaddr_in *)(const void *)i->client_addr)->sin_addr.s_addr;
    if (s->conns) s->conns->prev = k;
    s->conns = k;
    *socket_context = k;
}

static enum MHD_Result answer(ex_server *s, request *r, ex_reply *reply)
{
    r->answered = true;
    if (r->k) {
        r->k->at = SENDING;
        r->k->deadline = util_wall_s() + SEND_S;
    }
    return send_reply(s, r->c, reply);
}

/* A computation over: its reply kept, its request resumed if it waits. */
static void job_done(void *owner, ex_reply *reply)
{
    request *r = owner;
    ex_server *s = r->s;
    r->job = NULL;
    r->reply = *reply;
    r->over = true;
    if (r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->c);
        s->resumed = true;
    }
}

/* The first call, with the headers: answered, or its computation queued. */
static enum MHD_Result begin(ex_server *s, struct MHD_Connection *c, const char *url,
                             const char *method, void **con_cls)
{
    request *r = util_xcalloc(1, sizeof *r);
    *r = (request){.s = s, .c = c, .k = conn_of(c)};
    *con_cls = r;
    s->requests++;
    ex_task task = {0};
    ex_reply reply = route(s, c, url, method, &task);
    if (task.fn) {
        uint32_t client = r->k ? r->k->client : 0;
        r->job = ex_jobs_submit(s->jobs, &task, client, util_wall_s(), job_done, r, &reply);
        if (r->job) {
            if (r->k) r->k->at = COMPUTING;
            return MHD_YES;
        }
    }
    return answer(s, r, &reply);
}

/* Called with the headers, then for the end of the request (a body is
 * refused at the first call); a request waiting for its computation is
 * suspended there, and called again once resumed. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    ex_server *s = cls;
    request *r = *con_cls;
    if (!r) return begin(s, c, url, method, con_cls);
    if (*upload_data_size) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->answered) return MHD_YES;
    if (!r->over) {
        r->suspended = true;
        MHD_suspend_connection(c);
        return MHD_YES;
    }
    return answer(s, r, &r->reply);
}

/* The request is over (sent, or its connection gone): a computation it
 * still waited for is dropped, and its connection reads the next one. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)c;
    (void)toe;
    ex_server *s = cls;
    request *r = *con_cls;
    if (!r) return;
    if (r->job) ex_jobs_drop(s->jobs, r->job);
    free(r->reply.body);
    if (r->k) {
        r->k->at = READING;
        r->k->deadline = util_wall_s() + HEADERS_S;
    }
    free(r);
    *con_cls = NULL;
    s->requests--;
}

/* ---- the loop ---- */

/* Shuts down each connection past its deadline: the daemon, finding it
 * closed, frees it at its next turn.  Shutting the socket down rather than
 * closing it leaves the descriptor the daemon's until it closes it. */
static void sweep(ex_server *s, double now)
{
    for (conn *k = s->conns; k; k = k->next) {
        if (k->shut || k->at == COMPUTING || now < k->deadline) continue;
        const union MHD_ConnectionInfo *i =
            MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (i) shutdown(i->connect_fd, SHUT_RDWR);
        k->shut = true;
    }
}

/* The next moment something is due: a connection's deadline, a job's, the
 * daemon's own timeout, until (a drain's end). */
static double next_due(const ex_server *s, double now, double until)
{
    double next = fmin(until, ex_jobs_next(s->jobs));
    for (const conn *k = s->conns; k; k = k->next)
        if (!k->shut && k->at != COMPUTING) next = fmin(next, k->deadline);
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(s->daemon, &ms) == MHD_YES) next = fmin(next, now + (double)ms / 1e3);
    return next;
}

/* One turn: wait for a socket, a child's pipe, the wake pipe or the next
 * deadline (at most until), then let each do its part. */
static void turn(ex_server *s, double until)
{
    /* a connection resumed must be run before the daemon's sets are asked
     * for, or they leave it out (libmicrohttpd's MHD_resume_connection) */
    if (s->resumed) {
        s->resumed = false;
        MHD_run(s->daemon);
    }
    fd_set rs, ws, es;
    FD_ZERO(&rs);
    FD_ZERO(&ws);
    FD_ZERO(&es);
    MHD_socket max = -1;
    MHD_get_fdset2(s->daemon, &rs, &ws, &es, &max, FD_SETSIZE);
    int top = max > s->wake[0] ? max : s->wake[0];
    FD_SET(s->wake[0], &rs);
    ex_jobs_fdset(s->jobs, &rs, &top);
    double now = util_wall_s();
    double wait = fmax(0, next_due(s, now, until) - now);
    struct timeval tv = {(time_t)wait, (suseconds_t)((wait - floor(wait)) * 1e6)};
    if (select(top + 1, &rs, &ws, &es, &tv) < 0) {
        FD_ZERO(&rs);
        FD_ZERO(&ws);
        FD_ZERO(&es);
    }
    if (FD_ISSET(s->wake[0], &rs)) {
        char drain[16];
        while (read(s->wake[0], drain, sizeof drain) > 0) {
        }
        s->stopping = true;
    }
    now = util_wall_s();
    ex_jobs_run(s->jobs, &rs, now);
    sweep(s, now);
    s->resumed = false; /* run now */
    MHD_run_from_select(s->daemon, &rs, &ws, &es);
}

/* At a stop: every computation ends in a 503 saying so, and the replies
 * in hand get DRAIN_MS to be sent before the daemon closes everything. */
static void drain(ex_server *s)
{
    ex_jobs_end_all(s->jobs, "stopped: the server is shutting down");
    double until = util_wall_s() + DRAIN_MS / 1e3;
    while (s->requests > 0 && util_wall_s() < until)
        turn(s, until);
}

static void *serve(void *arg)
{
    ex_server *s = arg;
    while (!s->stopping)
        turn(s, util_wall_s() + 60);
    drain(s);
    return NULL;
}

/* ---- start and stop ---- */

static struct MHD_Daemon *start_daemon(ex_server *s, struct sockaddr_in *addr)
{
    return MHD_start_daemon(
        MHD_ALLOW_SUSPEND_RESUME, ntohs(addr->sin_port), NULL, NULL, handle, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)addr, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)MEMORY_LIMIT, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PER_CLIENT, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)IDLE_S, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
}

static void server_free(ex_server *s)
{
    if (s->daemon) MHD_stop_daemon(s->daemon);
    ex_jobs_free(s->jobs);
    ex_api_free(s->api);
    for (int i = 0; i < 2; i++)
        if (s->wake[i] >= 0) close(s->wake[i]);
    free(s);
}

int ex_start(const ex_config *cfg, ex_server **out, util_diag *d)
{
    *out = NULL;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    const char *listen = cfg->listen ? cfg->listen : "127.0.0.1";
    if (inet_pton(AF_INET, listen, &addr.sin_addr) != 1)
        return util_diag_add(d, "--listen %s: expected an IPv4 address (127.0.0.1, 0.0.0.0)",
                             listen);
    ex_config c = *cfg;
    if (c.time_limit_s <= 0) c.time_limit_s = 10;
    if (c.memory_limit_mb <= 0) c.memory_limit_mb = 4096;
    ex_server *s = util_xcalloc(1, sizeof *s);
    s->wake[0] = s->wake[1] = -1;
    s->loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
    inet_ntop(AF_INET, &addr.sin_addr, s->host, sizeof s->host);
    s->api = ex_api_new(&c, d);
    if (!s->api) {
        server_free(s);
        return UTIL_EINPUT;
    }
    s->jobs = ex_jobs_new(c.time_limit_s, c.memory_limit_mb);
    s->daemon = start_daemon(s, &addr);
    int err = errno;
    if (!s->daemon || pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        server_free(s);
        return util_diag_add(d, "cannot listen on %s:%d%s%s", listen, cfg->port, err ? ": " : "",
                             err ? strerror(err) : "");
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : cfg->port;
    if (pthread_create(&s->thread, NULL, serve, s) != 0) {
        server_free(s);
        return util_diag_fail(d, "cannot start the server's thread");
    }
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
    while (write(s->wake[1], "", 1) < 0 && errno == EINTR) {
    }
    pthread_join(s->thread, NULL);
    server_free(s);
}
