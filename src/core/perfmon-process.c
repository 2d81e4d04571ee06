/* perfmon-process.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-process-private.h"

char *
_perfmon_thread_name (gint64 tid)
{
  g_autofree char *path = g_strdup_printf ("/proc/self/task/%" G_GINT64_FORMAT "/comm", tid);
  g_autofree char *contents = NULL;

  if (!g_file_get_contents (path, &contents, NULL, NULL) || g_strstrip (contents)[0] == '\0')
    return g_strdup_printf ("%" G_GINT64_FORMAT, tid);
  return g_steal_pointer (&contents);
}

const char *
_perfmon_process_name (void)
{
  static char *fallback;
  const char *prgname = g_get_prgname ();

  /* The program's own name when it has set one, as GLib keeps it. */
  if (prgname != NULL && prgname[0] != '\0')
    return prgname;

  /* Else the base name of argv[0] (comm is cut to 15 bytes), then comm. */
  if (g_once_init_enter (&fallback))
    {
      g_autofree char *cmdline = NULL;
      char *found = NULL;

      if (g_file_get_contents ("/proc/self/cmdline", &cmdline, NULL, NULL) && cmdline[0] != '\0')
        found = g_path_get_basename (cmdline);
      else if (g_file_get_contents ("/proc/self/comm", &found, NULL, NULL))
        g_strstrip (found);
      if (found == NULL || found[0] == '\0' || g_str_equal (found, ".") || g_str_equal (found, G_DIR_SEPARATOR_S))
        {
          g_free (found);
          found = g_strdup ("unknown");
        }
      g_once_init_leave (&fallback, found);
    }

  return fallback;
}
