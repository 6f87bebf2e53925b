/* loomffitest.c - the cost functions declared in loomffitest.h. */
#include "loomffitest.h"

double loomffi_forward_ms(int64_t hidden, int64_t ffn_hidden, int64_t tokens, int64_t tp,
                          double peak_flops)
{
    double h = (double)hidden, f = (double)ffn_hidden;
    return 2.0 * (double)tokens * (4.0 * h * h + 2.0 * h * f) / (double)tp / peak_flops * 1e3;
}

double loomffi_backward_ms(double tokens, int64_t tp)
{
    return 0.001 * tokens / (double)tp;
}

int64_t loomffi_activation_bytes(int64_t hidden, int64_t tokens, int64_t tp)
{
    return 34 * hidden * tokens / tp;
}

int64_t loomffi_policy_bytes(int64_t tokens, int64_t policy)
{
    return tokens * (3 - policy) * 100;
}

int64_t loomffi_param_bytes(int64_t hidden, int64_t ffn_hidden, int64_t tp)
{
    return 2 * (4 * hidden * hidden + 2 * hidden * ffn_hidden) / tp;
}

double loomffi_flops(long hidden, long long ffn_hidden, int64_t tokens)
{
    double h = (double)hidden, f = (double)ffn_hidden;
    return 3.0 * 2.0 * (double)tokens * (4.0 * h * h + 2.0 * h * f);
}

int loomffi_layer_plus_one(int64_t layer)
{
    return (int)layer + 1;
}

float loomffi_half(double x)
{
    return (float)(x / 2);
}

double loomffi_two_args(int64_t hidden, int64_t tokens)
{
    return 1e-9 * (double)hidden * (double)tokens;
}

double loomffi_int_param(int hidden, int64_t tokens)
{
    return 1e-9 * hidden * (double)tokens;
}

double loomffi_negative(int64_t tokens)
{
    (void)tokens;
    return -1.0;
}

double loomffi_constant(void)
{
    return 1.25;
}
