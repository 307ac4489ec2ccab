/**
 * @file Threaded-C, the explicitly multithreaded C dialect of the EARTH system.
 * @license MIT
 *
 * Extends tree-sitter-c (pinned in package.json) the way tree-sitter-cpp and
 * tree-sitter-cuda do. Only what C cannot parse is added:
 *   - THREADED function definitions and prototypes (no return type, an optional
 *     storage class);
 *   - GLOBAL as one more type qualifier, so it stands wherever `const` can;
 *   - THREAD_n: thread labels, block items of their own that may end a block;
 *   - SLOT SYNC_SLOTS[N]; the sync slot declaration, with SLOT also a type name.
 * Every other primitive (INVOKE, SYNC, DATA_RSYNC_L, ...) is an ordinary call
 * expression on purpose: see docs/architecture.md.
 */

/// <reference types="tree-sitter-cli/dsl" />
// @ts-check

const C = require('tree-sitter-c/grammar');

module.exports = grammar(C, {
  name: 'threaded_c',

  rules: {
    _top_level_item: ($, original) => choice(
      original,
      $.threaded_function_definition,
      $.threaded_function_declaration,
    ),

    _block_item: ($, original) => choice(
      original,
      $.thread_label,
      $.sync_slots_declaration,
    ),

    // `THREADED fib(SPTR done, int n, int *GLOBAL result) { ... }`; `static THREADED`
    // makes it local to its file, as for a C function
    threaded_function_definition: $ => seq(
      optional(field('storage', $.storage_class_specifier)),
      'THREADED',
      field('name', $.identifier),
      field('parameters', $.parameter_list),
      field('body', $.compound_statement),
    ),

    // `THREADED fib(SPTR done, int n, int *GLOBAL result);` (headers, other files)
    threaded_function_declaration: $ => seq(
      optional(field('storage', $.storage_class_specifier)),
      'THREADED',
      field('name', $.identifier),
      field('parameters', $.parameter_list),
      ';',
    ),

    // `THREAD_1:` begins thread 1. It is a block item of its own, not a C label on a
    // statement, so it may close a block (`THREAD_2: }`) as the thesis writes it.
    // The token outranks `identifier`, so THREAD_<digits> is reserved at the start of
    // a block item; `THREAD_COUNT` and the like stay identifiers.
    thread_label: $ => seq(
      field('number', alias(token(prec(1, /THREAD_[0-9]+/)), $.thread_number)),
      ':',
    ),

    // `SLOT SYNC_SLOTS[N];`, the first declaration of a function that uses slots.
    sync_slots_declaration: $ => seq(
      alias('SLOT', $.type_identifier),
      'SYNC_SLOTS',
      '[',
      field('size', $.expression),
      ']',
      ';',
    ),

    // SLOT is a keyword where a sync slot declaration may begin; it stays a type
    // name everywhere a type can stand (`SLOT *GLOBAL s`, `sizeof(SLOT)`).
    type_specifier: ($, original) => choice(
      original,
      alias('SLOT', $.type_identifier),
    ),

    type_qualifier: ($, original) => choice(
      original,
      'GLOBAL',
    ),
  },
});
