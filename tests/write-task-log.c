/* write-task-log.c: record a small task graph with the real tracer
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * For the tests of the task-log tools and bindings: under a key source
 * event, an idle dispatches a thread-pool job, which invokes a callback
 * back on the main thread. Writes the log to argv[1] and prints the three
 * task ids ("0x…", one per line, in chain order).
 *
 * With "--pid PID" after the path, the log is rewritten as if a process of
 * that pid had written it (its header and the high 32 bits of every id of
 * this process): task ids of large pids, which JavaScript numbers cannot
 * hold exactly, without waiting for the kernel to hand out such a pid.
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-task-format-private.h"

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

static guint64
with_pid (guint64 id,
          guint32 old_pid,
          guint32 new_pid)
{
  return (id >> 32) == old_pid ? ((guint64) new_pid << 32) | (id & G_MAXUINT32) : id;
}

static void
patch_id (guint8  *at,
          guint32  old_pid,
          guint32  new_pid)
{
  guint64 id;

  memcpy (&id, at, sizeof id);
  id = with_pid (id, old_pid, new_pid);
  memcpy (at, &id, sizeof id);
}

static gboolean
rewrite_pid (const char  *path,
             guint32      new_pid,
             GError     **error)
{
  g_autofree char *contents = NULL;
  PerfmonTaskFileHeader header;
  gsize length;
  guint8 *data;

  if (!g_file_get_contents (path, &contents, &length, error))
    return FALSE;
  data = (guint8 *) contents;
  memcpy (&header, data, sizeof header);
  for (gsize at = header.header_size; at + sizeof (PerfmonTaskRecordHeader) <= length;)
    {
      PerfmonTaskRecordHeader record;

      memcpy (&record, data + at, sizeof record);
      /* Every record of a task has its id right after the header. */
      if (record.type != PERFMON_TASK_RECORD_SYMBOL && record.type != PERFMON_TASK_RECORD_THREAD)
        patch_id (data + at + sizeof record, header.pid, new_pid);
      if (record.type == PERFMON_TASK_RECORD_DISPATCH)
        {
          patch_id (data + at + G_STRUCT_OFFSET (PerfmonTaskDispatchRecord, parent_id), header.pid, new_pid);
          patch_id (data + at + G_STRUCT_OFFSET (PerfmonTaskDispatchRecord, source_event_id), header.pid, new_pid);
        }
      at += record.size;
    }
  header.pid = new_pid;
  memcpy (data, &header, sizeof header);
  return g_file_set_contents (path, contents, (gssize) length, error);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  Chain chain = { loop, NULL, { 0, } };
  guint64 pid = getpid ();

  if (!(argc == 2 || (argc == 4 && g_str_equal (argv[2], "--pid") &&
                      g_ascii_string_to_unsigned (argv[3], 10, 1, G_MAXUINT32, &pid, NULL))))
    {
      g_printerr ("usage: %s OUTPUT.tasks [--pid PID]\n", argv[0]);
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
  if (pid != (guint64) getpid () && !rewrite_pid (argv[1], (guint32) pid, &error))
    {
      g_printerr ("%s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < 3; i++)
    g_print ("0x%" G_GINT64_MODIFIER "x\n", with_pid (chain.ids[i], (guint32) getpid (), (guint32) pid));
  return 0;
}
