/* perfmond-view.h: the about:performance page, served by perfmond on loopback
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include "perfmond-daemon.h"
#include "perfmond-http.h"

G_BEGIN_DECLS

typedef struct _PerfmondView PerfmondView;

PerfmondView *perfmond_view_new  (PerfmondDaemon           *daemon,
                                  const PerfmondHttpLimits *limits,
                                  GSocketAddress           *address,
                                  GError                  **error);
void          perfmond_view_free (PerfmondView             *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PerfmondView, perfmond_view_free)

G_END_DECLS
