/*
 * text: making text from outside (a file, a plugin's stderr, an
 * application's answer) safe to put in one line of a message.
 *
 * Ownership: text_sanitize() changes the caller's buffer in place;
 * text_printable_copy() returns a string the caller frees.
 */
#ifndef HIBERNATOR_UTIL_TEXT_H
#define HIBERNATOR_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Replaces every control character (C0, including line breaks, and DEL)
 * among the first n bytes of s with repl. */
void text_sanitize(char *s, size_t n, char repl);

/* A copy of the n bytes at s, sanitized with repl, followed by "..." when
 * cut says that s went on past them. Returns NULL out of memory. */
char *text_printable_copy(const char *s, size_t n, bool cut, char repl);

#endif
