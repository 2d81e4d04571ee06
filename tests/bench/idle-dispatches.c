/* idle-dispatches.c: a GLib program that knows nothing of perfmon and
 * dispatches an empty idle N times, then quits: what bench-run.py runs,
 * plain and under "perfmon run"
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <stdlib.h>

#include <glib.h>

static guint64 left;

static gboolean
empty (gpointer data)
{
  if (--left > 0)
    return G_SOURCE_CONTINUE;
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  left = argc > 1 ? g_ascii_strtoull (argv[1], NULL, 10) : 1000000;
  if (left == 0)
    return 0;
  g_idle_add (empty, loop);
  g_main_loop_run (loop);
  return 0;
}
