// SPDX-License-Identifier: LGPL-2.1-or-later
//
// GJS's override of the Perfmon namespace: GJS runs _init() when a program
// first imports imports.gi.Perfmon. It only says what to set when the
// library the typelib names cannot be loaded (perfmon installed in a
// prefix the dynamic loader does not search, without LD_LIBRARY_PATH),
// instead of GJS's "Unsupported type void, deriving from fundamental void"
// on the first class used. The Python override says the same.
//
// Installed in $datadir/gjs-1.0/overrides: GJS looks there in each
// directory of XDG_DATA_DIRS (and GJS_PATH).

/* exported _init */

function _init() {
    try {
        // The first class resolved loads libperfmon-1.
        void this.Group;
    } catch (error) {
        imports.gi.versions.GIRepository = '2.0';
        const {GIRepository, GLib} = imports.gi;
        const repository = GIRepository.Repository.get_default();
        const library = (repository.get_shared_library('Perfmon') || 'libperfmon-1.so.0').split(',')[0];
        const typelib = repository.get_typelib_path('Perfmon') || 'Perfmon-1.typelib';
        // An install keeps the typelib in LIBDIR/girepository-1.0.
        const libdir = GLib.path_get_dirname(GLib.path_get_dirname(typelib));
        throw new Error(`${library} cannot be loaded (${error.message}): for perfmon installed in a ` +
            `prefix the dynamic loader does not search, set LD_LIBRARY_PATH=${libdir} (the typelib ` +
            `is ${typelib})`);
    }
}
