/* perfmon-stack-tree.c: aggregation of sampled stacks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-error.h"
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

/* The line of @node at @depth; its strings are borrowed. */
static PerfmonStackTreeLine
node_line (const Node *node,
           guint       depth,
           gboolean    with_count)
{
  return (PerfmonStackTreeLine) {
    .kind = node->script != NULL ? PERFMON_STACK_TREE_LINE_SCRIPT : PERFMON_STACK_TREE_LINE_FRAME,
    .has_count = with_count,
    .count = node->count,
    .depth = depth,
    .pc = node->module_index >= 0 ? node->offset : node->pc,
    .path = node->path,
    .symbol = node->symbol,
    .symbol_offset = node->symbol_offset,
    .build_id = node->build_id != NULL && node->build_id[0] != '\0' ? node->build_id : NULL,
    .text = node->script,
  };
}

void
_perfmon_stack_tree_append_line (GString                    *out,
                                 const PerfmonStackTreeLine *line)
{
  if (line->kind == PERFMON_STACK_TREE_LINE_DISPATCH)
    {
      g_string_append_printf (out, "%u " PERFMON_STACK_TREE_DISPATCH_TAG "%s\n", line->count, line->text);
      return;
    }
  if (line->has_count)
    {
      for (guint j = 0; j < line->depth; j++)
        g_string_append (out, "    ");
      g_string_append_printf (out, "%u ", line->count);
    }
  if (line->kind == PERFMON_STACK_TREE_LINE_SCRIPT)
    {
      g_string_append_printf (out, "#%02u script %s\n", line->depth, line->text);
      return;
    }
  g_string_append_printf (out, "#%02u pc %08" G_GINT64_MODIFIER "x %s", line->depth, line->pc,
                          line->path != NULL ? line->path : "[unknown]");
  if (line->symbol != NULL)
    g_string_append_printf (out, "(%s+%" G_GUINT64_FORMAT ")", line->symbol, line->symbol_offset);
  if (line->build_id != NULL)
    g_string_append_printf (out, "(%s)", line->build_id);
  g_string_append_c (out, '\n');
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
          PerfmonStackTreeLine header = {
            .kind = PERFMON_STACK_TREE_LINE_DISPATCH,
            .has_count = TRUE,
            .count = child->count,
            .text = child->dispatch,
          };

          _perfmon_stack_tree_append_line (out, &header);
          append_subtree (out, child, depth);
          continue;
        }
      {
        PerfmonStackTreeLine line = node_line (child, depth, TRUE);

        _perfmon_stack_tree_append_line (out, &line);
      }
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
      {
        PerfmonStackTreeLine line = node_line (heaviest, depth++, FALSE);

        _perfmon_stack_tree_append_line (out, &line);
      }
    }

  return g_string_free (out, FALSE);
}

/* --- The strict reader --------------------------------------------------- */

void
_perfmon_stack_tree_line_clear (PerfmonStackTreeLine *line)
{
  g_clear_pointer (&line->path, g_free);
  g_clear_pointer (&line->symbol, g_free);
  g_clear_pointer (&line->build_id, g_free);
  g_clear_pointer (&line->text, g_free);
}

static gboolean
read_decimal (const char **p,
              guint64      max,
              guint64     *value)
{
  const char *q = *p;
  guint64 v = 0;

  if (!g_ascii_isdigit (*q))
    return FALSE;
  for (; g_ascii_isdigit (*q); q++)
    {
      if (v > (max - (guint64) (*q - '0')) / 10)
        return FALSE;
      v = v * 10 + (guint64) (*q - '0');
    }
  *p = q;
  *value = v;
  return TRUE;
}

static gboolean
is_build_id (const char *start,
             gsize       length)
{
  if (length < 8)
    return FALSE;
  for (gsize i = 0; i < length; i++)
    if (!g_ascii_isxdigit (start[i]) || g_ascii_isupper (start[i]))
      return FALSE;
  return TRUE;
}

/* The '(' that opens the group closed by the ')' at @close, scanning back
 * no further than @start; NULL if unbalanced. */
static const char *
group_start (const char *start,
             const char *close)
{
  guint level = 0;

  for (const char *p = close; p >= start; p--)
    {
      if (*p == ')')
        level++;
      else if (*p == '(' && --level == 0)
        return p;
    }
  return NULL;
}

/* "PATH[(SYMBOL+N)][(BUILD ID)]", @end the end of the line. */
static const char *
read_location (const char           *p,
               const char           *end,
               PerfmonStackTreeLine *line)
{
  if (end > p && end[-1] == ')')
    {
      const char *open = group_start (p, end - 1);

      if (open != NULL && is_build_id (open + 1, (gsize) (end - 1 - (open + 1))))
        {
          line->build_id = g_strndup (open + 1, (gsize) (end - 1 - (open + 1)));
          end = open;
        }
    }
  /* A last group that is not "(FUNCTION+OFFSET)" belongs to the path
   * (a module's path may end in " (deleted)"). */
  if (end > p && end[-1] == ')')
    {
      const char *open = group_start (p, end - 1);
      const char *plus = NULL;
      const char *digits;
      guint64 offset;

      for (const char *q = end - 2; open != NULL && q > open; q--)
        if (*q == '+')
          {
            plus = q;
            break;
          }
      digits = plus != NULL ? plus + 1 : NULL;
      if (plus != NULL && plus > open + 1 && read_decimal (&digits, G_MAXUINT64, &offset) && digits == end - 1)
        {
          line->symbol = g_strndup (open + 1, (gsize) (plus - (open + 1)));
          line->symbol_offset = offset;
          end = open;
        }
    }
  if (end == p)
    return "a frame has no path";
  if (!(end - p == 9 && strncmp (p, "[unknown]", 9) == 0))
    line->path = g_strndup (p, (gsize) (end - p));
  return NULL;
}

/* One line, @length bytes (no newline); NULL or what is wrong with it. */
static const char *
read_line (const char           *text,
           gsize                 length,
           PerfmonStackTreeLine *line)
{
  const char *p = text;
  const char *end = text + length;
  guint indent = 0;
  guint64 value;

  memset (line, 0, sizeof *line);
  if (memchr (text, '\0', length) != NULL || !g_utf8_validate (text, (gssize) length, NULL))
    return "the line is not UTF-8 text";
  while (p < end && *p == ' ')
    p++;
  indent = (guint) (p - text);
  if (p < end && g_ascii_isdigit (*p))
    {
      if (!read_decimal (&p, G_MAXUINT, &value) || p >= end || *p != ' ')
        return "a count is not a decimal number followed by a space";
      line->has_count = TRUE;
      line->count = (guint) value;
      p++;
      if (indent == 0 && (gsize) (end - p) >= strlen (PERFMON_STACK_TREE_DISPATCH_TAG) &&
          strncmp (p, PERFMON_STACK_TREE_DISPATCH_TAG, strlen (PERFMON_STACK_TREE_DISPATCH_TAG)) == 0)
        {
          line->kind = PERFMON_STACK_TREE_LINE_DISPATCH;
          line->text = g_strndup (p + strlen (PERFMON_STACK_TREE_DISPATCH_TAG),
                                  (gsize) (end - p) - strlen (PERFMON_STACK_TREE_DISPATCH_TAG));
          return NULL;
        }
    }
  if (p >= end || *p != '#')
    return "the line is neither a frame (\"[COUNT ]#NN pc\", \"#NN script\") nor \"COUNT dispatch: NAME\"";
  p++;
  if (!g_ascii_isdigit (*p) || !g_ascii_isdigit (p[1]) || !read_decimal (&p, G_MAXUINT16, &value))
    return "a frame's level is not \"#\" and at least 2 decimal digits";
  line->depth = (guint) value;
  if (line->has_count ? indent != 4 * line->depth : indent != 0)
    return "a frame's indentation is not 4 spaces per level";
  if ((gsize) (end - p) >= 8 && strncmp (p, " script ", 8) == 0)
    {
      line->kind = PERFMON_STACK_TREE_LINE_SCRIPT;
      line->text = g_strndup (p + 8, (gsize) (end - p) - 8);
      return NULL;
    }
  if ((gsize) (end - p) < 4 || strncmp (p, " pc ", 4) != 0)
    return "a frame is neither \"#NN pc PC PATH\" nor \"#NN script TEXT\"";
  p += 4;
  {
    const char *digits = p;

    while (p < end && g_ascii_isxdigit (*p) && !g_ascii_isupper (*p))
      p++;
    if (p - digits < 8 || p - digits > 16 || p >= end || *p != ' ')
      return "a frame's pc is not 8 to 16 lowercase hex digits followed by a space";
    line->pc = g_ascii_strtoull (digits, NULL, 16);
  }
  line->kind = PERFMON_STACK_TREE_LINE_FRAME;
  return read_location (p + 1, end, line);
}

static void
line_clear_func (gpointer data)
{
  _perfmon_stack_tree_line_clear (data);
}

GArray *
_perfmon_stack_tree_read_text (const char  *text,
                               const char **rest,
                               GError     **error)
{
  g_autoptr(GArray) lines = g_array_new (FALSE, TRUE, sizeof (PerfmonStackTreeLine));
  const char *p = text;
  guint number = 0;
  gboolean next_depth_max_set = FALSE;
  guint next_depth_max = 0;

  g_return_val_if_fail (text != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  g_array_set_clear_func (lines, line_clear_func);
  if (rest != NULL)
    *rest = NULL;

  while (*p != '\0')
    {
      const char *newline = strchr (p, '\n');
      gsize length = newline != NULL ? (gsize) (newline - p) : strlen (p);
      PerfmonStackTreeLine line;
      const char *problem;

      number++;
      if (length == 0)
        {
          if (rest != NULL)
            *rest = p + 1;
          break;
        }
      problem = read_line (p, length, &line);
      if (problem == NULL && lines->len > 0 &&
          line.has_count != g_array_index (lines, PerfmonStackTreeLine, 0).has_count)
        problem = "some lines have counts and some do not";
      if (problem == NULL && line.kind != PERFMON_STACK_TREE_LINE_DISPATCH &&
          line.depth > (next_depth_max_set ? next_depth_max : 0))
        problem = "a frame's level is more than one below the line before";
      if (problem == NULL && line.kind != PERFMON_STACK_TREE_LINE_DISPATCH && !line.has_count &&
          line.depth != lines->len)
        problem = "a heaviest stack's levels are not 0, 1, 2...";
      if (problem != NULL)
        {
          _perfmon_stack_tree_line_clear (&line);
          g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                       "not a stack tree: line %u: %s", number, problem);
          return NULL;
        }
      next_depth_max_set = TRUE;
      next_depth_max = line.kind == PERFMON_STACK_TREE_LINE_DISPATCH ? 0 : line.depth + 1;
      g_array_append_val (lines, line);
      if (newline == NULL)
        break;
      p = newline + 1;
    }

  return g_steal_pointer (&lines);
}
