// SPDX-License-Identifier: LGPL-2.1-or-later
//
// testRunner.js: what the GJS tests of tests/bindings/ share (issue 28,
// point 6): their assertions and the runner, which runs each test of an
// object of named functions in order, prints "ok N - name" or
// "not ok N - name: why" (and the stack on standard error), then a
// summary, and exits with status 1 if any failed.
//
// A test script imports it from its own directory:
//
//     imports.searchPath.unshift(GLib.path_get_dirname(System.programPath));
//     const {assert, assertEqual, runTests} = imports.testRunner;
//
// (A legacy GJS module: what it exports are its top-level `var`s and
// functions.)

const System = imports.system;

var AssertionError = class AssertionError extends Error {};

function assert(condition, message) {
    if (!condition)
        throw new AssertionError(message || 'assertion failed');
}

function assertEqual(actual, expected, what) {
    const a = JSON.stringify(actual);
    const e = JSON.stringify(expected);
    if (a !== e)
        throw new AssertionError(`${what || 'value'}: expected ${e}, got ${a}`);
}

// Runs @tests ({name: function}); then @cleanup (if given), whatever the
// results; exits with status 1 if a test failed, else returns.
function runTests(tests, cleanup) {
    let failures = 0;
    let n = 0;
    for (const [name, fn] of Object.entries(tests)) {
        n++;
        try {
            fn();
            print(`ok ${n} - ${name}`);
        } catch (e) {
            failures++;
            print(`not ok ${n} - ${name}: ${e.message || e}`);
            if (e.stack)
                printerr(e.stack);
        }
    }
    print(`# ${n - failures} passed, ${failures} failed`);
    if (cleanup)
        cleanup();
    if (failures > 0)
        System.exit(1);
}
