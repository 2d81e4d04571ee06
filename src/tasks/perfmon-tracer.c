/* perfmon-tracer.c: task tracing, the recording side
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE 1
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perfmon-clock-private.h"
#include "perfmon-dispatch-private.h"
#include "perfmon-process-private.h"
#include "perfmon-utf8-private.h"
#include "perfmon-error.h"
#include "perfmon-symbolizer-private.h"
#include "perfmon-tracer.h"
#include "perfmon-tracer-private.h"

/* Design.
 *
 * Recording. Every thread that records an event while tracing is on gets a
 * Buffer at its first event: one allocation, registered in a global list
 * under registry_lock. After that an event is a few plain stores into the
 * thread's own buffer and one release store of its head: no lock, no
 * system call, no allocation (tests/test-hot-path.c proves it under
 * seccomp). Times are cycle-counter readings; they become CLOCK_MONOTONIC
 * nanoseconds when a file is written, never on the hot path. Callback
 * addresses become SYMBOL records (dladdr()) at the same time.
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
 * is a seqlock on @head: the owner writes a record's bytes, then stores
 * the new head with release ordering. A reader loads the head with
 * acquire ordering, copies the bytes below it, issues an acquire fence and
 * loads the head again: in a file session nothing below a published head
 * is ever written again, so the copy is exact; in the flight recorder the
 * owner may have overwritten the oldest part of what was copied meanwhile,
 * so the reader throws away every chunk the owner may have reached from
 * the second head on (its chunk and the next one, a capacity earlier).
 * The copy of those bytes races with the owner's stores by the letter of
 * C11, like every seqlock over plain data; a torn chunk is always thrown
 * away before anything parses it.
 *
 * Sessions. Each start gets a new session number, published in
 * current_session (0: off) after the session's settings. A thread whose
 * buffer belongs to an older session resets it itself at its next event
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

#define CHUNK_SIZE          4096u
#define MIN_BUFFER_SIZE     ((gsize) 16 * CHUNK_SIZE)
#define MAX_BUFFER_SIZE     ((gsize) 1 << 30)
#define DEFAULT_BUFFER_SIZE ((gsize) 2 << 20)
#define ID_BLOCK            256u
#define LABEL_MAX           240u   /* bytes of label text, NUL excluded */
#define DBUS_NAME_MAX       255u
#define MAX_FLIGHT_SECONDS  3600u
/* The flight recorder's promise: its seconds at this many tasks per second
 * on each recording thread (a task: its DISPATCH, BEGIN and END records),
 * with an eighth more for chunk ends and labels. Unless the buffer size was
 * set, each thread's buffer is sized for that (a power of two). */
#define FLIGHT_TASKS_PER_SECOND 2000u
#define FLIGHT_BYTES_PER_TASK \
  ((sizeof (PerfmonTaskDispatchRecord) + 2 * sizeof (PerfmonTaskIdRecord)) * 9 / 8)

G_STATIC_ASSERT (sizeof (PerfmonTaskLabelRecord) + LABEL_MAX + 8 < CHUNK_SIZE);

typedef struct
{
  /* Published by the owner (release), read by readers (acquire). */
  guint64  head;
  guint    session;
  /* Set by the owner before it publishes @session; stable afterwards. */
  guint64  base;
  gboolean overwrite;
  gsize    capacity;        /* a power of two, a multiple of CHUNK_SIZE */
  guint8  *data;
  /* Owner stores, readers load, both relaxed. */
  guint64  dropped;
  guint64  last_cycles;
  gboolean alive;           /* atomic */
  guint32  tid;
  char     name[17];
} Buffer;

typedef struct
{
  Buffer  *buffer;
  /* The task that runs, and the source event it belongs to. */
  guint64  task_id;
  guint64  task_source_event_id;
  guint32  task_source_event_type;
  /* The source event new tasks belong to: the task's, or one begun since. */
  guint32  source_event_type;
  guint64  source_event_id;
  /* The block of ids the thread takes new ids from. */
  guint32  id_pid;
  guint32  next_low;
  guint32  ids_left;
} ThreadState;

static __thread ThreadState tls __attribute__ ((tls_model ("initial-exec")));

/* Hot path reads: 0 when tracing is off. */
static guint current_session;

/* Settings of the current session, written under control_lock before
 * current_session is published. */
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
  tls.ids_left = 0;
  /* Buffers are the parent's; the child traces only if it starts a
   * session of its own (and does not write the parent's file). The child
   * has this one thread: no lock is needed, and none may be taken. */
  __atomic_store_n (&current_session, 0, __ATOMIC_RELAXED);
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

static G_GNUC_NO_INLINE void
refill_ids (void)
{
  init_pid ();
  tls.next_low = (guint32) g_atomic_int_add (&id_counter, ID_BLOCK);
  tls.ids_left = ID_BLOCK;
  tls.id_pid = __atomic_load_n (&cached_pid, __ATOMIC_RELAXED);
}

static inline guint64
new_id (void)
{
  guint32 low;

  /* The counter wraps after 2^32 ids; 0 means "none" and is skipped. */
  do
    {
      if (G_UNLIKELY (tls.ids_left == 0))
        refill_ids ();
      tls.ids_left--;
      low = tls.next_low++;
    }
  while (G_UNLIKELY (low == 0));
  return ((guint64) tls.id_pid << 32) | low;
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

  if (tls.buffer == buffer)
    tls.buffer = NULL;
  g_atomic_int_set (&buffer->alive, FALSE);
}

static double
cycles_per_ns (void)
{
  return perfmon_clock_cycles_per_us () / 1000.0;
}

/* Under control_lock (and not registry_lock): frees the dead buffers that
 * cannot matter any more; with @all_dead, every dead one. */
static void
prune_dead_buffers_locked (gboolean all_dead)
{
  guint64 horizon = 0;

  if (!all_dead && mode == MODE_FLIGHT)
    {
      guint64 now = perfmon_clock_cycles ();
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
static G_GNUC_NO_INLINE Buffer *
buffer_for_session (guint session)
{
  Buffer *buffer = tls.buffer;
  gsize capacity;
  gboolean overwrite;

  /* Pairs with the release store that published @session: its settings
   * are visible now. */
  if (__atomic_load_n (&current_session, __ATOMIC_ACQUIRE) != session || session == 0)
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
      tls.buffer = buffer;

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
  __atomic_store_n (&buffer->dropped, 0, __ATOMIC_RELAXED);
  __atomic_store_n (&buffer->head, buffer->base, __ATOMIC_RELEASE);
  __atomic_store_n (&buffer->session, session, __ATOMIC_RELEASE);
  return buffer;
}

static inline Buffer *
current_buffer (void)
{
  guint session = __atomic_load_n (&current_session, __ATOMIC_RELAXED);
  Buffer *buffer;

  if (G_LIKELY (session == 0))
    return NULL;
  buffer = tls.buffer;
  if (G_UNLIKELY (buffer == NULL || buffer->session != session))
    buffer = buffer_for_session (session);
  return buffer;
}

/* Room for a record of @size bytes (a multiple of 8, at most a chunk): a
 * pointer into the buffer and, in @head_out, the offset it starts at; NULL
 * if the record is dropped. Nothing is visible until buffer_commit(). */
static inline guint8 *
buffer_reserve (Buffer  *buffer,
                guint    size,
                guint64 *head_out)
{
  guint64 head = buffer->head;   /* only the owner writes it */
  guint64 room = CHUNK_SIZE - (head & (CHUNK_SIZE - 1));
  guint64 start = size <= room ? head : head + room;

  if (!buffer->overwrite && start + size - buffer->base > buffer->capacity)
    {
      __atomic_store_n (&buffer->dropped, buffer->dropped + 1, __ATOMIC_RELAXED);
      return NULL;
    }
  if (start != head)
    {
      /* A pad to the end of the chunk: a type-0 header, or nothing when
       * fewer than a header's bytes are left (readers skip those). */
      if (room >= sizeof (PerfmonTaskRecordHeader))
        ((PerfmonTaskRecordHeader *) (buffer->data + (head & (buffer->capacity - 1))))->type = 0;
    }
  *head_out = start;
  return buffer->data + (start & (buffer->capacity - 1));
}

static inline void
buffer_commit (Buffer  *buffer,
               guint64  start,
               guint    size,
               guint64  cycles)
{
  __atomic_store_n (&buffer->last_cycles, cycles, __ATOMIC_RELAXED);
  __atomic_store_n (&buffer->head, start + size, __ATOMIC_RELEASE);
}

/* A record being written on the calling thread's buffer: record_open()
 * reserves room and takes the time, the caller fills the payload, and
 * record_close() writes the header and publishes the record. */
typedef struct
{
  Buffer  *buffer;
  guint64  start;
  guint64  cycles;
  guint64  time;      /* the record's time: @cycles unless set earlier */
} RecordSlot;

/* Room for at most @size bytes, or NULL when tracing is off or the record
 * is dropped. */
static inline gpointer
record_open (RecordSlot *slot,
             guint       size)
{
  guint8 *record;

  slot->buffer = current_buffer ();
  if (slot->buffer == NULL)
    return NULL;
  record = buffer_reserve (slot->buffer, size, &slot->start);
  if (record == NULL)
    return NULL;
  slot->time = slot->cycles = perfmon_clock_cycles ();
  return record;
}

static inline void
record_close (RecordSlot              *slot,
              PerfmonTaskRecordHeader *header,
              PerfmonTaskRecordType    type,
              guint                    size)
{
  header->type = (guint16) type;
  header->size = (guint16) size;
  header->tid = slot->buffer->tid;
  /* Cycles until the file is written. */
  header->time_ns = (gint64) slot->time;
  buffer_commit (slot->buffer, slot->start, size, slot->cycles);
}

static inline void
record_id (PerfmonTaskRecordType type,
           guint64               task_id)
{
  RecordSlot slot;
  PerfmonTaskIdRecord *record = record_open (&slot, sizeof *record);

  if (record == NULL)
    return;
  record->task_id = task_id;
  record_close (&slot, &record->header, type, sizeof *record);
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
  len = perfmon_utf8_cut (record->text, len, LABEL_MAX);
  size = (guint) ((sizeof *record + len + 1 + 7) & ~(gsize) 7);
  memset (record->text + len, 0, size - sizeof *record - len);
  record->task_id = tls.task_id;
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
  len = perfmon_utf8_cut (sender, strnlen (sender, DBUS_NAME_MAX + 1), DBUS_NAME_MAX);
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
  guint64 parent = tls.task_id;

  ids->task_id = new_id ();
  ids->source_event_id = tls.source_event_id;
  ids->source_event_type = tls.source_event_type;
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
  saved->task_id = tls.task_id;
  saved->task_source_event_id = tls.task_source_event_id;
  saved->task_source_event_type = tls.task_source_event_type;
  saved->source_event_id = tls.source_event_id;
  saved->source_event_type = tls.source_event_type;
  tls.task_id = ids->task_id;
  tls.task_source_event_id = tls.source_event_id = ids->source_event_id;
  tls.task_source_event_type = tls.source_event_type = ids->source_event_type;
  record_id (PERFMON_TASK_RECORD_BEGIN, ids->task_id);
}

void
_perfmon_task_leave (const PerfmonTaskContext *saved)
{
  record_id (PERFMON_TASK_RECORD_END, tls.task_id);
  tls.task_id = saved->task_id;
  tls.task_source_event_id = saved->task_source_event_id;
  tls.task_source_event_type = saved->task_source_event_type;
  tls.source_event_id = saved->source_event_id;
  tls.source_event_type = saved->source_event_type;
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
  tls.source_event_id = new_id ();
  tls.source_event_type = (guint32) type;
  return tls.source_event_id;
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
  tls.source_event_id = tls.task_source_event_id;
  tls.source_event_type = tls.task_source_event_type;
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
    *type = (PerfmonSourceEventType) tls.source_event_type;
  return tls.source_event_id;
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
  return tls.task_id;
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

void
_perfmon_task_label_guard_begin (PerfmonTaskLabelGuard *guard,
                                 const char            *format,
                                 ...)
{
  va_list args;
  gsize len;
  int n;

  if (__atomic_load_n (&current_session, __ATOMIC_RELAXED) == 0)
    {
      guard->text[0] = '\0';
      return;
    }
  va_start (args, format);
  n = vsnprintf (guard->text, sizeof guard->text, format, args);
  va_end (args);
  len = perfmon_utf8_cut (guard->text, n > 0 ? (gsize) n : 0, sizeof guard->text - 1);
  guard->text[len] = '\0';
  add_label ("Begin ", "%s", guard->text);
}

void
_perfmon_task_label_guard_end (PerfmonTaskLabelGuard *guard)
{
  if (guard->text[0] != '\0')
    add_label ("End ", "%s", guard->text);
}

/* --- dispatch wrappers ------------------------------------------------- */

/* With tracing off, the wrappers of sources, invokes and GTasks are the
 * GLib calls they mirror and nothing more: such a source runs untraced
 * even if tracing starts before it runs (with the per-dispatch hook, its
 * dispatches are automatic tasks then). A thread pool's item still takes
 * one allocation, which the pool's trampoline needs to tell items apart. */

static inline gboolean
tracing_on (void)
{
  return __atomic_load_n (&current_session, __ATOMIC_RELAXED) != 0;
}

/* A GSource that runs one task: an idle (interval 0) or a timeout. One
 * allocation, like GLib's own idle and timeout sources. */
typedef struct
{
  GSource        source;
  PerfmonTaskIds ids;
  guint          interval_ms;
} TaskSource;

static gboolean
task_source_prepare (GSource *source,
                     int     *timeout)
{
  *timeout = 0;
  return TRUE;
}

static gboolean
task_source_dispatch (GSource     *source,
                      GSourceFunc  callback,
                      gpointer     user_data)
{
  TaskSource *self = (TaskSource *) source;
  PerfmonTaskContext saved;
  gboolean again;

  if (callback == NULL)
    {
      g_warning ("perfmon task source dispatched without callback. "
                 "You must call g_source_set_callback().");
      return G_SOURCE_REMOVE;
    }

  _perfmon_task_enter (&self->ids, &saved);
  again = callback (user_data);
  _perfmon_task_leave (&saved);

  if (again && self->interval_ms > 0)
    g_source_set_ready_time (source, g_source_get_time (source) + (gint64) self->interval_ms * 1000);
  return again;
}

static GSourceFuncs idle_task_funcs = {
  .prepare = task_source_prepare,
  .dispatch = task_source_dispatch,
};

/* Timeouts become ready through g_source_set_ready_time(). A prepare of
 * their own (what a missing one does) tells the automatic tasks' observer
 * that the source is a wrapper's, even with its dispatch hooked. */
static gboolean
timeout_task_prepare (GSource *source,
                      int     *timeout)
{
  *timeout = -1;
  return FALSE;
}

static GSourceFuncs timeout_task_funcs = {
  .prepare = timeout_task_prepare,
  .dispatch = task_source_dispatch,
};

static GSource *
task_source_new (guint          interval_ms,
                 int            priority,
                 GSourceFunc    function,
                 gpointer       data,
                 GDestroyNotify notify)
{
  GSource *source = g_source_new (interval_ms > 0 ? &timeout_task_funcs : &idle_task_funcs,
                                  sizeof (TaskSource));
  TaskSource *self = (TaskSource *) source;

  self->interval_ms = interval_ms;
  if (interval_ms > 0)
    g_source_set_ready_time (source, g_get_monotonic_time () + (gint64) interval_ms * 1000);
  if (priority != G_PRIORITY_DEFAULT)
    g_source_set_priority (source, priority);
  g_source_set_callback (source, function, data, notify);
  /* A timeout is due its interval after the dispatch: queueing counts from
   * then. */
  _perfmon_task_dispatch_delayed (&self->ids, function, interval_ms);
  return source;
}

static guint
attach_task_source (GSource *source)
{
  guint id = g_source_attach (source, NULL);

  g_source_unref (source);
  return id;
}

/**
 * perfmon_idle_add_full: (rename-to perfmon_idle_add)
 * @priority: the priority of the idle source, typically in the range
 *   between %G_PRIORITY_DEFAULT_IDLE and %G_PRIORITY_HIGH_IDLE
 * @function: (scope notified) (closure data) (destroy notify): the function
 *   to call
 * @data: data to pass to @function
 * @notify: (nullable): called to free @data when the source is removed
 *
 * g_idle_add_full() as a task: the dispatch is recorded now, as a task of
 * the calling thread's current task and source event, and each run of
 * @function is one BEGIN … END of that task, with the task current on the
 * thread that runs it (tasks it dispatches are its children). The source
 * is attached to the global-default main context, as GLib's is. With
 * tracing off it is g_idle_add_full(), at no extra cost.
 *
 * Any thread may call it.
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_idle_add_full (int            priority,
                       GSourceFunc    function,
                       gpointer       data,
                       GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  /* Nobody traces: GLib's idle, which costs nothing more. */
  if (!tracing_on ())
    return g_idle_add_full (priority, function, data, notify);
  return attach_task_source (task_source_new (0, priority, function, data, notify));
}

/**
 * perfmon_idle_add: (skip)
 * @function: function to call
 * @data: data to pass to @function
 *
 * perfmon_idle_add_full() at %G_PRIORITY_DEFAULT_IDLE with no destroy
 * notify, as g_idle_add().
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_idle_add (GSourceFunc function,
                  gpointer    data)
{
  return perfmon_idle_add_full (G_PRIORITY_DEFAULT_IDLE, function, data, NULL);
}

/**
 * perfmon_timeout_add_full: (rename-to perfmon_timeout_add)
 * @priority: the priority of the timeout source, typically
 *   %G_PRIORITY_DEFAULT
 * @interval: the time between calls to @function, in milliseconds; more
 *   than 0
 * @function: (scope notified) (closure data) (destroy notify): the function
 *   to call
 * @data: data to pass to @function
 * @notify: (nullable): called to free @data when the source is removed
 *
 * g_timeout_add_full() as a task: dispatched once, now; each time
 * @function runs is one BEGIN … END of the same task. See
 * perfmon_idle_add_full(). An @interval of 0 is an idle at @priority.
 * With tracing off it is g_timeout_add_full().
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_timeout_add_full (int            priority,
                          guint          interval,
                          GSourceFunc    function,
                          gpointer       data,
                          GDestroyNotify notify)
{
  g_return_val_if_fail (function != NULL, 0);

  if (!tracing_on ())
    return interval > 0 ? g_timeout_add_full (priority, interval, function, data, notify)
                        : g_idle_add_full (priority, function, data, notify);
  return attach_task_source (task_source_new (interval, priority, function, data, notify));
}

/**
 * perfmon_timeout_add: (skip)
 * @interval: the time between calls to @function, in milliseconds
 * @function: function to call
 * @data: data to pass to @function
 *
 * perfmon_timeout_add_full() at %G_PRIORITY_DEFAULT with no destroy
 * notify, as g_timeout_add().
 *
 * Returns: the id (greater than 0) of the event source
 *
 * Since: 0.1
 */
guint
perfmon_timeout_add (guint       interval,
                     GSourceFunc function,
                     gpointer    data)
{
  return perfmon_timeout_add_full (G_PRIORITY_DEFAULT, interval, function, data, NULL);
}

/* Runs the task of @ids now, on the calling thread, until @function
 * returns FALSE, as g_main_context_invoke() does. */
static void
run_task_inline (const PerfmonTaskIds *ids,
                 GSourceFunc           function,
                 gpointer              data)
{
  gboolean again;

  do
    {
      PerfmonTaskContext saved;

      _perfmon_task_enter (ids, &saved);
      again = function (data);
      _perfmon_task_leave (&saved);
    }
  while (again);
}

/**
 * perfmon_main_context_invoke_full: (rename-to perfmon_main_context_invoke)
 * @context: (nullable): a #GMainContext, or %NULL for the global-default
 *   main context
 * @priority: the priority at which to run @function
 * @function: (scope notified) (closure data) (destroy notify): the function
 *   to call
 * @data: data to pass to @function
 * @notify: (nullable): called to free @data after @function ran for the
 *   last time
 *
 * g_main_context_invoke_full() as a task: when the calling thread owns
 * @context, or can acquire it, @function runs at once (still a task, a
 * child of the caller's); otherwise it runs from an idle source attached
 * to @context, on the thread that runs @context. Either way, as in GLib,
 * @function is called again while it returns %TRUE, each call one
 * BEGIN … END of the task. With tracing off it is
 * g_main_context_invoke_full().
 *
 * Any thread may call it.
 *
 * Since: 0.1
 */
void
perfmon_main_context_invoke_full (GMainContext  *context,
                                  int            priority,
                                  GSourceFunc    function,
                                  gpointer       data,
                                  GDestroyNotify notify)
{
  g_return_if_fail (function != NULL);

  if (context == NULL)
    context = g_main_context_default ();

  if (!tracing_on ())
    g_main_context_invoke_full (context, priority, function, data, notify);
  else if (g_main_context_is_owner (context))
    {
      PerfmonTaskIds ids;

      _perfmon_task_dispatch (&ids, function);
      run_task_inline (&ids, function, data);
      if (notify != NULL)
        notify (data);
    }
  else if (g_main_context_acquire (context))
    {
      PerfmonTaskIds ids;

      _perfmon_task_dispatch (&ids, function);
      g_main_context_push_thread_default (context);
      run_task_inline (&ids, function, data);
      g_main_context_pop_thread_default (context);
      g_main_context_release (context);
      if (notify != NULL)
        notify (data);
    }
  else
    {
      GSource *source = task_source_new (0, priority, function, data, notify);

      g_source_attach (source, context);
      g_source_unref (source);
    }
}

/**
 * perfmon_main_context_invoke: (skip)
 * @context: (nullable): a #GMainContext, or %NULL for the global-default
 *   main context
 * @function: function to call
 * @data: data to pass to @function
 *
 * perfmon_main_context_invoke_full() at %G_PRIORITY_DEFAULT with no
 * destroy notify, as g_main_context_invoke().
 *
 * Since: 0.1
 */
void
perfmon_main_context_invoke (GMainContext *context,
                             GSourceFunc   function,
                             gpointer      data)
{
  perfmon_main_context_invoke_full (context, G_PRIORITY_DEFAULT, function, data, NULL);
}

/* The pool's user data: what the items run. */
typedef struct
{
  GFunc    func;
  gpointer user_data;
} PoolFunc;

/* An item carries its function, so that workers never look at the
 * PoolFunc, which perfmon_thread_pool_free() frees. */
typedef struct
{
  PerfmonTaskIds ids;
  GFunc          func;
  gpointer       data;
  gpointer       user_data;
} PoolItem;

static void
pool_trampoline (gpointer item_data,
                 gpointer pool_data)
{
  PoolItem *item = item_data;
  PerfmonTaskContext saved;

  _perfmon_task_enter (&item->ids, &saved);
  item->func (item->data, item->user_data);
  _perfmon_task_leave (&saved);
  g_free (item);
}

gboolean
_perfmon_tracer_owns_pool_func (GFunc func)
{
  return func == pool_trampoline;
}

/**
 * perfmon_thread_pool_new: (skip)
 * @func: the function to run, in a thread of the pool, for each item
 *   pushed with perfmon_thread_pool_push()
 * @user_data: the second argument of @func
 * @max_threads: the most threads the pool runs at once, -1 for no limit
 * @exclusive: whether the pool has threads of its own
 * @error: return location for a #GError
 *
 * g_thread_pool_new() for traced items: each item pushed with
 * perfmon_thread_pool_push() is a task, dispatched at the push and run
 * (BEGIN … END) in the worker thread. Push only with
 * perfmon_thread_pool_push() and free it only with
 * perfmon_thread_pool_free(): the pool's items and user data are the
 * tracer's.
 *
 * Returns: (transfer full) (nullable): the pool, or %NULL with @error set
 *
 * Since: 0.1
 */
GThreadPool *
perfmon_thread_pool_new (GFunc     func,
                         gpointer  user_data,
                         int       max_threads,
                         gboolean  exclusive,
                         GError  **error)
{
  PoolFunc *pool_func;
  GThreadPool *pool;

  g_return_val_if_fail (func != NULL, NULL);

  pool_func = g_new0 (PoolFunc, 1);
  pool_func->func = func;
  pool_func->user_data = user_data;
  /* Items left in the queue when the pool is freed at once are freed
   * with it (their data is the caller's, as with GLib). */
  pool = g_thread_pool_new_full (pool_trampoline, pool_func, g_free, max_threads, exclusive, error);
  if (pool == NULL)
    g_free (pool_func);
  return pool;
}

/**
 * perfmon_thread_pool_push: (skip)
 * @pool: a pool made by perfmon_thread_pool_new()
 * @data: the item, the first argument of the pool's function
 * @error: return location for a #GError
 *
 * g_thread_pool_push() as a task: the dispatch is recorded now, as a child
 * of the calling thread's task, and the run in the worker thread has the
 * task current. Any thread may call it.
 *
 * Returns: %TRUE, or %FALSE with @error set if a thread could not be made
 *
 * Since: 0.1
 */
gboolean
perfmon_thread_pool_push (GThreadPool *pool,
                          gpointer     data,
                          GError     **error)
{
  PoolFunc *pool_func;
  PoolItem *item;

  g_return_val_if_fail (pool != NULL, FALSE);
  g_return_val_if_fail (pool->func == pool_trampoline, FALSE);

  pool_func = pool->user_data;
  item = g_new (PoolItem, 1);
  item->func = pool_func->func;
  item->data = data;
  item->user_data = pool_func->user_data;
  _perfmon_task_dispatch (&item->ids, pool_func->func);
  /* On an error GLib still queued the item, which runs later. */
  return g_thread_pool_push (pool, item, error);
}

/**
 * perfmon_thread_pool_free: (skip)
 * @pool: (transfer full): a pool made by perfmon_thread_pool_new()
 * @immediate: whether to drop the items not started yet
 * @wait_: whether to wait for the items to be processed
 *
 * g_thread_pool_free() for a pool made by perfmon_thread_pool_new().
 *
 * Since: 0.1
 */
void
perfmon_thread_pool_free (GThreadPool *pool,
                          gboolean     immediate,
                          gboolean     wait_)
{
  PoolFunc *pool_func;

  g_return_if_fail (pool != NULL);
  g_return_if_fail (pool->func == pool_trampoline);

  pool_func = pool->user_data;
  g_thread_pool_free (pool, immediate, wait_);
  g_free (pool_func);
}

typedef struct
{
  PerfmonTaskIds  ids;
  GTaskThreadFunc func;
} GTaskCarrier;

static GQuark
gtask_carrier_quark (void)
{
  static gsize quark;

  if (g_once_init_enter (&quark))
    g_once_init_leave (&quark, g_quark_from_static_string ("perfmon-task-ids"));
  return (GQuark) quark;
}

static void
gtask_trampoline (GTask        *task,
                  gpointer      source_object,
                  gpointer      task_data,
                  GCancellable *cancellable)
{
  GTaskCarrier *carrier = g_object_get_qdata (G_OBJECT (task), gtask_carrier_quark ());
  PerfmonTaskContext saved;

  _perfmon_task_enter (&carrier->ids, &saved);
  carrier->func (task, source_object, task_data, cancellable);
  _perfmon_task_leave (&saved);
}

gboolean
_perfmon_tracer_gtask_is_wrapped (gpointer gtask)
{
  return g_object_get_qdata (gtask, gtask_carrier_quark ()) != NULL;
}

/**
 * perfmon_task_run_in_thread: (skip)
 * @task: a #GTask
 * @task_func: the function to run in a thread of GLib's pool
 *
 * g_task_run_in_thread() as a task: dispatched now, as a child of the
 * calling thread's task, and run (BEGIN … END) in the worker thread.
 * With tracing off it is g_task_run_in_thread().
 *
 * Since: 0.1
 */
void
perfmon_task_run_in_thread (GTask           *task,
                            GTaskThreadFunc  task_func)
{
  GTaskCarrier *carrier;

  g_return_if_fail (G_IS_TASK (task));
  g_return_if_fail (task_func != NULL);

  if (!tracing_on ())
    {
      g_task_run_in_thread (task, task_func);
      return;
    }
  carrier = g_new (GTaskCarrier, 1);
  carrier->func = task_func;
  _perfmon_task_dispatch (&carrier->ids, task_func);
  g_object_set_qdata_full (G_OBJECT (task), gtask_carrier_quark (), carrier, g_free);
  g_task_run_in_thread (task, gtask_trampoline);
}

/* --- automatic tasks: the observer of core/'s per-dispatch hook -------- */

/* With the tracer on, every GSource dispatch on a monitored context is a
 * task (DISPATCH, NAME, BEGIN, END), whose parent is the task that was
 * current on the thread that attached the source, whatever thread that was.
 *
 * Parents. attached() writes (source, its id, the attaching task, its
 * source event, when the source became ready) into a fixed table of
 * PARENT_SLOTS slots: the source's address picks PARENT_PROBE neighbouring
 * slots, and the entry goes to the first free one, else to the oldest.
 * Memory is bounded whatever the program does, and an entry whose source
 * died is never freed one by one: it is overwritten by a later attach. An
 * entry matches a dispatch only if both the address and the source id
 * (GLib's per-context counter) match, so a new source at a dead one's
 * address does not inherit its parent. (A hook may tell of a source just
 * before GLib attaches it, so that a dispatch on another thread cannot
 * come first; its id is 0 then, and the address alone matches.) A source attached while the tracer
 * was off, or whose entry was overwritten, runs as a root task (its own
 * parent) of the dispatching thread's source event.
 *
 * Each slot is a seqlock: a writer claims it by moving its sequence from
 * even to odd with a compare-and-swap (a writer that loses the race drops
 * its entry, which only makes that source's tasks roots), stores the
 * fields and releases it with the next even number; a reader copies the
 * fields between two loads of the sequence and ignores what changed
 * meanwhile. Every field is accessed atomically (relaxed), so the table is
 * free of data races in C11's sense too. No lock, no system call, no
 * allocation.
 *
 * Queueing. The DISPATCH record is dated when the source became ready,
 * where that is knowable: a source with a ready time (every GLib timeout,
 * g_source_set_ready_time()) at its ready time; an idle (g_idle_funcs) at
 * its attach, for its first dispatch (an idle is known by its prepare,
 * which the hook leaves alone). Other sources (file descriptors,
 * child watches, custom prepare/check) are dated at the dispatch: their
 * queueing time is unknown and shows as 0.
 *
 * Nesting. A dispatch saves the thread's task context on a small
 * per-thread stack (the token is its slot) and its end restores it; more
 * than AUTO_DEPTH nested dispatches (main loops run inside dispatches)
 * are not tasks. */

#define PARENT_SLOTS 4096u   /* a power of two; 56 bytes each */
#define PARENT_PROBE 4u
#define AUTO_DEPTH   16u
#define AUTO_NAME_MAX 120u

typedef struct
{
  guint    seq;                /* odd while written */
  guint    source_id;
  gpointer source;
  guint64  parent_id;          /* 0: the attacher ran no task */
  guint64  source_event_id;
  guint32  source_event_type;
  guint32  reserved;
  guint64  attach_cycles;      /* which entry is oldest */
  guint64  ready_cycles;       /* idle: its attach, until its first dispatch; else 0 */
} ParentSlot;

static ParentSlot parent_slots[PARENT_SLOTS];

/* Not initial-exec: dlopen()ed with PyGObject, the library must not take
 * this much of the static TLS surplus. */
static __thread struct
{
  guint              depth;
  PerfmonTaskContext saved[AUTO_DEPTH];
} auto_stack;

static inline guint
parent_slot_index (gconstpointer source)
{
  guint64 key = (guint64) (guintptr) source;

  /* Fibonacci hashing of the address, without its alignment bits. */
  return (guint) (((key >> 4) * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15)) >> 52) & (PARENT_SLOTS - 1) & ~(PARENT_PROBE - 1);
}

static void
auto_attached (GSource *source)
{
  guint first = parent_slot_index (source);
  ParentSlot *slot = NULL;
  guint64 oldest = G_MAXUINT64;
  guint64 now;
  guint seq;

  if (G_UNLIKELY (__atomic_load_n (&current_session, __ATOMIC_RELAXED) == 0 || source == NULL))
    return;

  for (guint i = 0; i < PARENT_PROBE; i++)
    {
      ParentSlot *candidate = &parent_slots[first + i];
      gpointer owner = __atomic_load_n (&candidate->source, __ATOMIC_RELAXED);
      guint64 attached_at = __atomic_load_n (&candidate->attach_cycles, __ATOMIC_RELAXED);

      if (owner == NULL || owner == source)
        {
          slot = candidate;
          break;
        }
      if (attached_at < oldest)
        {
          oldest = attached_at;
          slot = candidate;
        }
    }

  seq = __atomic_load_n (&slot->seq, __ATOMIC_RELAXED);
  if ((seq & 1) != 0 ||
      !__atomic_compare_exchange_n (&slot->seq, &seq, seq + 1, FALSE, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
    return;
  __atomic_store_n (&slot->source, source, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->source_id, source->source_id, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->parent_id, tls.task_id, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->source_event_id, tls.source_event_id, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->source_event_type, tls.source_event_type, __ATOMIC_RELAXED);
  now = perfmon_clock_cycles ();
  __atomic_store_n (&slot->attach_cycles, now, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->ready_cycles, source->source_funcs->prepare == g_idle_funcs.prepare ? now : 0, __ATOMIC_RELAXED);
  __atomic_store_n (&slot->seq, seq + 2, __ATOMIC_RELEASE);
}

/* The entry of @source, copied into @out; FALSE if it has none. The
 * entry's ready time is taken: the first lookup (the first dispatch of an
 * idle) gets it, later ones 0. */
static inline gboolean
auto_lookup (GSource    *source,
             ParentSlot *out)
{
  guint first = parent_slot_index (source);

  for (guint i = 0; i < PARENT_PROBE; i++)
    {
      ParentSlot *slot = &parent_slots[first + i];
      guint seq = __atomic_load_n (&slot->seq, __ATOMIC_ACQUIRE);

      if ((seq & 1) != 0 || __atomic_load_n (&slot->source, __ATOMIC_RELAXED) != source)
        continue;
      out->source_id = __atomic_load_n (&slot->source_id, __ATOMIC_RELAXED);
      out->parent_id = __atomic_load_n (&slot->parent_id, __ATOMIC_RELAXED);
      out->source_event_id = __atomic_load_n (&slot->source_event_id, __ATOMIC_RELAXED);
      out->source_event_type = __atomic_load_n (&slot->source_event_type, __ATOMIC_RELAXED);
      out->ready_cycles = __atomic_load_n (&slot->ready_cycles, __ATOMIC_RELAXED);
      __atomic_thread_fence (__ATOMIC_ACQUIRE);
      /* Id 0: the hook told of the source before GLib attached it. */
      if (__atomic_load_n (&slot->seq, __ATOMIC_RELAXED) != seq ||
          (out->source_id != 0 && out->source_id != source->source_id))
        continue;
      /* Only the first dispatch of an idle waited since its attach. */
      if (out->ready_cycles != 0)
        {
          guint64 expected = out->ready_cycles;

          if (!__atomic_compare_exchange_n (&slot->ready_cycles, &expected, 0, FALSE,
                                            __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            out->ready_cycles = 0;
        }
      return TRUE;
    }
  return FALSE;
}

static inline void
record_name (guint64     task_id,
             const char *name)
{
  RecordSlot slot;
  PerfmonTaskNameRecord *record = record_open (&slot, sizeof *record + AUTO_NAME_MAX + 8);
  gsize len;
  guint size;

  if (record == NULL)
    return;
  len = perfmon_utf8_cut (name, strnlen (name, AUTO_NAME_MAX + 1), AUTO_NAME_MAX);
  size = (guint) ((sizeof *record + len + 1 + 7) & ~(gsize) 7);
  memcpy (record->text, name, len);
  memset (record->text + len, 0, size - sizeof *record - len);
  record->task_id = task_id;
  record_close (&slot, &record->header, PERFMON_TASK_RECORD_NAME, size);
}

static gpointer
auto_dispatch_begin (GSource    *source,
                     const char *name)
{
  PerfmonTaskContext *saved;
  PerfmonTaskIds ids;
  ParentSlot entry;
  guint64 parent;
  guint64 ready_cycles = 0;
  gint64 ready_us;

  if (G_UNLIKELY (__atomic_load_n (&current_session, __ATOMIC_RELAXED) == 0))
    return NULL;
  /* The wrappers' sources are tasks of their own already. (By prepare:
   * the hook may replace a source's dispatch, not its prepare.) */
  if (source->source_funcs->prepare == task_source_prepare ||
      source->source_funcs->prepare == timeout_task_prepare)
    return NULL;
  if (G_UNLIKELY (auto_stack.depth >= AUTO_DEPTH))
    return NULL;

  ids.task_id = new_id ();
  if (auto_lookup (source, &entry))
    {
      parent = entry.parent_id != 0 ? entry.parent_id : ids.task_id;
      ids.source_event_id = entry.source_event_id;
      ids.source_event_type = entry.source_event_type;
      ready_cycles = entry.ready_cycles;
    }
  else
    {
      parent = ids.task_id;
      ids.source_event_id = tls.source_event_id;
      ids.source_event_type = tls.source_event_type;
    }

  ready_us = g_source_get_ready_time (source);
  if (ready_us >= 0)
    {
      gint64 late_us = g_get_monotonic_time () - ready_us;
      guint64 now = perfmon_clock_cycles ();
      guint64 late = late_us > 0 ? perfmon_clock_us_to_cycles (late_us) : 0;

      ready_cycles = late < now ? now - late : 0;
    }

  record_dispatch_at (ids.task_id, parent, &ids, NULL, ready_cycles, 0);
  record_name (ids.task_id, name);
  saved = &auto_stack.saved[auto_stack.depth++];
  _perfmon_task_enter (&ids, saved);
  return saved;
}

static void
auto_dispatch_end (GSource  *source,
                   gpointer  token)
{
  if (token == NULL)
    return;
  _perfmon_task_leave (token);
  auto_stack.depth--;
}

static const PerfmonDispatchObserver auto_task_observer = {
  .attached = auto_attached,
  .dispatch_begin = auto_dispatch_begin,
  .dispatch_end = auto_dispatch_end,
};

/* --- writing the file -------------------------------------------------- */

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
  for (gsize done = 0; done < length;)
    {
      gsize at = (start + done) & (capacity - 1);
      gsize n = MIN (length - done, capacity - at);

      memcpy (copy + done, buffer->data + at, n);
      done += n;
    }
  __atomic_thread_fence (__ATOMIC_ACQUIRE);
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
      gsize room = CHUNK_SIZE - (at & (CHUNK_SIZE - 1));
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
  gsize len = perfmon_utf8_cut (text, strlen (text), CHUNK_SIZE - prefix - 8);
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

/* Under control_lock: the task log of session @session from @since_cycles
 * on; the header claims @start_ns as the start. */
static GBytes *
serialize_locked (guint   session,
                  guint64 since_cycles,
                  gint64  start_ns)
{
  g_autoptr(GPtrArray) buffers = g_ptr_array_new ();
  g_autoptr(GPtrArray) copies = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GArray) entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  g_autoptr(GHashTable) callbacks = g_hash_table_new (NULL, NULL);
  GByteArray *out;
  PerfmonTaskFileHeader header = { PERFMON_TASK_FILE_MAGIC, 0, };
  guint64 ref_cycles;
  gint64 ref_ns;
  double per_ns = cycles_per_ns ();
  guint64 dropped = 0;
  gsize total_bytes = 0;
  gint64 describe_deadline_us;
  GHashTableIter iter;
  gpointer key;
  const char *process_name;

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
    }

  /* Buffers stay in the registry at least until control_lock is
   * released: only control calls free them. */
  for (guint i = 0; i < buffers->len; i++)
    {
      Buffer *buffer = g_ptr_array_index (buffers, i);
      guint8 *copy = NULL;
      gsize length = copy_buffer (buffer, &copy);

      dropped += __atomic_load_n (&buffer->dropped, __ATOMIC_RELAXED);
      if (copy != NULL)
        {
          g_ptr_array_add (copies, copy);
          total_bytes += length;
          parse_copy (copy, length, since_cycles, entries, callbacks);
        }
    }
  /* Each thread's records are in order already: with one thread, or
   * threads that took turns, there is nothing to sort. */
  for (guint i = 1; i < entries->len; i++)
    if (entry_compare (&g_array_index (entries, Entry, i - 1), &g_array_index (entries, Entry, i)) > 0)
      {
        g_array_sort (entries, entry_compare);
        break;
      }

  out = g_byte_array_sized_new (sizeof header + total_bytes + buffers->len * 64 +
                                 g_hash_table_size (callbacks) * 128);
  ref_cycles = perfmon_clock_cycles ();
  ref_ns = perfmon_clock_monotonic_ns ();
  /* The rate between the session's start and now, when that is long
   * enough to measure it better than the process-wide estimate: records
   * of a long session would otherwise drift by its error. */
  if (session != 0 && ref_ns - session_start_ns > 100 * G_GINT64_CONSTANT (1000000) &&
      ref_cycles > session_start_cycles)
    per_ns = (double) (ref_cycles - session_start_cycles) / (double) (ref_ns - session_start_ns);

  header.version = PERFMON_TASK_FILE_VERSION;
  header.header_size = sizeof header;
  header.byte_order_mark = PERFMON_TASK_FILE_BYTE_ORDER_MARK;
  header.pid = (guint32) getpid ();
  header.start_time_ns = start_ns;
  header.realtime_offset_ns = g_get_real_time () * 1000 - perfmon_clock_monotonic_ns ();
  header.dropped_records = dropped;
  process_name = _perfmon_process_name ();
  g_strlcpy (header.process_name, process_name, sizeof header.process_name);
  g_byte_array_append (out, (const guint8 *) &header, sizeof header);

  for (guint i = 0; i < buffers->len; i++)
    {
      Buffer *buffer = g_ptr_array_index (buffers, i);

      append_string_record (out, PERFMON_TASK_RECORD_THREAD, buffer->tid, start_ns, NULL, buffer->name);
    }

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

      append_string_record (out, PERFMON_TASK_RECORD_SYMBOL, 0, start_ns, &callback, symbol);
    }

  return g_byte_array_free_to_bytes (out);
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
  session_start_cycles = perfmon_clock_cycles ();
  session_start_ns = perfmon_clock_monotonic_ns ();
  /* Dead threads' buffers belong to older sessions now. */
  prune_dead_buffers_locked (TRUE);
  __atomic_store_n (&session_overwrite, new_mode == MODE_FLIGHT, __ATOMIC_RELAXED);
  __atomic_store_n (&session_capacity, capacity, __ATOMIC_RELAXED);
  __atomic_store_n (&current_session, session_counter, __ATOMIC_RELEASE);
  _perfmon_dispatch_set_observer (&auto_task_observer);
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
  __atomic_store_n (&current_session, 0, __ATOMIC_RELEASE);
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
  guint64 now = perfmon_clock_cycles ();
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
 * per thread, in memory touched only as records arrive). A thread that runs
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
 * sorts the records and resolves the callbacks' symbols: it takes time, so
 * not on a thread whose latency matters.
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
      start_ns = MAX (start_ns, perfmon_clock_monotonic_ns () - (gint64) flight_seconds * G_GINT64_CONSTANT (1000000000));
      prune_dead_buffers_locked (FALSE);
    }
  bytes = serialize_locked (__atomic_load_n (&current_session, __ATOMIC_RELAXED), since_cycles, start_ns);
  g_mutex_unlock (&control_lock);

  return g_file_set_contents_full (path, g_bytes_get_data (bytes, NULL), (gssize) g_bytes_get_size (bytes),
                                   G_FILE_SET_CONTENTS_CONSISTENT, 0644, error);
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
 * tasks still running when it returns record nothing more.
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
      guint session = __atomic_load_n (&current_session, __ATOMIC_RELAXED);

      /* Threads stop recording first, so the file ends at the stop. */
      __atomic_store_n (&current_session, 0, __ATOMIC_RELEASE);
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
  return g_file_set_contents_full (path, g_bytes_get_data (bytes, NULL), (gssize) g_bytes_get_size (bytes),
                                   G_FILE_SET_CONTENTS_CONSISTENT, 0644, error);
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
  return __atomic_load_n (&current_session, __ATOMIC_RELAXED) != 0;
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
  now_cycles = perfmon_clock_cycles ();
  now_ns = perfmon_clock_monotonic_ns ();
  since_cycles = since_ns >= now_ns
    ? now_cycles
    : now_cycles - MIN (now_cycles, (guint64) ((double) (now_ns - since_ns) * cycles_per_ns ()));
  if (mode == MODE_FLIGHT)
    prune_dead_buffers_locked (FALSE);
  bytes = serialize_locked (__atomic_load_n (&current_session, __ATOMIC_RELAXED), since_cycles,
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
