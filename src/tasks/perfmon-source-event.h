/* perfmon-source-event.h: what started a chain of tasks
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
 * PerfmonSourceEventType:
 * @PERFMON_SOURCE_EVENT_UNKNOWN: no source event
 * @PERFMON_SOURCE_EVENT_TOUCH: a touch event
 * @PERFMON_SOURCE_EVENT_POINTER: a mouse or other pointer event
 * @PERFMON_SOURCE_EVENT_KEY: a key press or release
 * @PERFMON_SOURCE_EVENT_NETWORK: data arrived on a socket
 * @PERFMON_SOURCE_EVENT_TIMER: a timer fired
 * @PERFMON_SOURCE_EVENT_DBUS: a D-Bus message arrived
 * @PERFMON_SOURCE_EVENT_CUSTOM: anything else the program defines
 *
 * The kind of event from outside the program (the seed's "source event")
 * that started a chain of tasks. Every task dispatched while a source event
 * is current, directly or through other tasks, carries its id and type.
 *
 * Since: 0.1
 */
typedef enum
{
  PERFMON_SOURCE_EVENT_UNKNOWN = 0,
  PERFMON_SOURCE_EVENT_TOUCH,
  PERFMON_SOURCE_EVENT_POINTER,
  PERFMON_SOURCE_EVENT_KEY,
  PERFMON_SOURCE_EVENT_NETWORK,
  PERFMON_SOURCE_EVENT_TIMER,
  PERFMON_SOURCE_EVENT_DBUS,
  PERFMON_SOURCE_EVENT_CUSTOM,
} PerfmonSourceEventType;

G_END_DECLS
