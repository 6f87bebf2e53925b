/*
 * mcts.h - the parts of the mcts ranker (PipeWeaver §6.1, Algorithm 1):
 * partial assignments with precedence (loom_mcts_fill.c) and the search tree
 * (loom_mcts_tree.c).
 *
 * A partial assignment fixes priority values for some groups; value v puts
 * the group in slot n - v (slot 0 runs first). It is feasible when the
 * other groups can take the remaining slots with every predecessor in an
 * earlier slot. That is single-machine scheduling of unit jobs with
 * precedence, release times and deadlines, where the fixed groups pin
 * their slots: feasibility is decided exactly by earliest-deadline-first
 * over the slots after tightening every deadline to one slot before the
 * earliest deadline of its successors.
 *
 * Ownership: every structure owns its arrays (host->alloc) and frees them
 * in its *_free function; loom_sk_prec is borrowed.
 */
#ifndef LOOM_MCTS_H
#define LOOM_MCTS_H

#include <loom/kits/search.h>

/* Scratch for one thread's work on partial assignments of n groups. */
typedef struct loom_mcts_fill {
    const loom_host_api *host;
    int32_t n;
    int32_t *slot_of;   /* group -> slot, -1 when free */
    int32_t *group_at;  /* slot -> group, -1 when free */
    int32_t *dl;        /* tightened deadline slot per group */
    int32_t *left;      /* predecessors not yet placed (check) */
    int64_t *heap;      /* released free groups keyed by deadline, id */
    int32_t *left2;     /* predecessors not yet placed (completion) */
    int32_t *avail;     /* released free groups (completion) */
} loom_mcts_fill;

int loom_mcts_fill_init(loom_mcts_fill *f, const loom_host_api *host, int32_t n);
void loom_mcts_fill_free(loom_mcts_fill *f);

/* Loads a partial assignment: value_of[g] in 1..n, or 0 when free. */
void loom_mcts_fill_set(loom_mcts_fill *f, const int32_t *value_of);

/* 1 when the loaded assignment can be completed. */
int loom_mcts_fill_feasible(loom_mcts_fill *f, const loom_sk_prec *pc);

/* Completes a feasible loaded assignment at random: at every free slot a
 * uniformly drawn group among those whose predecessors are placed, unless
 * that choice would leave no completion (then the earliest-deadline one).
 * Writes the priorities (n floats) and returns 1; 0 when the loaded
 * assignment was infeasible after all. Changes the loaded assignment. */
int loom_mcts_fill_complete(loom_mcts_fill *f, const loom_sk_prec *pc, uint64_t *rng,
                       float *prio);

/* One node: the priority value of group depth - 1 (the root has depth 0). */
typedef struct loom_mcts_node {
    int32_t parent, first_child, next_sibling;
    int32_t value;       /* value given to group depth - 1 */
    int32_t depth;
    int32_t n_children;
    int32_t n_options;   /* feasible values for group `depth`; -1 unknown */
    int32_t virt;        /* visits in flight (virtual loss) */
    int64_t visits;
    double score;        /* best rollout score below (max backpropagation) */
    int32_t exhausted;   /* every completion below is evaluated or pending */
    int32_t reserved;
} loom_mcts_node;

typedef struct loom_mcts_tree {
    const loom_host_api *host;
    const loom_sk_prec *pc;
    int32_t n;               /* groups */
    double alpha, beta;      /* UCB: s^alpha + beta sqrt(ln N_parent / N) */
    loom_mcts_node *nodes;
    int32_t n_nodes, cap_nodes;
    int32_t *value_of;       /* expansion scratch: a node's prefix */
    int32_t *options;        /* expansion scratch: untried feasible values */
    uint8_t *used;           /* expansion scratch: values taken, 1..n */
    loom_mcts_fill fill;          /* expansion feasibility checks */
} loom_mcts_tree;

int loom_mcts_tree_init(loom_mcts_tree *t, const loom_host_api *host,
                   const loom_sk_prec *pc, double alpha, double beta,
                   loom_error *err);
void loom_mcts_tree_free(loom_mcts_tree *t);

/* Node selection by UCB from the root through fully expanded nodes, then
 * expansion of one new child (a uniformly drawn untried feasible value).
 * Adds a virtual visit on the path. Returns the new node, -1 when the
 * space is exhausted, -2 when out of memory. */
int32_t loom_mcts_tree_select(loom_mcts_tree *t, uint64_t *rng);

/* value_of[g] for the groups node x fixes (g < depth), 0 for the rest. */
void loom_mcts_tree_prefix(const loom_mcts_tree *t, int32_t x, int32_t *value_of);

/* Max-score backpropagation from `leaf` to the root; removes the virtual
 * visit and counts a real one. */
void loom_mcts_tree_backprop(loom_mcts_tree *t, int32_t leaf, double score);

/* 1 once every assignment has been selected. */
int loom_mcts_tree_exhausted(const loom_mcts_tree *t);

#endif
