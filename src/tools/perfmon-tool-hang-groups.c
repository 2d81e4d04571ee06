/* perfmon-tool-hang-groups.c: hangs of one runnable and one stack, merged
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A program that hangs the same way again and again (a Python busy loop
 * caught 21 times) made a summary of one block per hang, each a screenful
 * of the same stack. Here identical hangs become one block with a count
 * and a duration range. Identical means: the same runnable, the same
 * labels, and the same frames once reduced to their functions, since a
 * sampled stack stops at a different instruction of the same loop each
 * time; in a Python or JavaScript stack, its script frames alone (the
 * native frames are the interpreter at work, caught at another step each
 * time).
 */
#include "config.h"

#include <string.h>

#include "perfmon-frame-function.h"
#include "perfmon-tool-hang-groups.h"

/* "busy (/tmp/busy.py:7)": a Python or JavaScript frame; native ones have
 * a "+0x" offset, labels no "(file:line)". */
static gboolean
is_script_frame (const char *frame)
{
  const char *open = strrchr (frame, '(');
  const char *colon = strrchr (frame, ':');
  gsize length = strlen (frame);

  if (strstr (frame, "+0x") != NULL || open == NULL || colon == NULL || colon < open ||
      length < 3 || frame[length - 1] != ')')
    return FALSE;
  for (const char *p = colon + 1; p < frame + length - 1; p++)
    if (!g_ascii_isdigit (*p))
      return FALSE;
  return colon + 1 < frame + length - 1;
}

static char *
hang_key (PerfmonHangReport *report)
{
  g_auto(GStrv) stack = perfmon_hang_report_dup_stack (report);
  const char * const *labels = perfmon_hang_report_get_pseudo_stack (report);
  GString *key = g_string_new (perfmon_hang_report_get_runnable_name (report));
  gboolean have_script = FALSE;

  g_string_append_c (key, '\n');
  for (guint i = 0; labels[i] != NULL; i++)
    g_string_append_printf (key, "%s\x1f", labels[i]);
  g_string_append_c (key, '\n');
  /* In a Python or JavaScript stack, the native frames are the
   * interpreter at work, caught at another step each time: the script
   * frames say where the program was. */
  for (guint i = 0; stack[i] != NULL; i++)
    have_script = have_script || is_script_frame (stack[i]);
  for (guint i = 0; stack[i] != NULL; i++)
    {
      g_autofree char *function = NULL;

      if (have_script && !is_script_frame (stack[i]))
        continue;
      function = perfmon_frame_function (stack[i]);
      g_string_append_printf (key, "%s\x1f", function);
    }
  return g_string_free (key, FALSE);
}

static void
hang_group_free (PerfmonToolHangGroup *group)
{
  perfmon_hang_report_unref (group->first);
  g_free (group);
}

GPtrArray *
perfmon_tool_group_hangs (GPtrArray *reports)
{
  GPtrArray *groups = g_ptr_array_new_with_free_func ((GDestroyNotify) hang_group_free);
  g_autoptr(GHashTable) by_key = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  for (guint i = 0; i < reports->len; i++)
    {
      PerfmonHangReport *report = g_ptr_array_index (reports, i);
      char *key = hang_key (report);
      PerfmonToolHangGroup *group = g_hash_table_lookup (by_key, key);
      double ms = perfmon_hang_report_get_duration (report);

      if (group == NULL)
        {
          group = g_new0 (PerfmonToolHangGroup, 1);
          group->first = perfmon_hang_report_ref (report);
          group->min_ms = group->max_ms = ms;
          g_ptr_array_add (groups, group);
          g_hash_table_insert (by_key, key, group);
        }
      else
        {
          g_free (key);
          group->min_ms = MIN (group->min_ms, ms);
          group->max_ms = MAX (group->max_ms, ms);
        }
      group->count++;
    }
  return groups;
}
