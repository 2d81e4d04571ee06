/* fuzz-task-log.c: the task log reader on any file
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The input is a task log file, as one could find on disk after a crash or
 * a disk error: untrusted. It must either be refused with a PERFMON_ERROR
 * or give a log on which every question (ancestors, followers, blockers of
 * every task) and the Chrome trace work, the trace being valid JSON. A
 * crash, a sanitizer report, a g_critical() or a g_warning() is a finding.
 */
#include "config.h"

#include <json-glib/json-glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "perfmon.h"
#include "perfmon-task-log-private.h"
#include "fuzz-common.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data,
                        size_t         size)
{
  g_autoptr(GBytes) bytes = g_bytes_new (data, size);
  const char *name = "fuzz.tasks";
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonParser) parser = NULL;
  g_autofree char *trace = NULL;
  GPtrArray *tasks;

  init_once ();

  log = _perfmon_task_log_new_from_bytes (&bytes, &name, 1, &error);
  if (log == NULL)
    {
      check_error (error);
      return 0;
    }
  if (error != NULL)
    abort ();

  tasks = perfmon_task_log_get_tasks (log);
  for (guint i = 0; i < tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (tasks, i);
      guint64 id = perfmon_task_get_id (task);
      gsize n;

      if (perfmon_task_log_find_task (log, id) != task)
        abort ();
      g_free (perfmon_task_log_find_ancestors (log, id, &n));
      g_free (perfmon_task_log_find_followers (log, id, &n));
      g_free (perfmon_task_log_find_blockers (log, id, &n));
      for (guint r = 0; r < perfmon_task_get_n_runs (task); r++)
        if (!perfmon_task_get_run (task, r, NULL, NULL))
          abort ();
      if (perfmon_task_get_name (task) == NULL || perfmon_task_get_labels (task) == NULL)
        abort ();
    }

  trace = perfmon_task_log_to_chrome_trace (log);
  parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, trace, -1, NULL))
    abort ();
  return 0;
}
