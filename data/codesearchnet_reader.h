// CodeSearchNet's Python corpus as a retrieval data set: a JSON-lines file (the *.jsonl
// inside python.zip, once gunzipped), one function per line:
//
//   {"repo": "...", "path": "...", "url": "...", "func_name": "Class.method",
//    "code": "def method(self, x):\n    \"\"\"Doc.\"\"\"\n    return x", "code_tokens": [...],
//    "docstring": "Doc.", "docstring_tokens": [...], ...}
//
// query   text = the signature cut from `code` (data/python_functions.h), then "\n" and
//                `docstring` (the docstring found in `code` when that field is empty)
// passage text = the body of `code` with the docstring literal removed
// id (both)    = `url`, or "<file>:<line>:<func_name>" when there is none
// group (both) = `repo`, or `path` when there is none, or "" when neither
//
// Required: code, docstring, func_name (strings), code_tokens, docstring_tokens (arrays);
// repo, path and url are optional strings. A bad line (invalid UTF-8, not JSON, not an
// object, a required field missing or of the wrong type, `code` with no def or a syntax the
// scanner cannot follow) stops a strict read with one line naming the file and line number;
// a lenient read skips it, counts it under its reason in ReadReport::skipped and keeps the
// first few as examples. A function whose body is only `pass`/`...` or only its docstring
// is skipped in both modes (counted, "function body is only ..."). Blank lines are ignored.
// ReadReport::records: "lines" (non-blank lines read) and "functions" (kept).
#pragma once
#include <string>

#include "data/dataset.h"

namespace nce::data {

RetrievalDataset read_codesearchnet_jsonl(const std::string& path, Leniency leniency);

}  // namespace nce::data
