/* perfmon-error.c
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-error.h"

G_DEFINE_QUARK (perfmon-error-quark, perfmon_error)
