/* perfmon-task-file-test.h: the tests' own reading of a task log
 *
 * Deliberately independent of the library's reader: the tests check what
 * the tracer wrote against the format header itself.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>
#include <string.h>

#include "perfmon-task-format-private.h"

typedef struct
{
  PerfmonTaskFileHeader header;
  GBytes               *bytes;
  /* Of const PerfmonTaskRecordHeader *, into @bytes, in file order. */
  GPtrArray            *records;
} TestTaskFile;

static inline void
test_task_file_free (TestTaskFile *file)
{
  g_bytes_unref (file->bytes);
  g_ptr_array_unref (file->records);
  g_free (file);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestTaskFile, test_task_file_free)

/* Parses @contents (@length bytes, copied) and asserts that it is a well
 * formed task log of this process. */
static inline TestTaskFile *
test_task_file_parse (const char *contents,
                      gsize       length)
{
  TestTaskFile *file = g_new0 (TestTaskFile, 1);
  const guint8 *data;
  gsize at;

  file->bytes = g_bytes_new (contents, length);
  file->records = g_ptr_array_new ();
  data = g_bytes_get_data (file->bytes, NULL);

  g_assert_cmpuint (length, >=, sizeof file->header);
  memcpy (&file->header, data, sizeof file->header);
  g_assert_cmpmem (file->header.magic, 8, PERFMON_TASK_FILE_MAGIC, 8);
  g_assert_cmpuint (file->header.version, ==, PERFMON_TASK_FILE_VERSION);
  g_assert_cmpuint (file->header.header_size, ==, sizeof file->header);
  g_assert_cmpuint (file->header.byte_order_mark, ==, PERFMON_TASK_FILE_BYTE_ORDER_MARK);
  g_assert_cmpuint (file->header.pid, !=, 0);
  g_assert_cmpint (file->header.start_time_ns, >, 0);

  for (at = file->header.header_size; at < length;)
    {
      const PerfmonTaskRecordHeader *record = (const PerfmonTaskRecordHeader *) (data + at);

      g_assert_cmpuint (length - at, >=, sizeof *record);
      g_assert_cmpuint (record->size, >=, sizeof *record);
      g_assert_cmpuint (record->size % 8, ==, 0);
      g_assert_cmpuint (record->size, <=, length - at);
      g_assert_cmpuint (record->type, >=, PERFMON_TASK_RECORD_DISPATCH);
      g_assert_cmpuint (record->type, <=, PERFMON_TASK_RECORD_MODULE);
      g_assert_cmpint (record->time_ns, >, 0);
      g_ptr_array_add (file->records, (gpointer) record);
      at += record->size;
    }
  return file;
}

static inline TestTaskFile *
test_task_file_load (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *contents = NULL;
  gsize length;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  return test_task_file_parse (contents, length);
}

/* The @index-th record of @type whose task is @task_id (any task for 0),
 * or NULL. */
static inline const PerfmonTaskRecordHeader *
test_task_file_find (TestTaskFile          *file,
                     PerfmonTaskRecordType  type,
                     guint64                task_id,
                     guint                  index)
{
  for (guint i = 0; i < file->records->len; i++)
    {
      const PerfmonTaskRecordHeader *record = g_ptr_array_index (file->records, i);
      guint64 id;

      if (record->type != type)
        continue;
      /* Every record with a task has its id right after the header. */
      memcpy (&id, record + 1, sizeof id);
      if (task_id != 0 && id != task_id)
        continue;
      if (index-- == 0)
        return record;
    }
  return NULL;
}

static inline guint
test_task_file_count (TestTaskFile          *file,
                      PerfmonTaskRecordType  type,
                      guint64                task_id)
{
  guint n = 0;

  while (test_task_file_find (file, type, task_id, n) != NULL)
    n++;
  return n;
}

/* The DISPATCH record of the task whose callback is named @symbol. */
static inline const PerfmonTaskDispatchRecord *
test_task_file_find_dispatch_of (TestTaskFile *file,
                                 const char   *symbol)
{
  const PerfmonTaskSymbolRecord *found = NULL;

  for (guint i = 0; i < file->records->len && found == NULL; i++)
    {
      const PerfmonTaskRecordHeader *record = g_ptr_array_index (file->records, i);

      if (record->type == PERFMON_TASK_RECORD_SYMBOL &&
          g_strcmp0 (((const PerfmonTaskSymbolRecord *) record)->symbol, symbol) == 0)
        found = (const PerfmonTaskSymbolRecord *) record;
    }
  if (found == NULL)
    return NULL;
  for (guint i = 0; i < file->records->len; i++)
    {
      const PerfmonTaskRecordHeader *record = g_ptr_array_index (file->records, i);

      if (record->type == PERFMON_TASK_RECORD_DISPATCH &&
          ((const PerfmonTaskDispatchRecord *) record)->callback == found->callback)
        return (const PerfmonTaskDispatchRecord *) record;
    }
  return NULL;
}

/* Whether a LABEL record of @task_id (any for 0) says @text. */
static inline gboolean
test_task_file_has_label (TestTaskFile *file,
                          guint64       task_id,
                          const char   *text)
{
  const PerfmonTaskRecordHeader *record;

  for (guint i = 0; (record = test_task_file_find (file, PERFMON_TASK_RECORD_LABEL, task_id, i)) != NULL; i++)
    if (g_strcmp0 (((const PerfmonTaskLabelRecord *) record)->text, text) == 0)
      return TRUE;
  return FALSE;
}

/* Whether a THREAD record names thread @tid. */
static inline gboolean
test_task_file_has_thread (TestTaskFile *file,
                           guint32       tid)
{
  for (guint i = 0; i < file->records->len; i++)
    {
      const PerfmonTaskRecordHeader *record = g_ptr_array_index (file->records, i);

      if (record->type == PERFMON_TASK_RECORD_THREAD && record->tid == tid)
        return TRUE;
    }
  return FALSE;
}

/* test_task_file_find(), failing the test if there is none. */
__attribute__ ((returns_nonnull)) static inline const PerfmonTaskRecordHeader *
test_task_file_get (TestTaskFile          *file,
                    PerfmonTaskRecordType  type,
                    guint64                task_id,
                    guint                  index)
{
  const PerfmonTaskRecordHeader *record = test_task_file_find (file, type, task_id, index);

  if (record == NULL)
    g_error ("No record %u of type %d for task %" G_GINT64_MODIFIER "x", index, type, task_id);
  return record;
}

/* test_task_file_find_dispatch_of(), failing the test if there is none. */
__attribute__ ((returns_nonnull)) static inline const PerfmonTaskDispatchRecord *
test_task_file_get_dispatch_of (TestTaskFile *file,
                                const char   *symbol)
{
  const PerfmonTaskDispatchRecord *record = test_task_file_find_dispatch_of (file, symbol);

  if (record == NULL)
    g_error ("No task named %s", symbol);
  return record;
}
