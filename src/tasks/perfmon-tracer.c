/* perfmon-tracer.c: task tracing, the recording side
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-dispatch-observer-private.h"
#include "perfmon-dispatch-private.h"
#include "perfmon-utf8.h"
#include "perfmon-error.h"
#include "perfmon-log-dir-private.h"
#include "perfmon-tracer.h"
#include "perfmon-tracer-private.h"
#include "perfmon-tracer-buffer-private.h"
#include "perfmon-automatic-tasks-private.h"
#include "perfmon-task-writer-private.h"

/* Design.
 *
 * Recording. Every thread that records an event while tracing is on gets a
 * Buffer at its first event: one allocation, registered in a global list
 * under registry_lock. After that an event is a few word stores into the
 * thread's own buffer and one release store of its head: no lock, no
 * system call, no allocation (tests/test-hot-path.c proves it under
 * seccomp). Times are cycle-counter readings; they become CLOCK_MONOTONIC
 * nanoseconds when a file is written, never on the hot path. Callback
 * addresses become SYMBOL records (dladdr()) at the same time. Writing the
 * file is perfmon-task-writer.c's: this file copies the buffers for it.
 *
 * The buffer is a ring of 4 KiB chunks that records never straddle (a
 * record that does not fit in the rest of a chunk skips to the next one,
 * leaving a type-0 pad, or nothing when fewer than 16 bytes are left), so
 * that a reader can start parsing at any chunk boundary. @head is the
 * absolute byte offset of the end of the last published record; the byte
 * at offset o lives at data[o % capacity]. A session's records start at
 * @base.
 *
 * - A file session (perfmon_tracer_start()) never overwrites: a record
 *   that does not fit is dropped and counted in @dropped, and the file's
 *   header carries the sum.
 * - The flight recorder overwrites the oldest chunks, and a dump keeps the
 *   records of the last N seconds that are still there.
 *
 * The rule between the owner and readers (stop, dump, the jank capture)
 * is a seqlock on @head: the owner builds a record (on its stack, a long
 * one in its buffer's staging area), stores its words into the ring, then
 * stores the new head with release ordering. A reader loads the head with acquire ordering, copies the
 * words below it and loads the head again: in a file session nothing
 * below a published head is ever written again, so the copy is exact; in
 * the flight recorder the owner may have overwritten the oldest part of
 * what was copied meanwhile, so the reader throws away every chunk the
 * owner may have reached from the second head on (its chunk and the next
 * one, a capacity earlier).
 *
 * Race-free by the C11 memory model, not only in practice, as the label
 * stack (src/hang/perfmon-label.c): the ring is an array of 64-bit atomic
 * words (records and pads are whole words), the owner stores each with
 * release ordering and the reader loads each with acquire ordering; no
 * fences (ThreadSanitizer models none, and gcc refuses them under
 * -fsanitize=thread). Why a kept word is the one the first head
 * published:
 *  - the first head load (acquire) reads the owner's release store of
 *    some head h, so every word below h was stored before, happens before
 *    the copy, and the copy's load of it reads that store or a later one;
 *  - a later store to a kept word at offset o is the owner overwriting it
 *    from offset o + capacity. To write there the owner reserved room
 *    from a head in the chunk before o + capacity's, or a later one, and
 *    stored that head, h', before the word. If the copy's load (acquire)
 *    reads that word's store (release), the store of h' happens before
 *    the reader's second head load, which so reads h' or later; o +
 *    capacity lies below the end of the chunk after h''s, so from such a
 *    head the reader throws o away.
 * On x86-64 a release store and an acquire load are plain moves, but the
 * compiler may not merge them, and a long record is copied from its
 * staging area: callgrind counts 231 instructions per traced dispatch
 * (DISPATCH, BEGIN, END) where the former plain stores took 223, and 457
 * per automatic task (with its NAME) where they took 423.
 *
 * Sessions. Each start gets a new session number, published in
 * _perfmon_tracer_session (0: off) after the session's settings. A thread
 * whose buffer belongs to an older session resets it itself at its next event
 * (a new base, a zero drop count, the new capacity), then publishes the
 * session number with release ordering; readers only look at buffers of
 * the current session. Control calls (start, stop, dump, the jank
 * capture) are serialised by control_lock, and a session only changes
 * under it, so a reader never sees a buffer change session under its feet.
 *
 * Buffers outlive their threads: a thread pool's worker may exit before
 * the file is written. The thread-exit notify only marks the buffer dead;
 * dead buffers are freed under control_lock once they cannot matter any
 * more (at the next start or stop, or, for the flight recorder, once their
 * newest record is older than its window).
 *
 * Task ids are the pid in the high 32 bits and a per-process counter in
 * the low 32 (see perfmon-task-format-private.h). Threads take ids in
 * blocks of ID_BLOCK from the counter, so a dispatch costs no atomic
 * operation most of the time. Source events take their ids from the same
 * counter. */


__thread ThreadState _perfmon_tracer_tls __attribute__ ((tls_model ("initial-exec")));

/* Hot path reads: 0 when tracing is off. */
guint _perfmon_tracer_session;

/* Settings of the current session, written under control_lock before
 * _perfmon_tracer_session is published. */
static gboolean session_overwrite;
static gsize    session_capacity;

typedef enum
{
  MODE_OFF,
  MODE_FILE,
  MODE_FLIGHT,
} Mode;

/* Under control_lock. */
static GMutex   control_lock;
static Mode     mode;
static guint    session_counter;
static char    *session_path;          /* MODE_FILE */
static guint    flight_seconds;        /* MODE_FLIGHT */
static gboolean flight_is_held;        /* the flight recorder runs for holds only */
static guint    n_holds;
static guint    hold_seconds;
static gint64   session_start_ns;
static guint64  session_start_cycles;
static gsize    buffer_size = DEFAULT_BUFFER_SIZE;
static gboolean buffer_size_set;       /* by perfmon_tracer_set_buffer_size() */

static GMutex     registry_lock;
static GPtrArray *registry;            /* of Buffer *, under registry_lock */

static guint   id_counter;             /* atomic */
static guint32 cached_pid;             /* atomic */

/* --- ids --------------------------------------------------------------- */

static void
after_fork_in_child (void)
{
  /* The child is another process: its ids carry its own pid, and the
   * forking thread must not go on with the parent's block. */
  __atomic_store_n (&cached_pid, (guint32) getpid (), __ATOMIC_RELAXED);
  _perfmon_tracer_tls.ids_left = 0;
  /* Buffers are the parent's; the child traces only if it starts a
   * session of its own (and does not write the parent's file). The child
   * has this one thread: no lock is needed, and none may be taken. */
  __atomic_store_n (&_perfmon_tracer_session, 0, __ATOMIC_RELAXED);
  _perfmon_dispatch_set_observer (NULL);
  mode = MODE_OFF;
  flight_is_held = FALSE;
  session_path = NULL;
}

static void
init_pid (void)
{
  static gsize initialised;

  if (g_once_init_enter (&initialised))
    {
      __atomic_store_n (&cached_pid, (guint32) getpid (), __ATOMIC_RELAXED);
      pthread_atfork (NULL, NULL, after_fork_in_child);
      g_once_init_leave (&initialised, 1);
    }
}

G_GNUC_NO_INLINE void
_perfmon_tracer_refill_ids (void)
{
  init_pid ();
  _perfmon_tracer_tls.next_low = (guint32) g_atomic_int_add (&id_counter, ID_BLOCK);
  _perfmon_tracer_tls.ids_left = ID_BLOCK;
  _perfmon_tracer_tls.id_pid = __atomic_load_n (&cached_pid, __ATOMIC_RELAXED);
}


/* --- buffers ----------------------------------------------------------- */

static void buffer_thread_exit (gpointer data);
static GPrivate buffer_exit_notify = G_PRIVATE_INIT (buffer_thread_exit);

static void
buffer_free (Buffer *buffer)
{
  g_free (buffer->data);
  g_free (buffer);
}

static void
buffer_thread_exit (gpointer data)
{
  Buffer *buffer = data;

  if (_perfmon_tracer_tls.buffer == buffer)
    _perfmon_tracer_tls.buffer = NULL;
  g_atomic_int_set (&buffer->alive, FALSE);
}

static double
cycles_per_ns (void)
{
  return _perfmon_clock_cycles_per_us () / 1000.0;
}

/* Under control_lock (and not registry_lock): frees the dead buffers that
 * cannot matter any more; with @all_dead, every dead one. */
static void
prune_dead_buffers_locked (gboolean all_dead)
{
  guint64 horizon = 0;

  if (!all_dead && mode == MODE_FLIGHT)
    {
      guint64 now = _perfmon_clock_cycles ();
      guint64 window = (guint64) ((double) flight_seconds * 1e9 * cycles_per_ns ());

      horizon = now > window ? now - window : 0;
    }
  else if (!all_dead)
    return;   /* a file session keeps every thread's records */

  g_mutex_lock (&registry_lock);
  for (guint i = 0; registry != NULL && i < registry->len;)
    {
      Buffer *buffer = g_ptr_array_index (registry, i);

      if (!g_atomic_int_get (&buffer->alive) &&
          (all_dead || __atomic_load_n (&buffer->last_cycles, __ATOMIC_RELAXED) < horizon))
        {
          g_ptr_array_remove_index_fast (registry, i);
          buffer_free (buffer);
        }
      else
        i++;
    }
  g_mutex_unlock (&registry_lock);
}

/* The slow path of the calling thread's first event in session @session:
 * makes or resets its buffer. NULL if the buffer cannot be had. */
G_GNUC_NO_INLINE Buffer *
_perfmon_tracer_buffer_for_session (guint session)
{
  Buffer *buffer = _perfmon_tracer_tls.buffer;
  gsize capacity;
  gboolean overwrite;

  /* Pairs with the release store that published @session: its settings
   * are visible now. */
  if (__atomic_load_n (&_perfmon_tracer_session, __ATOMIC_ACQUIRE) != session || session == 0)
    return NULL;
  capacity = __atomic_load_n (&session_capacity, __ATOMIC_RELAXED);
  overwrite = __atomic_load_n (&session_overwrite, __ATOMIC_RELAXED);

  if (buffer == NULL)
    {
      buffer = g_new0 (Buffer, 1);
      buffer->alive = TRUE;
      buffer->tid = (guint32) syscall (SYS_gettid);
      if (prctl (PR_GET_NAME, buffer->name, 0, 0, 0) != 0)
        g_snprintf (buffer->name, sizeof buffer->name, "%u", buffer->tid);
      buffer->name[sizeof buffer->name - 1] = '\0';

      g_mutex_lock (&registry_lock);
      if (registry == NULL)
        registry = g_ptr_array_new ();
      g_ptr_array_add (registry, buffer);
      g_mutex_unlock (&registry_lock);

      g_private_set (&buffer_exit_notify, buffer);
      _perfmon_tracer_tls.buffer = buffer;

      /* A flight recorder on a program whose thread pools come and go
       * would keep every dead worker's buffer: this is a good time to
       * drop the stale ones, if no control call is busy. */
      if (g_mutex_trylock (&control_lock))
        {
          prune_dead_buffers_locked (FALSE);
          g_mutex_unlock (&control_lock);
        }
    }

  if (buffer->capacity != capacity)
    {
      guint8 *data = g_try_malloc (capacity);

      if (data == NULL)
        return NULL;
      /* No reader looks at the old data: its session is not current. */
      g_free (buffer->data);
      buffer->data = data;
      buffer->capacity = capacity;
    }

  buffer->base = (buffer->head + CHUNK_SIZE - 1) & ~(guint64) (CHUNK_SIZE - 1);
  buffer->overwrite = overwrite;
  /* A file session keeps every record: one NAME_DEF per name will do. */
  buffer->name_refresh = overwrite ? capacity / NAME_REFRESH_FRACTION : G_MAXUINT64;
  buffer->name_intact = overwrite ? capacity - CHUNK_SIZE : G_MAXUINT64;
  memset (buffer->names, 0, sizeof buffer->names);
  __atomic_store_n (&buffer->dropped, 0, __ATOMIC_RELAXED);
  __atomic_store_n (&buffer->head, buffer->base, __ATOMIC_RELEASE);
  __atomic_store_n (&buffer->session, session, __ATOMIC_RELEASE);
  return buffer;
}



static inline void
record_dispatch_at (guint64               task_id,
                    guint64               parent_id,
                    const PerfmonTaskIds *ids,
                    gconstpointer         callback,
                    guint64               cycles,
                    guint32               delay_ms)
{
  RecordSlot slot;
  PerfmonTaskDispatchRecord *record = record_open (&slot, sizeof *record);

  if (record == NULL)
    return;
  /* An earlier time (when the task became ready) puts the record out of
   * its thread's order: the writer sorts then. */
  if (cycles != 0 && cycles < slot.cycles)
    slot.time = cycles;
  record->task_id = task_id;
  record->parent_id = parent_id;
  record->source_event_id = ids->source_event_id;
  record->source_event_type = ids->source_event_type;
  record->delay_ms = delay_ms;
  record->callback = (guint64) (guintptr) callback;
  record_close (&slot, &record->header, PERFMON_TASK_RECORD_DISPATCH, sizeof *record);
}

static inline void
record_dispatch (guint64               task_id,
                 guint64               parent_id,
                 const PerfmonTaskIds *ids,
                 gconstpointer         callback,
                 guint32               delay_ms)
{
  record_dispatch_at (task_id, parent_id, ids, callback, 0, delay_ms);
}

static inline void
record_label (const char *prefix,
              const char *format,
              va_list     args) G_GNUC_PRINTF (2, 0);

static inline void
record_label (const char *prefix,
              const char *format,
              va_list     args)
{
  RecordSlot slot;
  PerfmonTaskLabelRecord *record = record_open (&slot, sizeof *record + LABEL_MAX + 8);
  gsize prefix_len = prefix != NULL ? strlen (prefix) : 0;
  int n;
  gsize len;
  guint size;

  if (record == NULL)
    return;
  memcpy (record->text, prefix != NULL ? prefix : "", prefix_len);
  /* vsnprintf() formats in place; glibc neither locks nor allocates for
   * the usual conversions. */
  n = vsnprintf (record->text + prefix_len, LABEL_MAX + 2 - prefix_len, format, args);
  len = prefix_len + (n > 0 ? (gsize) n : 0);
  len = _perfmon_utf8_cut (record->text, len, LABEL_MAX);
  size = (guint) ((sizeof *record + len + 1 + 7) & ~(gsize) 7);
  memset (record->text + len, 0, size - sizeof *record - len);
  record->task_id = _perfmon_tracer_tls.task_id;
  record_close (&slot, &record->header, PERFMON_TASK_RECORD_LABEL, size);
}

void
_perfmon_tracer_record_dbus (PerfmonTaskRecordType type,
                             guint64               task_id,
                             const char           *sender,
                             guint32               serial)
{
  RecordSlot slot;
  PerfmonTaskDBusRecord *record;
  gsize len;
  guint size;

  g_return_if_fail (type == PERFMON_TASK_RECORD_DBUS_SEND || type == PERFMON_TASK_RECORD_DBUS_RECV);

  if (sender == NULL)
    sender = "";
  len = _perfmon_utf8_cut (sender, strnlen (sender, DBUS_NAME_MAX + 1), DBUS_NAME_MAX);
  size = (guint) ((sizeof *record + len + 1 + 7) & ~(gsize) 7);
  record = record_open (&slot, size);
  if (record == NULL)
    return;
  record->task_id = task_id;
  record->serial = serial;
  record->reserved = 0;
  memcpy (record->sender, sender, len);
  memset (record->sender + len, 0, size - sizeof *record - len);
  record_close (&slot, &record->header, type, size);
}

/* --- tasks and source events ------------------------------------------- */

void
_perfmon_task_dispatch_delayed (PerfmonTaskIds *ids,
                                gconstpointer   callback,
                                guint32         delay_ms)
{
  guint64 parent = _perfmon_tracer_tls.task_id;

  ids->task_id = new_id ();
  ids->source_event_id = _perfmon_tracer_tls.source_event_id;
  ids->source_event_type = _perfmon_tracer_tls.source_event_type;
  record_dispatch (ids->task_id, parent != 0 ? parent : ids->task_id, ids, callback, delay_ms);
}

void
_perfmon_task_dispatch (PerfmonTaskIds *ids,
                        gconstpointer   callback)
{
  _perfmon_task_dispatch_delayed (ids, callback, 0);
}

void
_perfmon_task_dispatch_root (PerfmonTaskIds         *ids,
                             guint64                 source_event_id,
                             PerfmonSourceEventType  source_event_type,
                             gconstpointer           callback)
{
  ids->task_id = new_id ();
  if (source_event_id == 0)
    {
      source_event_id = new_id ();
      source_event_type = PERFMON_SOURCE_EVENT_DBUS;
    }
  ids->source_event_id = source_event_id;
  ids->source_event_type = (guint32) source_event_type;
  record_dispatch (ids->task_id, ids->task_id, ids, callback, 0);
}


void
_perfmon_task_enter (const PerfmonTaskIds *ids,
                     PerfmonTaskContext   *saved)
{
  context_enter (ids, saved);
  record_id (PERFMON_TASK_RECORD_BEGIN, ids->task_id);
}

void
_perfmon_task_leave (const PerfmonTaskContext *saved)
{
  context_leave (saved);
}

/**
 * perfmon_source_event_begin:
 * @type: what kind of event from outside the program this is
 *
 * Starts a source event on the calling thread: every task the thread
 * dispatches until perfmon_source_event_end(), and every task those
 * dispatch in turn, on any thread, belongs to it (carries its id and
 * type). Call it where the program receives the event (a key press, a
 * packet) and before it dispatches the tasks that handle it. A task
 * dispatched while no task runs on the thread is its own parent (the
 * seed's rule) and belongs to the source event.
 *
 * Takes no lock, makes no system call, allocates nothing, and works
 * whether or not tracing is on. Source events do not nest: a second
 * begin replaces the first.
 *
 * Returns: the id of the source event, unique across the processes of a
 *   session like task ids
 *
 * Since: 0.1
 */
guint64
perfmon_source_event_begin (PerfmonSourceEventType type)
{
  _perfmon_tracer_tls.source_event_id = new_id ();
  _perfmon_tracer_tls.source_event_type = (guint32) type;
  return _perfmon_tracer_tls.source_event_id;
}

/**
 * perfmon_source_event_end:
 *
 * Ends the calling thread's source event: the thread goes back to the
 * source event of the task that runs on it, or to none outside any task.
 *
 * Since: 0.1
 */
void
perfmon_source_event_end (void)
{
  _perfmon_tracer_tls.source_event_id = _perfmon_tracer_tls.task_source_event_id;
  _perfmon_tracer_tls.source_event_type = _perfmon_tracer_tls.task_source_event_type;
}

/**
 * perfmon_source_event_get_current:
 * @type: (out) (optional): where to store the type of the source event
 *
 * The source event that tasks dispatched now on the calling thread would
 * belong to.
 *
 * Returns: its id, 0 if there is none
 *
 * Since: 0.1
 */
guint64
perfmon_source_event_get_current (PerfmonSourceEventType *type)
{
  if (type != NULL)
    *type = (PerfmonSourceEventType) _perfmon_tracer_tls.source_event_type;
  return _perfmon_tracer_tls.source_event_id;
}

/**
 * perfmon_task_get_current:
 *
 * The task that runs on the calling thread, as far as the dispatch
 * wrappers and, while the tracer records, the automatic per-dispatch tasks
 * know: its id is in DISPATCH, BEGIN, END and LABEL records.
 *
 * Returns: its id, 0 outside any traced task
 *
 * Since: 0.1
 */
guint64
perfmon_task_get_current (void)
{
  return _perfmon_tracer_tls.task_id;
}

/* --- labels ------------------------------------------------------------ */

static void
add_label (const char *prefix,
           const char *format,
           ...) G_GNUC_PRINTF (2, 3);

static void
add_label (const char *prefix,
           const char *format,
           ...)
{
  va_list args;

  va_start (args, format);
  record_label (prefix, format, args);
  va_end (args);
}

/**
 * perfmon_task_add_label: (skip)
 * @format: a printf() format
 * @...: its arguments
 *
 * Adds a label, the formatted text, to the task that runs on the calling
 * thread (task id 0 outside any task), as the seed's AddLabel(). The text
 * is formatted straight into the thread's record buffer: no lock, no
 * system call, no allocation (with glibc's vsnprintf() and the usual
 * conversions); at most 240 bytes are kept, cut at a UTF-8 character
 * boundary. Nothing happens when tracing is off.
 *
 * Since: 0.1
 */
void
perfmon_task_add_label (const char *format,
                        ...)
{
  va_list args;

  va_start (args, format);
  record_label (NULL, format, args);
  va_end (args);
}

/**
 * perfmon_task_add_label_valist: (skip)
 * @format: a printf() format
 * @args: its arguments
 *
 * perfmon_task_add_label() with a va_list.
 *
 * Since: 0.1
 */
void
perfmon_task_add_label_valist (const char *format,
                               va_list     args)
{
  record_label (NULL, format, args);
}

/**
 * perfmon_task_add_label_literal:
 * @text: the label
 *
 * Adds @text, as it is, as a label of the task that runs on the calling
 * thread; see perfmon_task_add_label(). Bindings, which cannot call a
 * printf-style function, call this: `Perfmon.Task.add_label_literal()`.
 *
 * Since: 0.1
 */
void
perfmon_task_add_label_literal (const char *text)
{
  g_return_if_fail (text != NULL);

  add_label (NULL, "%s", text);
}

/* perfmon_task_label_guard_begin:
 * @guard: the guard, on the caller's stack
 * @format: a printf() format
 *
 * The first half of PERFMON_AUTO_TASK_LABEL(): formats the text into
 * @guard (only while tracing) and adds "Begin TEXT" to the current task.
 * C only (hidden from g-ir-scanner with the macro): called by the macro's
 * expansion, not by hand. Since: 0.3 (0.1 and 0.2 exported it as
 * _perfmon_task_label_guard_begin). */
void
perfmon_task_label_guard_begin (PerfmonTaskLabelGuard *guard,
                                 const char            *format,
                                 ...)
{
  va_list args;
  gsize len;
  int n;

  if (__atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED) == 0)
    {
      guard->text[0] = '\0';
      return;
    }
  va_start (args, format);
  n = vsnprintf (guard->text, sizeof guard->text, format, args);
  va_end (args);
  len = _perfmon_utf8_cut (guard->text, n > 0 ? (gsize) n : 0, sizeof guard->text - 1);
  guard->text[len] = '\0';
  add_label ("Begin ", "%s", guard->text);
}

/* perfmon_task_label_guard_end:
 * @guard: the guard that perfmon_task_label_guard_begin() filled
 *
 * The second half of PERFMON_AUTO_TASK_LABEL(), run by the cleanup
 * attribute when the scope ends: adds "End TEXT". Since: 0.3. */
void
perfmon_task_label_guard_end (PerfmonTaskLabelGuard *guard)
{
  if (guard->text[0] != '\0')
    add_label ("End ", "%s", guard->text);
}

/* --- copying the buffers for the writer (perfmon-task-writer.c) ------- */

G_STATIC_ASSERT (sizeof (PerfmonTaskNameRecord) + AUTO_NAME_MAX + 8 <= RECORD_MAX);

/* Copies what @buffer holds of its session: the bytes, in @copy_out, and
 * the offset of the first one that may be parsed (a chunk boundary), in
 * @first_out. Returns the number of bytes copied (the copy starts at
 * offset @first_out). See "The rule between the owner and readers". */
static gsize
copy_buffer (Buffer   *buffer,
             guint8  **copy_out)
{
  guint64 head = __atomic_load_n (&buffer->head, __ATOMIC_ACQUIRE);
  guint64 start = buffer->base;
  guint64 valid_start;
  guint64 later_head;
  gsize capacity = buffer->capacity;
  gsize length;
  guint8 *copy;

  if (buffer->overwrite && head - start > capacity)
    start = (head - capacity + CHUNK_SIZE - 1) & ~(guint64) (CHUNK_SIZE - 1);
  length = head - start;
  copy = g_malloc (MAX (length, 1));
  for (gsize done = 0; done < length; done += 8)
    {
      guint64 word = LOAD_WORD (*buffer_word (buffer, start + done));

      memcpy (copy + done, &word, 8);
    }
  /* The acquire loads above keep this one after them: no fence. */
  later_head = __atomic_load_n (&buffer->head, __ATOMIC_RELAXED);

  valid_start = start;
  if (buffer->overwrite)
    {
      /* The owner may have written up to the end of the chunk after the
       * one @later_head is in, which overwrote a capacity earlier. */
      guint64 reached = (later_head & ~(guint64) (CHUNK_SIZE - 1)) + 2 * CHUNK_SIZE;

      if (reached > capacity && reached - capacity > valid_start)
        valid_start = reached - capacity;
    }
  if (valid_start >= head)
    {
      g_free (copy);
      *copy_out = NULL;
      return 0;
    }
  if (valid_start != start)
    memmove (copy, copy + (valid_start - start), head - valid_start);
  *copy_out = copy;
  return head - valid_start;
}

/* Under control_lock: the task log of session @session from @since_cycles
 * on; the header claims @start_ns as the start. */
static GBytes *
serialize_locked (guint   session,
                  guint64 since_cycles,
                  gint64  start_ns)
{
  g_autoptr(GPtrArray) buffers = g_ptr_array_new ();
  g_autoptr(GPtrArray) copies = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GArray) threads = g_array_new (FALSE, FALSE, sizeof (PerfmonTaskWriterThread));
  PerfmonTaskWriterSession info = { .start_ns = start_ns, .since_cycles = since_cycles, };

  if (session != 0)
    {
      g_mutex_lock (&registry_lock);
      for (guint i = 0; registry != NULL && i < registry->len; i++)
        {
          Buffer *buffer = g_ptr_array_index (registry, i);

          if (__atomic_load_n (&buffer->session, __ATOMIC_ACQUIRE) == session)
            g_ptr_array_add (buffers, buffer);
        }
      g_mutex_unlock (&registry_lock);
      info.session_start_ns = session_start_ns;
      info.session_start_cycles = session_start_cycles;
    }

  /* Buffers stay in the registry at least until control_lock is
   * released: only control calls free them. */
  for (guint i = 0; i < buffers->len; i++)
    {
      Buffer *buffer = g_ptr_array_index (buffers, i);
      PerfmonTaskWriterThread thread = { buffer->tid, buffer->name, NULL, 0 };
      guint8 *copy = NULL;

      thread.length = copy_buffer (buffer, &copy);
      thread.records = copy;
      info.dropped_records += __atomic_load_n (&buffer->dropped, __ATOMIC_RELAXED);
      if (copy != NULL)
        g_ptr_array_add (copies, copy);
      g_array_append_val (threads, thread);
    }

  return _perfmon_task_writer_write (&info, (const PerfmonTaskWriterThread *) threads->data, threads->len);
}

/* --- sessions ---------------------------------------------------------- */

/* Each thread's buffer for a session: the size set, or for the flight
 * recorder, what holds @seconds at FLIGHT_TASKS_PER_SECOND. */
static gsize
session_capacity_for (Mode  new_mode,
                      guint seconds)
{
  guint64 wanted = (guint64) seconds * FLIGHT_TASKS_PER_SECOND * FLIGHT_BYTES_PER_TASK;
  gsize capacity = MIN_BUFFER_SIZE;

  if (new_mode != MODE_FLIGHT || buffer_size_set)
    return buffer_size;
  while (capacity < wanted && capacity < MAX_BUFFER_SIZE)
    capacity *= 2;
  return capacity;
}

static void
begin_session_locked (Mode  new_mode,
                      guint seconds)
{
  gsize capacity = session_capacity_for (new_mode, seconds);

  mode = new_mode;
  flight_seconds = seconds;
  if (++session_counter == 0)
    session_counter = 1;
  session_start_cycles = _perfmon_clock_cycles ();
  session_start_ns = _perfmon_clock_monotonic_ns ();
  /* Dead threads' buffers belong to older sessions now. */
  prune_dead_buffers_locked (TRUE);
  __atomic_store_n (&session_overwrite, new_mode == MODE_FLIGHT, __ATOMIC_RELAXED);
  __atomic_store_n (&session_capacity, capacity, __ATOMIC_RELAXED);
  __atomic_store_n (&_perfmon_tracer_session, session_counter, __ATOMIC_RELEASE);
  _perfmon_dispatch_set_observer (&_perfmon_automatic_task_observer);
}

static void
end_session_locked (void)
{
  g_clear_pointer (&session_path, g_free);
  if (n_holds > 0)
    {
      begin_session_locked (MODE_FLIGHT, hold_seconds);
      flight_is_held = TRUE;
      return;
    }
  __atomic_store_n (&_perfmon_tracer_session, 0, __ATOMIC_RELEASE);
  _perfmon_dispatch_set_observer (NULL);
  mode = MODE_OFF;
  flight_is_held = FALSE;
  prune_dead_buffers_locked (TRUE);
}

static gboolean
user_session_running_locked (void)
{
  return mode == MODE_FILE || (mode == MODE_FLIGHT && !flight_is_held);
}

static guint64
cycles_seconds_ago (guint seconds)
{
  guint64 now = _perfmon_clock_cycles ();
  guint64 back = (guint64) ((double) seconds * 1e9 * cycles_per_ns ());

  return now > back ? now - back : 0;
}

/**
 * perfmon_tracer_start:
 * @path: (type filename): where perfmon_tracer_stop() writes the task log
 * @error: return location for a #GError
 *
 * Starts recording the tasks of every thread until perfmon_tracer_stop(),
 * which writes them to @path. Each thread records into a buffer of its own
 * (see perfmon_tracer_set_buffer_size()); records that do not fit are
 * dropped and counted in the file's header, recording never waits.
 *
 * Any thread may call it; control calls are serialised.
 *
 * Returns: %TRUE, or %FALSE with %PERFMON_ERROR_TRACING_STATE if a
 *   recording started with perfmon_tracer_start() or
 *   perfmon_tracer_start_flight_recorder() runs, or %G_FILE_ERROR_NOENT if
 *   the directory of @path does not exist
 *
 * Since: 0.1
 */
gboolean
perfmon_tracer_start (const char  *path,
                      GError     **error)
{
  g_autofree char *dir = NULL;

  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  /* Better now than after a recording that cannot be written. */
  dir = g_path_get_dirname (path);
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                   "Cannot write the task log %s: %s is not a directory", path, dir);
      return FALSE;
    }

  g_mutex_lock (&control_lock);
  if (user_session_running_locked ())
    {
      g_mutex_unlock (&control_lock);
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE,
                           "The tracer already records: stop it first");
      return FALSE;
    }
  begin_session_locked (MODE_FILE, 0);
  flight_is_held = FALSE;
  session_path = g_strdup (path);
  g_mutex_unlock (&control_lock);
  return TRUE;
}

/**
 * perfmon_tracer_start_flight_recorder:
 * @seconds: how many seconds of the most recent records to keep, 1 to 3600
 * @error: return location for a #GError
 *
 * Starts recording into memory only: each thread's buffer keeps its most
 * recent records, overwriting the oldest, and perfmon_tracer_dump()
 * writes those of the last @seconds to a file whenever asked.
 * perfmon_tracer_stop() ends it.
 *
 * What it holds: each recording thread's buffer is sized for @seconds at
 * 2000 tasks per second (its dispatch, begin and end: 117 bytes a task
 * with room for chunk ends, so 234 KB a second, rounded up to a power of
 * two: 8 s take 2 MiB, 30 s 8 MiB
 * per thread, in memory touched only as records arrive; an automatic task,
 * a dispatch seen without a wrapper, takes 80 bytes, its name written only
 * now and then). A thread that runs
 * more tasks than that keeps fewer seconds: its most recent records that
 * fit. perfmon_tracer_set_buffer_size() sets the size instead.
 *
 * Any thread may call it.
 *
 * Returns: %TRUE, or %FALSE with %PERFMON_ERROR_INVALID_ARGUMENT (for
 *   @seconds out of range) or %PERFMON_ERROR_TRACING_STATE
 *
 * Since: 0.1
 */
gboolean
perfmon_tracer_start_flight_recorder (guint    seconds,
                                      GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (seconds < 1 || seconds > MAX_FLIGHT_SECONDS)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "seconds is %u: the flight recorder keeps 1 to %u seconds", seconds, MAX_FLIGHT_SECONDS);
      return FALSE;
    }

  g_mutex_lock (&control_lock);
  if (user_session_running_locked ())
    {
      g_mutex_unlock (&control_lock);
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE,
                           "The tracer already records: stop it first");
      return FALSE;
    }
  if (mode == MODE_FLIGHT &&
      session_capacity_for (MODE_FLIGHT, MAX (seconds, hold_seconds)) <= __atomic_load_n (&session_capacity, __ATOMIC_RELAXED))
    flight_seconds = MAX (seconds, hold_seconds);   /* the held recorder, kept */
  else
    begin_session_locked (MODE_FLIGHT, MAX (seconds, hold_seconds));   /* bigger buffers */
  flight_is_held = FALSE;
  g_mutex_unlock (&control_lock);
  return TRUE;
}

/**
 * perfmon_tracer_dump:
 * @path: (type filename): the file to write
 * @error: return location for a #GError
 *
 * Writes what the tracer holds now to @path, atomically, and goes on
 * recording: the last seconds of the flight recorder, or everything so far
 * of a recording started with perfmon_tracer_start().
 *
 * Any thread may call it. It copies every thread's buffer, converts and
 * sorts the records and writes the file: it takes time, so not on a
 * thread whose latency matters. It symbolizes nothing: a callback without
 * a dynamic symbol (a static function) is named `module+0xoffset` with
 * its module's MODULE record, which `perfmon tasks` and `perfmon
 * symbolize` name when they read the log.
 *
 * Returns: %TRUE, or %FALSE with @error set (%PERFMON_ERROR_TRACING_STATE
 *   if the tracer does not record, a #GFileError if the file cannot be
 *   written)
 *
 * Since: 0.1
 */
gboolean
perfmon_tracer_dump (const char  *path,
                     GError     **error)
{
  g_autoptr(GBytes) bytes = NULL;
  guint64 since_cycles = 0;
  gint64 start_ns;

  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  g_mutex_lock (&control_lock);
  if (mode == MODE_OFF)
    {
      g_mutex_unlock (&control_lock);
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE,
                           "The tracer does not record: start it first");
      return FALSE;
    }
  start_ns = session_start_ns;
  if (mode == MODE_FLIGHT)
    {
      since_cycles = cycles_seconds_ago (flight_seconds);
      start_ns = MAX (start_ns, _perfmon_clock_monotonic_ns () - (gint64) flight_seconds * G_GINT64_CONSTANT (1000000000));
      prune_dead_buffers_locked (FALSE);
    }
  bytes = serialize_locked (__atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED), since_cycles, start_ns);
  g_mutex_unlock (&control_lock);

  return _perfmon_log_dir_write_file_atomically (path, g_bytes_get_data (bytes, NULL),
                                                 g_bytes_get_size (bytes), FALSE, error);
}

/**
 * perfmon_tracer_stop:
 * @error: return location for a #GError
 *
 * Stops the recording that perfmon_tracer_start() started and writes the
 * task log to its path, atomically; or stops the flight recorder (which
 * writes nothing: call perfmon_tracer_dump() first).
 *
 * Any thread may call it. Tasks that run meanwhile are not recorded, and
 * tasks still running when it returns record nothing more. Like
 * perfmon_tracer_dump(), it symbolizes nothing on the calling thread.
 *
 * Returns: %TRUE, or %FALSE with @error set: %PERFMON_ERROR_TRACING_STATE
 *   if the tracer does not record, a #GFileError if the log could not be
 *   written (the recording stops all the same)
 *
 * Since: 0.1
 */
gboolean
perfmon_tracer_stop (GError **error)
{
  g_autoptr(GBytes) bytes = NULL;
  g_autofree char *path = NULL;

  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  g_mutex_lock (&control_lock);
  if (!user_session_running_locked ())
    {
      g_mutex_unlock (&control_lock);
      g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_TRACING_STATE,
                           "The tracer does not record");
      return FALSE;
    }
  if (mode == MODE_FILE)
    {
      guint session = __atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED);

      /* Threads stop recording first, so the file ends at the stop. */
      __atomic_store_n (&_perfmon_tracer_session, 0, __ATOMIC_RELEASE);
      bytes = serialize_locked (session, 0, session_start_ns);
      path = g_strdup (session_path);
      end_session_locked ();
    }
  else if (n_holds > 0)
    {
      /* The held recorder goes on, with its own window. */
      flight_is_held = TRUE;
      flight_seconds = hold_seconds;
    }
  else
    end_session_locked ();
  g_mutex_unlock (&control_lock);

  if (bytes == NULL)
    return TRUE;
  return _perfmon_log_dir_write_file_atomically (path, g_bytes_get_data (bytes, NULL),
                                                 g_bytes_get_size (bytes), FALSE, error);
}

/**
 * perfmon_tracer_is_active:
 *
 * Whether tasks are being recorded now, by perfmon_tracer_start(), by
 * perfmon_tracer_start_flight_recorder(), or by the flight recorder a hang
 * monitor runs for its jank traces.
 *
 * Returns: %TRUE if they are
 *
 * Since: 0.1
 */
gboolean
perfmon_tracer_is_active (void)
{
  return __atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED) != 0;
}

/**
 * perfmon_tracer_set_buffer_size:
 * @bytes: the size of each thread's record buffer, from 64 KiB to 1 GiB;
 *   rounded up to a power of two
 * @error: return location for a #GError
 *
 * Sets the size of the buffer each recording thread gets, from the next
 * start of the tracer on (default 2 MiB, about 20000 tasks, for a file
 * recording; the flight recorder's is sized by its seconds, see
 * perfmon_tracer_start_flight_recorder()). A file recording drops what does
 * not fit; the flight recorder keeps the most recent records that fit.
 *
 * Returns: %TRUE, or %FALSE with %PERFMON_ERROR_INVALID_ARGUMENT
 *
 * Since: 0.1
 */
gboolean
perfmon_tracer_set_buffer_size (gsize    bytes,
                                GError **error)
{
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);

  if (bytes < MIN_BUFFER_SIZE || bytes > MAX_BUFFER_SIZE)
    {
      g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_ARGUMENT,
                   "buffer size is %" G_GSIZE_FORMAT " bytes: it must be from %" G_GSIZE_FORMAT " to %" G_GSIZE_FORMAT,
                   bytes, MIN_BUFFER_SIZE, MAX_BUFFER_SIZE);
      return FALSE;
    }
  g_mutex_lock (&control_lock);
  buffer_size = MIN_BUFFER_SIZE;
  while (buffer_size < bytes)
    buffer_size *= 2;
  buffer_size_set = TRUE;
  g_mutex_unlock (&control_lock);
  return TRUE;
}

GBytes *
_perfmon_tracer_serialize_recent (gint64 since_monotonic_us)
{
  GBytes *bytes;
  guint64 since_cycles;
  gint64 since_ns = since_monotonic_us * 1000;
  gint64 now_ns;
  guint64 now_cycles;

  g_mutex_lock (&control_lock);
  now_cycles = _perfmon_clock_cycles ();
  now_ns = _perfmon_clock_monotonic_ns ();
  since_cycles = since_ns >= now_ns
    ? now_cycles
    : now_cycles - MIN (now_cycles, (guint64) ((double) (now_ns - since_ns) * cycles_per_ns ()));
  if (mode == MODE_FLIGHT)
    prune_dead_buffers_locked (FALSE);
  bytes = serialize_locked (__atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED), since_cycles,
                            MAX (since_ns, session_start_ns));
  g_mutex_unlock (&control_lock);
  return bytes;
}

void
_perfmon_tracer_hold_flight_recorder (guint seconds)
{
  g_mutex_lock (&control_lock);
  n_holds++;
  hold_seconds = MAX (hold_seconds, CLAMP (seconds, 1, MAX_FLIGHT_SECONDS));
  if (mode == MODE_OFF)
    {
      begin_session_locked (MODE_FLIGHT, hold_seconds);
      flight_is_held = TRUE;
    }
  else if (mode == MODE_FLIGHT && flight_is_held)
    flight_seconds = hold_seconds;
  g_mutex_unlock (&control_lock);
}

void
_perfmon_tracer_release_flight_recorder (void)
{
  g_mutex_lock (&control_lock);
  if (n_holds == 0)
    {
      g_mutex_unlock (&control_lock);
      g_critical ("_perfmon_tracer_release_flight_recorder: not held");
      return;
    }
  if (--n_holds == 0)
    {
      hold_seconds = 0;
      if (mode == MODE_FLIGHT && flight_is_held)
        end_session_locked ();
    }
  g_mutex_unlock (&control_lock);
}
