/*
 * loomffitest.h - a small C library of layer cost functions for the `ffi`
 * cost model tests. Nothing here knows about Loom: these are plain C
 * functions with the shapes a profiling team might export.
 * Units: milliseconds, bytes, FLOP/s.
 */
#ifndef LOOMFFITEST_H
#define LOOMFFITEST_H

#include <stdint.h>

#define LOOMFFI_API __attribute__((visibility("default")))

/* Forward time: 2 * tokens * (4 h^2 + 2 h f) FLOPs split over tp GPUs at
 * peak_flops FLOP/s, in ms. */
LOOMFFI_API double loomffi_forward_ms(int64_t hidden, int64_t ffn_hidden,
                                      int64_t tokens, int64_t tp,
                                      double peak_flops);

/* Backward time: 0.001 ms per token and GPU share. */
LOOMFFI_API double loomffi_backward_ms(double tokens, int64_t tp);

/* Stored activations: 34 bytes per hidden element and token, over tp. */
LOOMFFI_API int64_t loomffi_activation_bytes(int64_t hidden, int64_t tokens,
                                             int64_t tp);

/* Activations that depend on the memory policy (0 none .. 2 full). */
LOOMFFI_API int64_t loomffi_policy_bytes(int64_t tokens, int64_t policy);

/* Weights: 2 bytes per parameter of 4 h^2 + 2 h f, over tp. */
LOOMFFI_API int64_t loomffi_param_bytes(int64_t hidden, int64_t ffn_hidden,
                                        int64_t tp);

/* Model FLOPs forward + backward: 3 x the forward FLOPs. */
LOOMFFI_API double loomffi_flops(long hidden, long long ffn_hidden,
                                 int64_t tokens);

/* A 32-bit result: the layer index plus one. */
LOOMFFI_API int loomffi_layer_plus_one(int64_t layer);

/* A float result: half of x. */
LOOMFFI_API float loomffi_half(double x);

/* Two parameters, for manifests that wrongly declare three. */
LOOMFFI_API double loomffi_two_args(int64_t hidden, int64_t tokens);

/* A 32-bit int parameter, which the ffi adapter does not pass. */
LOOMFFI_API double loomffi_int_param(int hidden, int64_t tokens);

/* Always -1: a broken cost function. */
LOOMFFI_API double loomffi_negative(int64_t tokens);

/* No parameters at all. */
LOOMFFI_API double loomffi_constant(void);

#endif
