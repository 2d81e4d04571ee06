/* perfmon-group.h: a performance group
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

/**
 * PerfmonGroupKind:
 * @PERFMON_GROUP_KIND_THREAD: the "top group" of one monitored thread: it is
 *   charged every iteration of the thread's event loop.
 * @PERFMON_GROUP_KIND_WINDOW: all compartments that run code for one window.
 * @PERFMON_GROUP_KIND_ADDON: all compartments that run code of one add-on.
 * @PERFMON_GROUP_KIND_COMPARTMENT: the unit of code that is entered and left.
 *
 * What a #PerfmonGroup stands for.
 *
 * Since: 0.1
 */
typedef enum
{
  PERFMON_GROUP_KIND_THREAD,
  PERFMON_GROUP_KIND_WINDOW,
  PERFMON_GROUP_KIND_ADDON,
  PERFMON_GROUP_KIND_COMPARTMENT,
} PerfmonGroupKind;

PERFMON_AVAILABLE_IN_0_2
const char       *perfmon_group_kind_to_string (PerfmonGroupKind kind);

#define PERFMON_TYPE_GROUP (perfmon_group_get_type ())

PERFMON_AVAILABLE_IN_0_1
G_DECLARE_FINAL_TYPE (PerfmonGroup, perfmon_group, PERFMON, GROUP, GObject)

PERFMON_AVAILABLE_IN_0_1
guint64           perfmon_group_get_id        (PerfmonGroup *self);
PERFMON_AVAILABLE_IN_0_1
PerfmonGroupKind  perfmon_group_get_kind      (PerfmonGroup *self);
PERFMON_AVAILABLE_IN_0_1
const char       *perfmon_group_get_name      (PerfmonGroup *self);
PERFMON_AVAILABLE_IN_0_1
guint64           perfmon_group_get_window_id (PerfmonGroup *self);
PERFMON_AVAILABLE_IN_0_1
const char       *perfmon_group_get_addon_id  (PerfmonGroup *self);
PERFMON_AVAILABLE_IN_0_1
gboolean          perfmon_group_get_active    (PerfmonGroup *self);
PERFMON_AVAILABLE_IN_0_1
void              perfmon_group_set_active    (PerfmonGroup *self,
                                               gboolean      active);

PERFMON_AVAILABLE_IN_0_1
void              perfmon_group_enter         (PerfmonGroup *compartment);
PERFMON_AVAILABLE_IN_0_1
void              perfmon_group_leave         (PerfmonGroup *compartment);

/* Scope guard: PERFMON_AUTO_ENTER (compartment); enters now and leaves when
 * the enclosing block ends, whichever way it ends. C only: hidden from
 * g-ir-scanner so that no guard type appears in the GIR. */
#ifndef __GI_SCANNER__
typedef PerfmonGroup PerfmonGroupEnterGuard;

static inline PerfmonGroupEnterGuard *
_perfmon_group_enter_guard_new (PerfmonGroup *compartment)
{
  perfmon_group_enter (compartment);
  return (PerfmonGroupEnterGuard *) compartment;
}

static inline void
_perfmon_group_enter_guard_free (PerfmonGroupEnterGuard *guard)
{
  perfmon_group_leave ((PerfmonGroup *) guard);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmonGroupEnterGuard, _perfmon_group_enter_guard_free)

#define _PERFMON_ENTER_GUARD_NAME(line) _PERFMON_ENTER_GUARD_NAME2 (line)
#define _PERFMON_ENTER_GUARD_NAME2(line) _perfmon_enter_guard_##line
#endif /* __GI_SCANNER__ */

/**
 * PERFMON_AUTO_ENTER:
 * @compartment: a #PerfmonGroup of kind %PERFMON_GROUP_KIND_COMPARTMENT
 *
 * Enters @compartment and leaves it when the enclosing scope ends.
 *
 * Since: 0.1
 */
#define PERFMON_AUTO_ENTER(compartment) \
  G_GNUC_UNUSED g_autoptr(PerfmonGroupEnterGuard) _PERFMON_ENTER_GUARD_NAME (__LINE__) = \
    _perfmon_group_enter_guard_new (compartment)

G_END_DECLS
