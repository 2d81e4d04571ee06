/* perfmon-task-format-private.h: the task log file, version 1
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The task writer (perfmon-task-writer.c) writes this format and the task
 * log reader (perfmon-task-log.c) reads it; this header is the one place it
 * is defined.
 *
 * A file is one PerfmonTaskFileHeader followed by records until the end of
 * the file. Every integer is in the byte order of the machine that wrote it;
 * @byte_order_mark tells which (a reader rejects a file from the other
 * order). Every record starts with a PerfmonTaskRecordHeader whose @size
 * counts the whole record (header, payload and padding), is a multiple of 8
 * and at least sizeof (PerfmonTaskRecordHeader). A reader skips records of a
 * @type it does not know, so that later versions can add types without
 * changing @version; it rejects a record whose size runs past the end of the
 * file or whose payload is shorter than its type needs.
 *
 * Times are CLOCK_MONOTONIC nanoseconds, so files written by processes of one
 * boot merge onto one time line. Strings are NUL-terminated UTF-8, padded
 * with NULs to the record's size.
 *
 * Task ids are unique across the processes of a session: the writer's pid in
 * the high 32 bits, a per-process counter in the low 32. A task that no other
 * task dispatched (it runs for a source event) has itself as parent.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define PERFMON_TASK_FILE_MAGIC          "PMTASKS"   /* 8 bytes with its NUL */
#define PERFMON_TASK_FILE_VERSION        1
#define PERFMON_TASK_FILE_BYTE_ORDER_MARK 0x01020304u

typedef struct
{
  char    magic[8];            /* PERFMON_TASK_FILE_MAGIC */
  guint32 version;             /* PERFMON_TASK_FILE_VERSION */
  guint32 header_size;         /* sizeof (PerfmonTaskFileHeader); records start here */
  guint32 byte_order_mark;     /* PERFMON_TASK_FILE_BYTE_ORDER_MARK */
  guint32 pid;                 /* the writing process */
  gint64  start_time_ns;       /* CLOCK_MONOTONIC when tracing started */
  gint64  realtime_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC at start */
  guint64 dropped_records;     /* records lost to full buffers */
  char    process_name[32];    /* NUL-padded; truncated if longer */
} PerfmonTaskFileHeader;

G_STATIC_ASSERT (sizeof (PerfmonTaskFileHeader) == 80);

typedef enum
{
  PERFMON_TASK_RECORD_DISPATCH  = 1,  /* PerfmonTaskDispatchRecord */
  PERFMON_TASK_RECORD_BEGIN     = 2,  /* PerfmonTaskBeginRecord */
  PERFMON_TASK_RECORD_END       = 3,  /* PerfmonTaskIdRecord */
  PERFMON_TASK_RECORD_LABEL     = 4,  /* PerfmonTaskLabelRecord */
  PERFMON_TASK_RECORD_SYMBOL    = 5,  /* PerfmonTaskSymbolRecord: the seed's VTABLE */
  PERFMON_TASK_RECORD_THREAD    = 6,  /* PerfmonTaskThreadRecord */
  PERFMON_TASK_RECORD_DBUS_SEND = 7,  /* PerfmonTaskDBusRecord */
  PERFMON_TASK_RECORD_DBUS_RECV = 8,  /* PerfmonTaskDBusRecord */
  PERFMON_TASK_RECORD_NAME      = 9,  /* PerfmonTaskNameRecord */
  PERFMON_TASK_RECORD_MODULE    = 10, /* PerfmonTaskModuleRecord (since 0.3) */
} PerfmonTaskRecordType;

typedef struct
{
  guint16 type;                /* PerfmonTaskRecordType */
  guint16 size;                /* whole record in bytes, multiple of 8 */
  guint32 tid;                 /* the thread that recorded it */
  gint64  time_ns;             /* CLOCK_MONOTONIC */
} PerfmonTaskRecordHeader;

G_STATIC_ASSERT (sizeof (PerfmonTaskRecordHeader) == 16);

/* A task was dispatched (queued) by the task running on @header.tid, or by
 * no task (then @parent_id == @task_id). */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 task_id;
  guint64 parent_id;
  guint64 source_event_id;     /* 0: none */
  guint32 source_event_type;   /* PerfmonSourceEventType */
  guint32 delay_ms;            /* due this long after the dispatch (a timeout's
                                * interval); 0: at once. Was "reserved", always
                                * 0, before: version 1 files agree. */
  guint64 callback;            /* address of the task's function; see SYMBOL */
} PerfmonTaskDispatchRecord;

/* A task started to run on @header.tid. A task may run several times (a
 * repeating timeout): each run is one BEGIN … END pair. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 task_id;
} PerfmonTaskIdRecord;

typedef PerfmonTaskIdRecord PerfmonTaskBeginRecord;

/* A label on @task_id; the text follows the struct. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 task_id;
  char    text[];
} PerfmonTaskLabelRecord;

/* The name of a callback address, resolved with dladdr() when the file is
 * written (never on the hot path); written once per address. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 callback;
  char    symbol[];
} PerfmonTaskSymbolRecord;

/* The name of thread @header.tid. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  char    name[];
} PerfmonTaskThreadRecord;

/* A D-Bus message sent (DBUS_SEND, by the task that sent it) or received
 * (DBUS_RECV, by the task that handles it). @sender is the sender's unique
 * bus name and @serial the message's serial: a reader that finds a SEND and
 * a RECV with the same (sender, serial), in the files of two processes,
 * makes the receiving task a child of the sending one. Message bodies are
 * never changed. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 task_id;
  guint32 serial;
  guint32 reserved;
  char    sender[];
} PerfmonTaskDBusRecord;

/* The name of an automatic task (a GSource dispatch the tracer saw without
 * a dispatch wrapper: its source's name, its callback's symbol or its
 * type), written right after its DISPATCH, whose @callback is 0. It takes
 * precedence over a SYMBOL. The text follows the struct. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 task_id;
  char    text[];
} PerfmonTaskNameRecord;

/* A module that "module+0xOFFSET" names of the file (NAME and SYMBOL
 * records: callbacks without an exported symbol, which the program never
 * symbolizes) refer to, once per module: @base is its load base, where the
 * offsets count from; three NUL-terminated UTF-8 strings follow the
 * struct: the name as the names use it (the module's file name), the
 * absolute path the program loaded it from, and its GNU build id in
 * lowercase hex ("" if none). With them the tool names the functions
 * after the program has exited. Added without changing @version: readers
 * before it skip the record, and it is optional. A reader checks the
 * strings as core/perfmon-recorded-module-private.h says. */
typedef struct
{
  PerfmonTaskRecordHeader header;
  guint64 base;
  char    strings[];
} PerfmonTaskModuleRecord;

G_END_DECLS
