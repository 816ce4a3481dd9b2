// Text from outside (a file name, a tensor name, a CSV field, a whole error message that quotes
// them) as an error line shows it: control bytes escaped, so a newline or a terminal escape in
// a name cannot break the line or recolour the terminal, and a bound on its length, so an
// .npy header of 400,000 axes cannot make a megabyte-long line.
//
//   quoted_for_message("evil\nname\x1b[31m")    -> 'evil\x0aname\x1b[31m'
//   quoted_for_message(a 5,000-byte name)        -> 'the first 200 bytes...'
//   one_line_message(what())                     -> the message, escaped, at most 4 KiB and
//                                                   "... (N more bytes)"
//
// Cuts never split a UTF-8 character: Korean and other non-ASCII text stays readable.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace nce {

std::string quoted_for_message(std::string_view text, size_t max_bytes = 200);

std::string one_line_message(std::string_view message, size_t max_bytes = 4096);

}  // namespace nce
