// The command line's own mistakes (a misspelt command, an unknown option, a value of the wrong
// type) as one line that names the word and the fix, instead of CLI11's bare sentences:
//
//   nce trian                 -> 'trian' is not a command of nce; did you mean 'train'? (nce --help lists the commands)
//   nce search                -> 'search' is a command of nce korquad, nce stackexchange, nce code and nce train: e.g. nce train search QUERY
//   nce train --bogus 1       -> nce train: unknown option --bogus (nce train --help lists the options)
//   nce mine --negatives abc  -> nce mine: --negatives takes INT, got 'abc'
#pragma once
#include <string>

#include <CLI/CLI.hpp>

namespace nce::apps {

// The line for `error`, raised while `root` parsed (without "nce: error: ").
std::string parse_error_line(CLI::App& root, const CLI::ParseError& error);

}  // namespace nce::apps
