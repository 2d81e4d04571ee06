/* fuzz-common.h: what the snapshot fuzz targets share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <stdint.h>
#include <stdlib.h>

#include "perfmon.h"

int LLVMFuzzerTestOneInput (const uint8_t *data,
                            size_t         size);

static inline void
init_once (void)
{
  static gsize initialized = 0;

  if (g_once_init_enter (&initialized))
    {
      g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
      g_once_init_leave (&initialized, 1);
    }
}

static inline void
check_error (const GError *error)
{
  if (error == NULL || error->domain != PERFMON_ERROR ||
      (error->code != PERFMON_ERROR_INVALID_DATA &&
       error->code != PERFMON_ERROR_UNSUPPORTED_VERSION))
    abort ();
}
