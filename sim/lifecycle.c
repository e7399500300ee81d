/*
 * lifecycle.c: how long a replica the fleet makes while it runs takes to
 * become ready (cluster.lifecycle, issue 30) -- what a replacement for a
 * failed replica waits beside its repair time (failures.c).
 */
#include "sim_int.h"

int64_t sim__lc_ready_after_ns(const sim_engine *e, const sim_pool *pool)
{
    (void)e;
    (void)pool;
    return 0; /* the lifecycle's start-up time (issue 30): 0 until cluster.lifecycle is read */
}
