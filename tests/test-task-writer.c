/* test-task-writer.c: the task writer on buffers made by hand, read back
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The writer (perfmon-task-writer.c) is the mirror of the reader: what it
 * makes of the recorder's copies (records in chunks, times in cycles) must
 * read back as the tasks they describe, in time order across threads.
 */
#include "config.h"

#include <string.h>
#include <unistd.h>

#include "perfmon.h"
#include "perfmon-clock-private.h"
#include "perfmon-task-log-private.h"
#include "perfmon-task-writer-private.h"

/* Named in a SYMBOL record: not static, the test links with -rdynamic. */
gboolean writer_test_callback (gpointer data);

gboolean
writer_test_callback (gpointer data)
{
  return G_SOURCE_REMOVE;
}

#define TASK_X ((G_GUINT64_CONSTANT (7) << 32) | 1)
#define TASK_Y ((G_GUINT64_CONSTANT (7) << 32) | 2)
#define TASK_Z ((G_GUINT64_CONSTANT (7) << 32) | 3)

static void
put_header (guint8                *at,
            PerfmonTaskRecordType  type,
            gsize                  size,
            guint32                tid,
            guint64                cycles)
{
  PerfmonTaskRecordHeader header = { (guint16) type, (guint16) size, tid, (gint64) cycles };

  memcpy (at, &header, sizeof header);
}

static gsize
put_dispatch (guint8  *at,
              guint32  tid,
              guint64  cycles,
              guint64  task_id,
              guint64  parent_id,
              guint64  callback)
{
  PerfmonTaskDispatchRecord record = { { 0 }, task_id, parent_id, 0, 0, 0, callback };

  memcpy (at, &record, sizeof record);
  put_header (at, PERFMON_TASK_RECORD_DISPATCH, sizeof record, tid, cycles);
  return sizeof record;
}

static gsize
put_id (guint8                *at,
        PerfmonTaskRecordType  type,
        guint32                tid,
        guint64                cycles,
        guint64                task_id)
{
  PerfmonTaskIdRecord record = { { 0 }, task_id };

  memcpy (at, &record, sizeof record);
  put_header (at, type, sizeof record, tid, cycles);
  return sizeof record;
}

/* LABEL or NAME: a task id and a text. */
static gsize
put_text (guint8                *at,
          PerfmonTaskRecordType  type,
          guint32                tid,
          guint64                cycles,
          guint64                task_id,
          const char            *text)
{
  gsize size = (sizeof (PerfmonTaskLabelRecord) + strlen (text) + 1 + 7) & ~(gsize) 7;

  memset (at, 0, size);
  memcpy (at + G_STRUCT_OFFSET (PerfmonTaskLabelRecord, task_id), &task_id, sizeof task_id);
  memcpy (at + sizeof (PerfmonTaskLabelRecord), text, strlen (text));
  put_header (at, type, size, tid, cycles);
  return size;
}

static void
test_writer_round_trip (void)
{
  guint64 now = _perfmon_clock_cycles ();
  guint64 us = (guint64) _perfmon_clock_cycles_per_us ();
  g_autofree guint8 *alpha = g_malloc0 (2 * PERFMON_TASK_CHUNK_SIZE);
  g_autofree guint8 *beta = g_malloc0 (PERFMON_TASK_CHUNK_SIZE);
  gsize at = 0;
  gsize beta_len = 0;
  PerfmonTaskWriterSession session = {
    .start_ns = 12345,
    .since_cycles = now - 5000 * us,
    .dropped_records = 7,
  };
  PerfmonTaskWriterThread threads[3] = {
    { 101, "alpha", alpha, 0 },
    { 202, "beta", beta, 0 },
    { 303, "gamma", NULL, 0 },
  };
  const char *name = "written";
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(GError) error = NULL;
  const guint8 *data;
  gsize len;
  PerfmonTaskFileHeader header;
  gint64 last_ns = G_MININT64;
  guint thread_records = 0;
  PerfmonTask *x, *y;
  gint64 begin_us, end_us;

  /* Thread alpha: X dispatched, run, then a pad to the end of the chunk
   * and a label in the next one. */
  at += put_dispatch (alpha + at, 101, now - 3000 * us, TASK_X, TASK_X,
                      (guint64) (guintptr) writer_test_callback);
  at += put_id (alpha + at, PERFMON_TASK_RECORD_BEGIN, 101, now - 1000 * us, TASK_X);
  at += put_id (alpha + at, PERFMON_TASK_RECORD_END, 101, now - 500 * us, TASK_X);
  put_header (alpha + at, 0, 0, 0, 0);
  at = PERFMON_TASK_CHUNK_SIZE;
  at += put_text (alpha + at, PERFMON_TASK_RECORD_LABEL, 101, now - 400 * us, TASK_X, "after the pad");
  threads[0].length = at;

  /* Thread beta: Z, older than since_cycles, then Y, an automatic task
   * (callback 0) that X dispatched, with its name. */
  beta_len += put_dispatch (beta + beta_len, 202, now - 10000 * us, TASK_Z, TASK_Z, 0);
  beta_len += put_dispatch (beta + beta_len, 202, now - 2000 * us, TASK_Y, TASK_X, 0);
  beta_len += put_text (beta + beta_len, PERFMON_TASK_RECORD_NAME, 202, now - 2000 * us, TASK_Y, "beta task");
  threads[1].length = beta_len;

  bytes = _perfmon_task_writer_write (&session, threads, G_N_ELEMENTS (threads));

  /* The file: its header, then records in time order, whichever thread
   * recorded them; a THREAD record for every thread, even one with no
   * records. */
  data = g_bytes_get_data (bytes, &len);
  g_assert_cmpuint (len, >=, sizeof header);
  memcpy (&header, data, sizeof header);
  g_assert_cmpmem (header.magic, sizeof header.magic, PERFMON_TASK_FILE_MAGIC, sizeof header.magic);
  g_assert_cmpuint (header.pid, ==, (guint32) getpid ());
  g_assert_cmpint (header.start_time_ns, ==, 12345);
  g_assert_cmpuint (header.dropped_records, ==, 7);
  for (gsize offset = header.header_size; offset < len;)
    {
      PerfmonTaskRecordHeader rh;

      g_assert_cmpuint (len - offset, >=, sizeof rh);
      memcpy (&rh, data + offset, sizeof rh);
      g_assert_cmpuint (rh.size, >=, sizeof rh);
      if (rh.type == PERFMON_TASK_RECORD_THREAD)
        {
          const char *thread_name = (const char *) data + offset + sizeof (PerfmonTaskThreadRecord);

          thread_records++;
          g_assert_true ((rh.tid == 101 && g_str_equal (thread_name, "alpha")) ||
                         (rh.tid == 202 && g_str_equal (thread_name, "beta")) ||
                         (rh.tid == 303 && g_str_equal (thread_name, "gamma")));
        }
      else if (rh.type != PERFMON_TASK_RECORD_SYMBOL)
        {
          g_assert_cmpint (rh.time_ns, >=, last_ns);
          last_ns = rh.time_ns;
        }
      offset += rh.size;
    }
  g_assert_cmpuint (thread_records, ==, 3);

  /* Read back: the tasks the records describe. */
  log = _perfmon_task_log_new_from_bytes (&bytes, &name, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 2);
  g_assert_null (perfmon_task_log_find_task (log, TASK_Z));
  g_assert_cmpuint (perfmon_task_log_get_dropped_records (log), ==, 7);
  g_assert_cmpuint (perfmon_task_log_get_unmatched_records (log), ==, 0);

  x = perfmon_task_log_find_task (log, TASK_X);
  g_assert_nonnull (x);
  g_assert_cmpstr (perfmon_task_get_name (x), ==, "writer_test_callback");
  g_assert_cmpstr (perfmon_task_get_thread_name (x), ==, "alpha");
  g_assert_cmpuint (perfmon_task_get_n_labels (x), ==, 1);
  g_assert_cmpstr (perfmon_task_get_label (x, 0, NULL), ==, "after the pad");
  g_assert_cmpuint (perfmon_task_get_n_runs (x), ==, 1);
  g_assert_true (perfmon_task_get_run (x, 0, &begin_us, &end_us));
  /* Cycles became monotonic time: 500 µs between BEGIN and END, give or
   * take the rate's rounding. */
  g_assert_cmpint (end_us - begin_us, >=, 490);
  g_assert_cmpint (end_us - begin_us, <=, 510);
  g_assert_cmpint (perfmon_task_get_dispatch_time (x), <, begin_us);

  y = perfmon_task_log_find_task (log, TASK_Y);
  g_assert_nonnull (y);
  g_assert_cmpstr (perfmon_task_get_name (y), ==, "beta task");
  g_assert_cmpuint (perfmon_task_get_parent_id (y), ==, TASK_X);
  g_assert_cmpint (perfmon_task_get_dispatch_time (x), <, perfmon_task_get_dispatch_time (y));
}

/* The recorder's compact records of automatic tasks: AUTO and NAME_DEF. */
static gsize
put_name_def (guint8     *at,
              guint64     cycles,
              guint32     name_id,
              const char *text)
{
  gsize size = (sizeof (PerfmonTaskRingNameRecord) + strlen (text) + 1 + 7) & ~(gsize) 7;

  memset (at, 0, size);
  memcpy (at + G_STRUCT_OFFSET (PerfmonTaskRingNameRecord, name_id), &name_id, sizeof name_id);
  memcpy (at + sizeof (PerfmonTaskRingNameRecord), text, strlen (text));
  put_header (at, (PerfmonTaskRecordType) PERFMON_TASK_RING_NAME_DEF, size, 101, cycles);
  return size;
}

static gsize
put_auto (guint8  *at,
          guint64  cycles,
          guint64  task_id,
          guint64  parent_id,
          guint32  name_id,
          guint64  ready)
{
  PerfmonTaskRingAutoRecord record = { { 0 }, task_id, parent_id, 0, 0, name_id, ready };

  memcpy (at, &record, sizeof record);
  put_header (at, (PerfmonTaskRecordType) PERFMON_TASK_RING_AUTO, sizeof record, 101, cycles);
  return sizeof record;
}

#define TASK_W ((G_GUINT64_CONSTANT (7) << 32) | 4)

static void
test_writer_automatic_tasks (void)
{
  guint64 now = _perfmon_clock_cycles ();
  guint64 us = (guint64) _perfmon_clock_cycles_per_us ();
  g_autofree guint8 *alpha = g_malloc0 (PERFMON_TASK_CHUNK_SIZE);
  gsize at = 0;
  PerfmonTaskWriterSession session = { .start_ns = 1, .since_cycles = now - 5000 * us };
  PerfmonTaskWriterThread thread = { 101, "alpha", alpha, 0 };
  const char *name = "written";
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(GError) error = NULL;
  PerfmonTask *x, *y;
  gint64 begin_us, end_us;

  /* W began before since_cycles: left out, with its END. */
  at += put_name_def (alpha + at, now - 9000 * us, 1, "first name");
  at += put_auto (alpha + at, now - 6000 * us, TASK_W, TASK_W, 1, 0);
  at += put_id (alpha + at, PERFMON_TASK_RECORD_END, 101, now - 4500 * us, TASK_W);
  /* X: ready 1000 µs before it began. */
  at += put_auto (alpha + at, now - 3000 * us, TASK_X, TASK_X, 1, now - 4000 * us);
  at += put_id (alpha + at, PERFMON_TASK_RECORD_END, 101, now - 2800 * us, TASK_X);
  /* Y, a child of X, named by a NAME_DEF written after it (a refresh: the
   * first one fell out of the ring). */
  at += put_auto (alpha + at, now - 2000 * us, TASK_Y, TASK_X, 2, 0);
  at += put_id (alpha + at, PERFMON_TASK_RECORD_END, 101, now - 1900 * us, TASK_Y);
  at += put_name_def (alpha + at, now - 1500 * us, 2, "later name");
  /* Z: a name no NAME_DEF of the copy has. Left out, with its label and
   * END. */
  at += put_auto (alpha + at, now - 1000 * us, TASK_Z, TASK_X, 3, 0);
  at += put_text (alpha + at, PERFMON_TASK_RECORD_LABEL, 101, now - 900 * us, TASK_Z, "lost");
  at += put_id (alpha + at, PERFMON_TASK_RECORD_END, 101, now - 800 * us, TASK_Z);
  thread.length = at;

  bytes = _perfmon_task_writer_write (&session, &thread, 1);
  log = _perfmon_task_log_new_from_bytes (&bytes, &name, 1, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 2);
  g_assert_cmpuint (perfmon_task_log_get_unmatched_records (log), ==, 0);
  g_assert_null (perfmon_task_log_find_task (log, TASK_W));
  g_assert_null (perfmon_task_log_find_task (log, TASK_Z));

  x = perfmon_task_log_find_task (log, TASK_X);
  g_assert_nonnull (x);
  g_assert_cmpstr (perfmon_task_get_name (x), ==, "first name");
  g_assert_true (perfmon_task_is_root (x));
  g_assert_cmpuint (perfmon_task_get_n_runs (x), ==, 1);
  g_assert_true (perfmon_task_get_run (x, 0, &begin_us, &end_us));
  g_assert_cmpint (end_us - begin_us, >=, 190);
  g_assert_cmpint (end_us - begin_us, <=, 210);
  /* Queued from when it became ready. */
  g_assert_cmpint (perfmon_task_get_queueing_time (x), >=, 990);
  g_assert_cmpint (perfmon_task_get_queueing_time (x), <=, 1010);

  y = perfmon_task_log_find_task (log, TASK_Y);
  g_assert_nonnull (y);
  g_assert_cmpstr (perfmon_task_get_name (y), ==, "later name");
  g_assert_cmpuint (perfmon_task_get_parent_id (y), ==, TASK_X);
  g_assert_cmpuint (perfmon_task_get_n_runs (y), ==, 1);
  g_assert_cmpint (perfmon_task_get_queueing_time (y), ==, 0);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/task-writer/round-trip", test_writer_round_trip);
  g_test_add_func ("/task-writer/automatic-tasks", test_writer_automatic_tasks);

  return g_test_run ();
}
