/* perfmon-task-writer.c: the task log file, written from the recorder's buffers
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The mirror of the reader (perfmon-task-log.c): the recorder
 * (perfmon-tracer.c) copies each thread's buffer under its control lock and
 * hands the copies here, where they become one file of the format of
 * perfmon-task-format-private.h. This is where records are put in time
 * order, where cycle-counter readings become CLOCK_MONOTONIC nanoseconds and
 * where callback addresses become SYMBOL records: never on the hot path.
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-process-private.h"
#include "perfmon-symbolizer-private.h"
#include "perfmon-task-writer-private.h"
#include "perfmon-utf8-private.h"

typedef struct
{
  guint64       cycles;
  guint         order;
  const guint8 *record;
} Entry;

static int
entry_compare (gconstpointer a,
               gconstpointer b)
{
  const Entry *x = a, *y = b;

  if (x->cycles != y->cycles)
    return x->cycles < y->cycles ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Appends the records of @copy (@length bytes starting at a chunk
 * boundary) to @entries, those of type DISPATCH also to @callbacks. */
static void
parse_copy (const guint8 *copy,
            gsize         length,
            guint64       since_cycles,
            GArray       *entries,
            GHashTable   *callbacks)
{
  gsize at = 0;

  while (at < length)
    {
      gsize room = PERFMON_TASK_CHUNK_SIZE - (at & (PERFMON_TASK_CHUNK_SIZE - 1));
      PerfmonTaskRecordHeader header;

      if (room < sizeof header || length - at < sizeof header)
        {
          at += room;
          continue;
        }
      memcpy (&header, copy + at, sizeof header);
      if (header.type == 0 || header.type > PERFMON_TASK_RECORD_NAME ||
          header.size < sizeof header || header.size % 8 != 0 || header.size > room ||
          header.size > length - at)
        {
          /* A pad, or the end of what was published. */
          at += room;
          continue;
        }
      if ((guint64) header.time_ns >= since_cycles)
        {
          Entry entry = { (guint64) header.time_ns, entries->len, copy + at };

          g_array_append_val (entries, entry);
          if (header.type == PERFMON_TASK_RECORD_DISPATCH)
            {
              const PerfmonTaskDispatchRecord *dispatch = (const PerfmonTaskDispatchRecord *) (copy + at);
              guint64 callback;

              memcpy (&callback, &dispatch->callback, sizeof callback);
              /* 0: an automatic task, named by its NAME record. */
              if (callback != 0)
                g_hash_table_add (callbacks, GSIZE_TO_POINTER ((gsize) callback));
            }
        }
      at += header.size;
    }
}

static void
append_string_record (GByteArray           *out,
                      PerfmonTaskRecordType type,
                      guint32               tid,
                      gint64                time_ns,
                      const guint64        *callback,
                      const char           *text)
{
  static const guint8 zeros[8];
  gsize prefix = sizeof (PerfmonTaskRecordHeader) + (callback != NULL ? sizeof (guint64) : 0);
  gsize len = perfmon_utf8_cut (text, strlen (text), PERFMON_TASK_CHUNK_SIZE - prefix - 8);
  gsize size = (prefix + len + 1 + 7) & ~(gsize) 7;
  PerfmonTaskRecordHeader header = {
    .type = (guint16) type,
    .size = (guint16) size,
    .tid = tid,
    .time_ns = time_ns,
  };

  g_byte_array_append (out, (const guint8 *) &header, sizeof header);
  if (callback != NULL)
    g_byte_array_append (out, (const guint8 *) callback, sizeof *callback);
  g_byte_array_append (out, (const guint8 *) text, len);
  /* The NUL and the padding. */
  g_byte_array_append (out, zeros, size - prefix - len);
}

/* How long one task log may spend loading the symbol tables of modules
 * that the process's symbolizer has not read yet (a log may be written on
 * the application's main thread: perfmon_tracer_stop()). */
#define DESCRIBE_CALLBACKS_BUDGET_US (50 * 1000)

static char *
describe_callback (guint64 callback,
                   gint64  deadline_us)
{
  Dl_info info;

  if (dladdr ((const void *) (guintptr) callback, &info) == 0 || info.dli_fname == NULL)
    return g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", callback);
  if (info.dli_sname != NULL && (guint64) (guintptr) info.dli_saddr == callback)
    return g_strdup (info.dli_sname);
  /* A static function: dladdr() would name the exported one before it,
   * which is not ours. The symbolizer reads the object's .symtab or its
   * debug file; failing that, the object and the offset (Breakpad's: from
   * the object's first byte, dli_fbase) can be symbolised offline. */
  {
    g_autofree char *base = g_path_get_basename (info.dli_fname);
    PerfmonModuleRef ref = { info.dli_fname, NULL, NULL };
    guint64 offset = callback - (guint64) (guintptr) info.dli_fbase;
    guint64 function_offset = 0;
    g_autofree char *function = NULL;

    if (g_path_is_absolute (info.dli_fname))
      function = _perfmon_symbolizer_lookup_ref (_perfmon_symbolizer_get_default (), &ref, offset, FALSE,
                                                 deadline_us, &function_offset);
    if (function != NULL && function_offset == 0)
      return g_steal_pointer (&function);
    return g_strdup_printf ("%s+0x%" G_GINT64_MODIFIER "x", base, offset);
  }
}

/* The task log of @threads' records from @session->since_cycles on, in
 * time order, then a SYMBOL record per callback address. */
GBytes *
_perfmon_task_writer_write (const PerfmonTaskWriterSession *session,
                            const PerfmonTaskWriterThread  *threads,
                            guint                           n_threads)
{
  g_autoptr(GArray) entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  g_autoptr(GHashTable) callbacks = g_hash_table_new (NULL, NULL);
  GByteArray *out;
  PerfmonTaskFileHeader header = { PERFMON_TASK_FILE_MAGIC, 0, };
  guint64 ref_cycles;
  gint64 ref_ns;
  double per_ns = perfmon_clock_cycles_per_us () / 1000.0;
  gsize total_bytes = 0;
  gint64 describe_deadline_us;
  GHashTableIter iter;
  gpointer key;
  const char *process_name;

  for (guint i = 0; i < n_threads; i++)
    if (threads[i].records != NULL)
      {
        total_bytes += threads[i].length;
        parse_copy (threads[i].records, threads[i].length, session->since_cycles, entries, callbacks);
      }
  /* Each thread's records are in order already: with one thread, or
   * threads that took turns, there is nothing to sort. */
  for (guint i = 1; i < entries->len; i++)
    if (entry_compare (&g_array_index (entries, Entry, i - 1), &g_array_index (entries, Entry, i)) > 0)
      {
        g_array_sort (entries, entry_compare);
        break;
      }

  out = g_byte_array_sized_new (sizeof header + total_bytes + n_threads * 64 +
                                 g_hash_table_size (callbacks) * 128);
  ref_cycles = perfmon_clock_cycles ();
  ref_ns = perfmon_clock_monotonic_ns ();
  /* The rate between the session's start and now, when that is long
   * enough to measure it better than the process-wide estimate: records
   * of a long session would otherwise drift by its error. */
  if (session->session_start_cycles != 0 &&
      ref_ns - session->session_start_ns > 100 * G_GINT64_CONSTANT (1000000) &&
      ref_cycles > session->session_start_cycles)
    per_ns = (double) (ref_cycles - session->session_start_cycles) / (double) (ref_ns - session->session_start_ns);

  header.version = PERFMON_TASK_FILE_VERSION;
  header.header_size = sizeof header;
  header.byte_order_mark = PERFMON_TASK_FILE_BYTE_ORDER_MARK;
  header.pid = (guint32) getpid ();
  header.start_time_ns = session->start_ns;
  header.realtime_offset_ns = g_get_real_time () * 1000 - perfmon_clock_monotonic_ns ();
  header.dropped_records = session->dropped_records;
  process_name = _perfmon_process_name ();
  g_strlcpy (header.process_name, process_name, sizeof header.process_name);
  g_byte_array_append (out, (const guint8 *) &header, sizeof header);

  for (guint i = 0; i < n_threads; i++)
    append_string_record (out, PERFMON_TASK_RECORD_THREAD, threads[i].tid, session->start_ns, NULL,
                          threads[i].name);

  for (guint i = 0; i < entries->len; i++)
    {
      const Entry *entry = &g_array_index (entries, Entry, i);
      PerfmonTaskRecordHeader record_header;
      gint64 time_ns;
      guint offset = out->len;

      memcpy (&record_header, entry->record, sizeof record_header);
      /* A reading from after ref_cycles (another core's, a little ahead)
       * is taken as now. */
      time_ns = entry->cycles >= ref_cycles
        ? ref_ns
        : ref_ns - (gint64) ((double) (ref_cycles - entry->cycles) / per_ns);
      g_byte_array_append (out, entry->record, record_header.size);
      memcpy (out->data + offset + G_STRUCT_OFFSET (PerfmonTaskRecordHeader, time_ns), &time_ns, sizeof time_ns);
    }

  describe_deadline_us = g_get_monotonic_time () + DESCRIBE_CALLBACKS_BUDGET_US;
  g_hash_table_iter_init (&iter, callbacks);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    {
      guint64 callback = (guint64) GPOINTER_TO_SIZE (key);
      g_autofree char *symbol = describe_callback (callback, describe_deadline_us);

      append_string_record (out, PERFMON_TASK_RECORD_SYMBOL, 0, session->start_ns, &callback, symbol);
    }

  return g_byte_array_free_to_bytes (out);
}

