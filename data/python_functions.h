// The functions a Python source file defines, each cut into signature, docstring and body:
// the pairs the code-search data sets are made of (data/python_miner.h,
// data/codesearchnet_reader.h).
//
// Found: top-level `def` and `async def`, and methods in `class` bodies, classes nested in
// classes included ("Outer.Inner.method"). A def under an `if`, `try` or `with` at module or
// class level counts too (it still defines a module or class attribute). A def inside another
// function is part of that function's body, and so is a class inside a function.
//
//     @lru_cache(maxsize=None)               <- decorators are not part of the function
//     def scale(x: float,                    signature: "def scale(x: float, factor: float = 2.0) -> float:"
//               factor: float = 2.0,  # why  (one line, comments dropped)
//               ) -> float:
//         r"""Multiplies x by "factor"."""   docstring: Multiplies x by "factor".
//         # the usual case                   body: "# the usual case\nreturn x * factor"
//         return x * factor                  (dedented, the docstring line removed)
//
// The blocks are followed by indentation like Python does, so a file whose indentation does
// not nest (an unexpected indent, an unindent to no outer level, a block with no body) is a
// PythonSyntaxError, as is a def or class header missing its name, parentheses or colon, and
// a def inside classes whose names come to more than 1,024 bytes (each method's qualified name
// repeats them).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "data/python_scanner.h"

namespace nce::data {

struct PythonFunction {
    std::string qualified_name;  // "parse", "JSONDecoder.decode", "Outer.Inner.method"
    int line = 0;                // 1-based line of the `def`
    bool is_method = false;      // defined in a class body
    bool is_async = false;
    // From `def` (or `async`) to the colon ending the header, on one line: comments dropped,
    // each run of spaces and line breaks between tokens one space, none just inside brackets.
    std::string signature;
    // The docstring's value: quotes removed, escapes decoded as Python does unless the string
    // is raw (\N{name} and unknown escapes such as \d are kept as written), then cleaned like
    // Python's inspect.cleandoc (common indentation and leading/trailing blank lines removed).
    // Empty when the function has none.
    std::string docstring;
    // The body's source without the docstring, dedented by the body's indentation (lines that
    // begin inside a triple-quoted string keep theirs), from the line after the header or the
    // docstring to the body's last statement. Comments in between are kept.
    std::string body;
    // The body (without docstring) is only `pass` or `...` statements: a stub, not code.
    bool body_is_placeholder = false;
};

// Finds the functions of `source` (UTF-8, '\n' line ends: normalize_newlines), in source order.
// Throws PythonSyntaxError.
std::vector<PythonFunction> find_python_functions(std::string_view source);

// The value of one string literal token as written in the source (prefix and quotes
// included), decoded as described at PythonFunction::docstring.
std::string string_literal_value(std::string_view literal);

// Python's inspect.cleandoc: tabs expanded to multiples of 8 columns, the first line loses its
// leading spaces, the others their common indentation, and blank lines at the start and end
// are dropped.
std::string clean_docstring(std::string_view docstring);

}  // namespace nce::data
