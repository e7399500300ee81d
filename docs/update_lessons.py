#!/usr/bin/env python3
"""Regenerates docs/lessons.md: runs every lesson with the built servesim
(build/cli/servesim by default), stores its figure in docs/lessons/NAME.svg
and its output in the page.  Runs are seeded, so the page only changes when
the engine or a lesson does.  Usage: docs/update_lessons.py [SERVESIM]"""
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
servesim = sys.argv[1] if len(sys.argv) > 1 else str(root / "build" / "cli" / "servesim")

INTRO = {
    "two-clocks": "A request has two phases, each with its own clock. One sweep varies the prompt "
    "from 128 to 32k tokens (nine lengths), the other the reply from 10 to 1,000 (seven), one "
    "request at a time; the figure draws both sweeps over one axis of tokens, a panel per clock. "
    "Then the lesson's own point (a 512-token prompt, a 100-token reply, at the same load) runs "
    "on `vllm-v1` (`lesson.pipeline_engine`) with the lesson's scheduler keys pinned, first with "
    "async scheduling off and then as the engine ships. The last sentence splits what the real "
    "engine adds to TTFT: its step pipeline, its API server, the token's stream and the engine "
    "core itself.",
    "chat-vs-summary": "System A starts at once but streams slowly; system B makes you wait, "
    "then streams three times faster (both are linear cost models, `lesson.systems`). A short "
    "chat reply and a long summary on each; the figure draws each system's TTFT + TPOT x (n - 1) "
    "against the reply's length, the measured replies on it and the crossing marked.",
    "batching": "Closed-loop users from 1 to 256 (fourteen counts) on a server that batches up "
    "to 64 sequences, with an SLO set. The figure marks the max_batch knee in every panel, the "
    "TTFT and TPOT SLOs, and the peak of goodput.",
    "speculation": "Closed-loop users from 1 to 256 (twelve counts) on one H100 serving "
    "Llama-3.1-8B, each count run twice with one seed: without `cluster.speculative` and with "
    "it -- EAGLE drafting K = 4 tokens a step with a mean accepted length of 2.39, vLLM issue "
    "#20780's measured figure for EAGLE at K = 4 (the validation table of "
    "[speculative-decoding.md](speculative-decoding.md)). At light load a speculative step "
    "costs little more than a plain one, which reads the weights once either way, and brings "
    "2.39 tokens a sequence; at heavy load its K + 1 positions a sequence are compute, and the "
    "step grows by more than the tokens it brings. The sentences give the speedup at both ends "
    "and the load where it crosses 1, interpolated between the two rows around it (or that no "
    "load run crosses); the figure draws TPOT with and without, and the speedup with x1 and the "
    "crossover. The drafter is the scenario's: `--set cluster.speculative.num_speculative_tokens=3 "
    "--set cluster.speculative.acceptance_length=2.29` runs the issue's K = 3.",
    "utilisation": "The same two-GPU cluster from 10% to 100% of the full load a saturated run "
    "measures for it: closed-loop users enough to fill every batch slot of the cluster it runs, "
    "so `--set cluster.replicas=4` measures four replicas' full load. Each load is 600 s of "
    "Poisson arrivals (`lesson.arrivals_s`) and the saturated run 100 requests a user: no run "
    "drops a request, so what a load serves of full lags it only by the drain after its last "
    "arrival -- about one long request, a percent or two of 600 s, which a sentence measures "
    "(at 60 s it was 7-12%, and 90% and 95% served nearly the same). The figure draws cost "
    "against the utilisation each run served, with 1/u from full load as a smooth line, energy, "
    "and what high load costs in TTFT. `--set lesson.whole_server=1` counts the energy of the "
    "whole server -- GPUs, hosts and the PUE -- in the sentences and first in the figure.",
    "tail": "400 requests, with exactly 0 to 40 of them (0% to 10%, sixteen shares) 15 s "
    "slower: `workload.slow.of` makes exactly k of the 400 slow, placed by the seed, so each "
    "row's share is the one its run had. The figure draws the percentiles as steps: P99 falls "
    "off its cliff once more than 1% of the requests are slow (from 5 of 400 on, since P99 is "
    "rank 0.99 x 399 = 395.01 of the sorted latencies), P95 once more than 5% are (from 21 on), "
    "while the mean only climbs.",
    "priorities": "One H100 serving Llama-3.1-8B at 20 requests/s of Poisson arrivals, two "
    "classes sharing them by weight: `interactive` (chat-like, 500-token prompts and "
    "150-token replies, priority `standard`, a 1 s TTFT target) and `batch` (2,000-token "
    "prompts and 500-token replies, priority `sheddable`, a 600 s end-to-end target). The "
    "knob is the batch class's share of the requests, from 10% to 90% (`lesson.batch_shares`): "
    "the batch requests carry about four times the tokens, so the same rate overloads the GPU "
    "from about 30% batch on. Each share runs twice with one seed, first come first served "
    "and by vLLM's priority order (`cluster.scheduler.scheduling_policy`: lower first, first "
    "come first served among equals, a more urgent request preempting the least urgent running "
    "one). In front of the GPU a gateway (`cluster.gateway`, [gateway.md](gateway.md): the "
    "Gateway API Inference Extension's endpoint picker) refuses requests of priority `sheddable` and less urgent "
    "while the replica is saturated -- GIE's saturation, max(waiting requests / "
    "`queue_depth_threshold`, KV cache use / `kv_cache_threshold`), at 1 or more -- and holds "
    "the others until it is not. The lesson sets the thresholds to 300 waiting requests and a "
    "full KV cache, where GIE's defaults are 5 and 0.8: at those the gateway, not the "
    "scheduler, holds the queue from the first burst, sheds from the lightest share and holds "
    "the interactive requests too, so that the two orders hardly differ (`--set "
    "cluster.gateway.queue_depth_threshold=5 --set cluster.gateway.kv_cache_threshold=0.8` "
    "shows it: 1.6% of the batch requests shed at 10%, and at 90% an interactive TTFT P99 of "
    "4.80 s first come first served and 5.32 s by priority). The table shows the interactive "
    "class's TTFT P99 each way, the batch class's mean wait in the replica's queue each way "
    "(a request the gateway holds waits there first, which its e2e counts), its e2e P99 by "
    "priority and the share of it shed each way; the sentences say where first come first served "
    "misses the interactive target and priority does not, how much wait priority moves onto "
    "the batch tier, and the share where shedding starts, none below it. The figure draws the "
    "three over the share, the TTFT target and the start of shedding marked. `--unset "
    "cluster.gateway` runs without the gateway: nothing is shed, and the batch queue only "
    "grows.",
    "memory": "Chat sessions on one H100 serving Llama-3.1-8B with prefix caching on: each "
    "session ([scenario.md](scenario.md#sessions-workloadsessions-or-a-classs-sessions)) is 4 to "
    "8 turns, a 2,000-token first prompt and 200-token replies, each turn sending the whole "
    "history back after a think time of 20 s on average, so that a turn finds its history in "
    "the prefix cache if nothing evicted it meanwhile. The knob is the sessions in flight, from "
    "32 to 384 (`lesson.sessions_in_flight`): a closed loop of that many users "
    "(`workload.arrival.users`), each starting a session 5 s on average after its last one "
    "ended, three sessions a user (`lesson.sessions_per_user`; `stop.requests` counts "
    "sessions). Each count runs twice with one seed: on the GPU alone (the scenario less "
    "`cluster.kv_offload`) and with a 64 GiB CPU tier below the prefix cache "
    "([kv-offload.md](kv-offload.md)). The working set is the sessions in flight x their mean "
    "prompt x one token's KV (128 KiB for Llama-3.1-8B in bf16): it outgrows HBM's 55.4 GiB of "
    "KV (the report's `kv_capacity_tokens`: what the engine leaves beside the weights) near 150 "
    "sessions, and HBM and the tier together near 310; the hit rate already falls below that, as the running "
    "requests' own KV shares HBM. The table shows the hit rate and TTFT each way, and the "
    "tier's loads over the run against the link (`pcie_gbs` x GPUs, 64 GB/s for the H100 SXM's "
    "PCIe 5.0): the last sentence names what limits the tier -- its size or PCIe -- as the larger "
    "of two shares of demand over capacity, the working set over HBM and the tier, and the "
    "link's busy time over the run. Loads are cheap beside prefill (a 3,000-token history is "
    "0.4 GB, 6 ms at 64 GB/s), so here the tier's size is the limit, the link busy under 2% of "
    "the time. The figure draws the hit rate, TTFT P50 and the loads over the sessions, marking "
    "where the working set outgrows HBM and where it outgrows both. At 512 sessions (`--set "
    "lesson.sessions_in_flight=[32,64,128,192,256,384,512]`) the GPU is saturated by the "
    "prefill of what it misses either way: TTFT P50 is about 27 s with the tier and without, "
    "the queue's.",
    "day": "A day of traffic on an autoscaled fleet of H100s serving Llama-3.1-8B: a `daily` "
    "rate ([scenario.md](scenario.md)) from 2 requests/s at the trough to 24 at the peak, Poisson, "
    "under `cluster.autoscaler` ([autoscaling.md](autoscaling.md)) on the running requests per "
    "replica, each new replica ready 90 s after it is made (60 s to provision, the weights over "
    "`network_fs`, 20 s of warm-up). The day is compressed twelve times (`period_s` 7200: two "
    "hours from trough to trough) so that a point runs in well under a second; the lesson still "
    "holds because what it turns on is how far the rate rises within one start-up time, and the "
    "compressed morning rises twelve times faster than a real one -- a real day's sudden surges, "
    "not its slow swell (`--set` of `workload.arrival.rate_profile.daily.period_s=86400`, "
    "`phase_s=43200` and `stop.duration_s=86400` runs a real one, twelve times the requests). The knob is the autoscaler's "
    "`target` (`lesson.target`), each run with one seed; each point's cost is the report's, every "
    "replica paid over its life, and beside it a static fleet of the replicas that point peaked "
    "at, the same day without the autoscaler (`--unset cluster.autoscaler`, `cluster.replicas` "
    "the peak; points that peaked alike share one run, `static_runs` in `--json`'s numbers). "
    "The figure draws the cost, TTFT P99 (the 0.5 s SLO marked) and the share that "
    "missed the SLO over the target, each way.",
    "fan-out": "Agent tasks of 1 to 100 calls (seven counts), sequential and parallel, each "
    "call slow with probability 1%, independently of the others -- so the chance a task meets "
    "one is binomial, 1 - (1 - p)^n; with exactly k of N calls slow (`workload.slow.of`) it "
    "would be hypergeometric, 1 - C(N - k, n) / C(N, n). A count of many calls runs fewer tasks "
    "(`lesson.calls_per_point`), so its 95% interval (Wilson's) is wider. The figure draws "
    "1 - (1 - p)^n as a smooth line, the measured shares as points with their intervals, and "
    "the task's P99 against the call's.",
    "definitions": "One run (Poisson chat traffic on one H100, every iteration recorded) under "
    "every public tool's definition of per-token latency. The figure names each definition by "
    "the tools that report it and shows its statistics as categories: points, with no line "
    "invented between two percentiles.",
}

def main():
    names = [line.split()[0] for line in subprocess.run(
        [servesim, "lesson"], check=True, capture_output=True, text=True).stdout.splitlines()[2:]
        if line.strip()]
    out = ["# Lessons",
           "",
           "`servesim lesson NAME` runs one of the effects behind \"inference performance is not "
           "one number\" with the real engine: a shipped scenario, `examples/lessons/NAME.json`, "
           "and the sweep that makes its point. It prints the numbers that carry the lesson and "
           "a few sentences computed from them -- change a knob with `--set` (the scenario's "
           "keys, or the lesson's own under `lesson.`) and the sentences follow the new numbers; "
           "`--unset PATH` removes a key first, as in `servesim run` (every `--unset` before "
           "every `--set`, so `--unset lesson.loads --set lesson.loads=[0.5,1]` replaces a "
           "knob whole). "
           "`--plot FILE.svg` (or `FILE.png`, for slides) draws its figure, `--json` prints the "
           "table, the findings and their numbers, `--quick` runs a reduced size (what the tests "
           "run), and `servesim lesson` alone lists them.",
           "",
           "To show them by dragging, `servesim explore` serves all eleven to a browser as live "
           "panels: each slider and button runs the lesson again on the engine, with its "
           "numbers, figure and sentences; a teacher opens the URL it prints and drags "
           "([explore.md](explore.md) has the panels, in the order the article teaches them).",
           "",
           "This page is generated by `docs/update_lessons.py` from the seeded runs.",
           ""]
    for name in names:
        svg = root / "docs" / "lessons" / f"{name}.svg"
        text = subprocess.run([servesim, "lesson", name, "--plot", str(svg)], check=True,
                              capture_output=True, text=True).stdout
        out += [f"## {name}", "", INTRO.get(name, ""), "", "```sh",
                f"servesim lesson {name} --plot {name}.svg", "```", "", "```text", text.rstrip(),
                "```", "", f"![{name}](lessons/{name}.svg)", ""]
    (root / "docs" / "lessons.md").write_text("\n".join(out))

main()
