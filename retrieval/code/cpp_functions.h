// The fallback corpus of `nce code` on a machine without python3: the functions of the
// project's own C++ sources, cut like the Python ones into signature + comment -> body.
//
//     // Each row divided by its L2 norm.        <- the comment lines right above: the "docstring"
//     Tensor unit_rows(const Tensor& rows) {     <- the signature: everything from the end of the
//         Tensor norms = ...;                       previous declaration to the '{', on one line
//         return rows / norms;                   <- the body: between the braces, dedented
//     }
//
// A simple scanner, not a C++ parser: it follows braces outside comments, string and
// character literals and preprocessor lines, and takes a brace block as a function when it
// opens at namespace level (outside any class, struct, enum or function) after a header
// that has parentheses and does not start with namespace, class, struct, enum, union or
// extern. Only *.cpp files are read; folders whose name starts with "build" or "." and the
// tests folder are skipped. Query/passage ids are "<file>:<line>:<name>", groups the file.
#pragma once
#include <string>

#include "data/dataset.h"

namespace nce::code {

// Every function of the *.cpp files under `root`, in path order; with require_comment only
// those with a comment right above. Throws nce::Error naming `root` when it is missing.
data::RetrievalDataset mine_cpp_tree(const std::string& root, bool require_comment);

}  // namespace nce::code
