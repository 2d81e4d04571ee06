/* perfmon-addon-rules.h: which add-on a code location belongs to
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib.h>

#include "perfmon-version-macros.h"

G_BEGIN_DECLS

/**
 * PERFMON_ADDON_RULES_MAX:
 *
 * How many add-on rules a process may hold.
 *
 * Since: 0.3
 */
#define PERFMON_ADDON_RULES_MAX 256

/**
 * PERFMON_ADDON_ID_MAX:
 *
 * The longest add-on id or add-on name, in bytes (NUL excluded).
 *
 * Since: 0.3
 */
#define PERFMON_ADDON_ID_MAX 95

PERFMON_AVAILABLE_IN_0_3
gboolean perfmon_addon_rule_add          (const char  *prefix,
                                          const char  *addon_id,
                                          const char  *name,
                                          GError     **error);
PERFMON_AVAILABLE_IN_0_3
gboolean perfmon_addon_rule_add_spec     (const char  *spec,
                                          GError     **error);
PERFMON_AVAILABLE_IN_0_3
void     perfmon_addon_rule_add_builtin  (void);
PERFMON_AVAILABLE_IN_0_3
gboolean perfmon_addon_rule_match        (const char  *location,
                                          char       **addon_id,
                                          char       **name,
                                          char       **path_in_addon);
PERFMON_AVAILABLE_IN_0_3
void     perfmon_addon_rule_clear        (void);

G_END_DECLS
