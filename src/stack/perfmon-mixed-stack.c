/* perfmon-mixed-stack.c: a hung thread's native stack merged with its
 * labels and its Python or JavaScript frames
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "perfmon-js-stack-private.h"
#include "perfmon-mixed-stack-private.h"
#include "perfmon-python-stack-private.h"

/* Whether a native frame is the interpreter's evaluation loop, after which
 * (innermost) the script frames go: Python's, or any frame of the
 * JavaScript engine (whose functions have no names without debug files). */
static gboolean
is_eval_frame (PerfmonModules      *modules,
               const PerfmonPcInfo *info,
               gboolean             javascript)
{
  if (javascript)
    return info->module_index >= 0 &&
           g_str_has_prefix (_perfmon_modules_get_debug_name (modules, info->module_index), "libmozjs");
  return info->symbol != NULL &&
         (g_str_has_prefix (info->symbol, "_PyEval_EvalFrame") ||
          g_str_equal (info->symbol, "PyEval_EvalCode"));
}

static void
add_script_frame (PerfmonMixedStack *stack,
                  const char        *text)
{
  PerfmonMixedFrame frame = { .script = text };

  g_array_append_val (stack->frames, frame);
}

PerfmonMixedStack *
_perfmon_mixed_stack_new (const PerfmonCapturedStack *captured,
                          GPtrArray                  *label_texts,
                          GArray                     *label_addresses,
                          PerfmonMixedStackStillFunc  still_running,
                          gpointer                    data)
{
  PerfmonMixedStack *stack = g_new0 (PerfmonMixedStack, 1);
  guint next_label = 0;

  stack->frames = g_array_new (FALSE, FALSE, sizeof (PerfmonMixedFrame));
  stack->labels = g_ptr_array_ref (label_texts);

  if (captured != NULL)
    {
      gint64 deadline_us = g_get_monotonic_time () + PERFMON_SYMBOLIZE_BUDGET_MS * 1000;
      g_autofree gint *python_at = g_new0 (gint, captured->n_frames);
      GPtrArray *python_frames;
      gboolean have_python;
      gboolean javascript = FALSE;
      guint n_eval = 0;
      guint next_python = 0;

      stack->modules = _perfmon_modules_new ();
      stack->infos = g_new0 (PerfmonPcInfo, captured->n_frames);
      stack->n_infos = captured->n_frames;
      stack->script_frames = python_frames = g_ptr_array_new_with_free_func (g_free);

      /* First, while the thread is still hung: its Python frames, if it
       * runs Python, read without stalling it. */
      have_python = _perfmon_python_stack_capture (captured->thread_handle,
                                                   PERFMON_PYTHON_STACK_TIMEOUT_MS,
                                                   python_frames, &stack->script_reason);
      /* Else, in GJS, its JavaScript frames, the same way. */
      if (!have_python && stack->script_reason == NULL)
        {
          have_python = _perfmon_js_stack_capture (PERFMON_JS_STACK_TIMEOUT_MS,
                                                   python_frames, &stack->script_reason);
          javascript = TRUE;
        }
      /* Frames read after the hang ended are of other code. */
      if (have_python && !still_running (data))
        {
          have_python = FALSE;
          stack->script_reason = g_strdup_printf ("the hang ended before its %s frames were read",
                                                  javascript ? "JavaScript" : "Python");
        }

      for (guint i = 0; i < captured->n_frames; i++)
        {
          _perfmon_modules_describe_pc (stack->modules, captured->pcs[i], i > 0, deadline_us,
                                        &stack->infos[i]);
          n_eval += is_eval_frame (stack->modules, &stack->infos[i], javascript);
        }

      /* Where the Python frames go (python_at[i]: how many after native
       * frame i). An interpreter that runs each Python frame in its own
       * call of the evaluation loop (Python 3.10 and older) has one per
       * eval frame: one after each. Python 3.11 runs the Python-to-Python
       * calls inside one call, and which Python frame entered it is not
       * told: then all go after the innermost eval frame (or after the
       * innermost native frame if none is named). */
      if (have_python && python_frames->len > 0)
        {
          if (!javascript && n_eval == python_frames->len)
            {
              for (guint i = 0; i < captured->n_frames; i++)
                python_at[i] = is_eval_frame (stack->modules, &stack->infos[i], javascript);
            }
          else
            {
              guint innermost = 0;

              for (guint i = 0; i < captured->n_frames; i++)
                if (is_eval_frame (stack->modules, &stack->infos[i], javascript))
                  {
                    innermost = i;
                    break;
                  }
              python_at[innermost] = (gint) python_frames->len;
            }
        }

      /* Outermost first. A label goes right after the frame that pushed it:
       * the frames at or above its stack address (stacks grow down) are its
       * pusher and the pusher's callers. The Python frames go where
       * python_at says. */
      for (guint i = captured->n_frames; i-- > 0;)
        {
          PerfmonMixedFrame native = { .info = &stack->infos[i] };

          while (next_label < label_texts->len &&
                 g_array_index (label_addresses, guint64, next_label) > captured->sps[i])
            add_script_frame (stack, g_ptr_array_index (label_texts, next_label++));
          g_array_append_val (stack->frames, native);
          for (gint j = 0; j < python_at[i] && next_python < python_frames->len; j++)
            add_script_frame (stack, g_ptr_array_index (python_frames, next_python++));
        }
    }

  while (next_label < label_texts->len)
    add_script_frame (stack, g_ptr_array_index (label_texts, next_label++));

  return stack;
}

void
_perfmon_mixed_stack_free (PerfmonMixedStack *stack)
{
  for (guint i = 0; i < stack->n_infos; i++)
    g_free (stack->infos[i].symbol);
  g_free (stack->infos);
  g_clear_pointer (&stack->modules, _perfmon_modules_unref);
  g_clear_pointer (&stack->frames, g_array_unref);
  g_clear_pointer (&stack->script_frames, g_ptr_array_unref);
  g_clear_pointer (&stack->labels, g_ptr_array_unref);
  g_free (stack->script_reason);
  g_free (stack);
}
