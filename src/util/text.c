#include "util/text.h"

#include <stdlib.h>
#include <string.h>

void text_sanitize(char *s, size_t n, char repl)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            s[i] = repl;
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
