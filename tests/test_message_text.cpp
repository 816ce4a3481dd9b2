// engine/message_text.h: what comes from a file reaches an error line escaped and bounded.
#include <doctest/doctest.h>

#include <string>

#include "engine/message_text.h"

using nce::one_line_message;
using nce::quoted_for_message;

TEST_CASE("quoted_for_message escapes control bytes and cuts long names") {
    CHECK(quoted_for_message("plain") == "'plain'");
    CHECK(quoted_for_message("evil\nname\x1b[31m") == "'evil\\x0aname\\x1b[31m'");
    CHECK(quoted_for_message("tab\there\x7f") == "'tab\\x09here\\x7f'");
    CHECK(quoted_for_message(std::string(500, 'x'), 10) == "'xxxxxxxxxx...'");
}

TEST_CASE("a cut never splits a UTF-8 character") {
    const std::string korean = "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4";  // 3 characters of 3 bytes each
    CHECK(quoted_for_message(korean, 9) == "'" + korean + "'");
    CHECK(quoted_for_message(korean, 8) == "'\xED\x95\x9C\xEA\xB5\xAD...'");  // 8 bytes would end inside the third
    CHECK(quoted_for_message(korean, 4) == "'\xED\x95\x9C...'");
    CHECK(quoted_for_message(korean, 2) == "'...'");
}

TEST_CASE("one_line_message keeps a message on one line and within its bound") {
    CHECK(one_line_message("checkpoint 'a': no such file") == "checkpoint 'a': no such file");
    CHECK(one_line_message("two\nlines") == "two\\x0alines");
    const std::string line = one_line_message(std::string(10000, 'y'), 4096);
    CHECK(line == std::string(4096, 'y') + "... (5904 more bytes)");
    CHECK(line.find('\n') == std::string::npos);
}
