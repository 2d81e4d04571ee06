/* test-task-log.c: PerfmonTaskLog on logs the real tracer wrote
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "perfmon.h"
#include "perfmon-task-format-private.h"
#include "perfmon-test-dirs.h"
#include "perfmon-chrome-trace-test.h"

/* Named in SYMBOL records: not static, the test links with -rdynamic. */
gboolean log_step_one   (gpointer data);
void     log_step_two   (gpointer item,
                         gpointer user_data);
gboolean log_step_three (gpointer data);
gboolean log_blocker    (gpointer data);
gboolean log_repeating  (gpointer data);

typedef struct
{
  GMainLoop   *loop;
  GThreadPool *pool;
  guint64      step[3];
  guint64      blocker;
  gint         blocker_running;     /* atomic */
  gint         step_three_queued;   /* atomic */
} Chain;

/* Main thread: queues the blocker here and step two on the pool. */
gboolean
log_step_one (gpointer data)
{
  Chain *chain = data;

  chain->step[0] = perfmon_task_get_current ();
  perfmon_task_add_label ("step %d", 1);
  perfmon_idle_add (log_blocker, chain);
  g_assert_true (perfmon_thread_pool_push (chain->pool, chain, NULL));
  return G_SOURCE_REMOVE;
}

/* Main thread: runs while step three waits in the queue behind it. */
gboolean
log_blocker (gpointer data)
{
  Chain *chain = data;

  chain->blocker = perfmon_task_get_current ();
  g_atomic_int_set (&chain->blocker_running, TRUE);
  while (!g_atomic_int_get (&chain->step_three_queued))
    g_usleep (1000);
  g_usleep (2000);
  return G_SOURCE_REMOVE;
}

/* Pool thread: queues step three once the blocker holds the main thread. */
void
log_step_two (gpointer item,
              gpointer user_data)
{
  Chain *chain = item;

  chain->step[1] = perfmon_task_get_current ();
  while (!g_atomic_int_get (&chain->blocker_running))
    g_usleep (1000);
  perfmon_main_context_invoke (NULL, log_step_three, chain);
  g_atomic_int_set (&chain->step_three_queued, TRUE);
}

gboolean
log_step_three (gpointer data)
{
  Chain *chain = data;

  chain->step[2] = perfmon_task_get_current ();
  perfmon_task_add_label ("step %d", 3);
  g_main_loop_quit (chain->loop);
  return G_SOURCE_REMOVE;
}

typedef struct
{
  char   *dir;
  char   *path;
  Chain   chain;
  guint64 source_event;
} Fixture;

static void
record_chain (Fixture *fixture)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  Chain *chain = &fixture->chain;

  chain->loop = loop;
  chain->pool = perfmon_thread_pool_new (log_step_two, chain, 1, TRUE, &error);
  g_assert_no_error (error);
  g_assert_true (perfmon_tracer_start (fixture->path, &error));
  g_assert_no_error (error);
  fixture->source_event = perfmon_source_event_begin (PERFMON_SOURCE_EVENT_KEY);
  perfmon_idle_add (log_step_one, chain);
  perfmon_source_event_end ();
  g_main_loop_run (loop);
  perfmon_thread_pool_free (chain->pool, FALSE, TRUE);
  g_assert_true (perfmon_tracer_stop (&error));
  g_assert_no_error (error);
  chain->loop = NULL;
}

static void
fixture_set_up (Fixture       *fixture,
                gconstpointer  data)
{
  fixture->dir = test_make_tmp_dir ("perfmon-task-log-XXXXXX");
  fixture->path = g_build_filename (fixture->dir, "chain.tasks", NULL);
  record_chain (fixture);
}

static void
fixture_tear_down (Fixture       *fixture,
                   gconstpointer  data)
{
  test_remove_tree (fixture->dir);
  g_free (fixture->path);
  g_free (fixture->dir);
}

static gboolean
ids_contain (const guint64 *ids,
             gsize          n_ids,
             guint64        id)
{
  for (gsize i = 0; i < n_ids; i++)
    if (ids[i] == id)
      return TRUE;
  return FALSE;
}

static void
test_chain (Fixture       *fixture,
            gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_file (fixture->path, &error);
  const Chain *chain = &fixture->chain;
  const char *names[] = { "log_step_one", "log_step_two", "log_step_three" };
  PerfmonTask *steps[3];
  PerfmonTask *blocker;
  g_autofree guint64 *ancestors = NULL;
  g_autofree guint64 *followers = NULL;
  g_autofree guint64 *blockers = NULL;
  g_autofree guint64 *none = NULL;
  gsize n_ancestors, n_followers, n_blockers, n_none;
  gint64 begin, end;

  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 4);
  g_assert_cmpuint (perfmon_task_log_get_dropped_records (log), ==, 0);
  g_assert_cmpuint (perfmon_task_log_get_unmatched_records (log), ==, 0);

  for (guint i = 0; i < 3; i++)
    {
      steps[i] = perfmon_task_log_find_task (log, chain->step[i]);
      g_assert_nonnull (steps[i]);
      g_assert_cmpstr (perfmon_task_get_name (steps[i]), ==, names[i]);
      g_assert_cmpuint (perfmon_task_get_source_event_id (steps[i]), ==, fixture->source_event);
      g_assert_cmpint (perfmon_task_get_source_event_type (steps[i]), ==, PERFMON_SOURCE_EVENT_KEY);
      g_assert_cmpuint (perfmon_task_get_process (steps[i]), ==, (guint) getpid ());
      g_assert_cmpuint (perfmon_task_get_n_runs (steps[i]), ==, 1);
      g_assert_true (perfmon_task_get_run (steps[i], 0, &begin, &end));
      g_assert_cmpint (begin, ==, perfmon_task_get_begin_time (steps[i]));
      g_assert_cmpint (end, ==, perfmon_task_get_end_time (steps[i]));
      g_assert_cmpint (perfmon_task_get_dispatch_time (steps[i]), <=, begin);
      g_assert_cmpint (begin, <=, end);
      /* Each is rounded down to µs from the file's ns on its own. */
      g_assert_cmpint (ABS (perfmon_task_get_queueing_time (steps[i]) -
                            (begin - perfmon_task_get_dispatch_time (steps[i]))), <=, 1);
    }
  g_assert_true (perfmon_task_is_root (steps[0]));
  g_assert_cmpuint (perfmon_task_get_parent_id (steps[1]), ==, chain->step[0]);
  g_assert_cmpuint (perfmon_task_get_parent_id (steps[2]), ==, chain->step[1]);
  g_assert_cmpuint (perfmon_task_get_thread (steps[0]), ==, perfmon_task_get_thread (steps[2]));
  g_assert_cmpuint (perfmon_task_get_thread (steps[0]), !=, perfmon_task_get_thread (steps[1]));
  g_assert_cmpuint (perfmon_task_get_dispatch_thread (steps[2]), ==, perfmon_task_get_thread (steps[1]));
  g_assert_cmpuint (perfmon_task_get_n_labels (steps[2]), ==, 1);
  g_assert_cmpstr (perfmon_task_get_labels (steps[2])[0], ==, "step 3");

  /* The seed's questions. */
  ancestors = perfmon_task_log_find_ancestors (log, chain->step[2], &n_ancestors);
  g_assert_cmpuint (n_ancestors, ==, 2);
  g_assert_cmpuint (ancestors[0], ==, chain->step[1]);
  g_assert_cmpuint (ancestors[1], ==, chain->step[0]);

  followers = perfmon_task_log_find_followers (log, chain->step[0], &n_followers);
  g_assert_cmpuint (n_followers, ==, 3);
  g_assert_true (ids_contain (followers, n_followers, chain->step[1]));
  g_assert_true (ids_contain (followers, n_followers, chain->step[2]));
  g_assert_true (ids_contain (followers, n_followers, chain->blocker));

  /* Step three was queued while the blocker ran on its thread. */
  blocker = perfmon_task_log_find_task (log, chain->blocker);
  g_assert_nonnull (blocker);
  g_assert_cmpstr (perfmon_task_get_name (blocker), ==, "log_blocker");
  blockers = perfmon_task_log_find_blockers (log, chain->step[2], &n_blockers);
  g_assert_cmpuint (n_blockers, ==, 1);
  g_assert_cmpuint (blockers[0], ==, chain->blocker);
  /* So it waited at least until the blocker ended. */
  g_assert_cmpint (perfmon_task_get_begin_time (steps[2]), >=, perfmon_task_get_end_time (blocker));
  g_assert_cmpint (perfmon_task_get_queueing_time (steps[2]) + 1, >=,
                   perfmon_task_get_end_time (blocker) - perfmon_task_get_dispatch_time (steps[2]));
  /* Step two ran alone on its pool thread. */
  g_free (g_steal_pointer (&blockers));
  blockers = perfmon_task_log_find_blockers (log, chain->step[1], &n_blockers);
  g_assert_cmpuint (n_blockers, ==, 0);

  none = perfmon_task_log_find_ancestors (log, 42, &n_none);
  g_assert_cmpuint (n_none, ==, 0);
  g_assert_null (perfmon_task_log_find_task (log, 42));
}

gboolean
log_repeating (gpointer data)
{
  guint *runs = data;

  return ++*runs < 3 ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE;
}

static void
test_runs (Fixture       *fixture,
           gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename (fixture->dir, "repeat.tasks", NULL);
  g_autoptr(PerfmonTaskLog) log = NULL;
  guint runs = 0;
  PerfmonTask *task = NULL;
  gint64 previous_end = 0;

  g_assert_true (perfmon_tracer_start (path, &error));
  perfmon_timeout_add (1, log_repeating, &runs);
  while (runs < 3)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (perfmon_tracer_stop (&error));

  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 1);
  task = g_ptr_array_index (perfmon_task_log_get_tasks (log), 0);
  g_assert_cmpstr (perfmon_task_get_name (task), ==, "log_repeating");
  g_assert_cmpuint (perfmon_task_get_n_runs (task), ==, 3);
  for (guint i = 0; i < 3; i++)
    {
      gint64 begin, end;

      g_assert_true (perfmon_task_get_run (task, i, &begin, &end));
      g_assert_cmpint (begin, >=, previous_end);
      g_assert_cmpint (end, >=, begin);
      previous_end = end;
    }
  g_assert_false (perfmon_task_get_run (task, 3, NULL, NULL));
}

static char *
task_id_text (guint64 id)
{
  return g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", id);
}

static void
test_chrome_trace (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_file (fixture->path, &error);
  g_autoptr(GPtrArray) flow_targets = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autofree char *json = NULL;
  JsonArray *events;
  guint n_slices = 0, n_labels = 0, n_thread_names = 0;

  g_assert_no_error (error);
  json = perfmon_task_log_to_chrome_trace (log);

  /* One flow per task whose parent ran, from the parent's run: the
   * blocker's and step two's (from step one's run) and step three's (from
   * step two's, on the pool thread). Step one is a root task: none.
   * test_check_chrome_trace() checks that each starts on the parent. */
  g_assert_cmpuint (test_check_chrome_trace (json, "dispatch", flow_targets), ==, 3);
  {
    g_autofree char *blocker = task_id_text (fixture->chain.blocker);
    g_autofree char *two = task_id_text (fixture->chain.step[1]);
    g_autofree char *three = task_id_text (fixture->chain.step[2]);

    g_assert_true (g_ptr_array_find_with_equal_func (flow_targets, blocker, g_str_equal, NULL));
    g_assert_true (g_ptr_array_find_with_equal_func (flow_targets, two, g_str_equal, NULL));
    g_assert_true (g_ptr_array_find_with_equal_func (flow_targets, three, g_str_equal, NULL));
  }

  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_no_error (error);
  events = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "traceEvents");
  for (guint i = 0; i < json_array_get_length (events); i++)
    {
      JsonObject *event = json_array_get_object_element (events, i);
      const char *phase = json_object_get_string_member (event, "ph");

      if (g_str_equal (phase, "X"))
        {
          n_slices++;
          g_assert_true (json_object_has_member (json_object_get_object_member (event, "args"), "task_id"));
        }
      else if (g_str_equal (phase, "i"))
        n_labels++;
      else if (g_str_equal (phase, "M") &&
               g_str_equal (json_object_get_string_member (event, "name"), "thread_name"))
        n_thread_names++;
    }

  /* One slice per run. */
  g_assert_cmpuint (n_slices, ==, 4);
  g_assert_cmpuint (n_labels, ==, 2);
  g_assert_cmpuint (n_thread_names, >=, 1);
}

/* --- corrupt files ------------------------------------------------------ */

static GBytes *
read_bytes (const char *path)
{
  g_autoptr(GError) error = NULL;
  char *contents;
  gsize len;

  g_assert_true (g_file_get_contents (path, &contents, &len, &error));
  return g_bytes_new_take (contents, len);
}

static gsize
find_record (GBytes *bytes,
             guint   type)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  PerfmonTaskFileHeader header;
  gsize offset;

  memcpy (&header, data, sizeof header);
  for (offset = header.header_size; offset < len; )
    {
      PerfmonTaskRecordHeader record;

      memcpy (&record, data + offset, sizeof record);
      if (record.type == type)
        return offset;
      offset += record.size;
    }
  g_error ("no record of type %u", type);
}

typedef void (*Corrupt) (guint8 *data, gsize *len, GBytes *original);

static void
assert_rejected (Fixture    *fixture,
                 Corrupt     corrupt,
                 gint        code,
                 const char *field)
{
  g_autoptr(GBytes) original = read_bytes (fixture->path);
  g_autofree char *path = g_build_filename (fixture->dir, "corrupt.tasks", NULL);
  gsize len = g_bytes_get_size (original);
  g_autofree guint8 *data = g_memdup2 (g_bytes_get_data (original, NULL), len);
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;

  corrupt (data, &len, original);
  g_assert_true (g_file_set_contents (path, (const char *) data, len, NULL));
  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_null (log);
  g_assert_error (error, PERFMON_ERROR, code);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, path));
  g_assert_nonnull (strstr (error->message, field));
}

static void
corrupt_magic (guint8 *data, gsize *len, GBytes *original)
{
  data[0] = 'X';
}

static void
corrupt_version (guint8 *data, gsize *len, GBytes *original)
{
  guint32 version = 2;

  memcpy (data + G_STRUCT_OFFSET (PerfmonTaskFileHeader, version), &version, sizeof version);
}

static void
corrupt_byte_order (guint8 *data, gsize *len, GBytes *original)
{
  guint32 mark = GUINT32_SWAP_LE_BE (PERFMON_TASK_FILE_BYTE_ORDER_MARK);

  memcpy (data + G_STRUCT_OFFSET (PerfmonTaskFileHeader, byte_order_mark), &mark, sizeof mark);
}

static void
corrupt_header_size (guint8 *data, gsize *len, GBytes *original)
{
  guint32 size = 12;

  memcpy (data + G_STRUCT_OFFSET (PerfmonTaskFileHeader, header_size), &size, sizeof size);
}

static void
truncate_header (guint8 *data, gsize *len, GBytes *original)
{
  *len = sizeof (PerfmonTaskFileHeader) - 1;
}

static void
truncate_record (guint8 *data, gsize *len, GBytes *original)
{
  *len = find_record (original, PERFMON_TASK_RECORD_BEGIN) + 20;
}

static void
misalign_record (guint8 *data, gsize *len, GBytes *original)
{
  gsize at = find_record (original, PERFMON_TASK_RECORD_END);
  guint16 size = 20;

  memcpy (data + at + G_STRUCT_OFFSET (PerfmonTaskRecordHeader, size), &size, sizeof size);
}

static void
shorten_dispatch (guint8 *data, gsize *len, GBytes *original)
{
  gsize at = find_record (original, PERFMON_TASK_RECORD_DISPATCH);
  guint16 size = 24;

  memcpy (data + at + G_STRUCT_OFFSET (PerfmonTaskRecordHeader, size), &size, sizeof size);
}

static void
unterminate_label (guint8 *data, gsize *len, GBytes *original)
{
  gsize at = find_record (original, PERFMON_TASK_RECORD_LABEL);
  PerfmonTaskRecordHeader record;

  memcpy (&record, data + at, sizeof record);
  memset (data + at + sizeof (PerfmonTaskLabelRecord), 'x', record.size - sizeof (PerfmonTaskLabelRecord));
}

static void
zero_size (guint8 *data, gsize *len, GBytes *original)
{
  gsize at = find_record (original, PERFMON_TASK_RECORD_BEGIN);

  memset (data + at + G_STRUCT_OFFSET (PerfmonTaskRecordHeader, size), 0, sizeof (guint16));
}

static void
unterminate_thread_name (guint8 *data, gsize *len, GBytes *original)
{
  gsize at = find_record (original, PERFMON_TASK_RECORD_THREAD);
  PerfmonTaskRecordHeader record;

  memcpy (&record, data + at, sizeof record);
  memset (data + at + sizeof (PerfmonTaskThreadRecord), 'x', record.size - sizeof (PerfmonTaskThreadRecord));
}

/* Times at the ends of gint64 (a corrupt or hostile file the reader
 * accepts): the Chrome trace neither overflows (UBSan runs this) nor has a
 * negative ts, and queueing times stay sane. */
static void
test_chrome_trace_extreme_times (Fixture       *fixture,
                                 gconstpointer  data)
{
  static const gint64 extremes[] = { G_MININT64, G_MAXINT64, G_MININT64 + 1, -1, G_MAXINT64 - 1 };
  g_autoptr(GBytes) original = read_bytes (fixture->path);
  g_autofree char *path = g_build_filename (fixture->dir, "extreme.tasks", NULL);
  gsize len = g_bytes_get_size (original);
  g_autofree guint8 *bytes = g_memdup2 (g_bytes_get_data (original, NULL), len);
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autofree char *json = NULL;
  PerfmonTaskFileHeader header;
  JsonArray *events;
  guint n = 0;

  memcpy (&header, bytes, sizeof header);
  for (gsize offset = header.header_size; offset < len; )
    {
      PerfmonTaskRecordHeader record;

      memcpy (&record, bytes + offset, sizeof record);
      record.time_ns = extremes[n++ % G_N_ELEMENTS (extremes)];
      memcpy (bytes + offset, &record, sizeof record);
      offset += record.size;
    }
  g_assert_true (g_file_set_contents (path, (const char *) bytes, len, NULL));

  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_no_error (error);
  json = perfmon_task_log_to_chrome_trace (log);
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_no_error (error);
  events = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)), "traceEvents");
  for (guint i = 0; i < json_array_get_length (events); i++)
    {
      JsonObject *event = json_array_get_object_element (events, i);

      if (json_object_has_member (event, "ts"))
        g_assert_cmpfloat (json_object_get_double_member (event, "ts"), >=, 0.0);
      if (json_object_has_member (event, "dur"))
        g_assert_cmpfloat (json_object_get_double_member (event, "dur"), >=, 0.0);
    }
  for (guint i = 0; i < perfmon_task_log_get_tasks (log)->len; i++)
    g_assert_cmpint (perfmon_task_get_queueing_time (g_ptr_array_index (perfmon_task_log_get_tasks (log), i)), >=, -1);
}

static void
test_corrupt (Fixture       *fixture,
              gconstpointer  data)
{
  assert_rejected (fixture, corrupt_magic, PERFMON_ERROR_INVALID_DATA, "magic");
  assert_rejected (fixture, corrupt_version, PERFMON_ERROR_UNSUPPORTED_VERSION, "version");
  assert_rejected (fixture, corrupt_byte_order, PERFMON_ERROR_UNSUPPORTED_VERSION, "byte order");
  assert_rejected (fixture, corrupt_header_size, PERFMON_ERROR_INVALID_DATA, "header_size");
  assert_rejected (fixture, truncate_header, PERFMON_ERROR_INVALID_DATA, "header");
  assert_rejected (fixture, truncate_record, PERFMON_ERROR_INVALID_DATA, "past the end");
  assert_rejected (fixture, misalign_record, PERFMON_ERROR_INVALID_DATA, "multiple of 8");
  assert_rejected (fixture, shorten_dispatch, PERFMON_ERROR_INVALID_DATA, "too short for a DISPATCH");
  assert_rejected (fixture, unterminate_label, PERFMON_ERROR_INVALID_DATA, "text");
  /* A size of 0 would make the reader loop on one record forever. */
  assert_rejected (fixture, zero_size, PERFMON_ERROR_INVALID_DATA, "at least 16");
  assert_rejected (fixture, unterminate_thread_name, PERFMON_ERROR_INVALID_DATA, "thread name");
}

/* A record type of a later version is skipped, not an error. */
static void
test_unknown_record_type (Fixture       *fixture,
                          gconstpointer  data)
{
  g_autoptr(GBytes) original = read_bytes (fixture->path);
  g_autofree char *path = g_build_filename (fixture->dir, "later.tasks", NULL);
  gsize len = g_bytes_get_size (original);
  g_autofree guint8 *bytes = g_memdup2 (g_bytes_get_data (original, NULL), len);
  gsize at = find_record (original, PERFMON_TASK_RECORD_LABEL);
  guint16 type = 99;
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;

  memcpy (bytes + at + G_STRUCT_OFFSET (PerfmonTaskRecordHeader, type), &type, sizeof type);
  g_assert_true (g_file_set_contents (path, (const char *) bytes, len, NULL));
  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_task_log_get_tasks (log)->len, ==, 4);
}

/* The log of @original with one MODULE record appended: @base, then
 * @strings (@length bytes, the name, path and build id with their NULs,
 * or anything else) and padding. */
static char *
with_module_record (Fixture    *fixture,
                    GBytes     *original,
                    const char *file_name,
                    guint64     base,
                    const char *strings,
                    gsize       length)
{
  char *path = g_build_filename (fixture->dir, file_name, NULL);
  gsize size = (sizeof (PerfmonTaskModuleRecord) + length + 7) & ~(gsize) 7;
  g_autoptr(GByteArray) bytes = g_byte_array_new ();
  PerfmonTaskModuleRecord record = { { PERFMON_TASK_RECORD_MODULE, (guint16) size, 0, 1 }, base };
  static const guint8 zeros[8];

  g_byte_array_append (bytes, g_bytes_get_data (original, NULL), g_bytes_get_size (original));
  g_byte_array_append (bytes, (const guint8 *) &record, sizeof record);
  g_byte_array_append (bytes, (const guint8 *) strings, length);
  g_byte_array_append (bytes, zeros, size - sizeof record - length);
  g_assert_true (g_file_set_contents (path, (const char *) bytes->data, bytes->len, NULL));
  return path;
}

/* MODULE records: what the file says of the modules its "module+0x…"
 * names refer to, per process, checked strictly. */
static void
test_module_records (Fixture       *fixture,
                     gconstpointer  data)
{
  static const char good[] = "prog\0/usr/bin/prog\0" "0123456789abcdef";
  static const struct {
    const char *strings;
    gsize       length;
    const char *field;
  } bad[] = {
#define WITH_NUL(text) text, sizeof text
    /* 24 bytes, no NUL at the end, no padding: the build id runs out. */
    { "prog\0/usr/bin/prog\0" "01234", sizeof "prog\0/usr/bin/prog\0" "01234" - 1, "strings" },
    { WITH_NUL ("prog\0/usr/bin/prog\0" "0123ABCD"), "build_id" },     /* upper case */
    { WITH_NUL ("prog\0/usr/bin/prog\0" "012"), "build_id" },          /* odd length */
    { WITH_NUL ("a/b\0/usr/bin/prog\0" "00"), "name" },                /* not a file name */
    { WITH_NUL ("prog\0relative/prog\0" "00"), "path" },               /* not absolute */
    { WITH_NUL ("prog\0/usr/bin/\xff\0" "00"), "path" },              /* not UTF-8 */
#undef WITH_NUL
  };
  g_autoptr(GBytes) original = read_bytes (fixture->path);
  PerfmonTaskFileHeader header;
  const char *path = NULL, *build_id = NULL;
  guint64 base = 0;

  memcpy (&header, g_bytes_get_data (original, NULL), sizeof header);
  {
    g_autofree char *file = with_module_record (fixture, original, "module.tasks", 0x7f0000001000,
                                                good, sizeof good);
    g_autoptr(GError) error = NULL;
    g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_file (file, &error);

    g_assert_no_error (error);
    g_assert_true (perfmon_task_log_lookup_module (log, header.pid, "prog", &path, &base, &build_id));
    g_assert_cmpstr (path, ==, "/usr/bin/prog");
    g_assert_cmpuint (base, ==, 0x7f0000001000);
    g_assert_cmpstr (build_id, ==, "0123456789abcdef");
    /* Another process's, another module: nothing. */
    g_assert_false (perfmon_task_log_lookup_module (log, header.pid + 1, "prog", NULL, NULL, NULL));
    g_assert_false (perfmon_task_log_lookup_module (log, header.pid, "other", NULL, NULL, NULL));
  }
  {
    /* A file without MODULE records (before 0.3) reads, with none. */
    g_autoptr(GError) error = NULL;
    g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_file (fixture->path, &error);

    g_assert_no_error (error);
    g_assert_false (perfmon_task_log_lookup_module (log, header.pid, "prog", NULL, NULL, NULL));
  }
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *file = with_module_record (fixture, original, "bad-module.tasks", 0, bad[i].strings,
                                                  bad[i].length);
      g_autoptr(GError) error = NULL;
      g_autoptr(PerfmonTaskLog) log = perfmon_task_log_new_from_file (file, &error);

      g_assert_null (log);
      g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA);
      g_test_message ("%s", error->message);
      g_assert_nonnull (strstr (error->message, bad[i].field));
      /* The message names the field, never the file's bytes. */
      g_assert_null (strstr (error->message, "relative"));
    }
}

/* A BEGIN written before its task's DISPATCH (two threads stamping the same
 * nanosecond) still pairs with it: the reader does not depend on order. */
static void
test_begin_before_dispatch (Fixture       *fixture,
                            gconstpointer  data)
{
  g_autoptr(GBytes) original = read_bytes (fixture->path);
  g_autofree char *path = g_build_filename (fixture->dir, "reordered.tasks", NULL);
  gsize len = g_bytes_get_size (original);
  const guint8 *bytes = g_bytes_get_data (original, NULL);
  gsize dispatch = find_record (original, PERFMON_TASK_RECORD_DISPATCH);
  gsize begin = find_record (original, PERFMON_TASK_RECORD_BEGIN);
  PerfmonTaskRecordHeader rh;
  g_autoptr(GByteArray) reordered = g_byte_array_new ();
  g_autoptr(GError) error = NULL;
  g_autoptr(PerfmonTaskLog) log = NULL;

  g_assert_cmpuint (dispatch, <, begin);
  memcpy (&rh, bytes + begin, sizeof rh);
  g_byte_array_append (reordered, bytes, dispatch);
  g_byte_array_append (reordered, bytes + begin, rh.size);
  g_byte_array_append (reordered, bytes + dispatch, begin - dispatch);
  g_byte_array_append (reordered, bytes + begin + rh.size, len - begin - rh.size);
  g_assert_true (g_file_set_contents (path, (const char *) reordered->data, reordered->len, NULL));

  log = perfmon_task_log_new_from_file (path, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (perfmon_task_log_get_unmatched_records (log), ==, 0);
  g_assert_cmpuint (perfmon_task_get_n_runs (perfmon_task_log_find_task (log, fixture->chain.step[0])), ==, 1);
}

static void
test_missing_file (Fixture       *fixture,
                   gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename (fixture->dir, "nothing-here", NULL);
  const char *no_paths[] = { NULL };

  g_assert_null (perfmon_task_log_new_from_file (path, &error));
  g_assert_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
  g_clear_error (&error);
  g_assert_null (perfmon_task_log_new_from_files (no_paths, &error));
  g_assert_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

#define ADD(path, func) g_test_add ((path), Fixture, NULL, fixture_set_up, (func), fixture_tear_down)
  ADD ("/task-log/chain", test_chain);
  ADD ("/task-log/runs", test_runs);
  ADD ("/task-log/chrome-trace", test_chrome_trace);
  ADD ("/task-log/chrome-trace-extreme-times", test_chrome_trace_extreme_times);
  ADD ("/task-log/corrupt", test_corrupt);
  ADD ("/task-log/unknown-record-type", test_unknown_record_type);
  ADD ("/task-log/module-records", test_module_records);
  ADD ("/task-log/begin-before-dispatch", test_begin_before_dispatch);
  ADD ("/task-log/missing-file", test_missing_file);

  return g_test_run ();
}
