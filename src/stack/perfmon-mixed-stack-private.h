/* perfmon-mixed-stack-private.h: a hung thread's native stack merged with
 * its labels and its Python or JavaScript frames
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-modules-private.h"
#include "perfmon-stack-capture-private.h"

G_BEGIN_DECLS

/* One frame of a mixed stack: a native frame (@script NULL, @info its
 * description by the stack's modules), or a label or a Python or
 * JavaScript frame (@script its text, @info NULL). */
typedef struct
{
  const char          *script;
  const PerfmonPcInfo *info;
} PerfmonMixedFrame;

typedef struct
{
  /* Describes the native frames (their module indexes). */
  PerfmonModules *modules;
  /* Of PerfmonMixedFrame, outermost first. */
  GArray         *frames;
  /* Why the script (Python or JavaScript) frames are missing, or NULL
   * when there are none to miss. */
  char           *script_reason;

  /* Private: what the frames point into. */
  PerfmonPcInfo  *infos;
  guint           n_infos;
  GPtrArray      *script_frames;
  GPtrArray      *labels;
} PerfmonMixedStack;

/* Whether the stretch whose stack is being merged still runs: script
 * frames read after it ended are of other code. */
typedef gboolean (*PerfmonMixedStackStillFunc) (gpointer data);

/* Watchdog thread, while the thread is still hung: the mixed stack of the
 * thread whose native stack is @captured (NULL if it could not be taken:
 * then the labels alone). First reads its Python frames (or, in GJS, its
 * JavaScript frames) without stalling it, dropped if @still_running says
 * the stretch ended meanwhile; then describes the native frames (within
 * PERFMON_SYMBOLIZE_BUDGET_MS). The labels (@label_texts, outermost first,
 * each pushed at the stack address in @label_addresses, of guint64) go
 * right after the native frame that pushed them; the script frames after
 * the interpreter's evaluation frames. Takes references to @label_texts. */
PerfmonMixedStack *_perfmon_mixed_stack_new  (const PerfmonCapturedStack *captured,
                                              GPtrArray                  *label_texts,
                                              GArray                     *label_addresses,
                                              PerfmonMixedStackStillFunc  still_running,
                                              gpointer                    data);
void               _perfmon_mixed_stack_free (PerfmonMixedStack          *stack);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonMixedStack, _perfmon_mixed_stack_free)

G_END_DECLS
