/* perfmon-annotations.c: the process's annotations, carried by every hang
 * caught while they are in force
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "perfmon-annotations-private.h"
#include "perfmon-hang-monitor.h"

static GMutex annotations_lock;
static GPtrArray *annotation_pairs;   /* key, value, key, value, ... */

/**
 * perfmon_annotate:
 * @key: the annotation's name, e.g. "UserInteracting"
 * @value: (nullable): its value, e.g. "true"; %NULL removes the annotation
 *
 * Sets an annotation of the process: every hang caught from now on carries
 * `[@key, @value]` in its annotations, until the annotation is changed or
 * removed. Any thread may call it; it takes a lock, so keep it off paths
 * that run on every iteration.
 *
 * Since: 0.1
 */
void
perfmon_annotate (const char *key,
                  const char *value)
{
  g_return_if_fail (key != NULL);

  g_mutex_lock (&annotations_lock);
  if (annotation_pairs == NULL)
    annotation_pairs = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < annotation_pairs->len; i += 2)
    if (g_str_equal (g_ptr_array_index (annotation_pairs, i), key))
      {
        g_ptr_array_remove_range (annotation_pairs, i, 2);
        break;
      }
  if (value != NULL)
    {
      g_ptr_array_add (annotation_pairs, g_strdup (key));
      g_ptr_array_add (annotation_pairs, g_strdup (value));
    }
  g_mutex_unlock (&annotations_lock);
}

void
_perfmon_annotate_report (PerfmonHangReport *report)
{
  g_mutex_lock (&annotations_lock);
  if (annotation_pairs != NULL)
    for (guint i = 0; i < annotation_pairs->len; i += 2)
      _perfmon_hang_report_annotate (report, g_ptr_array_index (annotation_pairs, i),
                                     g_ptr_array_index (annotation_pairs, i + 1));
  g_mutex_unlock (&annotations_lock);
}
