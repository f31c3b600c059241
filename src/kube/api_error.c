#include "kube/api_error.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/buf.h"
#include "util/text.h"

/* Enough for a validation error naming several fields; anything longer is a
 * webhook or proxy pouring text into our logs. */
#define MESSAGE_MAX 1024
/* Enough to recognise a proxy's error page ("502 Bad Gateway") without
 * copying the page. */
#define EXCERPT_MAX 200
/* Real reasons are short CamelCase words. */
#define REASON_MAX 64
/* Shorter runs after "Bearer" are prose ("Bearer token"), not credentials. */
#define TOKEN_MIN 8

static const char ELLIPSIS[] = "\xe2\x80\xa6";

struct reason_entry {
    long code;
    const char *reason;
};

/* The reasons the API server (and client-go, for bodies without a Status)
 * attaches to each code. 409 could also be AlreadyExists, but only a body can
 * say so; a bare 409 is treated as a conflict, as client-go does for
 * non-POST verbs. */
static const struct reason_entry default_reasons[] = {
    {400, "BadRequest"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "NotFound"},
    {405, "MethodNotAllowed"},
    {406, "NotAcceptable"},
    {409, "Conflict"},
    {410, "Gone"},
    {413, "RequestEntityTooLarge"},
    {415, "UnsupportedMediaType"},
    {422, "Invalid"},
    {429, "TooManyRequests"},
    {500, "InternalError"},
    {503, "ServiceUnavailable"},
    {504, "Timeout"},
};

const char *kube_api_error_default_reason(long http_code)
{
    for (size_t i = 0; i < sizeof(default_reasons) / sizeof(default_reasons[0]); i++)
        if (default_reasons[i].code == http_code)
            return default_reasons[i].reason;
    /* client-go reports any other server-side failure as InternalError. */
    if (http_code >= 500 && http_code <= 599)
        return "InternalError";
    return "Unknown";
}

/* Length of the valid UTF-8 sequence at s, or 0 when s does not start one
 * (overlong forms, surrogates and code points past U+10FFFF included). */
static size_t utf8_seq_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* Spaces and the characters that would let a message break a log line or
 * reorder what a terminal shows (text_control_len(): C0/C1 controls, DEL,
 * line/paragraph separators and bidi overrides). All of them are turned into
 * spaces like ordinary whitespace. n is the length of the valid UTF-8
 * character at s. */
static bool is_blank(const unsigned char *s, size_t n)
{
    return (n == 1 && s[0] == ' ') || text_control_len((const char *)s, n) == n;
}

/* Appends s as one line of valid UTF-8: runs of whitespace and control
 * characters become one space, invalid bytes become '?', leading and trailing
 * blanks are dropped. At most max bytes of text are kept, cut on a character
 * boundary and marked with an ellipsis. */
static int append_clean(struct buf *out, const char *s, size_t len, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t written = 0;
    bool space = false;
    int r;

    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len(p + i, len - i);
        const char *text = (const char *)p + i;
        size_t advance = n;
        if (n == 0) {
            text = "?";
            n = 1;
            advance = 1;
        } else if (is_blank(p + i, n)) {
            space = written > 0;
            i += advance;
            continue;
        }
        size_t need = n + (space ? 1 : 0);
        if (written + need > max)
            return buf_append_str(out, ELLIPSIS);
        if (space && (r = buf_append(out, " ", 1)) < 0)
            return r;
        if ((r = buf_append(out, text, n)) < 0)
            return r;
        written += need;
        space = false;
        i += advance;
    }
    return 0;
}

static bool is_token_char(char c)
{
    if (c == '\0')
        return false;
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           strchr("-._~+/=", c) != NULL;
}

static size_t token_run(const char *s, size_t len)
{
    size_t n = 0;
    while (n < len && is_token_char(s[n]))
        n++;
    return n;
}

/* Appends text with anything that looks like a credential replaced by
 * "[redacted]": the word after "Bearer", and JWTs (service account tokens)
 * wherever they appear. Error bodies come from whatever sits between us and
 * the API server, and some of those echo the request's headers. */
static int append_redacted(struct buf *out, const char *s, size_t len)
{
    static const char bearer[] = "bearer ";
    const size_t blen = sizeof(bearer) - 1;
    size_t i = 0, copied = 0;
    int r;

    while (i < len) {
        bool word_start = i == 0 || !is_token_char(s[i - 1]);
        size_t skip = 0, run = 0;
        if (word_start && len - i > blen && strncasecmp(s + i, bearer, blen) == 0) {
            skip = blen;
            run = token_run(s + i + skip, len - i - skip);
        } else if (len - i >= 3 && strncmp(s + i, "eyJ", 3) == 0) {
            run = token_run(s + i, len - i);
            if (run < 2 * TOKEN_MIN)
                run = 0;
        }
        if (run < TOKEN_MIN) {
            i++;
            continue;
        }
        if ((r = buf_append(out, s + copied, i + skip - copied)) < 0)
            return r;
        if ((r = buf_append_str(out, "[redacted]")) < 0)
            return r;
        i += skip + run;
        copied = i;
    }
    return buf_append(out, s + copied, len - copied);
}

/* Appends the cleaned, redacted form of s (at most max bytes of text). */
static int append_safe(struct buf *out, const char *s, size_t len, size_t max)
{
    struct buf clean;
    buf_init(&clean, max + sizeof(ELLIPSIS));
    int r = append_clean(&clean, s, len, max);
    if (r >= 0)
        r = append_redacted(out, buf_str(&clean), clean.len);
    buf_free(&clean);
    return r;
}

/* Same shape as a condition reason, so a reason can be shown or reused as
 * one without checking it again. */
static bool reason_is_valid(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > REASON_MAX)
        return false;
    if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || (i + 1 < n && (c == ',' || c == ':'));
        if (!ok)
            return false;
    }
    return true;
}

/* client-go decodes error bodies with the kind defaulted to Status, so a body
 * without "kind" that says "status":"Failure" counts too. */
static bool is_status(const cJSON *obj)
{
    if (!cJSON_IsObject(obj))
        return false;
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
    if (kind)
        return cJSON_IsString(kind) && strcmp(kind->valuestring, "Status") == 0;
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
    return cJSON_IsString(status) && (strcmp(status->valuestring, "Failure") == 0 ||
                                      strcmp(status->valuestring, "Success") == 0);
}

static long status_code(const cJSON *obj)
{
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "code");
    if (!cJSON_IsNumber(code))
        return 0;
    double d = code->valuedouble;
    if (!(d >= 100 && d <= 599) || d != (double)(long)d)
        return 0;
    return (long)d;
}

static int fill(struct kube_api_error *e, long code, const char *reason, struct buf *message)
{
    char *r = strdup(reason);
    if (!r)
        return -ENOMEM;
    char *m = buf_steal(message);
    if (!m) {
        free(r);
        return -ENOMEM;
    }
    e->code = code;
    e->reason = r;
    e->message = m;
    return 0;
}

/* fallback_code stands in when the Status carries no usable code. */
static int error_from_status(const cJSON *obj, long fallback_code, struct kube_api_error *e)
{
    long code = status_code(obj);
    if (code == 0)
        code = fallback_code;

    const cJSON *reason_item = cJSON_GetObjectItemCaseSensitive(obj, "reason");
    const char *reason = kube_api_error_default_reason(code);
    if (cJSON_IsString(reason_item) && reason_is_valid(reason_item->valuestring))
        reason = reason_item->valuestring;

    /* Room for the cut message plus what redaction may add. */
    struct buf message;
    buf_init(&message, 4 * MESSAGE_MAX);
    int r = 0;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(obj, "message");
    if (cJSON_IsString(msg))
        r = append_safe(&message, msg->valuestring, strlen(msg->valuestring), MESSAGE_MAX);
    if (r >= 0 && message.len == 0)
        r = code > 0 ? buf_printf(&message, "HTTP %ld: %s", code, reason)
                     : buf_append_str(&message, reason);
    if (r >= 0)
        r = fill(e, code, reason, &message);
    buf_free(&message);
    return r;
}

static int error_from_body(long http_code, const char *body, size_t len, struct kube_api_error *e)
{
    struct buf excerpt, message;
    buf_init(&excerpt, 2 * EXCERPT_MAX);
    buf_init(&message, 4 * EXCERPT_MAX);
    int r = append_safe(&excerpt, body, len, EXCERPT_MAX);
    if (r >= 0 && excerpt.len > 0)
        r = buf_printf(&message, "HTTP %ld: %s", http_code, buf_str(&excerpt));
    else if (r >= 0)
        r = buf_printf(&message, "HTTP %ld", http_code);
    if (r >= 0)
        r = fill(e, http_code, kube_api_error_default_reason(http_code), &message);
    buf_free(&excerpt);
    buf_free(&message);
    return r;
}

static bool starts_like_object(const char *body, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = body[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n')
            continue;
        return c == '{';
    }
    return false;
}

int kube_api_error_parse(long http_code, const char *body, size_t len, struct kube_api_error *e)
{
    if (!body)
        len = 0;
    /* Only a body that can be a Status is handed to the JSON parser; a
     * proxy's HTML page is not worth a parse attempt. */
    cJSON *root = starts_like_object(body, len) ? cJSON_ParseWithLength(body, len) : NULL;
    int r;
    if (root && is_status(root))
        r = error_from_status(root, http_code, e);
    else
        r = error_from_body(http_code, body, len, e);
    cJSON_Delete(root);
    return r;
}

int kube_api_error_from_status(const cJSON *obj, struct kube_api_error *e)
{
    if (!is_status(obj))
        return -EINVAL;
    return error_from_status(obj, 0, e);
}

/* Without a recognised reason the code decides, so a Status of reason
 * "Unknown" from an older server is still judged by what it says it is. */
static bool has_reason(const struct kube_api_error *e)
{
    return e->reason && e->reason[0] != '\0' && strcmp(e->reason, "Unknown") != 0;
}

int kube_api_error_is_conflict(const struct kube_api_error *e)
{
    if (!e)
        return 0;
    /* AlreadyExists is a 409 as well, but retrying a create will not help. */
    if (has_reason(e))
        return strcmp(e->reason, "Conflict") == 0;
    return e->code == 409;
}

int kube_api_error_is_gone(const struct kube_api_error *e)
{
    if (!e)
        return 0;
    if (has_reason(e))
        return strcmp(e->reason, "Expired") == 0 || strcmp(e->reason, "Gone") == 0;
    return e->code == 410;
}

void kube_api_error_clear(struct kube_api_error *e)
{
    if (!e)
        return;
    free(e->reason);
    free(e->message);
    e->code = 0;
    e->reason = NULL;
    e->message = NULL;
}
