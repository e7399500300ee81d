/*
 * power.c: what a GPU draws while it works.  Published per-phase figures
 * (SplitwiseSim's: an H100 draws about its TDP while prefilling and 380 W
 * while decoding, 75 W idle) are taken at typical efficiencies -- prefill
 * near the GPU's default MFU, decode near its default MBU -- so the draw of
 * any piece of work is interpolated from its own achieved compute and
 * bandwidth utilisation: each phase's dynamic power scales with the
 * utilisation of the resource that phase exercises.
 */
#include "mdl.h"

double mdl_power_w(const mdl_gpu *g, int gpus, double flops, double bytes, double seconds)
{
    if (seconds <= 0) return g->idle_w * gpus;
    double mfu = flops / (gpus * g->flops * seconds);
    double mbu = bytes / (gpus * g->mem_bw * seconds);
    double w = g->idle_w + (g->prefill_w - g->idle_w) * mfu / g->mfu +
               (g->decode_w - g->idle_w) * mbu / g->mbu;
    return (w < g->tdp_w ? w : g->tdp_w) * gpus; /* the board's power limit holds */
}
