; Highlighting for Threaded-C (.tc). Self-contained: the Threaded-C patterns come
; first (tree-sitter's own highlighter keeps the first match), then plain C.

; ---- Threaded-C

"THREADED" @keyword
"GLOBAL" @keyword.modifier
"SYNC_SLOTS" @keyword

(thread_label
  number: (thread_number) @label)

(threaded_function_definition
  name: (identifier) @function)
(threaded_function_declaration
  name: (identifier) @function)

(sync_slots_declaration
  (type_identifier) @type.builtin)

((type_identifier) @type.builtin
  (#any-of? @type.builtin "SLOT" "SPTR"))

((call_expression
  function: (identifier) @keyword.control)
  (#any-of? @keyword.control
    "END_THREAD" "END_FUNCTION" "RETURN" "INVOKE" "TOKEN" "CALL"))

((call_expression
  function: (identifier) @function.builtin)
  (#match? @function.builtin
    "^(INIT_SYNC|SYNC|RSYNC|INCR_SYNC|INCR_RSYNC|SPAWN|RSPAWN|SLOT_ADR|FRAME_ADR|IP_ADR|POLL|TO_GLOBAL|TO_LOCAL|MAKE_GPTR|OWNER_OF|IS_OWNER|BLKMOV_R?SYNC|(DATA|GET)_R?SYNC_(B|S|L|LL|F|D|G))$"))

((identifier) @constant.builtin
  (#any-of? @constant.builtin "NUM_NODES" "NODE_ID"))

; ---- C

(identifier) @variable

((identifier) @constant
  (#match? @constant "^[A-Z][A-Z0-9_]*$"))

[
  "break" "case" "const" "continue" "default" "do" "else" "enum" "extern" "for"
  "goto" "if" "inline" "return" "sizeof" "static" "struct" "switch" "typedef"
  "union" "volatile" "while" "register" "restrict"
] @keyword

[
  "#define" "#elif" "#else" "#endif" "#if" "#ifdef" "#ifndef" "#include"
] @keyword
(preproc_directive) @keyword

[
  "--" "-" "-=" "->" "=" "!=" "*" "&" "&&" "+" "++" "+=" "<" "<=" "==" ">" ">="
  "||" "!" "/" "%" "|" "^" "~" "<<" ">>"
] @operator

["." ";" ","] @delimiter

(string_literal) @string
(system_lib_string) @string
(null) @constant
(number_literal) @number
(char_literal) @number

(field_identifier) @property
(statement_identifier) @label
(type_identifier) @type
(primitive_type) @type
(sized_type_specifier) @type

(call_expression
  function: (identifier) @function)
(call_expression
  function: (field_expression
    field: (field_identifier) @function))
(function_declarator
  declarator: (identifier) @function)
(preproc_function_def
  name: (identifier) @function.special)

(comment) @comment
