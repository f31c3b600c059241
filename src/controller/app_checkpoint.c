#include "controller/app_checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/curl_loop.h"
#include "net/http_get.h"
#include "util/clock.h"
#include "util/strmap.h"
#include "util/text.h"

#define MESSAGE_MAX 512

struct call {
    struct app_checkpoints *c;
    char *key;
    char *attempt;
    char *message;
    struct http_get *get; /* in flight, NULL once answered */
    struct app_checkpoint_seen seen;
};

struct app_checkpoints {
    struct curl_loop *curl;
    struct strmap calls; /* key -> struct call * */
    int64_t (*now_ms)(void *);
    void *now_data;
    app_checkpoint_changed_cb cb;
    void *cb_data;
};

static void call_free(struct call *k)
{
    if (!k)
        return;
    http_get_cancel(k->get);
    free(k->key);
    free(k->attempt);
    free(k->message);
    free(k);
}

static struct call *call_new(struct app_checkpoints *c, const char *key, const char *attempt)
{
    struct call *k = calloc(1, sizeof(*k));
    if (!k || !(k->key = strdup(key)) || !(k->attempt = strdup(attempt))) {
        call_free(k);
        return NULL;
    }
    k->c = c;
    k->seen.attempt = k->attempt;
    void *old = NULL;
    if (strmap_put(&c->calls, key, k, &old) < 0) {
        call_free(k);
        return NULL;
    }
    call_free(old);
    return k;
}

/* Records the answer; msg is cut at its first line break and made
 * printable (the application's words end up in an Event). */
static void answered(struct call *k, int written, char *msg)
{
    msg[strcspn(msg, "\r\n")] = '\0';
    text_sanitize(msg, strlen(msg), ' ');
    free(k->message);
    k->message = strdup(msg); /* NULL: decide() says "no reason given" */
    k->seen.answered = 1;
    k->seen.written = written;
    k->seen.answered_ms = k->c->now_ms(k->c->now_data);
    k->seen.message = k->message;
}

static void on_answer(void *data, const struct http_get_result *res)
{
    struct call *k = data;
    char msg[MESSAGE_MAX];
    int written = res->status == 0 && res->http_code >= 200 && res->http_code < 300;
    k->get = NULL;
    if (written)
        snprintf(msg, sizeof(msg), "HTTP %ld", res->http_code);
    else if (res->status == 0)
        snprintf(msg, sizeof(msg), "the application answered HTTP %ld%s%.200s", res->http_code,
                 res->body[0] ? ": " : "", res->body);
    else if (res->status == -ETIMEDOUT)
        snprintf(msg, sizeof(msg), "no answer in time");
    else if (res->status == -EFBIG)
        snprintf(msg, sizeof(msg), "the answer (HTTP %ld) was longer than %d bytes", res->http_code,
                 APP_CHECKPOINT_MAX_BODY);
    else
        snprintf(msg, sizeof(msg), "the request failed: %.200s",
                 res->error && res->error[0] ? res->error : strerror(-res->status));
    answered(k, written, msg);
    k->c->cb(k->c->cb_data, k->key);
}

int app_checkpoints_ask(struct app_checkpoints *c, const struct app_checkpoint_call *call)
{
    struct call *k = strmap_get(&c->calls, call->key);
    if (k && strcmp(k->attempt, call->attempt) == 0)
        return 0;
    if (!(k = call_new(c, call->key, call->attempt)))
        return -ENOMEM;
    struct http_get_request req = {
        .url = call->url,
        .timeout_ms = call->timeout_ms,
        .max_body = APP_CHECKPOINT_MAX_BODY,
        .method = call->method,
    };
    int r = http_get_start(c->curl, &req, on_answer, k, &k->get);
    if (r < 0)
        call_free(strmap_remove(&c->calls, call->key));
    return r;
}

int app_checkpoints_refuse(struct app_checkpoints *c, const char *key, const char *attempt,
                           const char *why)
{
    struct call *k = strmap_get(&c->calls, key);
    if (k && strcmp(k->attempt, attempt) == 0)
        return 0;
    if (!(k = call_new(c, key, attempt)))
        return -ENOMEM;
    char msg[MESSAGE_MAX];
    snprintf(msg, sizeof(msg), "the application could not be asked: %.400s", why ? why : "");
    answered(k, 0, msg);
    return 0;
}

const struct app_checkpoint_seen *app_checkpoints_seen(struct app_checkpoints *c, const char *key)
{
    struct call *k = c ? strmap_get(&c->calls, key) : NULL;
    return k ? &k->seen : NULL;
}

void app_checkpoints_forget(struct app_checkpoints *c, const char *key)
{
    if (c)
        call_free(strmap_remove(&c->calls, key));
}

int app_checkpoints_new(uv_loop_t *loop, int64_t (*now_ms)(void *), void *now_data,
                        app_checkpoint_changed_cb cb, void *data, struct app_checkpoints **ret)
{
    struct app_checkpoints *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    strmap_init(&c->calls);
    c->now_ms = now_ms ? now_ms : clock_unix_ms_cb;
    c->now_data = now_data;
    c->cb = cb;
    c->cb_data = data;
    int r = curl_loop_new(loop, &c->curl);
    if (r < 0) {
        free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void app_checkpoints_close(struct app_checkpoints *c)
{
    if (!c)
        return;
    void *v;
    for (size_t it = 0; strmap_next(&c->calls, &it, NULL, &v);)
        call_free(v);
    strmap_free(&c->calls);
    curl_loop_close(c->curl);
    free(c);
}
