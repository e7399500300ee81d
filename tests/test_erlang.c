/*
 * test_erlang.c: the engine as a loss system against Erlang's loss formula
 * (Erlang 1917; Kleinrock, Queueing Systems vol. 1, sec. 3.8).  c servers,
 * no waiting room, Poisson arrivals at rate lambda and service times of
 * mean E[S]: an arrival finding all c busy is lost, with probability
 *
 *   B(c, a) = (a^c / c!) / sum_{k=0..c} a^k / k!,   a = lambda E[S],
 *
 * whatever the service time's distribution (insensitivity), so the test
 * runs each c with fixed and with exponential replies.
 *
 * tests/scenarios/erlang-loss.json is the loss system: c replicas of one
 * batch slot each (max_batch 1) on the ideal engine, whose linear cost is
 * 10 ms an iteration whatever it holds, so a request's service is its own
 * N iterations (the prefill's gives the first token): S = 0.01 N s.  The
 * gateway's one tenant has all c slots (share 1): with c dispatched and
 * unfinished, an arrival is held, and its time-to-live of 1 ns refuses it
 * (reason ttl); the least_outstanding router sends a dispatched request to
 * an idle replica, and no front end delays it.  The waiting room is not
 * quite empty -- a held request is dispatched if a departure comes within
 * its nanosecond, which happens with probability about departure rate x
 * 1 ns <= c / E[S] x 1e-9 (6e-8 here) -- so the test checks that no served
 * request waited at all: then these runs are the loss system exactly.
 */
#include <math.h>
#include <stdlib.h>

#include "support.h"
#include "tap.h"

#define ITERATION_S 0.01 /* the scenario's linear iteration_s */
#define MEAN_TOKENS 10.0 /* the replies' mean, fixed or exponential */
#define BATCHES 25

static char *base;

/* Erlang's loss formula by its stable recursion: B(0) = 1,
 * B(k) = a B(k-1) / (k + a B(k-1)). */
static double erlang_b(int c, double a)
{
    double b = 1;
    for (int k = 1; k <= c; k++) b = a * b / (k + a * b);
    return b;
}

/* The mean reply of workload's exponential tokens of mean m: X rounded
 * half up, and 0 raised to the minimum, 1 (workloads/dist.c).  With
 * q = exp(-1/m), E[round X] = sum_{k>=1} P(X >= k - 1/2) = q^(1/2) / (1 - q),
 * and the raise adds P(X < 1/2) = 1 - q^(1/2). */
static double rounded_exponential_mean(double m)
{
    double q = exp(-1 / m), r = sqrt(q);
    return r / (1 - q) + 1 - r;
}

/* No waiting room: every served request went to its replica and started
 * the instant it arrived, every other was refused by the time-to-live, and
 * each service was its own N iterations. */
static void check_loss_system(sqlite3 *db, const char *what)
{
    is_int((long long)support_q1(db, "SELECT count(*) FROM requests WHERE status = 'completed' "
                                     "AND (enqueue_s <> arrival_s OR first_scheduled_s <> "
                                     "arrival_s)"),
           0, "%s: no served request waited", what);
    is_int((long long)support_q1(db, "SELECT count(*) FROM requests WHERE status <> 'completed' "
                                     "AND NOT (status = 'rejected' AND reason = 'ttl')"),
           0, "%s: every other was refused at the gateway (ttl)", what);
    double worst = support_q1(db, "SELECT max(abs(finish_s - arrival_s - 0.01 * output_tokens)) "
                                  "FROM requests WHERE status = 'completed'");
    ok(worst < 1e-6, "%s: each service took 10 ms a token (worst off by %.3g s)", what, worst);
}

/* c replicas at rate lambda over duration, replies `output` (a --set) of
 * mean `tokens`: the loss share within 4 standard errors of B(c, a).
 * Successive arrivals' outcomes are positively correlated (one lost means
 * all c were busy, and likely still are), so the binomial sd of a
 * proportion understates the error: the batch means' standard error
 * (BATCHES spans of the run, each much longer than a service) is used,
 * never less than the binomial one. */
static void check_erlang(int c, double lambda, double duration, const char *output,
                         double tokens, const char *what)
{
    char replicas[64], rate[64], stop[64];
    snprintf(replicas, sizeof replicas, "cluster.replicas=%d", c);
    snprintf(rate, sizeof rate, "workload.arrival.rate_per_s=%g", lambda);
    snprintf(stop, sizeof stop, "stop.duration_s=%g", duration);
    const char *const sets[] = {replicas, rate, stop, output, NULL};
    sqlite3 *db = support_run_json(base, sets, false);
    if (!ok(db != NULL, "%s: the run is recorded", what)) return;
    check_loss_system(db, what);
    double n = support_q1(db, "SELECT count(*) FROM requests");
    double lost = support_q1(db, "SELECT avg(status = 'rejected') FROM requests");
    /* a's E[S]: every request drew its reply, served or not (an
     * exponential's sd is its mean, and a fixed one's 0) */
    double drawn = support_q1(db, "SELECT avg(output_tokens) FROM requests");
    ok(fabs(drawn - tokens) <= 4 * tokens / sqrt(n), "%s: replies of %.4f tokens on average, "
       "E[N] = %.4f", what, drawn, tokens);
    double a = lambda * ITERATION_S * tokens, b = erlang_b(c, a);
    double binomial = sqrt(b * (1 - b) / n);
    double se = fmax(support_batch_se(db, "status = 'rejected'", duration, BATCHES), binomial);
    ok(fabs(lost - b) <= 4 * se,
       "%s: %.4f of %g arrivals lost, B(%d, %.4f) = %.4f (se %.4f, binomial %.4f)", what, lost,
       n, c, a, b, se, binomial);
    sqlite3_close(db);
}

static void test_recursion(void)
{
    /* B(1, a) = a / (1 + a); B(2, 1) = (1/2) / (1 + 1 + 1/2) */
    is_near(erlang_b(1, 3), 0.75, 1e-15, "B(1, 3) = 3 / 4");
    is_near(erlang_b(2, 1), 0.2, 1e-15, "B(2, 1) = 1 / 5");
    is_near(erlang_b(3, 3), 4.5 / 13, 1e-15, "B(3, 3) = 4.5 / 13");
}

int main(void)
{
    if (support_init()) return 1;
    base = support_scenario_text("erlang-loss.json");
    const char *fixed = "workload.output_tokens={\"dist\": \"fixed\", \"value\": 10}";
    const char *expo = "workload.output_tokens={\"dist\": \"exponential\", \"mean\": 10}";
    double expo_mean = rounded_exponential_mean(MEAN_TOKENS);
    test_recursion();
    check_erlang(2, 15, 2000, fixed, MEAN_TOKENS, "c 2, fixed");
    check_erlang(2, 15, 2000, expo, expo_mean, "c 2, exponential");
    check_erlang(6, 40, 1000, fixed, MEAN_TOKENS, "c 6, fixed");
    check_erlang(6, 40, 1000, expo, expo_mean, "c 6, exponential");
    free(base);
    support_fini();
    return tap_done();
}
