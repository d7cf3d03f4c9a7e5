/* ebbd's submit checks of checkpoint.store and checkpoint.encrypt
 * (src/daemon/daemon_ckpt_spec.c) against a configuration and the
 * providers ebbd runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/daemon.h"
#include "daemon/daemon_ckpt.h"

static const char yaml[] =
    "providers:\n  sim: {}\nstores:\n  ckpt: {url: \"file:///tmp/ebb-ckpt-test\"}\n"
    "  other: {url: \"s3://b-1/p\", region: us-east-1}\n";

static int check(const struct ebb__daemon *d, const char *spec_text, char *why)
{
    struct ebb__job_spec spec;
    struct ebb_diag diag;
    int rc = ebb__jobspec_load_buffer("job.yaml", spec_text, strlen(spec_text), &spec, &diag);
    if (rc != 0)
        fail_msg("%s", diag.msg);
    why[0] = '\0';
    rc = ebb__daemon_ckpt_spec_check(d, &spec, why, 512);
    ebb__jobspec_free(&spec);
    return rc;
}

static void store_and_encrypt(void **state)
{
    (void)state;
    struct ebb__daemon d;
    memset(&d, 0, sizeof(d));
    struct ebb_diag diag;
    if (ebb__config_load_buffer("ebb.yaml", yaml, strlen(yaml), &d.config, &diag) != 0)
        fail_msg("%s", diag.msg);
    struct ebb__plugin local = {.name = "local"}, vast = {.name = "vastai"};
    struct ebb__plugin_slot slots[2] = {{.plugin = &local}, {.plugin = &vast}};
    d.registry.providers = slots;
    d.registry.n_providers = 1;
    char why[512];
    const char *head = "name: n\nrun: [x]\nwork: 1h\n";
    char text[256];

    snprintf(text, sizeof(text), "%scheckpoint: {store: ckpt}\n", head);
    assert_int_equal(check(&d, text, why), 0);
    snprintf(text, sizeof(text), "%s\n\ncheckpoint: {store: nosuch}\n", head);
    assert_int_equal(check(&d, text, why), EBB_EINVAL);
    assert_string_equal(why, "job.yaml:6: checkpoint.store: no store named \"nosuch\" "
                             "in ebb.yaml (ckpt, other)");
    /* encrypt: false: fine without a marketplace provider... */
    snprintf(text, sizeof(text), "%scheckpoint:\n  store: ckpt\n  encrypt: false\n", head);
    assert_int_equal(check(&d, text, why), 0);
    /* ...refused once vastai may run the job, at encrypt's line... */
    d.registry.n_providers = 2;
    assert_int_equal(check(&d, text, why), EBB_EINVAL);
    assert_non_null(strstr(why, "job.yaml:6: checkpoint.encrypt: false is refused: "
                                "provider vastai may run this job"));
    /* ...and allowed again when the job leaves vastai out. */
    snprintf(text, sizeof(text), "%sresources: {providers: [local]}\ncheckpoint:\n"
             "  store: ckpt\n  encrypt: false\n", head);
    assert_int_equal(check(&d, text, why), 0);
    snprintf(text, sizeof(text), "%sresources: {providers: [vastai]}\ncheckpoint:\n"
             "  store: ckpt\n  encrypt: false\n", head);
    assert_int_equal(check(&d, text, why), EBB_EINVAL);
    /* Encrypted, anywhere. */
    snprintf(text, sizeof(text), "%scheckpoint: {store: ckpt, encrypt: true}\n", head);
    assert_int_equal(check(&d, text, why), 0);
    ebb__config_free(d.config);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(store_and_encrypt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
