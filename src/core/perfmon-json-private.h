/* perfmon-json-private.h: what the readers of untrusted JSON share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* json-glib 1.6 parses and frees nested arrays and objects recursively with
 * no limit: a few hundred thousand '[' overflow the stack. It also accepts
 * comments and single-quoted strings, which could hide brackets from a
 * simple count. So, before json-glib sees the @length bytes of @json
 * (-1: up to its NUL): refuse a '/' or a '\'' outside a string (neither is
 * JSON) and nesting deeper than @max_depth, counted outside double-quoted
 * strings, whose rules are simple and the same everywhere.
 * PERFMON_ERROR_INVALID_DATA, about "(root)". */
gboolean    _perfmon_json_prescan       (const char  *json,
                                         gssize       length,
                                         guint        max_depth,
                                         GError     **error);

/* What @node holds, for an error message: "an integer", "null", ... */
const char *_perfmon_json_describe_node (JsonNode    *node);

G_END_DECLS
