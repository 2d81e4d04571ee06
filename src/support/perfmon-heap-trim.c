/* perfmon-heap-trim.c: give the heap back after a spike, off the caller's
 * thread
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include <malloc.h>

#include "perfmon-heap-trim.h"

static gint trim_pending;   /* atomic */

static gpointer
trim_heap (gpointer data)
{
  g_usleep (100 * 1000);
  malloc_trim (0);
  g_usleep (400 * 1000);
  malloc_trim (0);
  g_atomic_int_set (&trim_pending, FALSE);
  return NULL;
}

void
_perfmon_heap_trim_soon (const char *thread_name)
{
  if (g_atomic_int_compare_and_exchange (&trim_pending, FALSE, TRUE))
    g_thread_unref (g_thread_new (thread_name, trim_heap, NULL));
}

void
_perfmon_heap_trim_now (void)
{
  malloc_trim (0);
}

/* glibc's M_MMAP_THRESHOLD default, kept: setting it at all is what turns
 * the dynamic threshold off. */
#define MAP_BLOCKS_FROM_BYTES (128 * 1024)

void
_perfmon_heap_map_big_blocks (void)
{
  mallopt (M_MMAP_THRESHOLD, MAP_BLOCKS_FROM_BYTES);
}
