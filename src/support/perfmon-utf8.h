/* perfmon-utf8.h: cutting text to a byte budget
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The length of the longest prefix of the @len bytes of @text, at most
 * @max bytes, that does not end inside a UTF-8 character. Inline and
 * allocation-free: label pushes and trace records call it. */
static inline gsize
_perfmon_utf8_cut (const char *text,
                  gsize       len,
                  gsize       max)
{
  if (len <= max)
    return len;

  /* text[max] is the first byte cut off: back up to the first byte of the
   * character it belongs to. */
  len = max;
  while (len > 0 && ((guchar) text[len] & 0xC0) == 0x80)
    len--;
  return len;
}

G_END_DECLS
