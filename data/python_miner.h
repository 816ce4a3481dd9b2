// A code-search data set mined from a tree of Python sources: every function and method
// (data/python_functions.h) becomes a query, its signature and docstring, answered by one
// passage, its body without the docstring.
//
//   query   text  = signature, then "\n" and the docstring when there is one
//   passage text  = body (dedented, the docstring removed)
//   id (both)     = "<file>:<line>:<qualified name>", e.g. "json/decoder.py:332:JSONDecoder.decode"
//   group (both)  = the file's path relative to `root`, with '/' ("email/mime/text.py")
//
// The group's first component names the top-level package ("email"; a module directly in
// `root` is a package of its own). A split by Query::group keeps each file on one side; call
// regroup_by_package first to keep each package on one side instead.
//
// The tree is walked recursively in sorted order (the result does not depend on the file
// system's order). Symbolic links to folders are not followed, so there are no loops; links
// to files are read. Nothing in the tree stops the mining, in strict mode as in lenient: a
// source tree is not a curated data set, so the miner counts what it cannot use in
// ReadReport::skipped, with the first few file paths in skipped_examples:
//   "unreadable folder", "unreadable file"    (permission denied, broken link, read error)
//   "invalid UTF-8"                           (a file in another encoding)
//   "syntax the miner cannot follow"          (data/python_scanner.h, data/python_functions.h)
//   "symlinked folder not followed"
//   "function body is only pass or ..."       (stubs, no examples kept)
//   "function body is only a docstring"       (no examples kept)
// ReadReport::records: "files" (read and mined), "functions" (module level, kept) and
// "methods" (kept).
// Throws nce::Error only when `root` itself is missing or is neither a folder nor a .py file.
#pragma once
#include <string>

#include "data/dataset.h"

namespace nce::data {

// `leniency` is taken for the common reader signature; it changes nothing here (see above).
RetrievalDataset mine_python_tree(const std::string& root, Leniency leniency);

// Sets each query's and passage's group to its top-level package: "email/mime/text.py" ->
// "email", "abc.py" -> "abc". For data sets from mine_python_tree.
void regroup_by_package(RetrievalDataset& dataset);

}  // namespace nce::data
