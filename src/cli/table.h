/*
 * table: rows of text cells printed as kubectl prints them, or as CSV.
 *
 * The text layout is kubectl's (Go's tabwriter with minimum width 10 and
 * padding 3): every column but the last is padded to the widest cell plus
 * three spaces, and to at least ten characters; a line ends after its last
 * non-empty cell, without trailing spaces. Widths count UTF-8 code
 * points. Cells come from the cluster, so control characters (C0 and C1: a
 * newline in a message, a terminal escape; and the bidi overrides that would
 * reorder the line) are shown as spaces, one per byte (text_sanitize() in
 * util/text.h): nothing the API server returns can move the cursor or forge
 * a line.
 *
 * Ownership: the table copies every cell; table_free() releases it.
 */
#ifndef HIBERNATOR_CLI_TABLE_H
#define HIBERNATOR_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

struct table;

/* A table with these column headers (copied). Returns NULL when out of memory. */
struct table *table_new(size_t n_columns, const char *const *headers);

/* Appends a row of n_columns cells (NULL reads as ""). 0 or -ENOMEM. */
int table_add_row(struct table *t, const char *const *cells);

size_t table_rows(const struct table *t);

/* Writes the header and the rows, each line ending in '\n'. indent spaces
 * precede every line (describe's nested tables). */
void table_print(const struct table *t, FILE *out, int indent);

/* Writes CSV with RFC 4180 quoting (a cell with a comma or a quote is
 * quoted), lines ending in '\n': the header, then the rows. */
void table_print_csv(const struct table *t, FILE *out);

void table_free(struct table *t);

/* Writes s with control characters as spaces, as the cells (for text from
 * the cluster). */
void text_print_clean(FILE *out, const char *s);

/* Code points in a UTF-8 string (bytes that are not valid UTF-8 count one each). */
size_t text_width(const char *s);

#endif
