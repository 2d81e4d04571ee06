/* perfmon-symbolizer-private.h: the symbolizer inside the library
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon-symbolizer.h"

G_BEGIN_DECLS

/* What is known of a module: any field may be NULL or "". */
typedef struct
{
  const char *path;         /* the file in this process, or a debug name */
  const char *build_id;     /* GNU build id, lowercase hex */
  const char *breakpad_id;  /* 33 hex digits: the first 16 bytes of the build id */
} PerfmonModuleRef;

/* The process's symbolizer, created on first use: its debug directories
 * are those of $PERFMON_DEBUG_DIRS (colon-separated) or /usr/lib/debug.
 * Thread-safe; never call it from a signal handler or a stopped thread's
 * victim: it opens files and allocates. */
PerfmonSymbolizer *_perfmon_symbolizer_get_default (void);

/* The function that holds @offset of @module (Breakpad's offset, from
 * the module's first PT_LOAD segment), and @offset's distance from its
 * start in @function_offset; NULL if unknown. A module not yet in the
 * cache is not loaded once the monotonic time is past @deadline_us (0:
 * no deadline), so that one report takes bounded time; it is loaded by a
 * later call. The lookup is done at @offset - 1 when @is_return_address
 * (the call instruction), but the distance is @offset's. */
char *_perfmon_symbolizer_lookup_ref (PerfmonSymbolizer      *self,
                                      const PerfmonModuleRef *module,
                                      guint64                 offset,
                                      gboolean                is_return_address,
                                      gint64                  deadline_us,
                                      guint64                *function_offset);

/* How many lookups (any symbolizer's) the calling thread has made: the
 * tests' proof that a thread symbolized nothing (a watched thread must
 * not: perfmon_tracer_stop() on the application's main thread). */
guint _perfmon_symbolizer_get_thread_lookups (void);

/* perfmon_symbolizer_lookup() with a deadline, as
 * _perfmon_symbolizer_lookup_ref(): @id is a breakpad id if it is 33 hex
 * digits ending in the age 0, else a GNU build id (NULL or "": none). */
char *_perfmon_symbolizer_lookup_until (PerfmonSymbolizer *self,
                                        const char        *module,
                                        const char        *id,
                                        guint64            offset,
                                        gboolean           is_return_address,
                                        gint64             deadline_us,
                                        guint64           *function_offset);

/* Empties the cache. */
void _perfmon_symbolizer_clear_cache (PerfmonSymbolizer *self);

G_END_DECLS
