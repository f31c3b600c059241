#include "controller/node_index.h"

#include <errno.h>
#include <string.h>

#include "workspace/ledger.h"

void node_index_init(struct node_index *x)
{
    key_groups_init(&x->pods);
    key_groups_init(&x->paused);
    key_groups_init(&x->by_snapshot_version);
}

void node_index_free(struct node_index *x)
{
    key_groups_free(&x->pods);
    key_groups_free(&x->paused);
    key_groups_free(&x->by_snapshot_version);
}

int node_index_pod(struct node_index *x, const char *key, const struct workspace_pod *p)
{
    return key_groups_set(&x->pods, key, p ? p->node_name : NULL);
}

/* The node version of the paused workspace's Ready snapshot, NULL: none. */
static const char *snapshot_version(const struct workspace *ws)
{
    const struct workspace_snapshot *sn = ws ? ws->status.snapshot : NULL;
    if (!sn || !sn->node_version || !sn->phase || strcmp(sn->phase, "Ready") != 0 ||
        (!ws->paused && ws->status.state != WS_STATE_PAUSED))
        return NULL;
    return sn->node_version;
}

int node_index_workspace(struct node_index *x, const char *key, const struct workspace *ws)
{
    if (key_groups_set(&x->by_snapshot_version, key, snapshot_version(ws)) < 0)
        return -ENOMEM;
    return key_groups_set(&x->paused, key, ws ? ledger_watched_node(&ws->status) : NULL);
}

void node_index_paused_on_version(const struct node_index *x, const char *version,
                                  void (*fn)(void *data, const char *key), void *data)
{
    key_groups_foreach(&x->by_snapshot_version, version, fn, data);
}

void node_index_pods_on(const struct node_index *x, const char *node,
                        void (*fn)(void *data, const char *key), void *data)
{
    key_groups_foreach(&x->pods, node, fn, data);
}

void node_index_paused_from(const struct node_index *x, const char *node,
                            void (*fn)(void *data, const char *key), void *data)
{
    key_groups_foreach(&x->paused, node, fn, data);
}

size_t node_index_pods_count(const struct node_index *x, const char *node)
{
    return key_groups_count(&x->pods, node);
}

size_t node_index_paused_count(const struct node_index *x, const char *node)
{
    return key_groups_count(&x->paused, node);
}
