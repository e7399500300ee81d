/*
 * lifecycle.c: how long a replica the fleet makes while it runs takes to
 * become ready (cluster.lifecycle, issue 30; its keys are read with the
 * autoscaler's, autoscaler.c): provisioning, the model's load and warm-up.
 * The autoscaler's new replicas wait it, and so does a failed replica's
 * replacement beside its repair time (failures.c).
 */
#include "sim_int.h"

int64_t sim__lc_ready_after_ns(const sim_engine *e, const sim_pool *pool)
{
    (void)e;
    const sim_lifecycle *lc = &pool->lifecycle;
    return sim__ns(lc->provision_s + lc->load_s + lc->warm_up_s);
}
