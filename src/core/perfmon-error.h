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
 *
 * Error codes in the %PERFMON_ERROR domain.
 */
typedef enum
{
  PERFMON_ERROR_INVALID_DATA,
  PERFMON_ERROR_UNSUPPORTED_VERSION,
  PERFMON_ERROR_SNAPSHOT_MISMATCH,
  PERFMON_ERROR_SNAPSHOT_ORDER,
} PerfmonError;

PERFMON_AVAILABLE_IN_ALL
GQuark perfmon_error_quark (void);

G_END_DECLS
