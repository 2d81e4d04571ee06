/* perfmon-tool-hang-groups.h: hangs of one runnable and one stack, merged
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmon.h"

G_BEGIN_DECLS

/* Hangs in the same runnable, with the same labels and the same stack
 * function by function (a frame's address inside its function, and a
 * script frame's line, do not count; a Python or JavaScript stack is
 * compared by its script frames alone): one group,
 * printed once. */
typedef struct
{
  PerfmonHangReport *first;    /* the first hang of the group */
  guint              count;
  double             min_ms;   /* durations, wall time */
  double             max_ms;
} PerfmonToolHangGroup;

/* @reports: of PerfmonHangReport. Returns the groups, in the order of
 * their first hang, of PerfmonToolHangGroup (freed with the array). */
GPtrArray *perfmon_tool_group_hangs (GPtrArray *reports);

G_END_DECLS
