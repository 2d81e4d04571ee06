/* perfmon-task-writer-private.h: writing a task log from recorded buffers
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

#include "perfmon-task-format-private.h"

G_BEGIN_DECLS

/* The recorder's buffers are rings of chunks of this many bytes that
 * records never straddle: a record that does not fit in the rest of a
 * chunk starts the next one, leaving a type-0 header (or nothing, when
 * fewer than 16 bytes are left) before it. */
#define PERFMON_TASK_CHUNK_SIZE 4096u

/* Records only the recorder's buffers hold, never a file: the writer turns
 * them into the file's records. An automatic task (a GSource dispatch the
 * tracer saw through core/'s hook) is one AUTO record where it begins, and
 * an END; its name is a number, defined by a NAME_DEF record of the same
 * buffer. The recorder writes a NAME_DEF the first time a thread uses a
 * name and again once the ring has moved on far enough that the previous
 * one may fall out of what a reader copies (see perfmon-tracer.c), always
 * with the same number while the thread keeps the name in its cache: a
 * reader resolves an AUTO record by a NAME_DEF anywhere in its copy. An
 * AUTO record whose name is in no NAME_DEF of the copy (the oldest records
 * of a ring that wrapped) is left out, with what refers to its task.
 * Numbers are per buffer, never 0, and never name two texts in one ring.
 *
 * In the file an AUTO record becomes DISPATCH (dated when the task became
 * ready, callback 0), NAME and BEGIN: the file format does not change. */
enum
{
  PERFMON_TASK_RING_NAME_DEF = 0x100,  /* PerfmonTaskRingNameRecord */
  PERFMON_TASK_RING_AUTO     = 0x101,  /* PerfmonTaskRingAutoRecord */
};

typedef struct
{
  PerfmonTaskRecordHeader header;      /* time_ns: when it was written */
  guint32 name_id;
  guint32 reserved;
  char    text[];                      /* NUL-terminated UTF-8, padded */
} PerfmonTaskRingNameRecord;

typedef struct
{
  PerfmonTaskRecordHeader header;      /* time_ns: when the task began */
  guint64 task_id;
  guint64 parent_id;
  guint64 source_event_id;             /* 0: none */
  guint32 source_event_type;           /* PerfmonSourceEventType */
  guint32 name_id;                     /* a NAME_DEF's */
  guint64 ready_time;                  /* when it became ready; 0: at its begin */
} PerfmonTaskRingAutoRecord;

G_STATIC_ASSERT (sizeof (PerfmonTaskRingAutoRecord) == 56);

/* One thread's records as the recorder copied them: @length bytes that
 * start at a chunk boundary, their times cycle-counter readings. */
typedef struct
{
  guint32       tid;
  const char   *name;         /* the THREAD record's */
  const guint8 *records;      /* NULL: nothing to copy (the thread's name is still written) */
  gsize         length;
} PerfmonTaskWriterThread;

typedef struct
{
  gint64  start_ns;               /* the header's start_time_ns */
  guint64 since_cycles;           /* records older than this are left out */
  guint64 dropped_records;        /* the header's */
  /* When the session started: with a long enough session, the writer
   * measures the cycle rate over it. 0 cycles: no session. */
  gint64  session_start_ns;
  guint64 session_start_cycles;
} PerfmonTaskWriterSession;

/* Any thread, not a hot path: a task log, header and records (sorted by
 * time, times in CLOCK_MONOTONIC nanoseconds), THREAD records for @threads
 * and a SYMBOL record per callback address of their DISPATCH records. */
GBytes *_perfmon_task_writer_write (const PerfmonTaskWriterSession *session,
                                    const PerfmonTaskWriterThread  *threads,
                                    guint                           n_threads);

G_END_DECLS
