/* perfmon-version-macros.h: symbol visibility for the public API
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib.h>

/* The library is built with -fvisibility=hidden: only what carries this
 * macro is exported from libperfmon-1.so. */
#ifndef _PERFMON_EXTERN
# define _PERFMON_EXTERN __attribute__((visibility ("default"))) extern
#endif

#define PERFMON_AVAILABLE_IN_ALL _PERFMON_EXTERN
