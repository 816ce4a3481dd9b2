// Writing CSV that data/pairs_reader.h reads back: one field, quoted as RFC 4180 says.
#pragma once
#include <string>

namespace nce::data {

// `text` inside double quotes, each quote in it doubled: safe for commas, quotes and line breaks.
inline std::string csv_field(const std::string& text) {
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

}  // namespace nce::data
