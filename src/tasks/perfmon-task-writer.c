/* perfmon-task-writer.c: the task log file, written from the recorder's buffers
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The mirror of the reader (perfmon-task-log.c): the recorder
 * (perfmon-tracer.c) copies each thread's buffer under its control lock and
 * hands the copies here, where they become one file of the format of
 * perfmon-task-format-private.h. This is where records are put in time
 * order, where cycle-counter readings become CLOCK_MONOTONIC nanoseconds,
 * where callback addresses become SYMBOL records (dladdr() only: nothing
 * is symbolized in the program, see describe_callback()) and where an
 * automatic task's compact ring records (AUTO with a name number, see
 * perfmon-task-writer-private.h) become the file's DISPATCH, NAME and
 * BEGIN: never on the hot path.
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-modules-private.h"
#include "perfmon-process-private.h"
#include "perfmon-recorded-module-private.h"
#include "perfmon-task-writer-private.h"
#include "perfmon-utf8.h"

/* What an entry writes: its record as it is, or one of the three records
 * an automatic task's AUTO record becomes. */
typedef enum
{
  ENTRY_COPY,
  ENTRY_AUTO_DISPATCH,
  ENTRY_AUTO_NAME,
  ENTRY_AUTO_BEGIN,
} EntryKind;

typedef struct
{
  guint64       cycles;
  guint         order;
  EntryKind     kind;
  const guint8 *record;
  const char   *name;       /* ENTRY_AUTO_NAME: the text, in the copy */
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

static void
add_entry (GArray       *entries,
           guint64       cycles,
           EntryKind     kind,
           const guint8 *record,
           const char   *name)
{
  Entry entry = { cycles, entries->len, kind, record, name };

  g_array_append_val (entries, entry);
}

/* The record of @copy (@length bytes starting at a chunk boundary) at
 * *@at or after it, skipping pads and what is not a whole record of a
 * type the recorder writes; NULL at the end. *@at moves past it. */
static const guint8 *
next_record (const guint8            *copy,
             gsize                    length,
             gsize                   *at,
             PerfmonTaskRecordHeader *header)
{
  while (*at < length)
    {
      gsize room = PERFMON_TASK_CHUNK_SIZE - (*at & (PERFMON_TASK_CHUNK_SIZE - 1));
      const guint8 *record = copy + *at;
      gsize min_size;

      if (room < sizeof *header || length - *at < sizeof *header)
        {
          *at += room;
          continue;
        }
      memcpy (header, record, sizeof *header);
      switch (header->type)
        {
        case PERFMON_TASK_RING_AUTO:
          min_size = sizeof (PerfmonTaskRingAutoRecord);
          break;
        case PERFMON_TASK_RING_NAME_DEF:
          min_size = sizeof (PerfmonTaskRingNameRecord) + 1;
          break;
        default:
          min_size = header->type >= 1 && header->type <= PERFMON_TASK_RECORD_NAME ? sizeof *header : G_MAXSIZE;
          break;
        }
      if (header->size < min_size || header->size % 8 != 0 || header->size > room ||
          header->size > length - *at)
        {
          /* A pad, or the end of what was published. */
          *at += room;
          continue;
        }
      *at += header->size;
      return record;
    }
  return NULL;
}

/* The NAME_DEF records of @copy: name id → text (in the copy). */
static GHashTable *
read_name_defs (const guint8 *copy,
                gsize         length)
{
  GHashTable *names = g_hash_table_new (NULL, NULL);
  PerfmonTaskRecordHeader header;
  const guint8 *record;
  gsize at = 0;

  while ((record = next_record (copy, length, &at, &header)) != NULL)
    if (header.type == PERFMON_TASK_RING_NAME_DEF)
      {
        const char *text = (const char *) record + sizeof (PerfmonTaskRingNameRecord);
        guint32 name_id;

        memcpy (&name_id, record + G_STRUCT_OFFSET (PerfmonTaskRingNameRecord, name_id), sizeof name_id);
        if (name_id != 0 && memchr (text, '\0', header.size - sizeof (PerfmonTaskRingNameRecord)) != NULL)
          g_hash_table_insert (names, GUINT_TO_POINTER (name_id), (gpointer) text);
      }
  return names;
}

/* Appends the records of @copy (@length bytes starting at a chunk
 * boundary) from @since_cycles on to @entries, and the callbacks of its
 * DISPATCH records to @callbacks. An automatic task is left out, with its
 * END and labels, when its name cannot be resolved or it began before
 * @since_cycles. */
static void
parse_copy (const guint8 *copy,
            gsize         length,
            guint64       since_cycles,
            GArray       *entries,
            GHashTable   *callbacks)
{
  g_autoptr(GHashTable) names = read_name_defs (copy, length);
  g_autoptr(GHashTable) left_out = g_hash_table_new (g_int64_hash, g_int64_equal);
  PerfmonTaskRecordHeader header;
  const guint8 *record;
  gsize at = 0;

  while ((record = next_record (copy, length, &at, &header)) != NULL)
    {
      guint64 cycles = (guint64) header.time_ns;

      switch (header.type)
        {
        case PERFMON_TASK_RING_NAME_DEF:
          break;
        case PERFMON_TASK_RING_AUTO:
          {
            PerfmonTaskRingAutoRecord r;
            const char *name;

            memcpy (&r, record, sizeof r);
            name = g_hash_table_lookup (names, GUINT_TO_POINTER (r.name_id));
            if (name == NULL || cycles < since_cycles)
              {
                /* Points into the copy, which outlives the table. */
                g_hash_table_add (left_out, (gpointer) (record + G_STRUCT_OFFSET (PerfmonTaskRingAutoRecord, task_id)));
                break;
              }
            /* Queued when it became ready, if that is known and earlier. */
            add_entry (entries, r.ready_time != 0 && r.ready_time < cycles ? r.ready_time : cycles,
                       ENTRY_AUTO_DISPATCH, record, NULL);
            add_entry (entries, g_array_index (entries, Entry, entries->len - 1).cycles, ENTRY_AUTO_NAME,
                       record, name);
            add_entry (entries, cycles, ENTRY_AUTO_BEGIN, record, NULL);
          }
          break;
        case PERFMON_TASK_RECORD_END:
        case PERFMON_TASK_RECORD_LABEL:
          if (cycles >= since_cycles &&
              (g_hash_table_size (left_out) == 0 ||
               !g_hash_table_contains (left_out, record + G_STRUCT_OFFSET (PerfmonTaskIdRecord, task_id))))
            add_entry (entries, cycles, ENTRY_COPY, record, NULL);
          break;
        case PERFMON_TASK_RECORD_DISPATCH:
          if (cycles >= since_cycles)
            {
              guint64 callback;

              add_entry (entries, cycles, ENTRY_COPY, record, NULL);
              memcpy (&callback, record + G_STRUCT_OFFSET (PerfmonTaskDispatchRecord, callback), sizeof callback);
              /* 0: an automatic task, named by its NAME record. */
              if (callback != 0)
                g_hash_table_add (callbacks, GSIZE_TO_POINTER ((gsize) callback));
            }
          break;
        default:
          if (cycles >= since_cycles)
            add_entry (entries, cycles, ENTRY_COPY, record, NULL);
          break;
        }
    }
}

/* A record of @type whose payload is @id (a SYMBOL's callback, a NAME's
 * task id; NULL: none) and @text. */
static void
append_string_record (GByteArray           *out,
                      PerfmonTaskRecordType type,
                      guint32               tid,
                      gint64                time_ns,
                      const guint64        *id,
                      const char           *text)
{
  static const guint8 zeros[8];
  gsize prefix = sizeof (PerfmonTaskRecordHeader) + (id != NULL ? sizeof (guint64) : 0);
  gsize len = _perfmon_utf8_cut (text, strlen (text), PERFMON_TASK_CHUNK_SIZE - prefix - 8);
  gsize size = (prefix + len + 1 + 7) & ~(gsize) 7;
  PerfmonTaskRecordHeader header = {
    .type = (guint16) type,
    .size = (guint16) size,
    .tid = tid,
    .time_ns = time_ns,
  };

  g_byte_array_append (out, (const guint8 *) &header, sizeof header);
  if (id != NULL)
    g_byte_array_append (out, (const guint8 *) id, sizeof *id);
  g_byte_array_append (out, (const guint8 *) text, len);
  /* The NUL and the padding. */
  g_byte_array_append (out, zeros, size - prefix - len);
}

/* A MODULE record: @module's base, then its name, path and build id. */
static void
append_module_record (GByteArray                  *out,
                      gint64                       time_ns,
                      const PerfmonRecordedModule *module)
{
  static const guint8 zeros[8];
  gsize strings = strlen (module->name) + 1 + strlen (module->path) + 1 + strlen (module->build_id) + 1;
  gsize size = (sizeof (PerfmonTaskModuleRecord) + strings + 7) & ~(gsize) 7;
  PerfmonTaskModuleRecord record = {
    { PERFMON_TASK_RECORD_MODULE, (guint16) size, 0, time_ns },
    module->base,
  };

  /* Checked by _perfmon_modules_for_names(): a few KiB at most. */
  g_assert (size <= G_MAXUINT16);
  g_byte_array_append (out, (const guint8 *) &record, sizeof record);
  g_byte_array_append (out, (const guint8 *) module->name, strlen (module->name) + 1);
  g_byte_array_append (out, (const guint8 *) module->path, strlen (module->path) + 1);
  g_byte_array_append (out, (const guint8 *) module->build_id, strlen (module->build_id) + 1);
  g_byte_array_append (out, zeros, size - sizeof record - strings);
}

/* A callback's name for its SYMBOL record: its dynamic symbol when it is
 * one (dladdr(), from memory), else its module and offset (Breakpad's:
 * from the object's first byte, dli_fbase), "module+0xoffset", which the
 * reader names with the symbolizer and the log's MODULE records (`perfmon
 * tasks`, `perfmon symbolize`). Nothing is symbolized here: a log may be
 * written on a watched thread (perfmon_tracer_stop() on the application's
 * main thread), which loads no symbol table. */
static char *
describe_callback (guint64 callback)
{
  Dl_info info;
  g_autofree char *base = NULL;

  if (dladdr ((const void *) (guintptr) callback, &info) == 0 || info.dli_fname == NULL)
    return g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", callback);
  if (info.dli_sname != NULL && (guint64) (guintptr) info.dli_saddr == callback)
    return g_strdup (info.dli_sname);
  /* A static function: dladdr() would name the exported one before it,
   * which is not ours. */
  base = g_path_get_basename (info.dli_fname);
  return g_strdup_printf ("%s+0x%" G_GINT64_MODIFIER "x", base, callback - (guint64) (guintptr) info.dli_fbase);
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
  g_autoptr(GPtrArray) symbols = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) modules = NULL;
  g_autofree gpointer *name_list = NULL;
  guint n_names = 0;
  GByteArray *out;
  PerfmonTaskFileHeader header = { PERFMON_TASK_FILE_MAGIC, 0, };
  guint64 ref_cycles;
  gint64 ref_ns;
  double per_ns = _perfmon_clock_cycles_per_us () / 1000.0;
  gsize total_bytes = 0;
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

  /* An automatic task's records take about twice the room in the file. */
  out = g_byte_array_sized_new (sizeof header + 2 * total_bytes + n_threads * 64 +
                                 g_hash_table_size (callbacks) * 128);
  ref_cycles = _perfmon_clock_cycles ();
  ref_ns = _perfmon_clock_monotonic_ns ();
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
  header.realtime_offset_ns = g_get_real_time () * 1000 - _perfmon_clock_monotonic_ns ();
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
      PerfmonTaskRingAutoRecord automatic;
      gint64 time_ns;
      guint offset = out->len;

      memcpy (&record_header, entry->record, sizeof record_header);
      /* A reading from after ref_cycles (another core's, a little ahead)
       * is taken as now. */
      time_ns = entry->cycles >= ref_cycles
        ? ref_ns
        : ref_ns - (gint64) ((double) (ref_cycles - entry->cycles) / per_ns);
      if (entry->kind != ENTRY_COPY)
        memcpy (&automatic, entry->record, sizeof automatic);
      switch (entry->kind)
        {
        case ENTRY_COPY:
          g_byte_array_append (out, entry->record, record_header.size);
          memcpy (out->data + offset + G_STRUCT_OFFSET (PerfmonTaskRecordHeader, time_ns), &time_ns,
                  sizeof time_ns);
          break;
        case ENTRY_AUTO_DISPATCH:
          {
            PerfmonTaskDispatchRecord dispatch = {
              { PERFMON_TASK_RECORD_DISPATCH, sizeof dispatch, record_header.tid, time_ns },
              automatic.task_id, automatic.parent_id, automatic.source_event_id,
              automatic.source_event_type, 0, 0,
            };

            g_byte_array_append (out, (const guint8 *) &dispatch, sizeof dispatch);
          }
          break;
        case ENTRY_AUTO_NAME:
          append_string_record (out, PERFMON_TASK_RECORD_NAME, record_header.tid, time_ns, &automatic.task_id,
                                entry->name);
          break;
        case ENTRY_AUTO_BEGIN:
          {
            PerfmonTaskIdRecord begin = {
              { PERFMON_TASK_RECORD_BEGIN, sizeof begin, record_header.tid, time_ns }, automatic.task_id,
            };

            g_byte_array_append (out, (const guint8 *) &begin, sizeof begin);
          }
          break;
        }
    }

  g_hash_table_iter_init (&iter, callbacks);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    {
      guint64 callback = (guint64) GPOINTER_TO_SIZE (key);
      char *symbol = describe_callback (callback);

      append_string_record (out, PERFMON_TASK_RECORD_SYMBOL, 0, session->start_ns, &callback, symbol);
      g_ptr_array_add (symbols, symbol);
      g_hash_table_add (names, symbol);
    }

  /* The modules that "module+0x…" names refer to, once each, so that the
   * tool names them after the program has exited: from memory, without
   * symbolizing anything. */
  for (guint i = 0; i < entries->len; i++)
    {
      const Entry *entry = &g_array_index (entries, Entry, i);

      if (entry->kind == ENTRY_AUTO_NAME && strstr (entry->name, "+0x") != NULL)
        g_hash_table_add (names, (gpointer) entry->name);
    }
  name_list = g_hash_table_get_keys_as_array (names, &n_names);
  modules = _perfmon_modules_for_names ((const char * const *) name_list, n_names);
  for (guint i = 0; modules != NULL && i < modules->len; i++)
    append_module_record (out, session->start_ns, g_ptr_array_index (modules, i));

  return g_byte_array_free_to_bytes (out);
}

