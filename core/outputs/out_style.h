/*
 * out_style.h - what the two pictures of a plan (timeline.svg and
 * report.html) share so that they look alike: the colour of every model
 * module, the shade of every stage kind, which modules a stage runs (its
 * "composition", from the partition's layer spans) and the time-axis
 * ticks. Internal to core/outputs.
 *
 * Colour groups are the model's modules (one colour each, by module
 * index, so a module keeps its colour across plans of one model) plus a
 * grey "other" group for stages whose module is unknown; for stage-times
 * problems, which have no modules, they are the chunks (virtual stages).
 */
#ifndef LOOM_OUT_STYLE_H
#define LOOM_OUT_STYLE_H

#include "output.h"

/* One module (colour group) of a composition and its layer count. */
typedef struct loom_style_part {
    int32_t group;
    int32_t layers;
} loom_style_part;

typedef struct loom_style {
    int by_module;           /* 1: groups are model modules (+ "other") */
    int32_t n_groups;        /* modules + 1, or chunks */
    uint8_t *used;           /* n_groups: 1 when a stage shows this group */
    int32_t n_comps;
    int32_t *comp_off;       /* n_comps + 1 offsets into parts */
    loom_style_part *parts;  /* per composition, most layers first */
    int32_t *stage_comp;     /* per stage: its composition */
    int32_t max_chunk;       /* largest chunk index of any stage */
} loom_style;

/* Builds the colour groups and compositions of a plan whose graph passed
 * loom_out_begin. LOOM_ENOMEM; the style is freed with loom_style_free
 * (also after a failure). */
int loom_style_build(const loom_plan *plan, loom_style *st, loom_error *err);

void loom_style_free(loom_style *st);

/* Name of colour group g: the module name, "other", or "chunk g". */
void loom_style_group_name(const loom_plan *plan, const loom_style *st, int32_t g,
                           char *buf, size_t size);

/* Base colour of group g. */
void loom_style_group_rgb(const loom_style *st, int32_t g, unsigned char rgb[3]);

/* A group's colour as a stage of `kind` shows it: F lighter, B darker,
 * I the base colour and W much lighter (I and W are also hatched). */
void loom_style_kind_rgb(const unsigned char base[3], int kind, unsigned char out[3]);

/* "#rrggbb" (8 bytes with the NUL). */
void loom_style_hex(const unsigned char rgb[3], char hex[8]);

/* Tick step of 1, 2 or 5 times a power of ten giving about `ticks` ticks
 * over span_ms (1 for a span that is not positive). */
double loom_style_tick_step(double span_ms, double ticks);

/* The median stage duration in ms (0 without stages). */
double loom_style_median_ms(const loom_plan *plan);

#endif
