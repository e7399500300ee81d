/*
 * lifecycle.c: a replica the fleet makes while it runs (cluster.lifecycle,
 * issue 30; its keys are read with the autoscaler's, autoscaler.c) -- how
 * long it takes to become ready (provisioning, the model's load and
 * warm-up), and how slowly it serves at first.  The autoscaler's new
 * replicas wait the start-up, and so does a failed replica's replacement
 * beside its repair time (failures.c); both start cold.  How a replica let
 * go lets go of its work (drain) is the fleet's (fleet.c).
 *
 * Cold is what an engine's start-up leaves lazy: vLLM captures its CUDA
 * graphs and compiles before it serves (warm_up_s), yet its first inference
 * after a cold start took 3.72 s against 0.92 s after a wake from sleep mode
 * (vLLM blog on sleep mode, A100, vLLM 0.11) -- kernels autotuned, JIT-built
 * and memory pools grown on the first batches they meet.  So the slowdown
 * is counted in requests served, and every iteration until then is slower
 * by one factor: a batch's iteration has one time.
 */
#include "sim_int.h"

int64_t sim__lc_ready_after_ns(const sim_engine *e, const sim_pool *pool)
{
    (void)e;
    const sim_lifecycle *lc = &pool->lifecycle;
    return sim__ns(lc->provision_s + lc->load_s + lc->warm_up_s);
}

void sim__lc_start_cold(sim__replica *rp)
{
    const sim_lifecycle *lc = &rp->pool->lifecycle;
    rp->warm_left = lc->warm_up_factor != 1 ? lc->warm_up_requests : 0;
}

void sim__lc_served(sim__replica *rp)
{
    if (rp->warm_left > 0) rp->warm_left--;
}

void sim__lc_slow_step(const sim__replica *rp, mdl_step *step)
{
    if (!rp->warm_left) return;
    double f = rp->pool->lifecycle.warm_up_factor;
    step->time_s *= f;
    step->gpu_s *= f;
    step->prefill_s *= f; /* the shares of prefill and decode stay */
    step->decode_s *= f;
}
