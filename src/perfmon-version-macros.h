/* perfmon-version-macros.h: symbol visibility and versioning for the public API
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#pragma once

#if !defined(PERFMON_INSIDE) && !defined(PERFMON_COMPILATION)
#error "Only <perfmon.h> can be included directly."
#endif

#include <glib.h>

#include "perfmon-version.h"

/* The library is built with -fvisibility=hidden: only what carries one of
 * the PERFMON_AVAILABLE_IN_… or PERFMON_DEPRECATED… macros is exported
 * from libperfmon-1.so. */
#ifndef _PERFMON_EXTERN
# define _PERFMON_EXTERN __attribute__((visibility ("default"))) extern
#endif

/* Every release cycle adds its version here, and its
 * PERFMON_AVAILABLE_IN_… / PERFMON_DEPRECATED_IN_… block below. */

/**
 * PERFMON_VERSION_0_1:
 *
 * The encoded representation of perfmon version 0.1, for
 * %PERFMON_VERSION_MIN_REQUIRED and %PERFMON_VERSION_MAX_ALLOWED.
 *
 * Since: 0.3
 */
#define PERFMON_VERSION_0_1 (PERFMON_ENCODE_VERSION (0, 1, 0))

/**
 * PERFMON_VERSION_0_2:
 *
 * The encoded representation of perfmon version 0.2.
 *
 * Since: 0.3
 */
#define PERFMON_VERSION_0_2 (PERFMON_ENCODE_VERSION (0, 2, 0))

/**
 * PERFMON_VERSION_0_3:
 *
 * The encoded representation of perfmon version 0.3.
 *
 * Since: 0.3
 */
#define PERFMON_VERSION_0_3 (PERFMON_ENCODE_VERSION (0, 3, 0))

/**
 * PERFMON_VERSION_CUR_STABLE:
 *
 * The encoded representation of the version of the perfmon headers a
 * program is compiled against, without its micro version.
 *
 * Since: 0.3
 */
#define PERFMON_VERSION_CUR_STABLE \
  (PERFMON_ENCODE_VERSION (PERFMON_MAJOR_VERSION, PERFMON_MINOR_VERSION, 0))

/**
 * PERFMON_VERSION_MAX_ALLOWED:
 *
 * The newest version of perfmon whose API a program may use. A program
 * defines it, before it includes `perfmon.h`, to one of the
 * `PERFMON_VERSION_0_x` values; it then gets a warning for each symbol added
 * after that version. It defaults to %PERFMON_VERSION_CUR_STABLE.
 *
 * Since: 0.3
 */
#ifndef PERFMON_VERSION_MAX_ALLOWED
# define PERFMON_VERSION_MAX_ALLOWED (PERFMON_VERSION_CUR_STABLE)
#endif

/**
 * PERFMON_VERSION_MIN_REQUIRED:
 *
 * The oldest version of perfmon a program promises to work with. A program
 * defines it, before it includes `perfmon.h`, to one of the
 * `PERFMON_VERSION_0_x` values; it then gets a deprecation warning for each
 * symbol deprecated in that version or earlier, and none for symbols
 * deprecated later. It defaults to %PERFMON_VERSION_CUR_STABLE, or to
 * %PERFMON_VERSION_MAX_ALLOWED where the program set that lower.
 *
 * Since: 0.3
 */
#ifndef PERFMON_VERSION_MIN_REQUIRED
# if PERFMON_VERSION_MAX_ALLOWED < PERFMON_VERSION_CUR_STABLE
#  define PERFMON_VERSION_MIN_REQUIRED (PERFMON_VERSION_MAX_ALLOWED)
# else
#  define PERFMON_VERSION_MIN_REQUIRED (PERFMON_VERSION_CUR_STABLE)
# endif
#endif

#if PERFMON_VERSION_MAX_ALLOWED < PERFMON_VERSION_MIN_REQUIRED
# error "PERFMON_VERSION_MAX_ALLOWED must be >= PERFMON_VERSION_MIN_REQUIRED"
#endif
#if PERFMON_VERSION_MIN_REQUIRED < PERFMON_VERSION_0_1
# error "PERFMON_VERSION_MIN_REQUIRED must be >= PERFMON_VERSION_0_1"
#endif

/* For symbols that exist in every version, such as the version
 * functions. */
#define PERFMON_AVAILABLE_IN_ALL _PERFMON_EXTERN

/**
 * PERFMON_DEPRECATED:
 *
 * Marks a declaration of the public API as deprecated: a program that uses
 * it gets a warning, unless it defines `PERFMON_DISABLE_DEPRECATION_WARNINGS`
 * before it includes `perfmon.h`.
 *
 * Since: 0.3
 */

/**
 * PERFMON_DEPRECATED_FOR:
 * @f: the symbol to use instead
 *
 * Marks a declaration of the public API as deprecated in favour of @f: a
 * program that uses it gets a warning that names @f, unless it defines
 * `PERFMON_DISABLE_DEPRECATION_WARNINGS`.
 *
 * Since: 0.3
 */

/**
 * PERFMON_UNAVAILABLE:
 * @maj: the major version that added the symbol
 * @min: the minor version that added the symbol
 *
 * Marks a declaration added after %PERFMON_VERSION_MAX_ALLOWED: a program
 * that uses it gets a warning that names the version.
 *
 * Since: 0.3
 */
#ifdef PERFMON_DISABLE_DEPRECATION_WARNINGS
# define PERFMON_DEPRECATED _PERFMON_EXTERN
# define PERFMON_DEPRECATED_FOR(f) _PERFMON_EXTERN
# define PERFMON_UNAVAILABLE(maj, min) _PERFMON_EXTERN
#else
# define PERFMON_DEPRECATED G_DEPRECATED _PERFMON_EXTERN
# define PERFMON_DEPRECATED_FOR(f) G_DEPRECATED_FOR (f) _PERFMON_EXTERN
# define PERFMON_UNAVAILABLE(maj, min) G_UNAVAILABLE (maj, min) _PERFMON_EXTERN
#endif

#define PERFMON_AVAILABLE_IN_0_1 _PERFMON_EXTERN
/**
 * PERFMON_DEPRECATED_IN_0_1_FOR:
 * @f: the symbol to use instead
 *
 * Marks a declaration deprecated in perfmon 0.1 in favour of @f: programs
 * whose %PERFMON_VERSION_MIN_REQUIRED is 0.1 or later get a warning.
 *
 * Since: 0.3
 */
#if PERFMON_VERSION_MIN_REQUIRED >= PERFMON_VERSION_0_1
# define PERFMON_DEPRECATED_IN_0_1 PERFMON_DEPRECATED
# define PERFMON_DEPRECATED_IN_0_1_FOR(f) PERFMON_DEPRECATED_FOR (f)
#else
# define PERFMON_DEPRECATED_IN_0_1 _PERFMON_EXTERN
# define PERFMON_DEPRECATED_IN_0_1_FOR(f) _PERFMON_EXTERN
#endif

#if PERFMON_VERSION_MAX_ALLOWED < PERFMON_VERSION_0_2
# define PERFMON_AVAILABLE_IN_0_2 PERFMON_UNAVAILABLE (0, 2)
#else
# define PERFMON_AVAILABLE_IN_0_2 _PERFMON_EXTERN
#endif
/**
 * PERFMON_DEPRECATED_IN_0_2_FOR:
 * @f: the symbol to use instead
 *
 * Marks a declaration deprecated in perfmon 0.2 in favour of @f: programs
 * whose %PERFMON_VERSION_MIN_REQUIRED is 0.2 or later get a warning.
 *
 * Since: 0.3
 */
#if PERFMON_VERSION_MIN_REQUIRED >= PERFMON_VERSION_0_2
# define PERFMON_DEPRECATED_IN_0_2 PERFMON_DEPRECATED
# define PERFMON_DEPRECATED_IN_0_2_FOR(f) PERFMON_DEPRECATED_FOR (f)
#else
# define PERFMON_DEPRECATED_IN_0_2 _PERFMON_EXTERN
# define PERFMON_DEPRECATED_IN_0_2_FOR(f) _PERFMON_EXTERN
#endif

#if PERFMON_VERSION_MAX_ALLOWED < PERFMON_VERSION_0_3
# define PERFMON_AVAILABLE_IN_0_3 PERFMON_UNAVAILABLE (0, 3)
#else
# define PERFMON_AVAILABLE_IN_0_3 _PERFMON_EXTERN
#endif
/**
 * PERFMON_DEPRECATED_IN_0_3_FOR:
 * @f: the symbol to use instead
 *
 * Marks a declaration deprecated in perfmon 0.3 in favour of @f: programs
 * whose %PERFMON_VERSION_MIN_REQUIRED is 0.3 or later get a warning.
 *
 * Since: 0.3
 */
#if PERFMON_VERSION_MIN_REQUIRED >= PERFMON_VERSION_0_3
# define PERFMON_DEPRECATED_IN_0_3 PERFMON_DEPRECATED
# define PERFMON_DEPRECATED_IN_0_3_FOR(f) PERFMON_DEPRECATED_FOR (f)
#else
# define PERFMON_DEPRECATED_IN_0_3 _PERFMON_EXTERN
# define PERFMON_DEPRECATED_IN_0_3_FOR(f) _PERFMON_EXTERN
#endif
