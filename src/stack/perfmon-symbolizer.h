/* perfmon-symbolizer.h: names for the native frames of stacks
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib-object.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

#define PERFMON_TYPE_SYMBOLIZER (perfmon_symbolizer_get_type ())

PERFMON_AVAILABLE_IN_0_2
G_DECLARE_FINAL_TYPE (PerfmonSymbolizer, perfmon_symbolizer, PERFMON, SYMBOLIZER, GObject)

PERFMON_AVAILABLE_IN_0_2
PerfmonSymbolizer  *perfmon_symbolizer_new             (void);

PERFMON_AVAILABLE_IN_0_2
void                perfmon_symbolizer_set_debug_dirs  (PerfmonSymbolizer  *self,
                                                        const char * const *debug_dirs);
PERFMON_AVAILABLE_IN_0_2
const char * const *perfmon_symbolizer_get_debug_dirs  (PerfmonSymbolizer  *self);

PERFMON_AVAILABLE_IN_0_2
void                perfmon_symbolizer_set_time_budget (PerfmonSymbolizer  *self,
                                                        guint               milliseconds);
PERFMON_AVAILABLE_IN_0_2
guint               perfmon_symbolizer_get_time_budget (PerfmonSymbolizer  *self);

PERFMON_AVAILABLE_IN_0_2
char               *perfmon_symbolizer_lookup          (PerfmonSymbolizer  *self,
                                                        const char         *module,
                                                        const char         *id,
                                                        guint64             offset,
                                                        gboolean            is_return_address,
                                                        guint64            *function_offset);

PERFMON_AVAILABLE_IN_0_2
guint               perfmon_symbolizer_get_n_cached_modules (PerfmonSymbolizer *self);

PERFMON_AVAILABLE_IN_0_2
char               *perfmon_format_native_frame        (const char         *module,
                                                        guint64             offset,
                                                        const char         *function,
                                                        guint64             function_offset);
PERFMON_AVAILABLE_IN_0_2
char               *perfmon_format_script_frame        (const char         *function,
                                                        const char         *file,
                                                        guint               line);

G_END_DECLS
