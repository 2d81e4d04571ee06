/* perfmon-stack-tree.c: aggregation of sampled stacks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-stack-tree-private.h"

/* Design.
 *
 * A prefix tree of frames under an invisible root: adding a sample walks
 * down from the root along its frames, outermost first, adds one to the
 * count of each node it passes and creates the nodes it lacks. Children
 * are kept in order of first appearance and searched linearly (a stack
 * sampled during one jank has few distinct callees per frame); they are
 * sorted by count only when printed, with the order of appearance as the
 * tie-break, so printing is deterministic.
 *
 * Samples taken in a dispatch go first through a node of the dispatch's
 * name, a child of the root: the tree's samples are grouped by the
 * dispatch that ran, then by stack. */

typedef struct _Node Node;

struct _Node
{
  guint64    pc;
  gint       module_index;
  guint64    offset;
  char      *symbol;          /* NULL if unknown */
  guint64    symbol_offset;
  char      *path;            /* NULL if unknown */
  char      *build_id;        /* NULL if unknown */
  char      *dispatch;        /* a dispatch's node (the root's child): its name */
  char      *script;          /* a script frame's text, NULL for a native one */

  guint      count;
  guint      serial;          /* order of creation, the tie-break */
  GPtrArray *children;        /* of Node, NULL until the first */
};

struct _PerfmonStackTree
{
  Node     root;
  guint    max_nodes;
  guint    max_frames;
  guint    n_nodes;           /* without the root */
  guint64  n_truncated_frames;
  guint64  n_dropped_frames;
};

static void
node_free (gpointer data)
{
  Node *node = data;

  g_clear_pointer (&node->children, g_ptr_array_unref);
  g_free (node->symbol);
  g_free (node->path);
  g_free (node->build_id);
  g_free (node->dispatch);
  g_free (node->script);
  g_free (node);
}

PerfmonStackTree *
_perfmon_stack_tree_new_full (guint max_nodes,
                              guint max_frames)
{
  PerfmonStackTree *tree = g_new0 (PerfmonStackTree, 1);

  tree->max_nodes = max_nodes;
  tree->max_frames = max_frames;
  tree->root.module_index = -1;

  return tree;
}

PerfmonStackTree *
_perfmon_stack_tree_new (void)
{
  return _perfmon_stack_tree_new_full (PERFMON_STACK_TREE_MAX_NODES,
                                       PERFMON_STACK_TREE_MAX_FRAMES);
}

void
_perfmon_stack_tree_free (PerfmonStackTree *tree)
{
  if (tree == NULL)
    return;

  g_clear_pointer (&tree->root.children, g_ptr_array_unref);
  g_free (tree);
}

static gboolean
node_matches (const Node              *node,
              const PerfmonStackFrame *frame)
{
  if (node->dispatch != NULL || (node->script != NULL) != (frame->script != NULL))
    return FALSE;
  if (frame->script != NULL)
    return g_str_equal (node->script, frame->script);
  if (node->module_index != frame->module_index)
    return FALSE;
  if (frame->module_index < 0)
    return node->pc == frame->pc;
  return node->offset == frame->offset;
}

static Node *
node_find_child (Node                    *parent,
                 const PerfmonStackFrame *frame)
{
  for (guint i = 0; parent->children != NULL && i < parent->children->len; i++)
    {
      Node *child = g_ptr_array_index (parent->children, i);

      if (node_matches (child, frame))
        return child;
    }

  return NULL;
}

static Node *
node_add_child (PerfmonStackTree        *tree,
                Node                    *parent,
                const PerfmonStackFrame *frame)
{
  Node *child = g_new0 (Node, 1);

  child->pc = frame->pc;
  child->module_index = frame->module_index < 0 ? -1 : frame->module_index;
  child->offset = frame->module_index < 0 ? 0 : frame->offset;
  child->symbol = g_strdup (frame->symbol);
  child->symbol_offset = frame->symbol != NULL ? frame->symbol_offset : 0;
  child->path = g_strdup (frame->path);
  child->build_id = frame->build_id != NULL && frame->build_id[0] != '\0' ? g_strdup (frame->build_id) : NULL;
  if (frame->script != NULL)
    {
      /* One line of text, as a dispatch's name. */
      child->script = g_utf8_make_valid (frame->script, -1);
      for (char *c = child->script; *c != '\0'; c++)
        if ((guchar) *c < 0x20 || *c == 0x7f)
          *c = ' ';
    }
  child->serial = tree->n_nodes++;

  if (parent->children == NULL)
    parent->children = g_ptr_array_new_with_free_func (node_free);
  g_ptr_array_add (parent->children, child);

  return child;
}

/* The root's child for the dispatch @name, made if new; NULL when the tree
 * is full. */
static Node *
dispatch_node (PerfmonStackTree *tree,
               const char       *name)
{
  /* One line of text: valid UTF-8 without control characters. */
  g_autofree char *line = g_utf8_make_valid (name, -1);
  Node *node;

  for (char *c = line; *c != '\0'; c++)
    if ((guchar) *c < 0x20 || *c == 0x7f)
      *c = ' ';
  for (guint i = 0; tree->root.children != NULL && i < tree->root.children->len; i++)
    {
      node = g_ptr_array_index (tree->root.children, i);
      if (node->dispatch != NULL && g_str_equal (node->dispatch, line))
        return node;
    }
  if (tree->n_nodes >= tree->max_nodes)
    return NULL;

  node = g_new0 (Node, 1);
  node->module_index = -1;
  node->dispatch = g_steal_pointer (&line);
  node->serial = tree->n_nodes++;
  if (tree->root.children == NULL)
    tree->root.children = g_ptr_array_new_with_free_func (node_free);
  g_ptr_array_add (tree->root.children, node);
  return node;
}

void
_perfmon_stack_tree_add_sample (PerfmonStackTree        *tree,
                                const PerfmonStackFrame *frames,
                                guint                    n_frames)
{
  _perfmon_stack_tree_add_dispatch_sample (tree, NULL, frames, n_frames);
}

void
_perfmon_stack_tree_add_dispatch_sample (PerfmonStackTree        *tree,
                                         const char              *dispatch,
                                         const PerfmonStackFrame *frames,
                                         guint                    n_frames)
{
  Node *node;
  guint n_kept;

  g_return_if_fail (tree != NULL);
  g_return_if_fail (frames != NULL || n_frames == 0);

  n_kept = MIN (n_frames, tree->max_frames);
  tree->n_truncated_frames += n_frames - n_kept;

  node = &tree->root;
  node->count++;

  if (dispatch != NULL)
    {
      Node *group = dispatch_node (tree, dispatch);

      if (group == NULL)
        {
          tree->n_dropped_frames += n_kept;
          return;
        }
      group->count++;
      node = group;
    }

  for (guint i = 0; i < n_kept; i++)
    {
      Node *child = node_find_child (node, &frames[i]);

      if (child == NULL)
        {
          if (tree->n_nodes >= tree->max_nodes)
            {
              tree->n_dropped_frames += n_kept - i;
              break;
            }
          child = node_add_child (tree, node, &frames[i]);
        }

      child->count++;
      node = child;
    }
}

void
_perfmon_stack_tree_add_captured (PerfmonStackTree           *tree,
                                  PerfmonModules             *modules,
                                  const PerfmonCapturedStack *captured)
{
  _perfmon_stack_tree_add_captured_in_dispatch (tree, modules, NULL, captured);
}

void
_perfmon_stack_tree_add_captured_in_dispatch (PerfmonStackTree           *tree,
                                              PerfmonModules             *modules,
                                              const char                 *dispatch,
                                              const PerfmonCapturedStack *captured)
{
  g_autofree PerfmonStackFrame *frames = g_new0 (PerfmonStackFrame, captured->n_frames);
  g_autofree PerfmonPcInfo *infos = g_new0 (PerfmonPcInfo, captured->n_frames);
  gint64 deadline_us = g_get_monotonic_time () + PERFMON_SYMBOLIZE_BUDGET_MS * 1000;

  /* The tree wants the outermost frame first. */
  for (guint i = 0; i < captured->n_frames; i++)
    {
      guint inner = captured->n_frames - 1 - i;
      PerfmonPcInfo *info = &infos[i];

      _perfmon_modules_describe_pc (modules, captured->pcs[inner], inner > 0, deadline_us, info);
      frames[i].pc = info->pc;
      frames[i].module_index = info->module_index;
      frames[i].offset = info->offset;
      frames[i].symbol = info->symbol;
      frames[i].symbol_offset = info->symbol_offset;
      if (info->module_index >= 0)
        {
          frames[i].path = _perfmon_modules_get_path (modules, info->module_index);
          frames[i].build_id = _perfmon_modules_get_build_id (modules, info->module_index);
        }
    }
  _perfmon_stack_tree_add_dispatch_sample (tree, dispatch, frames, captured->n_frames);
  for (guint i = 0; i < captured->n_frames; i++)
    g_free (infos[i].symbol);
}

struct _PerfmonStackSample
{
  char         *dispatch;
  GArray       *frames;    /* of PerfmonStackFrame, their strings in @strings */
  GStringChunk *strings;
};

PerfmonStackSample *
_perfmon_stack_sample_new (const char *dispatch)
{
  PerfmonStackSample *sample = g_new0 (PerfmonStackSample, 1);

  sample->dispatch = g_strdup (dispatch);
  sample->frames = g_array_new (FALSE, TRUE, sizeof (PerfmonStackFrame));
  sample->strings = g_string_chunk_new (256);
  return sample;
}

void
_perfmon_stack_sample_free (PerfmonStackSample *sample)
{
  if (sample == NULL)
    return;
  g_free (sample->dispatch);
  g_array_unref (sample->frames);
  g_string_chunk_free (sample->strings);
  g_free (sample);
}

void
_perfmon_stack_sample_add_frame (PerfmonStackSample      *sample,
                                 const PerfmonStackFrame *frame)
{
  PerfmonStackFrame copy = *frame;

  g_return_if_fail (sample != NULL);

  if (sample->frames->len >= PERFMON_STACK_TREE_MAX_FRAMES)
    return;
  copy.symbol = frame->symbol != NULL ? g_string_chunk_insert_const (sample->strings, frame->symbol) : NULL;
  copy.path = frame->path != NULL ? g_string_chunk_insert_const (sample->strings, frame->path) : NULL;
  copy.build_id = frame->build_id != NULL ? g_string_chunk_insert_const (sample->strings, frame->build_id) : NULL;
  copy.script = frame->script != NULL ? g_string_chunk_insert_const (sample->strings, frame->script) : NULL;
  g_array_append_val (sample->frames, copy);
}

guint
_perfmon_stack_sample_get_n_frames (const PerfmonStackSample *sample)
{
  g_return_val_if_fail (sample != NULL, 0);

  return sample->frames->len;
}

void
_perfmon_stack_tree_add_stack_sample (PerfmonStackTree         *tree,
                                      const PerfmonStackSample *sample)
{
  g_return_if_fail (tree != NULL);
  g_return_if_fail (sample != NULL);

  _perfmon_stack_tree_add_dispatch_sample (tree, sample->dispatch,
                                           (const PerfmonStackFrame *) (gpointer) sample->frames->data,
                                           sample->frames->len);
}

guint
_perfmon_stack_tree_get_n_samples (PerfmonStackTree *tree)
{
  g_return_val_if_fail (tree != NULL, 0);

  return tree->root.count;
}

guint
_perfmon_stack_tree_get_n_nodes (PerfmonStackTree *tree)
{
  g_return_val_if_fail (tree != NULL, 0);

  return tree->n_nodes;
}

guint64
_perfmon_stack_tree_get_n_truncated_frames (PerfmonStackTree *tree)
{
  g_return_val_if_fail (tree != NULL, 0);

  return tree->n_truncated_frames;
}

guint64
_perfmon_stack_tree_get_n_dropped_frames (PerfmonStackTree *tree)
{
  g_return_val_if_fail (tree != NULL, 0);

  return tree->n_dropped_frames;
}

static gint
compare_nodes (gconstpointer a,
               gconstpointer b)
{
  const Node *na = *(Node * const *) a;
  const Node *nb = *(Node * const *) b;

  if (na->count != nb->count)
    return na->count > nb->count ? -1 : 1;
  return na->serial < nb->serial ? -1 : (na->serial > nb->serial ? 1 : 0);
}

/* "#NN pc 0000757c path(symbol+offset)(build id)", without a newline. */
static void
append_frame (GString    *out,
              const Node *node,
              guint       depth)
{
  if (node->script != NULL)
    {
      g_string_append_printf (out, "#%02u script %s", depth, node->script);
      return;
    }
  g_string_append_printf (out, "#%02u pc %08" G_GINT64_MODIFIER "x %s",
                          depth,
                          node->module_index >= 0 ? node->offset : node->pc,
                          node->path != NULL ? node->path : "[unknown]");
  if (node->symbol != NULL)
    g_string_append_printf (out, "(%s+%" G_GUINT64_FORMAT ")", node->symbol, node->symbol_offset);
  if (node->build_id != NULL)
    g_string_append_printf (out, "(%s)", node->build_id);
}

static void
append_subtree (GString *out,
                Node    *node,
                guint    depth)
{
  if (node->children == NULL)
    return;

  g_ptr_array_sort (node->children, compare_nodes);
  for (guint i = 0; i < node->children->len; i++)
    {
      Node *child = g_ptr_array_index (node->children, i);

      if (child->dispatch != NULL)
        {
          /* A header; the dispatch's stacks follow from depth 0. */
          g_string_append_printf (out, "%u " PERFMON_STACK_TREE_DISPATCH_TAG "%s\n", child->count,
                                  child->dispatch);
          append_subtree (out, child, depth);
          continue;
        }
      for (guint j = 0; j < depth; j++)
        g_string_append (out, "    ");
      g_string_append_printf (out, "%u ", child->count);
      append_frame (out, child, depth);
      g_string_append_c (out, '\n');
      /* Depth is bounded by max_frames. */
      append_subtree (out, child, depth + 1);
    }
}

char *
_perfmon_stack_tree_to_text (PerfmonStackTree *tree)
{
  GString *out;

  g_return_val_if_fail (tree != NULL, NULL);

  out = g_string_new (NULL);
  append_subtree (out, &tree->root, 0);

  return g_string_free (out, FALSE);
}

char *
_perfmon_stack_tree_heaviest_stack (PerfmonStackTree *tree)
{
  GString *out;
  Node *node;

  g_return_val_if_fail (tree != NULL, NULL);

  out = g_string_new (NULL);
  node = &tree->root;
  for (guint depth = 0; node->children != NULL && node->children->len > 0;)
    {
      Node *heaviest = NULL;

      for (guint i = 0; i < node->children->len; i++)
        {
          Node *child = g_ptr_array_index (node->children, i);

          if (heaviest == NULL || compare_nodes (&child, &heaviest) < 0)
            heaviest = child;
        }

      node = heaviest;
      /* A dispatch: its heaviest stack follows. */
      if (heaviest->dispatch != NULL)
        continue;
      append_frame (out, heaviest, depth++);
      g_string_append_c (out, '\n');
    }

  return g_string_free (out, FALSE);
}
