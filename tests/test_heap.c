/*
 * test_heap.c: the event queue's heap -- entries leave in (time, insertion)
 * order, equal times first-in first-out, under random interleavings of pushes
 * and pops checked against a sorted reference; tracked entries know their
 * slot, can be brought forward and removed from anywhere.  And the waiting
 * queue on top of it: first come first served, with requests sent back to
 * its front ahead of everyone (the last sent back first); every scheduler
 * family answers every question the replica's loop asks.
 */
#include <stdlib.h>

#include "sim_int.h"
#include "tap.h"

static int cmp_event(const void *a, const void *b)
{
    const sim__event *x = a, *y = b;
    if (x->at != y->at) return x->at < y->at ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_fifo_ties(void)
{
    sim__heap h;
    sim__heap_init(&h);
    for (int i = 0; i < 100; i++) sim__heap_push(&h, 7, NULL, NULL, i);
    sim__event ev;
    bool fifo = true;
    for (int i = 0; i < 100; i++) fifo &= sim__heap_pop(&h, &ev) && ev.arg == i;
    ok(fifo, "equal times leave first-in first-out");
    ok(!sim__heap_pop(&h, &ev), "an empty heap pops nothing");
    sim__heap_fini(&h);
}

static void test_random_against_sort(void)
{
    enum { N = 20000 };
    sim__heap h;
    sim__heap_init(&h);
    sim__event *ref = malloc(N * sizeof *ref);
    size_t nref = 0, popped = 0;
    bool order = true;
    srand(7);
    int64_t last_at = INT64_MIN;
    uint64_t last_seq = 0;
    for (int i = 0; i < N; i++) {
        int64_t at = last_at == INT64_MIN ? rand() % 1000 : last_at + rand() % 50;
        sim__heap_push(&h, at, NULL, NULL, i);
        ref[nref++] = (sim__event){at, h.next_seq - 1, NULL, NULL, i, NULL};
        if (rand() % 3 == 0) { /* pop now and then, as an event loop does */
            sim__event ev;
            sim__heap_pop(&h, &ev);
            order &= ev.at > last_at || (ev.at == last_at && ev.seq > last_seq) ||
                     last_at == INT64_MIN;
            last_at = ev.at;
            last_seq = ev.seq;
            popped++;
        }
    }
    ok(order, "interleaved pops never go back in time (%zu pops)", popped);
    /* drain: what remains comes out sorted, and matches the reference set */
    size_t rest = h.n;
    sim__event *out = malloc(rest * sizeof *out);
    for (size_t i = 0; i < rest; i++) sim__heap_pop(&h, &out[i]);
    bool sorted = true;
    for (size_t i = 1; i < rest; i++) sorted &= cmp_event(&out[i - 1], &out[i]) < 0;
    ok(sorted, "the rest drains in (time, seq) order");
    is_int(rest + popped, N, "nothing lost or duplicated");
    qsort(ref, nref, sizeof *ref, cmp_event);
    is_int(out[rest - 1].at, ref[nref - 1].at, "the last out is the largest pushed: its time");
    is_int(out[rest - 1].seq, ref[nref - 1].seq, "and its sequence number");
    free(out);
    free(ref);
    sim__heap_fini(&h);
}

/* A tracked entry knows where it is, through every push and pop, and can be
 * brought forward. */
static void test_tracked(void)
{
    sim__heap h;
    sim__heap_init(&h);
    size_t slot = 0;
    for (int i = 0; i < 50; i++) sim__heap_push(&h, 100 + i, NULL, NULL, i);
    sim__heap_push_tracked(&h, 1000, NULL, NULL, -1, &slot);
    for (int i = 0; i < 50; i++) sim__heap_push(&h, 2000 + i, NULL, NULL, i);
    sim__event ev;
    for (int i = 0; i < 20; i++) sim__heap_pop(&h, &ev);
    is_int(h.a[slot].arg, -1, "the slot follows the entry through pushes and pops");
    sim__heap_earlier(&h, slot, 50);
    ok(sim__heap_pop(&h, &ev), "the heap pops an entry");
    is_int(ev.arg, -1, "brought forward, it leaves first");
    is_int(ev.at, 50, "at its new time");
    is_int(slot, SIM__NO_SLOT, "and once out, its slot says so (its owner must not move it)");
    bool order = true, fresh = true;
    int64_t last = 0;
    while (sim__heap_pop(&h, &ev)) {
        order &= ev.at >= last;
        fresh &= ev.arg != -1;
        last = ev.at;
    }
    ok(order, "and the heap stays in order");
    ok(fresh, "without a stale copy of the entry brought forward");
    sim__heap_fini(&h);
}

/* Removing tracked entries anywhere (time-outs of finished requests) keeps
 * the heap in order and loses nothing else. */
static void test_remove(void)
{
    enum { N = 2000 };
    sim__heap h;
    sim__heap_init(&h);
    static size_t slots[N];
    gsl_rng *r = util_rng_stream(7, 1);
    for (int i = 0; i < N; i++)
        sim__heap_push_tracked(&h, (int64_t)gsl_rng_uniform_int(r, 500), NULL, NULL, i,
                               &slots[i]);
    int removed = 0;
    for (int i = 0; i < N; i += 3, removed++) sim__heap_remove(&h, slots[i]);
    bool gone = true;
    for (int i = 0; i < N; i += 3) gone &= slots[i] == SIM__NO_SLOT;
    is_int((int)h.n, N - removed, "removed entries leave");
    ok(gone, "and their slots say so");
    sim__event ev;
    bool order = true, kept = true;
    int64_t last = -1;
    int n = 0;
    while (sim__heap_pop(&h, &ev)) {
        order &= ev.at >= last;
        kept &= ev.arg % 3 != 0;
        last = ev.at;
        n++;
    }
    ok(order, "the rest leave in order");
    ok(kept, "none of the removed leaves");
    is_int(n, N - removed, "and every one of the rest does");
    gsl_rng_free(r);
    sim__heap_fini(&h);
}

/* Requests 0..5 join; 6 and 7 go back to the front, 7 after 6; 8 joins. */
static void test_waitq_order(void)
{
    sim__request r[9] = {{0}};
    sim__waitq q;
    sim__waitq_init(&q, &sim__policies[SIM_CONTINUOUS]);
    for (int i = 0; i < 6; i++) sim__waitq_push(&q, &r[i], false);
    sim__waitq_push(&q, &r[6], true);
    sim__waitq_push(&q, &r[7], true);
    sim__waitq_push(&q, &r[8], false);
    is_int(sim__waitq_len(&q), 9, "waiting queue: nine requests");
    ok(sim__waitq_head(&q) == &r[7], "the last sent back to the front is the head");
    const int want[] = {7, 6, 0, 1, 2, 3, 4, 5, 8};
    int in_order = 0;
    for (int i = 0; i < 9; i++) in_order += sim__waitq_pop(&q) == &r[want[i]];
    is_int(in_order, 9, "then the one sent back before it, then arrival order");
    ok(!sim__waitq_pop(&q), "an empty queue pops nothing");
    sim__waitq_fini(&q);
}

/* Every family's table answers every question but the optional hold. */
static void test_families_complete(void)
{
    int names = 0;
    while (sim_policy_names[names]) names++;
    is_int(names, SIM_N_POLICIES, "a name for every scheduler family");
    int missing = 0;
    for (int i = 0; i < SIM_N_POLICIES; i++) {
        const sim__policy *f = &sim__policies[i];
        missing += !f->budget + !f->order + !f->admits + !f->may_admit + !f->victim;
    }
    is_int(missing, 0, "every family answers budget, order, admits, may_admit and victim");
    ok(sim__policies[SIM_STATIC].hold_until != NULL, "static batching holds for its batch");
    is_int(sim__policies[SIM_CHUNKED].flags & SIM__SF_CHUNKS, SIM__SF_CHUNKS,
           "chunked cuts prompts");
}

int main(void)
{
    test_fifo_ties();
    test_tracked();
    test_remove();
    test_random_against_sort();
    test_waitq_order();
    test_families_complete();
    return tap_done();
}
