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
