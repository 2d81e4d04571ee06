/* perfmon-addon-rules-private.h: what perfmon itself asks of the add-on
 * rules
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Whether any add-on is known: a rule of a fixed add-on, a directory under
 * a per-directory rule when it was added, a libpeas plugin. Without one,
 * creation sites need not walk the JavaScript stack to look for an
 * add-on's frames (a directory that appears under a per-directory rule
 * later, an extension installed while the shell runs, is then not seen
 * until a rule is added again). Takes the rules' lock. Any thread. */
gboolean _perfmon_addon_rules_any_known (void);

G_END_DECLS
