/*
 * text: making text from outside (a file, a plugin's stderr, an
 * application's answer, a user's object) safe to put in one line of a
 * message or on a terminal.
 *
 * Two ways, for two kinds of reader:
 *   text_excerpt()   quotes a bounded start of the text between double quotes
 *                    in an error message, printable ASCII only;
 *   text_sanitize()  keeps the text (UTF-8 included) and blanks only what
 *                    would break the line or change what a terminal shows.
 * kube/api_error.c uses text_control_len() too, but keeps its own loop: it
 * also validates UTF-8, collapses whitespace, redacts tokens and cuts on a
 * character with "…". util/log.c does not replace at all: it escapes (JSON
 * \uXXXX, quoted logfmt values) so that a log reader gets every byte back.
 *
 * Ownership: text_sanitize() changes the caller's buffer in place;
 * text_excerpt() writes to the caller's buffer; text_printable_copy()
 * returns a string the caller frees.
 */
#ifndef HIBERNATOR_UTIL_TEXT_H
#define HIBERNATOR_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* The cut mark text_excerpt() appends, and the room it needs. */
#define TEXT_EXCERPT_MARK "..."
/* Size of an out buffer that keeps max bytes: the text, the mark and NUL. */
#define TEXT_EXCERPT_SIZE(max) ((max) + sizeof(TEXT_EXCERPT_MARK))

/* Length of the control character starting at s (avail bytes readable), or
 * 0 when s starts none. Control characters are those that break a line or
 * change what a terminal shows: C0 (line breaks, tab, ESC) and DEL (1 byte),
 * C1 U+0080..U+009F encoded as UTF-8 (2 bytes, CSI among them), the line and
 * paragraph separators U+2028/U+2029 and the bidi embeddings and overrides
 * U+202A..U+202E and isolates U+2066..U+2069 (3 bytes). A lone byte
 * 0x80..0xFF is not one (it is not UTF-8; a UTF-8 terminal shows it as a
 * replacement character). */
size_t text_control_len(const char *s, size_t avail);

/* Replaces every byte of every control character (see text_control_len())
 * among the first n bytes of s with repl; everything else, UTF-8 included,
 * is kept, so the length does not change. */
void text_sanitize(char *s, size_t n, char repl);

/* A copy of the n bytes at s, sanitized with repl, followed by "..." when
 * cut says that s went on past them. Returns NULL out of memory. */
char *text_printable_copy(const char *s, size_t n, bool cut, char repl);

/*
 * Writes the start of the len bytes at s to out[size] for quoting between
 * double quotes in a message:
 *   - at most max bytes of s are kept;
 *   - every byte outside ' '..'~', and '"' and '\\', becomes '?': control
 *     characters, NUL, DEL and each byte of a UTF-8 character (so "é" reads
 *     "??"), and nothing inside can end the quotes or read as an escape;
 *   - TEXT_EXCERPT_MARK follows when s went on past what was kept.
 * With size >= TEXT_EXCERPT_SIZE(max) all max bytes fit; a smaller out keeps
 * fewer so that a cut is still marked (when size < 4 a cut text reads "").
 * Always NUL-terminates when size > 0. Returns the length written.
 */
size_t text_excerpt(const char *s, size_t len, size_t max, char *out, size_t size);

#endif
