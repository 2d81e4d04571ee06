/* perfmon-task-log.c: the tasks of one or several task log files
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The reader trusts nothing in a file: every record is bounds-checked
 * against the file before it is copied out (with memcpy, so a file whose
 * header size is not a multiple of 8 costs nothing but speed), and every
 * string must end inside its record. What the tracer can legitimately
 * leave behind (a BEGIN whose DISPATCH a flight recorder overwrote, a run
 * the file ends in) is tolerated and counted instead.
 */
#include "config.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "perfmon-enum-types.h"
#include "perfmon-error.h"
#include "perfmon-recorded-module-private.h"
#include "perfmon-task-format-private.h"
#include "perfmon-task-log-private.h"
#include "perfmon-task-private.h"

/**
 * PerfmonTaskLog:
 *
 * The tasks recorded by the task tracer in one or several files, linked
 * into one graph: each task's parent (the task that dispatched it, or the
 * task that sent the D-Bus message it handles, in another process), the
 * source event that started its chain, its dispatch, its runs and labels.
 *
 * The `find_*` methods answer the seed's questions: who caused a task
 * (ancestors), what it caused (followers), and what kept it waiting in its
 * queue (blockers). [method@TaskLog.to_chrome_trace] exports the graph for
 * Perfetto UI or chrome://tracing.
 *
 * A task log is immutable: any thread may use it.
 *
 * Since: 0.1
 */
struct _PerfmonTaskLog
{
  GObject     parent_instance;

  GPtrArray  *tasks;              /* PerfmonTask *, by dispatch time */
  GHashTable *by_id;              /* guint64 * (the task's id) → PerfmonTask * */
  GHashTable *children;           /* guint64 * → GArray of guint64, built on first use */
  GMutex      children_lock;
  guint64     dropped_records;
  guint64     unmatched_records;
  /* What MODULE records say: a process's pid → GPtrArray of
   * PerfmonRecordedModule. */
  GHashTable *modules;
};

G_DEFINE_FINAL_TYPE (PerfmonTaskLog, perfmon_task_log, G_TYPE_OBJECT)

/* --- reading ----------------------------------------------------------- */

typedef struct
{
  guint64 task_id;
  gint64  time_ns;
  guint32 pid;
  guint32 tid;
} DBusSend;

typedef struct
{
  guint64 task_id;
  char   *key;                    /* "sender serial" */
} DBusRecv;

typedef struct
{
  PerfmonTaskLog *log;
  GHashTable     *sends;          /* key → DBusSend * */
  GArray         *recvs;          /* DBusRecv */
} Reader;

static void
dbus_recv_clear (gpointer data)
{
  g_free (((DBusRecv *) data)->key);
}

static gboolean
fail (GError     **error,
      gint         code,
      const char  *name,
      gsize        offset,
      const char  *field,
      const char  *format,
      ...) G_GNUC_PRINTF (6, 7);

static gboolean
fail (GError     **error,
      gint         code,
      const char  *name,
      gsize        offset,
      const char  *field,
      const char  *format,
      ...)
{
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);

  g_set_error (error, PERFMON_ERROR, code, "%s: not a valid task log: at byte %" G_GSIZE_FORMAT ", %s: %s",
               name, offset, field, message);
  return FALSE;
}

/* The string that fills the rest of a record after @fixed bytes; NULL if
 * it does not end inside the record. */
static char *
record_string (const guint8 *record,
               gsize         size,
               gsize         fixed)
{
  const guint8 *start = record + fixed;
  const guint8 *nul = memchr (start, '\0', size - fixed);

  if (nul == NULL)
    return NULL;
  return g_utf8_make_valid ((const char *) start, nul - start);
}

static PerfmonTask *
lookup (PerfmonTaskLog *self,
        guint64         id)
{
  return g_hash_table_lookup (self->by_id, &id);
}

/* One file being read: its header, and what its records name besides
 * tasks (addresses and thread ids mean nothing in another process). */
typedef struct
{
  Reader                *reader;
  const char            *name;            /* the file's, for errors */
  PerfmonTaskFileHeader  header;
  GHashTable            *symbols;         /* guint64 * (a callback) → char * */
  GHashTable            *thread_names;    /* tid → char * */
  GPtrArray             *tasks;           /* PerfmonTask *: the file's DISPATCHes */
} FileReader;

/* A record whose header the iterator checked: @data holds @header.size
 * bytes, at least what its type needs. */
typedef struct
{
  PerfmonTaskRecordHeader  header;
  const guint8            *data;
  gsize                    offset;        /* in the file, for errors */
} Record;

typedef gboolean (*RecordReader) (FileReader    *file,
                                  const Record  *record,
                                  GError       **error);

/* The header of file @name, checked, in @header. */
static gboolean
read_header (const guint8           *data,
             gsize                   len,
             const char             *name,
             PerfmonTaskFileHeader  *header,
             GError                **error)
{
  if (len < sizeof header->magic || memcmp (data, PERFMON_TASK_FILE_MAGIC, sizeof header->magic) != 0)
    return fail (error, PERFMON_ERROR_INVALID_DATA, name, 0, "magic",
                 "the file does not start with \"%s\"", PERFMON_TASK_FILE_MAGIC);
  if (len < sizeof *header)
    return fail (error, PERFMON_ERROR_INVALID_DATA, name, len, "header",
                 "the file ends inside its %" G_GSIZE_FORMAT "-byte header", sizeof *header);
  memcpy (header, data, sizeof *header);

  if (header->byte_order_mark != PERFMON_TASK_FILE_BYTE_ORDER_MARK)
    {
      if (header->byte_order_mark == GUINT32_SWAP_LE_BE (PERFMON_TASK_FILE_BYTE_ORDER_MARK))
        return fail (error, PERFMON_ERROR_UNSUPPORTED_VERSION, name, G_STRUCT_OFFSET (PerfmonTaskFileHeader, byte_order_mark),
                     "byte_order_mark", "written on a machine of the other byte order");
      return fail (error, PERFMON_ERROR_INVALID_DATA, name, G_STRUCT_OFFSET (PerfmonTaskFileHeader, byte_order_mark),
                   "byte_order_mark", "0x%08x, expected 0x%08x", header->byte_order_mark,
                   PERFMON_TASK_FILE_BYTE_ORDER_MARK);
    }
  if (header->version != PERFMON_TASK_FILE_VERSION)
    return fail (error, PERFMON_ERROR_UNSUPPORTED_VERSION, name, G_STRUCT_OFFSET (PerfmonTaskFileHeader, version),
                 "version", "%u, this reader knows version %u", header->version, PERFMON_TASK_FILE_VERSION);
  if (header->header_size < sizeof *header || header->header_size > len)
    return fail (error, PERFMON_ERROR_INVALID_DATA, name, G_STRUCT_OFFSET (PerfmonTaskFileHeader, header_size),
                 "header_size", "%u, expected between %" G_GSIZE_FORMAT " and the file's %" G_GSIZE_FORMAT " bytes",
                 header->header_size, sizeof *header, len);
  return TRUE;
}

/* --- one reader per record type --- */

static gboolean
read_dispatch (FileReader    *file,
               const Record  *record,
               GError       **error)
{
  PerfmonTaskLog *self = file->reader->log;
  PerfmonTaskDispatchRecord r;
  PerfmonTask *task;

  memcpy (&r, record->data, sizeof r);
  if (lookup (self, r.task_id) != NULL)
    {
      /* A second DISPATCH of one id: only a corrupt file. */
      self->unmatched_records++;
      return TRUE;
    }
  task = _perfmon_task_new (r.task_id, r.parent_id, file->header.pid);
  task->source_event_id = r.source_event_id;
  task->source_event_type = r.source_event_type <= PERFMON_SOURCE_EVENT_CUSTOM
                            ? r.source_event_type : PERFMON_SOURCE_EVENT_UNKNOWN;
  task->callback = r.callback;
  task->dispatch_ns = record->header.time_ns;
  task->delay_ms = r.delay_ms;
  task->dispatch_tid = record->header.tid;
  g_hash_table_insert (self->by_id, &task->id, task);
  g_ptr_array_add (self->tasks, task);
  g_ptr_array_add (file->tasks, task);
  return TRUE;
}

/* BEGIN and END. */
static gboolean
read_run (FileReader    *file,
          const Record  *record,
          GError       **error)
{
  PerfmonTaskLog *self = file->reader->log;
  const PerfmonTaskRecordHeader *rh = &record->header;
  PerfmonTaskIdRecord r;
  PerfmonTask *task;

  memcpy (&r, record->data, sizeof r);
  task = lookup (self, r.task_id);
  if (task == NULL)
    self->unmatched_records++;
  else if (rh->type == PERFMON_TASK_RECORD_BEGIN)
    {
      PerfmonTaskRun run = { rh->time_ns, -1, rh->tid };

      g_array_append_val (task->runs, run);
    }
  else if (task->runs->len > 0 &&
           g_array_index (task->runs, PerfmonTaskRun, task->runs->len - 1).end_ns == -1)
    g_array_index (task->runs, PerfmonTaskRun, task->runs->len - 1).end_ns = MAX (rh->time_ns,
      g_array_index (task->runs, PerfmonTaskRun, task->runs->len - 1).begin_ns);
  else
    self->unmatched_records++;
  return TRUE;
}

static gboolean
read_label (FileReader    *file,
            const Record  *record,
            GError       **error)
{
  PerfmonTaskLog *self = file->reader->log;
  PerfmonTaskLabel label = { record->header.time_ns, record->header.tid, NULL };
  PerfmonTask *task;
  guint64 task_id;

  memcpy (&task_id, record->data + G_STRUCT_OFFSET (PerfmonTaskLabelRecord, task_id), sizeof task_id);
  label.text = record_string (record->data, record->header.size, sizeof (PerfmonTaskLabelRecord));
  if (label.text == NULL)
    return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "text",
                 "the label does not end inside its record");
  task = lookup (self, task_id);
  if (task == NULL)
    {
      self->unmatched_records++;
      g_free (label.text);
    }
  else
    g_array_append_val (task->labels, label);
  return TRUE;
}

static gboolean
read_name (FileReader    *file,
           const Record  *record,
           GError       **error)
{
  PerfmonTaskLog *self = file->reader->log;
  char *text = record_string (record->data, record->header.size, sizeof (PerfmonTaskNameRecord));
  PerfmonTask *task;
  guint64 task_id;

  if (text == NULL)
    return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "text",
                 "the task name does not end inside its record");
  memcpy (&task_id, record->data + G_STRUCT_OFFSET (PerfmonTaskNameRecord, task_id), sizeof task_id);
  task = lookup (self, task_id);
  if (task == NULL || task->name != NULL)
    {
      self->unmatched_records++;
      g_free (text);
    }
  else
    task->name = text;
  return TRUE;
}

static gboolean
read_symbol (FileReader    *file,
             const Record  *record,
             GError       **error)
{
  char *symbol = record_string (record->data, record->header.size, sizeof (PerfmonTaskSymbolRecord));
  guint64 callback;

  if (symbol == NULL)
    return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "symbol",
                 "the symbol does not end inside its record");
  memcpy (&callback, record->data + G_STRUCT_OFFSET (PerfmonTaskSymbolRecord, callback), sizeof callback);
  g_hash_table_replace (file->symbols, g_memdup2 (&callback, sizeof callback), symbol);
  return TRUE;
}

static gboolean
read_thread (FileReader    *file,
             const Record  *record,
             GError       **error)
{
  char *thread_name = record_string (record->data, record->header.size, sizeof (PerfmonTaskThreadRecord));

  if (thread_name == NULL)
    return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "name",
                 "the thread name does not end inside its record");
  g_hash_table_replace (file->thread_names, GUINT_TO_POINTER (record->header.tid), thread_name);
  return TRUE;
}

/* MODULE: the name, path and build id that follow the base, each checked
 * as snapshots check theirs. */
static gboolean
read_module (FileReader    *file,
             const Record  *record,
             GError       **error)
{
  PerfmonTaskLog *self = file->reader->log;
  const char *strings[3];
  gsize at = sizeof (PerfmonTaskModuleRecord);
  guint64 base;
  GPtrArray *modules;
  g_autoptr(GError) local_error = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (strings); i++)
    {
      const guint8 *nul = at < record->header.size ? memchr (record->data + at, '\0', record->header.size - at)
                                                   : NULL;

      if (nul == NULL)
        return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "strings",
                     "expected the module's name, path and build id, each ending inside the record");
      strings[i] = (const char *) record->data + at;
      at = nul + 1 - record->data;
    }
  if (!_perfmon_recorded_module_check ("module", strings[0], strings[1], strings[2], &local_error))
    return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "module", "%s",
                 local_error->message);
  memcpy (&base, record->data + G_STRUCT_OFFSET (PerfmonTaskModuleRecord, base), sizeof base);

  modules = g_hash_table_lookup (self->modules, GUINT_TO_POINTER (file->header.pid));
  if (modules == NULL)
    {
      modules = g_ptr_array_new_with_free_func (_perfmon_recorded_module_free);
      g_hash_table_insert (self->modules, GUINT_TO_POINTER (file->header.pid), modules);
    }
  /* One per module: a repeated name keeps the first; a flood is cut. */
  if (_perfmon_recorded_modules_find (modules, strings[0]) == NULL &&
      modules->len < PERFMON_RECORDED_MODULES_MAX)
    g_ptr_array_add (modules, _perfmon_recorded_module_new (strings[0], strings[1], base, strings[2]));
  return TRUE;
}

/* DBUS_SEND and DBUS_RECV: matched once every file is read
 * (link_dbus_messages()). */
static gboolean
read_dbus (FileReader    *file,
           const Record  *record,
           GError       **error)
{
  const PerfmonTaskRecordHeader *rh = &record->header;
  g_autofree char *sender = record_string (record->data, rh->size, sizeof (PerfmonTaskDBusRecord));
  PerfmonTaskDBusRecord r;
  char *key;

  if (sender == NULL)
    return fail (error, PERFMON_ERROR_INVALID_DATA, file->name, record->offset, "sender",
                 "the bus name does not end inside its record");
  memcpy (&r, record->data, sizeof r);
  key = g_strdup_printf ("%s %u", sender, r.serial);
  if (rh->type == PERFMON_TASK_RECORD_DBUS_SEND)
    {
      DBusSend *send = g_new (DBusSend, 1);

      *send = (DBusSend) { r.task_id, rh->time_ns, file->header.pid, rh->tid };
      g_hash_table_replace (file->reader->sends, key, send);
    }
  else
    {
      DBusRecv recv = { r.task_id, key };

      g_array_append_val (file->reader->recvs, recv);
    }
  return TRUE;
}

/* The record types this reader knows: the least size of each, and the pass
 * that reads it. Two passes: tasks, symbols and thread names first, then
 * what refers to tasks, so that no record depends on where the writer put
 * it. */
static const struct
{
  const char   *name;
  gsize         min_size;
  guint         pass;
  RecordReader  read;
} record_types[] = {
  [PERFMON_TASK_RECORD_DISPATCH]  = { "DISPATCH", sizeof (PerfmonTaskDispatchRecord), 0, read_dispatch },
  [PERFMON_TASK_RECORD_BEGIN]     = { "BEGIN", sizeof (PerfmonTaskIdRecord), 1, read_run },
  [PERFMON_TASK_RECORD_END]       = { "END", sizeof (PerfmonTaskIdRecord), 1, read_run },
  [PERFMON_TASK_RECORD_LABEL]     = { "LABEL", sizeof (PerfmonTaskLabelRecord) + 1, 1, read_label },
  [PERFMON_TASK_RECORD_SYMBOL]    = { "SYMBOL", sizeof (PerfmonTaskSymbolRecord) + 1, 0, read_symbol },
  [PERFMON_TASK_RECORD_THREAD]    = { "THREAD", sizeof (PerfmonTaskThreadRecord) + 1, 0, read_thread },
  [PERFMON_TASK_RECORD_DBUS_SEND] = { "DBUS_SEND", sizeof (PerfmonTaskDBusRecord) + 1, 1, read_dbus },
  [PERFMON_TASK_RECORD_DBUS_RECV] = { "DBUS_RECV", sizeof (PerfmonTaskDBusRecord) + 1, 1, read_dbus },
  [PERFMON_TASK_RECORD_NAME]      = { "NAME", sizeof (PerfmonTaskNameRecord) + 1, 1, read_name },
  [PERFMON_TASK_RECORD_MODULE]    = { "MODULE", sizeof (PerfmonTaskModuleRecord) + 3, 0, read_module },
};

/* --- the record iterator --- */

typedef struct
{
  const guint8 *data;
  gsize         len;
  gsize         offset;                   /* of the next record */
  const char   *name;                     /* the file's, for errors */
} RecordIter;

typedef enum
{
  RECORD_FOUND,
  RECORD_END,
  RECORD_ERROR,
} RecordStep;

/* The next record of a type this reader knows, its bounds and size
 * checked, in @out; records of other types (later versions') are
 * skipped. */
static RecordStep
record_iter_next (RecordIter  *iter,
                  Record      *out,
                  GError     **error)
{
  while (iter->offset < iter->len)
    {
      gsize offset = iter->offset;
      gsize left = iter->len - offset;
      const guint8 *record = iter->data + offset;
      PerfmonTaskRecordHeader rh;

      if (left < sizeof rh)
        {
          fail (error, PERFMON_ERROR_INVALID_DATA, iter->name, offset, "record",
                "the file ends inside a record header (%" G_GSIZE_FORMAT " bytes left)", left);
          return RECORD_ERROR;
        }
      memcpy (&rh, record, sizeof rh);
      if (rh.size < sizeof rh || rh.size % 8 != 0)
        {
          fail (error, PERFMON_ERROR_INVALID_DATA, iter->name, offset, "size",
                "%u, expected a multiple of 8 of at least %" G_GSIZE_FORMAT, rh.size, sizeof rh);
          return RECORD_ERROR;
        }
      if (rh.size > left)
        {
          fail (error, PERFMON_ERROR_INVALID_DATA, iter->name, offset, "size",
                "%u runs past the end of the file (%" G_GSIZE_FORMAT " bytes left)", rh.size, left);
          return RECORD_ERROR;
        }
      iter->offset += rh.size;

      if (rh.type == 0 || rh.type >= G_N_ELEMENTS (record_types))
        continue;
      if (rh.size < record_types[rh.type].min_size)
        {
          fail (error, PERFMON_ERROR_INVALID_DATA, iter->name, offset, "size",
                "%u is too short for a %s record (at least %" G_GSIZE_FORMAT ")",
                rh.size, record_types[rh.type].name, record_types[rh.type].min_size);
          return RECORD_ERROR;
        }
      *out = (Record) { rh, record, offset };
      return RECORD_FOUND;
    }
  return RECORD_END;
}

/* --- a file --- */

/* Names come from the file's own SYMBOL and THREAD records: addresses and
 * thread ids mean nothing in another process. */
static void
name_file_tasks (FileReader *file)
{
  g_autofree char *process_name = g_utf8_make_valid (file->header.process_name,
                                                     strnlen (file->header.process_name,
                                                              sizeof file->header.process_name));

  for (guint i = 0; i < file->tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (file->tasks, i);
      guint32 tid = task->runs->len > 0 ? g_array_index (task->runs, PerfmonTaskRun, 0).tid : task->dispatch_tid;
      const char *symbol = g_hash_table_lookup (file->symbols, &task->callback);
      const char *thread_name = g_hash_table_lookup (file->thread_names, GUINT_TO_POINTER (tid));

      /* An automatic task has its NAME already. */
      if (task->name == NULL)
        task->name = g_strdup (symbol);
      task->thread_name = g_strdup (thread_name);
      task->process_name = g_strdup (process_name);
    }
}

static gboolean
read_file (Reader      *reader,
           GBytes      *bytes,
           const char  *name,
           GError     **error)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  g_autoptr(GHashTable) symbols = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  g_autoptr(GHashTable) thread_names = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  g_autoptr(GPtrArray) file_tasks = g_ptr_array_new ();
  FileReader file = { reader, name, { { 0 } }, symbols, thread_names, file_tasks };

  if (!read_header (data, len, name, &file.header, error))
    return FALSE;
  reader->log->dropped_records += file.header.dropped_records;

  /* The first pass checks every record's bounds; the second re-reads
   * only what the first accepted (see record_types). */
  for (guint pass = 0; pass < 2; pass++)
    {
      RecordIter iter = { data, len, file.header.header_size, name };
      Record record;
      RecordStep step;

      while ((step = record_iter_next (&iter, &record, error)) == RECORD_FOUND)
        if (record_types[record.header.type].pass == pass &&
            !record_types[record.header.type].read (&file, &record, error))
          return FALSE;
      if (step == RECORD_ERROR)
        return FALSE;
    }

  name_file_tasks (&file);
  return TRUE;
}

static gint
compare_dispatch (gconstpointer a,
                  gconstpointer b)
{
  const PerfmonTask *ta = *(PerfmonTask * const *) a;
  const PerfmonTask *tb = *(PerfmonTask * const *) b;

  if (ta->dispatch_ns != tb->dispatch_ns)
    return ta->dispatch_ns < tb->dispatch_ns ? -1 : 1;
  return ta->id < tb->id ? -1 : ta->id > tb->id;
}

/* The D-Bus method @task handles, "INTERFACE.METHOD", from the label its
 * recorder gave it ("D-Bus INTERFACE.METHOD on PATH"), or NULL. */
static char *
dbus_method_of (PerfmonTask *task)
{
  static const char prefix[] = "D-Bus ";
  const PerfmonTaskLabel *label;
  const char *method;
  const char *on;

  if (task->labels->len == 0)
    return NULL;
  label = &g_array_index (task->labels, PerfmonTaskLabel, 0);
  if (!g_str_has_prefix (label->text, prefix))
    return NULL;
  method = label->text + strlen (prefix);
  on = strstr (method, " on ");
  return on != NULL ? g_strndup (method, on - method) : g_strdup (method);
}

/* A task that handles a D-Bus message is the child of the task that sent
 * it, whichever files the two are in, and its chain belongs to the sender's
 * source event: the receiving process recorded a D-Bus source event of its
 * own, which the link replaces in the receiver and in what it caused
 * there. Runs on the tasks sorted by dispatch, so a parent is always
 * settled before its children. */
static void
link_dbus_messages (Reader *reader)
{
  PerfmonTaskLog *self = reader->log;
  g_autoptr(GHashTable) replaced = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL, g_free);

  for (guint i = 0; i < reader->recvs->len; i++)
    {
      DBusRecv *recv = &g_array_index (reader->recvs, DBusRecv, i);
      DBusSend *send = g_hash_table_lookup (reader->sends, recv->key);
      PerfmonTask *receiver = lookup (self, recv->task_id);
      PerfmonTask *sender;
      char *method;

      /* A handler the tracer saw as a GSource dispatch (GDBus's
       * call_in_idle_cb, in an unmodified service) is named after its
       * method. The dispatch wrappers' handlers keep their callback's
       * name; their slices are named after the method too. */
      if (receiver != NULL && receiver->callback == 0 && (method = dbus_method_of (receiver)) != NULL)
        {
          g_free (receiver->name);
          receiver->name = method;
        }

      if (send == NULL || receiver == NULL || (sender = lookup (self, send->task_id)) == NULL ||
          sender == receiver)
        {
          self->unmatched_records++;
          continue;
        }

      receiver->parent_id = sender->id;
      receiver->dbus_linked = TRUE;
      receiver->dbus_send_ns = send->time_ns;
      receiver->dbus_send_pid = send->pid;
      receiver->dbus_send_tid = send->tid;
    }

  for (guint i = 0; i < self->tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (self->tasks, i);
      PerfmonTask *parent = task->parent_id != task->id ? lookup (self, task->parent_id) : NULL;
      const guint64 *parent_old;

      if (parent == NULL || parent->source_event_id == task->source_event_id)
        continue;
      parent_old = g_hash_table_lookup (replaced, &parent->id);
      /* Linked over D-Bus, or dispatched in the receiving process under
       * the source event its parent had before the link. */
      if (task->dbus_linked || (parent_old != NULL && *parent_old == task->source_event_id))
        {
          g_hash_table_insert (replaced, &task->id, g_memdup2 (&task->source_event_id, sizeof (guint64)));
          task->source_event_id = parent->source_event_id;
          task->source_event_type = parent->source_event_type;
        }
    }
}

PerfmonTaskLog *
_perfmon_task_log_new_from_bytes (GBytes * const     *files,
                                  const char * const *names,
                                  guint               n_files,
                                  GError            **error)
{
  g_autoptr(PerfmonTaskLog) self = g_object_new (PERFMON_TYPE_TASK_LOG, NULL);
  Reader reader = { self, NULL, NULL };
  gboolean ok = TRUE;

  reader.sends = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  reader.recvs = g_array_new (FALSE, FALSE, sizeof (DBusRecv));
  g_array_set_clear_func (reader.recvs, dbus_recv_clear);

  for (guint i = 0; ok && i < n_files; i++)
    ok = read_file (&reader, files[i], names[i], error);
  if (ok)
    {
      g_ptr_array_sort (self->tasks, compare_dispatch);
      link_dbus_messages (&reader);
    }

  g_hash_table_unref (reader.sends);
  g_array_unref (reader.recvs);
  if (!ok)
    return NULL;

  for (guint i = 0; i < self->tasks->len; i++)
    _perfmon_task_seal (g_ptr_array_index (self->tasks, i));

  return g_steal_pointer (&self);
}

/**
 * perfmon_task_log_new_from_files:
 * @paths: (array zero-terminated=1): the task log files, one per process
 *   (or per tracing session) of one boot
 * @error: return location for a #GError
 *
 * Reads task logs written by [func@tracer_stop] or [func@tracer_dump] and
 * links them into one graph: a task that handles a D-Bus message becomes
 * the child of the task that sent it, in whichever file each is.
 *
 * A file that is truncated or corrupt fails the whole call with an error
 * in the %PERFMON_ERROR domain naming the file, the byte offset and the
 * field; a file of another version or byte order fails with
 * %PERFMON_ERROR_UNSUPPORTED_VERSION.
 *
 * Returns: (transfer full): the task log, or %NULL with @error set
 *
 * Since: 0.1
 */
PerfmonTaskLog *
perfmon_task_log_new_from_files (const char * const  *paths,
                                 GError             **error)
{
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);
  guint n;

  g_return_val_if_fail (paths != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  n = g_strv_length ((char **) paths);
  if (n == 0)
    {
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                           "paths: no task log file given");
      return NULL;
    }

  for (guint i = 0; i < n; i++)
    {
      g_autoptr(GMappedFile) mapped = g_mapped_file_new (paths[i], FALSE, error);

      if (mapped == NULL)
        return NULL;
      g_ptr_array_add (files, g_mapped_file_get_bytes (mapped));
    }

  return _perfmon_task_log_new_from_bytes ((GBytes * const *) files->pdata, paths, n, error);
}

/**
 * perfmon_task_log_new_from_file:
 * @path: a task log file
 * @error: return location for a #GError
 *
 * Reads one task log; see [ctor@TaskLog.new_from_files].
 *
 * Returns: (transfer full): the task log, or %NULL with @error set
 *
 * Since: 0.1
 */
PerfmonTaskLog *
perfmon_task_log_new_from_file (const char  *path,
                                GError     **error)
{
  const char *paths[] = { path, NULL };

  g_return_val_if_fail (path != NULL, NULL);

  return perfmon_task_log_new_from_files (paths, error);
}

/* --- questions --------------------------------------------------------- */

/**
 * perfmon_task_log_get_tasks:
 * @self: a task log
 *
 * Gets every task of the log.
 *
 * Returns: (transfer none) (element-type PerfmonTask): every task whose
 *   dispatch was recorded, by dispatch time
 *
 * Since: 0.1
 */
GPtrArray *
perfmon_task_log_get_tasks (PerfmonTaskLog *self)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);

  return self->tasks;
}

/**
 * perfmon_task_log_find_task:
 * @self: a task log
 * @id: a task id
 *
 * Looks a task up by its id.
 *
 * Returns: (transfer none) (nullable): the task, or %NULL if the log has no
 *   task of that id
 *
 * Since: 0.1
 */
PerfmonTask *
perfmon_task_log_find_task (PerfmonTaskLog *self,
                            guint64         id)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);

  return lookup (self, id);
}

static guint64 *
steal_ids (GArray *ids,
           gsize  *n_ids)
{
  *n_ids = ids->len;
  return (guint64 *) (gpointer) g_array_free (ids, FALSE);
}

/**
 * perfmon_task_log_find_ancestors:
 * @self: a task log
 * @id: a task id
 * @n_ids: (out): the number of ids returned
 *
 * The task's parent, its parent's parent, and so on up to the task that a
 * source event started (its own parent) or whose dispatcher the log does
 * not have.
 *
 * Returns: (array length=n_ids) (transfer full): the ancestors' ids, the
 *   parent first; empty for an unknown @id
 *
 * Since: 0.1
 */
guint64 *
perfmon_task_log_find_ancestors (PerfmonTaskLog *self,
                                 guint64         id,
                                 gsize          *n_ids)
{
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (guint64));
  PerfmonTask *task;

  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (n_ids != NULL, NULL);

  task = lookup (self, id);
  /* A corrupt file may make a cycle: no chain is longer than the log. */
  while (task != NULL && task->parent_id != task->id && ids->len < self->tasks->len)
    {
      g_array_append_val (ids, task->parent_id);
      task = lookup (self, task->parent_id);
    }
  return steal_ids (ids, n_ids);
}

static void
build_children (PerfmonTaskLog *self)
{
  self->children = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL, (GDestroyNotify) g_array_unref);
  for (guint i = 0; i < self->tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (self->tasks, i);
      PerfmonTask *parent;
      GArray *children;

      if (task->parent_id == task->id || (parent = lookup (self, task->parent_id)) == NULL)
        continue;
      children = g_hash_table_lookup (self->children, &parent->id);
      if (children == NULL)
        {
          children = g_array_new (FALSE, FALSE, sizeof (guint64));
          g_hash_table_insert (self->children, &parent->id, children);
        }
      g_array_append_val (children, task->id);
    }
}

/**
 * perfmon_task_log_find_followers:
 * @self: a task log
 * @id: a task id
 * @n_ids: (out): the number of ids returned
 *
 * The tasks that the task created (dispatched, or sent a D-Bus message
 * to), the tasks they created, and so on.
 *
 * Returns: (array length=n_ids) (transfer full): the followers' ids,
 *   breadth first; empty for an unknown @id
 *
 * Since: 0.1
 */
guint64 *
perfmon_task_log_find_followers (PerfmonTaskLog *self,
                                 guint64         id,
                                 gsize          *n_ids)
{
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_autoptr(GHashTable) seen = g_hash_table_new (g_int64_hash, g_int64_equal);
  PerfmonTask *task;

  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (n_ids != NULL, NULL);

  g_mutex_lock (&self->children_lock);
  if (self->children == NULL)
    build_children (self);
  g_mutex_unlock (&self->children_lock);

  task = lookup (self, id);
  if (task != NULL)
    g_hash_table_add (seen, &task->id);
  for (guint next = 0; task != NULL; task = next < ids->len ? lookup (self, g_array_index (ids, guint64, next++)) : NULL)
    {
      GArray *children = g_hash_table_lookup (self->children, &task->id);

      for (guint i = 0; children != NULL && i < children->len; i++)
        {
          PerfmonTask *child = lookup (self, g_array_index (children, guint64, i));

          if (g_hash_table_add (seen, &child->id))
            g_array_append_val (ids, child->id);
        }
    }
  return steal_ids (ids, n_ids);
}

/**
 * perfmon_task_log_find_blockers:
 * @self: a task log
 * @id: a task id
 * @n_ids: (out): the number of ids returned
 *
 * The tasks that kept the task waiting: those that ran on the thread it
 * ran on, in its process, between when it was due (its dispatch, or for a
 * timeout its dispatch plus its interval) and its (first) begin. The
 * longer a task's queueing time, the more these cost it.
 *
 * Returns: (array length=n_ids) (transfer full): the blockers' ids, in the
 *   order they ran; empty for an unknown @id or one that never ran
 *
 * Since: 0.1
 */
guint64 *
perfmon_task_log_find_blockers (PerfmonTaskLog *self,
                                guint64         id,
                                gsize          *n_ids)
{
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_autoptr(GArray) begins = g_array_new (FALSE, FALSE, sizeof (gint64));
  PerfmonTask *task;
  const PerfmonTaskRun *first;
  gint64 due_ns;

  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (n_ids != NULL, NULL);

  task = lookup (self, id);
  if (task == NULL || task->runs->len == 0)
    return steal_ids (ids, n_ids);
  first = &g_array_index (task->runs, PerfmonTaskRun, 0);
  due_ns = _perfmon_task_due_ns (task);

  for (guint i = 0; i < self->tasks->len; i++)
    {
      PerfmonTask *other = g_ptr_array_index (self->tasks, i);

      if (other == task || other->pid != task->pid)
        continue;
      for (guint r = 0; r < other->runs->len; r++)
        {
          const PerfmonTaskRun *run = &g_array_index (other->runs, PerfmonTaskRun, r);
          gint64 end = run->end_ns == -1 ? first->begin_ns : run->end_ns;

          if (run->tid == first->tid && run->begin_ns < first->begin_ns && end > due_ns)
            {
              /* Sorted by when each blocker first ran in the window. */
              guint at = ids->len;

              while (at > 0 && g_array_index (begins, gint64, at - 1) > run->begin_ns)
                at--;
              g_array_insert_val (ids, at, other->id);
              g_array_insert_val (begins, at, run->begin_ns);
              break;
            }
        }
    }
  return steal_ids (ids, n_ids);
}

/* --- the same questions, exact from JavaScript ------------------------- */

/* A JavaScript number is a double: task ids (pid << 32 | serial) pass 2^53
 * for pids from 2^21 on. These take and give tasks, or ids as text. */

/**
 * perfmon_task_log_find_task_by_id_string:
 * @self: a task log
 * @id: a task id as text: `0x` and hexadecimal digits, as
 *   [method@Task.dup_id_string] gives it, or decimal digits
 *
 * [method@TaskLog.find_task] for languages whose numbers cannot hold every
 * task id.
 *
 * Returns: (transfer none) (nullable): the task, or %NULL if @id is not a
 *   task id or the log has no task of that id
 *
 * Since: 0.2
 */
PerfmonTask *
perfmon_task_log_find_task_by_id_string (PerfmonTaskLog *self,
                                         const char     *id)
{
  guint64 value;
  const char *digits;
  guint base = 10;

  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (id != NULL, NULL);

  digits = id;
  if (g_str_has_prefix (id, "0x") || g_str_has_prefix (id, "0X"))
    {
      digits = id + 2;
      base = 16;
    }
  /* Digits only: no sign, no space, no second prefix, nothing after. */
  for (const char *c = digits; *c != '\0'; c++)
    if (base == 16 ? !g_ascii_isxdigit (*c) : !g_ascii_isdigit (*c))
      return NULL;
  if (!g_ascii_string_to_unsigned (digits, base, 1, G_MAXUINT64, &value, NULL))
    return NULL;
  return lookup (self, value);
}

/**
 * perfmon_task_log_find_task_by_serial:
 * @self: a task log
 * @process: the pid of the task's process, see [method@Task.get_process]
 * @serial: the task's serial in it, see [method@Task.get_serial]
 *
 * [method@TaskLog.find_task] by the two halves of the id, each of which a
 * JavaScript number holds exactly.
 *
 * Returns: (transfer none) (nullable): the task, or %NULL if the log has
 *   no such task
 *
 * Since: 0.2
 */
PerfmonTask *
perfmon_task_log_find_task_by_serial (PerfmonTaskLog *self,
                                      guint           process,
                                      guint           serial)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);

  return lookup (self, ((guint64) process << 32) | serial);
}

/**
 * perfmon_task_log_lookup_module:
 * @self: a task log
 * @process: the pid of the process whose file recorded the module (see
 *   [method@Perfmon.Task.get_process])
 * @name: the module's file name, as task names use it before `+0x`
 * @path: (out) (optional) (transfer none): where to store the file the
 *   process loaded
 * @base: (out) (optional): where to store the module's load base
 * @build_id: (out) (optional) (transfer none): where to store its GNU build
 *   id (lowercase hex, "" if it has none)
 *
 * Finds what the process's file recorded of the module that its task names
 * of the form `module+0xOFFSET` refer to (a callback without an exported
 * symbol: the process names it so and never symbolizes), so that a
 * symbolizer can name the function after the process has exited: see
 * [method@Perfmon.Symbolizer.lookup]. Files written before 0.3 record
 * none.
 *
 * Returns: %TRUE if the file of @process recorded the module @name
 *
 * Since: 0.3
 */
gboolean
perfmon_task_log_lookup_module (PerfmonTaskLog  *self,
                                guint            process,
                                const char      *name,
                                const char     **path,
                                guint64         *base,
                                const char     **build_id)
{
  const PerfmonRecordedModule *module;

  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), FALSE);
  g_return_val_if_fail (name != NULL, FALSE);

  module = _perfmon_recorded_modules_find (g_hash_table_lookup (self->modules, GUINT_TO_POINTER (process)), name);
  if (module == NULL)
    return FALSE;
  if (path != NULL)
    *path = module->path;
  if (base != NULL)
    *base = module->base;
  if (build_id != NULL)
    *build_id = module->build_id;
  return TRUE;
}

/**
 * perfmon_task_log_get_parent:
 * @self: a task log
 * @task: a task of @self
 *
 * Finds the task that dispatched @task.
 *
 * Returns: (transfer none) (nullable): the task that dispatched @task, or
 *   %NULL if @task is a root or the log does not have its parent
 *
 * Since: 0.2
 */
PerfmonTask *
perfmon_task_log_get_parent (PerfmonTaskLog *self,
                             PerfmonTask    *task)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (task != NULL, NULL);

  return task->parent_id == task->id ? NULL : lookup (self, task->parent_id);
}

typedef guint64 *(*FindIds) (PerfmonTaskLog *self,
                             guint64         id,
                             gsize          *n_ids);

/* The tasks @find finds for @task, those the log has, in order; the log
 * owns them, the caller the array. */
static GPtrArray *
find_tasks (PerfmonTaskLog *self,
            PerfmonTask    *task,
            FindIds         find)
{
  gsize n_ids;
  g_autofree guint64 *ids = find (self, task->id, &n_ids);
  GPtrArray *tasks = g_ptr_array_sized_new ((guint) n_ids);

  for (gsize i = 0; i < n_ids; i++)
    {
      PerfmonTask *found = lookup (self, ids[i]);

      if (found != NULL)
        g_ptr_array_add (tasks, found);
    }
  return tasks;
}

/**
 * perfmon_task_log_get_ancestor_tasks:
 * @self: a task log
 * @task: a task of @self
 *
 * [method@TaskLog.find_ancestors] as tasks: exact from any language.
 *
 * Returns: (transfer container) (element-type PerfmonTask): the ancestors
 *   the log has, the parent first; the log owns the tasks
 *
 * Since: 0.2
 */
GPtrArray *
perfmon_task_log_get_ancestor_tasks (PerfmonTaskLog *self,
                                     PerfmonTask    *task)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (task != NULL, NULL);

  return find_tasks (self, task, perfmon_task_log_find_ancestors);
}

/**
 * perfmon_task_log_get_follower_tasks:
 * @self: a task log
 * @task: a task of @self
 *
 * [method@TaskLog.find_followers] as tasks.
 *
 * Returns: (transfer container) (element-type PerfmonTask): the followers,
 *   breadth first; the log owns the tasks
 *
 * Since: 0.2
 */
GPtrArray *
perfmon_task_log_get_follower_tasks (PerfmonTaskLog *self,
                                     PerfmonTask    *task)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (task != NULL, NULL);

  return find_tasks (self, task, perfmon_task_log_find_followers);
}

/**
 * perfmon_task_log_get_blocker_tasks:
 * @self: a task log
 * @task: a task of @self
 *
 * [method@TaskLog.find_blockers] as tasks.
 *
 * Returns: (transfer container) (element-type PerfmonTask): the blockers,
 *   in the order they ran; the log owns the tasks
 *
 * Since: 0.2
 */
GPtrArray *
perfmon_task_log_get_blocker_tasks (PerfmonTaskLog *self,
                                    PerfmonTask    *task)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);
  g_return_val_if_fail (task != NULL, NULL);

  return find_tasks (self, task, perfmon_task_log_find_blockers);
}

/**
 * perfmon_task_log_get_dropped_records:
 * @self: a task log
 *
 * Gets how many records the tracer dropped because a buffer was full.
 *
 * Returns: how many records the tracer could not keep (full buffers), over
 *   all files: the graph misses what they said
 *
 * Since: 0.1
 */
guint64
perfmon_task_log_get_dropped_records (PerfmonTaskLog *self)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), 0);

  return self->dropped_records;
}

/**
 * perfmon_task_log_get_unmatched_records:
 * @self: a task log
 *
 * Gets how many records referred to a task whose dispatch is not in the
 * log (a flight recorder overwrote it).
 *
 * Returns: how many records name a task or message the log does not have
 *   (a BEGIN whose DISPATCH a flight recorder had overwritten, a D-Bus
 *   message whose other side was not traced); they are ignored
 *
 * Since: 0.1
 */
guint64
perfmon_task_log_get_unmatched_records (PerfmonTaskLog *self)
{
  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), 0);

  return self->unmatched_records;
}

/* --- Chrome trace ------------------------------------------------------ */

static void
add_id_member (JsonBuilder *builder,
               const char  *member,
               guint64      id)
{
  g_autofree char *text = g_strdup_printf ("0x%" G_GINT64_MODIFIER "x", id);

  /* As strings: JSON readers hold numbers in doubles, 53 bits. */
  json_builder_set_member_name (builder, member);
  json_builder_add_string_value (builder, text);
}

/* Chrome trace times: microseconds from @base_ns, computed in doubles so
 * that no input, however corrupt, overflows; @base_ns makes them never
 * negative. */
static double
trace_us (gint64 time_ns,
          gint64 base_ns)
{
  return ((double) time_ns - (double) base_ns) / 1000.0;
}

static void
begin_event (JsonBuilder *builder,
             const char  *name,
             const char  *phase,
             const char  *category,
             gint64       time_ns,
             gint64       base_ns,
             guint32      pid,
             guint32      tid)
{
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, name);
  json_builder_set_member_name (builder, "ph");
  json_builder_add_string_value (builder, phase);
  json_builder_set_member_name (builder, "cat");
  json_builder_add_string_value (builder, category);
  json_builder_set_member_name (builder, "ts");
  json_builder_add_double_value (builder, trace_us (time_ns, base_ns));
  json_builder_set_member_name (builder, "pid");
  json_builder_add_int_value (builder, pid);
  json_builder_set_member_name (builder, "tid");
  json_builder_add_int_value (builder, tid);
}

static void
add_metadata (JsonBuilder *builder,
              const char  *what,
              guint32      pid,
              guint32      tid,
              const char  *value)
{
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, what);
  json_builder_set_member_name (builder, "ph");
  json_builder_add_string_value (builder, "M");
  json_builder_set_member_name (builder, "pid");
  json_builder_add_int_value (builder, pid);
  json_builder_set_member_name (builder, "tid");
  json_builder_add_int_value (builder, tid);
  json_builder_set_member_name (builder, "args");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "name");
  json_builder_add_string_value (builder, value);
  json_builder_end_object (builder);
  json_builder_end_object (builder);
}

/* The category of the run slices, which the flows share: Chrome DevTools
 * binds a flow event only to a slice of the same pid, tid, ts and
 * category. */
#define TRACE_RUN_CATEGORY "task"

/* The run of @parent a flow to its child dispatched at @dispatch_ns on
 * @dispatch_tid starts from: the one that was going on then (the run
 * that dispatched it), else the last one before (a run cut off by a
 * corrupt file), else its first. NULL if @parent never ran. */
static const PerfmonTaskRun *
dispatching_run (PerfmonTask *parent,
                 gint64       dispatch_ns,
                 guint32      dispatch_tid)
{
  const PerfmonTaskRun *before = NULL;

  for (guint r = 0; r < parent->runs->len; r++)
    {
      const PerfmonTaskRun *run = &g_array_index (parent->runs, PerfmonTaskRun, r);

      if (run->begin_ns > dispatch_ns)
        break;
      if (run->tid == dispatch_tid && (run->end_ns == -1 || run->end_ns >= dispatch_ns))
        return run;
      before = run;
    }
  if (before != NULL)
    return before;
  return parent->runs->len > 0 ? &g_array_index (parent->runs, PerfmonTaskRun, 0) : NULL;
}

/* A flow from @parent's run @from to @child's run @to: its start is bound
 * to @from's slice (same pid, tid, ts and category: DevTools' rule; for
 * Perfetto it is inside that slice), its end to @to's slice ("bp": "e",
 * same pid, tid, ts and category). @at_ns, when the child was dispatched
 * or its message sent, goes in the start's args. */
static void
add_flow (JsonBuilder          *builder,
          guint64               flow_id,
          const char           *name,
          gint64                at_ns,
          const PerfmonTaskRun *from,
          guint32               from_pid,
          const PerfmonTaskRun *to,
          guint32               to_pid,
          gint64                base_ns)
{
  begin_event (builder, name, "s", TRACE_RUN_CATEGORY, from->begin_ns, base_ns, from_pid, from->tid);
  json_builder_set_member_name (builder, "id");
  json_builder_add_int_value (builder, (gint64) flow_id);
  json_builder_set_member_name (builder, "args");
  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "at_us");
  json_builder_add_double_value (builder, trace_us (at_ns, base_ns));
  json_builder_end_object (builder);
  json_builder_end_object (builder);

  begin_event (builder, name, "f", TRACE_RUN_CATEGORY, to->begin_ns, base_ns, to_pid, to->tid);
  json_builder_set_member_name (builder, "id");
  json_builder_add_int_value (builder, (gint64) flow_id);
  json_builder_set_member_name (builder, "bp");
  json_builder_add_string_value (builder, "e");
  json_builder_end_object (builder);
}

/* The name of @task's slices: its callback's, but a D-Bus method handler
 * (whose callback is the tracer's perfmon_dbus_method_invocation_begin)
 * is named after the method, from the label that function adds. */
static char *
slice_name (PerfmonTask *task)
{
  char *method = NULL;

  if (g_str_equal (task->name, "perfmon_dbus_method_invocation_begin"))
    method = dbus_method_of (task);
  return method != NULL ? method : g_strdup (task->name);
}

/**
 * perfmon_task_log_to_chrome_trace:
 * @self: a task log
 *
 * Writes the log in the Chrome Trace Event format, for Perfetto UI
 * (ui.perfetto.dev) and chrome://tracing:
 *
 * - one complete ("X") slice per run of a task, category "task", named
 *   after its callback (a D-Bus method handler after its method), with its
 *   ids, source event and queueing time (from when it was due) in `args`;
 * - an instant ("i") event per label;
 * - a flow from each task's parent to the task's first run ("dispatch",
 *   or "D-Bus message" for a handler linked to the task that sent the
 *   message), drawn as both tools bind flows: its "s" shares pid, tid, ts
 *   and category with the parent's run slice that dispatched it (or sent
 *   the message; the exact time is in its `args`), its "f" ("bp": "e")
 *   with the task's run slice; a root task, and a task whose parent is not
 *   in the log or never ran, has none;
 * - process and thread names as metadata ("M") events.
 *
 * Times are CLOCK_MONOTONIC microseconds (counted from the earliest event
 * if a corrupt log has times before 0: never negative); task ids are
 * hexadecimal strings.
 *
 * Returns: (transfer full): the JSON text
 *
 * Since: 0.1
 */
char *
perfmon_task_log_to_chrome_trace (PerfmonTaskLog *self)
{
  return perfmon_task_log_to_chrome_trace_named (self, NULL, NULL);
}

/**
 * perfmon_task_log_to_chrome_trace_named:
 * @self: a task log
 * @name_func: (scope call) (closure user_data) (nullable): names each
 *   task's run slices
 * @user_data: data for @name_func
 *
 * perfmon_task_log_to_chrome_trace(), the task runs' slices named by
 * @name_func (called once per task that ran), e.g. to symbolize the
 * `module+0xOFF` names of callbacks that have no exported symbol, which
 * the program never symbolizes (`perfmon tasks export` and perfmond's
 * task-trace download do). Labels and flows keep their names.
 *
 * Returns: (transfer full): the JSON text
 *
 * Since: 0.3
 */
char *
perfmon_task_log_to_chrome_trace_named (PerfmonTaskLog        *self,
                                        PerfmonTaskLogNameFunc name_func,
                                        gpointer               user_data)
{
  g_autoptr(JsonBuilder) builder = json_builder_new ();
  g_autoptr(JsonGenerator) generator = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autoptr(GHashTable) processes = g_hash_table_new (NULL, NULL);
  g_autoptr(GHashTable) threads = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  guint64 next_flow_id = 1;
  gint64 base_ns = 0;

  g_return_val_if_fail (PERFMON_IS_TASK_LOG (self), NULL);

  json_builder_begin_object (builder);
  json_builder_set_member_name (builder, "displayTimeUnit");
  json_builder_add_string_value (builder, "ms");
  json_builder_set_member_name (builder, "traceEvents");
  json_builder_begin_array (builder);

  for (guint i = 0; i < self->tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (self->tasks, i);
      guint64 key = ((guint64) task->pid << 32) |
                    (task->runs->len > 0 ? g_array_index (task->runs, PerfmonTaskRun, 0).tid : task->dispatch_tid);

      if (!g_hash_table_contains (processes, GUINT_TO_POINTER (task->pid)))
        {
          g_hash_table_add (processes, GUINT_TO_POINTER (task->pid));
          add_metadata (builder, "process_name", task->pid, 0, task->process_name);
        }
      if (task->thread_name != NULL && g_hash_table_add (threads, g_memdup2 (&key, sizeof key)))
        add_metadata (builder, "thread_name", task->pid, (guint32) key, task->thread_name);
    }

  /* The earliest time of the log, if before 0 (a corrupt file): ts are
   * counted from there, never negative. */
  for (guint i = 0; i < self->tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (self->tasks, i);

      base_ns = MIN (base_ns, task->dispatch_ns);
      if (task->dbus_linked)
        base_ns = MIN (base_ns, task->dbus_send_ns);
      for (guint r = 0; r < task->runs->len; r++)
        base_ns = MIN (base_ns, g_array_index (task->runs, PerfmonTaskRun, r).begin_ns);
      for (guint l = 0; l < task->labels->len; l++)
        base_ns = MIN (base_ns, g_array_index (task->labels, PerfmonTaskLabel, l).time_ns);
    }

  for (guint i = 0; i < self->tasks->len; i++)
    {
      PerfmonTask *task = g_ptr_array_index (self->tasks, i);
      g_autoptr(GEnumClass) types = g_type_class_ref (PERFMON_TYPE_SOURCE_EVENT_TYPE);
      GEnumValue *type = g_enum_get_value (types, task->source_event_type);
      g_autofree char *name = slice_name (task);

      if (name_func != NULL && task->runs->len > 0)
        {
          char *named = name_func (task->pid, name, user_data);

          if (named != NULL)
            {
              g_free (name);
              name = named;
            }
        }
      for (guint r = 0; r < task->runs->len; r++)
        {
          const PerfmonTaskRun *run = &g_array_index (task->runs, PerfmonTaskRun, r);
          gint64 end_ns = run->end_ns == -1 ? run->begin_ns : run->end_ns;

          begin_event (builder, name, "X", TRACE_RUN_CATEGORY, run->begin_ns, base_ns, task->pid, run->tid);
          json_builder_set_member_name (builder, "dur");
          json_builder_add_double_value (builder, MAX (trace_us (end_ns, run->begin_ns), 0.0));
          json_builder_set_member_name (builder, "args");
          json_builder_begin_object (builder);
          add_id_member (builder, "task_id", task->id);
          add_id_member (builder, "parent_id", task->parent_id);
          add_id_member (builder, "source_event_id", task->source_event_id);
          json_builder_set_member_name (builder, "source_event_type");
          json_builder_add_string_value (builder, type != NULL ? type->value_nick : "unknown");
          json_builder_set_member_name (builder, "run");
          json_builder_add_int_value (builder, r);
          if (r == 0)
            {
              json_builder_set_member_name (builder, "queueing_us");
              json_builder_add_double_value (builder, MAX (trace_us (run->begin_ns, _perfmon_task_due_ns (task)), 0.0));
            }
          if (run->end_ns == -1)
            {
              json_builder_set_member_name (builder, "unfinished");
              json_builder_add_boolean_value (builder, TRUE);
            }
          json_builder_end_object (builder);
          json_builder_end_object (builder);
        }

      for (guint l = 0; l < task->labels->len; l++)
        {
          const PerfmonTaskLabel *label = &g_array_index (task->labels, PerfmonTaskLabel, l);

          begin_event (builder, label->text, "i", "label", label->time_ns, base_ns, task->pid, label->tid);
          json_builder_set_member_name (builder, "s");
          json_builder_add_string_value (builder, "t");
          json_builder_set_member_name (builder, "args");
          json_builder_begin_object (builder);
          add_id_member (builder, "task_id", task->id);
          json_builder_end_object (builder);
          json_builder_end_object (builder);
        }

      /* From the run of the parent that dispatched it, or sent the
       * message it handles. */
      if (task->runs->len > 0 && task->parent_id != task->id)
        {
          PerfmonTask *parent = lookup (self, task->parent_id);
          const PerfmonTaskRun *first = &g_array_index (task->runs, PerfmonTaskRun, 0);
          const PerfmonTaskRun *from = NULL;

          if (parent != NULL && task->dbus_linked)
            from = dispatching_run (parent, task->dbus_send_ns, task->dbus_send_tid);
          else if (parent != NULL)
            from = dispatching_run (parent, task->dispatch_ns, task->dispatch_tid);
          if (from != NULL)
            add_flow (builder, next_flow_id++, task->dbus_linked ? "D-Bus message" : "dispatch",
                      task->dbus_linked ? task->dbus_send_ns : task->dispatch_ns,
                      from, parent->pid, first, task->pid, base_ns);
        }
    }

  json_builder_end_array (builder);
  json_builder_end_object (builder);

  root = json_builder_get_root (builder);
  json_generator_set_root (generator, root);
  return json_generator_to_data (generator, NULL);
}

/* --- GObject ----------------------------------------------------------- */

static void
perfmon_task_log_finalize (GObject *object)
{
  PerfmonTaskLog *self = PERFMON_TASK_LOG (object);

  g_clear_pointer (&self->children, g_hash_table_unref);
  g_hash_table_unref (self->modules);
  g_hash_table_unref (self->by_id);
  g_ptr_array_unref (self->tasks);
  g_mutex_clear (&self->children_lock);

  G_OBJECT_CLASS (perfmon_task_log_parent_class)->finalize (object);
}

static void
perfmon_task_log_class_init (PerfmonTaskLogClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = perfmon_task_log_finalize;
}

static void
perfmon_task_log_init (PerfmonTaskLog *self)
{
  self->tasks = g_ptr_array_new_with_free_func ((GDestroyNotify) perfmon_task_unref);
  self->by_id = g_hash_table_new (g_int64_hash, g_int64_equal);
  self->modules = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_ptr_array_unref);
  g_mutex_init (&self->children_lock);
}
