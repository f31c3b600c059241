/*
 * status_fields: the fields of struct workspace_status, described once.
 *
 * Decoding a status, encoding it, clearing it and copying it all walk the
 * tables below, so a new status field is one line in the table of the JSON
 * object it belongs to (src/workspace/status_fields.c), plus the CRD schema
 * and docs/api.md. Equality needs nothing: two statuses are equal when they
 * encode the same (workspace_status_equal(), status_fields_same()).
 *
 * Ownership: the tables are static and read-only. A struct walked by a
 * table owns every string and list the table names; the walkers below never
 * touch a field the table does not name.
 */
#ifndef HIBERNATOR_WORKSPACE_STATUS_FIELDS_H
#define HIBERNATOR_WORKSPACE_STATUS_FIELDS_H

#include <cjson/cJSON.h>
#include <stddef.h>

enum status_field_kind {
    SF_END,         /* ends a table */
    SF_STR,         /* char *; omitted when NULL or "" */
    SF_TEXT,        /* char *; always written, "" for NULL (metav1 reason, message) */
    SF_TIME,        /* int64_t Unix ms, RFC 3339 in whole seconds; omitted when 0 */
    SF_TIME_MICRO,  /* the same to the microsecond: a time a decision is made on to the ms */
    SF_INT64,       /* int64_t; omitted when 0 */
    SF_INT,         /* int; omitted when 0 */
    SF_BOOL,        /* int; written as true when set, omitted when 0 */
    SF_DOUBLE,      /* double; omitted when 0 or not finite */
    SF_FIGURE,      /* double; written whenever the int64_t at .when is set (0.0 s is a figure),
                       read only beside it (.when comes first in the table) */
    SF_STATE,       /* enum workspace_state, by its name */
    SF_COND_STATUS, /* enum condition_status, by its name, always written */
    SF_OBJECT,      /* a JSON object of .sub's fields at .off; omitted when empty */
    SF_BLOCK,       /* the same, held through a pointer at .off to .size bytes: .empty (a
                       read-only block of zeros) when absent, so a status without it is
                       small; never NULL once decoded (status_fields_fill_empty()) */
    SF_INLINE,      /* .sub's fields at .off, written into this same JSON object */
    SF_LIST,        /* an array of .sub objects: the array at .off, its length (size_t) at
                       .count, elements of .size bytes, at most .max (0: no limit) */
    SF_CONDITIONS,  /* an SF_LIST of metav1 conditions: decoded skipping an empty or repeated
                       type, encoded in a fixed order (workspace_status_to_json()) */
};

struct status_field {
    const char *key; /* the JSON name; NULL: kept and copied, never encoded (and SF_INLINE) */
    enum status_field_kind kind;
    size_t off;                     /* where the field lives in the struct the table describes */
    size_t when;                    /* SF_FIGURE: the int64_t time that says the figure is set */
    size_t count;                   /* SF_LIST, SF_CONDITIONS: where the element count lives */
    size_t size;                    /* SF_LIST, SF_CONDITIONS: one element's size */
    size_t max;                     /* SF_LIST: the most elements decoded or encoded */
    const struct status_field *sub; /* SF_OBJECT, SF_BLOCK, SF_INLINE, SF_LIST, SF_CONDITIONS */
    const void *empty;              /* SF_BLOCK: the read-only block that stands for absent */
    /* SF_STR, SF_TEXT: the value repeats across workspaces (a reason, a
     * state's message, a node's name), so a cache of many holds one copy
     * of each text (status_fields_share()). */
    int shared;
};

/* struct workspace_status as the status subresource's "status" object. */
extern const struct status_field workspace_status_fields[];
/* struct condition as an entry of status.conditions. */
extern const struct status_field workspace_condition_fields[];
/* struct workspace_pause_timeline as status.lastPause. */
extern const struct status_field workspace_pause_fields[];
/* struct workspace_pause_record as an entry of status.history. */
extern const struct status_field workspace_record_fields[];

/* Reads the fields of table t from the JSON object o (NULL or not an object:
 * all unset) into base, which must be zeroed. The status is read
 * leniently: a field of the wrong type or an unreadable time is unset.
 * Returns 0 or -ENOMEM; on -ENOMEM base holds what was read so far, which
 * status_fields_clear() releases. */
int status_fields_decode(const struct status_field *t, const cJSON *o, void *base);

/* Told of a field that is there but cannot be read: path names it
 * ("status.lastPause.requestedAt"), why says what is wrong. Returns 0 or
 * -ENOMEM. */
typedef int (*status_field_note)(void *data, const char *path, const char *why);

/* status_fields_decode(), telling note (may be NULL) of each field it
 * leaves unset because it cannot read it; path names o ("status"). */
int status_fields_decode_noting(const struct status_field *t, const cJSON *o, void *base,
                                const char *path, status_field_note note, void *data);

/* Adds the fields of table t in base to the JSON object o. Returns 0 or
 * -ENOMEM (o then holds part of them; the caller deletes it). */
int status_fields_encode(const struct status_field *t, const void *base, cJSON *o);

/* Whether a and b, both described by t, encode to the same JSON
 * (status_fields_encode()), without building it: allocates nothing
 * (unless a list to be ordered has more than 32 elements; out of memory
 * then reads as "different"). */
int status_fields_same(const struct status_field *t, const void *a, const void *b);

/* Frees every string, list and block table t names in base; does not zero
 * base, but points each block at its empty one. */
void status_fields_clear(const struct status_field *t, void *base);

/* Points each block of base that is NULL (a zeroed struct) at its empty
 * one, so it reads as absent. Allocates nothing. */
void status_fields_fill_empty(const struct status_field *t, void *base);

/* Gives base a block of its own for each block that is empty (or NULL), so
 * every field may be written. Returns 0 or -ENOMEM (the blocks not reached
 * stay empty; base stays valid). */
int status_fields_own_blocks(const struct status_field *t, void *base);

struct strpool;

/* Replaces each string of a field marked shared in base by a hold on the
 * pool's copy (util/strpool.h), freeing its own. Returns 0 or -ENOMEM (the
 * strings not reached keep their own copies); either way base is then
 * cleared only by status_fields_clear_shared() with the same pool. */
int status_fields_share(const struct status_field *t, void *base, struct strpool *pool);

/* status_fields_clear() of a base status_fields_share() made: holds go
 * back to pool, the other strings are freed. */
void status_fields_clear_shared(const struct status_field *t, void *base, struct strpool *pool);

/* dst holds a shallow copy of src (a struct assignment): gives it copies of
 * its own of every string and list table t names, and a block of its own
 * for every block (empty ones too, so the copy may be written). Returns 0 or -ENOMEM
 * (then dst owns nothing: what was copied is freed, and dst must not be
 * used). */
int status_fields_deepen(const struct status_field *t, const void *src, void *dst);

#endif
