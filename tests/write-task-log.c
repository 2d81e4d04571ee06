/* write-task-log.c: record a small task graph with the real tracer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For the tests of the task-log tools and bindings: under a key source
 * event, an idle dispatches a thread-pool job, which invokes a callback
 * back on the main thread. Writes the log to argv[1] and prints the three
 * task ids ("0x…", one per line, in chain order).
 */
#include "config.h"

#include "perfmon.h"

gboolean writer_step_one   (gpointer data);
void     writer_step_two   (gpointer item,
                            gpointer user_data);
gboolean writer_step_three (gpointer data);

typedef struct
{
  GMainLoop   *loop;
  GThreadPool *pool;
  guint64      ids[3];
} Chain;

gboolean
writer_step_one (gpointer data)
{
  Chain *chain = data;

  chain->ids[0] = perfmon_task_get_current ();
  perfmon_task_add_label ("the chain starts");
  perfmon_thread_pool_push (chain->pool, chain, NULL);
  return G_SOURCE_REMOVE;
}

void
writer_step_two (gpointer item,
                 gpointer user_data)
{
  Chain *chain = item;

  chain->ids[1] = perfmon_task_get_current ();
  perfmon_main_context_invoke (NULL, writer_step_three, chain);
}

gboolean
writer_step_three (gpointer data)
{
  Chain *chain = data;

  chain->ids[2] = perfmon_task_get_current ();
  g_main_loop_quit (chain->loop);
  return G_SOURCE_REMOVE;
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  Chain chain = { loop, NULL, { 0, } };

  if (argc != 2)
    {
      g_printerr ("usage: %s OUTPUT.tasks\n", argv[0]);
      return 2;
    }
  g_set_prgname ("write-task-log");
  chain.pool = perfmon_thread_pool_new (writer_step_two, &chain, 1, TRUE, &error);
  if (chain.pool == NULL || !perfmon_tracer_start (argv[1], &error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  perfmon_source_event_begin (PERFMON_SOURCE_EVENT_KEY);
  perfmon_idle_add (writer_step_one, &chain);
  perfmon_source_event_end ();
  g_main_loop_run (loop);
  perfmon_thread_pool_free (chain.pool, FALSE, TRUE);
  if (!perfmon_tracer_stop (&error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < 3; i++)
    g_print ("0x%" G_GINT64_MODIFIER "x\n", chain.ids[i]);
  return 0;
}
