// One exception type for every error a user can cause: its message is a single line that
// names the op, input, shape or file at fault and, where there is one, the fix.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/message_text.h"

namespace nce {

// The message is kept as one line whatever it quotes: control bytes from a file name, a tensor
// name or a CSV field are escaped and a message longer than 4 KiB is cut (engine/message_text.h).
struct Error : std::runtime_error {
    explicit Error(std::string_view message) : std::runtime_error(one_line_message(message)) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
    throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace nce

// NCE_CHECK(condition, "fmt string", args...): throws nce::Error with the formatted message.
#define NCE_CHECK(condition, ...)              \
    do {                                       \
        if (!(condition)) ::nce::fail(__VA_ARGS__); \
    } while (0)
