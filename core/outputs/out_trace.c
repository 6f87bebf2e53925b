/* out_trace.c - the Chrome Trace Event Format (JSON object form) of a
 * plan: one process per rank, every stage a complete ("X") event, memory
 * (static + activations) a "C" counter at every change, and every P2P
 * transfer (a dependency between stages on two ranks) a flow ("s" / "f"
 * pair) that Perfetto and chrome://tracing draw as an arrow. Times in the
 * file are microseconds, as the format requires. Above
 * LOOM_OUT_COMPACT_STAGES stages the compact form drops the flows and
 * keeps only the stage id in each slice's args. */
#include "output.h"

/* "F mb3 c1", "F mb3.1 c1" with sub-microbatches, then the module name. */
static void stage_name(FILE *out, const loom_plan *plan, int32_t s, int subs)
{
    const loom_stage_graph *g = plan->graph;
    char buf[192];
    const char *module = loom_out_module_name(plan, g->module[s]);
    int n;
    if (subs)
        n = snprintf(buf, sizeof buf, "%c mb%d.%d c%d", loom_out_kind_char(g->kind[s]),
                     g->microbatch[s], g->sub[s], g->chunk[s]);
    else
        n = snprintf(buf, sizeof buf, "%c mb%d c%d", loom_out_kind_char(g->kind[s]),
                     g->microbatch[s], g->chunk[s]);
    if (module && n > 0 && (size_t)n < sizeof buf)
        snprintf(buf + n, sizeof buf - (size_t)n, " %s", module);
    loom_out_json_string(out, buf);
}

/* A "memory" counter event of rank r at t_ms. */
static void counter(FILE *out, int32_t r, double t_ms, int64_t bytes)
{
    fprintf(out, ",\n{\"name\": \"memory\", \"ph\": \"C\", \"pid\": %d, \"tid\": 0, "
                 "\"ts\": ", r);
    loom_out_json_number(out, t_ms * 1000.0);
    fprintf(out, ", \"args\": {\"bytes\": %lld}}", (long long)bytes);
}

/* One stage as a complete event: a fill on thread 1, beside its hosts.
 * The compact form's args hold the stage id only. */
static void slice(FILE *out, const loom_plan *plan, int32_t s, int subs, int compact)
{
    const loom_stage_graph *g = plan->graph;
    double start = plan->metrics.start_ms[s], end = plan->metrics.end_ms[s];
    fputs(",\n{\"name\": ", out);
    stage_name(out, plan, s, subs);
    fprintf(out, ", \"cat\": \"%c\", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": ",
            loom_out_kind_char(g->kind[s]), g->rank[s],
            loom_out_fill_hosts(plan->schedule, s) ? 1 : 0);
    loom_out_json_number(out, start * 1000.0);
    fputs(", \"dur\": ", out);
    loom_out_json_number(out, (end - start) * 1000.0);
    if (compact) {
        fprintf(out, ", \"args\": {\"stage\": %d}}", s);
        return;
    }
    fprintf(out, ", \"args\": {\"stage\": %d, \"microbatch\": %d, \"sub\": %d, "
                 "\"group\": %d, \"flow\": %d, \"position\": %d, \"chunk\": %d, "
                 "\"policy\": \"%s\", \"mem_delta_bytes\": %lld}}",
            s, g->microbatch[s], g->sub[s], g->group[s], g->flow[s], g->position[s],
            g->chunk[s], loom_out_policy_name(loom_out_stage_policy(g, s)),
            (long long)g->mem_delta_bytes[s]);
}

/* One flow event of a P2P transfer: phase "s" on the sending stage or "f"
 * on the receiving one, at the stage's midpoint so that it binds to that
 * slice and no neighbour. */
static void flow_event(FILE *out, const loom_plan *plan, int32_t s, char ph, int64_t id,
                       double p2p_ms)
{
    const loom_stage_graph *g = plan->graph;
    double mid = 0.5 * (plan->metrics.start_ms[s] + plan->metrics.end_ms[s]);
    fprintf(out, ",\n{\"name\": \"p2p\", \"cat\": \"p2p\", \"ph\": \"%c\", \"id\": %lld, "
                 "\"pid\": %d, \"tid\": %d, \"ts\": ", ph, (long long)id, g->rank[s],
            loom_out_fill_hosts(plan->schedule, s) ? 1 : 0);
    loom_out_json_number(out, mid * 1000.0);
    if (ph == 'f')
        fputs(", \"bp\": \"e\"", out);
    fputs(", \"args\": {\"transfer_ms\": ", out);
    loom_out_json_number(out, p2p_ms);
    fputs("}}", out);
}

/* Every dependency between stages on two ranks as a flow, in stage and
 * edge order (ids 1, 2, ...). */
static void flows(FILE *out, const loom_plan *plan)
{
    const loom_stage_graph *g = plan->graph;
    int64_t id = 0;
    for (int32_t s = 0; s < g->n_stages; s++)
        for (int32_t e = g->pred_off[s]; e < g->pred_off[s + 1]; e++) {
            int32_t p = g->pred[e];
            if (g->rank[p] == g->rank[s])
                continue;
            double ms = g->pred_p2p_ms ? g->pred_p2p_ms[e] : 0;
            id++;
            flow_event(out, plan, p, 's', id, ms);
            flow_event(out, plan, s, 'f', id, ms);
        }
}

/* Writes the whole trace document. */
static int write_trace(const loom_plan *plan, FILE *out)
{
    const loom_stage_graph *g = plan->graph;
    const loom_schedule *sc = plan->schedule;
    int subs = 0, compact = g->n_stages > LOOM_OUT_COMPACT_STAGES;
    for (int32_t s = 0; s < g->n_stages && !subs; s++)
        subs = g->sub[s] != 0;
    fputs("{\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"label\": ", out);
    loom_out_json_string(out, plan->label);
    fputs(", \"makespan_ms\": ", out);
    loom_out_json_number(out, plan->metrics.makespan_ms);
    fputs("},\n\"traceEvents\": [\n", out);
    for (int32_t r = 0; r < g->n_ranks; r++) {
        char lay[256], name[300];
        loom_out_rank_layouts(plan, r, lay, sizeof lay); /* "" for a single layout */
        snprintf(name, sizeof name, "rank %d%s%s", r, lay[0] ? ": " : "", lay);
        fprintf(out, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, "
                     "\"tid\": 0, \"args\": {\"name\": ", r ? ",\n" : "", r);
        loom_out_json_string(out, name);
        fputs("}}", out);
        fprintf(out, ",\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, "
                     "\"tid\": 0, \"args\": {\"sort_index\": %d}}", r, r);
        fprintf(out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, "
                     "\"tid\": 0, \"args\": {\"name\": \"stages\"}}", r);
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++)
            if (loom_out_fill_hosts(sc, sc->order[i])) {
                fprintf(out, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, "
                             "\"tid\": 1, \"args\": {\"name\": \"fills (in the stages' TP "
                             "communication)\"}}", r);
                break;
            }
        /* Memory replays the simulator's per-rank running sum: a stage's
         * allocation lands at its start, its release at its end. */
        int64_t bytes = g->static_bytes ? g->static_bytes[r] : 0;
        counter(out, r, 0, bytes);
        int32_t fill = -1, fill_last = -1; /* a fill's release waits for its last host */
        for (int32_t i = sc->rank_off[r]; i < sc->rank_off[r + 1]; i++) {
            int32_t s = sc->order[i];
            int64_t d = g->mem_delta_bytes[s];
            if (d > 0) {
                bytes += d;
                counter(out, r, plan->metrics.start_ms[s], bytes);
            }
            slice(out, plan, s, subs, compact);
            if (loom_out_fill_hosts(sc, s)) {
                fill = s;
                fill_last = i + loom_out_fill_hosts(sc, s);
                continue;
            }
            if (d < 0) {
                bytes += d;
                counter(out, r, plan->metrics.end_ms[s], bytes);
            }
            if (i == fill_last && g->mem_delta_bytes[fill] < 0) {
                bytes += g->mem_delta_bytes[fill];
                counter(out, r, plan->metrics.end_ms[fill], bytes);
            }
        }
    }
    if (!compact) /* a huge plan's arrows would outnumber its stages */
        flows(out, plan);
    fputs("\n]}\n", out);
    return LOOM_OK;
}

int loom_write_trace_json(const loom_plan *plan, FILE *out, loom_error *err)
{
    loom_out_frame frame;
    int rc = loom_out_begin(plan, "trace.json", &frame, err);
    if (rc == LOOM_OK)
        rc = write_trace(plan, out);
    return loom_out_end(&frame, out, "trace.json", rc, err);
}
