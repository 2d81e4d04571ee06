/* perfmon-heap-trim.h: give the heap back after a spike, off the caller's
 * thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* After a big message was dropped (a GDBus filter refused it, in the
 * library's export or in perfmond): glibc keeps the freed memory, so a
 * short-lived thread named @thread_name calls malloc_trim() 100 ms later
 * (GDBus frees the message after its filters returned) and again 400 ms
 * after that (a message of the same flood freed meanwhile). One such
 * thread at a time per process; any thread may call this, and it never
 * blocks. */
void _perfmon_heap_trim_soon (const char *thread_name);

G_END_DECLS
