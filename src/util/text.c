#include "util/text.h"

#include <stdlib.h>
#include <string.h>

size_t text_control_len(const char *s, size_t avail)
{
    const unsigned char *p = (const unsigned char *)s;
    if (avail == 0)
        return 0;
    if (p[0] < 0x20 || p[0] == 0x7f)
        return 1;
    if (avail >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
        return 2; /* U+0080..U+009F */
    if (avail >= 3 && p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xa8 && p[2] <= 0xae)
        return 3; /* U+2028..U+202E */
    if (avail >= 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
        return 3; /* U+2066..U+2069 */
    return 0;
}

void text_sanitize(char *s, size_t n, char repl)
{
    for (size_t i = 0; i < n;) {
        size_t k = text_control_len(s + i, n - i);
        if (k == 0) {
            i++;
            continue;
        }
        memset(s + i, repl, k);
        i += k;
    }
}

char *text_printable_copy(const char *s, size_t n, bool cut, char repl)
{
    char *q = malloc(n + 4);
    if (!q)
        return NULL;
    memcpy(q, s, n);
    text_sanitize(q, n, repl);
    strcpy(q + n, cut ? "..." : "");
    return q;
}

size_t text_excerpt(const char *s, size_t len, size_t max, char *out, size_t size)
{
    static const size_t mark = sizeof(TEXT_EXCERPT_MARK) - 1;
    size_t keep = len < max ? len : max;

    if (size == 0)
        return 0;
    if (keep < len || keep + 1 > size) {
        /* Cut: keep what fits before the mark. */
        if (size < mark + 1) {
            out[0] = '\0';
            return 0;
        }
        if (keep > size - mark - 1)
            keep = size - mark - 1;
    }
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = c >= 0x20 && c < 0x7f && c != '"' && c != '\\' ? (char)c : '?';
    }
    size_t o = keep;
    if (keep < len) {
        memcpy(out + o, TEXT_EXCERPT_MARK, mark);
        o += mark;
    }
    out[o] = '\0';
    return o;
}
