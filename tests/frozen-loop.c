/* frozen-loop.c: a GLib program that freezes, as programs do
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A helper program for the tests of perfmon run's frozen programs
 * (test_cli_run_frozen.py). Knows nothing of perfmon. Its loop runs a few quick timeouts, then an
 * idle callback that waits for ever (a lock never released, a server that
 * never answers): the program is frozen until the user ends it. Prints
 * "frozen-loop: frozen" when it freezes.
 */
#include <stdio.h>

#include <glib.h>

static guint ticks;

static gboolean
tick (gpointer data)
{
  return ++ticks < 5 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

/* Global, so that the stack names it. */
G_GNUC_NO_INLINE void wait_for_the_lock (void);

G_GNUC_NO_INLINE void
wait_for_the_lock (void)
{
  for (;;)
    g_usleep (G_USEC_PER_SEC / 10);
}

static gboolean
load_document (gpointer data)
{
  if (ticks < 5)
    {
      g_usleep (1000);
      return G_SOURCE_CONTINUE;
    }
  printf ("frozen-loop: frozen\n");
  fflush (stdout);
  wait_for_the_lock ();
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  GMainLoop *loop = g_main_loop_new (NULL, FALSE);

  g_set_prgname ("frozen-loop");
  g_timeout_add (2, tick, NULL);
  g_idle_add (load_document, loop);
  g_main_loop_run (loop);
  g_main_loop_unref (loop);
  return 0;
}
