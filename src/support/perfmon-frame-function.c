/* perfmon-frame-function.c: a stack frame's text reduced to its function
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * What hangs are merged by, everywhere they are: `perfmon hangs` (its
 * groups of identical hangs and its merged stack tree) and perfmond's
 * about:performance page (each process's flame graph). Hangs in the same
 * loop stop at another instruction of each function every time, and a
 * script at another line: those do not count.
 */
#include "config.h"

#include <string.h>

#include "perfmon-frame-function.h"

/* @frame: a stack frame's text as perfmon prints it
 * (perfmon_format_native_frame(), perfmon_format_script_frame(), or a
 * label): "lib.so+0x1f (func+0x2)", "busy (/tmp/busy.py:7)", "spell
 * check". Drops every "+0x…" offset and, in a script frame "name
 * (file:line)", the line: "lib.so (func)", "busy (/tmp/busy.py)", "spell
 * check". A native frame without a symbol keeps its module only
 * ("lib.so"), one outside every module its address ("0x7f…"). */
char *
perfmon_frame_function (const char *frame)
{
  GString *out = g_string_sized_new (strlen (frame));
  const char *p = frame;

  while (*p != '\0')
    {
      if (p[0] == '+' && p[1] == '0' && p[2] == 'x')
        {
          p += 3;
          while (g_ascii_isxdigit (*p))
            p++;
          continue;
        }
      if (p[0] == ':' && g_ascii_isdigit (p[1]))
        {
          const char *q = p + 1;

          while (g_ascii_isdigit (*q))
            q++;
          /* "file.py:12)": a line number, at the end of the parenthesis. */
          if (*q == ')')
            {
              p = q;
              continue;
            }
        }
      g_string_append_c (out, *p);
      p++;
    }
  return g_string_free (out, FALSE);
}
