/* uninstrumented-loop.c: a GLib program that knows nothing of perfmon, for
 * the tests of "perfmon run"
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A few quick timeouts, then an idle that blocks the loop for 300 ms (a
 * hang at any threshold under that) and quits it from inside the same
 * dispatch. Exits with status 3, so that the tests see "perfmon run" pass
 * the command's status on.
 *
 * With an argument N, the loop sleeps N seconds after the block instead,
 * with nothing to do: the hang must reach perfmon while the loop sleeps.
 */
#include <stdlib.h>

#include <glib.h>

#define BLOCK_MS 300
#define EXIT_STATUS 3

static guint ticks;
static guint linger_s;

static gboolean
tick (gpointer data)
{
  return ++ticks < 5 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static gboolean
quit (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

static gboolean
block_then_quit (gpointer data)
{
  /* Only after the quick timeouts ran: the loop has iterated. */
  if (ticks < 5)
    {
      g_usleep (1000);
      return G_SOURCE_CONTINUE;
    }
  g_usleep (BLOCK_MS * 1000);
  if (linger_s > 0)
    g_timeout_add_seconds (linger_s, quit, data);
  else
    g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  GMainLoop *loop = g_main_loop_new (NULL, FALSE);

  if (argc > 1)
    linger_s = (guint) atoi (argv[1]);
  g_set_prgname ("uninstrumented-loop");
  g_timeout_add (2, tick, NULL);
  g_idle_add (block_then_quit, loop);
  g_main_loop_run (loop);
  g_main_loop_unref (loop);

  g_print ("uninstrumented-loop: done after %u ticks\n", ticks);
  return EXIT_STATUS;
}
