/* perfmon-heap-trim.h: give the heap back after a spike, off the caller's
 * thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* After a big message was dropped (a GDBus filter refused it, in the
 * library's export or in perfmond): glibc keeps the freed memory, so a
 * short-lived thread named @thread_name calls malloc_trim() 100 ms later
 * (GDBus frees the message after its filters returned) and again 400 ms
 * after that (a message of the same flood freed meanwhile). One such
 * thread at a time per process; any thread may call this, and it never
 * blocks. */
void _perfmon_heap_trim_soon (const char *thread_name);

/* For a GDBusConnection filter (GDBus's worker thread), the one rule of
 * the export's and perfmond's: an incoming call to @path whose arguments
 * take more than @max_bytes is answered InvalidArgs (naming the member,
 * its size and the limit) unless it expects no reply, and dropped before
 * GDBus queues it; if it was of 1 MiB or more, the heap is trimmed soon
 * by a thread named @trim_thread_name. Returns %TRUE if it took
 * @message (the filter then returns %NULL), %FALSE for any other
 * message, which the filter handles. */
gboolean _perfmon_refuse_big_call (GDBusConnection *connection,
                                   GDBusMessage    *message,
                                   const char      *path,
                                   gsize            max_bytes,
                                   const char      *trim_thread_name);

/* malloc_trim() now, on the caller's thread: for perfmond's main thread
 * between the steps of a big reply (a merge's groups freed before its
 * reply is written), never from the library. */
void _perfmon_heap_trim_now (void);

/* For perfmond only, never the library (it would change the program's
 * malloc): blocks of 128 KiB and more (glibc's default threshold) are
 * always mapped, and unmapped when freed. glibc otherwise raises the
 * threshold to the largest block freed (up to 32 MiB), and the next such
 * blocks come from a thread's arena (GDBus's worker parses messages
 * there), whose top malloc_trim() never gives back: a second 30 MB copy
 * of a refused message stayed. Call before any thread is started. */
void _perfmon_heap_map_big_blocks (void);

G_END_DECLS
