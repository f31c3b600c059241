/* The OCI documents of a checkpoint image: their text (the shape containerd
 * v2.3 restored from on the local cluster's real node), their digests, and
 * the inputs refused. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "node/checkpoint_image.h"

#define LAYER "sha256:ec3ea36ec8bd1e6b3a6ad8cd2d1c77e0bbb4bbcb8b68b2ec3e49f1e3f4d0a3e1"

static void test_documents(void **state)
{
    (void)state;
    struct checkpoint_image img;
    assert_int_equal(checkpoint_image_build(LAYER, 187470336, "workspace", "amd64", "linux", &img),
                     0);
    assert_string_equal(img.config.text,
                        "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{},\"rootfs\":{"
                        "\"type\":\"layers\",\"diff_ids\":[\"" LAYER "\"]}}");
    char want[1024];
    snprintf(want, sizeof(want),
             "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
             "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":"
             "\"%s\",\"size\":%zu},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer."
             "v1.tar\",\"digest\":\"" LAYER "\",\"size\":187470336}]}",
             img.config.digest, img.config.len);
    assert_string_equal(img.manifest.text, want);
    snprintf(want, sizeof(want),
             "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
             "\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
             "\"digest\":\"%s\",\"size\":%zu,\"platform\":{\"architecture\":\"amd64\",\"os\":"
             "\"linux\"}}],\"annotations\":{\"org.criu.checkpoint.container.name\":"
             "\"workspace\"}}",
             img.manifest.digest, img.manifest.len);
    assert_string_equal(img.index.text, want);
    /* Each digest is of the document's own bytes. */
    const struct oci_document *docs[] = {&img.config, &img.manifest, &img.index};
    for (size_t i = 0; i < 3; i++) {
        char d[OCI_DIGEST_SIZE];
        oci_digest(docs[i]->text, docs[i]->len, d);
        assert_string_equal(docs[i]->digest, d);
        assert_int_equal(docs[i]->len, strlen(docs[i]->text));
        assert_true(oci_digest_valid(d));
    }
    checkpoint_image_free(&img);
    checkpoint_image_free(NULL);
}

static void test_digest(void **state)
{
    (void)state;
    char d[OCI_DIGEST_SIZE];
    oci_digest("", 0, d);
    assert_string_equal(d,
                        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    oci_digest("abc", 3, d);
    assert_string_equal(d,
                        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    static const struct {
        const char *s;
        int valid;
    } cases[] = {
        {LAYER, 1},
        {"sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855", 0},
        {"sha256:e3b0", 0},
        {"sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 0},
        {"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85g", 0},
        {"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8555", 0},
        {"", 0},
        {NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(oci_digest_valid(cases[i].s), cases[i].valid);
}

static void test_refused(void **state)
{
    (void)state;
    struct checkpoint_image img;
    static const struct {
        const char *layer;
        int64_t size;
        const char *container, *arch, *os;
    } cases[] = {
        {"sha256:abc", 1, "workspace", "amd64", "linux"},
        {LAYER, -1, "workspace", "amd64", "linux"},
        {LAYER, 1, "", "amd64", "linux"},
        {LAYER, 1, NULL, "amd64", "linux"},
        {LAYER, 1, "work\"space", "amd64", "linux"},
        {LAYER, 1, "work\\space", "amd64", "linux"},
        {LAYER, 1, "work\nspace", "amd64", "linux"},
        {LAYER, 1, "workspace", "", "linux"},
        {LAYER, 1, "workspace", "amd64", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(checkpoint_image_build(cases[i].layer, cases[i].size, cases[i].container,
                                                cases[i].arch, cases[i].os, &img),
                         -EINVAL);
        assert_null(img.index.text);
    }
    assert_int_equal(checkpoint_image_build(LAYER, 0, "w", "arm64", "linux", &img), 0);
    checkpoint_image_free(&img);
}

static void test_architecture(void **state)
{
    (void)state;
    const char *a = oci_architecture();
#if defined(__x86_64__)
    assert_string_equal(a, "amd64");
#elif defined(__aarch64__)
    assert_string_equal(a, "arm64");
#else
    (void)a;
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documents),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_architecture),
    };
    return cmocka_run_group_tests_name("checkpoint image", tests, NULL, NULL);
}
