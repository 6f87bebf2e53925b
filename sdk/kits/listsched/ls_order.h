/*
 * ls_order.h - inside the list-scheduling kit: the queue order of a call
 * (ls_order.c), used by loom_ls_begin (list_sched.c).
 */
#ifndef LOOM_KITS_LISTSCHED_LS_ORDER_H
#define LOOM_KITS_LISTSCHED_LS_ORDER_H

#include <loom/kits/listsched.h>

/* Gives every one of the n stages its slot (ls->slot, ls->slot_stage):
 * its position in its queue's order by priority (higher first; per group
 * when ls->n_groups > 0, else ls->prio), tie key, stage id. Needs the
 * queue layout (ls->queue, ls->q_off) of Q queues. */
void loom_ls_order_slots(loom_ls *ls, int32_t n, int32_t Q);

#endif
