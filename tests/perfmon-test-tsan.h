/* perfmon-test-tsan.h: is this a ThreadSanitizer build?
 *
 * UNDER_TSAN is 1 in a ThreadSanitizer build (build-aux/dev tsan): gcc
 * defines __SANITIZE_THREAD__, clang has the feature. Test cases whose
 * check cannot hold under TSan (see doc/faults.md) skip there, with
 * g_test_skip() and the reason, and only they.
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if defined(__SANITIZE_THREAD__)
# define UNDER_TSAN 1
#elif defined(__has_feature)
# if __has_feature(thread_sanitizer)
#  define UNDER_TSAN 1
# endif
#endif
#ifndef UNDER_TSAN
# define UNDER_TSAN 0
#endif

#include <glib.h>

/* In a ThreadSanitizer build, skips the test case with @reason and
 * returns TRUE; elsewhere returns FALSE. */
static inline gboolean
test_skip_under_tsan (const char *reason)
{
  if (!UNDER_TSAN)
    return FALSE;
  g_test_skip (reason);
  return TRUE;
}
