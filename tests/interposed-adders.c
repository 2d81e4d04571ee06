/* interposed-adders.c: a GLib program that knows nothing of perfmon, for
 * the tests of "perfmon run": the adders that the preload module
 * reimplements (g_idle_add*, g_timeout_add*, g_timeout_add_seconds*) must
 * behave as GLib's own. Exits 0 if they do, 1 with a message if not.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <glib.h>

static guint n_failures;
static guint n_called;

static void
expect_priority (guint       id,
                 gint        priority,
                 const char *what)
{
  GSource *source = g_main_context_find_source_by_id (NULL, id);

  if (source == NULL || g_source_get_priority (source) != priority)
    {
      g_printerr ("interposed-adders: %s: priority %d, expected %d\n", what,
                  source != NULL ? g_source_get_priority (source) : -1, priority);
      n_failures++;
    }
}

static gboolean
count (gpointer data)
{
  n_called++;
  return G_SOURCE_REMOVE;
}

static void
destroyed (gpointer data)
{
  *(gboolean *) data = TRUE;
}

int
main (void)
{
  gboolean notified = FALSE;

  expect_priority (g_idle_add (count, NULL), G_PRIORITY_DEFAULT_IDLE, "g_idle_add");
  expect_priority (g_idle_add_full (G_PRIORITY_DEFAULT, count, &notified, destroyed),
                   G_PRIORITY_DEFAULT, "g_idle_add_full");
  expect_priority (g_timeout_add (1, count, NULL), G_PRIORITY_DEFAULT, "g_timeout_add");
  expect_priority (g_timeout_add_full (G_PRIORITY_HIGH, 1, count, NULL, NULL), G_PRIORITY_HIGH,
                   "g_timeout_add_full");
  expect_priority (g_timeout_add_seconds (0, count, NULL), G_PRIORITY_DEFAULT, "g_timeout_add_seconds");
  expect_priority (g_timeout_add_seconds_full (G_PRIORITY_LOW, 0, count, NULL, NULL), G_PRIORITY_LOW,
                   "g_timeout_add_seconds_full");

  while (n_called < 6)
    g_main_context_iteration (NULL, TRUE);
  if (!notified)
    {
      g_printerr ("interposed-adders: the destroy notify was not called\n");
      n_failures++;
    }
  g_print ("interposed-adders: %u failures\n", n_failures);
  return n_failures == 0 ? 0 : 1;
}
