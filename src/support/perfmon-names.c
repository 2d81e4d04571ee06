/* perfmon-names.c: names a person can read, for the perfmon tool and
 * perfmond alike (`perfmon tasks export`, perfmond's /api/trace)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <string.h>

#include "perfmon-names.h"

static gboolean
is_module_char (char c)
{
  return g_ascii_isalnum (c) || c == '_' || c == '-' || c == '.' || c == '+';
}

char *
perfmon_names_readable (PerfmonSymbolizer       *symbolizer,
                        const char              *name,
                        PerfmonNamesModuleLookup lookup,
                        gpointer                 data,
                        PerfmonNamesModulePaths  paths_of,
                        guint                    pid,
                        gint64                   deadline)
{
  GString *out;
  const char *p;

  if (name == NULL || strstr (name, "+0x") == NULL)
    return g_strdup (name);

  out = g_string_new (NULL);
  p = name;
  while (*p != '\0')
    {
      const char *plus = strstr (p, "+0x");
      const char *start;
      const char *end;
      g_autofree char *module = NULL;
      g_autofree char *function = NULL;
      const char *path = NULL;
      const char *build_id = NULL;
      guint64 offset;
      guint64 function_offset = 0;

      if (plus == NULL)
        {
          g_string_append (out, p);
          break;
        }
      /* The module: the word before "+0x" (a file name). */
      start = plus;
      while (start > p && is_module_char (start[-1]))
        start--;
      offset = g_ascii_strtoull (plus + 3, (char **) &end, 16);
      if (start == plus || end == plus + 3 || (*end != '\0' && *end != ')' && *end != ' ' && *end != ','))
        {
          g_string_append_len (out, p, plus + 3 - p);
          p = plus + 3;
          continue;
        }
      if (deadline > 0 && g_get_monotonic_time () > deadline)
        {
          /* Out of time: the rest as written. */
          g_string_append (out, p);
          break;
        }
      module = g_strndup (start, plus - start);
      /* What the file recorded (by build id, after the process has
       * exited), else the live process's maps: the path, and the build
       * id with it (a hang report records the module's build id, as a
       * breakpad id, and not its path). */
      if (lookup == NULL || !lookup (data, module, &path, &build_id))
        path = build_id = NULL;
      if (path == NULL && paths_of != NULL)
        {
          GHashTable *paths = paths_of (pid);

          path = paths != NULL ? g_hash_table_lookup (paths, module) : NULL;
        }
      /* A callback's own address, not a return address. */
      function = perfmon_symbolizer_lookup (symbolizer, path != NULL ? path : module,
                                            build_id != NULL && build_id[0] != '\0' ? build_id : NULL, offset,
                                            FALSE, &function_offset);
      g_string_append_len (out, p, start - p);
      /* A callback is its function's start: "module+0xOFF (function)",
       * else as a stack's frame, "module+0xOFF (function+0xD)". */
      if (function != NULL && function_offset == 0)
        g_string_append_printf (out, "%s+0x%" G_GINT64_MODIFIER "x (%s)", module, offset, function);
      else if (function != NULL)
        {
          g_autofree char *frame = perfmon_format_native_frame (module, offset, function, function_offset);

          g_string_append (out, frame);
        }
      else
        g_string_append_len (out, start, end - start);
      p = end;
    }
  return g_string_free (out, FALSE);
}

gboolean
perfmon_names_task_log_module (gpointer     data,
                               const char  *module,
                               const char **path,
                               const char **build_id)
{
  PerfmonNamesTaskLogModules *modules = data;

  return perfmon_task_log_lookup_module (modules->log, modules->process, module, path, NULL, build_id);
}

typedef struct
{
  PerfmonSymbolizer      *symbolizer;
  PerfmonTaskLog         *log;
  PerfmonNamesModulePaths paths_of;
  gint64                  deadline;
} ChromeTraceNames;

static char *
slice_name (guint       process,
            const char *name,
            gpointer    user_data)
{
  ChromeTraceNames *names = user_data;
  PerfmonNamesTaskLogModules modules = { names->log, process };

  if (strstr (name, "+0x") == NULL)
    return NULL;
  return perfmon_names_readable (names->symbolizer, name, perfmon_names_task_log_module, &modules, names->paths_of, process,
                                 names->deadline);
}

char *
perfmon_names_readable_chrome_trace (PerfmonSymbolizer      *symbolizer,
                                     PerfmonTaskLog         *log,
                                     PerfmonNamesModulePaths paths_of,
                                     gint64                  deadline)
{
  ChromeTraceNames names = { symbolizer, log, paths_of, deadline };

  return perfmon_task_log_to_chrome_trace_named (log, slice_name, &names);
}
