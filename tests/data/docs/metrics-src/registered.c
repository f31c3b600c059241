/* Input of test_docs's metric scanner, never compiled: which of these count
 * as a metric the code registers. hibernator_commented_total is only in
 * comments. */
#include "sub/names.h"

static const char *const widgets = "hibernator_widgets_total";

// "hibernator_commented_total" in a line comment is not a registration.

static void write_metrics(struct buf *b)
{
    buf_printf(b, "# TYPE hibernator_gizmo_seconds histogram\n");
    buf_printf(b, "workqueue_fake_depth{name=\"%s\"} %zu\n", "workspaces", depth);
    buf_printf(b,
               "hibernator_"
               "joined_total %d\n",
               1);
    buf_printf(b, "hibernator_prefix_total_extra %d\n", 1);
    int hibernator_identifier_total = 0;
    (void)hibernator_identifier_total;
    (void)widgets;
}
