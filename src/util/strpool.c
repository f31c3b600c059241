#include "util/strpool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct pooled_text {
    size_t holds;
    char text[];
};

void strpool_init(struct strpool *p)
{
    strmap_init(&p->texts);
    p->let_go = 0;
}

struct strpool *strpool_new(void)
{
    struct strpool *p = malloc(sizeof(*p));
    if (p)
        strpool_init(p);
    return p;
}

static void free_if_let_go(struct strpool *p)
{
    if (p->let_go && strmap_len(&p->texts) == 0) {
        strmap_free(&p->texts);
        free(p);
    }
}

void strpool_let_go(struct strpool *p)
{
    if (!p)
        return;
    p->let_go = 1;
    free_if_let_go(p);
}

const char *strpool_get(struct strpool *p, const char *s)
{
    if (!s)
        return NULL;
    struct pooled_text *t = strmap_get(&p->texts, s);
    if (t) {
        t->holds++;
        return t->text;
    }
    size_t n = strlen(s);
    t = malloc(sizeof(*t) + n + 1);
    if (!t)
        return NULL;
    t->holds = 1;
    memcpy(t->text, s, n + 1);
    if (strmap_put(&p->texts, t->text, t, NULL) < 0) {
        free(t);
        return NULL;
    }
    return t->text;
}

void strpool_put(struct strpool *p, const char *text)
{
    if (!text)
        return;
    struct pooled_text *t = strmap_get(&p->texts, text);
    if (!t || t->text != text || --t->holds > 0)
        return;
    strmap_remove(&p->texts, text);
    free(t);
    free_if_let_go(p);
}

void strpool_drop(struct strpool *p, char *s)
{
    if (!s)
        return;
    struct pooled_text *t = strmap_get(&p->texts, s);
    if (t && t->text == s)
        strpool_put(p, s);
    else
        free(s);
}

int strpool_adopt(struct strpool *p, char **field)
{
    if (!*field)
        return 0;
    const char *held = strpool_get(p, *field);
    if (!held)
        return -ENOMEM;
    free(*field);
    *field = (char *)held;
    return 0;
}

size_t strpool_len(const struct strpool *p)
{
    return strmap_len(&p->texts);
}

void strpool_free(struct strpool *p)
{
    void *v;
    for (size_t it = 0; strmap_next(&p->texts, &it, NULL, &v);)
        free(v);
    strmap_free(&p->texts);
}
