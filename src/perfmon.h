/* perfmon.h: the one public header of libperfmon
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#define PERFMON_INSIDE

#include "perfmon-version-macros.h"
#include "perfmon-version.h"
#include "perfmon-error.h"
#include "perfmon-addon-rules.h"
#include "perfmon-group.h"
#include "perfmon-group-stats.h"
#include "perfmon-snapshot.h"
#include "perfmon-snapshot-builder.h"
#include "perfmon-monitor.h"
#include "perfmon-label.h"
#include "perfmon-symbolizer.h"
#include "perfmon-hang-report.h"
#include "perfmon-bhr-ping.h"
#include "perfmon-hang-symbolize.h"
#include "perfmon-hang-monitor.h"
#include "perfmon-source-event.h"
#include "perfmon-timer.h"
#include "perfmon-thread-watcher.h"
#include "perfmon-export.h"
#include "perfmon-tracer.h"
#include "perfmon-dispatch.h"
#include "perfmon-tracer-dbus.h"
#include "perfmon-task.h"
#include "perfmon-task-log.h"
#include "perfmon-enum-types.h"

#undef PERFMON_INSIDE
