/*
 * mcts_beta.c - how often the mcts ranker finds the optimum for each UCB
 * exploration weight `beta`, against the random ranker (docs/search.md,
 * "On beta").
 *
 * The fixture: 3 ranks, 7 microbatches (one segment group each) with cost
 * scales 1, 3, 0.5, 2, 1, 1.5, 2.5, F = 1 ms and B = 2 ms on every rank,
 * the dual-queue interleaver and the simulator as the evaluator, and two
 * group precedence pairs (group 6 before 0, 2 before 5), which leave 1260
 * of the 5040 priority orders valid. A stage-times input cannot state
 * group precedence, so the fixture is built here, on the SDK mock host.
 *
 * The exhaustive ranker proves the optimum; then mcts (polish 0: the tree
 * search alone, threads 1, deterministic rounds) with each beta, and
 * random, run for each evaluation budget over seeds 1..SEEDS, and the
 * table counts the runs whose best makespan equals the optimum. A last
 * line does the same without precedence at the first budget (beta 0.1 and
 * 3 rollouts against random).
 *
 * Usage: loom-bench-mcts-beta [--seeds N] [--rollouts R]
 *   --seeds N     seeds per cell (default 20)
 *   --rollouts R  mcts rollouts per expanded node in the table (default 10)
 * Prints a Markdown table; about ten seconds on one core.
 */
#include <loom/mock_host.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <loom/kits/graph.h>
#include <loom/mock_evaluator.h>

const loom_plugin_info *loom_static_mcts(void);
const loom_plugin_info *loom_static_random(void);
const loom_plugin_info *loom_static_exhaustive(void);

#define N_GROUPS 7
#define N_RANKS 3

static const double SCALES[N_GROUPS] = {1, 3, 0.5, 2, 1, 1.5, 2.5};
static const int PAIRS[] = {6, 0, 2, 5}; /* first before second */
static const int EVALS[] = {600, 1000, 1500, 3000};
static const char *const BETAS[] = {"0.5", "0.1", "0.05"};

/* The fixture's graph, with the precedence pairs when `precede`. */
static loom_stage_graph *fixture(int precede)
{
    loom_error err = {0};
    loom_stage_graph *g = mock_fb_graph(N_RANKS, N_GROUPS, SCALES, &err);
    if (!g) {
        fprintf(stderr, "mcts_beta: fixture: %s\n", err.message);
        exit(1);
    }
    int k = 0, n_pairs = precede ? 2 : 0;
    free(g->group_pred);
    g->group_pred = calloc(2, sizeof(int32_t));
    for (int v = 0; v < g->n_groups; v++) {
        g->group_pred_off[v] = k;
        for (int i = 0; i < n_pairs; i++)
            if (PAIRS[2 * i + 1] == v)
                g->group_pred[k++] = PAIRS[2 * i];
    }
    g->group_pred_off[g->n_groups] = k;
    return g;
}

/* A ranker on a mock host with the manifest of plugins/<folder> and the
 * evaluator service; params are set on the returned host. */
static loom_mock_host *ranker_host(const char *folder)
{
    char path[512];
    snprintf(path, sizeof path, "%s/plugins/%s", LOOM_SOURCE_DIR, folder);
    loom_mock_host *h = loom_mock_host_new_with_manifest(path);
    if (!h)
        exit(1);
    loom_mock_host_add_service(h, LOOM_SERVICE_EVALUATOR, 1, &MOCK_EVALUATOR);
    loom_mock_host_set_param(h, "budget_ms", "600000");
    return h;
}

/* Runs the ranker `info` on host h over g; exits on an error. */
static loom_ranking rank(const loom_plugin_info *info, loom_mock_host *h,
                         const loom_stage_graph *g)
{
    const loom_ranker_vtable *vt = (const loom_ranker_vtable *)info->role(LOOM_ROLE_RANKER);
    static float prio[N_GROUPS + 1];
    loom_ranking out = LOOM_RANKING_INIT;
    out.cap_priorities = N_GROUPS + 1;
    out.priorities = prio;
    loom_error err = {0};
    void *self = NULL;
    int rc = vt->create(loom_mock_host_api(h), loom_mock_host_ctx(h), NULL, &self, &err);
    if (rc == LOOM_OK) {
        rc = vt->rank(self, &g, 1, &out, &err);
        vt->destroy(self);
    }
    if (rc != LOOM_OK) {
        fprintf(stderr, "mcts_beta: %s\n", err.message);
        exit(1);
    }
    return out;
}

/* How many of seeds 1..n_seeds end at the optimum under h's params. */
static int hits(const loom_plugin_info *info, loom_mock_host *h, const loom_stage_graph *g,
                int evals, int n_seeds, double optimum)
{
    char text[32];
    snprintf(text, sizeof text, "%d", evals);
    loom_mock_host_set_param(h, "max_evaluations", text);
    int n = 0;
    for (int seed = 1; seed <= n_seeds; seed++) {
        snprintf(text, sizeof text, "%d", seed);
        loom_mock_host_set_param(h, "seed", text);
        if (fabs(rank(info, h, g).best_makespan_ms - optimum) < 1e-9)
            n++;
    }
    return n;
}

/* The exhaustive optimum of g and its count of valid assignments. */
static double optimum_of(const loom_stage_graph *g, int64_t *n_valid)
{
    loom_mock_host *h = ranker_host("exhaustive");
    loom_ranking out = rank(loom_static_exhaustive(), h, g);
    loom_mock_host_free(h);
    *n_valid = out.evaluations;
    return out.best_makespan_ms;
}

/* A positive int option value, or exit 2. */
static int positive(const char *opt, const char *v)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < 1 || x > 100000) {
        fprintf(stderr, "mcts_beta: %s: expected a positive integer, found %s\n", opt,
                v ? v : "nothing");
        exit(2);
    }
    return (int)x;
}

int main(int argc, char **argv)
{
    int n_seeds = 20, rollouts = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds"))
            n_seeds = positive(argv[i], argv[i + 1]), i++;
        else if (!strcmp(argv[i], "--rollouts"))
            rollouts = positive(argv[i], argv[i + 1]), i++;
        else {
            fprintf(stderr, "usage: loom-bench-mcts-beta [--seeds N] [--rollouts R]\n");
            return 2;
        }
    }
    loom_stage_graph *g = fixture(1);
    int64_t n_valid = 0;
    double best = optimum_of(g, &n_valid);
    printf("fixture: 3 ranks, 7 microbatches (scales 1, 3, 0.5, 2, 1, 1.5, 2.5), F = 1, B = 2, "
           "dual queue, group 6 before 0 and 2 before 5\n");
    printf("exhaustive: %lld valid assignments, optimum %g ms\n", (long long)n_valid, best);
    printf("mcts: rollouts %d, polish 0, threads 1; runs reaching the optimum of %d seeds:\n\n",
           rollouts, n_seeds);

    char text[32];
    snprintf(text, sizeof text, "%d", rollouts);
    loom_mock_host *mh = ranker_host("mcts"), *rh = ranker_host("random");
    loom_mock_host_set_param(mh, "rollouts", text);
    loom_mock_host_set_param(mh, "polish", "0");
    printf("| evaluations | `beta = 0.5` | `beta = 0.1` | `beta = 0.05` | `random` |\n");
    printf("|---|---|---|---|---|\n");
    for (size_t e = 0; e < sizeof EVALS / sizeof EVALS[0]; e++) {
        printf("| %d |", EVALS[e]);
        for (size_t b = 0; b < sizeof BETAS / sizeof BETAS[0]; b++) {
            loom_mock_host_set_param(mh, "beta", BETAS[b]);
            printf(" %d |", hits(loom_static_mcts(), mh, g, EVALS[e], n_seeds, best));
        }
        printf(" %d |\n", hits(loom_static_random(), rh, g, EVALS[e], n_seeds, best));
        fflush(stdout);
    }
    loom_graph_free(g);

    g = fixture(0);
    best = optimum_of(g, &n_valid);
    loom_mock_host_set_param(mh, "beta", "0.1");
    loom_mock_host_set_param(mh, "rollouts", "3");
    int m = hits(loom_static_mcts(), mh, g, EVALS[0], n_seeds, best);
    int r = hits(loom_static_random(), rh, g, EVALS[0], n_seeds, best);
    printf("\nwithout precedence: %lld valid assignments, optimum %g ms; after %d evaluations "
           "mcts (beta 0.1, rollouts 3) found it in %d of %d runs, random in %d\n",
           (long long)n_valid, best, EVALS[0], m, n_seeds, r);
    loom_mock_host_free(mh);
    loom_mock_host_free(rh);
    loom_graph_free(g);
    return 0;
}
