/* perfmon-error.h
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
 * PERFMON_ERROR:
 *
 * The error domain of perfmon.
 *
 * Since: 0.1
 */
#define PERFMON_ERROR (perfmon_error_quark ())

/**
 * PerfmonError:
 * @PERFMON_ERROR_INVALID_DATA: serialized data (JSON, a #GVariant, a file)
 *   is malformed; the message names the offending field and what it allows.
 * @PERFMON_ERROR_UNSUPPORTED_VERSION: serialized data has a format version
 *   this library does not read.
 * @PERFMON_ERROR_SNAPSHOT_MISMATCH: two snapshots do not come from the same
 *   process.
 * @PERFMON_ERROR_SNAPSHOT_ORDER: the snapshot to subtract is newer than the
 *   one it is subtracted from, or its counters are larger.
 * @PERFMON_ERROR_INVALID_ARGUMENT: a parameter (of an event configuration,
 *   a file name, ...) is unknown, missing or out of range; the message names
 *   it and what it allows.
 * @PERFMON_ERROR_UNKNOWN_EVENT: an event name is not one this library
 *   knows; the message names it and the supported ones.
 * @PERFMON_ERROR_STACK_UNAVAILABLE: the native stack of a thread could not
 *   be taken; the message says why (the thread has exited, or did not
 *   handle the capture signal in time, with its state and kernel wait
 *   channel).
 * @PERFMON_ERROR_LIMIT_REACHED: a fixed limit of live objects (such as the
 *   128 task timers) is reached; the message names the limit.
 * @PERFMON_ERROR_TRACING_STATE: the task tracer is not in the state the
 *   call needs: it already records, or it does not record.
 *
 * Error codes in the %PERFMON_ERROR domain.
 *
 * Since: 0.1
 */
typedef enum
{
  PERFMON_ERROR_INVALID_DATA,
  PERFMON_ERROR_UNSUPPORTED_VERSION,
  PERFMON_ERROR_SNAPSHOT_MISMATCH,
  PERFMON_ERROR_SNAPSHOT_ORDER,
  PERFMON_ERROR_INVALID_ARGUMENT,
  PERFMON_ERROR_UNKNOWN_EVENT,
  PERFMON_ERROR_STACK_UNAVAILABLE,
  PERFMON_ERROR_LIMIT_REACHED,
  PERFMON_ERROR_TRACING_STATE,
} PerfmonError;

PERFMON_AVAILABLE_IN_0_1
GQuark perfmon_error_quark (void);

G_END_DECLS
