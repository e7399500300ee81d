/*
 * schema.h: every table of a servesim database, each column described
 * once -- its name, its SQL type, how it is bound and from what -- as an
 * X-macro list, from which recorder.c generates the CREATE TABLE text, the
 * INSERT statement and the binds.  A column added here appears in all
 * three; docs/database.md says what each means.
 *
 * A list is TABLE(X, LAST): X(name, sql_type, binder, value) for each
 * column, LAST for the last one (the CREATE TABLE of a table without a
 * trailing key clause, and every INSERT, must not end in a comma).  value
 * is an expression of `row`, the sink's row, and `r`, the recorder.
 * Binders: i64 (a whole number), opt (a whole number, NULL when negative:
 * "never reached a replica", "not in a task", "no such tier"), real, time (a time in
 * seconds, NULL when NAN: "never happened"), text, and accepted (an
 * iteration's decoders by the drafts each accepted, a JSON array; NULL for
 * a step that did not speculate).
 *
 * The CREATE TABLE text is stored in every database (sqlite_master): it
 * must not change, down to its spaces, or databases of one schema version
 * would differ.  A column is added at the end of its list, with a default,
 * and in rec__upgrade's ALTER TABLE for older databases: rows are copied
 * between databases by position.  `runs` is written by two statements of its own
 * (recorder.c: a run's start and its end), so its list has no binders.
 */
#ifndef REC_SCHEMA_H
#define REC_SCHEMA_H

#define REC_RUNS(X, LAST)                                                                          \
    X(id, "INTEGER PRIMARY KEY", -, -)                                                             \
    X(name, "TEXT NOT NULL", -, -)                                                                 \
    X(seed, "INTEGER NOT NULL", -, -)                                                              \
    X(scenario, "TEXT NOT NULL", -, -)                                                             \
    X(version, "TEXT NOT NULL", -, -)                                                              \
    X(started_at, "TEXT NOT NULL", -, -)                                                           \
    X(status, "TEXT NOT NULL", -, -)                                                               \
    X(sim_end_s, "REAL", -, -)                                                                     \
    X(wall_s, "REAL", -, -)                                                                        \
    X(events, "INTEGER", -, -)                                                                     \
    X(overrides, "TEXT", -, -)                                                                     \
    X(sweep, "TEXT", -, -)                                                                         \
    X(status_reason, "TEXT", -, -)                                                                 \
    LAST(requests, "INTEGER", -, -)

#define REC_REQUESTS(X, LAST)                                                                      \
    X(run_id, "INTEGER NOT NULL REFERENCES runs(id)", i64, r->run_id)                              \
    X(id, "INTEGER NOT NULL", i64, row->id)                                                        \
    X(replica, "INTEGER", opt, row->replica)                                                       \
    X(class, "TEXT", text, row->cls)                                                               \
    X(task_id, "INTEGER", opt, row->task_id)                                                       \
    X(call_index, "INTEGER", opt, row->task_id < 0 ? -1 : row->call_index)                         \
    X(arrival_s, "REAL NOT NULL", time, row->arrival_s)                                            \
    X(enqueue_s, "REAL", time, row->enqueue_s)                                                     \
    X(first_scheduled_s, "REAL", time, row->first_scheduled_s)                                     \
    X(first_token_s, "REAL", time, row->first_token_s)                                             \
    X(finish_s, "REAL", time, row->finish_s)                                                       \
    X(prompt_tokens, "INTEGER NOT NULL", i64, row->prompt_tokens)                                  \
    X(output_tokens, "INTEGER NOT NULL", i64, row->output_tokens)                                  \
    X(preemptions, "INTEGER NOT NULL", i64, row->preemptions)                                      \
    X(slow, "INTEGER NOT NULL", i64, row->slow)                                                    \
    X(status, "TEXT NOT NULL", text, row->status)                                                  \
    X(decode_replica, "INTEGER", opt, row->decode_replica)                                         \
    X(decode_enqueue_s, "REAL", time, row->decode_enqueue_s)                                       \
    X(cached_tokens, "INTEGER NOT NULL DEFAULT 0", i64, row->cached_tokens)                        \
    X(priority, "INTEGER", i64, row->priority)                                                     \
    X(deadline_s, "REAL", deadline, row->deadline_s)                                                   \
    X(tenant, "TEXT", text, row->tenant)                                                           \
    X(reason, "TEXT", text, row->reason)                                                           \
    X(retry_of, "INTEGER", opt, row->retry_of)                                                     \
    X(retried, "INTEGER NOT NULL DEFAULT 0", i64, row->retried)                                    \
    X(cpu_hit_tokens, "INTEGER", opt, row->cpu_hit_tokens)                                         \
    X(disk_hit_tokens, "INTEGER", opt, row->disk_hit_tokens)                                       \
    X(restarts, "INTEGER NOT NULL DEFAULT 0", i64, row->restarts)                                  \
    LAST(restarted_from, "INTEGER", opt, row->restarted_from)

#define REC_REPLICAS(X, LAST)                                                                      \
    X(run_id, "INTEGER NOT NULL REFERENCES runs(id)", i64, r->run_id)                              \
    X(replica, "INTEGER NOT NULL", i64, row->replica)                                              \
    X(pool, "TEXT NOT NULL", text, row->pool)                                                      \
    X(gpu, "TEXT NOT NULL", text, row->gpu)                                                        \
    X(model, "TEXT NOT NULL", text, row->model)                                                    \
    X(gpus, "INTEGER NOT NULL", i64, row->gpus)                                                    \
    X(busy_s, "REAL NOT NULL", real, row->busy_s)                                                  \
    X(prefill_s, "REAL NOT NULL", real, row->prefill_s)                                            \
    X(decode_s, "REAL NOT NULL", real, row->decode_s)                                              \
    X(iterations, "INTEGER NOT NULL", i64, row->iterations)                                        \
    X(flops, "REAL NOT NULL", real, row->flops)                                                    \
    X(bytes, "REAL NOT NULL", real, row->bytes)                                                    \
    X(batch_seq_s, "REAL NOT NULL", real, row->batch_seq_s)                                        \
    X(kv_capacity_tokens, "INTEGER NOT NULL", i64, row->kv_capacity_tokens)                        \
    X(kv_peak_tokens, "INTEGER NOT NULL", i64, row->kv_peak_tokens)                                \
    X(preemptions, "INTEGER NOT NULL", i64, row->preemptions)                                      \
    X(prefill_tokens, "INTEGER NOT NULL", i64, row->prefill_tokens)                                \
    X(decode_tokens, "INTEGER NOT NULL", i64, row->decode_tokens)                                  \
    X(swap_bytes, "REAL NOT NULL", real, row->swap_bytes)                                          \
    X(out_of_range_iterations, "INTEGER NOT NULL", i64, row->out_of_range)                         \
    X(peak_flops, "REAL NOT NULL", real, row->peak_flops)                                          \
    X(peak_bw, "REAL NOT NULL", real, row->peak_bw)                                                \
    X(tdp_w, "REAL NOT NULL", real, row->tdp_w)                                                    \
    X(idle_w, "REAL NOT NULL", real, row->idle_w)                                                  \
    X(prefill_w, "REAL NOT NULL", real, row->prefill_w)                                            \
    X(decode_w, "REAL NOT NULL", real, row->decode_w)                                              \
    X(energy_j, "REAL NOT NULL", real, row->energy_j)                                              \
    X(kv_token_s, "REAL NOT NULL", real, row->kv_token_s)                                          \
    X(usd_per_gpu_hour, "REAL NOT NULL", real, row->usd_per_gpu_hour)                              \
    X(evicted_blocks, "INTEGER NOT NULL DEFAULT 0", i64, row->evicted_blocks)                      \
    X(weight_bytes, "REAL NOT NULL DEFAULT 0", real, row->weight_bytes)                            \
    X(kv_bytes_per_token, "REAL NOT NULL DEFAULT 0", real, row->kv_bytes_per_token)                \
    X(created_s, "REAL NOT NULL DEFAULT 0", real, row->created_s)                                  \
    X(ready_s, "REAL DEFAULT 0", time, row->ready_s)                                               \
    X(retired_s, "REAL", time, row->retired_s)                                                     \
    X(end_reason, "TEXT NOT NULL DEFAULT 'end_of_run'", text, row->end_reason)                     \
    X(output_s, "REAL", real, row->output_s)                                                       \
    X(spec_k, "INTEGER NOT NULL DEFAULT 0", i64, row->spec_k)                                      \
    X(spec_steps, "INTEGER NOT NULL DEFAULT 0", i64, row->spec_steps)                              \
    X(spec_off_steps, "INTEGER NOT NULL DEFAULT 0", i64, row->spec_off_steps)                      \
    X(spec_drafts, "INTEGER NOT NULL DEFAULT 0", i64, row->spec_drafts)                            \
    X(spec_draft_tokens, "INTEGER NOT NULL DEFAULT 0", i64, row->spec_draft_tokens)                \
    X(spec_accepted, "INTEGER NOT NULL DEFAULT 0", i64, row->spec_accepted)                        \
    X(spec_drafting_s, "REAL NOT NULL DEFAULT 0", real, row->spec_drafting_s)                      \
    X(spec_verify_s, "REAL NOT NULL DEFAULT 0", real, row->spec_verify_s)                          \
    X(lora_slots, "INTEGER NOT NULL DEFAULT 0", i64, row->lora_slots)                              \
    X(lora_lookups, "INTEGER NOT NULL DEFAULT 0", i64, row->lora_lookups)                          \
    X(lora_gpu_hits, "INTEGER NOT NULL DEFAULT 0", i64, row->lora_gpu_hits)                        \
    X(lora_cpu_hits, "INTEGER NOT NULL DEFAULT 0", i64, row->lora_cpu_hits)                        \
    X(lora_load_s, "REAL NOT NULL DEFAULT 0", real, row->lora_load_s)                              \
    X(lora_kernel_s, "REAL NOT NULL DEFAULT 0", real, row->lora_kernel_s)                          \
    X(cpu_tier_bytes, "REAL NOT NULL DEFAULT 0", real, row->cpu_tier_bytes)                        \
    X(cpu_lookup_tokens, "INTEGER NOT NULL DEFAULT 0", i64, row->cpu_lookup_tokens)                \
    X(cpu_hit_tokens, "INTEGER NOT NULL DEFAULT 0", i64, row->cpu_hit_tokens)                      \
    X(cpu_stored_bytes, "REAL NOT NULL DEFAULT 0", real, row->cpu_stored_bytes)                    \
    X(cpu_loaded_bytes, "REAL NOT NULL DEFAULT 0", real, row->cpu_loaded_bytes)                    \
    X(disk_tier_bytes, "REAL NOT NULL DEFAULT 0", real, row->disk_tier_bytes)                      \
    X(disk_lookup_tokens, "INTEGER NOT NULL DEFAULT 0", i64, row->disk_lookup_tokens)              \
    X(disk_hit_tokens, "INTEGER NOT NULL DEFAULT 0", i64, row->disk_hit_tokens)                    \
    X(disk_stored_bytes, "REAL NOT NULL DEFAULT 0", real, row->disk_stored_bytes)                  \
    X(disk_loaded_bytes, "REAL NOT NULL DEFAULT 0", real, row->disk_loaded_bytes)                  \
    LAST(drain_s, "REAL", time, row->drain_s)

#define REC_ITERATIONS(X, LAST)                                                                    \
    X(run_id, "INTEGER NOT NULL REFERENCES runs(id)", i64, r->run_id)                              \
    X(replica, "INTEGER NOT NULL", i64, row->replica)                                              \
    X(start_s, "REAL NOT NULL", real, row->start_s)                                                \
    X(end_s, "REAL NOT NULL", real, row->end_s)                                                    \
    X(prefill_tokens, "INTEGER NOT NULL", i64, row->prefill_tokens)                                \
    X(decode_seqs, "INTEGER NOT NULL", i64, row->decode_seqs)                                      \
    X(kv_tokens, "INTEGER NOT NULL", i64, row->kv_tokens)                                          \
    X(flops, "REAL NOT NULL", real, row->flops)                                                    \
    X(bytes, "REAL NOT NULL", real, row->bytes)                                                    \
    X(energy_j, "REAL NOT NULL", real, row->energy_j)                                              \
    X(scheduled_s, "REAL", time, row->scheduled_s)                                                 \
    X(gpu_start_s, "REAL", time, row->gpu_start_s)                                                 \
    X(gpu_end_s, "REAL", time, row->gpu_end_s)                                                     \
    X(client_s, "REAL", time, row->client_s)                                                       \
    X(decode_tokens, "INTEGER", i64, row->decode_tokens)                                           \
    X(decode_accepted, "TEXT", accepted, row)                                                      \
    X(cpu_tier_tokens, "INTEGER", opt, row->cpu_tier_tokens)                                       \
    LAST(disk_tier_tokens, "INTEGER", opt, row->disk_tier_tokens)

#define REC_TASKS(X, LAST)                                                                         \
    X(run_id, "INTEGER NOT NULL REFERENCES runs(id)", i64, r->run_id)                              \
    X(id, "INTEGER NOT NULL", i64, row->id)                                                        \
    X(class, "TEXT NOT NULL", text, row->cls)                                                      \
    X(status, "TEXT NOT NULL", text, row->status)                                                  \
    X(start_s, "REAL NOT NULL", real, row->start_s)                                                \
    X(finish_s, "REAL", time, row->finish_s)                                                       \
    X(calls, "INTEGER NOT NULL", i64, row->calls)                                                  \
    LAST(slow_calls, "INTEGER NOT NULL", i64, row->slow_calls)

/* A measured run's own facts (servesim import): the tool that measured it,
 * the file, the clock its stamps read, the tool's aggregates (JSON object)
 * and the settings it did not record (JSON array).  One row per measured
 * run; a simulated run has none. */
#define REC_MEASUREMENTS(X, LAST)                                                                  \
    X(run_id, "INTEGER PRIMARY KEY REFERENCES runs(id)", -, -)                                     \
    X(format, "TEXT NOT NULL", -, -)                                                               \
    X(source, "TEXT NOT NULL", -, -)                                                               \
    X(clock, "TEXT NOT NULL", -, -)                                                                \
    X(metrics, "TEXT NOT NULL", -, -)                                                              \
    LAST(missing, "TEXT NOT NULL", -, -)

/* The pieces of SQL a list generates. */
#define REC_DDL(name, type, bind, value) " " #name " " type ","
#define REC_DDL_LAST(name, type, bind, value) " " #name " " type
#define REC_PARAM(name, type, bind, value) "?,"
#define REC_PARAM_LAST(name, type, bind, value) "?"
/* 1 + for each column: a list's length as an expression. */
#define REC_COUNT(name, type, bind, value) 1 +

#endif /* REC_SCHEMA_H */
