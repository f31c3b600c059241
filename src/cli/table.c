#include "cli/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"

#define MIN_WIDTH 10
#define PADDING 3

struct table {
    size_t n_columns;
    size_t n_rows; /* the header is row 0 */
    size_t cap_rows;
    char **cells; /* n_rows * n_columns */
};

/* A copy of s without control characters (util/text.h): a cell or a line
 * must not break the table or move the terminal's cursor. */
static char *clean_dup(const char *s)
{
    char *c = strdup(s ? s : "");
    if (c)
        text_sanitize(c, strlen(c), ' ');
    return c;
}

static int add(struct table *t, const char *const *cells)
{
    if (t->n_rows == t->cap_rows) {
        size_t cap = t->cap_rows ? t->cap_rows * 2 : 16;
        char **grown = realloc(t->cells, cap * t->n_columns * sizeof(*grown));
        if (!grown)
            return -ENOMEM;
        t->cells = grown;
        t->cap_rows = cap;
    }
    char **row = &t->cells[t->n_rows * t->n_columns];
    for (size_t c = 0; c < t->n_columns; c++) {
        row[c] = clean_dup(cells[c]);
        if (!row[c]) {
            while (c-- > 0)
                free(row[c]);
            return -ENOMEM;
        }
    }
    t->n_rows++;
    return 0;
}

struct table *table_new(size_t n_columns, const char *const *headers)
{
    struct table *t = calloc(1, sizeof(*t));
    if (!t || n_columns == 0) {
        free(t);
        return NULL;
    }
    t->n_columns = n_columns;
    if (add(t, headers) < 0) {
        table_free(t);
        return NULL;
    }
    return t;
}

int table_add_row(struct table *t, const char *const *cells)
{
    return add(t, cells);
}

size_t table_rows(const struct table *t)
{
    return t->n_rows - 1;
}

size_t text_width(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        n += (*p & 0xC0) != 0x80; /* continuation bytes add nothing */
    return n;
}

void table_print(const struct table *t, FILE *out, int indent)
{
    size_t *width = calloc(t->n_columns, sizeof(*width));
    if (!width)
        return;
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t c = 0; c < t->n_columns; c++) {
            size_t w = text_width(t->cells[r * t->n_columns + c]) + PADDING;
            if (w > width[c])
                width[c] = w;
        }
    for (size_t r = 0; r < t->n_rows; r++) {
        fprintf(out, "%*s", indent, "");
        size_t last = t->n_columns; /* no padding after the last non-empty cell */
        while (last > 1 && !t->cells[r * t->n_columns + last - 1][0])
            last--;
        for (size_t c = 0; c < last; c++) {
            const char *cell = t->cells[r * t->n_columns + c];
            fputs(cell, out);
            if (c + 1 == last)
                break;
            size_t w = width[c] < MIN_WIDTH ? MIN_WIDTH : width[c];
            for (size_t i = text_width(cell); i < w; i++)
                fputc(' ', out);
        }
        fputc('\n', out);
    }
    free(width);
}

static void csv_cell(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fputc('"', out);
        fputc(*p, out);
    }
    fputc('"', out);
}

void table_print_csv(const struct table *t, FILE *out)
{
    for (size_t r = 0; r < t->n_rows; r++) {
        for (size_t c = 0; c < t->n_columns; c++) {
            if (c)
                fputc(',', out);
            csv_cell(out, t->cells[r * t->n_columns + c]);
        }
        fputc('\n', out);
    }
}

void table_free(struct table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

void text_print_clean(FILE *out, const char *s)
{
    char *c = clean_dup(s);
    if (c)
        fputs(c, out);
    free(c);
}
