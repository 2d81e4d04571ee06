/* perfmon-json.c: what the readers of untrusted JSON share
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "config.h"

#include "perfmon-error.h"
#include "perfmon-json-private.h"

gboolean
_perfmon_json_prescan (const char  *json,
                       gssize       length,
                       guint        max_depth,
                       GError     **error)
{
  const char *end = length < 0 ? NULL : json + length;
  guint depth = 0;

#define AT_END(p) (end != NULL ? (p) >= end : *(p) == '\0')
  for (const char *p = json; !AT_END (p); p++)
    {
      switch (*p)
        {
        case '[':
        case '{':
          if (++depth > max_depth)
            {
              g_set_error (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                           "(root): arrays and objects nested deeper than %u levels", max_depth);
              return FALSE;
            }
          break;

        case ']':
        case '}':
          if (depth > 0)
            depth--;
          break;

        case '"':
          /* A backslash escapes at least the next byte. An unterminated
           * string is json-glib's error to report. */
          for (p++; AT_END (p) || *p != '"'; p++)
            {
              if (AT_END (p))
                return TRUE;
              if (*p == '\\' && AT_END (++p))
                return TRUE;
            }
          break;

        case '/':
        case '\'':
          g_set_error_literal (error, PERFMON_ERROR, PERFMON_ERROR_INVALID_DATA,
                               "(root): not valid JSON: comments and single-quoted strings are not allowed");
          return FALSE;

        default:
          break;
        }
    }
#undef AT_END

  return TRUE;
}

const char *
_perfmon_json_describe_node (JsonNode *node)
{
  switch (JSON_NODE_TYPE (node))
    {
    case JSON_NODE_OBJECT:
      return "an object";

    case JSON_NODE_ARRAY:
      return "an array";

    case JSON_NODE_NULL:
      return "null";

    case JSON_NODE_VALUE:
      switch (json_node_get_value_type (node))
        {
        case G_TYPE_INT64:
          return "an integer";

        case G_TYPE_DOUBLE:
          return "a number with a fraction or an exponent";

        case G_TYPE_BOOLEAN:
          return "a boolean";

        case G_TYPE_STRING:
          return "a string";

        default:
          break;
        }
      break;

    default:
      break;
    }

  return "an unknown value";
}
