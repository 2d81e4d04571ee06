/* perfmon-error.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-error.h"

/**
 * perfmon_error_quark:
 *
 * The error domain of perfmon's errors, %PERFMON_ERROR; their codes are
 * those of #PerfmonError.
 *
 * Returns: the quark of %PERFMON_ERROR
 *
 * Since: 0.1
 */
G_DEFINE_QUARK (perfmon-error-quark, perfmon_error)
