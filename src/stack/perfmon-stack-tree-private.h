/* perfmon-stack-tree-private.h: aggregation of sampled stacks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-modules-private.h"
#include "perfmon-stack-capture-private.h"

G_BEGIN_DECLS

/* Default bounds of _perfmon_stack_tree_new(). */
#define PERFMON_STACK_TREE_MAX_NODES 4096
#define PERFMON_STACK_TREE_MAX_FRAMES 128

/* One native frame. The tree copies the strings; none is kept. */
typedef struct
{
  guint64     pc;             /* the absolute program counter */
  gint        module_index;   /* in the modules list, -1 outside any module */
  guint64     offset;         /* from the module's load base; unused if module_index is -1 */
  const char *symbol;         /* function name, NULL if unknown */
  guint64     symbol_offset;  /* from the function's start; unused without a symbol */
  const char *path;           /* the module's path, NULL if unknown */
  const char *build_id;       /* lowercase hex, NULL or "" if unknown */
  /* A frame of the interpreted code the native frames ran (a Python or
   * JavaScript function, "function (file:line)"), or a label: its text;
   * then the other fields are unused. NULL for a native frame. */
  const char *script;
} PerfmonStackFrame;

/* One stack kept for later: its frames outermost first, with their
 * strings, and the dispatch it was taken in (NULL: none). */
typedef struct _PerfmonStackSample PerfmonStackSample;

PerfmonStackSample *_perfmon_stack_sample_new       (const char              *dispatch);
void                _perfmon_stack_sample_free      (PerfmonStackSample      *sample);
/* Appends @frame (a copy, strings too) as the sample's new innermost frame. */
void                _perfmon_stack_sample_add_frame (PerfmonStackSample      *sample,
                                                     const PerfmonStackFrame *frame);
guint               _perfmon_stack_sample_get_n_frames (const PerfmonStackSample *sample);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonStackSample, _perfmon_stack_sample_free)

typedef struct _PerfmonStackTree PerfmonStackTree;

/* A tree of sampled stacks, as the jank seed prints them: each node is a
 * frame with the number of samples that went through it, its children the
 * frames those samples called next. Two frames are the same node when they
 * have the same parent and the same module index and offset (the same pc
 * when outside any module); the symbol, path and build id of the first one
 * are kept.
 *
 * Memory is bounded. A sample keeps its PERFMON_STACK_TREE_MAX_FRAMES
 * outermost frames (or the max_frames given to new_full()); the deeper ones
 * are counted in get_n_truncated_frames(). The tree holds at most
 * PERFMON_STACK_TREE_MAX_NODES nodes (or max_nodes); once it is full, a
 * sample still counts in the nodes that already exist along its path, and
 * its frames from the first one that would need a new node are counted in
 * get_n_dropped_frames(). Either way each node's count is the number of
 * samples that reached it, so the counts of the children of a node add up
 * to at most its count, and those of the outermost frames to at most the
 * number of samples.
 *
 * Not thread-safe: one thread at a time. */
PerfmonStackTree *_perfmon_stack_tree_new      (void);
PerfmonStackTree *_perfmon_stack_tree_new_full (guint max_nodes,
                                                guint max_frames);
void              _perfmon_stack_tree_free     (PerfmonStackTree *tree);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonStackTree, _perfmon_stack_tree_free)

/* Adds one sample: @frames is the stack OUTERMOST FIRST (frames[0] is the
 * thread's entry point, such as main, frames[@n_frames - 1] the innermost
 * frame, where the thread was), the reverse of the order in which an
 * unwinder finds them. A sample of no frames only counts as a sample. */
void              _perfmon_stack_tree_add_sample (PerfmonStackTree        *tree,
                                                  const PerfmonStackFrame *frames,
                                                  guint                    n_frames);

/* The same, for a sample taken while the thread ran the dispatch named
 * @dispatch (see _perfmon_stack_tree_to_text()); NULL: none. The name is
 * copied, as valid UTF-8 with control characters made spaces; one node
 * per distinct name, counted in the tree's nodes. */
void              _perfmon_stack_tree_add_dispatch_sample (PerfmonStackTree        *tree,
                                                           const char              *dispatch,
                                                           const PerfmonStackFrame *frames,
                                                           guint                    n_frames);

/* Adds @captured (innermost frame first, as captured) as one sample, its
 * frames described by @modules. */
void              _perfmon_stack_tree_add_captured (PerfmonStackTree           *tree,
                                                    PerfmonModules             *modules,
                                                    const PerfmonCapturedStack *captured);
/* The same, in the dispatch @dispatch (NULL: none). */
void              _perfmon_stack_tree_add_captured_in_dispatch (PerfmonStackTree           *tree,
                                                                PerfmonModules             *modules,
                                                                const char                 *dispatch,
                                                                const PerfmonCapturedStack *captured);

/* Adds @sample as one sample, in its dispatch. */
void              _perfmon_stack_tree_add_stack_sample (PerfmonStackTree         *tree,
                                                        const PerfmonStackSample *sample);

guint             _perfmon_stack_tree_get_n_samples         (PerfmonStackTree *tree);
guint             _perfmon_stack_tree_get_n_nodes           (PerfmonStackTree *tree);
/* Frames beyond max_frames in a sample, summed over the samples. */
guint64           _perfmon_stack_tree_get_n_truncated_frames (PerfmonStackTree *tree);
/* Frames not stored because the tree was full, summed over the samples. */
guint64           _perfmon_stack_tree_get_n_dropped_frames   (PerfmonStackTree *tree);

/* The tree as text, in the jank seed's format: one line per node, each
 * ending in "\n", depth first, a node's children right after it, ordered by
 * count (highest first; ties in order of first appearance):
 *
 *   <indent><count> #<depth> pc <pc> <path>[(<symbol>+<symbol offset>)][(<build id>)]
 *
 * - <indent> is 4 spaces per level, none for the outermost frames;
 * - <depth> is the level, outermost 0, in at least 2 decimal digits;
 * - <pc> is the offset in the module (the absolute pc outside any module)
 *   in lowercase hex, zero-padded to at least 8 digits;
 * - <path> is the module's path, "[unknown]" if there is none;
 * - "(<symbol>+<symbol offset>)" only when the symbol is known, the offset
 *   in decimal as in the seed ("main+396");
 * - "(<build id>)" only when the build id is known.
 *
 * A script frame (see PerfmonStackFrame.script) is the line
 *
 *   <indent><count> #<depth> script <text>
 *
 * For example:
 *
 *   10 #00 pc 000090a9 /usr/bin/app(main+396)(55679d09bcdea35b...)
 *       10 #01 pc 0000757c /usr/lib/libglib-2.0.so.0(g_main_loop_run+12)(6c3f...)
 *           7 #02 pc 00012ab0 /usr/lib/libapp.so(spell_check+40)(aa01...)
 *           3 #02 pc 00013000 /usr/lib/libapp.so(aa01...)
 *
 * Samples added in a dispatch are grouped by its name: each dispatch has a
 * header line, in the same order by count, followed by its samples' tree
 * as above (outermost frames at depth 0, no indentation):
 *
 *   <count> dispatch: <name>
 *
 * For example, for a jank in which two sources ran:
 *
 *   7 dispatch: [app] spell-check
 *   7 #00 pc 000090a9 /usr/bin/app(main+396)(55679d09bcdea35b...)
 *       7 #01 pc 00012ab0 /usr/lib/libapp.so(spell_check+40)(aa01...)
 *   3 dispatch: [gtk] gdk_frame_clock_paint_idle
 *   3 #00 pc 000090a9 /usr/bin/app(main+396)(55679d09bcdea35b...)
 *       ...
 *
 * Samples added without a dispatch are lines without a header (a tree of
 * such samples only is the seed's text as it was). "" for an empty
 * tree. */
#define PERFMON_STACK_TREE_DISPATCH_TAG "dispatch: "
char             *_perfmon_stack_tree_to_text        (PerfmonStackTree *tree);

/* The heaviest stack: starting from the heaviest outermost frame, the
 * heaviest child at each level (ties: the first to appear), down to a leaf.
 * One line per frame, outermost first, each ending in "\n", in the format
 * of _perfmon_stack_tree_to_text() without the indentation and the count:
 *
 *   #<depth> pc <pc> <path>[(<symbol>+<symbol offset>)][(<build id>)]
 *
 * Dispatches count as a level of the walk (the heaviest dispatch's heaviest
 * stack) but print no line. "" for an empty tree. */
char             *_perfmon_stack_tree_heaviest_stack (PerfmonStackTree *tree);

/* --- Reading the text back ----------------------------------------------- */

/* One line of the text of _perfmon_stack_tree_to_text() or
 * _perfmon_stack_tree_heaviest_stack(), as its strict reader gives it and
 * its writer (_perfmon_stack_tree_append_line()) takes it. */
typedef enum
{
  PERFMON_STACK_TREE_LINE_FRAME,     /* "#NN pc ..." */
  PERFMON_STACK_TREE_LINE_SCRIPT,    /* "#NN script TEXT" */
  PERFMON_STACK_TREE_LINE_DISPATCH,  /* "COUNT dispatch: NAME" */
} PerfmonStackTreeLineKind;

typedef struct
{
  PerfmonStackTreeLineKind kind;
  gboolean  has_count;     /* FALSE in a heaviest stack */
  guint     count;
  guint     depth;         /* frames and scripts */
  guint64   pc;            /* as written: the module offset, or the absolute pc */
  char     *path;          /* NULL for "[unknown]" */
  char     *symbol;        /* NULL if none */
  guint64   symbol_offset;
  char     *build_id;      /* NULL if none */
  char     *text;          /* a script's text, a dispatch's name */
} PerfmonStackTreeLine;

void    _perfmon_stack_tree_line_clear (PerfmonStackTreeLine *line);

/* Writes @line as its writer does, ending in "\n". */
void    _perfmon_stack_tree_append_line (GString                    *out,
                                         const PerfmonStackTreeLine *line);

/* The strict reader of the two texts above: reads @text up to its first
 * empty line (or its end) into an array of PerfmonStackTreeLine (cleared
 * when the array is freed). Every line must be a frame, a script frame or
 * a dispatch header; all of them with counts (a tree) or none (a heaviest
 * stack, without dispatch headers); indented by 4 spaces per level in a
 * tree, with levels that go down by at most one at a time and start again
 * from 0 after a header. @rest, if not NULL, is set to what follows the
 * empty line (the notes a stack log adds), or NULL. Errors are
 * PERFMON_ERROR_INVALID_DATA, naming the line's number and what was
 * wrong, never its text. */
GArray *_perfmon_stack_tree_read_text (const char  *text,
                                       const char **rest,
                                       GError     **error);

G_END_DECLS
