/* perfmon-tracer-buffer-private.h: the recording side's per-thread ring
 * buffers, shared by the tracer (perfmon-tracer.c) and automatic tasks
 * (perfmon-automatic-tasks.c)
 *
 * Everything here is the hot path of a traced event: inline, lock-free,
 * no system call, no allocation (see "Design" in perfmon-tracer.c).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <string.h>

#include <glib.h>

#include "perfmon-clock-private.h"
#include "perfmon-task-format-private.h"
#include "perfmon-task-writer-private.h"
#include "perfmon-tracer-private.h"

G_BEGIN_DECLS

#define CHUNK_SIZE          PERFMON_TASK_CHUNK_SIZE
#define MIN_BUFFER_SIZE     ((gsize) 16 * CHUNK_SIZE)
#define MAX_BUFFER_SIZE     ((gsize) 1 << 30)
#define DEFAULT_BUFFER_SIZE ((gsize) 2 << 20)
#define ID_BLOCK            256u
#define LABEL_MAX           240u   /* bytes of label text, NUL excluded */
#define DBUS_NAME_MAX       255u
#define MAX_FLIGHT_SECONDS  3600u
#define NAME_SLOTS          128u   /* a power of two */
/* A flight recorder's thread writes a name's NAME_DEF again once this
 * fraction of its buffer was written since the last one. */
#define NAME_REFRESH_FRACTION 8u
#define AUTO_NAME_MAX       120u   /* bytes of an automatic task's name, NUL excluded */
/* The flight recorder's promise: its seconds at this many tasks per second
 * on each recording thread (a task: its DISPATCH, BEGIN and END records),
 * with an eighth more for chunk ends and labels. Unless the buffer size was
 * set, each thread's buffer is sized for that (a power of two). */
#define FLIGHT_TASKS_PER_SECOND 2000u
#define FLIGHT_BYTES_PER_TASK \
  ((sizeof (PerfmonTaskDispatchRecord) + 2 * sizeof (PerfmonTaskIdRecord)) * 9 / 8)

G_STATIC_ASSERT (sizeof (PerfmonTaskLabelRecord) + LABEL_MAX + 8 < CHUNK_SIZE);

/* The largest record: a D-Bus record with the longest name. */
#define RECORD_MAX ((sizeof (PerfmonTaskDBusRecord) + DBUS_NAME_MAX + 1 + 7) & ~(gsize) 7)

/* A name of automatic tasks that the thread defined in its buffer: the
 * pointer it was given, its number, and where its NAME_DEF record is. */
typedef struct
{
  const char *key;
  guint64     defined_at;   /* the NAME_DEF's offset */
  guint32     id;           /* 0: the slot is free */
  guint32     compare_len;  /* bytes of the text to compare: with its NUL unless it was cut */
  guint       generation;   /* _perfmon_dispatch_names_generation when @key was checked */
} NameSlot;

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
  /* Owner only: where a record larger than a RecordSlot's is built. */
  guint64  staging[RECORD_MAX / 8];
  /* The owner's only: the names of its automatic tasks (see "Names"). */
  guint64  name_refresh;    /* a NAME_DEF older than this many bytes is written again */
  guint64  name_intact;     /* one at most this many bytes old is still in the ring */
  guint32  last_name_id;
  NameSlot names[NAME_SLOTS];
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
  /* How many automatic tasks run nested on the thread (their saved
   * contexts are in auto_stack): here, so that a dispatch's end needs no
   * __tls_get_addr(). */
  guint    auto_depth;
} ThreadState;

/* The calling thread's state, defined in perfmon-tracer.c. Initial-exec:
 * small, and every access is one move. */
G_GNUC_INTERNAL extern __thread ThreadState _perfmon_tracer_tls __attribute__ ((tls_model ("initial-exec")));

/* The slow paths of new_id() and current_buffer(), in perfmon-tracer.c. */
G_GNUC_INTERNAL void    _perfmon_tracer_refill_ids         (void);
G_GNUC_INTERNAL Buffer *_perfmon_tracer_buffer_for_session (guint session);

static inline guint64
new_id (void)
{
  guint32 low;

  /* The counter wraps after 2^32 ids; 0 means "none" and is skipped. */
  do
    {
      if (G_UNLIKELY (_perfmon_tracer_tls.ids_left == 0))
        _perfmon_tracer_refill_ids ();
      _perfmon_tracer_tls.ids_left--;
      low = _perfmon_tracer_tls.next_low++;
    }
  while (G_UNLIKELY (low == 0));
  return ((guint64) _perfmon_tracer_tls.id_pid << 32) | low;
}

static inline Buffer *
current_buffer (void)
{
  guint session = __atomic_load_n (&_perfmon_tracer_session, __ATOMIC_RELAXED);
  Buffer *buffer;

  if (G_LIKELY (session == 0))
    return NULL;
  buffer = _perfmon_tracer_tls.buffer;
  if (G_UNLIKELY (buffer == NULL || buffer->session != session))
    buffer = _perfmon_tracer_buffer_for_session (session);
  return buffer;
}

/* The ring's words, each an atomic object: the owner stores them with
 * release ordering, readers load them with acquire ordering. */
#define STORE_WORD(word, value) __atomic_store_n (&(word), (value), __ATOMIC_RELEASE)
#define LOAD_WORD(word) __atomic_load_n (&(word), __ATOMIC_ACQUIRE)

/* The word at offset @offset (a multiple of 8) of @buffer's ring. */
static inline guint64 *
buffer_word (Buffer  *buffer,
             guint64  offset)
{
  return (guint64 *) (gpointer) (buffer->data + (offset & (buffer->capacity - 1)));
}

/* Room for a record of @size bytes (a multiple of 8, at most a chunk): in
 * @head_out, the offset it starts at; FALSE if the record is dropped.
 * Nothing is visible until buffer_commit(). */
static inline gboolean
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
      return FALSE;
    }
  if (start != head)
    {
      /* A pad to the end of the chunk: a type-0 header (its first word
       * zero), or nothing when fewer than a header's bytes are left
       * (readers skip those). */
      if (room >= sizeof (PerfmonTaskRecordHeader))
        STORE_WORD (*buffer_word (buffer, head), 0);
    }
  *head_out = start;
  return TRUE;
}

/* Stores a record of @size bytes (a multiple of 8) at offset @start,
 * word by word (see "The rule between the owner and readers"), then
 * publishes it: its header's two words, then the rest of @record, which
 * is @staged (a long record, of a size known only now) or not (a short
 * one of a fixed size, whose words, once everything is inlined, the
 * compiler takes straight from registers). */
static inline void
buffer_commit (Buffer        *buffer,
               guint64        start,
               guint64        header_word,
               guint64        time,
               const guint8  *record,
               gboolean       staged,
               guint          size,
               guint64        cycles)
{
  guint64 *words = buffer_word (buffer, start);
  guint64 word;

  STORE_WORD (words[0], header_word);
  STORE_WORD (words[1], time);
  if (staged)
    {
      for (guint i = 2; i < size / 8; i++)
        {
          memcpy (&word, record + i * 8, 8);
          STORE_WORD (words[i], word);
        }
    }
  else
    {
#pragma GCC unroll 8
      for (guint i = 2; i < size / 8; i++)
        {
          memcpy (&word, record + i * 8, 8);
          STORE_WORD (words[i], word);
        }
    }
  __atomic_store_n (&buffer->last_cycles, cycles, __ATOMIC_RELAXED);
  __atomic_store_n (&buffer->head, start + size, __ATOMIC_RELEASE);
}

/* A record being written on the calling thread's buffer: record_open()
 * reserves room and takes the time, the caller fills the payload in
 * @record, and record_close() stores the header and the payload in the
 * buffer. A record of at most @small's size is built in @small, on the
 * caller's stack, where the compiler keeps its fields in registers once
 * everything is inlined (a larger slot would be a large stack frame,
 * which stops the inlining); a larger one in the buffer's @staging. */
typedef struct
{
  Buffer  *buffer;
  guint64  start;
  guint64  cycles;
  guint64  time;      /* the record's time: @cycles unless set earlier */
  gboolean staged;    /* the record is in the buffer's @staging, not @small */
  guint64  small[sizeof (PerfmonTaskDispatchRecord) / 8];
} RecordSlot;

G_STATIC_ASSERT (sizeof (PerfmonTaskLabelRecord) + LABEL_MAX + 8 <= RECORD_MAX);
G_STATIC_ASSERT (sizeof (PerfmonTaskRingNameRecord) + AUTO_NAME_MAX + 1 + 7 <= RECORD_MAX);

/* Room for at most @size bytes (at most RECORD_MAX), or NULL when tracing
 * is off or the record is dropped. */
static inline gpointer
record_open_in (RecordSlot *slot,
                Buffer     *buffer,
                guint       size)
{
  slot->buffer = buffer;
  if (!buffer_reserve (buffer, size, &slot->start))
    return NULL;
  slot->time = slot->cycles = _perfmon_clock_cycles ();
  /* A flag, not a pointer into the slot: the slot stays in registers. */
  slot->staged = size > sizeof slot->small;
  return slot->staged ? slot->buffer->staging : slot->small;
}

static inline gpointer
record_open (RecordSlot *slot,
             guint       size)
{
  Buffer *buffer = current_buffer ();

  if (buffer == NULL)
    return NULL;
  return record_open_in (slot, buffer, size);
}

/* @type: a PerfmonTaskRecordType, or a ring-only PERFMON_TASK_RING_*. */
static inline void
record_close (RecordSlot              *slot,
              PerfmonTaskRecordHeader *header,
              guint                    type,
              guint                    size)
{
  /* The header (at @header, the start of the slot's record) is stored
   * from registers: its first word is type, size and tid, as
   * PerfmonTaskRecordHeader lays them out; its second, the time (cycles
   * until the file is written). */
  guint64 first = (guint64) (guint16) type | (guint64) (guint16) size << 16 | (guint64) slot->buffer->tid << 32;

  G_STATIC_ASSERT (G_STRUCT_OFFSET (PerfmonTaskRecordHeader, size) == 2 &&
                   G_STRUCT_OFFSET (PerfmonTaskRecordHeader, tid) == 4 &&
                   G_STRUCT_OFFSET (PerfmonTaskRecordHeader, time_ns) == 8);
#if G_BYTE_ORDER == G_BIG_ENDIAN
  first = (guint64) (guint16) type << 48 | (guint64) (guint16) size << 32 | slot->buffer->tid;
#endif
  buffer_commit (slot->buffer, slot->start, first, slot->time,
                 (const guint8 *) (slot->staged ? slot->buffer->staging : slot->small), slot->staged,
                 size, slot->cycles);
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

/* The thread's task context: saved in @saved, @ids made current. */
static inline void
context_enter (const PerfmonTaskIds *ids,
               PerfmonTaskContext   *saved)
{
  saved->task_id = _perfmon_tracer_tls.task_id;
  saved->task_source_event_id = _perfmon_tracer_tls.task_source_event_id;
  saved->task_source_event_type = _perfmon_tracer_tls.task_source_event_type;
  saved->source_event_id = _perfmon_tracer_tls.source_event_id;
  saved->source_event_type = _perfmon_tracer_tls.source_event_type;
  _perfmon_tracer_tls.task_id = ids->task_id;
  _perfmon_tracer_tls.task_source_event_id = _perfmon_tracer_tls.source_event_id = ids->source_event_id;
  _perfmon_tracer_tls.task_source_event_type = _perfmon_tracer_tls.source_event_type = ids->source_event_type;
}

/* Records END of the current task and restores @saved. */
static inline void
context_leave (const PerfmonTaskContext *saved)
{
  record_id (PERFMON_TASK_RECORD_END, _perfmon_tracer_tls.task_id);
  _perfmon_tracer_tls.task_id = saved->task_id;
  _perfmon_tracer_tls.task_source_event_id = saved->task_source_event_id;
  _perfmon_tracer_tls.task_source_event_type = saved->task_source_event_type;
  _perfmon_tracer_tls.source_event_id = saved->source_event_id;
  _perfmon_tracer_tls.source_event_type = saved->source_event_type;
}

G_END_DECLS
