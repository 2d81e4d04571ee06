/* perfmon-js-site-private.h: add-on attribution by creation site, for
 * JavaScript (GJS)
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib-object.h>

#include "perfmon-monitor.h"

G_BEGIN_DECLS

/* Bytes of a site's name ("function (file:line)"), NUL excluded: that of
 * an automatic group. */
#define PERFMON_JS_SITE_NAME_MAX 95
/* Signal-handler compartments, one per connecting site: past this many,
 * handlers are not measured on their own. */
#define PERFMON_JS_SITE_MAX_HANDLER_SITES 1024

/* The preload module calls these from its interposers of
 * g_source_attach() and g_signal_connect_closure_by_id(), before the real
 * call, on the calling thread. Each returns at once unless the thread is
 * GJS's and script is running (see _perfmon_js_stack_here()).
 *
 * A source: if it has no name of its own (none, or one GLib gives by
 * default), it is named after its creation site, "function (file:line)",
 * the innermost frame that is no module of GJS's own, or the innermost
 * frame of an add-on (perfmon_addon_rule_match()) if one is on the stack,
 * then "function (ADDON_ID/path:line)"; its automatic group of @monitor
 * belongs to that add-on's group. Only for sources attached to the default
 * context (@monitor's).
 *
 * A handler connected while an add-on's code is on the stack: its closure
 * gets marshal guards that make each invocation a measure of a
 * compartment named after the site, of the add-on's group, and the
 * runnable name of a hang caught inside. Returns whether it was
 * attributed. */
void     _perfmon_js_site_source_attached    (PerfmonMonitor *monitor,
                                              GSource        *source,
                                              GMainContext   *context);
gboolean _perfmon_js_site_handler_connected  (PerfmonMonitor *monitor,
                                              GClosure       *closure);
/* Whether the preload module has called the functions above (JavaScript
 * add-on attribution runs in this process): long dispatches are then
 * sampled too (perfmon-js-sampler.c). */
gboolean    _perfmon_js_site_attribution_running (void);
/* Whether @dispatch_name (a dispatch's group name, or a handler site's)
 * is charged to an add-on exactly, by its creation site. Any thread. */
gboolean    _perfmon_js_site_is_exact            (const char *dispatch_name);
/* Whether @file is an add-on's (an add-on rule matches it): what the
 * walks of the JavaScript stack look for (_perfmon_js_stack_find_here()'s
 * @wanted), at creation sites and in samples. */
gboolean    _perfmon_js_site_is_addon_file       (const char *file,
                                                  gpointer    user_data);
/* NULL when attribution works in this process, else "off: why". */
const char *_perfmon_js_site_status          (void);

G_END_DECLS
