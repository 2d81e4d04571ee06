/* periodic-hang.c: a GLib program that knows nothing of perfmon and hangs
 * again and again, for the tests of what "perfmon run" does on its thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: periodic-hang PERIOD_MS BUSY_MS SECONDS [GROUPS]
 * Every PERIOD_MS a timeout keeps the loop busy (spinning, on the CPU) for
 * BUSY_MS; between them a timeout does a little work now and then, so that
 * the loop iterates as a busy program's does. Quits after SECONDS. With
 * GROUPS, first dispatches that many idle sources of distinct names once
 * (under "perfmon run", as many automatic groups: a large program's).
 *
 * The loop's start and end are marked with access() calls on the paths
 * "periodic-hang: loop starts" and "periodic-hang: loop ends", which
 * strace shows: what a watched thread does around its loop (a monitor's
 * start-up and exit) can be told apart from what it does while the loop
 * runs.
 */
#include <stdlib.h>
#include <unistd.h>

#include <glib.h>

static guint busy_ms;

static gboolean
hang (gpointer data)
{
  gint64 end = g_get_monotonic_time () + (gint64) busy_ms * 1000;
  volatile guint64 spin = 0;

  while (g_get_monotonic_time () < end)
    spin++;
  return G_SOURCE_CONTINUE;
}

static gboolean
chatter (gpointer data)
{
  return G_SOURCE_CONTINUE;
}

static gboolean
run_once (gpointer data)
{
  return G_SOURCE_REMOVE;
}

static gboolean
quit (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  if (argc != 4 && argc != 5)
    {
      g_printerr ("usage: %s PERIOD_MS BUSY_MS SECONDS [GROUPS]\n", argv[0]);
      return 2;
    }
  busy_ms = (guint) atoi (argv[2]);
  for (int i = 0; argc == 5 && i < atoi (argv[4]); i++)
    {
      g_autoptr(GSource) source = g_idle_source_new ();
      g_autofree char *name = g_strdup_printf ("periodic-hang group %d", i);

      g_source_set_name (source, name);
      g_source_set_callback (source, run_once, NULL, NULL);
      g_source_attach (source, NULL);
    }
  g_timeout_add ((guint) atoi (argv[1]), hang, NULL);
  g_timeout_add (10, chatter, NULL);
  g_timeout_add_seconds ((guint) atoi (argv[3]), quit, loop);
  (void) access ("periodic-hang: loop starts", F_OK);
  g_main_loop_run (loop);
  (void) access ("periodic-hang: loop ends", F_OK);
  return 0;
}
