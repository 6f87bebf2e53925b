/* test_mock_host.c - the SDK mock host (sdk/mock): every host API member
 * behaves as its header says, without the core. */
#include <loom/mock_host.h>

#include <string.h>

#include "testutil.h"

static loom_mock_host *H;
static const loom_host_api *A;
static loom_ctx *C;

/* Fresh host before each test. */
static void setup(void)
{
    H = loom_mock_host_new();
    ck_assert_ptr_nonnull(H);
    A = loom_mock_host_api(H);
    C = loom_mock_host_ctx(H);
}

/* Frees the host after each test. */
static void teardown(void)
{
    loom_mock_host_free(H);
    H = NULL;
}

START_TEST(table_is_complete)
{
    ck_assert_uint_eq(A->struct_size, sizeof(loom_host_api));
    ck_assert_uint_eq(A->abi_version, LOOM_ABI_VERSION);
    ck_assert(LOOM_HOST_HAS(A, progress));
    ck_assert(A->alloc != NULL);
    ck_assert(A->realloc != NULL);
    ck_assert(A->free != NULL);
    ck_assert(A->log != NULL);
    ck_assert(A->error != NULL);
    ck_assert(A->param_int != NULL);
    ck_assert(A->param_double != NULL);
    ck_assert(A->param_bool != NULL);
    ck_assert(A->param_string != NULL);
    ck_assert(A->seed != NULL);
    ck_assert(A->rng_next != NULL);
    ck_assert(A->now_ms != NULL);
    ck_assert(A->budget_left_ms != NULL);
    ck_assert(A->expired != NULL);
    ck_assert(A->service != NULL);
    ck_assert(A->problem != NULL);
    ck_assert(A->progress != NULL);
    ck_assert_ptr_eq(loom_mock_host_from_ctx(C), H);

    char *p = A->alloc(16);
    ck_assert_ptr_nonnull(p);
    memset(p, 7, 16);
    p = A->realloc(p, 64);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(p[15], 7);
    A->free(p);
}
END_TEST

START_TEST(unset_params_are_not_found)
{
    int64_t i = 5;
    double d = 2.5;
    int b = 1;
    ck_assert_int_eq(A->param_int(C, "budget_ms", &i), LOOM_ENOTFOUND);
    ck_assert_int_eq(A->param_double(C, "alpha", &d), LOOM_ENOTFOUND);
    ck_assert_int_eq(A->param_bool(C, "deterministic", &b), LOOM_ENOTFOUND);
    ck_assert_ptr_null(A->param_string(C, "file"));
    /* the caller's defaults are left alone */
    ck_assert_int_eq(i, 5);
    ck_assert_double_eq(d, 2.5);
    ck_assert_int_eq(b, 1);
}
END_TEST

START_TEST(params_are_typed_by_the_reader)
{
    int64_t i = 0;
    double d = 0;
    int b = -1;
    ck_assert_int_eq(loom_mock_host_set_param(H, "n", "42"), LOOM_OK);
    ck_assert_int_eq(A->param_int(C, "n", &i), LOOM_OK);
    ck_assert_int_eq(i, 42);
    ck_assert_int_eq(A->param_double(C, "n", &d), LOOM_OK);
    ck_assert_double_eq(d, 42.0);
    ck_assert_str_eq(A->param_string(C, "n"), "42");

    ck_assert_int_eq(loom_mock_host_set_param(H, "x", "-1.25"), LOOM_OK);
    ck_assert_int_eq(A->param_double(C, "x", &d), LOOM_OK);
    ck_assert_double_eq(d, -1.25);
    ck_assert_int_eq(A->param_int(C, "x", &i), LOOM_EINVAL);
    ck_assert_int_eq(i, 42);

    ck_assert_int_eq(loom_mock_host_set_param(H, "flag", "TRUE"), LOOM_OK);
    ck_assert_int_eq(A->param_bool(C, "flag", &b), LOOM_OK);
    ck_assert_int_eq(b, 1);
    loom_mock_host_set_param(H, "flag", "off");
    ck_assert_int_eq(A->param_bool(C, "flag", &b), LOOM_OK);
    ck_assert_int_eq(b, 0);
    loom_mock_host_set_param(H, "flag", "maybe");
    ck_assert_int_eq(A->param_bool(C, "flag", &b), LOOM_EINVAL);

    loom_mock_host_set_param(H, "n", "12abc");
    ck_assert_int_eq(A->param_int(C, "n", &i), LOOM_EINVAL);
    loom_mock_host_set_param(H, "n", "");
    ck_assert_int_eq(A->param_int(C, "n", &i), LOOM_EINVAL);
    loom_mock_host_set_param(H, "n", "inf");
    ck_assert_int_eq(A->param_double(C, "n", &d), LOOM_EINVAL);
    loom_mock_host_set_param(H, "n", "99999999999999999999999");
    ck_assert_int_eq(A->param_int(C, "n", &i), LOOM_EINVAL);

    /* the value is copied; NULL unsets; clear unsets everything */
    char buf[8] = "7";
    loom_mock_host_set_param(H, "n", buf);
    buf[0] = '9';
    ck_assert_int_eq(A->param_int(C, "n", &i), LOOM_OK);
    ck_assert_int_eq(i, 7);
    ck_assert_int_eq(loom_mock_host_set_param(H, "n", NULL), LOOM_OK);
    ck_assert_int_eq(A->param_int(C, "n", &i), LOOM_ENOTFOUND);
    ck_assert_str_eq(A->param_string(C, "x"), "-1.25");
    loom_mock_host_clear_params(H);
    ck_assert_ptr_null(A->param_string(C, "x"));
    ck_assert_int_eq(loom_mock_host_set_param(H, NULL, "1"), LOOM_EINVAL);
}
END_TEST

START_TEST(seed_and_rng)
{
    ck_assert_uint_eq(A->seed(C), 0);
    loom_mock_host_set_seed(H, 12345);
    ck_assert_uint_eq(A->seed(C), 12345);
    /* splitmix64 from state 0: the published first outputs */
    uint64_t st = 0;
    ck_assert_uint_eq(A->rng_next(&st), 0xE220A8397B1DCDAFull);
    ck_assert_uint_eq(A->rng_next(&st), 0x6E789E6AA1B965F4ull);
    ck_assert_uint_eq(A->rng_next(&st), 0x06C45D188009454Full);
    ck_assert_uint_eq(st, 3 * 0x9E3779B97F4A7C15ull);
}
END_TEST

START_TEST(budget_and_expiry)
{
    ck_assert(A->budget_left_ms(C) < 0);
    ck_assert_int_eq(A->expired(C), 0);
    loom_mock_host_set_budget_ms(H, 1e7);
    double left = A->budget_left_ms(C);
    ck_assert(left > 1e7 - 1e4 && left <= 1e7);
    ck_assert_int_eq(A->expired(C), 0);
    loom_mock_host_set_budget_ms(H, 0);
    ck_assert_double_eq(A->budget_left_ms(C), 0.0);
    ck_assert_int_eq(A->expired(C), 1);
    loom_mock_host_set_budget_ms(H, -1);
    ck_assert(A->budget_left_ms(C) < 0);
    ck_assert_int_eq(A->expired(C), 0);
    loom_mock_host_set_expired(H, 1);
    ck_assert_int_eq(A->expired(C), 1);
    loom_mock_host_set_expired(H, 0);
    ck_assert_int_eq(A->expired(C), 0);

    double t0 = A->now_ms();
    double t1 = A->now_ms();
    ck_assert(t0 > 0 && t1 >= t0);
}
END_TEST

START_TEST(log_and_error)
{
    ck_assert_str_eq(loom_mock_host_last_log(H), "");
    ck_assert_int_eq(loom_mock_host_last_log_level(H), -1);
    A->log(C, LOOM_LOG_WARN, "chunk %d of %s", 3, "vit");
    ck_assert_str_eq(loom_mock_host_last_log(H), "chunk 3 of vit");
    ck_assert_int_eq(loom_mock_host_last_log_level(H), LOOM_LOG_WARN);
    A->log(C, LOOM_LOG_DEBUG, "x");
    ck_assert_str_eq(loom_mock_host_last_log(H), "x");
    ck_assert_int_eq(loom_mock_host_log_count(H), 2);

    loom_error err = {0, ""};
    ck_assert_int_eq(A->error(&err, LOOM_EINFEASIBLE, "cap %d bytes", 10),
                     LOOM_EINFEASIBLE);
    ck_assert_int_eq(err.code, LOOM_EINFEASIBLE);
    ck_assert_str_eq(err.message, "cap 10 bytes");
    ck_assert_int_eq(A->error(NULL, LOOM_EINVAL, "ignored"), LOOM_EINVAL);
}
END_TEST

static const int table_a = 1, table_b = 2;

START_TEST(services_by_name_and_version)
{
    ck_assert_ptr_null(A->service("loom.simulator", 1));
    ck_assert_int_eq(loom_mock_host_add_service(H, "loom.simulator", 2,
                                                &table_a), LOOM_OK);
    ck_assert_ptr_eq(A->service("loom.simulator", 1), &table_a);
    ck_assert_ptr_eq(A->service("loom.simulator", 2), &table_a);
    ck_assert_ptr_null(A->service("loom.simulator", 3));
    ck_assert_ptr_null(A->service("loom.cost", 1));
    /* same name again replaces */
    loom_mock_host_add_service(H, "loom.simulator", 1, &table_b);
    ck_assert_ptr_eq(A->service("loom.simulator", 1), &table_b);
    ck_assert_ptr_null(A->service("loom.simulator", 2));
    /* the newest live host wins; a freed host's services are gone */
    loom_mock_host *h2 = loom_mock_host_new();
    loom_mock_host_add_service(h2, "loom.simulator", 1, &table_a);
    ck_assert_ptr_eq(A->service("loom.simulator", 1), &table_a);
    loom_mock_host_free(h2);
    ck_assert_ptr_eq(A->service("loom.simulator", 1), &table_b);
    ck_assert_int_eq(loom_mock_host_add_service(H, NULL, 1, &table_a),
                     LOOM_EINVAL);
}
END_TEST

START_TEST(problem_progress_user_data)
{
    ck_assert_ptr_null(A->problem(C));
    loom_problem p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.parallel.pp = 4;
    loom_mock_host_set_problem(H, &p);
    ck_assert_ptr_eq(A->problem(C), &p);
    ck_assert_int_eq(A->problem(C)->parallel.pp, 4);

    ck_assert(loom_mock_host_best_makespan_ms(H) < 0);
    A->progress(C, 33.5, 10);
    A->progress(C, 31.0, 25);
    ck_assert_double_eq(loom_mock_host_best_makespan_ms(H), 31.0);
    ck_assert_int_eq(loom_mock_host_evaluations(H), 25);
    ck_assert_int_eq(loom_mock_host_progress_calls(H), 2);

    int mine = 0;
    ck_assert_ptr_null(loom_mock_host_user_data(H));
    loom_mock_host_set_user_data(H, &mine);
    ck_assert_ptr_eq(loom_mock_host_user_data(loom_mock_host_from_ctx(C)),
                     &mine);
}
END_TEST

START_TEST(older_host_sizes)
{
    loom_mock_host_set_api_size(H, (uint32_t)offsetof(loom_host_api, progress));
    ck_assert(!LOOM_HOST_HAS(A, progress));
    ck_assert(LOOM_HOST_HAS(A, problem));
    loom_mock_host_set_api_size(H, 0);
    ck_assert_uint_eq(A->struct_size, offsetof(loom_host_api, alloc));
    loom_mock_host_set_api_size(H, 1u << 30);
    ck_assert_uint_eq(A->struct_size, sizeof(loom_host_api));
}
END_TEST

START_TEST(two_hosts_are_independent)
{
    loom_mock_host *h2 = loom_mock_host_new();
    loom_mock_host_set_param(H, "k", "1");
    loom_mock_host_set_param(h2, "k", "2");
    int64_t a = 0, b = 0;
    ck_assert_int_eq(A->param_int(C, "k", &a), LOOM_OK);
    ck_assert_int_eq(loom_mock_host_api(h2)->param_int(
                         loom_mock_host_ctx(h2), "k", &b), LOOM_OK);
    ck_assert_int_eq(a, 1);
    ck_assert_int_eq(b, 2);
    loom_mock_host_free(h2);
    loom_mock_host_free(NULL);
}
END_TEST

/* The mock host suite. */
static Suite *mock_host_suite(void)
{
    Suite *s = suite_create("mock_host");
    TCase *tc = tcase_create("api");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, table_is_complete);
    tcase_add_test(tc, unset_params_are_not_found);
    tcase_add_test(tc, params_are_typed_by_the_reader);
    tcase_add_test(tc, seed_and_rng);
    tcase_add_test(tc, budget_and_expiry);
    tcase_add_test(tc, log_and_error);
    tcase_add_test(tc, services_by_name_and_version);
    tcase_add_test(tc, problem_progress_user_data);
    tcase_add_test(tc, older_host_sizes);
    tcase_add_test(tc, two_hosts_are_independent);
    suite_add_tcase(s, tc);
    return s;
}

/* Runs the suite. */
int main(void)
{
    return loom_test_main(mock_host_suite());
}
