#include "controller/node_index.h"

#include "workspace/ledger.h"

void node_index_init(struct node_index *x)
{
    key_groups_init(&x->pods);
    key_groups_init(&x->paused);
}

void node_index_free(struct node_index *x)
{
    key_groups_free(&x->pods);
    key_groups_free(&x->paused);
}

int node_index_pod(struct node_index *x, const char *key, const struct workspace_pod *p)
{
    return key_groups_set(&x->pods, key, p ? p->node_name : NULL);
}

int node_index_workspace(struct node_index *x, const char *key, const struct workspace *ws)
{
    return key_groups_set(&x->paused, key, ws ? ledger_watched_node(&ws->status) : NULL);
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
